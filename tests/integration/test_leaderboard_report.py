"""Leaderboard reports from real runs: scripted agents through the real CLI, every available env.

* ALFWorld: expert and random on 6 generated games of ``seen`` and ``unseen``, and on 6 official
  ``valid_unseen`` games when the shared archive exists (their data fingerprint differs, so they must
  land on a separate, flagged board).
* Every other registered env (Search-QA, WebShop, plugins): expert and random on 4 tasks of its
  ``seen``/``unseen`` splits (or ``test``).
* The tiny offline model (``hf`` agent, greedy) beside them on every env, and a short ``seed-gym
  train`` run whose latest evaluation and learning curve join the board.
* The page's numbers are checked against each run's ``summary.json``, then the page is loaded in
  headless Chromium (selenium): no console errors, tables visible (the papers' rows once unfolded),
  nothing wider than the window, a screenshot kept in ``tests/_output/leaderboard.png``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from browser import OVERFLOWING_JS, chromium, console_errors, full_page_screenshot

from seed_gym.leaderboards import formatting as fmt
from seed_gym.leaderboards.compare import mcnemar_exact

pytestmark = pytest.mark.integration

#: The shared real ALFWorld games (the ``official_alfworld`` fixture of conftest unpacks them).
OFFICIAL_ARCHIVE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "alfworld-official-valid.tar.xz"
AGENTS = ("expert", "random")
GENERATED = '{"seen": 6, "unseen": 6}'


def seed_gym(*args: str) -> str:
    """Run the real CLI; fail with its output when it fails."""
    done = subprocess.run([sys.executable, "-m", "seed_gym.cli", *args], capture_output=True, text=True,
                          timeout=900, env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, f"seed-gym {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def eval_runs(out: Path, env: str, split: str, n: int, *extra: str, agents: tuple[str, ...] = AGENTS) -> list[Path]:
    from seed_gym.agent import AgentSpec

    seed_gym("eval", *[arg for agent in agents for arg in ("--agent", agent)], "--env", env, "--split", split,
             "-n", str(n), "--workers", "1", *extra, "--out", str(out))
    return [out / AgentSpec.parse(agent).slug for agent in agents]


def tiny_agent(model: Path) -> str:
    return f"hf:{model}@max_new_tokens=16,dtype=float32"


def training_run(model: Path, out: Path) -> Path:
    """Two GRPO updates on WebShop with an evaluation after each: a learning curve and rows."""
    seed_gym("train", "--algo", "sdar", "--env", "webshop", "--model", str(model), "--updates", "2",
             "--out", str(out), *[arg for kv in ("tasks_per_update=2", "group=2", "max_new_tokens=12",
                                                 "max_steps=2", "eval_every=1", "eval_n=2", "eval_temperature=0",
                                                 'env_backend="inline"', "workers=1") for arg in ("--set", kv)])
    return out


def other_env_splits(env: str) -> list[str]:
    from seed_gym.registry import make

    names = make(env).task_set().names()
    chosen = [s for s in ("seen", "unseen") if s in names]
    return chosen or ([s for s in names if s != "train"][:1])


@pytest.fixture(scope="module")
def run_dirs(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> list[Path]:
    from seed_gym.registry import list_envs

    root = tmp_path_factory.mktemp("leaderboard-runs")
    agents = (*AGENTS, tiny_agent(request.getfixturevalue("tiny_model_dir")))
    runs = []
    for split in ("seen", "unseen"):
        runs += eval_runs(root / f"alfworld-gen-{split}", "alfworld", split, 6, "--env-arg", f"sizes={GENERATED}",
                          agents=agents)
    if OFFICIAL_ARCHIVE.exists():
        data = request.getfixturevalue("official_alfworld")
        runs += eval_runs(root / "alfworld-official-unseen", "alfworld", "unseen", 6, "--env-arg", f"data={data}")
    for spec in list_envs():
        # Built-in envs only (the CLI subprocess cannot see envs a test registered in-process);
        # the browser variant plays the same episodes as its text env, so it adds nothing here.
        builtin = isinstance(spec.entry_point, str) and spec.entry_point.startswith("seed_gym.envs.")
        if spec.env_id == "alfworld" or not builtin or spec.env_id.endswith("-browser"):
            continue
        for split in other_env_splits(spec.env_id):
            runs += eval_runs(root / f"{spec.env_id}-{split}", spec.env_id, split, 4, "--backend", "inline",
                              agents=agents)
    return runs


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Path:
    return training_run(request.getfixturevalue("tiny_model_dir"), tmp_path_factory.mktemp("train") / "sdar")


@pytest.fixture(scope="module")
def report_dir(run_dirs: list[Path], trained: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("leaderboard")
    printed = seed_gym("leaderboard", "build", *sorted({str(p.parent) for p in run_dirs}), str(trained),
                       "--out", str(out))
    assert f"{len(run_dirs) + 2} runs" in printed  # + the training run's test and unseen evaluations
    return out


class CellCollector(HTMLParser):
    """The measured cells: (run dir, metric) -> (data-value, shown text)."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: dict[tuple[str, str], tuple[float, str]] = {}
        self._open: tuple[str, str, float] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        data = dict(attrs)
        if tag == "td" and "data-metric" in data:
            self._open = (data["data-run"], data["data-metric"], float(data["data-value"]))
            self._text = []

    def handle_data(self, text: str) -> None:
        if self._open:
            self._text.append(text)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._open:
            run, metric, value = self._open
            self.cells.setdefault((run, metric), (value, "".join(self._text)))
            self._open = None


