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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from seed_gym.agents.prompts import PromptBuilder
from seed_gym.records import EpisodeRecord
from seed_gym.training.batch import rebuilt_prompts
from seed_gym.training.policy import Policy


@dataclass
class Example:
    prompt_ids: list[int]
    target_ids: list[int]


def target_response(action: str, parser: str, think: str = "") -> str:
    """The response a model should have written to take ``action`` (what the parser reads back)."""
    if parser == "search-r1":
        return f"<think>{think}</think>\n{action}"
    return f"<think>{think}</think>\n<action>{action}</action>"


def expert_examples(records: Iterable[EpisodeRecord], policy: Policy, builder: PromptBuilder) -> list[Example]:
    examples = []
    for record in records:
        if record.status == "error" or not record.won:
            continue  # clone only successful demonstrations
        targets = [target_response(step.action, builder.template.parser) for step in record.steps]
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


@dataclass
class SFTStats:
    step: int
    epoch: int
    loss: float
    tokens: int


def nll_loss(policy: Policy, batch: Sequence[Example]) -> tuple[object, int]:
    """Mean NLL over the target tokens of a batch (token-mean), and how many tokens that was."""
    logprobs, mask = policy.logprobs([e.prompt_ids for e in batch], [e.target_ids for e in batch], grad=True)
    tokens = mask.sum()
    return -(logprobs * mask).sum() / tokens.clamp(min=1), int(tokens.item())


def train_sft(policy: Policy, examples: Sequence[Example], *, epochs: int = 3, lr: float = 1e-3,
              batch_size: int = 16, seed: int = 0, weight_decay: float = 0.0, grad_clip: float = 1.0,
              on_step: Callable[[SFTStats], None] | None = None, optimizer: object | None = None) -> object:
    """Plain NLL fine-tuning with AdamW; shuffles each epoch from ``seed``. Returns the optimizer."""
    import torch

    if not examples:
        raise ValueError("no SFT examples: the expert won no episode, or no skill was parsed")
    optimizer = optimizer or torch.optim.AdamW(policy.model.parameters(), lr=lr, weight_decay=weight_decay)
    rng = random.Random(seed)
    policy.model.train()
    step = 0
    for epoch in range(epochs):
        order = list(range(len(examples)))
        rng.shuffle(order)
        for start in range(0, len(order), batch_size):
            batch = [examples[i] for i in order[start:start + batch_size]]
            loss, tokens = nll_loss(policy, batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.model.parameters(), grad_clip)
            optimizer.step()
            step += 1
            if on_step:
                on_step(SFTStats(step, epoch, float(loss.item()), tokens))
    policy.model.eval()
    return optimizer
