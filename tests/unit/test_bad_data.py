"""Bad data is one typed error when it loads, never a silent pass or a raw traceback (#20 defect 7).

One row per bad input: each builds a data folder from a good one and breaks one thing, then runs
``seed-gym eval`` on it. It must exit with code 2 and one line on stderr naming the file (and the
line, where the file has lines) and the fix; the env's loader must raise
:class:`~seed_gym.core.DataError` (or, for a folder that is not there, ``MissingDataError``).
Before the fix these runs exited 0 (an empty catalogue, corpus or split; a game folder silently
dropped; corrupt PDDL as an error in every episode) or died with a traceback naming no file.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import seed_gym
from seed_gym import cli
from seed_gym.core import DataError
from seed_gym.envs.webshop import catalog

# -- good data to break ---------------------------------------------------------------------------


def webshop_folder(root: Path) -> Path:
    """A 40-product catalogue in upstream's files, written with one product per line (so a cut
    or a bad byte has a line number to report)."""
    items, ins, human = catalog.generate_catalog(40, seed=1)
    root.mkdir(parents=True)
    (root / catalog.SHUFFLE_FILE).write_text("[\n" + ",\n".join(json.dumps(i) for i in items) + "\n]\n")
    (root / catalog.INS_FILE).write_text(json.dumps(ins))
    (root / catalog.HUMAN_FILE).write_text(json.dumps(human))
    return root


PASSAGES = [{"id": str(i), "contents": f'"Title {i}"\nPassage {i} about the river Seine in Paris, ü.'}
            for i in range(6)]
QUESTIONS = [{"id": f"q{i}", "question": f"where is passage {i}?", "golden_answers": ["Paris"],
              "data_source": "nq"} for i in range(3)]


def searchqa_folder(root: Path) -> Path:
    (root / "questions").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in PASSAGES))
    (root / "questions" / "test.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return root


DOMAIN = """;; a cut-down domain: the loader checks structure, the engine plays real games
(define (domain alfred)
 (:requirements :adl)
 (:predicates (atLocation ?a - agent ?l - location))
 (:action GotoLocation :parameters (?a - agent) :precondition () :effect ())
)"""
PROBLEM = """(define (problem plan_trial_T0)
(:domain alfred)
(:objects agent1 - agent
  loc1 - location)
(:init (atLocation agent1 loc1))
(:goal (atLocation agent1 loc1))
)"""


def write_game(folder: Path, **game: object) -> None:
    folder.mkdir(parents=True)
    (folder / "traj_data.json").write_text(json.dumps({"task_type": "pick_and_place_simple", "task_id": folder.name}))
    content = {"pddl_domain": DOMAIN, "grammar": 'grammar :: """{}"""', "pddl_problem": PROBLEM, "solvable": True}
    (folder / "game.tw-pddl").write_text(json.dumps({**content, **game}))


def alfworld_tree(root: Path) -> Path:
    """A json_2.1.1 tree with one (well-formed) game in each evaluation split."""
    for split in ("valid_seen", "valid_unseen"):
        write_game(root / "json_2.1.1" / split / "pick_and_place_simple-Mug-None-Desk-1" / "trial_T0")
    return root


# -- the ways to break it -------------------------------------------------------------------------


def cut_inside_a_character(path: Path) -> int:
    """Cut ``path`` in the middle of its last multi-byte character; the line the cut falls on."""
    raw = path.read_bytes()
    cut = raw.rindex("ü".encode()) + 1
    path.write_bytes(raw[:cut])
    return raw[:cut].count(b"\n") + 1


def cut_json_file(path: Path) -> int:
    raw = path.read_bytes()
    cut = len(raw) // 2
    path.write_bytes(raw[:cut])
    return raw[:cut].count(b"\n") + 1


def bad_byte_on_line(path: Path, line: int) -> int:
    lines = path.read_bytes().split(b"\n")
    lines[line - 1] = lines[line - 1][:5] + b"\xff\xfe" + lines[line - 1][5:]
    path.write_bytes(b"\n".join(lines))
    return line


@dataclass
class Case:
    env: str
    split: str
    build: Callable[[Path], tuple[Path, Path, int | None]]  # tmp -> (data folder, named file, line)


Change = Callable[[Path], tuple[Path, int | None]]  # the folder to break -> (the file named, its line)


def _broken(make: Callable[[Path], Path], part: str = "") -> Callable[[Change], Callable[[Path], Any]]:
    """``_broken(make)(change)``: a builder that makes good data under tmp, then applies ``change``
    to ``make``'s folder (or its sub-folder ``part``)."""
    def with_change(change: Change) -> Callable[[Path], tuple[Path, Path, int | None]]:
        def build(tmp: Path) -> tuple[Path, Path, int | None]:
            root = make(tmp / "data")
            named, line = change(root / part if part else root)
            return root, named, line
        return build
    return with_change


