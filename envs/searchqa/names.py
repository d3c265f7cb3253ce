"""Fictional names from syllable grammars (deterministic given a ``random.Random``).

Rules: names are built from fixed syllable lists, title-cased, checked against a blocklist of real
names, and unique within a name space unless the caller asks for a deliberate collision.
"""

from __future__ import annotations

import random

ONSETS = ("b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "kr", "l", "m", "n", "p", "qu", "r",
          "s", "st", "t", "th", "tr", "v", "w", "z", "j", "sh", "y")
VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "io", "ou", "y")
CODAS = ("", "", "", "n", "r", "l", "s", "th", "m", "x", "nd", "rk", "v")

PLACE_SUFFIXES = ("ora", "heim", "avik", "ton", "mar", "ridge", "esh", "oll", "ara", "venn", "dor", "ima")
COUNTRY_SUFFIXES = ("ia", "land", "onia", "ar", "istan", "ea", "ovia")
FILM_WORDS = ("Silent", "Crimson", "Hollow", "Last", "Burning", "Glass", "Iron", "Distant", "Broken",
              "Golden", "Northern", "Velvet", "Hidden", "Second", "Paper", "Winter", "Electric", "Quiet")
FILM_NOUNS = ("Harbor", "Garden", "Mirror", "Lantern", "Orchard", "Tide", "Engine", "Signal", "Compass",
              "Meadow", "Tower", "Crossing", "Ember", "Canyon", "Archive", "Season", "Voyage", "Thread")
OCCUPATIONS = ("novelist", "film director", "architect", "chemist", "painter", "composer", "engineer",
               "historian", "economist", "sculptor", "physician", "journalist", "diplomat", "botanist",
               "mathematician", "photographer", "cartographer", "astronomer")

#: Real names the grammar can produce; never used.
BLOCKLIST = frozenset({"paris", "rome", "berlin", "boston", "dallas", "sharon", "london", "lima", "mali",
                       "chad", "cuba", "peru", "iran", "iraq", "oman", "togo", "india", "kenya", "tonga",
                       "samoa", "malta", "nora", "sara", "tina", "lisa", "mara", "vera", "kira", "dora"})


def word(rng: random.Random, syllables: tuple[int, int] = (2, 3)) -> str:
    """One capitalised pseudo-word of 2-3 syllables."""
    count = rng.randint(*syllables)
    parts = [rng.choice(ONSETS) + rng.choice(VOWELS) for _ in range(count)]
    parts[-1] += rng.choice(CODAS)
    return "".join(parts).capitalize()


class NameSpace:
    """Hands out unique names of one style; ``taken`` is shared across styles."""

    def __init__(self, rng: random.Random, taken: set[str]) -> None:
        self.rng = rng
        self.taken = taken

    def _unique(self, make) -> str:  # type: ignore[no-untyped-def]
        for _ in range(1000):
            name = make()
            key = name.lower()
            if key not in self.taken and not any(part in BLOCKLIST for part in key.split()):
                self.taken.add(key)
                return name
        raise RuntimeError("name space exhausted")

    def person(self) -> str:
        return self._unique(lambda: f"{word(self.rng, (2, 2))} {word(self.rng, (2, 3))}")

    def place(self) -> str:
        return self._unique(lambda: word(self.rng, (1, 2)) + self.rng.choice(PLACE_SUFFIXES))

    def country(self) -> str:
        return self._unique(lambda: word(self.rng, (1, 2)) + self.rng.choice(COUNTRY_SUFFIXES))

    def titled(self, pattern: str) -> str:
        """Film/book style titles: ``pattern`` uses {adj}, {noun} and {w} (a pseudo-word)."""
        return self._unique(lambda: pattern.format(adj=self.rng.choice(FILM_WORDS),
                                                   noun=self.rng.choice(FILM_NOUNS), w=word(self.rng)))
