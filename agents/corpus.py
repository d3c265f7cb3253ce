"""Env text for training the tiny model's tokenizer: what the agents will actually read and write.

Rules:

* The corpus is a pure function of :class:`CorpusConfig` and the repository's code: everything
  is drawn from ``random.Random`` streams seeded from the config (no ``hash()``, no set order, no
  clock), so the same config gives the same documents, in the same order, on every machine.
* It is built from the envs' own generators, without running an engine, in a few seconds:

  - **ALFWorld**: candidate games of the offline generator (rooms from the wheel's FloorPlans,
    object placements and goal sentences exactly as the generator makes them), played by a small
    simulation that writes the engine's feedback templates (``alfred.twl2``) and an
    ALFWorld-style admissible-action list;
  - **WebShop**: a generated SynShop catalogue and its synthetic goals, browsed through the same
    page machine the env renders (start, results, item, sub-pages, done), in both observation
    modes;
  - **Search-QA**: a generated SynWiki world and its questions, as Search-R1 prompts, searches,
    ``<information>`` blocks and answers.

* Agent-side text is wrapped around the observations: the ReAct prompts of
  ``agents/templates/*.toml`` rendered by the agents' own prompt builder, ``<think>``/``<action>`` responses, Search-R1 turns and the JSON skill records
  (``episode_summary``, ``episode_skill``).
* :func:`corpus_fingerprint` identifies the text; the tiny model records it.

Chat markers (``<|im_start|>`` ...) never appear: they are special tokens, added whole.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from seed_gym.tasks import fingerprint

CORPUS_VERSION = "1"


@dataclass(frozen=True)
class CorpusConfig:
    """How much of each env to sample. The defaults give about 2-3 MB of text in a few seconds."""

    seed: int = 0
    alfworld_games: int = 180
    webshop_products: int = 300
    webshop_episodes: int = 220
    searchqa_entities: int = 400
    searchqa_questions: int = 260

    def describe(self) -> dict[str, Any]:
        return {"version": CORPUS_VERSION, **asdict(self)}


def _rng(config: CorpusConfig, part: str) -> random.Random:
    # One stream per part, so changing one part's size leaves the others' text unchanged.
    return random.Random(f"seed-gym/tiny-corpus/{config.seed}/{part}")


# -- agent-side wording ----------------------------------------------------------------------
def react_prompt(env_id: str, *, task: str, observation: str, admissible: Sequence[str],
                 history: Sequence[tuple[str, str]]) -> str:
    """The ReAct prompt a model agent sees at this point of an episode: the env's own template
    (``agents/templates``) through the agents' own :class:`PromptBuilder`, so the tokenizer learns
    exactly the text it will read."""
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


# -- ALFWorld --------------------------------------------------------------------------------
def _alfworld_list(items: Sequence[str]) -> str:
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
            return f"The {receptacle} is open. In it, you see {_alfworld_list(self.contents[receptacle])}."
        return f"On the {receptacle}, you see {_alfworld_list(self.contents[receptacle])}."

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
                        f"{_alfworld_list(self.receptacles)}.")
            return f"You are facing the {self.location}. Next to it, you see nothing."
        if words[0] == "examine":
            thing = action[len("examine "):]
            if thing in self.contents:
                return self.describe(thing)
            return f"There's nothing special about {thing}."
        return "Nothing happens."


def _alfworld_room(rng: random.Random, index: int) -> _Room:
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


def _alfworld_thought(rng: random.Random, room: _Room, action: str) -> str:
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


def _alfworld_policy(rng: random.Random, room: _Room, actions: list[str]) -> str:
    """Mostly goal-directed (go, open, take, heat, move), sometimes random, like a learning agent."""
    preferred = [a for a in actions if a.startswith(("take ", "open ", "heat ", "cool ", "clean ", "use "))
                 and room.target in a or a.startswith(("move ", "put ")) and room.parent in a]
    if preferred and rng.random() < 0.7:
        return rng.choice(preferred)
    return rng.choice(actions)


def alfworld_texts(config: CorpusConfig) -> list[str]:
    """Episodes of simulated ALFWorld games: intro, feedback, ReAct prompts and responses."""
    rng = _rng(config, "alfworld")
    texts: list[str] = []
    for index in range(config.alfworld_games):
        room = _alfworld_room(rng, index)
        observation = ("-= Welcome to TextWorld, ALFRED! =-\n\nYou are in the middle of a room. Looking quickly "
                       f"around you, you see {_alfworld_list(room.receptacles)}.\n\nYour task is to: {room.goal}.")
        history: list[tuple[str, str]] = []
        episode = [observation]
        for step in range(rng.randint(4, 12)):
            admissible = room.admissible()
            inadmissible = rng.random() < 0.05  # the engine answers "Nothing happens." and nothing changes
            action = rng.choice(_JUNK_COMMANDS) if inadmissible else _alfworld_policy(rng, room, admissible)
            if step in (0, 1) or rng.random() < 0.25:
                prompt = react_prompt("alfworld", task=f"{room.goal}.", observation=observation,
                                      admissible=admissible, history=history)
                texts.append(as_message("user", prompt))
                texts.append(as_message("assistant", react_response(_alfworld_thought(rng, room, action), action)))
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


# -- WebShop ---------------------------------------------------------------------------------
class _MiniShop:
    """The slice of :class:`seed_gym.envs.webshop.shop.Shop` the page machine uses, with a plain
    word-overlap search instead of BM25 (search quality does not matter for tokenizer text)."""

    def __init__(self, products: dict[str, Any], prices: dict[str, float]) -> None:
        from seed_gym.envs.webshop.catalog import search_document

        self.products, self.prices = products, prices
        self._words = {asin: set(search_document(p).split()) for asin, p in products.items()}

    def search(self, keywords: list[str], k: int = 50) -> list[str]:
        wanted = {w for w in keywords if w}
        scored = sorted(((-len(wanted & words), asin) for asin, words in self._words.items()))
        return [asin for score, asin in scored[:k] if score < 0]


def _webshop_admissible(session: Any) -> list[str]:
    actions = [f"click[{c}]" for c in session.clickables() if c != "search"]
    if session.has_search_bar:
        actions.insert(0, f"search[{session.instruction.lower()}]")
    return actions


def _webshop_episode(rng: random.Random, session: Any) -> list[tuple[str, str]]:
    """``(page before, action)`` pairs of one shopping episode: search, open, options, buy."""
    steps: list[tuple[str, str]] = []
    mode = rng.choice(["text", "text", "text_rich"])

    def act(action: str) -> None:
        steps.append((session.render(mode), action))
        session.apply(action)

    act(f"search[{rng.choice([session.goal['query'], session.instruction.lower()])}]")
    if not session.results:
        return steps
    if rng.random() < 0.3:
        act("click[next >]")
        act("click[< prev]")
    target = session.goal["asin"]
    page = session.page_results()
    act(f"click[{(target if target in page else rng.choice(page)).lower()}]")
    for value in list(session.option_groups())[: rng.randint(0, 3)]:
        act(f"click[{value}]")
    for sub in rng.sample(["description", "features", "reviews"], rng.randint(0, 2)):
        act(f"click[{sub}]")
        act("click[< prev]")
    act("click[buy now]")
    steps.append((session.render(mode), ""))
    return steps


def _webshop_thought(rng: random.Random, session_goal: Mapping[str, Any], action: str) -> str:
    query = session_goal["query"]
    options = [
        f"I am looking for {query}. I should search with the key words of the task.",
        f"The results show some items. I will check the first one that looks like {query}.",
        "The item matches the attributes and the price is under the limit.",
        f"I need to select the right options before buying. Next action: {action}.",
        "Everything matches the instruction, so I will buy it now.",
    ]
    return " ".join(rng.sample(options, rng.randint(1, 2)))


def webshop_texts(config: CorpusConfig) -> list[str]:
    """Browsing episodes on a generated catalogue: pages in both modes, ReAct prompts and responses."""
    from seed_gym.envs.webshop import catalog, goals as goal_lib
    from seed_gym.envs.webshop.pages import Session

    rng = _rng(config, "webshop")
    items, ins, human = catalog.generate_catalog(config.webshop_products, config.seed)
    products, prices = catalog.load_products(items, ins, random.Random(config.seed))
    shop = _MiniShop(products, prices)
    goals = goal_lib.synthetic_goals(products, prices, random.Random(config.seed))
    goals += goal_lib.human_goals(products, prices, human, random.Random(config.seed))
    texts = [catalog.search_document(p) for p in list(products.values())[: config.webshop_products // 3]]
    for index in range(min(config.webshop_episodes, len(goals))):
        goal = goals[rng.randrange(len(goals))]
        session = Session(shop, goal)
        steps = _webshop_episode(rng, session)
        history: list[tuple[str, str]] = []
        for step, (page, action) in enumerate(steps[:-1]):
            if step < 2 or rng.random() < 0.3:
                replay = Session(shop, goal)  # admissible actions of the page before the action
                for _, earlier in steps[:step]:
                    replay.apply(earlier)
                texts.append(as_message("user", react_prompt(
                    "webshop", task=session.instruction, observation=page,
                    admissible=_webshop_admissible(replay), history=history)))
                texts.append(as_message("assistant", react_response(_webshop_thought(rng, goal, action), action)))
            history.append((page, action))
        texts.append(steps[-1][0])
        if index % 8 == 0:
            texts.append(skill_record(rng, "WebShop", session.instruction, session.reward == 1.0, len(history),
                                      "Search with the product type and its key attributes, open the best "
                                      "matching item, select every requested option, then click buy now."))
    return texts


# -- Search-QA -------------------------------------------------------------------------------
def searchqa_texts(config: CorpusConfig) -> list[str]:
    """Search-R1 episodes on a generated world: prompt, search turns, information blocks, answers."""
    from seed_gym.envs.searchqa import protocol
    from seed_gym.envs.searchqa.questions import generate_questions
    from seed_gym.envs.searchqa.world import generate_world

    rng = _rng(config, "searchqa")
    world = generate_world(config.seed, config.searchqa_entities)
    passages = {p.pid: p.contents for p in world.passages}
    questions = generate_questions(world)
    texts = [p.contents for p in world.passages[: len(world.passages) // 2]]
    for question in rng.sample(questions, min(config.searchqa_questions, len(questions))):
        turns = [as_message("user", protocol.make_prompt(question["question"])), "assistant\n"]
        hops = question.get("metadata", {}).get("hops") or []
        for hop in hops:
            found = [passages[pid] for pid in hop.get("support", []) if pid in passages][:1]
            found += [passages[pid] for pid in rng.sample(sorted(passages), 2)]
            turns.append(f"<think> I need to find out {hop['query']}. </think>\n<search> {hop['query']} </search>")
            turns.append(protocol.information_block(found[:3]))
        if rng.random() < 0.1:
            turns.append("I think the answer is here." + protocol.INVALID_TURN_MESSAGE)
        answer = question["golden_answers"][0]
        turns.append(f"<think> The information says the answer is {answer}. </think>\n<answer> {answer} </answer>")
        texts.append("".join(turns))
    texts.append(skill_record(rng, "Search-QA", questions[0]["question"], True, 3,
                              "Search one hop at a time with the entity name and the relation, then answer "
                              "with the exact name from the last passage."))
    return texts


# -- the corpus ------------------------------------------------------------------------------
def chat_frames() -> list[str]:
    """Role headers and the skill instruction, as plain text around the chat markers."""
    return [as_message("system", "You are a helpful assistant."), as_message("user", SKILL_INSTRUCTION)]


def build_corpus(config: CorpusConfig = CorpusConfig()) -> list[str]:
    """All documents, in a fixed order: ALFWorld, WebShop, Search-QA, chat frames."""
    return [*alfworld_texts(config), *webshop_texts(config), *searchqa_texts(config), *chat_frames()]


def corpus_fingerprint(texts: Iterable[str]) -> str:
    """``sha256:`` + 16 hex digits over the documents and their boundaries."""
    return fingerprint(texts)
