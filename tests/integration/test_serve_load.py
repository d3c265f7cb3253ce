"""``seed-gym bench serve-load`` at a reduced size, per server (#20): real servers in subprocesses,
real clients. It must finish with no error, and no short request may be starved by the long one
in flight: none takes longer than the long request itself, and some are served while it runs.
These are orderings relative to the long request, never an absolute time; the full-size figures
(32 clients) come from the command and go in the report."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def serve_load(tmp_path, server: str, *args: str) -> dict:
    out = tmp_path / f"{server}.json"
    result = subprocess.run([sys.executable, "-m", "seed_gym.cli", "bench", "serve-load", "--server", server,
                             "--clients", "4", "--requests", "3", "--baseline-requests", "3", "--out", str(out), *args],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "starved" in result.stdout  # the summary is printed
    return json.loads(out.read_text())


@pytest.mark.parametrize("server, args", [
    ("webshop", ["--server-arg", "products=300", "--server-arg", "long_upload_s=2"]),
    # 3,000 entities: the long request takes ~0.65 s on 2 cores (300: ~0.38 s, which a loaded machine
    # squeezed until no short request, started 0.2 s after it, finished before it)
    ("retriever", ["--server-arg", "entities=3000"]),
    ("policy", ["--server-arg", "long_tokens=256"]),
])
def test_every_request_is_answered_and_none_is_starved_by_a_long_one(tmp_path, request, server, args):
    if server == "policy":
        args = [*args, "--server-arg", f"model={request.getfixturevalue('tiny_model_dir')}"]
    report = serve_load(tmp_path, server, *args)
    assert report["errors"] == 0, report["error_examples"]
    assert report["completed"] == report["planned"] == 12 and report["long"]["ok"]
    assert report["starved"] == 0
    assert report["started_during_long"] > 0 and report["served_during_long"] > 0
    assert report["throughput_rps"] > 0 and report["p99_ms"] >= report["p50_ms"] > 0


def test_an_unknown_server_is_one_line_naming_the_known_ones(capsys):
    from seed_gym import cli

    with pytest.MonkeyPatch.context() as patch, pytest.raises(SystemExit) as exit_info:
        patch.setattr(sys, "argv", ["seed-gym", "bench", "serve-load", "--server", "nosuch"])
        cli.main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "known: policy, retriever, webshop" in err