def _write(path: Path, text: str, line: int | None = None) -> tuple[Path, int | None]:
    path.write_text(text)
    return path, line


_webshop = _broken(webshop_folder)
_searchqa = _broken(searchqa_folder)
_alfworld = _broken(alfworld_tree, "json_2.1.1/valid_unseen")


def _game(split: Path) -> Path:
    return split / "pick_and_place_simple-Mug-None-Desk-1" / "trial_T0"


def _without_game_file(split: Path) -> tuple[Path, None]:
    write_game(split / "pick_clean_then_place_in_recep-Cup-None-Sink-2" / "trial_T1")
    (split / "pick_clean_then_place_in_recep-Cup-None-Sink-2" / "trial_T1" / "game.tw-pddl").unlink()
    return split / "pick_clean_then_place_in_recep-Cup-None-Sink-2" / "trial_T1", None


def _empty_split(split: Path) -> tuple[Path, None]:
    import shutil

    shutil.rmtree(_game(split).parent)
    return split, None


def _corrupt_problem(text: str) -> Callable[[Path], tuple[Path, None]]:
    def change(split: Path) -> tuple[Path, None]:
        game = _game(split) / "game.tw-pddl"
        content = json.loads(game.read_text())
        game.write_text(json.dumps({**content, "pddl_problem": text}))
        return game, None
    return change


