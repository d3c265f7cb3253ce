"""The Retriever interface, its on-disk layout, and the backend registry.

Rules:

* A retriever indexes documents given as ``(doc_id, text)`` pairs and answers a *batch* of queries:
  ``search(queries, k)`` returns one list per query of at most ``k`` :class:`Hit`, best first.
  Ties are broken by index order (the order documents were given), so results are deterministic.
* Only documents that match score: a query with no known term gets an empty list (as Lucene does).
  Dense backends always return ``min(k, len(retriever))`` hits.
* ``save(path)`` writes a directory holding ``retriever.json`` (``backend``, ``format``,
  ``options``, ``num_docs``) plus backend files; ``load_retriever(path)`` reads any backend back.
* Backends are registered by name -> ``"module:Class"`` and imported only when used, so heavy
  dependencies (Java, faiss, the MiniLM model) load lazily.
"""

from __future__ import annotations

import importlib
import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

MANIFEST = "retriever.json"
FORMAT_VERSION = 1

#: backend name -> "module:Class" (imported lazily).
BACKENDS: dict[str, str] = {
    "bm25s": "seed_gym.retrieval.bm25:Bm25sRetriever",
    "pyserini": "seed_gym.retrieval.lucene:PyseriniRetriever",
    "dense": "seed_gym.retrieval.dense:DenseRetriever",
}


class RetrievalError(ValueError):
    """Bad use of a retriever: unknown backend, bad ``k``, a directory that is not an index."""


@dataclass(frozen=True, slots=True)
class Hit:
    """One retrieved document: its id and the backend's score (higher is better)."""

    doc_id: str
    score: float


class Retriever(ABC):
    """A built index over ``doc_ids``; subclasses implement the backend."""

    backend: ClassVar[str] = ""
    #: True when the index is plain data (arrays, lists) that pickles, so it may travel to other
    #: processes (an object store shares its arrays); False for handles (a JVM searcher, faiss).
    picklable: ClassVar[bool] = False

    def __init__(self, doc_ids: Sequence[str], options: dict[str, Any]) -> None:
        self.doc_ids: list[str] = list(doc_ids)
        self.options: dict[str, Any] = dict(options)

    def __len__(self) -> int:
        return len(self.doc_ids)

    # -- what backends implement ------------------------------------------------------------
    @classmethod
    @abstractmethod
    def build(cls, docs: Iterable[tuple[str, str]], **options: Any) -> "Retriever":
        """Index ``(doc_id, text)`` pairs."""

    @abstractmethod
    def _search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Search with a checked ``k >= 1`` and a list of strings."""

    @abstractmethod
    def _save_files(self, path: Path) -> None:
        """Write the backend's files into the (existing) directory ``path``."""

    @classmethod
    @abstractmethod
    def _load_files(cls, path: Path, doc_ids: list[str], options: dict[str, Any]) -> "Retriever":
        """Read what :meth:`_save_files` wrote."""

    # -- the public API ------------------------------------------------------------------------
    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """The top ``k`` hits for each query, best first (see the module rules)."""
        if isinstance(queries, str):
            raise RetrievalError("search() takes a list of queries, not one string")
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise RetrievalError(f"k must be a positive integer, got {k!r}")
        queries = [str(q) for q in queries]
        if not queries:
            return []
        if not self.doc_ids:
            return [[] for _ in queries]
        return self._search(queries, k)

    def save(self, path: str | Path) -> Path:
        """Write the index to directory ``path`` (created; existing backend files are replaced)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self._save_files(path)
        (path / "doc_ids.json").write_text(json.dumps(self.doc_ids))
        manifest = {"backend": self.backend, "format": FORMAT_VERSION, "options": self.options,
                    "num_docs": len(self.doc_ids)}
        (path / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
        return path

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "options": self.options, "num_docs": len(self.doc_ids)}


def backend_class(backend: str) -> type[Retriever]:
    """The class registered for ``backend`` (imports it)."""
    if backend not in BACKENDS:
        raise RetrievalError(f"unknown retrieval backend {backend!r}; known: {', '.join(sorted(BACKENDS))}")
    module_name, _, attr = BACKENDS[backend].partition(":")
    return getattr(importlib.import_module(module_name), attr)


def build_retriever(backend: str, docs: Iterable[tuple[str, str]], **options: Any) -> Retriever:
    """Index ``(doc_id, text)`` pairs with ``backend`` (``bm25s``, ``pyserini``, ``dense``)."""
    return backend_class(backend).build(docs, **options)


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The ``retriever.json`` of a saved index; :class:`RetrievalError` when it is not one."""
    manifest_path = Path(path) / MANIFEST
    if not manifest_path.is_file():
        raise RetrievalError(f"{path} is not a saved retriever (no {MANIFEST})")
    manifest = json.loads(manifest_path.read_text())
    if manifest.get("format") != FORMAT_VERSION:
        raise RetrievalError(f"{path}: unsupported retriever format {manifest.get('format')!r}")
    return manifest


def load_retriever(path: str | Path) -> Retriever:
    """Load any saved retriever from directory ``path``."""
    path = Path(path)
    manifest = read_manifest(path)
    doc_ids = json.loads((path / "doc_ids.json").read_text())
    return backend_class(manifest["backend"])._load_files(path, doc_ids, dict(manifest["options"]))


def top_k_indices(scores: np.ndarray, k: int, *, positive_only: bool) -> np.ndarray:
    """Indices of the ``k`` highest scores, best first, ties by lower index first."""
    n = scores.shape[0]
    k = min(k, n)
    if k < n:
        # the k-th largest value; keep everything >= it so ties at the cut are ordered by index
        threshold = np.partition(scores, n - k)[n - k]
        candidates = np.flatnonzero(scores >= threshold)
    else:
        candidates = np.arange(n)
    if positive_only:
        candidates = candidates[scores[candidates] > 0]
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order][:k]
