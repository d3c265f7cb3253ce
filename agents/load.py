"""The policy server (``seed-gym serve policy``) as a ``seed-gym bench serve-load`` target
(:mod:`seed_gym.loadtest`): short requests are greedy completions of ``short_tokens`` tokens; the
long request asks for ``long_tokens`` (greedy, so it runs to its length on an untrained model)."""

from __future__ import annotations

from pathlib import Path

from seed_gym.loadtest import Call, LoadTarget

PROMPTS = ("You are in the kitchen. Your task is to", "go to the", "search for a blue shirt",
           "Question: who wrote the novel?")


def target(model: str | None = None, short_tokens: int = 8, long_tokens: int = 2048,
           batch_size: int = 32) -> LoadTarget:
    if not model:
        from seed_gym.loadtest import LoadTestError

        raise LoadTestError("the policy target needs a model folder: --server-arg model=DIR "
                            "(e.g. one made by `seed-gym model init --out DIR`)")

    def short(client: int, i: int) -> Call:
        return Call("POST", "/v1/completions", json={"prompt": f"{PROMPTS[(client + i) % len(PROMPTS)]} {client}",
                                                     "max_tokens": int(short_tokens), "temperature": 0})

    return LoadTarget(name="policy", serve=["policy", "--model", str(Path(model)), "--batch-size", str(batch_size),
                                            "--max-tokens-limit", str(max(int(long_tokens), int(short_tokens)))],
                      health="/health", short=short,
                      long=Call("POST", "/v1/completions", json={"prompt": "go to the", "max_tokens": int(long_tokens),
                                                                 "temperature": 0}),
                      describe={"model": str(model), "short_tokens": short_tokens, "long_tokens": long_tokens,
                                "batch_size": batch_size})