CASES: dict[str, Case] = {
    # WebShop: the catalogue files
    "webshop catalogue {}": Case("webshop", "test", _webshop(lambda r: _write(r / catalog.SHUFFLE_FILE, "{}"))),
    "webshop catalogue []": Case("webshop", "test", _webshop(lambda r: _write(r / catalog.SHUFFLE_FILE, "[]"))),
    "webshop products without fields": Case("webshop", "test", _webshop(
        lambda r: _write(r / catalog.SHUFFLE_FILE, "[{}, {}]"))),
    "webshop products with only an asin": Case("webshop", "test", _webshop(
        lambda r: _write(r / catalog.SHUFFLE_FILE, '[{"asin": "B000000001"}]'))),
    "webshop truncated catalogue": Case("webshop", "test", _webshop(
        lambda r: (r / catalog.SHUFFLE_FILE, cut_json_file(r / catalog.SHUFFLE_FILE)))),
    "webshop non-UTF-8 catalogue": Case("webshop", "test", _webshop(
        lambda r: (r / catalog.SHUFFLE_FILE, bad_byte_on_line(r / catalog.SHUFFLE_FILE, 7)))),
    "webshop instructions not an object": Case("webshop", "test", _webshop(
        lambda r: _write(r / catalog.INS_FILE, "[]"))),
    "webshop no instruction at all (no goal)": Case("webshop", "test", _webshop(
        lambda r: _write(r / catalog.INS_FILE, "{}"))),
    # Search-QA: the corpus and question files
    "searchqa empty corpus": Case("searchqa", "test", _searchqa(lambda r: _write(r / "corpus.jsonl", ""))),
    "searchqa truncated corpus": Case("searchqa", "test", _searchqa(
        lambda r: (r / "corpus.jsonl", cut_inside_a_character(r / "corpus.jsonl")))),
    "searchqa non-UTF-8 corpus": Case("searchqa", "test", _searchqa(
        lambda r: (r / "corpus.jsonl", bad_byte_on_line(r / "corpus.jsonl", 4)))),
    "searchqa corpus row without id": Case("searchqa", "test", _searchqa(
        lambda r: _write(r / "corpus.jsonl", json.dumps(PASSAGES[0]) + "\n" + '{"contents": "x"}\n', 2))),
    "searchqa question row without question": Case("searchqa", "test", _searchqa(
        lambda r: _write(r / "questions" / "test.jsonl", json.dumps(QUESTIONS[0]) + '\n{"id": "q9"}\n', 2))),
    # ALFWorld: the game tree
    "alfworld empty split folder": Case("alfworld", "unseen", _alfworld(_empty_split)),
    "alfworld game folder without game.tw-pddl": Case("alfworld", "unseen", _alfworld(_without_game_file)),
    "alfworld corrupt PDDL (cut short) in valid JSON": Case("alfworld", "unseen", _alfworld(
        _corrupt_problem(PROBLEM[:len(PROBLEM) // 2]))),
    "alfworld corrupt PDDL (not PDDL) in valid JSON": Case("alfworld", "unseen", _alfworld(
        _corrupt_problem("this is not a planning problem"))),
    "alfworld corrupt PDDL (a parenthesis never closed) in valid JSON": Case("alfworld", "unseen", _alfworld(
        _corrupt_problem(PROBLEM[:PROBLEM.rindex(")")]))),
    "alfworld truncated game file": Case("alfworld", "unseen", _alfworld(
        lambda split: (_game(split) / "game.tw-pddl", cut_json_file(_game(split) / "game.tw-pddl")))),
}


def _eval(capsys, argv: list[str]) -> tuple[int, str]:
    with pytest.MonkeyPatch.context() as patch, pytest.raises(SystemExit) as exit_info:
        patch.setattr(sys, "argv", ["seed-gym", *argv])
        cli.main()
    return exit_info.value.code, capsys.readouterr().err


@pytest.mark.parametrize("name", list(CASES))
def test_bad_data_is_one_line_naming_the_file_and_exit_code_2(name, tmp_path, capsys):
    case = CASES[name]
    data, named, line = case.build(tmp_path)
    code, err = _eval(capsys, ["eval", "-a", "random", "--env", case.env, "--split", case.split, "-n", "1",
                               "--backend", "inline", "--workers", "1", "--env-arg", f"data={data}",
                               "--out", str(tmp_path / "run")])
    lines = [text for text in err.splitlines() if text.strip()]
    assert code == 2, err
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith("error: "), err
    assert str(named) in lines[0], err
    assert "to fix:" in lines[0], err
    if line is not None:
        assert f"line {line}:" in lines[0], err


@pytest.mark.parametrize("name", list(CASES))
def test_the_loader_raises_a_typed_data_error(name, tmp_path):
    case = CASES[name]
    data, named, _ = case.build(tmp_path)
    with pytest.raises(DataError) as error:
        env = seed_gym.make(case.env, data=str(data))
        env.task_set().split(case.split).task_ids
    assert error.value.path == str(named)


def test_a_missing_split_folder_is_missing_data_and_no_task_of_it_exists(tmp_path):
    from seed_gym.core import MissingDataError, UnknownTaskError

    env = seed_gym.make("alfworld", data=str(alfworld_tree(tmp_path)))
    with pytest.raises(MissingDataError, match="no train folder"):
        env.task_set().split("train")
    with pytest.raises(UnknownTaskError):
        env.reset(options={"task_id": "train/pick_and_place_simple-Mug-None-Desk-1/trial_T0"})


def test_the_good_data_the_cases_start_from_loads(tmp_path):
    """Each row breaks one thing: unbroken, the same folders load."""
    shop = seed_gym.make("webshop", data=str(webshop_folder(tmp_path / "w")))
    assert shop.task_set().split("test").task_ids
    qa = seed_gym.make("searchqa", data=str(searchqa_folder(tmp_path / "s")))
    assert len(qa.task_set().split("test").task_ids) == 3 and len(qa.data.passages) == 6
    alf = seed_gym.make("alfworld", data=str(alfworld_tree(tmp_path / "a")))
    assert len(alf.task_set().split("unseen").task_ids) == 1


def test_a_data_error_pickles_whole():
    import pickle

    error = DataError("/d/f.json", "not valid JSON", "download it again", 3)
    again = pickle.loads(pickle.dumps(error))
    assert str(again) == str(error) == "bad data in /d/f.json, line 3: not valid JSON; to fix: download it again"


def test_a_run_in_which_every_episode_failed_exits_1(tmp_path, capsys):
    """PDDL that passes the load-time check but that the engine cannot play (the cut-down domain
    here) fails each episode; a run with nothing played is a failure, not a success rate of 0."""
    data = alfworld_tree(tmp_path / "alfworld")
    code, err = _eval(capsys, ["eval", "-a", "random", "--env", "alfworld", "--split", "unseen", "--backend", "inline",
                               "--workers", "1", "--env-arg", f"data={data}", "--out", str(tmp_path / "run")])
    assert code == 1, err
    assert "every episode of random failed" in err and "episodes.jsonl" in err
    record = json.loads((tmp_path / "run" / "random" / "episodes.jsonl").read_text().splitlines()[0])
    assert record["status"] == "error" and record["error"]
