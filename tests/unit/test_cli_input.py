"""Bad command-line input is one clear line on stderr and exit code 2, never a traceback, and never
silently accepted. The cases run through ``seed_gym.cli.main`` on the Search-QA env (fast, no engine);
each fails before any episode is played."""

from __future__ import annotations

import subprocess
import sys

import pytest

from seed_gym import cli

EVAL = ["eval", "--env", "searchqa", "--backend", "inline", "--workers", "1"]

#: (case, argv, what the one line must say)
CASES = [
    ("no tasks", [*EVAL, "-a", "random", "-n", "0"], "'-n'"),
    ("empty group", [*EVAL, "-a", "random", "--group", "0"], "'--group'"),
    ("negative step budget", [*EVAL, "-a", "random", "--max-steps", "-1"], "'--max-steps'"),
    ("zero step budget", [*EVAL, "-a", "random", "--max-steps", "0"], "'--max-steps'"),
    ("unknown split in eval", [*EVAL, "-a", "random", "--split", "nosuch"], "no split 'nosuch'; known: "),
    ("unknown backend", ["eval", "--env", "searchqa", "-a", "random", "--backend", "nosuch"], "'--backend'"),
    ("no workers", ["eval", "--env", "searchqa", "-a", "random", "--workers", "0"], "'--workers'"),
    ("no live episodes", [*EVAL, "-a", "random", "--live-episodes", "0"], "'--live-episodes'"),
    ("unknown env-arg key", [*EVAL, "-a", "random", "--env-arg", "nosuch=1"], "takes no argument 'nosuch'"),
    ("unknown env-arg key of an env whose constructor forwards **kwargs",
     ["eval", "--env", "webshop", "--backend", "inline", "--workers", "1", "-a", "random", "--env-arg", "nosuch=1"],
     "webshop takes no argument 'nosuch'; it takes: data, num_products"),
    ("empty env-arg key", [*EVAL, "-a", "random", "--env-arg", "=1"], "expects key=value"),
    ("broken JSON env-arg", [*EVAL, "-a", "random", "--env-arg", "topk=[1,"], "not valid JSON"),
    ("wrong-type env-arg", [*EVAL, "-a", "random", "--env-arg", 'topk="abc"'], "'topk' must be int"),
    ("unknown option of a scripted agent", [*EVAL, "-a", "random@temperature=x"],
     "unknown option 'temperature' for the random agent; valid options: invalid"),
    ("bad value of a scripted agent's option", [*EVAL, "-a", "random@invalid=x"], "invalid='x'"),
    ("unknown option of a model agent", [*EVAL, "-a", "hf:models/none@nosuchopt=1"],
     "unknown option 'nosuchopt' for the hf agent; valid options: "),
    ("unknown split in play", ["play", "searchqa", "--split", "nosuch"], "no split 'nosuch'"),
    ("unknown env-arg key in play", ["play", "searchqa", "--env-arg", "nosuch=1"], "takes no argument 'nosuch'"),
    ("unknown training field", ["train", "--algo", "grpo", "--env", "searchqa", "--model", "m", "--set", "lrr=1"],
     "did you mean 'lr'?"),
]


def _run(capsys, argv: list[str]) -> tuple[int, str]:
    """``seed-gym ARGV`` in this process: its exit code and stderr."""
    with pytest.MonkeyPatch.context() as patch, pytest.raises(SystemExit) as exit_info:
        patch.setattr(sys, "argv", ["seed-gym", *argv])
        cli.main()
    return exit_info.value.code, capsys.readouterr().err


@pytest.mark.parametrize("argv,says", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_code_2(argv, says, capsys, tmp_path):
    code, err = _run(capsys, [*argv, *(["--out", str(tmp_path / "run")] if argv[0] == "eval" else [])])
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert "Traceback" not in err
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert says in lines[0], err


def test_a_model_agent_lists_its_agent_and_backend_options(capsys, tmp_path):
    _, err = _run(capsys, [*EVAL, "-a", "hf:models/none@nosuchopt=1", "--out", str(tmp_path)])
    for option in ("temperature", "history", "choose", "dtype", "batch_size"):  # agent, then backend options
        assert option in err


def test_good_input_still_runs(capsys, tmp_path):
    code, err = _run(capsys, [*EVAL, "-a", "random@invalid=0.5", "-n", "1", "--env-arg", "topk=2",
                              "--env-arg", "data=generated", "--out", str(tmp_path / "run")])
    assert code == 0, err
    assert (tmp_path / "run").is_dir()


def test_the_installed_command_prints_no_traceback(tmp_path):
    result = subprocess.run([sys.executable, "-c", "from seed_gym.cli import main; main()", *EVAL, "-a", "random",
                             "--env-arg", "nosuch=1", "--out", str(tmp_path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr


@pytest.mark.parametrize("key,value,raw,kept", [
    ("topk", 3, "3", 3),                            # JSON value of the right type
    ("data", 123, "123", "123"),                    # a str parameter keeps the text
    ("data", "/some/folder", "/some/folder", "/some/folder"),
    ("questions", ["a", "b"], '["a","b"]', ["a", "b"]),
    ("max_steps", None, "null", None),              # Optional
])
def test_env_args_that_fit_the_constructor_pass_as_given(key, value, raw, kept):
    from seed_gym.registry import check_env_kwarg

    assert check_env_kwarg("searchqa", key, value, raw) == kept


@pytest.mark.parametrize("key,value,raw", [("expert", 1, "1"), ("topk", 1.5, "1.5"), ("nosuch", 1, "1")])
def test_env_args_that_do_not_fit_are_refused(key, value, raw):
    from seed_gym.registry import EnvArgError, check_env_kwarg

    with pytest.raises(EnvArgError, match=key):
        check_env_kwarg("searchqa", key, value, raw)


def test_help_is_not_an_error(capsys):
    code, err = _run(capsys, ["eval", "--help"])
    assert code == 0 and not err.strip()
