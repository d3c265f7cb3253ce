"""The ``pyserini`` backend: real Lucene BM25 through pyserini (extra ``lucene``).

Options: ``k1=0.9``, ``b=0.4`` (Search-R1's ``LuceneSearcher`` settings), ``threads=1``.
Documents are indexed in-process with pyserini's ``LuceneIndexer`` (Anserini's default English
analyzer: Porter stemming and the Lucene stop list), storing raw documents; ids must be unique.
A query that Lucene cannot parse into any term returns no hits. Saved indexes are the Lucene
index directory itself (under ``lucene/``), so pyserini tools can open them too.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from seed_gym.retrieval.base import Hit, Retriever
from seed_gym.retrieval.java import ensure_pyserini

DEFAULTS: dict[str, Any] = {"k1": 0.9, "b": 0.4, "threads": 1}


class PyseriniRetriever(Retriever):
    backend = "pyserini"

    def __init__(self, doc_ids: list[str], options: dict[str, Any], index_dir: Path, owned_tmp: Path | None) -> None:
        super().__init__(doc_ids, options)
        self._index_dir = index_dir
        if owned_tmp is not None:  # a build's temporary index, removed with the object
            weakref.finalize(self, shutil.rmtree, owned_tmp, True)
        self._searcher: Any = None
        self._position = {doc_id: i for i, doc_id in enumerate(doc_ids)}

    @classmethod
    def build(cls, docs: Iterable[tuple[str, str]], **options: Any) -> "PyseriniRetriever":
        unknown = set(options) - set(DEFAULTS)
        if unknown:
            raise TypeError(f"unknown pyserini options: {', '.join(sorted(unknown))}")
        opts = {**DEFAULTS, **options}
        ensure_pyserini()
        from pyserini.index.lucene import LuceneIndexer

        tmp = Path(tempfile.mkdtemp(prefix="seed-gym-lucene-"))
        index_dir = tmp / "lucene"
        indexer = LuceneIndexer(str(index_dir), threads=int(opts["threads"]))
        doc_ids: list[str] = []
        for doc_id, text in docs:
            doc_ids.append(str(doc_id))
            indexer.add_doc_dict({"id": str(doc_id), "contents": text})
        indexer.close()
        return cls(doc_ids, opts, index_dir, tmp)

    def _open(self) -> Any:
        if self._searcher is None:
            ensure_pyserini()
            from pyserini.search.lucene import LuceneSearcher

            self._searcher = LuceneSearcher(str(self._index_dir))
            self._searcher.set_bm25(float(self.options["k1"]), float(self.options["b"]))
        return self._searcher

    def _hits(self, raw: list[Any]) -> list[Hit]:
        hits = [Hit(str(h.docid), float(h.score)) for h in raw]
        # Lucene breaks score ties by internal doc number = insertion order; make it explicit
        hits.sort(key=lambda h: (-h.score, self._position.get(h.doc_id, 0)))
        return hits

    def _search(self, queries: list[str], k: int) -> list[list[Hit]]:
        searcher = self._open()
        qids = [str(i) for i in range(len(queries))]
        try:
            raw = searcher.batch_search(queries, qids, k=k, threads=int(self.options["threads"]))
            return [self._hits(raw.get(qid, [])) for qid in qids]
        except Exception:  # one unparsable query fails the batch: fall back to one at a time
            out = []
            for query in queries:
                try:
                    out.append(self._hits(searcher.search(query, k=k)))
                except Exception:
                    out.append([])
            return out

    def _save_files(self, path: Path) -> None:
        target = path / "lucene"
        if target.resolve() != self._index_dir.resolve():
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(self._index_dir, target)
        (path / "lucene.json").write_text(json.dumps({"pyserini": _pyserini_version()}))

    @classmethod
    def _load_files(cls, path: Path, doc_ids: list[str], options: dict[str, Any]) -> "PyseriniRetriever":
        return cls(doc_ids, options, path / "lucene", None)

    def close(self) -> None:
        if self._searcher is not None:
            self._searcher.close()
            self._searcher = None


def _pyserini_version() -> str:
    from importlib.metadata import version

    return version("pyserini")
