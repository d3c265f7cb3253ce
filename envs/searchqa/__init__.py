"""Search-QA under the Search-R1 protocol, on a generated SynWiki world or real Search-R1 data.

Importing this package is cheap; data, indexes and servers load when first used.
"""

from __future__ import annotations


def register_envs() -> None:
    """Entry point of the ``seed_gym.envs`` group: registers ``searchqa`` and ``closed-book``."""
    from seed_gym.agent import register_agent_kind
    from seed_gym.registry import register

    register("searchqa", "seed_gym.envs.searchqa.env:SearchQAEnv", gym_id="seed_gym/SearchQA-v0",
             description="Search-augmented QA (Search-R1 protocol) over a generated multi-hop wiki world")
    register_agent_kind("closed-book", "seed_gym.envs.searchqa.agents:ClosedBookAgent")
