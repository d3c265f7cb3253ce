"""The README documents what users meet at the servers and in run folders (issues 19 and 20): the
serve commands' limit flags with their answers, the opt-in state API, the policy server's fields and
errors, the training settings list and the torn-line side file. Names are read from the code, so a
renamed flag or constant shows up here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer

from seed_gym.agents.server import MAX_CHOICES
from seed_gym.cli import app

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
PARAGRAPHS = [" ".join(p.split()) for p in re.split(r"\n\s*\n", README)]  # whitespace as one space


def flags(*path: str) -> set[str]:
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    return {opt for param in command.params for opt in getattr(param, "opts", []) if opt.startswith("--")}


def paragraph_with(*phrases: str) -> str:
    """The README paragraph that holds every phrase (or fails naming them)."""
    found = [p for p in PARAGRAPHS if all(phrase in p for phrase in phrases)]
    assert found, f"no README paragraph holds all of {phrases}"
    return found[0]


@pytest.mark.parametrize("server", ["webshop", "retriever", "policy"])
def test_each_servers_limit_flags_are_documented_with_their_answers(server):
    limits = {"--read-timeout": "408", "--max-connections": "503", "--keep-alive": "--keep-alive"}
    assert set(limits) <= flags("serve", server)
    paragraph_with(*limits, *limits.values(), "413", server)


def test_the_body_caps_in_the_readme_are_the_servers():
    from seed_gym.agents.server import MAX_BODY_BYTES as policy
    from seed_gym.envs.searchqa.server import MAX_BODY_BYTES as retriever
    from seed_gym.envs.webshop.server import MAX_BODY_BYTES as webshop

    def mib(size: int) -> str:
        return f"{size // 2**20} MiB" if size % 2**20 == 0 else f"about {size / 2**20:.1f} MiB"

    paragraph_with(f"webshop {mib(webshop)}", f"retriever {mib(retriever)}", f"policy {mib(policy)}", "413")


def test_the_webshop_state_api_is_documented_as_opt_in():
    assert "--state-api" in flags("serve", "webshop")
    paragraph_with("--state-api", "/api/<sid>/state", "404")


def test_the_webshop_session_limits_are_documented():
    for flag in ("--max-sessions", "--max-sessions-per-client", "--session-idle-s"):
        assert flag in flags("serve", "webshop")
    paragraph_with("--max-sessions-per-client", "--session-idle-s", "429", "503", "never evicted")


def test_the_policy_servers_fields_and_errors_are_documented():
    paragraph_with("seed-gym serve policy", "`seed`", "repeatable", f"up to {MAX_CHOICES}",
                   "context_length_exceeded", "400 naming that field")


def test_the_training_settings_list_and_the_nearest_field_hint_are_documented():
    assert "--show-config" in flags("train")
    paragraph_with("seed-gym train --show-config", "--set", "nearest field", "did you mean")


def test_the_torn_line_side_file_is_documented():
    paragraph_with("episodes.jsonl.torn", "torn")
