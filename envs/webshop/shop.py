"""One loaded WebShop: products, reward prices, goals, splits and the search index, shared per process.

``get_shop(data, num_products, seed, goals)`` returns the same read-only :class:`Shop` for the
same arguments within a process (every env and the server share it; nothing is rebuilt per env).
A shop is also the env's shared state (:class:`seed_gym.core.SharedState`): it pickles with its
search index (when the index is plain arrays), and :meth:`Shop.install` makes it the one
``get_shop`` returns for its arguments in another process, which then loads nothing.
``data`` is ``None`` (the generated SynShop catalogue, written once under
``$SEED_GYM_HOME/webshop/synshop-<seed>-<n>``) or a folder with the upstream files. The BM25 index
is cached on disk under ``$SEED_GYM_HOME/webshop/index/<backend>-<catalogue fingerprint>``.

Order of random draws (all from ``random.Random(seed)``): range prices at load time, then the
price caps in goal order; then the seed-233 shuffle.
"""

from __future__ import annotations

import os
import random
import re
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from seed_gym.cache import env_cache
from seed_gym.core import DataError, UnknownTaskError
from seed_gym.envs.webshop import catalog, goals as goal_lib, taxonomy
from seed_gym.tasks import Split, TaskSet, fingerprint, fingerprint_json

SEARCH_K = 50
_LOCK = threading.Lock()
_SHOPS: dict[tuple, "Shop"] = {}


_CANONICAL_ID = re.compile(r"fixed_(0|[1-9][0-9]*)", re.ASCII)


def task_id(index: int) -> str:
    """Upstream's goal selector in URLs: ``fixed_<i>``."""
    return f"fixed_{index}"


@dataclass
class Shop:
    root: Path
    products: dict[str, catalog.Product]
    prices: dict[str, float]
    goals: list[goal_lib.Goal]
    splits: dict[str, list[int]]
    catalog_fingerprint: str
    backend: str = "bm25s"
    #: ``get_shop``'s cache key of the arguments this shop was built for.
    key: tuple = ()
    _retriever: Any = field(default=None, repr=False)

    # -- sharing ------------------------------------------------------------------------------
    def install(self) -> None:
        """Make this the shop ``get_shop`` returns for its arguments in this process."""
        with _LOCK:
            _SHOPS.setdefault(self.key, self)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("task_set", None)  # rebuilt on first use: its splits hold closures
        if not getattr(self._retriever, "picklable", False):
            state["_retriever"] = None  # loaded from the disk cache on first search instead
        return state

    # -- goals -------------------------------------------------------------------------------
    def goal(self, tid: str) -> goal_lib.Goal:
        """The goal of the canonical id ``fixed_<i>`` (ASCII digits, no sign, padding or spaces)."""
        match = _CANONICAL_ID.fullmatch(tid) if isinstance(tid, str) else None
        index = int(match.group(1)) if match else -1
        if not 0 <= index < len(self.goals):
            raise UnknownTaskError(f"webshop: unknown task id {tid!r} (expected fixed_0..fixed_{len(self.goals) - 1})")
        return self.goals[index]

    @cached_property
    def task_set(self) -> TaskSet:
        def content(tid: str) -> str:
            return fingerprint_json(self.goal(tid))

        families = {task_id(i): g["category"] for i, g in enumerate(self.goals)}
        splits = {name: Split(name, tuple(task_id(i) for i in idx), content,
                              {task_id(i): families[task_id(i)] for i in idx})
                  for name, idx in self.splits.items()}
        return TaskSet(splits, fingerprint([self.catalog_fingerprint, str(len(self.goals))]),
                       default_split="train", aliases={"eval": "unseen"})

    # -- search ------------------------------------------------------------------------------
    def retriever(self) -> Any:
        with _LOCK:
            if self._retriever is None:
                self._retriever = _load_or_build_index(self)
            return self._retriever

    def search(self, keywords: list[str], k: int = SEARCH_K) -> list[str]:
        """Asins of the top ``k`` products for the keywords re-joined with spaces."""
        query = " ".join(keywords).strip()
        if not query:
            return []
        hits = self.retriever().search([query], k)[0]
        return [h.doc_id for h in hits if h.doc_id in self.products]


def _load_or_build_index(shop: Shop) -> Any:
    from seed_gym.retrieval import build_retriever, load_retriever

    path = env_cache("webshop") / "index" / f"{shop.backend}-{shop.catalog_fingerprint.removeprefix('sha256:')}"
    if (path / "retriever.json").is_file():
        try:
            return load_retriever(path)
        except Exception:  # a stale or partial cache: rebuild it
            pass
    docs = ((asin, catalog.search_document(p)) for asin, p in shop.products.items())
    retriever = build_retriever(shop.backend, docs)
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    retriever.save(tmp)
    try:
        tmp.replace(path)
    except OSError:
        pass
    return retriever


def synthetic_root(seed: int, num_products: int) -> Path:
    return env_cache("webshop") / f"synshop-{seed}-{num_products}"


def _ensure_synthetic(seed: int, num_products: int) -> Path:
    root = synthetic_root(seed, num_products)
    if not (root / catalog.INS_FILE).is_file():
        catalog.write_catalog(root, num_products, seed)
    return root


def build_shop(root: Path, *, seed: int = 0, goal_kind: str = "synthetic", backend: str = "bm25s") -> Shop:
    """The shop of the files in ``root``; unusable files raise :class:`~seed_gym.core.DataError`
    here, when the shop loads, as does a catalogue that yields no product or no goal."""
    if goal_kind not in ("synthetic", "human"):
        raise ValueError(f"goals must be 'synthetic' or 'human', got {goal_kind!r}")
    items, ins, human = catalog.read_files(root)
    shuffle, ins_path, human_path = catalog.catalog_paths(root)
    rng = random.Random(seed)
    products, prices = catalog.load_products(items, ins, rng)
    if not products:
        raise DataError(shuffle, "no usable product (every asin is 'nan', longer than 10 characters or a "
                                 "duplicate)", catalog.FIX_FILES)
    if goal_kind == "human":
        goals = goal_lib.human_goals(products, prices, human, rng)
        if not goals:
            raise DataError(human_path or root / catalog.HUMAN_FILE,
                            "no human goal (no entry of a loaded product has instruction_attributes)",
                            "use upstream's items_human_ins.json, or goals=synthetic")
    else:
        goals = goal_lib.synthetic_goals(products, prices, rng)
        if not goals:
            raise DataError(ins_path, "no goal: no loaded product has an instruction with instruction_attributes",
                            catalog.FIX_FILES)
    goals = goal_lib.shuffled(goals)
    splits = goal_lib.split_indices(goals, products, taxonomy.HELD_OUT_TYPES)
    fp = fingerprint_json([items, ins, seed, goal_kind])
    return Shop(root, products, prices, goals, splits, fp, backend)


def get_shop(data: str | None = None, *, num_products: int = 1000, seed: int = 0,
             goals: str = "synthetic", backend: str = "bm25s") -> Shop:
    """The process-wide shop for these arguments (built on first use)."""
    root = Path(data).expanduser() if data and data != "generated" else None
    key = (str(root) if root else None, num_products if root is None else None, seed, goals, backend)
    with _LOCK:
        shop = _SHOPS.get(key)
    if shop is not None:
        return shop
    shop = build_shop(root or _ensure_synthetic(seed, num_products), seed=seed, goal_kind=goals, backend=backend)
    shop.key = key
    with _LOCK:
        return _SHOPS.setdefault(key, shop)
