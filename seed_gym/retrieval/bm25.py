"""The ``bm25s`` backend: BM25 in numpy/scipy, with Lucene-like analysis (the default backend).

Options (defaults follow Lucene/pyserini): ``k1=0.9``, ``b=0.4``, ``method="lucene"`` (Lucene's
idf ``log(1 + (N - df + 0.5) / (df + 0.5))`` and tf saturation). Text goes through
:func:`seed_gym.retrieval.analysis.lucene_like_tokenize` on both sides. Scores match Lucene's up to
its one-byte length norms; label results as approximate Lucene (use ``pyserini`` for exact).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from seed_gym.retrieval.analysis import lucene_like_tokenize
from seed_gym.retrieval.base import Hit, Retriever, top_k_indices

DEFAULTS: dict[str, Any] = {"k1": 0.9, "b": 0.4, "method": "lucene", "analyzer": "lucene_like"}


def _quiet_bm25s() -> None:
    import logging

    logging.getLogger("bm25s").setLevel(logging.WARNING)


class Bm25sRetriever(Retriever):
    backend = "bm25s"
    picklable = True

    def __init__(self, doc_ids: list[str], options: dict[str, Any], model: Any) -> None:
        super().__init__(doc_ids, options)
        self._model = model
        self._vocab: dict[str, int] = model.vocab_dict if model is not None else {}

    @classmethod
    def build(cls, docs: Iterable[tuple[str, str]], **options: Any) -> "Bm25sRetriever":
        import bm25s

        _quiet_bm25s()
        unknown = set(options) - set(DEFAULTS)
        if unknown:
            raise TypeError(f"unknown bm25s options: {', '.join(sorted(unknown))}")
        opts = {**DEFAULTS, **options}
        vocab: dict[str, int] = {}
        doc_ids: list[str] = []
        corpus_ids: list[list[int]] = []
        for doc_id, text in docs:
            doc_ids.append(str(doc_id))
            corpus_ids.append([vocab.setdefault(t, len(vocab)) for t in lucene_like_tokenize(text)])
        if not doc_ids:
            return cls([], opts, None)
        if not vocab:
            vocab[""] = 0
        model = bm25s.BM25(k1=float(opts["k1"]), b=float(opts["b"]), method=str(opts["method"]))
        model.index((corpus_ids, vocab), show_progress=False)
        return cls(doc_ids, opts, model)

    def _scores(self, query: str) -> np.ndarray | None:
        """BM25 scores of every document; a repeated query term counts once per occurrence
        (as pyserini's bag-of-words query boosts a term by its count). None: no known term."""
        counts: dict[int, int] = {}
        for term in lucene_like_tokenize(query):
            term_id = self._vocab.get(term)
            if term_id is not None:
                counts[term_id] = counts.get(term_id, 0) + 1
        if not counts:
            return None
        index = self._model.scores
        data, indices, indptr = index["data"], index["indices"], index["indptr"]
        scores = np.zeros(index["num_docs"], dtype=np.float32)
        for term_id, count in counts.items():
            start, end = indptr[term_id], indptr[term_id + 1]
            # documents are unique within one term's postings, so plain fancy-index += is exact
            scores[indices[start:end]] += data[start:end] * np.float32(count)
        return scores

    def _search(self, queries: list[str], k: int) -> list[list[Hit]]:
        results: list[list[Hit]] = []
        for query in queries:
            scores = self._scores(query)
            if scores is None:
                results.append([])
                continue
            top = top_k_indices(scores, k, positive_only=True)
            results.append([Hit(self.doc_ids[i], float(scores[i])) for i in top])
        return results

    def _save_files(self, path: Path) -> None:
        if self._model is not None:
            self._model.save(str(path / "bm25s"), show_progress=False)

    @classmethod
    def _load_files(cls, path: Path, doc_ids: list[str], options: dict[str, Any]) -> "Bm25sRetriever":
        import bm25s

        _quiet_bm25s()
        if not doc_ids:
            return cls([], options, None)
        model = bm25s.BM25.load(str(path / "bm25s"), mmap=False, show_progress=False)
        return cls(doc_ids, options, model)
