"""Search-QA data: a corpus (Search-R1 passage JSONL) plus question files, generated or real.

Sources:

* ``generated`` (the default): a SynWiki world (:mod:`.world`, :mod:`.questions`) written once to
  ``$SEED_GYM_HOME/searchqa/<version>-<generator source hash>-seed<S>-e<N>/`` as ``corpus.jsonl`` (``{"id", "contents"}``, contents =
  ``'"' + title + '"\\n' + text``) and ``questions/{train,test}.jsonl`` (``{"id", "question",
  "golden_answers", "data_source", "split", "metadata"}``).
* a folder in that layout, or ``corpus=`` and ``questions=`` paths: Search-R1 / FlashRAG style files.
  Corpus rows may be ``{"id", "contents"}`` or ``{"id", "title", "text"}``. Question files are
  JSONL or parquet (pyarrow, optional) in FlashRAG form (``question``, ``golden_answers``) or
  Search-R1's processed form (``prompt``, ``reward_model.ground_truth.target``, ``extra_info``).
  A row's split is its ``split`` / ``extra_info.split`` field, else the file name (``test.jsonl``).

Files are read as they load (the corpus when the env is made, unless a server retrieves): a line
that is not UTF-8 JSON, a passage without ``id`` or text, an empty corpus, a question row without
question or answers is a :class:`~seed_gym.core.DataError` naming the file, the line and the fix.

Splits: ``train``; ``test`` (every test/dev question); ``seen`` and ``unseen`` (test questions of
the seen sources nq/hotpotqa vs the rest); and one split per data source (its test questions).
Indexes are built once per corpus fingerprint and backend under ``<root>/index/`` and shared by
every env of the process. A loaded :class:`QAData` is also the env's shared state
(:class:`seed_gym.core.SharedState`): it pickles with its passages, questions and the indexes
that are plain arrays, and :meth:`QAData.install` makes it the one ``load_data`` returns for its
source in another process, which then loads nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from threading import Lock
from typing import Any

from seed_gym.cache import env_cache
from seed_gym.core import DataError, MissingDataError
from seed_gym.datafiles import read_jsonl
from seed_gym.progress import reporter_for
from seed_gym.tasks import Split, TaskSet, fingerprint, fingerprint_json, hashed_order

DEFAULT_ENTITIES = 10_000
TEST_SPLIT_NAMES = ("test", "dev", "validation", "valid")
SEEN_SOURCE_NAMES = ("nq", "hotpotqa", "syn_nq", "syn_hotpotqa")
_QUESTION_IN_PROMPT = re.compile(r"Question:\s*(.*?)\s*$", re.S)


# -- reading and writing files ------------------------------------------------------------------
def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


FIX_CORPUS = ('the corpus must be Search-R1 passage JSONL in UTF-8, one {"id", "contents"} (or {"id", "title", '
              '"text"}) object per line; download or export it again, or use the generated data (no data=)')
FIX_QUESTIONS = ("question files must be FlashRAG/Search-R1 JSONL or parquet rows with question and "
                 "golden_answers (or prompt and reward_model.ground_truth.target); fix or remove the file")


def read_rows(path: Path, fix: str = FIX_QUESTIONS) -> Iterator[tuple[int | None, dict[str, Any]]]:
    """``(line number, row)`` of a JSONL file, or ``(None, row)`` of a parquet file (needs pyarrow);
    an unreadable file or line is a :class:`~seed_gym.core.DataError` naming it."""
    if path.suffix == ".parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError as error:
            raise MissingDataError(f"{path}: reading parquet needs pyarrow (pip install pyarrow)") from error
        try:
            table = pq.read_table(path)
        except Exception as error:  # pyarrow's errors for a damaged file are several types
            raise DataError(path, f"not a readable parquet file ({error})", fix) from None
        for row in table.to_pylist():
            yield None, row
        return
    yield from read_jsonl(path, fix)


def passage_contents(row: Mapping[str, Any], path: Path = Path("corpus"), line: int | None = None) -> str:
    """``contents`` of a corpus row, built from ``title``/``text`` when absent."""
    if "contents" in row:
        return str(row["contents"])
    if "text" in row:
        return f'"{row.get("title", "")}"\n{row["text"]}'
    raise DataError(path, f"passage {row.get('id')!r} has neither 'contents' nor 'text'", FIX_CORPUS, line)


def question_row(row: Mapping[str, Any], file_split: str, path: Path = Path("questions"),
                 line: int | None = None) -> dict[str, Any]:
    """One question in our form from a FlashRAG or Search-R1 row."""
    extra = row.get("extra_info") or {}
    question = row.get("question")
    if question is None and row.get("prompt"):
        content = row["prompt"][-1]["content"] if isinstance(row["prompt"], list) else str(row["prompt"])
        match = _QUESTION_IN_PROMPT.search(content)
        question = match.group(1) if match else content
    golds = row.get("golden_answers")
    if golds is None:
        truth = (row.get("reward_model") or {}).get("ground_truth") or {}
        golds = truth.get("target") if isinstance(truth, Mapping) else truth
    if question is None or golds is None:
        raise DataError(path, f"a question row without question/golden_answers (it has {sorted(row)})",
                        FIX_QUESTIONS, line)
    golds = [str(g) for g in ([golds] if isinstance(golds, str) else list(golds))]
    return {"id": str(row.get("id") or ""), "question": str(question), "golden_answers": golds,
            "data_source": str(row.get("data_source") or "unknown"),
            "split": str(row.get("split") or extra.get("split") or file_split),
            "metadata": dict(row.get("metadata") or {})}


# -- the dataset ---------------------------------------------------------------------------------
@dataclass
class QAData:
    """A corpus and its questions; ``root`` holds the index cache."""

    name: str
    root: Path
    corpus_path: Path
    question_paths: list[Path]
    #: ``load_data``'s cache key of the source this dataset was loaded for.
    key: tuple = ()
    _indexes: dict[str, Any] = field(default_factory=dict, repr=False)
    _task_sets: dict[str, TaskSet] = field(default_factory=dict, repr=False)
    _lock: Lock = field(default_factory=Lock, repr=False)

    # -- sharing ------------------------------------------------------------------------------
    def install(self) -> None:
        """Make this the dataset ``load_data`` returns for its source in this process."""
        with _DATASETS_LOCK:
            _DATASETS.setdefault(self.key, self)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_lock")
        state["_task_sets"] = {}  # rebuilt on first use: their splits hold closures
        # indexes that are not plain data (a Lucene searcher, a faiss index) load from disk instead
        state["_indexes"] = {key: index for key, index in self._indexes.items() if getattr(index, "picklable", False)}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = Lock()

    @cached_property
    def passages(self) -> dict[str, str]:
        """Passage id -> contents, in file order."""
        if not self.corpus_path.is_file():
            raise MissingDataError(f"no corpus at {self.corpus_path}")
        out: dict[str, str] = {}
        for line, row in read_rows(self.corpus_path, FIX_CORPUS):
            if "id" not in row:
                raise DataError(self.corpus_path, "a passage without 'id'", FIX_CORPUS, line)
            out[str(row["id"])] = passage_contents(row, self.corpus_path, line)
        if not out:
            raise DataError(self.corpus_path, "the corpus holds no passage", FIX_CORPUS)
        return out

    @cached_property
    def questions(self) -> dict[str, dict[str, Any]]:
        """Task id -> question; ids are made unique as ``{source}-{split}-{n}`` when missing."""
        out: dict[str, dict[str, Any]] = {}
        for path in self.question_paths:
            stem = path.stem.split(".")[0].lower()
            file_split = stem if stem in ("train",) + TEST_SPLIT_NAMES else stem.rsplit("_", 1)[-1]
            for line, row in read_rows(path):
                question = question_row(row, file_split, path, line)
                qid = question["id"]
                if not qid or qid in out:
                    qid = f"{question['data_source']}-{question['split']}-{len(out):06d}"
                question["id"] = qid
                out[qid] = question
        if not out:
            raise MissingDataError(f"{self.name}: no questions in {', '.join(map(str, self.question_paths))}")
        return out

    @cached_property
    def corpus_fingerprint(self) -> str:
        """Size plus the first and last MiB of the corpus file (cheap on a 14 GB corpus)."""
        size = self.corpus_path.stat().st_size
        with self.corpus_path.open("rb") as handle:
            head = handle.read(1 << 20)
            handle.seek(max(0, size - (1 << 20)))
            tail = handle.read()
        return fingerprint([str(size), head, tail])

    def task_set(self, default_split: str = "test") -> TaskSet:
        """The splits (module rules), computed once per default split."""
        if default_split not in self._task_sets:
            self._task_sets[default_split] = self._make_task_set(default_split)
        return self._task_sets[default_split]

    def _make_task_set(self, default_split: str) -> TaskSet:
        by_split: dict[str, list[str]] = {"train": [], "test": [], "seen": [], "unseen": []}
        for qid, q in self.questions.items():
            if q["split"] == "train":
                by_split["train"].append(qid)
                continue
            if q["split"] not in TEST_SPLIT_NAMES:
                by_split.setdefault(q["split"], []).append(qid)
                continue
            by_split["test"].append(qid)
            by_split["seen" if q["data_source"] in SEEN_SOURCE_NAMES else "unseen"].append(qid)
            by_split.setdefault(q["data_source"], []).append(qid)

        def content_hash(qid: str) -> str:
            q = self.questions[qid]
            return fingerprint_json([q["question"], q["golden_answers"], q["data_source"]])

        families = {qid: q["data_source"] for qid, q in self.questions.items()}
        # Splits that mix sources get a hashed order (every -n prefix covers the sources);
        # a per-source split keeps its file order, as the datasets are usually cited.
        mixed = {"train", "test", "seen", "unseen"}
        splits = {name: Split(name, hashed_order(ids) if name in mixed else tuple(ids), content_hash, families)
                  for name, ids in by_split.items()}
        data_fp = fingerprint([self.corpus_fingerprint, *(s.fingerprint for s in splits.values())])
        return TaskSet(splits, data_fp, default_split=default_split if default_split in splits else "test",
                       aliases={"dev": "test", "valid": "test"})

    def retriever(self, backend: str = "bm25s", **options: Any) -> Any:
        """The corpus index for ``backend``: built once, saved under ``root/index``, shared."""
        from seed_gym.retrieval import build_retriever, load_retriever, read_manifest

        key = f"{backend}-{fingerprint_json([self.corpus_fingerprint, backend, options])[7:]}"
        with self._lock:
            if key in self._indexes:
                return self._indexes[key]
            path = self.root / "index" / key
            try:
                read_manifest(path)
                retriever = load_retriever(path)
            except Exception:
                report = reporter_for(f"index {self.name} ({backend})")
                report(0, 1)
                retriever = build_retriever(backend, self.passages.items(), **options)
                _save_atomically(retriever, path)
                report(1, 1)
            self._indexes[key] = retriever
            return retriever


def _save_atomically(retriever: Any, path: Path) -> None:
    """Save into a temporary sibling and rename, so concurrent builders never see half an index."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=".tmp-"))
    try:
        retriever.save(tmp)
        try:
            os.replace(tmp, path)
        except OSError:  # another process got there first
            pass
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- generated data -------------------------------------------------------------------------------
def generator_fingerprint() -> str:
    """A hash of the generator's source (names, world, questions): a changed generator never
    reuses a cached world."""
    here = Path(__file__).resolve().parent
    return fingerprint((here / name).read_bytes() for name in ("names.py", "world.py", "questions.py"))[7:15]


