"""What ``seed-gym doctor`` reports for WebShop: which noun tagger scores the title match.

Named by the env's profile (``EnvProfile.checks``); :mod:`seed_gym.doctor` collects it.
"""

from __future__ import annotations

from seed_gym.doctor import Check


def _tagger() -> Check:
    """Which noun tagger scores WebShop's title match (spaCy when an English pipeline is installed)."""
    from seed_gym.envs.webshop.nouns import tagger_status

    return Check("WebShop noun tagger", *tagger_status())


def checks() -> list[Check]:
    """The WebShop noun tagger in use (``EnvProfile.checks``)."""
    return [_tagger()]