def test_html_numbers_match_summary_json(run_dirs: list[Path], report_dir: Path) -> None:
    collector = CellCollector()
    collector.feed((report_dir / "index.html").read_text(encoding="utf-8"))
    for run in run_dirs:
        summary = json.loads((run / "summary.json").read_text())
        for metric, _, is_rate in fmt.METRIC_COLUMNS:
            value, text = collector.cells[(str(run), metric)]
            assert value == pytest.approx(summary[metric]), (run, metric)
            expected = fmt.metric_value(summary[metric], is_rate) + " " + fmt.interval(summary["ci95"][metric], is_rate)
            assert text == expected, (run, metric)
        for family, stats in summary["per_family"].items():
            value, text = collector.cells[(str(run), f"family:{family}")]
            assert value == pytest.approx(stats["success_rate"])
            assert text.startswith(fmt.pct(stats["success_rate"]) + " [")
        assert collector.cells[(str(run), "macro_success_rate")][0] == pytest.approx(summary["macro_success_rate"])


def test_boards_split_by_env_and_flag_other_data(run_dirs: list[Path], report_dir: Path) -> None:
    boards = json.loads((report_dir / "leaderboard.json").read_text())["boards"]
    named = {(b["env"], b["split"], b["variant"]): b for b in boards}
    for split in ("seen", "unseen"):
        agents = [r["agent"] for r in named[("alfworld", split, 1)]["rows"]]
        assert agents[0] == "expert" and len(agents) == 3
        assert "random" in agents and any(agent.startswith("hf:") for agent in agents)
    if OFFICIAL_ARCHIVE.exists():
        official = named[("alfworld", "unseen", 2)]
        assert "data_fingerprint" in official["conflicts"]
        assert all("official" in r["run_dir"] for r in official["rows"])
    envs = {run.parent.name.split("-")[0] for run in run_dirs}
    assert envs <= {b["env"] for b in boards}
    html = (report_dir / "index.html").read_text()
    assert html.count('data-kind="reported"') >= 2 and "arXiv 2607.14777" in html
    assert (report_dir / "README.md").read_text().startswith("# seed-gym leaderboard")


