"""Noun taggers for the reward's title score (upstream: spaCy NOUN/PROPN tokens, lower-cased).

* :class:`LexiconTagger` (default): a token is a noun when it is in the noun lexicon (the SynShop
  head nouns and common product nouns), or capitalised and not a known modifier (a brand: PROPN).
  Tokens are runs of letters, digits, ``'`` and ``-``.
* :class:`SpacyTagger`: spaCy's NOUN/PROPN tokens, when spaCy and a model are installed.

``default_tagger()`` returns spaCy when ``SEED_GYM_SPACY_MODEL`` names a loadable model, else the
lexicon. Results differ between taggers (upstream's own results differ between spaCy models).
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Protocol

from seed_gym.envs.webshop import taxonomy as tx

_TOKEN_RE = re.compile(r"[A-Za-z0-9'\-]+")

COMMON_NOUNS = frozenset("""
bag bottle box case cable charger cream gel oil soap brush comb mask towel sheet pillow blanket shoe
shoes boots sandals shirt shirts pants jeans dress skirt jacket coat hoodie sweater socks hat cap
watch phone tablet laptop speaker headphones earbuds camera lens mouse keyboard monitor adapter
lamp light bulb chair table desk sofa couch bed shelf rug curtains blinds mirror frame candle
coffee tea chips bars snack cookies crackers nuts candy chocolate sauce pasta rice juice water
shampoo conditioner lotion serum lipstick gloss dryer straightener holder doorbell ottoman robe
creamer kettle kit set pack count ounce oz inch pair men women kids hair skin face body
""".split())


class NounTagger(Protocol):
    def nouns(self, text: str) -> list[str]:
        """The text's noun tokens, lower-cased, in order (duplicates kept)."""


class LexiconTagger:
    def __init__(self) -> None:
        head = {n for t in tx.TYPES for n in t.nouns} | set(tx.ALT_NOUNS.values())
        self.lexicon = COMMON_NOUNS | head
        self.modifiers = frozenset(d.lower() for d in tx.DESCRIPTORS)

    def nouns(self, text: str) -> list[str]:
        out = []
        for token in _TOKEN_RE.findall(text or ""):
            low = token.lower()
            if low in self.lexicon or (token[0].isupper() and low not in self.modifiers and token.isalpha()):
                out.append(low)
        return out


class SpacyTagger:
    def __init__(self, model: str) -> None:
        import spacy  # optional

        self.nlp = spacy.load(model)

    def nouns(self, text: str) -> list[str]:
        return [t.text.lower() for t in self.nlp(text or "") if t.pos_ in ("PNOUN", "NOUN", "PROPN")]


@lru_cache(maxsize=1)
def default_tagger() -> NounTagger:
    model = os.environ.get("SEED_GYM_SPACY_MODEL")
    if model:
        try:
            return SpacyTagger(model)
        except (ImportError, OSError):
            pass
    return LexiconTagger()
