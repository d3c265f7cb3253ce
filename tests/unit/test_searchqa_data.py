"""Real-data loading: Search-R1 corpus JSONL, FlashRAG JSONL and Search-R1 parquet questions."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import seed_gym
from seed_gym.core import DataError, MissingDataError
from seed_gym.envs.searchqa.data import load_data, question_row

CORPUS = [
    {"id": "0", "contents": '"Evan Morris"\nEvan Morris (January 26, 1977 - July 9, 2015) was a lobbyist in Washington.'},
    {"id": "1", "contents": '"Paris"\nParis is the capital and most populous city of France.'},
    {"id": "2", "title": "Seine", "text": "The Seine is a river that flows through Paris."},
]


def _write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_flashrag_jsonl_and_corpus(tmp_path: Path) -> None:
    corpus = _write(tmp_path / "wiki.jsonl", CORPUS)
    q = _write(tmp_path / "nq" / "test.jsonl", [
        {"id": "test_0", "question": "what is the capital of france", "golden_answers": ["Paris"], "metadata": {}},
        {"id": "test_1", "question": "who was evan morris", "golden_answers": ["lobbyist"], "metadata": {}}])
    env = seed_gym.make("searchqa", corpus=str(corpus), questions=[str(q)])
    assert env.data.passages["2"] == '"Seine"\nThe Seine is a river that flows through Paris.'
    split = env.task_set().split("test")
    assert len(split) == 2
    france = next(t for t in split.task_ids if env.data.questions[t]["question"].startswith("what is the capital"))
    obs, info = env.reset(options={"task_id": france})
    assert obs.endswith("Question: what is the capital of france?\n")
    obs, *_ = env.step("<search> capital of France </search>")
    assert 'Doc 1(Title: "Paris") Paris is the capital' in obs
    _, reward, terminated, _, info = env.step("<answer>paris</answer>")
    assert reward == 1.0 and terminated and info["score"] == 1.0


def test_search_r1_processed_row() -> None:
    row = {"data_source": "nq", "prompt": [{"role": "user", "content": "Answer ... Question: who wrote x?\n"}],
           "ability": "fact-reasoning", "reward_model": {"style": "rule", "ground_truth": {"target": ["A B"]}},
           "extra_info": {"split": "train", "index": 3}}
    q = question_row(row, "test")
    assert (q["question"], q["golden_answers"], q["data_source"], q["split"]) == ("who wrote x?", ["A B"], "nq", "train")


def test_parquet_questions(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    corpus = _write(tmp_path / "corpus.jsonl", CORPUS)
    table = pa.Table.from_pylist([{"data_source": "hotpotqa", "question": "where is the seine",
                                   "golden_answers": ["Paris"]}])
    pq.write_table(table, tmp_path / "test.parquet")
    data = load_data(corpus=str(corpus), questions=str(tmp_path / "test.parquet"))
    (question,) = data.questions.values()
    assert question["data_source"] == "hotpotqa" and question["split"] == "test"
    assert data.task_set().split("seen").task_ids == (question["id"],)


def test_missing_or_bad_data(tmp_path: Path) -> None:
    with pytest.raises(MissingDataError):
        load_data(str(tmp_path / "nowhere"))
    with pytest.raises(MissingDataError):
        load_data(corpus=str(tmp_path / "c.jsonl"))
    bad = tmp_path / "bad"
    _write(bad / "corpus.jsonl", CORPUS)
    (bad / "test.jsonl").write_text("{not json\n")
    with pytest.raises(DataError, match=r"test.jsonl, line 1: not valid JSON"):
        _ = load_data(str(bad)).questions