def test_the_tiny_model_has_a_row_on_every_env(run_dirs: list[Path], report_dir: Path) -> None:
    boards = json.loads((report_dir / "leaderboard.json").read_text())["boards"]
    tiny_envs = {b["env"] for b in boards for r in b["rows"] if r["agent"].startswith("hf:")}
    assert tiny_envs == {run.parent.name.split("-")[0] for run in run_dirs}


def test_a_training_run_adds_its_latest_evaluation_and_learning_curve(trained: Path, report_dir: Path) -> None:
    boards = json.loads((report_dir / "leaderboard.json").read_text())["boards"]
    rows = [r for b in boards if b["env"] == "webshop" for r in b["rows"] if r["label"].startswith("sdar ")]
    assert {Path(r["run_dir"]).parent.name for r in rows} == {"update-000002"}
    assert len(rows) == 2  # test and unseen
    html = (report_dir / "index.html").read_text()
    assert "Learning curves" in html and "validation success % by update" in html
    assert html.count("<polyline") >= 2  # one line per evaluated split
    costs = html[html.index("Training cost per phase"):]  # from the update rows of its metrics.jsonl
    assert "mean over 2 updates" in costs and "rollouts: hf" in costs
    assert float(re.search(r'data-metric="time/generate_s" data-value="([^"]+)"', costs).group(1)) > 0
    [data] = json.loads((report_dir / "leaderboard.json").read_text())["training_costs"]
    phases = {p["phase"]: p for p in data["phases"]}
    assert phases["generate"]["count"] > 0 and phases["update"]["count"] > 0  # tokens
    assert sum(p["share"] for p in data["phases"]) == pytest.approx(1.0)


def test_page_renders_in_headless_chromium(report_dir: Path, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    with chromium(tmp_path, width=1280, height=1600) as driver:
        driver.get((report_dir / "index.html").as_uri())
        assert driver.title == "seed-gym leaderboard"
        assert console_errors(driver) == []
        measured = driver.find_elements(By.CSS_SELECTOR, "section.board > div.scroll > table.measured")
        assert measured
        for table in measured:
            assert table.is_displayed() and table.size["height"] > 20 and table.size["width"] > 100
        assert "expert" in measured[0].text
        for papers in driver.find_elements(By.CSS_SELECTOR, "details.reported-papers"):
            papers.find_element(By.TAG_NAME, "summary").click()  # folded by default
        reported = driver.find_elements(By.CSS_SELECTOR, "table.reported")
        assert reported and all(table.is_displayed() for table in reported) and "REPORTED" in reported[0].text
        assert driver.execute_script(OVERFLOWING_JS) == []
        shot = full_page_screenshot(driver, "leaderboard.png")
    assert shot.stat().st_size > 20_000
    print(f"\nleaderboard screenshot: {shot}")


def test_compare_prints_paired_result(run_dirs: list[Path]) -> None:
    unseen = {run.name: run for run in run_dirs if run.parent.name == "alfworld-gen-unseen"}
    random_run, expert_run = unseen["random"], unseen["expert"]
    won = {}
    for run in (random_run, expert_run):
        lines = (run / "episodes.jsonl").read_text().splitlines()
        won[run] = {r["episode_id"]: r["won"] for r in map(json.loads, lines)}
    only_a = sum(won[random_run][e] and not won[expert_run][e] for e in won[random_run])
    only_b = sum(won[expert_run][e] and not won[random_run][e] for e in won[random_run])
    diff = (sum(won[expert_run].values()) - sum(won[random_run].values())) / len(won[random_run])
    printed = seed_gym("compare", str(random_run), str(expert_run))
    assert "paired: B = expert  vs  A = random" in printed
    assert f"{fmt.signed_pct(diff)} [" in printed
    assert f"{only_a} / {only_b}" in printed
    assert "McNemar exact p" in printed and fmt.p_value(mcnemar_exact(only_a, only_b)) in printed
    assert f"{only_a + only_b} tasks differ" in printed
