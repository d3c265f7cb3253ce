"""ALFWorld's sample texts for the tiny model's tokenizer (the profile's ``corpus`` target).

Candidate games of the offline generator (rooms from the wheel's FloorPlans, object placements
and goal sentences exactly as the generator makes them), played by a small simulation that writes
the engine's feedback templates (``alfred.twl2``) and an ALFWorld-style admissible-action list,
with the ReAct prompts and responses and skill records a model agent reads and writes. Drawn from
one ``random.Random`` stream seeded from the seed, without running the engine.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from seed_gym.agents.corpus import (SKILL_INSTRUCTION, as_message, corpus_rng, react_prompt, react_response,
                                    skill_record)

#: Games simulated by default.
GAMES = 180


def _textworld_list(items: Sequence[str]) -> str:
    """TextWorld's list: ``a x``, ``a x, and a y``, ``a x, a y, and a z``; empty is ``nothing``."""
    words = [f"a {item}" for item in items]
    if not words:
        return "nothing"
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + ", and " + words[-1]


@dataclass
class _Room:
    """A simulated ALFWorld game: receptacle names, what is in them, and the agent's state."""

    receptacles: list[str]
    openable: set[str]
    contents: dict[str, list[str]]
    goal: str
    task_type: str
    target: str
    parent: str
    location: str | None = None
    holding: str | None = None
    opened: set[str] = field(default_factory=set)
    old_grammar: bool = False  # the released games say ``put X in/on Y``

    def visible(self, receptacle: str) -> list[str]:
        if receptacle in self.openable and receptacle not in self.opened:
            return []
        return self.contents[receptacle]

    def describe(self, receptacle: str) -> str:
        if receptacle in self.openable:
            if receptacle not in self.opened:
                return f"The {receptacle} is closed."
            return f"The {receptacle} is open. In it, you see {_textworld_list(self.contents[receptacle])}."
        return f"On the {receptacle}, you see {_textworld_list(self.contents[receptacle])}."

    def admissible(self) -> list[str]:
        actions = [f"go to {r}" for r in self.receptacles if r != self.location]
        actions += ["inventory", "look"]
        here = self.location
        if here is not None:
            actions.append(f"examine {here}")
            if here in self.openable:
                actions.append(f"close {here}" if here in self.opened else f"open {here}")
            if self.holding is None:
                actions += [f"take {o} from {here}" for o in self.visible(here)]
            else:
                put = f"put {self.holding} in/on {here}" if self.old_grammar else f"move {self.holding} to {here}"
                if here not in self.openable or here in self.opened:
                    actions.append(put)
                kind = here.split(" ")[0]
                verb = {"microwave": "heat", "fridge": "cool", "sinkbasin": "clean", "bathtubbasin": "clean"}.get(kind)
                if verb:
                    actions.append(f"{verb} {self.holding} with {here}")
            if "desklamp" in " ".join(self.visible(here)):
                actions += [f"use {o}" for o in self.visible(here) if o.startswith("desklamp")]
        if self.holding is not None:
            actions.append(f"examine {self.holding}")
        return sorted(actions)

    def step(self, action: str) -> str:
        """The engine's feedback for an admissible ``action`` (``alfred.twl2`` wording)."""
        words = action.split(" ")
        if action.startswith("go to "):
            self.location = action[len("go to "):]
            return f"You arrive at {self.location}. {self.describe(self.location)}"
        if words[0] == "open":
            self.opened.add(self.location or "")
            return f"You open the {self.location}. {self.describe(self.location or '')}"
        if words[0] == "close":
            self.opened.discard(self.location or "")
            return f"You close the {self.location}."
        if words[0] == "take":
            obj = action[len("take "):action.index(" from ")]
            self.contents[self.location or ""].remove(obj)
            self.holding = obj
            return f"You pick up the {obj} from the {self.location}."
        if words[0] in ("move", "put"):
            obj, self.holding = self.holding or "", None
            self.contents[self.location or ""].append(obj)
            if self.old_grammar:
                return f"You put the {obj} in/on the {self.location}."
            return f"You move the {obj} to the {self.location}."
        if words[0] in ("heat", "cool", "clean"):
            return f"You {words[0]} the {self.holding} using the {self.location}."
        if words[0] == "use":
            return f"You turn on the {action[len('use '):]}."
        if action == "inventory":
            return f"You are carrying: a {self.holding}." if self.holding else "You are not carrying anything."
        if action == "look":
            if self.location is None:
                return ("You are in the middle of a room. Looking quickly around you, you see "
                        f"{_textworld_list(self.receptacles)}.")
            return f"You are facing the {self.location}. Next to it, you see nothing."
        if words[0] == "examine":
            thing = action[len("examine "):]
            if thing in self.contents:
                return self.describe(thing)
            return f"There's nothing special about {thing}."
        return "Nothing happens."


