"""SEED's analyzer: a finished episode -> one hindsight skill (seed-method.md §4, §7).

* :class:`Skill` is the output schema; :func:`parse_skill` reads it from model text, strictly.
* :func:`analyzer_prompt` is the request (a success branch asking for a *workflow*, a failure branch
  asking for an *avoidance rule*); :func:`repair_prompt` is the one retry after unusable output.
* :class:`ModelAnalyzer` runs those prompts on any generation backend: the policy's own ``hf`` /
  ``vllm`` backend with the current weights (SEED's self-evolving analyzer, stage 2) or an
  ``openai`` backend (an external labeller, stage 1).
* :class:`RuleAnalyzer` writes true, specific skills from the trajectory and the env's ground truth,
  without a model (ALFWorld, WebShop, Search-QA; a generic rule for other envs). It labels the
  stage-1 hindsight-skill SFT data offline.
* :func:`make_analyzer` builds one by kind: ``rule``, ``policy`` or ``openai``.

Every analyzer returns ``None`` for an episode it cannot analyse (an unparseable reply after the
retry, or an ``error`` record that has no trajectory); training gives such an episode no skill and
so no distillation signal.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from seed_gym.agents.backends.base import Backend, SamplingParams
from seed_gym.core import UnknownTaskError
from seed_gym.records import EpisodeRecord
from seed_gym.training.trajectory import serialize_trajectory, step_response

#: Default trajectory budget (chars) for analyzer prompts: ~3k tokens leaves room for the
#: instructions and 768 new tokens inside SEED's 4,096-token analyzer context.
ANALYZER_TRAJECTORY_CHARS = 9000
#: How much of an unusable reply the repair prompt quotes.
REPAIR_QUOTE_CHARS = 1500
PROMPT_VERSION = "seed-gym-analyzer-v1"


# -- schema ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Skill:
    """One hindsight skill for one episode.

    ``episode_summary`` and ``episode_skill`` are required and non-empty. ``step_skills`` maps a step
    index (``StepRecord.t``) to one short imperative sentence; it is empty in SEED's paper setting.
    ``backend`` says who wrote it (``rule:alfworld``, a model backend's name); ``error`` says why an
    earlier attempt failed when the skill came from the repair retry (None otherwise)."""

    episode_summary: str
    episode_skill: str
    step_skills: dict[int, str] = field(default_factory=dict)
    backend: str = ""
    error: str | None = None

    def label(self) -> dict[str, Any]:
        """The JSON object an analyzer is asked to produce (the stage-1 SFT target)."""
        data: dict[str, Any] = {"episode_summary": self.episode_summary, "episode_skill": self.episode_skill}
        if self.step_skills:
            data["step_skills"] = {str(k): v for k, v in sorted(self.step_skills.items())}
        return data

    def to_json(self) -> str:
        """:meth:`label` as compact JSON; :func:`parse_skill` reads it back unchanged."""
        return json.dumps(self.label(), ensure_ascii=False)

    def to_dict(self) -> dict[str, Any]:
        """Everything, for logs and run files (field names as in the official trainer's records)."""
        return {**self.label(), "step_skills": {str(k): v for k, v in sorted(self.step_skills.items())},
                "analysis_backend_used": self.backend, "analysis_error": self.error,
                "analysis_prompt_version": PROMPT_VERSION,
                "skill_mode": "episode_and_steps" if self.step_skills else "episode_only"}


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
    ``repaired`` or ``failed``. ``skipped`` counts ``error`` records, which are never sent."""

    attempted: int = 0
    parsed_first_try: int = 0
    repaired: int = 0
    failed: int = 0
    skipped: int = 0
    reasons: Counter = field(default_factory=Counter)

    @property
    def parse_failure_rate(self) -> float:
        """Share of attempted records that ended with no skill."""
        return self.failed / self.attempted if self.attempted else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"attempted": self.attempted, "parsed_first_try": self.parsed_first_try,
                "repaired": self.repaired, "failed": self.failed, "skipped": self.skipped,
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
                prompts = [repair_prompt(records[i], replies[i], reason=last_error[i], max_chars=self.max_chars,
                                         step_skills=self.step_skills) for i in order]
                replies = dict(zip(order, self._generate(prompts)))
            failed: dict[int, str] = {}
            for index, reply in replies.items():
                result = _parse(reply)
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

    def _generate(self, prompts: list[list[dict[str, str]]]) -> list[str]:
        if not prompts:
            return []
        generations = self.backend.generate(prompts, self.params)
        if len(generations) != len(prompts):
            raise RuntimeError(f"backend {self.backend_name} returned {len(generations)} generations "
                               f"for {len(prompts)} prompts")
        return [generation.text for generation in generations]


# -- rule analyzers -------------------------------------------------------------------------------
#: What the rule analyzers may know beyond the record: task id -> the env's ground truth for it
#: (Search-QA: the question with ``golden_answers`` and ``metadata.hops``; WebShop: the goal with
#: ``asin``, ``name``, ``attributes``, ``goal_options``, ``price_upper``). See :func:`ground_truth_from_env`.
GroundTruth = Callable[[str], "Mapping[str, Any] | None"]
Rule = Callable[[EpisodeRecord, "Mapping[str, Any] | None"], tuple[str, str]]


def ground_truth_from_env(env: Any) -> GroundTruth | None:
    """The ground-truth lookup of a live env (Search-QA questions, WebShop goals), else None.

    ALFWorld needs none: its family and instruction, which the record holds, say what to do."""
    env = getattr(env, "unwrapped", env)
    env_id = getattr(env, "env_id", "")
    if env_id == "searchqa":
        questions = env.data.questions
        return questions.get
    if env_id in ("webshop", "webshop-browser"):
        shop = env.shop

        def goal(task_id: str) -> Mapping[str, Any] | None:
            try:
                return shop.goal(task_id)
            except UnknownTaskError:  # no ground truth: the rule still writes a skill
                return None
        return goal
    return None


class RuleAnalyzer:
    """Deterministic, model-free skills: the env's rule reads the trajectory (and the ground truth,
    when given) and states what worked (success: the actual action order) or what went wrong
    (failure: the core mistake, its warning signs and the correct workflow). It writes a skill for
    every record that has a trajectory; ``error`` records get None."""

    def __init__(self, env_id: str, *,
                 ground_truth: GroundTruth | Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self.env_id = env_id
        self.rule: Rule = RULES.get(env_id, generic_rule)
        self.name = f"rule:{env_id}"
        if isinstance(ground_truth, Mapping):
            ground_truth = ground_truth.get
        self.ground_truth = ground_truth

    def analyze(self, records: Sequence[EpisodeRecord]) -> list[Skill | None]:
        return [self.analyze_one(record) for record in records]

    def analyze_one(self, record: EpisodeRecord) -> Skill | None:
        if record.status == "error":
            return None
        truth = self.ground_truth(str(record.task.get("id", ""))) if self.ground_truth else None
        summary, skill = self.rule(record, truth)
        return Skill(summary, skill, backend=self.name)


def _result(record: EpisodeRecord, index: int) -> str:
    """The observation that step ``index``'s action produced."""
    steps = record.steps
    return steps[index + 1].observation if index + 1 < len(steps) else record.final_observation


def _join(items: Sequence[str], limit: int = 8) -> str:
    """``a, b and c`` (at most ``limit`` items, then ``and N more``)."""
    items = list(items)
    if len(items) > limit:
        items = items[:limit] + [f"{len(items) - limit} more"]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _a(noun: str) -> str:
    """``a mug`` / ``an egg``."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _ending(record: EpisodeRecord) -> str:
    steps = f"{record.num_steps} step{'s' if record.num_steps != 1 else ''}"
    if record.won:
        return f"succeeded in {steps}"
    if record.status == "truncated":
        return f"failed: it ran out of steps after {steps} (score {record.score:.2f})"
    return f"failed after {steps} (score {record.score:.2f})"


def _repeats(actions: Sequence[str], minimum: int = 3) -> list[str]:
    """Actions repeated at least ``minimum`` times, most frequent first (ties: first seen)."""
    counts = Counter(actions)
    order = {a: i for i, a in reversed(list(enumerate(actions)))}
    shown = [(a if len(a) <= 60 else a[:57] + "...", n)
             for a, n in sorted(counts.items(), key=lambda kv: (-kv[1], order[kv[0]])) if n >= minimum]
    return [f"'{a}' x{n}" for a, n in shown]


def _common_warnings(record: EpisodeRecord) -> list[str]:
    signs = []
    if record.num_invalid:
        signs.append(f"{record.num_invalid} of {record.num_steps} actions were invalid")
    loops = _repeats([s.action for s in record.steps if s.action])
    if loops:
        signs.append(f"repeated actions ({_join(loops, 3)})")
    if record.status == "truncated":
        signs.append("the step budget ran out")
    return signs


# ALFWorld ----------------------------------------------------------------------------------------
#: The env's ``family`` values (ALFWorld's task types) -> the rule's short name for each.
ALFWORLD_FAMILIES: dict[str, str] = {
    "pick_and_place_simple": "place", "look_at_obj_in_light": "look",
    "pick_clean_then_place_in_recep": "clean", "pick_heat_then_place_in_recep": "heat",
    "pick_cool_then_place_in_recep": "cool", "pick_two_obj_and_place": "two",
}
#: The only appliance each transformation works with in ALFWorld's PDDL domain.
_APPLIANCE = {"clean": "sinkbasin", "heat": "microwave", "cool": "fridge"}
_PAST = {"clean": "cleaned", "heat": "heated", "cool": "cooled"}

_GOALS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("two", re.compile(r"^(?:find two (?P<obj>.+?) and put them|put two (?P<obj2>.+?)) (?:in|on) (?P<dest>.+?)\.?$")),
    ("op", re.compile(r"^(?P<op>clean|heat|cool) some (?P<obj>.+?) and put it (?:in|on) (?P<dest>.+?)\.?$")),
    ("op", re.compile(r"^put a (?P<adj>clean|hot|cool) (?P<obj>.+?) (?:in|on) (?P<dest>.+?)\.?$")),
    ("look", re.compile(r"^(?:examine the (?P<obj>.+?) with the|look at (?P<obj2>.+?) under the) (?P<lamp>.+?)\.?$")),
    ("place", re.compile(r"^put (?:a |some )?(?P<obj>.+?) (?:in|on) (?P<dest>.+?)\.?$")),
)
_ADJ_OP = {"clean": "clean", "hot": "heat", "cool": "cool"}


@dataclass
class AlfGoal:
    """What an ALFWorld instruction asks: ``kind`` in place/look/clean/heat/cool/two."""

    kind: str
    obj: str
    dest: str = ""
    lamp: str = ""


def parse_alfworld_goal(instruction: str, family: str = "") -> AlfGoal:
    """The goal in an ALFWorld instruction (its grammar's templates); the family decides the kind
    when given, the wording otherwise. Unknown wording gives ``AlfGoal(kind, "object")``."""
    text = " ".join(instruction.lower().split())
    for kind, pattern in _GOALS:
        match = pattern.match(text)
        if not match:
            continue
        groups = match.groupdict()
        obj = groups.get("obj") or groups.get("obj2") or "object"
        if kind == "op":
            kind = groups.get("op") or _ADJ_OP[groups["adj"]]
        goal = AlfGoal(kind, obj, groups.get("dest") or "", groups.get("lamp") or "")
        break
    else:
        goal = AlfGoal("place", "object")
    family_kind = ALFWORLD_FAMILIES.get(family) or next(
        (v for k, v in ALFWORLD_FAMILIES.items() if family and k.startswith(family)), None)
    if family_kind:
        goal.kind = family_kind
    if goal.kind == "look" and not goal.lamp:
        goal.lamp = "desklamp"
    return goal


def _is_kind(instance: str, kind: str) -> bool:
    """``mug 1`` is a ``mug``; ``slice of bread`` matches ``bread 2`` by its head noun."""
    stem = re.sub(r"\s+\d+$", "", instance.strip()).replace(" ", "")
    kind = kind.strip()
    return bool(kind) and (stem == kind.replace(" ", "") or stem == kind.split()[-1])


_ALF_ACTIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("go", re.compile(r"^go to (?P<a>.+)$")),
    ("take", re.compile(r"^take (?P<a>.+?) from (?P<b>.+)$")),
    ("put", re.compile(r"^put (?P<a>.+?) (?:in/on|in|on) (?P<b>.+)$")),
    ("put", re.compile(r"^move (?P<a>.+?) to (?P<b>.+)$")),
    ("op", re.compile(r"^(?P<v>clean|heat|cool) (?P<a>.+?) with (?P<b>.+)$")),
    ("use", re.compile(r"^use (?P<a>.+)$")),
    ("open", re.compile(r"^open (?P<a>.+)$")),
)
_INSTANCE = r"\b[a-z]+ \d+\b"  # ALFWorld names: one token and a number


@dataclass
class _AlfEvent:
    t: int
    kind: str
    a: str = ""
    b: str = ""
    verb: str = ""
    holding: str = ""


def _alf_events(record: EpisodeRecord) -> list[_AlfEvent]:
    """Valid actions the engine carried out, in order, with what the agent held at the time."""
    events, holding = [], ""
    for index, step in enumerate(record.steps):
        if step.invalid_action or _result(record, index).strip().startswith("Nothing happens"):
            continue
        action = " ".join(step.action.lower().split())
        for kind, pattern in _ALF_ACTIONS:
            match = pattern.match(action)
            if match:
                parts = match.groupdict()
                event = _AlfEvent(step.t, kind, parts.get("a") or "", parts.get("b") or "", parts.get("v") or "",
                                  holding)
                events.append(event)
                if kind == "take":
                    holding = event.a
                elif kind == "put":
                    holding = ""
                break
    return events


def _room(record: EpisodeRecord) -> list[str]:
    """The receptacles the first observation lists (``you see a cabinet 1, a drawer 2, ...``)."""
    first = record.steps[0].observation if record.steps else record.final_observation
    match = re.search(r"Looking quickly around you, you see (.+?)\.\s*(?:\n|$)", first)
    return re.findall(_INSTANCE, match.group(1)) if match else []


def _sightings(record: EpisodeRecord, kind: str) -> list[tuple[int, str, str]]:
    """``(step, instance, place)`` each time an instance of ``kind`` shows in an observation; the
    place is where the agent was (its last ``go to``/``open``)."""
    seen, place = [], ""
    for index, step in enumerate(record.steps):
        action = " ".join(step.action.lower().split())
        result = _result(record, index)
        if not step.invalid_action:
            moved = re.match(r"^(?:go to|open) (.+)$", action)
            if moved and not result.startswith("Nothing happens"):
                place = moved.group(1)
        for instance in re.findall(_INSTANCE, result.lower()):
            if _is_kind(instance, kind) and "you see" in result.lower():
                seen.append((step.t, instance, place))
    return seen


def _alf_chain(events: Sequence[_AlfEvent], key: Sequence[_AlfEvent]) -> list[str]:
    """The key actions, each preceded by the ``go to`` that brought the agent there and the
    ``open`` of the receptacle it acted on (when it had to open it)."""
    chain: list[str] = []
    for event in key:
        gone = [e for e in events if e.kind == "go" and e.t < event.t]
        since = gone[-1].t if gone else -1
        if gone and f"go to {gone[-1].a}" not in chain[-3:]:
            chain.append(f"go to {gone[-1].a}")
        opened = [e for e in events if e.kind == "open" and since < e.t < event.t and e.a == event.b]
        if opened and f"open {event.b}" not in chain[-2:]:
            chain.append(f"open {event.b}")
        chain.append(_alf_text(event))
    return chain


def _alf_text(event: _AlfEvent) -> str:
    if event.kind == "take":
        return f"take {event.a} from {event.b}"
    if event.kind == "put":
        return f"put {event.a} in/on {event.b}"
    if event.kind == "op":
        return f"{event.verb} {event.a} with {event.b}"
    if event.kind == "go":
        return f"go to {event.a}"
    return f"{event.kind} {event.a}"


def alfworld_workflow(goal: AlfGoal) -> str:
    """The correct action order for a goal, in ALFWorld's command words."""
    obj, dest = goal.obj, goal.dest or "the destination"
    find = f"find {_a(obj)} (go to each likely receptacle once, opening closed ones) and take it"
    if goal.kind in _APPLIANCE:
        appliance = _APPLIANCE[goal.kind]
        return (f"{find}; go to the {appliance} and '{goal.kind} {obj} N with {appliance} M' while holding it "
                f"(no need to put it inside); then go to {_a(dest)} and put the {obj} in/on it")
    if goal.kind == "look":
        return f"{find}; go to the {goal.lamp} and 'use {goal.lamp} M' while holding the {obj}"
    if goal.kind == "two":
        return (f"{find}; go to {_a(dest)} and put it there; then find a second {obj} (a different number), "
                f"take it and put it in/on the same {dest}")
    return f"{find}; go to {_a(dest)} (open it if closed) and put the {obj} in/on it"


def alfworld_rule(record: EpisodeRecord, truth: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """ALFWorld: the successful action order, or the first broken link of the task's chain
    (find -> take -> transform/use lamp -> place) plus the correct workflow."""
    instruction = str(record.task.get("instruction", "")).strip() or "the task"
    family = str(record.task.get("family", ""))
    goal = parse_alfworld_goal(instruction, family)
    events = _alf_events(record)
    takes = [e for e in events if e.kind == "take" and _is_kind(e.a, goal.obj)]
    ops = [e for e in events if e.kind == "op" and _is_kind(e.a, goal.obj)]
    puts = [e for e in events if e.kind == "put" and _is_kind(e.a, goal.obj)]
    uses = [e for e in events if e.kind == "use"]
    visited = list(dict.fromkeys(e.a for e in events if e.kind == "go"))
    label = family or goal.kind
    if record.won:
        key = takes + ops + [u for u in uses if u.holding and _is_kind(u.holding, goal.obj)] + \
            [p for p in puts if not goal.dest or _is_kind(p.b, goal.dest)]
        key.sort(key=lambda e: e.t)
        chain = _alf_chain(events, key)
        source = takes[0].b if takes else "its receptacle"
        searched = [v for v in visited[: visited.index(source)]] if source in visited else []
        summary = (f"ALFWorld task '{instruction}' ({label}) {_ending(record)}. The agent found the {goal.obj} at "
                   f"{source}" + (f" after checking {_join(searched)}" if searched else "") +
                   f", then did: {' -> '.join(chain)}.")
        skill = (f"Workflow for '{instruction}': {' -> '.join(chain)}. Core rule: {_alf_core_rule(goal)} "
                 f"The {goal.obj} was at {source}" + (f" (checked {_join(searched)} before it)." if searched else "."))
        return summary, skill
    mistake = _alf_mistake(record, goal, events, takes, ops, puts, uses, visited)
    signs = _common_warnings(record)
    summary = (f"ALFWorld task '{instruction}' ({label}) {_ending(record)}. {mistake[0].upper()}{mistake[1:]}.")
    skill = (f"Avoid this mistake on '{instruction}': {mistake}. "
             + (f"Warning signs: {_join(signs)}. " if signs else "")
             + f"Correct workflow: {alfworld_workflow(goal)}.")
    return summary, skill


def _alf_core_rule(goal: AlfGoal) -> str:
    if goal.kind in _APPLIANCE:
        return (f"take the {goal.obj} first, {goal.kind} it with the {_APPLIANCE[goal.kind]} while holding it, "
                f"and only then put it in/on the {goal.dest}.")
    if goal.kind == "look":
        return f"hold the {goal.obj} and use the {goal.lamp} at the lamp's place; do not take the lamp."
    if goal.kind == "two":
        return f"carry one {goal.obj} at a time to the {goal.dest}, then go back for the second one."
    return f"find and take the {goal.obj}, then go straight to the {goal.dest} and put it there."


def _alf_mistake(record: EpisodeRecord, goal: AlfGoal, events: Sequence[_AlfEvent], takes: Sequence[_AlfEvent],
                 ops: Sequence[_AlfEvent], puts: Sequence[_AlfEvent], uses: Sequence[_AlfEvent],
                 visited: Sequence[str]) -> str:
    """The first link of the task chain the agent did not complete, stated with specifics."""
    obj = goal.obj
    if not takes:
        seen = _sightings(record, obj)
        others = [e.a for e in events if e.kind == "take"]
        if seen:
            t, instance, place = seen[0]
            where = f" at {place}" if place else ""
            mistake = f"{instance} was visible{where} (seen after step {t}) but the agent never took it"
        else:
            unvisited = [r for r in _room(record) if r not in visited]
            mistake = (f"the agent never found {_a(obj)}: it checked {_join(visited) or 'no receptacle'}"
                       + (f" but never {_join(unvisited, 6)}" if unvisited else ""))
        if others:
            mistake += f"; it took {_join(list(dict.fromkeys(others)), 3)} instead, which the task does not ask for"
        return mistake
    instance = takes[0].a
    if goal.kind in _APPLIANCE:
        right = [e for e in ops if e.verb == goal.kind]
        if not right:
            wrong = [e for e in ops if e.verb != goal.kind]
            stored = [p for p in puts if _is_kind(p.b, _APPLIANCE[goal.kind])]
            mistake = f"the agent took {instance} but never {_PAST[goal.kind]} it with the {_APPLIANCE[goal.kind]}"
            if wrong:
                mistake += f"; it used '{_alf_text(wrong[0])}' instead, the wrong transformation"
            elif stored:
                mistake += (f"; it put it into {stored[0].b} instead of using "
                            f"'{goal.kind} {instance} with {stored[0].b}'")
            return mistake
    if goal.kind == "look":
        held = [u for u in uses if u.holding and _is_kind(u.holding, obj)]
        if not held:
            if uses:
                held_then = uses[0].holding or "nothing"
                return f"the agent used {uses[0].a} while holding {held_then}, not while holding the {obj}"
            lamps = _sightings(record, goal.lamp)
            where = f" (one was seen at {lamps[0][2]})" if lamps and lamps[0][2] else ""
            return f"the agent took {instance} but never used the {goal.lamp}{where}"
        return f"the agent used {held[0].a} while holding {held[0].holding}, but the episode did not end in success"
    placed = [p for p in puts if _is_kind(p.b, goal.dest)] if goal.dest else list(puts)
    if not placed:
        elsewhere = [p for p in puts if p not in placed]
        if elsewhere:
            return f"the agent put {elsewhere[0].a} in/on {elsewhere[0].b} instead of {_a(goal.dest)}"
        done = f" and {_PAST[goal.kind]} it" if goal.kind in _APPLIANCE else ""
        return f"the agent took {instance}{done} but never put it in/on {_a(goal.dest)}"
    if goal.kind == "two" and len({p.a for p in placed}) < 2:
        return (f"the agent put only one {obj} ({placed[0].a}) in/on {placed[0].b}; the task needs two different "
                f"{obj}s there")
    if goal.kind in _APPLIANCE:
        right = [e for e in ops if e.verb == goal.kind]
        if placed[0].t < right[0].t:
            return (f"the agent put {placed[0].a} in/on {placed[0].b} before it {_PAST[goal.kind]} it; the "
                    f"{obj} must be {_PAST[goal.kind]} first")
    return f"the agent placed {placed[0].a} in/on {placed[0].b} but the episode still did not succeed"


# WebShop -----------------------------------------------------------------------------------------
_PRICE_CAP = re.compile(r",?\s*and price lower than ([\d.]+) dollars\s*$", re.I)
_OPTION_TAIL = re.compile(r"^[a-z][a-z ]*: [^:]+?(?:, and [a-z][a-z ]*: [^:]+?)*$")
#: How instructions open ("Find me ...", "i am looking for ..."): not part of the product.
_LEAD_IN = re.compile(r"^(?:find me|get me|show me|search for|look for|i need|i want|i would like|i'?m looking for|"
                      r"im looking for|i am looking for|i am searching for)\s+", re.I)


@dataclass
class ShopGoal:
    """What a WebShop instruction asks: the product text, requested options and the price cap."""

    product: str
    options: dict[str, str] = field(default_factory=dict)
    price_cap: float | None = None
    attributes: list[str] = field(default_factory=list)
    asin: str = ""
    name: str = ""


def parse_shop_goal(instruction: str, truth: Mapping[str, Any] | None = None) -> ShopGoal:
    """The goal, from the env's ground truth when given, else read off the synthetic wording
    ``<product> with k: v, and k2: v2, and price lower than P dollars``."""
    text = instruction.strip()
    cap_match = _PRICE_CAP.search(text)
    cap = float(cap_match.group(1)) if cap_match else None
    body = text[: cap_match.start()] if cap_match else text
    product, options = body, {}
    for match in re.finditer(r" with ", body):
        tail = body[match.end():]
        if _OPTION_TAIL.match(tail):
            product = body[: match.start()]
            options = dict(part.split(": ", 1) for part in tail.split(", and "))
            break
    goal = ShopGoal(_LEAD_IN.sub("", product.strip()) or product.strip(), options, cap)
    if truth:
        goal_options = truth.get("goal_options")
        if isinstance(goal_options, Mapping):
            goal.options = {str(k): str(v) for k, v in goal_options.items()}
        upper = truth.get("price_upper")
        if isinstance(upper, (int, float)) and upper < 1_000_000:
            goal.price_cap = float(upper)
        goal.attributes = [str(a) for a in truth.get("attributes") or []]
        goal.asin, goal.name = str(truth.get("asin", "")), str(truth.get("name", ""))
    return goal


@dataclass
class ShopPage:
    """An item page: title, price range and option groups (name -> values)."""

    title: str
    price: tuple[float, float] | None
    options: dict[str, list[str]]


def _segments(observation: str) -> list[str]:
    return [s.strip() for s in observation.split("[SEP]") if s.strip()]


def parse_item_page(observation: str, admissible: Sequence[str] | None = None) -> ShopPage | None:
    """The item page in an observation, or None. Option values are the clickable segments between
    ``< Prev`` and the title; the others are option-group names."""
    segments = _segments(observation)
    if not segments or segments[-1] != "Buy Now":
        return None
    price_at = next((i for i, s in enumerate(segments) if s.startswith("Price:")), None)
    if price_at is None or price_at < 1:
        return None
    prices = [float(p) for p in re.findall(r"\$([\d.]+)", segments[price_at])]
    start = next((i + 1 for i, s in enumerate(segments) if s == "< Prev"), 0)
    clickable = {a.lower() for a in admissible or []}
    options: dict[str, list[str]] = {}
    group = ""
    for segment in segments[start: price_at - 1]:
        if f"click[{segment.lower()}]" in clickable and group:
            options[group].append(segment.lower())
        else:
            group = segment.lower()
            options[group] = []
    return ShopPage(segments[price_at - 1], (min(prices), max(prices)) if prices else None, options)


@dataclass
class _Purchase:
    t: int
    page: ShopPage
    selected: dict[str, str]
    asin: str


def _shop_walk(record: EpisodeRecord) -> tuple[list[str], list[tuple[int, str, str]], _Purchase | None]:
    """Searches, opened items ``(step, asin, title)`` and the purchase, read off the trajectory."""
    searches: list[str] = []
    opened: list[tuple[int, str, str]] = []
    selected: dict[str, str] = {}
    asin = ""
    for index, step in enumerate(record.steps):
        if step.invalid_action:
            continue
        action = step.action.strip()
        search = re.match(r"^search\[(.*)\]$", action, re.I | re.S)
        click = re.match(r"^click\[(.*)\]$", action, re.I | re.S)
        if search:
            searches.append(search.group(1).strip())
            continue
        if not click:
            continue
        target = click.group(1).strip().lower()
        page = parse_item_page(step.observation, step.admissible_actions)
        segments = _segments(step.observation)
        # A result link: the page shows the ASIN in capitals (option values are shown as written).
        if re.fullmatch(r"[a-z0-9]{10}", target) and target.upper() in segments:
            at = segments.index(target.upper())
            after = parse_item_page(_result(record, index))
            title = after.title if after else (segments[at + 1] if at + 1 < len(segments) else "")
            opened.append((step.t, target, title))
            asin, selected = target, {}
            continue
        if page is None:
            continue
        if target == "buy now":
            return searches, opened, _Purchase(step.t, page, dict(selected), asin)
        for group, values in page.options.items():
            if target in values:
                selected[group] = target
    return searches, opened, None


def webshop_rule(record: EpisodeRecord, truth: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """WebShop: search -> open the matching item -> select the requested options -> buy, checked
    against the instruction's options and price cap (and the goal product, with ground truth)."""
    instruction = str(record.task.get("instruction", "")).strip()
    goal = parse_shop_goal(instruction, truth)
    searches, opened, purchase = _shop_walk(record)
    wanted = _join([f"{k}: {v}" for k, v in goal.options.items()]) or "no options"
    cap = f"${goal.price_cap:.2f}" if goal.price_cap else "no cap"
    label = record.task.get("family") or "webshop"
    if purchase and record.won:
        price = _price_text(purchase.page)
        chosen = _join([f"{k}: {v}" for k, v in purchase.selected.items()]) or "no options"
        query = searches[-1] if searches else goal.product
        summary = (f"WebShop ({label}) task '{instruction}' {_ending(record)}. The agent searched '{query}', opened "
                   f"'{purchase.page.title}' ({purchase.asin.upper()}, {price}), selected {chosen} and bought it "
                   f"(score {record.score:.2f}).")
        skill = (f"Workflow for buying {goal.product}: search a short query naming the product ('{query}') -> open "
                 f"a result whose title is the requested product and whose price is under {cap} "
                 f"('{purchase.page.title}', {price}) -> on the item page click each requested option ({wanted}) "
                 f"-> click Buy Now. Core rule: check the title, price and every option against the instruction "
                 f"before buying.")
        return summary, skill
    mistakes = _shop_mistakes(record, goal, searches, opened, purchase)
    signs = _common_warnings(record)
    target = (f" The target product was '{goal.name}' ({goal.asin})" +
              (f" with {_join(goal.attributes)}" if goal.attributes else "") + "." if goal.name else "")
    summary = (f"WebShop ({label}) task '{instruction}' {_ending(record)}. {mistakes[0][0].upper()}{mistakes[0][1:]}."
               + target)
    skill = (f"Avoid: {'; '.join(mistakes)}. " + (f"Warning signs: {_join(signs)}. " if signs else "")
             + f"Correct workflow: search a short query for '{goal.product}' -> open a result whose title is that "
             f"product and whose price is under {cap} -> click each requested option ({wanted}) -> check "
             f"Description/Features for the required attributes if unsure -> click Buy Now before the step "
             f"budget runs out.")
    return summary, skill


def _price_text(page: ShopPage) -> str:
    if not page.price:
        return "price unknown"
    low, high = page.price
    return f"${low:.2f}" if low == high else f"${low:.2f} to ${high:.2f}"


def _shop_mistakes(record: EpisodeRecord, goal: ShopGoal, searches: Sequence[str],
                   opened: Sequence[tuple[int, str, str]], purchase: _Purchase | None) -> list[str]:
    if purchase is None:
        seen = _join([f"'{title}'" for _, _, title in opened], 4)
        return [f"the agent never clicked Buy Now: it made {len(searches)} search(es) and opened "
                f"{len(opened)} item(s)" + (f" ({seen})" if seen else "") + " without completing a purchase"]
    mistakes = []
    title = purchase.page.title
    for group, value in goal.options.items():
        chosen = purchase.selected.get(group.lower())
        offered = purchase.page.options.get(group.lower())
        if chosen is None and offered is not None and value.lower() in offered:
            mistakes.append(f"it bought '{title}' without selecting {group}: {value}, which the item offered")
        elif chosen is None and offered is not None:
            mistakes.append(f"it bought '{title}', which does not offer {group}: {value}")
        elif chosen is None:
            mistakes.append(f"it bought '{title}', which has no {group} option (requested {value})")
        elif chosen != value.lower():
            mistakes.append(f"it selected {group}: {chosen} but the task asked for {group}: {value}")
    if goal.price_cap and purchase.page.price and purchase.page.price[0] > goal.price_cap:
        mistakes.append(f"it bought '{title}' at {_price_text(purchase.page)}, over the ${goal.price_cap:.2f} cap")
    if goal.asin and purchase.asin and purchase.asin.lower() != goal.asin.lower():
        mistakes.append(f"it bought {purchase.asin.upper()} ('{title}') instead of the target {goal.asin} "
                        f"('{goal.name}')")
    if not mistakes:
        mistakes.append(f"it bought '{title}' (score {record.score:.2f}), which does not have every requested "
                        f"attribute of '{goal.product}'")
    return mistakes


# Search-QA ---------------------------------------------------------------------------------------
def _turns(record: EpisodeRecord) -> list[tuple[int, str, str, str]]:
    """``(step, kind, content, result)`` per turn; kind is search, answer or invalid."""
    from seed_gym.envs.searchqa.protocol import parse_turn

    turns = []
    for index, step in enumerate(record.steps):
        turn = parse_turn(step_response(step))
        turns.append((step.t, turn.kind, turn.content, _result(record, index)))
    return turns


def _doc_titles(information: str) -> list[str]:
    return re.findall(r"Doc \d+\(Title: \"?(.+?)\"?\)", information)


def _evidence_title(information: Sequence[tuple[str, str]], answer: str) -> str | None:
    """Title of a retrieved passage that states ``answer`` (whole normalised words). The latest
    search comes first (the last hop is where an answer should come from) and, within it, a
    passage about the entity that search asked for before the others."""
    from seed_gym.envs.searchqa.metrics import normalize_answer

    wanted = normalize_answer(answer)
    if not wanted:
        return None
    for query, block in reversed(information):
        hits = []
        for doc in re.split(r"(?=Doc \d+\(Title:)", block):
            if f" {wanted} " in f" {normalize_answer(doc)} ":  # whole words: "Rome" is not in "Romeo"
                titles = _doc_titles(doc)
                hits.append(titles[0] if titles else "a retrieved passage")
        asked = f" {normalize_answer(query)} "
        about = [t for t in hits if f" {normalize_answer(t)} " in asked]
        if hits:
            return (about or hits)[0]
    return None


def searchqa_rule(record: EpisodeRecord, truth: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """Search-QA: the hop decomposition and the evidence that states the answer; with ground truth
    (the env's question) the gold answer and its gold hop chain, without it a skill that says the
    gold answer was not available."""
    from seed_gym.envs.searchqa.protocol import last_answer

    question = str(record.task.get("instruction", "")).strip()
    label = record.task.get("family") or "searchqa"
    turns = _turns(record)
    searches = [(content, result) for _, kind, content, result in turns if kind == "search"]
    answers = [content for _, kind, content, _ in turns if kind == "answer"]
    prediction = last_answer([step_response(s) for s in record.steps]) if answers else None
    golds = [str(g) for g in (truth or {}).get("golden_answers") or []]
    hops = list(((truth or {}).get("metadata") or {}).get("hops") or [])
    if record.won and not golds and prediction:
        golds = [prediction]  # won = exact match, so the prediction is a gold answer
    chain = _join([f"'{h.get('query', '')}' -> {h.get('answer', '')}" for h in hops]) if hops else ""
    queries = _join([f"'{q}'" for q, _ in searches]) or "nothing"
    if record.won:
        source = _evidence_title(searches, prediction or "")
        evidence = f"the passage '{source}' states it" if source else "it was not stated in any retrieved passage"
        summary = (f"Search-QA ({label}) question '{question}' {_ending(record)}: the agent searched {queries} and "
                   f"answered '{prediction}' (exact match); {evidence}.")
        plan = f"hop by hop ({chain})" if chain else f"one fact per query ({queries})"
        stated = f"the passage '{source}' states it" if source else "the evidence states it"
        skill = (f"Workflow: decompose the question into single-fact hops and search them {plan}; take each bridge "
                 f"entity from the retrieved passages before the next search; answer '{prediction}' only once "
                 f"{stated}. Core rule: verify the answer from retrieved evidence, then give just the short answer "
                 f"inside <answer> </answer>.")
        return summary, skill
    mistake = _qa_mistake(turns, searches, prediction, golds)
    signs = _common_warnings(record)
    gold_text = (f"The gold answer is '{golds[0]}'" + (f", reached by the hops {chain}" if chain else "") + "."
                 if golds else "The gold answer is not in the record, so this skill cannot name the right answer.")
    summary = (f"Search-QA ({label}) question '{question}' {_ending(record)}. "
               f"{mistake[0].upper()}{mistake[1:]}. {gold_text}")
    workflow = (f"search each hop in turn ({chain})" if chain else
                "decompose the question into single-fact hops and search one hop per query, e.g. the named "
                "entity plus the relation asked about")
    skill = (f"Avoid: {mistake}. " + (f"Warning signs: {_join(signs)}. " if signs else "") + f"{gold_text} "
             f"Correct workflow: {workflow}; read the bridge entity from the <information> passages; answer only "
             f"with an entity the passages state, inside <answer> </answer>, before the turn limit.")
    return summary, skill


def _qa_mistake(turns: Sequence[tuple[int, str, str, str]], searches: Sequence[tuple[str, str]],
                prediction: str | None, golds: Sequence[str]) -> str:
    invalid = sum(kind == "invalid" for _, kind, _, _ in turns)
    if prediction is None:
        if not searches:
            return (f"no turn held a valid <search>…</search> or <answer>…</answer> tag ({invalid} invalid turns), "
                    "so the agent never searched or answered")
        return f"the agent searched {len(searches)} time(s) but never gave an <answer> before the turn limit"
    if not searches:
        return f"the agent answered '{prediction}' from memory without searching, and it was wrong"
    mistake = f"the agent answered '{prediction}', which is wrong"
    supported = _evidence_title(searches, prediction)
    mistake += (f" (the passage '{supported}' mentions it, but not as the answer to this question)" if supported
                else " and is not stated in any retrieved passage")
    if golds:
        found = _evidence_title(searches, golds[0])
        mistake += (f"; the gold answer '{golds[0]}' was in the retrieved passage '{found}' and was overlooked"
                    if found else f"; its searches never retrieved the gold answer '{golds[0]}'")
    return mistake


# Generic -----------------------------------------------------------------------------------------
def generic_rule(record: EpisodeRecord, truth: Mapping[str, Any] | None = None) -> tuple[str, str]:
    """Any env: the action order that worked, or how the episode went wrong."""
    instruction = str(record.task.get("instruction") or record.task.get("id") or "the task")
    actions = [s.action for s in record.steps if not s.invalid_action and s.action]
    order = " -> ".join(actions[:12]) + (" -> ..." if len(actions) > 12 else "")
    if record.won:
        return (f"Task '{instruction}' {_ending(record)} with the actions {order}.",
                f"Workflow for '{instruction}': {order}. Core rule: repeat this action order; every step was valid.")
    signs = _common_warnings(record)
    mistake = "; ".join(signs) or f"the actions taken ({order or 'none'}) did not complete the task"
    return (f"Task '{instruction}' {_ending(record)}. {mistake[0].upper()}{mistake[1:]}.",
            f"Avoid on '{instruction}': {mistake}. Choose only admissible actions that move toward the goal and "
            "stop repeating actions that change nothing.")


#: env id -> its rule; other envs use :func:`generic_rule`.
RULES: dict[str, Rule] = {"alfworld": alfworld_rule, "webshop": webshop_rule, "webshop-browser": webshop_rule,
                          "searchqa": searchqa_rule}


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