def generated_root(seed: int, entities: int) -> Path:
    from seed_gym.envs.searchqa.world import WORLD_VERSION

    key = f"{WORLD_VERSION}-{generator_fingerprint()}-seed{seed}-e{entities}"
    return env_cache("searchqa") / key


def write_generated(out: Path, seed: int = 0, entities: int = DEFAULT_ENTITIES,
                    counts: dict[str, dict[str, int]] | None = None) -> Path:
    """Generate the world and write ``corpus.jsonl`` + ``questions/{train,test}.jsonl`` into ``out``."""
    from seed_gym.envs.searchqa.questions import generate_questions
    from seed_gym.envs.searchqa.world import generate_world

    report = reporter_for("generate searchqa world")
    report(0, 3)
    world = generate_world(seed, entities)
    report(1, 3)
    questions = generate_questions(world, counts)
    report(2, 3)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=".tmp-"))
    try:
        write_jsonl(tmp / "corpus.jsonl", ({"id": p.pid, "contents": p.contents} for p in world.passages))
        for split in ("train", "test"):
            write_jsonl(tmp / "questions" / f"{split}.jsonl", (q for q in questions if q["split"] == split))
        meta = {"seed": seed, "entities": entities, "passages": len(world.passages), "questions": len(questions),
                "world_version": world_version()}
        (tmp / "world.json").write_text(json.dumps(meta, indent=2))
        if out.exists() and not (out / "world.json").is_file():
            shutil.rmtree(out)  # a stale partial folder
        os.replace(tmp, out)
    except OSError:
        if not (out / "world.json").is_file():
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report(3, 3)
    return out


