"""Lucene-like text analysis for BM25 without Java.

The rules (setting D of the bm25s-vs-Lucene study in ``docs/benchmarks.md`` section 4.2), applied
in this order:

1. Split with ``\\w+(?:[.,']\\w+)*`` (a word keeps inner ``.``, ``,`` and ``'``: ``3.5``, ``1,000``,
   ``o'neil``), an approximation of Lucene's ``StandardTokenizer``.
2. Lower-case.
3. Drop Lucene's 33-word English stop list (``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``).
4. Stem with the original Porter algorithm (PyStemmer's ``porter``, as Lucene's ``PorterStemFilter``).

The same function analyses documents and queries, so both sides always agree.
"""

from __future__ import annotations

import re
from functools import lru_cache

#: Lucene's default English stop words (33).
LUCENE_STOP_WORDS: frozenset[str] = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then "
    "there these they this to was will with".split())

TOKEN_PATTERN = re.compile(r"\w+(?:[.,']\w+)*")

_stem_cache: dict[str, str | None] = {}


@lru_cache(maxsize=1)
def _stemmer():  # type: ignore[no-untyped-def]
    import Stemmer  # PyStemmer

    return Stemmer.Stemmer("porter")


def _analyse_word(word: str) -> str | None:
    """One lower-cased word -> its stem, or None for a stop word (cached per process)."""
    cached = _stem_cache.get(word, "")
    if cached != "":
        return cached
    result = None if word in LUCENE_STOP_WORDS else _stemmer().stemWord(word)
    if len(_stem_cache) < 2_000_000:
        _stem_cache[word] = result
    return result


def split_words(text: str) -> list[str]:
    """Rules 1-2: the lower-cased words of ``text``, stop words and all."""
    return TOKEN_PATTERN.findall(text.lower())


def lucene_like_tokenize(text: str) -> list[str]:
    """All four rules: the index/query terms of ``text``, in order (repeats kept)."""
    terms = []
    for word in split_words(text):
        term = _analyse_word(word)
        if term:
            terms.append(term)
    return terms
