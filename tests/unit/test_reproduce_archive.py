"""A reproduce run's results travel without its weights (training/reproduce_archive.py rules): export copies
each finished RL stage's results and nothing that holds weights or rollouts; import puts them into another
run folder when the plan and its settings match; a stage never trains from a start other than the one the
finished stages of that start recorded."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from seed_gym.training.reproduce import MARKER, needed_stages, plan
from seed_gym.training.reproduce_archive import (ArchiveError, check_start, export_results, import_results,
                                                 portable)

PRESET = {"envs": ["webshop"], "seeds": [0, 1], "model": {"size": "tiny"}, "rl": {"updates": 2, "eval_n": 5},
          "arms": {"grpo": {"algo": "grpo"}, "seed": {"algo": "seed", "start": "skill-sft"}}}


def finish(stage, root: Path, start_fingerprint: str = "sha256:aaaa") -> None:
    """A finished RL stage folder as the trainer and run_stage leave it."""
    (stage.out / "checkpoints" / "update-000002").mkdir(parents=True)
    (stage.out / "checkpoints" / "update-000002" / "model.safetensors").write_bytes(b"weights")
    (stage.out / "rollouts" / "update-000001").mkdir(parents=True)
    (stage.out / "evals" / "update-000002" / "unseen").mkdir(parents=True)
    (stage.out / "evals" / "update-000002" / "unseen" / "episodes.jsonl").write_text('{"won": true}\n')
    (stage.out / "metrics.jsonl").write_text('{"update": 1}\n')
    (stage.out / "config.json").write_text("{}")
    (stage.out / MARKER).write_text(json.dumps({"stage": stage.name, "finished": True, "config": stage.config,
                                                "out_root": str(root),
                                                "start": {"model": stage.config["model"],
                                                          "fingerprint": start_fingerprint}}))


def by_name(out: Path) -> dict:
    return {stage.name: stage for stage in plan(PRESET, out)}


def test_paths_under_the_run_folder_compare_equal_from_any_run_folder(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    config = {"model": str(a / "sft" / "webshop" / "checkpoints" / "update-000003"), "lr": 1e-4,
              "sft_replay_runs": [str(a / "sft" / "webshop" / "data" / "expert")], "out": str(a / "rl"),
              "elsewhere": str(tmp_path / "ab" / "model")}
    moved = json.loads(json.dumps(config).replace(str(a) + "/", str(b) + "/"))
    assert portable(config, a) == portable(moved, b)
    assert portable(config, a)["model"] == "OUT/sft/webshop/checkpoints/update-000003"
    assert portable(config, a)["elsewhere"] == str(tmp_path / "ab" / "model")  # a sibling folder is not under OUT


def test_export_keeps_the_results_and_leaves_weights_and_rollouts_behind(tmp_path):
    out = tmp_path / "run"
    stages = by_name(out)
    finish(stages["rl/webshop/grpo/seed-0"], out)
    exported = export_results(list(stages.values()), out, tmp_path / "export")
    assert exported == ["rl/webshop/grpo/seed-0"]  # unfinished stages and the start stages are not exported
    kept = tmp_path / "export" / "rl" / "webshop" / "grpo" / "seed-0"
    assert sorted(p.name for p in kept.iterdir()) == ["config.json", "evals", "metrics.jsonl", "stage.json"]
    packed = kept / "evals" / "update-000002" / "unseen" / "episodes.jsonl.gz"
    assert gzip.decompress(packed.read_bytes()) == b'{"won": true}\n' and not packed.with_suffix("").exists()
    export_results(list(stages.values()), out, tmp_path / "again")  # the same stage exports to the same bytes
    assert (tmp_path / "again" / packed.relative_to(tmp_path / "export")).read_bytes() == packed.read_bytes()


def test_export_keeps_a_partial_report_as_markdown_and_json(tmp_path):
    out = tmp_path / "run"
    stages = by_name(out)
    finish(stages["rl/webshop/grpo/seed-0"], out)
    report = stages["report"].out
    report.mkdir(parents=True)
    for name in ("report.md", "report.json", "report.html"):  # a partial report: no stage.json marker
        (report / name).write_text(name)
    assert not stages["report"].done()
    assert export_results(list(stages.values()), out, tmp_path / "export") == ["rl/webshop/grpo/seed-0", "report"]
    assert sorted(p.name for p in (tmp_path / "export" / "report").iterdir()) == ["report.json", "report.md"]


def test_import_into_a_new_run_folder_counts_the_stages_done_and_only_the_rest_runs(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    finish(by_name(old)["rl/webshop/grpo/seed-0"], old)
    finish(by_name(old)["rl/webshop/seed/seed-0"], old)
    export_results(list(by_name(old).values()), old, tmp_path / "export")

    stages = by_name(new)
    assert import_results(list(stages.values()), new, tmp_path / "export") == ["rl/webshop/grpo/seed-0",
                                                                             "rl/webshop/seed/seed-0"]
    assert stages["rl/webshop/grpo/seed-0"].done() and not stages["rl/webshop/grpo/seed-1"].done()
    episodes = stages["rl/webshop/grpo/seed-0"].out / "evals" / "update-000002" / "unseen" / "episodes.jsonl"
    assert episodes.read_text() == '{"won": true}\n' and not list(new.rglob("*.gz"))  # unpacked
    assert [s.name for s in needed_stages(list(stages.values()))] == [
        "model", "sft/webshop", "skill-sft/webshop", "rl/webshop/grpo/seed-1", "rl/webshop/seed/seed-1", "report"]
    # a second import finds them done and copies nothing
    assert import_results(list(stages.values()), new, tmp_path / "export") == []


def test_when_every_rl_stage_is_done_no_start_stage_is_needed(tmp_path):
    out = tmp_path / "run"
    stages = by_name(out)
    for stage in stages.values():
        if stage.kind == "rl":
            finish(stage, out)
    assert [s.name for s in needed_stages(list(stages.values()))] == ["report"]


def test_import_refuses_results_of_other_settings_and_copies_nothing(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    finish(by_name(old)["rl/webshop/grpo/seed-0"], old)
    export_results(list(by_name(old).values()), old, tmp_path / "export")
    changed = {**PRESET, "rl": {"updates": 3, "eval_n": 5}}
    stages = plan(changed, new)
    with pytest.raises(ArchiveError, match=r"rl/webshop/grpo/seed-0: settings differ from the plan's \(updates\)"):
        import_results(stages, new, tmp_path / "export")
    assert not (new / "rl").exists()
    with pytest.raises(ArchiveError, match="not a folder"):
        import_results(stages, new, tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ArchiveError, match="holds no RL stage of this plan"):
        import_results(stages, new, tmp_path / "empty")


def model_folder(path: Path, weights: bytes) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    (path / "model.safetensors").write_bytes(weights)
    return path


def sft_start_of_a_finished_arm(stages: dict, out: Path) -> Path:
    """The SFT start checkpoint, and GRPO seed 0 finished from it (its fingerprint recorded)."""
    from seed_gym.agents.checkpoints import model_fingerprint

    start = model_folder(Path(stages["rl/webshop/grpo/seed-0"].config["model"]), b"the weights")
    finish(stages["rl/webshop/grpo/seed-0"], out, start_fingerprint=model_fingerprint(start))
    return start


def test_a_stage_trains_only_from_the_start_its_finished_siblings_recorded(tmp_path):
    from seed_gym.agents.checkpoints import model_fingerprint

    out = tmp_path / "run"
    stages = by_name(out)
    start = sft_start_of_a_finished_arm(stages, out)
    record = check_start(stages["rl/webshop/grpo/seed-1"], list(stages.values()), out)
    assert record == {"model": str(start), "fingerprint": model_fingerprint(start)}

    (start / "model.safetensors").write_bytes(b"other weights")  # the start retrained to something else
    with pytest.raises(ArchiveError, match="would not share one start"):
        check_start(stages["rl/webshop/grpo/seed-1"], list(stages.values()), out)
    # a stage from another start is not held to it
    model_folder(Path(stages["rl/webshop/seed/seed-1"].config["model"]), b"skill weights")
    check_start(stages["rl/webshop/seed/seed-1"], list(stages.values()), out)


def test_export_fills_in_the_start_of_a_stage_that_finished_before_starts_were_recorded(tmp_path):
    from seed_gym.agents.checkpoints import model_fingerprint

    out = tmp_path / "run"
    stages = by_name(out)
    grpo = stages["rl/webshop/grpo/seed-0"]
    start = model_folder(Path(grpo.config["model"]), b"the weights")
    finish(grpo, out)
    (grpo.out / MARKER).write_text(json.dumps({"stage": grpo.name, "finished": True, "config": grpo.config}))
    export_results(list(stages.values()), out, tmp_path / "export")
    marker = json.loads((tmp_path / "export" / "rl" / "webshop" / "grpo" / "seed-0" / MARKER).read_text())
    assert marker["out_root"] == str(out)
    assert marker["start"] == {"model": str(start), "fingerprint": model_fingerprint(start)}


def test_a_dry_run_names_what_import_and_export_would_copy_and_writes_nothing(tmp_path):
    from seed_gym.training.reproduce import reproduce

    old, new = tmp_path / "old", tmp_path / "new"
    finish(by_name(old)["rl/webshop/grpo/seed-0"], old)
    export_results(list(by_name(old).values()), old, tmp_path / "export")
    preset = tmp_path / "preset.toml"
    preset.write_text('envs = ["webshop"]\nseeds = [0, 1]\n[model]\nsize = "tiny"\n[rl]\nupdates = 2\neval_n = 5\n'
                      '[arms.grpo]\nalgo = "grpo"\n[arms.seed]\nalgo = "seed"\nstart = "skill-sft"\n')
    lines: list[str] = []
    reproduce(preset, new, dry_run=True, import_from=tmp_path / "export", export_to=tmp_path / "again",
              echo=lines.append)
    assert not new.exists() and not (tmp_path / "again").exists()
    assert lines[0].startswith("[import] 1 finished RL stage(s) would come from") and "rl/webshop/grpo/seed-0" in lines[0]
    assert any(line.startswith("[import] rl/webshop/grpo/seed-0:") for line in lines)
    assert any(line.startswith("[todo] rl/webshop/grpo/seed-1:") for line in lines)
    assert lines[-1].startswith("[export] 0 finished stage(s) would go to")


def test_skill_sft_stops_before_training_from_an_sft_start_other_than_the_one_finished_arms_recorded(tmp_path):
    from seed_gym.training.reproduce import run_stage

    out = tmp_path / "run"
    stages = by_name(out)
    sft_start = sft_start_of_a_finished_arm(stages, out)
    (sft_start / "model.safetensors").write_bytes(b"retrained elsewhere")
    (stages["sft/webshop"].out / MARKER).write_text(json.dumps({"stage": "sft/webshop", "finished": True}))
    skill_sft = stages["skill-sft/webshop"]
    assert skill_sft.config["model"] == str(sft_start)
    with pytest.raises(ArchiveError, match="would not share one start"):
        run_stage(skill_sft, list(stages.values()), PRESET)
    assert not (skill_sft.out / "checkpoints").exists() and not skill_sft.done()