def _make_room(rng: random.Random, index: int) -> _Room:
    """One game of the offline generator, named the way the engine names things."""
    from alfworld.gen import constants

    from seed_gym.envs.alfworld.gen.candidates import make_candidate
    from seed_gym.envs.alfworld.gen.gamefiles import goal_text, grammar_with_goal, traj_data
    from seed_gym.envs.alfworld.gen.tasks import TASK_TYPES

    task_type = TASK_TYPES[index % len(TASK_TYPES)]
    candidate = make_candidate(rng.randrange(2**16), "train", index, task_type)
    state = candidate.state
    numbering: dict[str, int] = {}
    names: dict[str, str] = {}
    for receptacle in sorted(state.scene.receptacles, key=lambda r: r.thor_id):
        kind = receptacle.rtype.lower()
        numbering[kind] = numbering.get(kind, 0) + 1
        names[receptacle.thor_id] = f"{kind} {numbering[kind]}"
    contents: dict[str, list[str]] = {name: [] for name in names.values()}
    for obj in sorted(state.objects, key=lambda o: o.thor_id):
        kind = obj.otype.lower()
        numbering[kind] = numbering.get(kind, 0) + 1
        contents[names[obj.receptacle.thor_id]].append(f"{kind} {numbering[kind]}")
    # The engine lists receptacles by name, the highest number of a kind first.
    receptacles = sorted(names.values(), key=lambda n: (n.split(" ")[0], -int(n.split(" ")[1])))
    openable = {names[r.thor_id] for r in state.scene.receptacles if r.rtype in constants.OPENABLE_CLASS_SET}
    goal = goal_text(grammar_with_goal(traj_data(candidate), candidate.wording_seed))
    task = candidate.task
    return _Room(receptacles=receptacles, openable=openable, contents=contents, goal=goal,
                 task_type=task_type, target=task.object_target.lower(),
                 parent=(task.parent_target or task.toggle_target).lower(), old_grammar=rng.random() < 0.3)


_JUNK_COMMANDS = ("pick up the apple", "go to the kitchen", "open door", "look around the room")


def _thought(rng: random.Random, room: _Room, action: str) -> str:
    target, parent = room.target, room.parent
    places = rng.sample(room.receptacles, min(3, len(room.receptacles)))
    options = [
        f"To solve the task, I need to find and take a {target}, then put it in/on a {parent}.",
        f"First I need to find a {target}. A {target} is more likely to appear in "
        f"{', '.join(places[:-1])} and {places[-1]}. I can check one by one.",
        f"The current observation tells me where I am. The next step is: {action}.",
        f"I am holding {room.holding or 'nothing'}. I should {action} now.",
        f"Now I find a {target}. Next, I need to take it." if room.holding is None else
        f"Now I take a {room.holding}. Next, I need to go to a {parent}.",
        "Nothing happened last time, so that action was not admissible. I will pick one from the list.",
    ]
    return " ".join(rng.sample(options, rng.randint(1, 3)))


def _policy(rng: random.Random, room: _Room, actions: list[str]) -> str:
    """Mostly goal-directed (go, open, take, heat, move), sometimes random, like a learning agent."""
    preferred = [a for a in actions if a.startswith(("take ", "open ", "heat ", "cool ", "clean ", "use "))
                 and room.target in a or a.startswith(("move ", "put ")) and room.parent in a]
    if preferred and rng.random() < 0.7:
        return rng.choice(preferred)
    return rng.choice(actions)


def sample_texts(seed: int = 0, *, games: int = GAMES) -> list[str]:
    """Episodes of ``games`` simulated ALFWorld games: intro, feedback, ReAct prompts and responses
    (the profile's ``corpus`` target)."""
    rng = corpus_rng(seed, "alfworld")
    texts: list[str] = []
    for index in range(games):
        room = _make_room(rng, index)
        observation = ("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly "
                       f"around you, you see {_textworld_list(room.receptacles)}.\n\nYour task is to: {room.goal}.")
        history: list[tuple[str, str]] = []
        episode = [observation]
        for step in range(rng.randint(4, 12)):
            admissible = room.admissible()
            inadmissible = rng.random() < 0.05  # the engine answers "Nothing happens." and nothing changes
            action = rng.choice(_JUNK_COMMANDS) if inadmissible else _policy(rng, room, admissible)
            if step in (0, 1) or rng.random() < 0.25:
                prompt = react_prompt("alfworld", task=f"{room.goal}.", observation=observation,
                                      admissible=admissible, history=history)
                texts.append(as_message("user", prompt))
                texts.append(as_message("assistant", react_response(_thought(rng, room, action), action)))
            feedback = "Nothing happens." if inadmissible else room.step(action)
            history.append((observation, action))
            observation = feedback
            episode.append(f"> {action}\n{feedback}")
        texts.append("\n\n".join(episode))
        if index % 6 == 0:
            texts.append(as_message("user", "\n".join(f"> {a}\n{o}" for o, a in history) + "\n" + SKILL_INSTRUCTION))
            texts.append(skill_record(rng, "ALFWorld", room.goal, rng.random() < 0.5, len(history),
                                      f"To {room.goal}, first search the likely receptacles for a {room.target}, "
                                      f"open closed ones, take it, then go to the {room.parent}."))
    return texts
