"""Env text for training the tiny model's tokenizer: what the agents will actually read and write.

Every env offers its own sample texts through its profile (:attr:`seed_gym.profile.EnvProfile.corpus`,
a target of ``(seed: int) -> list[str]``); this module only collects them and holds the wording
on the agents' side of the text, which the envs' samplers use.

Rules:

* The corpus is a pure function of :class:`CorpusConfig`, the registered envs and the
  repository's code: each env draws from ``random.Random`` streams seeded from the config seed
  (:func:`corpus_rng`; no ``hash()``, no set order, no clock), so the same config gives the same
  documents, in the same order, on every machine.
* :func:`build_corpus` walks the registered env ids in sorted order, takes each profile's
  ``corpus`` target once (env ids that are one benchmark share a profile and so a target), calls
  it with the seed and appends :func:`chat_frames`. :func:`corpus_sources` names the targets.
* Agent-side text is wrapped around the observations by the envs' samplers with the helpers
  here: the ReAct prompts of the env's prompt template rendered by the agents' own prompt builder
  (:func:`react_prompt`), ``<think>``/``<action>`` responses, chat messages and the JSON skill
  records (``episode_summary``, ``episode_skill``).
* :func:`corpus_fingerprint` identifies the text; the tiny model records it and the sources.

Chat markers (``<|im_start|>`` ...) never appear: they are special tokens, added whole.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from seed_gym.tasks import fingerprint

CORPUS_VERSION = "1"


@dataclass(frozen=True)
class CorpusConfig:
    """Which corpus to build: the seed every env's sampler draws from. How much text each env
    gives is the env's own choice (its sampler's defaults)."""

    seed: int = 0

    def describe(self) -> dict[str, Any]:
        return {"version": CORPUS_VERSION, **asdict(self)}


def corpus_rng(seed: int, part: str) -> random.Random:
    """The random stream of one part of the corpus. One stream per part, so changing one part's
    size leaves the others' text unchanged."""
    return random.Random(f"seed-gym/tiny-corpus/{seed}/{part}")


# -- agent-side wording ----------------------------------------------------------------------
def react_prompt(env_id: str, *, task: str, observation: str, admissible: Sequence[str],
                 history: Sequence[tuple[str, str]]) -> str:
    """The ReAct prompt a model agent sees at this point of an episode: the env's own template
    (its profile's ``prompt_template``) through the agents' own :class:`PromptBuilder`, so the
    tokenizer learns exactly the text it will read."""
    from seed_gym.agents.prompts import EpisodeView, PromptBuilder, template_for_env

    first = history[0][0] if history else observation
    episode = EpisodeView(task, first, [(o, a, a) for o, a in history])
    return PromptBuilder(template_for_env(env_id)).text(episode, observation, admissible)


def react_response(thought: str, action: str) -> str:
    return f"<think>{thought}</think>\n<action>{action}</action>"


def as_message(role: str, content: str) -> str:
    """A chat message as the tokenizer sees it between the chat markers: ``role``, newline, content."""
    return f"{role}\n{content}\n"


def skill_record(rng: random.Random, env: str, task: str, won: bool, steps: int, hint: str) -> str:
    """A SEED skill record: JSON with ``episode_summary`` and ``episode_skill``."""
    outcome = "succeeded" if won else "failed"
    remark = rng.choice(["It explored first, then acted.", "It repeated an action that did nothing.",
                         "It found the target quickly.", "It ran out of steps before finishing."])
    summary = f"The agent {outcome} at the {env} task '{task}' after {steps} steps. {remark}"
    record = {"episode_summary": summary, "episode_skill": hint}
    return as_message("assistant", json.dumps(record, indent=rng.choice([None, 2])))


SKILL_INSTRUCTION = (
    "Review the episode above. Summarize what happened and extract one reusable skill. "
    'Answer with JSON only, in the form {"episode_summary": "...", "episode_skill": "..."}.')


def chat_frames() -> list[str]:
    """Role headers and the skill instruction, as plain text around the chat markers."""
    return [as_message("system", "You are a helpful assistant."), as_message("user", SKILL_INSTRUCTION)]


# -- the corpus ------------------------------------------------------------------------------
def corpus_sources() -> list[str]:
    """The distinct ``corpus`` targets of the registered envs, in collection order.

    The order is the sorted env ids' (the first id naming a target places it); for the built-in
    envs it is also the targets' sorted order. The order of the texts does not change the trained
    tokenizer (BPE counts pieces; checked when collection moved here from a fixed per-env order),
    only the corpus fingerprint.
    """
    from seed_gym import registry

    sources: list[str] = []
    for env_spec in registry.list_envs():  # sorted by env id
        target = env_spec.profile.corpus
        if target and target not in sources:
            sources.append(target)
    return sources


def build_corpus(config: CorpusConfig = CorpusConfig()) -> list[str]:
    """All documents: each source of :func:`corpus_sources` called with the seed, in that order,
    then :func:`chat_frames`."""
    from seed_gym.profile import resolve

    texts: list[str] = []
    for target in corpus_sources():
        sample = resolve(target)(config.seed)
        if not isinstance(sample, list) or not all(isinstance(t, str) for t in sample):
            raise TypeError(f"corpus target {target!r} must return a list of str")
        texts += sample
    return [*texts, *chat_frames()]


def corpus_fingerprint(texts: Iterable[str]) -> str:
    """``sha256:`` + 16 hex digits over the documents and their boundaries."""
    return fingerprint(texts)
