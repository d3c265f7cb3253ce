"""SEED's analyzer: a finished episode -> one hindsight skill (seed-method.md §4, §7).

* :class:`Skill` (from :mod:`seed_gym.training.skill_schema`) is the output schema;
  :func:`parse_skill` reads it from model text, strictly.
* :func:`analyzer_prompt` is the request (a success branch asking for a *workflow*, a failure branch
  asking for an *avoidance rule*); :func:`repair_prompt` is the one retry after unusable output.
* :class:`ModelAnalyzer` runs those prompts on any generation backend: the policy's own ``hf`` /
  ``vllm`` backend with the current weights (SEED's self-evolving analyzer, stage 2) or an
  ``openai`` backend (an external labeller, stage 1).
* :class:`~seed_gym.training.rules.RuleAnalyzer` writes true, specific skills from the trajectory
  and the env's ground truth, without a model; it and its per-env rules live in
  :mod:`seed_gym.training.rules` and are re-exported here (with :func:`ground_truth_from_env` and
  the goal / page parsers), so callers import every analyzer from this module.
* :func:`make_analyzer` builds one by kind: ``rule``, ``policy`` or ``openai``.

Every analyzer returns ``None`` for an episode it cannot analyse (an unparseable reply after the
retry, or an ``error`` record that has no trajectory); training gives such an episode no skill and
so no distillation signal.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from seed_gym.agents.backends.base import Backend, SamplingParams
from seed_gym.records import EpisodeRecord
from seed_gym.training.rules import GroundTruth, RuleAnalyzer, ground_truth_from_env
from seed_gym.training.skill_schema import PROMPT_VERSION, Skill
from seed_gym.training.trajectory import serialize_trajectory

__all__ = [
    "ANALYZER_TRAJECTORY_CHARS", "REPAIR_QUOTE_CHARS", "PROMPT_VERSION", "Skill", "parse_skill",
    "analyzer_prompt", "repair_prompt", "Analyzer", "AnalyzerStats", "ModelAnalyzer",
    "ANALYZER_KINDS", "make_analyzer",
    # re-exported from seed_gym.training.rules
    "GroundTruth", "RuleAnalyzer", "ground_truth_from_env",
]

#: Default trajectory budget (chars) for analyzer prompts: ~3k tokens leaves room for the
#: instructions and 768 new tokens inside SEED's 4,096-token analyzer context.
ANALYZER_TRAJECTORY_CHARS = 9000
#: How much of an unusable reply the repair prompt quotes.
REPAIR_QUOTE_CHARS = 1500


# -- parsing --------------------------------------------------------------------------------------
_REQUIRED = ("episode_summary", "episode_skill")


def parse_skill(text: str) -> Skill | None:
    """The skill in a model reply, or None when the reply does not hold one.

    Accepted: a JSON object with non-empty string ``episode_summary`` and ``episode_skill`` and,
    optionally, ``step_skills`` (null, or an object mapping integer step indices to non-empty
    strings); other keys are ignored. The object may sit inside a ```` ```json ```` fence or between
    prose: the first balanced ``{...}`` span that decodes as strict JSON is used. Rejected: no such
    span, a span that is not an object with the required fields, malformed ``step_skills``."""
    result = _parse(text)
    return result if isinstance(result, Skill) else None


def _parse(text: str) -> Skill | str:
    """The skill, or why there is none (the reason goes into the repair prompt and the stats)."""
    if not isinstance(text, str) or not text.strip():
        return "the reply was empty"
    data = _first_json_object(text)
    if data is None:
        return "the reply held no JSON object"
    missing = [key for key in _REQUIRED if not isinstance(data.get(key), str) or not data[key].strip()]
    if missing:
        return f"the JSON object lacks a non-empty string {' and '.join(missing)}"
    steps = data.get("step_skills")
    step_skills: dict[int, str] = {}
    if steps is not None:
        if not isinstance(steps, dict):
            return "step_skills is not an object"
        for key, value in steps.items():
            if not re.fullmatch(r"\s*\d+\s*", str(key)) or not isinstance(value, str) or not value.strip():
                return "step_skills must map step indices to non-empty strings"
            step_skills[int(key)] = value.strip()
    return Skill(data["episode_summary"].strip(), data["episode_skill"].strip(), step_skills)


def _first_json_object(text: str) -> dict[str, Any] | None:
    """The first balanced ``{...}`` span of ``text`` that decodes as strict JSON, if it is an object.

    Spans that do not decode (prose in braces) are skipped; a span that decodes is final, so a
    valid object without the fields is not replaced by some object nested inside it."""
    start = text.find("{")
    while start >= 0:
        end = _balanced_end(text, start)
        if end is None:
            return None
        try:
            value = json.loads(text[start:end], parse_constant=_reject_constant)
        except ValueError:
            start = text.find("{", start + 1)
            continue
        return value if isinstance(value, dict) else None
    return None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN / Infinity: Python accepts them, JSON does not


def _balanced_end(text: str, start: int) -> int | None:
    """End (exclusive) of the brace group opening at ``start``, skipping braces inside strings."""
    depth, in_string, escaped = 0, False, False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index + 1
    return None


# -- prompts --------------------------------------------------------------------------------------
_OPENING = ("You are reviewing one finished episode of an agent acting in a text environment. Read the "
            "trajectory below and distil it into a skill the agent can use when it meets this task again.\n"
            "Return ONLY valid JSON: one JSON object, with no text, markdown or code fence around it.")
_SUCCESS = ("The episode succeeded. Write episode_skill as a workflow extracted from this successful trajectory: "
            "the core decision rule that made it work and the order of the key actions, naming the concrete "
            "objects, places, items or entities involved.")
_FAILURE = ("The episode failed. Write episode_skill as an avoidance rule extracted from this failed trajectory: "
            "the core mistake, the warning signs that show it happening, and what to do instead, naming the "
            "concrete objects, places, items or entities involved.")
_SUMMARY = "Write episode_summary as two or three sentences on what the agent did and how the episode ended."
_SCHEMA = ('{"episode_summary": "<string: what the agent did and how it ended>", '
           '"episode_skill": "<string: success -> workflow (core decision rule + action order); '
           'failure -> avoidance rule (core mistake + warning signs)>"}')
_SCHEMA_STEPS = ('{"episode_summary": "<string>", "episode_skill": "<string>", '
                 '"step_skills": {"<step index>": "<one short imperative sentence>"}}')


def _request(record: EpisodeRecord, max_chars: int, step_skills: int) -> str:
    branch = _SUCCESS if record.won else _FAILURE
    if step_skills > 0:
        schema = _SCHEMA_STEPS
        extra = (f"\nAlso pick at most {step_skills} critical step(s) and write step_skills: for each, keyed "
                 "by its step index, one short imperative sentence for that decision.")
    else:
        schema, extra = _SCHEMA, ""
    return (f"{_OPENING}\n\n{branch}\n{_SUMMARY}{extra}\n\nJSON schema:\n{schema}\n\n"
            f"episode_success: {'success' if record.won else 'failure'}\n\n"
            f"Trajectory:\n{serialize_trajectory(record, max_chars=max_chars)}")


def analyzer_prompt(record: EpisodeRecord, *, max_chars: int = ANALYZER_TRAJECTORY_CHARS,
                    step_skills: int = 0) -> list[dict[str, str]]:
    """The analyzer request for ``record``, as one user message.

    ``max_chars`` budgets the serialised trajectory; ``step_skills`` > 0 also asks for at most that
    many critical-step skills (0 in SEED's paper setting)."""
    return [{"role": "user", "content": _request(record, max_chars, step_skills)}]


def repair_prompt(record: EpisodeRecord, bad_output: str, *, reason: str = "it was not valid JSON in the schema",
                  max_chars: int = ANALYZER_TRAJECTORY_CHARS, step_skills: int = 0) -> list[dict[str, str]]:
    """The retry after an unusable reply: the same request, the quoted reply and why it failed, and
    the schema restated. The quote is cut to :data:`REPAIR_QUOTE_CHARS` and the trajectory budget
    shrinks by as much, so the retry fits where the first request did."""
    quote = bad_output if len(bad_output) <= REPAIR_QUOTE_CHARS else bad_output[:REPAIR_QUOTE_CHARS] + " …"
    schema = _SCHEMA_STEPS if step_skills > 0 else _SCHEMA
    request = _request(record, max(max_chars - len(quote), 0), step_skills)
    content = (f"{request}\n\nAn earlier reply to this request could not be used because {reason}. "
               f"That reply was:\n<<<\n{quote}\n>>>\n\nReply again with ONLY one JSON object and nothing "
               f"before or after it, exactly in this schema:\n{schema}\n"
               "episode_summary and episode_skill are both required and must be non-empty strings.")
    return [{"role": "user", "content": content}]


# -- analyzers ------------------------------------------------------------------------------------
@runtime_checkable
class Analyzer(Protocol):
    """Turns a batch of finished episodes into one skill (or None) each, in order."""

    name: str

    def analyze(self, records: Sequence[EpisodeRecord]) -> list[Skill | None]: ...


@dataclass
class AnalyzerStats:
    """Parse outcomes of a model analyzer, cumulative over its calls (a training diagnostic).

    ``attempted`` = records sent to the model; each ends in exactly one of ``parsed_first_try``,
    ``repaired`` or ``failed``. ``skipped`` counts ``error`` records, which are never sent.
    ``replies`` counts every reply (first tries and repairs); ``cut`` those that stopped at
    ``max_new_tokens`` (a skill longer than the budget can never parse: raise the budget)."""

    attempted: int = 0
    parsed_first_try: int = 0
    repaired: int = 0
    failed: int = 0
    skipped: int = 0
    replies: int = 0
    cut: int = 0
    reasons: Counter = field(default_factory=Counter)

    @property
    def parse_failure_rate(self) -> float:
        """Share of attempted records that ended with no skill."""
        return self.failed / self.attempted if self.attempted else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"attempted": self.attempted, "parsed_first_try": self.parsed_first_try,
                "repaired": self.repaired, "failed": self.failed, "skipped": self.skipped,
                "replies": self.replies, "cut": self.cut,
                "parse_failure_rate": self.parse_failure_rate, "reasons": dict(self.reasons)}


class ModelAnalyzer:
    """An analyzer on any generation backend (see :mod:`seed_gym.agents.backends.base`).

    Rules: greedy decoding (temperature 0) with ``max_new_tokens`` (768, SEED's setting); all records
    go out in one ``generate`` call; the replies that do not parse go out again, in one batched call
    of :func:`repair_prompt`, up to ``retries`` times (1: SEED's two attempts); whatever still does
    not parse is dropped (None) and counted in :attr:`stats`. ``error`` records are never sent."""

    def __init__(self, backend: Backend, *, max_new_tokens: int = 768, retries: int = 1,
                 max_chars: int = ANALYZER_TRAJECTORY_CHARS, step_skills: int = 0) -> None:
        if retries < 0:
            raise ValueError(f"retries must be >= 0, got {retries}")
        self.backend = backend
        self.params = SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0)
        self.retries, self.max_chars, self.step_skills = retries, max_chars, step_skills
        self.name = f"model:{getattr(backend, 'name', type(backend).__name__)}"
        self.stats = AnalyzerStats()

    def analyze(self, records: Sequence[EpisodeRecord]) -> list[Skill | None]:
        skills: list[Skill | None] = [None] * len(records)
        todo = [i for i, record in enumerate(records) if record.status != "error"]
        self.stats.skipped += len(records) - len(todo)
        self.stats.attempted += len(todo)
        prompts = [analyzer_prompt(records[i], max_chars=self.max_chars, step_skills=self.step_skills)
                   for i in todo]
        replies = dict(zip(todo, self._generate(prompts)))
        first_error: dict[int, str] = {}
        last_error: dict[int, str] = {}
        for attempt in range(self.retries + 1):
            if attempt:  # one batched repair call for everything that did not parse
                order = list(replies)
                prompts = [repair_prompt(records[i], replies[i][0], reason=last_error[i], max_chars=self.max_chars,
                                         step_skills=self.step_skills) for i in order]
                replies = dict(zip(order, self._generate(prompts)))
            failed: dict[int, str] = {}
            for index, (reply, finish_reason) in replies.items():
                result = _parse(reply)
                if finish_reason == "length":
                    self.stats.cut += 1
                    if not isinstance(result, Skill):
                        result = (f"the reply stopped at the {self.params.max_new_tokens}-token limit before its JSON "
                                  "object closed")
                if isinstance(result, Skill):
                    skills[index] = replace(result, backend=self.backend_name, error=first_error.get(index))
                    if attempt:
                        self.stats.repaired += 1
                    else:
                        self.stats.parsed_first_try += 1
                else:
                    first_error.setdefault(index, result)
                    failed[index] = result
                    self.stats.reasons[result] += 1
            replies, last_error = {i: replies[i] for i in failed}, failed
            if not replies:
                break
        self.stats.failed += len(replies)
        return skills

    @property
    def backend_name(self) -> str:
        return self.name.removeprefix("model:")

    def _generate(self, prompts: list[list[dict[str, str]]]) -> list[tuple[str, str]]:
        """(text, finish reason) per prompt."""
        if not prompts:
            return []
        generations = self.backend.generate(prompts, self.params)
        if len(generations) != len(prompts):
            raise RuntimeError(f"backend {self.backend_name} returned {len(generations)} generations "
                               f"for {len(prompts)} prompts")
        self.stats.replies += len(generations)
        return [(generation.text, generation.finish_reason) for generation in generations]


# -- factory --------------------------------------------------------------------------------------
ANALYZER_KINDS = ("rule", "policy", "openai")


def make_analyzer(kind: str, *, env_id: str, backend: Backend | None = None, base_url: str | None = None,
                  model: str | None = None, ground_truth: GroundTruth | Mapping[str, Mapping[str, Any]] | None = None,
                  max_new_tokens: int = 768, retries: int = 1,
                  max_chars: int = ANALYZER_TRAJECTORY_CHARS) -> Analyzer:
    """An analyzer by kind.

    * ``rule``: :class:`RuleAnalyzer` for ``env_id`` (``ground_truth`` optional);
    * ``policy``: :class:`ModelAnalyzer` on ``backend`` — the policy's own backend, so the analyzer
      evolves with the current weights (SEED stage 2);
    * ``openai``: :class:`ModelAnalyzer` on an OpenAI-compatible server at ``base_url`` serving
      ``model`` (an external labeller, stage 1)."""
    if kind == "rule":
        return RuleAnalyzer(env_id, ground_truth=ground_truth)
    if kind == "policy":
        if backend is None:
            raise ValueError("the policy analyzer needs the policy's generation backend (backend=...)")
        return ModelAnalyzer(backend, max_new_tokens=max_new_tokens, retries=retries, max_chars=max_chars)
    if kind == "openai":
        if not base_url:
            raise ValueError("the openai analyzer needs base_url (e.g. http://127.0.0.1:8000/v1)")
        from seed_gym.agents.backends.openai import OpenAIBackend

        return ModelAnalyzer(OpenAIBackend(base_url, model=model), max_new_tokens=max_new_tokens,
                             retries=retries, max_chars=max_chars)
    raise ValueError(f"unknown analyzer kind {kind!r}; known: {', '.join(ANALYZER_KINDS)}")
