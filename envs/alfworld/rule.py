"""The ALFWorld rule: :func:`alfworld_rule` and what it reads the episode with.

Rules: the goal comes from the instruction's wording, and the task family (when the record has one)
decides its kind (:func:`parse_alfworld_goal` -> :class:`AlfGoal`); only valid actions the engine
carried out count (a ``Nothing happens`` result does not). A success states the key actions in the
order taken (find -> take -> transform / use the lamp -> place), with the ``go to`` / ``open`` that
led to each; a failure states the first link of that chain the agent did not complete, its warning
signs and the correct workflow (:func:`alfworld_workflow`). No ground truth is needed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from seed_gym.records import EpisodeRecord
from seed_gym.training.rules.common import common_warnings, english_list, episode_ending, step_result

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
        if step.invalid_action or step_result(record, index).strip().startswith("Nothing happens"):
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
        result = step_result(record, index)
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



def _a(noun: str) -> str:
    """``a mug`` / ``an egg``."""
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


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
        summary = (f"ALFWorld task '{instruction}' ({label}) {episode_ending(record)}. The agent found the {goal.obj} at "
                   f"{source}" + (f" after checking {english_list(searched)}" if searched else "") +
                   f", then did: {' -> '.join(chain)}.")
        skill = (f"Workflow for '{instruction}': {' -> '.join(chain)}. Core rule: {_alf_core_rule(goal)} "
                 f"The {goal.obj} was at {source}" + (f" (checked {english_list(searched)} before it)." if searched else "."))
        return summary, skill
    mistake = _alf_mistake(record, goal, events, takes, ops, puts, uses, visited)
    signs = common_warnings(record)
    summary = (f"ALFWorld task '{instruction}' ({label}) {episode_ending(record)}. {mistake[0].upper()}{mistake[1:]}.")
    skill = (f"Avoid this mistake on '{instruction}': {mistake}. "
             + (f"Warning signs: {english_list(signs)}. " if signs else "")
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
            mistake = (f"the agent never found {_a(obj)}: it checked {english_list(visited) or 'no receptacle'}"
                       + (f" but never {english_list(unvisited, 6)}" if unvisited else ""))
        if others:
            mistake += f"; it took {english_list(list(dict.fromkeys(others)), 3)} instead, which the task does not ask for"
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