def world_version() -> str:
    from seed_gym.envs.searchqa.world import WORLD_VERSION

    return WORLD_VERSION


_DATASETS: dict[tuple[Any, ...], QAData] = {}
_DATASETS_LOCK = Lock()


def load_data(data: str | None = None, *, seed: int = 0, entities: int = DEFAULT_ENTITIES,
              corpus: str | None = None, questions: str | list[str] | None = None) -> QAData:
    """The dataset an env uses (one object per process and source, so indexes are shared)."""
    key = (data, seed, entities, corpus, tuple([questions] if isinstance(questions, str) else questions or ()))
    with _DATASETS_LOCK:
        if key not in _DATASETS:
            _DATASETS[key] = _resolve(data, seed=seed, entities=entities, corpus=corpus, questions=questions)
            _DATASETS[key].key = key
        return _DATASETS[key]


def _question_files(folder: Path) -> list[Path]:
    files = sorted(p for p in folder.rglob("*") if p.suffix in (".jsonl", ".parquet") and p.name != "corpus.jsonl")
    return [p for p in files if "index" not in p.relative_to(folder).parts]


def _resolve(data: str | None, *, seed: int, entities: int, corpus: str | None,
             questions: str | list[str] | None) -> QAData:
    if corpus or questions:
        if not (corpus and questions):
            raise MissingDataError("real data needs both corpus= (passage JSONL) and questions= (files or a folder)")
        corpus_path = Path(corpus).expanduser()
        paths: list[Path] = []
        for item in [questions] if isinstance(questions, str) else questions:
            path = Path(item).expanduser()
            paths.extend(_question_files(path) if path.is_dir() else [path])
        missing = [p for p in [corpus_path, *paths] if not p.exists()]
        if missing:
            raise MissingDataError(f"missing Search-QA files: {', '.join(map(str, missing))}")
        return QAData(str(corpus_path), corpus_path.parent, corpus_path, paths)
    if data in (None, "", "generated"):
        root = generated_root(seed, entities)
        if not (root / "world.json").is_file():
            write_generated(root, seed=seed, entities=entities)
        return QAData(f"generated(seed={seed}, entities={entities})", root, root / "corpus.jsonl",
                      _question_files(root / "questions"))
    folder = Path(str(data)).expanduser()
    if not (folder / "corpus.jsonl").is_file():
        raise MissingDataError(f"no Search-QA data at {folder}: expected corpus.jsonl and question files "
                               "(or pass corpus= and questions=)")
    return QAData(str(folder), folder, folder / "corpus.jsonl", _question_files(folder))
