"""Retrieval shared by the envs (search over a corpus, search in a shop): one :class:`Retriever` interface.

>>> from seed_gym.retrieval import build_retriever, load_retriever, Hit
>>> r = build_retriever("bm25s", [("d1", "Paris is the capital of France"), ("d2", "Berlin")])
>>> r.search(["capital of france"], k=3)[0][0].doc_id
'd1'

Backends: ``bm25s`` (default, core dependency), ``pyserini`` (extra ``lucene``), ``dense``
(extra ``dense``). Importing this package imports none of them.
"""

from seed_gym.retrieval.base import (BACKENDS, Hit, RetrievalError, Retriever, build_retriever,
                                     load_retriever, read_manifest)

DEFAULT_BACKEND = "bm25s"

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "Hit", "RetrievalError", "Retriever", "build_retriever",
           "load_retriever", "read_manifest"]
