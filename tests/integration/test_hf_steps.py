"""The ``hf`` backend generating in steps (what the policy server's fair scheduling relies on):
a row advanced a few tokens at a time gets exactly the generation of one ``generate`` call, and a
prompt that does not fit beside its ``max_new_tokens`` is refused, not cut."""

from __future__ import annotations

import pytest

from seed_gym.agents.backends.base import ContextLengthError, Prompt, SamplingParams

pytestmark = pytest.mark.integration
PROMPTS: list[Prompt] = [
    "You are in the kitchen. Your task is to",
    "go to the",
    [{"role": "user", "content": "Take the apple from the table."}],
]


@pytest.fixture(scope="module")
def hf(tiny_model_dir):
    from seed_gym.agents.backends.hf import HFBackend

    backend = HFBackend(tiny_model_dir, dtype="float32", device="cpu")
    yield backend
    backend.close()


def in_steps(hf, params: SamplingParams, step: int) -> list:
    rows = [hf.begin(p, params, params.seed_for(i)) for i, p in enumerate(PROMPTS)]
    calls = 0
    while any(row.finish_reason is None for row in rows):
        hf.advance(rows, params, step)
        calls += 1
        assert calls <= params.max_new_tokens  # every call makes progress
    return hf.conclude(rows, params)


def fields(generations) -> list[tuple]:
    return [(g.text, g.finish_reason, g.token_ids, g.completion_tokens, g.prompt_tokens) for g in generations]


@pytest.mark.parametrize("params", [
    SamplingParams(max_new_tokens=20, temperature=0),
    SamplingParams(max_new_tokens=20, temperature=1.0, seed=5),
    SamplingParams(max_new_tokens=20, temperature=0.8, top_k=20, seed=9, logprobs=True),
])
@pytest.mark.parametrize("step", [1, 3, 7])
def test_steps_give_the_one_call_generation(hf, params, step) -> None:
    whole = hf.generate(PROMPTS, params)
    assert fields(in_steps(hf, params, step)) == fields(whole)


def test_a_stop_string_across_steps_ends_the_row_where_one_call_does(hf) -> None:
    greedy = SamplingParams(max_new_tokens=20, temperature=0)
    text = hf.generate([PROMPTS[0]], greedy)[0].text
    stop = text[3:5]  # two characters that greedy decoding meets after a few tokens
    assert len(stop) == 2 and "\ufffd" not in stop
    params = SamplingParams(max_new_tokens=20, temperature=0, stop=(stop,))
    [whole] = hf.generate([PROMPTS[0]], params)
    assert whole.text.endswith(stop) and whole.finish_reason == "stop"
    for step in (1, 2, 3):
        rows = [hf.begin(PROMPTS[0], params, 0)]
        while rows[0].finish_reason is None:
            hf.advance(rows, params, step)
        assert fields(hf.conclude(rows, params)) == fields([whole])


def test_a_prompt_that_does_not_fit_is_refused(hf) -> None:
    params = SamplingParams(max_new_tokens=8, temperature=0)
    long_prompt = "go to the table " * hf.max_model_len
    with pytest.raises(ContextLengthError, match=rf"maximum context length is {hf.max_model_len} tokens"):
        hf.begin(long_prompt, params, 0)
    fits = hf.begin("go to the", params, 0)
    assert len(fits.prompt_ids) + params.max_new_tokens <= hf.max_model_len
