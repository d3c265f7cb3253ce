"""Supervised stages: behaviour cloning on expert trajectories, and SEED's hindsight-skill SFT.

Both are the same loop — NLL of target tokens given a prompt — over different examples:

* **Behaviour cloning.** Expert episodes (an ``expert`` eval run on the train split: ordinary
  records) are replayed through the model agent's prompt template, so each step becomes
  (the exact prompt a model agent would see, ``<think></think>`` + the expert's action in the
  template's response format). Loss on the response tokens only, EOS included so the policy learns
  to stop.
* **Hindsight-skill SFT** (SEED stage 1, seed-method.md §4). Base-policy episodes, each labelled
  by an analyzer with a JSON skill; the example is (analyzer prompt with the serialised
  trajectory, the skill JSON). The tuned model then initialises both actor and analyzer.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from seed_gym.agents.parsing import response_for
from seed_gym.agents.prompts import PromptBuilder
from seed_gym.records import EpisodeRecord
from seed_gym.training.batch import rebuilt_prompts
from seed_gym.training.policy import Policy


@dataclass
class Example:
    prompt_ids: list[int]
    target_ids: list[int]


def expert_examples(records: Iterable[EpisodeRecord], policy: Policy, builder: PromptBuilder) -> list[Example]:
    examples = []
    for record in records:
        if record.status == "error" or not record.won:
            continue  # clone only successful demonstrations
        targets = [response_for(step.action, builder.template.parser) for step in record.steps]
        for prompt, target in zip(rebuilt_prompts(record, builder, targets), targets):
            examples.append(Example(policy.encode_prompt(prompt), policy.encode_text(target, eos=True)))
    return examples


def skill_examples(records: Sequence[EpisodeRecord], skills: Sequence[object | None], policy: Policy,
                   prompt_of: Callable[[EpisodeRecord], list[dict[str, str]]]) -> list[Example]:
    """(analyzer prompt, skill JSON) pairs; records whose skill is missing are skipped."""
    examples = []
    for record, skill in zip(records, skills):
        if skill is None:
            continue
        target = skill.to_json()  # type: ignore[attr-defined]
        examples.append(Example(policy.encode_prompt(prompt_of(record)), policy.encode_text(target, eos=True)))
    return examples


def within_limit(examples: Sequence[Example], max_new_tokens: int) -> tuple[list[Example], int]:
    """The examples whose target (EOS included) fits in ``max_new_tokens`` generated tokens, and how
    many did not: a skill label longer than the analyzer's limit teaches replies that are always cut
    before their JSON closes, so they never parse."""
    kept = [e for e in examples if len(e.target_ids) <= max_new_tokens]
    return kept, len(examples) - len(kept)


@dataclass
class SFTStats:
    step: int
    epoch: int
    loss: float
    tokens: int


def nll_loss(policy: Policy, batch: Sequence[Example], prompt_weight: float = 0.0) -> tuple[object, int]:
    """Mean NLL over the target tokens of a batch (token-mean), and how many target tokens that was.

    ``prompt_weight > 0`` adds that weight times the mean NLL of the prompt tokens: the same forward
    also trains next-token prediction on the observations, which is where a model learns to copy
    ids and object names from the page into an action (cheap extra signal for a from-scratch model).
    """
    if prompt_weight <= 0:
        logprobs, mask = policy.logprobs([e.prompt_ids for e in batch], [e.target_ids for e in batch], grad=True)
        tokens = mask.sum()
        return -(logprobs * mask).sum() / tokens.clamp(min=1), int(tokens.item())
    # Score the whole sequence after its first token; the last len(target) columns are the target.
    sequences = [list(e.prompt_ids) + list(e.target_ids) for e in batch]
    logprobs, mask = policy.logprobs([s[:1] for s in sequences], [s[1:] for s in sequences], grad=True)
    target_mask = mask.new_zeros(mask.shape)
    for row, example in enumerate(batch):
        target_mask[row, mask.shape[1] - len(example.target_ids):] = 1
    prompt_mask = mask - target_mask
    tokens = target_mask.sum()
    target_loss = -(logprobs * target_mask).sum() / tokens.clamp(min=1)
    prompt_loss = -(logprobs * prompt_mask).sum() / prompt_mask.sum().clamp(min=1)
    return target_loss + prompt_weight * prompt_loss, int(tokens.item())


def length_bucketed(order: list[int], lengths: Sequence[int], batch_size: int, rng: random.Random,
                    window: int = 64) -> list[list[int]]:
    """Batches of similar length from a shuffled order (far less left padding), in random order.

    Sorting happens within windows of ``window`` batches, so batches still mix the whole set."""
    batches: list[list[int]] = []
    span = batch_size * window
    for start in range(0, len(order), span):
        chunk = sorted(order[start:start + span], key=lambda i: lengths[i])
        batches += [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
    rng.shuffle(batches)
    return batches


def native_bf16(device: Any) -> bool:
    """Whether ``device`` runs bfloat16 matmuls natively: a CUDA card with bf16, or a CPU with
    AVX512-BF16 / AMX (oneDNN's bf16 path). Elsewhere bf16 autocast is emulated, and slower
    than float32: a 5M-parameter model's SFT step took 17x as long on an AVX2-only EPYC."""
    import torch

    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    if device.type == "cpu":
        return bool(torch.backends.mkldnn.is_available() and torch.ops.mkldnn._is_mkldnn_bf16_supported())
    return False


def resolve_autocast(setting: str | None, device: Any) -> str | None:
    """The autocast dtype a run uses: ``"auto"`` is bfloat16 where :func:`native_bf16`, else off;
    an explicit dtype is kept (with a warning where bf16 would be emulated)."""
    if setting == "auto":
        return "bfloat16" if native_bf16(device) else None
    if setting == "bfloat16" and not native_bf16(device):
        warnings.warn(f"autocast=bfloat16 on {device.type} without native bf16: emulated, and slower than "
                      "float32; autocast=auto turns it on only where it is native", stacklevel=2)
    return setting


def train_sft(policy: Policy, examples: Sequence[Example], *, epochs: int = 3, lr: float = 1e-3,
              batch_size: int = 16, seed: int = 0, weight_decay: float = 0.0, grad_clip: float = 1.0,
              prompt_weight: float = 0.0, autocast: str | None = None,
              on_step: Callable[[SFTStats], None] | None = None, optimizer: object | None = None) -> object:
    """Plain NLL fine-tuning with AdamW over length-bucketed, seeded batches. Returns the optimizer.

    ``autocast="bfloat16"`` runs forward passes under torch autocast (weights and optimizer stay
    in their own dtype); ``"auto"`` does so only where bf16 is native (:func:`resolve_autocast`)."""
    import contextlib

    import torch

    if not examples:
        raise ValueError("no SFT examples: the expert won no episode, or no skill was parsed")
    optimizer = optimizer or torch.optim.AdamW(policy.model.parameters(), lr=lr, weight_decay=weight_decay)
    autocast = resolve_autocast(autocast, policy.device)
    rng = random.Random(seed)
    lengths = [len(e.prompt_ids) + len(e.target_ids) for e in examples]
    policy.model.train()
    step = 0
    for epoch in range(epochs):
        order = list(range(len(examples)))
        rng.shuffle(order)
        for indices in length_bucketed(order, lengths, batch_size, rng):
            batch = [examples[i] for i in indices]
            amp = (torch.autocast(policy.device.type, dtype=getattr(torch, autocast)) if autocast
                   else contextlib.nullcontext())
            with amp:
                loss, tokens = nll_loss(policy, batch, prompt_weight)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.model.parameters(), grad_clip)
            optimizer.step()
            step += 1
            if on_step:
                on_step(SFTStats(step, epoch, float(loss.item()), tokens))
    policy.model.eval()
    return optimizer
