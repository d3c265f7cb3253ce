"""Progress you can trust: an evaluation reports steps (and a model agent's tokens) per second as
they happen, not only finished episodes, and ``eval`` says where it writes."""

from __future__ import annotations

from pathlib import Path

from test_model_agent_records import RecordingBackend, play
from toy_envs import CounterEnv

from seed_gym.agent import AgentSpec
from seed_gym.agents.model import ModelAgent
from seed_gym.cli import main
from seed_gym.evaluate import EvalConfig, evaluate
from seed_gym.progress import EvalProgress
from seed_gym.records import StepRecord
from seed_gym.registry import register

register("toy-counter-progress", CounterEnv)


def step(tokens: int | None) -> StepRecord:
    meta = {} if tokens is None else {"completion_tokens": tokens}
    return StepRecord(t=0, observation="", action="up", reward=0.0, invalid_action=False, meta=meta)


def test_rates_are_steps_and_tokens_over_this_sessions_wall_time():
    now = [100.0]
    progress = EvalProgress(done=3, total=10, clock=lambda: now[0], started=100.0)
    assert progress.rates() == ""  # nothing taken yet: no made-up rate
    progress.add_steps([step(None), step(None)])
    now[0] = 104.0
    assert progress.rates() == "2 steps · 0.5 steps/s"  # a scripted agent generates no tokens
    progress.add_steps([step(30), step(10)])
    now[0] = 108.0
    assert progress.rates() == "4 steps · 0.5 steps/s · 5 tok/s"


def test_evaluate_reports_every_tick_before_any_episode_finishes(tmp_path: Path):
    seen: list[tuple[int, int, int]] = []
    config = EvalConfig(env="toy-counter-progress", split="train", agent="expert", out=tmp_path / "run", n=6,
                        backend="inline", live_episodes=6)
    evaluate(config, on_progress=lambda p: seen.append((p.done, p.total, p.steps)))
    assert seen[0] == (0, 6, 0)
    assert (0, 6, 6) in seen  # the first tick: six steps taken, count-1 not yet recorded as finished
    assert seen[-1] == (6, 6, 1 + 2 + 3 + 4 + 5 + 6)
    assert [s for _, _, s in seen] == sorted(s for _, _, s in seen)


def test_a_model_agents_generated_tokens_are_counted():
    agent = ModelAgent(AgentSpec.parse("hf:m"), backend=RecordingBackend("<think>x</think><action>up</action>"))
    progress = EvalProgress(done=0, total=1)
    [record] = play(agent)  # count-2: two steps of five completion tokens each
    progress.add_steps(record.steps)
    assert (progress.steps, progress.tokens) == (2, 10)


def test_eval_says_where_it_writes_when_out_is_not_given(tmp_path: Path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code = 0
    try:
        main(["eval", "-a", "expert", "--env", "toy-counter-progress", "--split", "train", "-n", "1",
              "--backend", "inline"])
    except SystemExit as exit_:
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 0, err
    assert "writing runs/toy-counter-progress-train/<agent>/ (no --out given" in err
    assert (tmp_path / "runs" / "toy-counter-progress-train" / "expert" / "summary.json").exists()
    assert "steps/s" in err  # the progress line's rate


def test_milestones_echo_a_line_as_each_library_task_starts_and_ends_and_pass_every_report_on():
    from seed_gym.progress import milestones

    lines: list[str] = []
    passed: list[tuple[str, int, int]] = []
    report = milestones(lines.append, then=lambda *args: passed.append(args))
    for done in (0, 1, 2, 3, 3):
        report("generating games", done, 3)
    report("building index", 5, 5)
    assert lines == ["generating games: 0/3 ...", "generating games: 3/3 done",
                     "building index: 5/5 ...", "building index: 5/5 done"]
    assert len(passed) == 6 and passed[-1] == ("building index", 5, 5)
