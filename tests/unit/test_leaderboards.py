"""Leaderboards: validation, board grouping, mismatch flags, paired statistics, rendering.

Runs here are small hand-written run directories, so every expected number is computed by hand.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import seed_gym.registry
from seed_gym.leaderboards import formatting as fmt
from seed_gym.leaderboards.boards import build_boards, split_sort_key
from seed_gym.leaderboards.compare import (compare_run_pairs, compare_runs, mcnemar_exact, newcombe_paired_interval,
                                          paired_bootstrap_ci)
from seed_gym.leaderboards.reference import ReferenceRow, all_reference_rows, reference_rows
from seed_gym.leaderboards.render_html import render_html
from seed_gym.leaderboards.render_md import render_markdown
from seed_gym.leaderboards.report import build_report, write_report
from seed_gym.leaderboards.runs import SubmissionError, load_inputs, load_run, parse_metrics, parse_submission
from seed_gym.leaderboards.tables import generalization_table
from seed_gym.profile import EnvProfile
from seed_gym.scoring import grouped_effective_size

from run_folders import make_run, tasks  # the helper beside this file

GOOD_SUBMISSION = {"name": "Team X", "model": "tiny-1", "contact": "x@example.org", "date": "2026-12-01"}


# -- paired statistics ------------------------------------------------------------------------
@pytest.mark.parametrize("b, c, expected", [
    (0, 0, 1.0),
    (0, 6, 2 / 64),             # 2 * P(X <= 0 | n=6)
    (1, 5, 2 * 7 / 64),         # 2 * (C(6,0) + C(6,1)) / 2^6
    (3, 3, 1.0),                # 2 * 42/64 > 1 -> capped
    (2, 8, 2 * 56 / 1024),      # 2 * (1 + 10 + 45) / 2^10
])
def test_mcnemar_exact_matches_hand_values(b: int, c: int, expected: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(expected)
    assert mcnemar_exact(c, b) == pytest.approx(expected)


def test_paired_bootstrap_ci_is_degenerate_for_constant_differences() -> None:
    assert paired_bootstrap_ci([[1.0], [1.0], [1.0]]) == [1.0, 1.0]
    low, high = paired_bootstrap_ci([[1.0], [0.0], [-1.0], [0.0]])
    assert -1.0 <= low < 0.0 < high <= 1.0


Z2 = 1.959964 ** 2


def test_newcombe_interval_when_every_pair_differs_one_way() -> None:
    # 4 pairs, A won and B lost each: p_A = 1, p_B = 0, phi = 0 (an empty margin). The Wilson
    # limits are 4/(4+z^2) below 1 and z^2/(4+z^2) above 0, so the upper end is -1 + sqrt(2) z^2/(4+z^2).
    low, high = newcombe_paired_interval(0, 4, 0, 0)
    assert low == -1.0 and high == pytest.approx(-1 + math.sqrt(2) * Z2 / (4 + Z2)) and high > -0.35
    assert newcombe_paired_interval(0, 0, 4, 0) == pytest.approx([-high, 1.0])  # mirrored: B won each


def test_newcombe_interval_without_discordant_pairs() -> None:
    # 5 pairs both won: p_A = p_B = 1, phi = 0; each half-width is 1 - 5/(5+z^2) = z^2/(5+z^2).
    assert newcombe_paired_interval(5, 0, 0, 0) == pytest.approx([-Z2 / (5 + Z2), Z2 / (5 + Z2)])
    # 3 both won, 2 both lost: phi = 6/6 = 1, so each half-width is |(p - l) - (u - p)| = |2p - (l + u)|
    # with l + u twice the Wilson centre (0.6 + z^2/10) / (1 + z^2/5).
    half = abs(1.2 - 2 * (0.6 + Z2 / 10) / (1 + Z2 / 5))
    assert newcombe_paired_interval(3, 0, 0, 2) == pytest.approx([-half, half]) and half > 0.05


def test_newcombe_interval_over_effective_pairs_is_the_interval_of_the_scaled_table() -> None:
    assert newcombe_paired_interval(4, 4, 0, 0, effective_pairs=2) == pytest.approx(newcombe_paired_interval(1, 1, 0, 0))
    # Two tasks of 4 pairs, each task's differences all alike (-1s, 0s): the ICC is 1, so 2 effective pairs.
    assert grouped_effective_size([(4, -4.0, 4.0), (4, 0.0, 0.0)]) == pytest.approx(2.0)


def test_paired_success_difference_does_not_collapse_when_every_pair_differs_one_way(tmp_path: Path) -> None:
    a = load_run(make_run(tmp_path / "a", tasks("1111"), agent="a"))
    b = load_run(make_run(tmp_path / "b", tasks("0000"), agent="b"))
    result = compare_runs(a, b)
    assert result.success_diff == -1.0 and result.p_value == pytest.approx(0.125)
    assert result.success_diff_ci == pytest.approx([-1.0, -1 + math.sqrt(2) * Z2 / (4 + Z2)])


def test_compare_runs_counts_discordant_pairs_and_lists_differing_tasks(tmp_path: Path) -> None:
    a = load_run(make_run(tmp_path / "a", tasks("11000"), agent="a"))
    b = load_run(make_run(tmp_path / "b", tasks("01110"), agent="b"))
    result = compare_runs(a, b)
    assert (result.pairs, result.tasks) == (5, 5)
    assert result.success_a == pytest.approx(0.4) and result.success_b == pytest.approx(0.6)
    assert result.success_diff == pytest.approx(0.2)
    assert (result.a_only_won, result.b_only_won) == (1, 2)
    assert result.p_value == pytest.approx(1.0)  # 2 * (1 + 3) / 8, capped
    assert [d.task_id for d in result.differing] == ["t0", "t2", "t3"]
    assert result.success_diff_ci[0] <= 0.2 <= result.success_diff_ci[1]


def test_pooled_comparison_pairs_within_each_run_pair_and_adds_the_discordant_counts(tmp_path: Path) -> None:
    # two seeds evaluated the same task ids: pooled, each seed's tasks are clusters of their own
    seeds = [("11000", "01110"), ("1010", "1111")]
    pairs = [(load_run(make_run(tmp_path / f"a{i}", tasks(a), agent="a")),
              load_run(make_run(tmp_path / f"b{i}", tasks(b), agent="b"))) for i, (a, b) in enumerate(seeds)]
    alone = [compare_runs(a, b) for a, b in pairs]
    pooled = compare_run_pairs(pairs)
    assert pooled.pairs == sum(r.pairs for r in alone) == 9 and pooled.tasks == 9
    assert pooled.success_diff == pytest.approx(sum(r.success_diff * r.pairs for r in alone) / pooled.pairs)
    assert (pooled.a_only_won, pooled.b_only_won) == (sum(r.a_only_won for r in alone), sum(r.b_only_won for r in alone))
    assert pooled.p_value == pytest.approx(mcnemar_exact(pooled.a_only_won, pooled.b_only_won))
    assert {d.task_id for d in pooled.differing} == {f"{i}/{d.task_id}" for i, r in enumerate(alone) for d in r.differing}
    assert compare_run_pairs(pairs[:1]) == alone[0]  # one pair is the plain comparison


def test_compare_pairs_only_shared_tasks(tmp_path: Path) -> None:
    a = load_run(make_run(tmp_path / "a", tasks("111"), agent="a"))
    b = load_run(make_run(tmp_path / "b", tasks("00") + [("t9", "pick", True)], agent="b"))
    result = compare_runs(a, b)
    assert (result.tasks, result.only_a, result.only_b) == (2, 1, 1)
    assert result.success_diff == pytest.approx(-1.0)


def test_compare_refuses_runs_with_other_fingerprints_unless_allowed(tmp_path: Path) -> None:
    a = load_run(make_run(tmp_path / "a", tasks("10")))
    b = load_run(make_run(tmp_path / "b", tasks("10"), data_fingerprint="sha256:other00000000000"))
    with pytest.raises(SubmissionError, match="data_fingerprint"):
        compare_runs(a, b)
    assert compare_runs(a, b, allow_mismatch=True).mismatches == ["data_fingerprint"]


# -- boards -----------------------------------------------------------------------------------
def test_boards_rank_rows_and_never_mix_fingerprints(tmp_path: Path) -> None:
    runs = load_inputs([make_run(tmp_path / "r1", tasks("1000"), agent="random"),
                        make_run(tmp_path / "r2", tasks("1110"), agent="expert"),
                        make_run(tmp_path / "r3", tasks("1111"), agent="other", max_steps=50)])
    [section] = build_boards(runs)
    assert [(b.split, b.variant, b.variants) for b in section.boards] == [("unseen", 1, 2), ("unseen", 2, 2)]
    main, odd = section.boards
    assert [row.label for row in main.rows] == ["expert", "random"]
    assert [row.rank for row in main.rows] == [1, 2]
    assert [row.label for row in odd.rows] == ["other"]
    assert main.conflicts == odd.conflicts == ["max_steps"]
    html = render_html(build_report([tmp_path / "r1", tmp_path / "r2", tmp_path / "r3"]))
    assert html.count('data-flag="mismatch"') == 2


def test_sections_order_splits_seen_unseen_other_train() -> None:
    assert sorted(["train", "test", "unseen", "seen", "dev"], key=split_sort_key) == \
        ["seen", "unseen", "dev", "test", "train"]


def test_generalization_table_puts_splits_side_by_side(tmp_path: Path) -> None:
    runs = load_inputs([make_run(tmp_path / "u", tasks("10"), agent="expert"),
                        make_run(tmp_path / "s", tasks("11"), agent="expert", split="seen"),
                        make_run(tmp_path / "r", tasks("00"), agent="random", split="seen")])
    [section] = build_boards(runs)
    table = generalization_table(section)
    assert [h.split(" ")[0] for h in table.headers] == ["Submission", "seen", "unseen"]
    by_label = {row[0].text: row for row in table.rows}
    assert [c.value for c in by_label["expert"][1:]] == [1.0, 0.5]
    assert by_label["random"][2].text == "–"


def test_family_cells_and_macro_average(tmp_path: Path) -> None:
    outcomes = [("t0", "heat", True), ("t1", "heat", False), ("t2", "cool", True)]
    [section] = build_boards(load_inputs([make_run(tmp_path / "r", outcomes)]))
    [row] = section.boards[0].rows
    assert {f: c.success_rate for f, c in row.families.items()} == {"cool": 1.0, "heat": 0.5}
    assert row.summary["macro_success_rate"] == pytest.approx(0.75)


# -- validation -------------------------------------------------------------------------------
def test_parse_submission_lists_every_problem() -> None:
    submission, problems = parse_submission({"name": "x", "model": "", "date": "02/12/2026", "contcat": "me"}, "s.json")
    assert submission is None
    text = "\n".join(problems)
    assert "missing required field 'contact'" in text
    assert "'model' must be a non-empty string" in text
    assert "'date' must be YYYY-MM-DD" in text
    assert "unknown field(s) 'contcat'" in text
    assert parse_submission(GOOD_SUBMISSION, "s.json")[0].name == "Team X"


def test_parse_metrics_checks_each_line() -> None:
    points, problems = parse_metrics(['{"update": 5, "split": "seen", "success_rate": 0.5, "loss": 1.5}', "",
                                      '{"update": -1, "split": "seen", "success_rate": 2}', "nope"], "m.jsonl")
    assert [(p.update, p.split, p.values["loss"]) for p in points] == [(5, "seen", 1.5)]
    assert any("line 3: 'update'" in p for p in problems)
    assert any("line 3: 'success_rate'" in p for p in problems)
    assert any("line 4: not JSON" in p for p in problems)


def test_incomplete_run_and_wrong_summary_are_rejected(tmp_path: Path) -> None:
    with pytest.raises(SubmissionError, match="incomplete run, 2 of 3"):
        load_run(make_run(tmp_path / "short", tasks("10"), planned=3))
    path = make_run(tmp_path / "lying", tasks("10"))
    stored = json.loads((path / "summary.json").read_text())
    (path / "summary.json").write_text(json.dumps({**stored, "success_rate": 0.9}))
    with pytest.raises(SubmissionError, match="success_rate = 0.9 but episodes.jsonl gives 0.5"):
        load_run(path)


def test_broken_submission_errors_name_every_file(tmp_path: Path) -> None:
    folder = tmp_path / "sub"
    make_run(folder / "run", tasks("10"), agent="random")
    (folder / "submission.json").write_text(json.dumps({**GOOD_SUBMISSION, "agent": "expert"}))
    (folder / "metrics.jsonl").write_text('{"update": 1, "split": "seen"}\n')
    with pytest.raises(SubmissionError) as error:
        load_inputs([folder, tmp_path / "missing"])
    message = str(error.value)
    assert "submission.json says agent 'expert' but the run was made by 'random'" in message
    assert "metrics.jsonl line 1: 'success_rate'" in message
    assert "missing: no such file or folder" in message


def test_folder_without_runs_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(SubmissionError, match="not a run directory or submission"):
        load_inputs([tmp_path / "empty"])


# -- reference rows and rendering -------------------------------------------------------------
#: The reported rows of a plugin env, declared by its profile (``EnvProfile.reported``).
TOY_ROWS = (ReferenceRow("toy-env", "test", "Toy-RL", "Tiny-1B", {"success_rate": 12.5}, "toy paper", "[U]"),
            ReferenceRow("toy-env", "test", "Toy-RL", "Tiny-1B", {"success_rate": 12.5}, "toy paper", "[U]",
                         families={"toy_family_long": 25.0, "toy_other": None}))


def test_reference_rows_have_sources_and_known_values() -> None:
    rows = all_reference_rows()
    assert all(row.source and row.tag for row in rows)
    seed_3b = [r for r in reference_rows("alfworld") if r.method == "SEED" and r.backbone == "Qwen2.5-3B"
               and r.split == "seen" and not r.families]
    assert [r.metrics["success_rate"] for r in seed_3b] == [91.8]
    # Each built-in env declares its own rows; webshop-browser shares webshop's profile, counted once.
    assert {env: sum(r.env == env for r in rows) for env in {r.env for r in rows}} == \
        {"alfworld": 45, "searchqa": 26, "webshop": 28}
    assert reference_rows("Search-QA") == reference_rows("search_qa") == reference_rows("searchqa")
    assert fmt.short_family("pick_two_obj_and_place") == "Pick2" and fmt.short_family("nq") == "nq"


def test_plugin_env_profile_declares_its_reported_rows(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(seed_gym.registry, "_SPECS", dict(seed_gym.registry._SPECS))
    seed_gym.registry.register("toy-env", "x:Y", profile=EnvProfile(
        reported=f"{__name__}:TOY_ROWS", family_columns={"Long": "toy_family_long"}))
    assert reference_rows("toy-env") == reference_rows("Toy_Env") == list(TOY_ROWS)
    assert all(row in all_reference_rows() for row in TOY_ROWS)
    assert fmt.short_family("toy_family_long") == "Long"
    report = build_report([make_run(tmp_path / "r", [("t0", "toy_family_long", True)], env="toy-env",
                                    split="test")])
    markdown = render_markdown(report)
    assert "| reported | Toy-RL | Tiny-1B | 12.5 | toy paper | [U] |" in markdown
    assert "|  | Method | Backbone | Long | toy_other | Avg |" in markdown  # undeclared column: name kept


def test_report_keeps_reported_rows_apart_and_shows_submission_and_curves(tmp_path: Path) -> None:
    folder = tmp_path / "sub"
    make_run(folder / "run", tasks("1101"), agent="random")
    (folder / "submission.json").write_text(json.dumps(GOOD_SUBMISSION))
    (folder / "metrics.jsonl").write_text('{"update": 0, "split": "unseen", "success_rate": 0.1}\n'
                                          '{"update": 5, "split": "unseen", "success_rate": 0.6}\n')
    files = write_report(build_report([folder]), tmp_path / "out")
    assert [f.name for f in files] == ["index.html", "README.md", "leaderboard.json"]
    html = (tmp_path / "out" / "index.html").read_text()
    assert "<script" not in html and "<link" not in html and "src=" not in html
    measured, _, reported = html.partition('<table class="reported"')
    assert "Team X (random)" in measured and 'data-value="0.75"' in measured
    assert "reported" in reported and "arXiv 2607.14777" in reported and "Team X" not in reported
    assert "<polyline" in html and "validation success % by update" in html
    markdown = (tmp_path / "out" / "README.md").read_text()
    assert "| 1 | [Team X (random)](runs/001-random.html) | tiny-1 | 4 | 75.0 [" in markdown
    assert (tmp_path / "out" / "runs" / "001-random.html").read_text().count('<details class="episode"') == 4
    assert "| reported | SEED | Qwen2.5-3B | 91.8 |" in markdown
    data = json.loads((tmp_path / "out" / "leaderboard.json").read_text())
    assert data["boards"][0]["rows"][0]["success_rate"] == 0.75


def test_render_markdown_escapes_pipes(tmp_path: Path) -> None:
    report = build_report([make_run(tmp_path / "r", tasks("1"), agent="kind:a|b")], with_reference=False)
    assert "kind:a\\|b" in render_markdown(report)


def test_cli_builds_and_compares(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from seed_gym.cli import app

    make_run(tmp_path / "runs" / "random", tasks("0010"), agent="random")
    make_run(tmp_path / "runs" / "expert", tasks("1111"), agent="expert")
    runner = CliRunner()
    built = runner.invoke(app, ["leaderboard", "build", str(tmp_path / "runs"), str(tmp_path / "runs" / "expert"),
                                "--out", str(tmp_path / "out")])
    assert built.exit_code == 0, built.output
    assert "2 runs, 1 boards" in built.output and (tmp_path / "out" / "index.html").exists()
    compared = runner.invoke(app, ["compare", str(tmp_path / "runs" / "random"), str(tmp_path / "runs" / "expert")],
                             env={"COLUMNS": "200"})
    assert compared.exit_code == 0, compared.output
    assert "+75.0 [" in compared.output and "0 / 3" in compared.output and "0.250" in compared.output
    assert "3 tasks differ" in compared.output


def test_bad_metadata_does_not_hide_run_problems(tmp_path: Path) -> None:
    folder = tmp_path / "sub"
    make_run(folder / "run", tasks("10"), planned=4)
    (folder / "submission.json").write_text('{"name": "x",')
    with pytest.raises(SubmissionError) as error:
        load_inputs([folder])
    assert "submission.json: not JSON" in str(error.value)
    assert "incomplete run, 2 of 4" in str(error.value)


# -- a board people read ----------------------------------------------------------------------
def test_family_cells_show_n_and_success_intervals_never_collapse(tmp_path: Path) -> None:
    run = make_run(tmp_path / "r", tasks("1111111111", "pick") + [("z0", "look", False)])
    [section] = build_boards(load_inputs([run]))
    [row] = section.boards[0].rows
    assert row.summary["ci95"]["success_rate"][0] < row.summary["success_rate"] < 1.0  # 10 of 11
    pick = row.families["pick"]
    assert pick.episodes == 10 and pick.ci95[1] == 1.0 and pick.ci95[0] == pytest.approx(0.7225, abs=1e-4)
    assert row.families["look"].ci95 == pytest.approx([0.0, 0.7935], abs=1e-4)  # 0 of 1
    html = render_html(build_report([run], with_reference=False))
    assert "[72.2, 100.0] n=10" in html and "[0.0, 79.3] n=1" in html and "[100.0, 100.0]" not in html


def test_board_variants_say_what_differs_not_a_variant_number(tmp_path: Path) -> None:
    main = make_run(tmp_path / "a", tasks("10"))
    short = make_run(tmp_path / "b", tasks("11"), agent="expert", max_steps=5)
    [section] = build_boards(load_inputs([main, short]))
    assert sorted(board.title for board in section.boards) == ["alfworld / unseen · max steps 10",
                                                               "alfworld / unseen · max steps 5"]
    other_tasks = make_run(tmp_path / "c", tasks("11"), agent="expert", tasks_fingerprint="sha256:othertasks000000")
    [section] = build_boards(load_inputs([main, other_tasks]))
    assert {board.difference for board in section.boards} == {"2 tasks tasks000", "2 tasks othertas"}
    headers = generalization_table(section).headers
    assert not any(" v1" in h or " v2" in h for h in headers) and any("2 tasks othertas" in h for h in headers)


def test_every_row_is_paired_against_the_boards_best_row(tmp_path: Path) -> None:
    best = make_run(tmp_path / "best", tasks("111111"), agent="expert")
    worse = make_run(tmp_path / "worse", tasks("110000"), agent="random")
    [section] = build_boards(load_inputs([worse, best]))
    first, second = section.boards[0].rows
    assert first.label == "expert" and first.vs_best is None
    assert second.vs_best.success_diff == pytest.approx(-4 / 6)
    assert (second.vs_best.a_only_won, second.vs_best.b_only_won) == (4, 0)
    assert second.vs_best.p_value == pytest.approx(mcnemar_exact(4, 0))
    html = render_html(build_report([best, worse], with_reference=False))
    assert f'data-metric="paired_p" data-value="{mcnemar_exact(4, 0)!r}"' in html and ">best<" in html


def test_model_agents_rows_show_tokens_latency_and_format_validity(tmp_path: Path) -> None:
    run = make_run(tmp_path / "m", tasks("10"), agent="hf:/a/very/long/path/to/models/tiny@max_new_tokens=16,dtype=float32")
    records = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    for record in records:  # what a model agent's steps record
        for index, step in enumerate(record["steps"]):
            step["meta"] = {"completion_tokens": 10 + index, "prompt_tokens": 100, "latency_s": 0.5}
            step["valid_format"] = index == 0
    (run / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    scripted = make_run(tmp_path / "s", tasks("11"), agent="expert")
    [section] = build_boards(load_inputs([run, scripted]))
    rows = {row.label: row for row in section.boards[0].rows}
    assert rows["expert"].usage is None
    usage = next(row.usage for label, row in rows.items() if label.startswith("hf:"))
    assert (usage.steps, usage.completion_tokens, usage.prompt_tokens, usage.latency_s, usage.format_valid_rate) == \
        (4, 10.5, 100.0, 0.5, 0.5)
    html = render_html(build_report([run, scripted], with_reference=False))
    assert "tokens, latency and format validity" in html
    assert 'title="hf:/a/very/long/path/to/models/tiny@max_new_tokens=16,dtype=float32"' in html
    assert fmt.short_label("hf:/a/very/long/path/to/models/tiny@max_new_tokens=16,dtype=float32") in html


def test_papers_rows_are_folded_and_a_one_point_curve_is_a_labelled_marker(tmp_path: Path) -> None:
    folder = tmp_path / "sub"
    make_run(folder / "run", tasks("1101"))
    (folder / "submission.json").write_text(json.dumps(GOOD_SUBMISSION))
    (folder / "metrics.jsonl").write_text('{"update": 3, "split": "unseen", "success_rate": 0.25}\n')
    html = render_html(build_report([folder]))
    folded = html[html.index('<details class="reported-papers">'):]
    assert '<table class="reported"' in folded and '<table class="reported"' not in html[:html.index(folded)]
    curve = html[html.index("Learning curves"):html.index('<details class="reported-papers">')]
    assert "<polyline" not in curve and 'r="5"' in curve and "25.0%" in curve and "one evaluation so far" in curve
    assert '<figcaption>Team X: validation success % by update</figcaption>' in curve


def make_training_run(folder: Path, rows: list[dict]) -> Path:
    """A ``seed-gym train`` folder: its config, one evaluation on the test split and ``rows`` as
    metrics.jsonl (plus a line torn by a kill)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"config": {"algo": "grpo", "model": "/models/tiny"}}))
    make_run(folder / "evals" / "update-000002" / "test" / "hf", tasks("10"), agent="hf:/models/tiny", split="test",
             env="webshop")
    (folder / "metrics.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows) + '{"update": 3, "ti')
    return folder


def update_row(number: int, seconds: float, **phases: tuple[float, float]) -> dict:
    """An update row as the trainer logs it: ``phases`` maps a phase to (seconds, count)."""
    from seed_gym.training.costs import PhaseCosts

    costs = PhaseCosts()
    for phase, (spent, count) in phases.items():
        costs.add(phase, spent, count)
    return {"update": number, "rollout_backend": "vllm", "seconds": seconds, **costs.row()}


def test_a_training_run_shows_each_phases_seconds_share_and_count_per_update(tmp_path: Path) -> None:
    # update 1: 4.5 s in phases of a 5 s update; update 2: 3.5 s + a 1 s evaluation of a 4 s update (+ eval)
    rows = [update_row(1, 5.0, env=(1.0, 10), generate=(3.0, 100), update=(0.5, 400)),
            {"update": 1, "split": "test", "success_rate": 0.5},
            update_row(2, 4.0, env=(1.0, 20), generate=(1.0, 300), update=(1.5, 600), eval=(1.0, 40))]
    run = make_training_run(tmp_path / "grpo", rows)
    report = build_report([run], with_reference=False)
    [cost] = report.envs[0].costs
    assert (cost.label, cost.updates, cost.rollout_backends) == ("grpo tiny (update-000002)", 2, ("vllm",))
    phases = {p.phase: (p.seconds, round(p.share, 6), p.count) for p in cost.phases}
    # means: env 1, generate 2, update 1, eval 0.5 of a 5 s wall time; 0.5 s no phase covers
    assert phases["env"] == (1.0, 0.2, 15.0) and phases["generate"] == (2.0, 0.4, 200.0)
    assert phases["update"] == (1.0, 0.2, 500.0) and phases["eval"] == (0.5, 0.1, 20.0)
    assert phases["other"] == (0.5, 0.1, 0.0) and phases["sync"] == (0.0, 0.0, 0.0)
    html = render_html(report)
    costs = html[html.index("Training cost per phase"):]
    assert f'data-run="{run}" data-metric="time/generate_s" data-value="2.0"' in costs
    assert "mean over 2 updates (5.00 s each; rollouts: vllm)" in costs
    markdown = render_markdown(report)
    assert "| generate | 2.00 | 40.0 | 200 tokens |" in markdown and "| env | 1.00 | 20.0 | 15 steps |" in markdown
    assert "| other | 0.50 | 10.0 | – |" in markdown
    files = write_report(report, tmp_path / "out")
    data = json.loads(files[2].read_text())["training_costs"]
    assert [(c["env"], c["updates"]) for c in data] == [("webshop", 2)]
    assert {"phase": "generate", "seconds": 2.0, "share": 0.4, "count": 200.0} in data[0]["phases"]


def test_runs_without_phase_costs_show_no_cost_table(tmp_path: Path) -> None:
    sft = make_training_run(tmp_path / "sft", [{"update": 1, "seconds": 9.0, "loss": 2.0},
                                               {"update": 1, "split": "test", "success_rate": 0.5}])
    evaluated = make_run(tmp_path / "eval" / "random", tasks("10"), env="webshop", split="test")
    report = build_report([sft, evaluated], with_reference=False)
    assert report.envs[0].costs == []
    assert "Training cost per phase" not in render_html(report) + render_markdown(report)
