"""Small evaluation run folders written with the project's own record writers, for the report tests."""

from __future__ import annotations

from pathlib import Path

from seed_gym.records import EpisodeRecord, RunDir, StepRecord
from seed_gym.scoring import summarize


def make_run(path: Path, outcomes: list[tuple[str, str, bool]], *, agent: str = "random", split: str = "unseen",
             env: str = "alfworld", summary: bool = True, planned: int | None = None, **identity) -> Path:
    """A run directory with one episode per (task id, family, won); each episode has 2 steps."""
    task_ids = [task_id for task_id, _, _ in outcomes]
    ident = {"env": env, "env_version": "v1", "env_kwargs": {}, "split": split, "split_fingerprint": f"sha256:{split}fp0000000000",
             "data_fingerprint": "sha256:data000000000000", "agent": agent, "max_steps": 10, "group": 1,
             "seed": 0, "tasks": planned or len(outcomes), "tasks_fingerprint": "sha256:tasks00000000000", **identity}
    run = RunDir(path)
    run.open(ident, {"task_ids": task_ids, "provenance": {"git_commit": "abc123", "created": "2026-12-01T00:00:00"}})
    records = [EpisodeRecord(episode_id=f"{tid}#0", task={"id": tid, "split": split, "family": fam, "instruction": ""},
                             agent=agent, group_index=0, seed=0,
                             steps=[StepRecord(0, "o", "a", 0.0, False), StepRecord(1, "o", "b", float(won), not won)],
                             final_observation="", won=won, score=float(won), total_reward=float(won),
                             status="completed", wall_seconds=0.1) for tid, fam, won in outcomes]
    run.append(records)
    if summary:
        run.write_summary(summarize(records))
    return path


def tasks(pattern: str, family: str = "pick") -> list[tuple[str, str, bool]]:
    """``"1010"`` -> tasks t0..t3 with won = 1, 0, 1, 0."""
    return [(f"t{i}", family, c == "1") for i, c in enumerate(pattern)]
