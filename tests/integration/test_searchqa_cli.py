"""`seed-gym data searchqa` and `seed-gym eval` with the expert and closed-book agents (real CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ENTITIES = "400"
SOURCES = ("syn_nq", "syn_triviaqa", "syn_popqa", "syn_hotpotqa", "syn_2wiki", "syn_musique", "syn_bamboogle")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "seed_gym.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200"}, timeout=300)


def test_data_command_writes_search_r1_files(tmp_path: Path) -> None:
    out = tmp_path / "world"
    result = _cli("data", "searchqa", "--entities", ENTITIES, "--seed", "5", "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    first = json.loads((out / "corpus.jsonl").open().readline())
    assert set(first) == {"id", "contents"} and first["contents"].startswith('"')
    assert first["contents"].split("\n")[0].endswith('"')
    question = json.loads((out / "questions" / "test.jsonl").open().readline())
    assert {"question", "golden_answers", "data_source", "id", "metadata"} <= set(question)
    assert any(p.name.startswith("bm25s-") for p in (out / "index").iterdir())
    assert "syn_bamboogle" in result.stdout


def test_eval_expert_and_closed_book(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = _cli("eval", "--agent", "expert", "--agent", "closed-book", "--env", "searchqa", "--split", "test",
                  "--env-arg", f"entities={ENTITIES}", "--workers", "2", "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    expert = json.loads((out / "expert" / "summary.json").read_text())
    closed = json.loads((out / "closed-book" / "summary.json").read_text())
    assert expert["complete"] and expert["episodes"] == closed["episodes"] > 100
    assert expert["success_rate"] >= 0.99 and expert["mean_score"] >= 0.99
    assert closed["success_rate"] <= 0.05
    assert set(expert["per_family"]) == set(SOURCES)
    for source in SOURCES:
        assert expert["per_family"][source]["success_rate"] >= 0.99
        assert closed["per_family"][source]["success_rate"] <= 0.05
    assert "closed-book" in result.stdout and "syn_musique" in result.stdout
    # the records keep the gold chain's searches and the information blocks
    record = json.loads((out / "expert" / "episodes.jsonl").open().readline())
    assert "<search>" in json.dumps(record) and "<information>" in json.dumps(record)


def test_bench_retriever_reports_ratios(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    result = _cli("bench", "retriever", "--passages", "300", "--large", "600", "--backend", "bm25s", "--queries", "60",
                  "--clients", "4", "--requests", "3", "--out", str(out), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(out.read_text())
    sizes = [row["passages"] for row in report["rows"]]
    assert sizes == [300, 600] and report["rows"][0]["ratio"] == 1.0
    assert all(row["qps"] > 0 for row in report["rows"])
    server = report["server"]
    assert server["requests"] == 12 and server["p99_ms"] >= server["p50_ms"] > 0
    assert "p99" in result.stdout
