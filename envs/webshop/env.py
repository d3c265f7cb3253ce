"""``webshop``: WebShop as an in-process TextEnv (no HTTP), on the page machine the server uses.

* Observation: the page as ``text`` (visible strings joined with `` [SEP] ``, the default) or
  ``text_rich`` (one line per string, ``[button] X [button_]`` markup); ``observation_mode=``.
* Action: ``search[keywords]`` (any page) or ``click[x]`` for a current clickable. Anything else
  is a no-op: reward 0, the observation unchanged, ``invalid_action=True``.
* ``info["admissible_actions"]``: ``click[x]`` for each clickable, and on the search page
  ``search[<instruction>]`` (the instruction as keywords), so a random policy can start.
* Reward: upstream's, on the ``click[buy now]`` step, which alone terminates; ``score`` = that
  reward (0 without a purchase); ``won`` = reward == 1. ``family`` = category. The noun tagger of
  the title score is the process default (:func:`seed_gym.envs.webshop.nouns.default_tagger`:
  spaCy when an English pipeline is installed, else the lexicon).
* ``protocol``: the step budget in force. ``"seed"`` (default): 15 steps, as SEED and verl-agent
  run WebShop. ``"upstream"``: 100 steps, the cap of upstream's baselines (upstream's env itself
  has none; its paper evaluation also uses ``goals="human"``, a separate option). ``max_steps``
  still overrides the cap. The protocol and the tagger are part of the env's ``version``
  (``"2+seed+lexicon-2"``), so they enter every run's identity, and :meth:`describe` (the run
  manifest) spells them out.
* ``expert=True``: ``info["expert_action"]`` searches the goal's query (the product's title when
  the query does not reach the goal product in the top 50), pages to the goal product, opens it,
  picks the goal options and buys. ``expert_search="instruction"`` makes it search the
  instruction first (the suggested admissible search, which needs no privileged product name),
  falling back to the query when that search misses the goal product: demonstrations a policy
  that sees only the page can imitate. ``expert_pick="first_match"`` makes it buy the *first*
  search result whose purchase (with the goal options it offers) earns reward 1, instead of paging
  to the goal product: upstream counts any such purchase a success, and "the top result that
  fits" is a choice a policy can learn from the page, while "the hidden goal product" is not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from seed_gym.core import StepOutcome, TaskInfo, TextEnv, UnknownTaskError
from seed_gym.envs.webshop.nouns import default_choice
from seed_gym.envs.webshop.pages import Session
from seed_gym.envs.webshop.reward import get_reward
from seed_gym.envs.webshop.shop import Shop, get_shop
from seed_gym.tasks import TaskSet

ENV_VERSION = "2"
OBSERVATION_MODES = ("text", "text_rich")
#: Step cap per protocol (see the module rules).
PROTOCOL_STEPS: dict[str, int] = {"seed": 15, "upstream": 100}


EXPERT_SEARCHES = ("query", "instruction")
EXPERT_PICKS = ("goal", "first_match")


def expert_keywords(shop: Shop, goal: dict[str, Any], search: str = "query") -> str:
    """The expert's search: the instruction first when ``search="instruction"`` and it finds the
    goal product; else the goal's query, or the product title when the query misses it."""
    if search not in EXPERT_SEARCHES:
        raise ValueError(f"expert_search must be one of {EXPERT_SEARCHES}, got {search!r}")
    if search == "instruction":
        instruction = str(goal["instruction_text"]).lower()
        if goal["asin"] in shop.search(instruction.split(" ")):
            return instruction
    query = str(goal["query"]).lower()
    if goal["asin"] in shop.search(query.split(" ")):
        return query
    return str(shop.products[goal["asin"]]["Title"]).lower()


def _wanted_values(session: Session) -> list[str]:
    """Goal option values still to click (only those the item page can set)."""
    groups = session.option_groups()
    goal_options = session.goal.get("goal_options") or {}
    todo = []
    if isinstance(goal_options, dict):
        for group, value in goal_options.items():
            value = str(value).lower()
            if session.options.get(group) != value and groups.get(value) == group:
                todo.append(value)
    else:
        chosen = set(session.options.values())
        todo = [str(v).lower() for v in goal_options if str(v).lower() in groups and str(v).lower() not in chosen]
    return todo


def goal_option_choice(product: dict[str, Any], goal: dict[str, Any]) -> dict[str, str]:
    """The goal's option values that ``product`` offers, as the options an expert would click."""
    groups = {str(v).lower(): group for group, values in (product.get("options") or {}).items() for v in values}
    goal_options = goal.get("goal_options") or {}
    values = goal_options.values() if isinstance(goal_options, dict) else goal_options
    return {groups[v]: v for v in (str(v).lower() for v in values) if v in groups}


def first_full_reward(shop: Shop, goal: dict[str, Any], results: list[str]) -> str | None:
    """The first result whose purchase with the goal options earns reward 1 (None if none does)."""
    for asin in results:
        product = shop.products[asin]
        if get_reward(product, goal, shop.prices[asin], goal_option_choice(product, goal)) == 1.0:
            return asin
    return None


def expert_action(session: Session, keywords: str, target: str | None = None) -> str | None:
    """The next expert action from a session (see the module rules); ``target`` defaults to the
    goal product."""
    target = target or session.goal["asin"]
    if session.done:
        return None
    if session.page == "start" or (session.page == "results" and session.keywords != keywords.split(" ")):
        return f"search[{keywords}]"
    if session.page == "results":
        if target not in session.results:
            return f"search[{keywords}]"
        index = session.results.index(target) // 10 + 1
        if index == session.page_num:
            return f"click[{target.lower()}]"
        return "click[next >]" if index > session.page_num else "click[< prev]"
    if session.page == "item":
        if session.asin != target:
            return "click[< prev]"
        todo = _wanted_values(session)
        return f"click[{todo[0]}]" if todo else "click[buy now]"
    return "click[< prev]"


class WebShopBase(TextEnv):
    """What the text and browser envs share: the shop, the options, splits, task info."""

    version: ClassVar[str] = ENV_VERSION
    default_max_steps: ClassVar[int] = 15

    def __init__(self, *, data: str | None = None, num_products: int = 1000, seed: int = 0,
                 goals: str = "synthetic", observation_mode: str = "text", expert: bool = False,
                 expert_search: str = "query", expert_pick: str = "goal", protocol: str = "seed",
                 split: str = "train", max_steps: int | None = None, render_mode: str | None = None) -> None:
        """``data``: None (SynShop, ``num_products`` from ``seed``) or a folder of upstream files."""
        if protocol not in PROTOCOL_STEPS:
            raise ValueError(f"protocol must be one of {tuple(PROTOCOL_STEPS)}, got {protocol!r}")
        super().__init__(max_steps=max_steps or PROTOCOL_STEPS[protocol], render_mode=render_mode)
        self.protocol = protocol
        self.tagger_choice = default_choice()
        self.version = f"{ENV_VERSION}+{protocol}+{self.tagger_choice.tagger.name}"  # the run identity's env_version
        if observation_mode not in OBSERVATION_MODES:
            raise ValueError(f"observation_mode must be one of {OBSERVATION_MODES}, got {observation_mode!r}")
        self.shop = get_shop(data, num_products=int(num_products), seed=int(seed), goals=goals)
        self.goal_kind = goals
        self.observation_mode = observation_mode
        self.expert = bool(expert)
        if expert_search not in EXPERT_SEARCHES:
            raise ValueError(f"expert_search must be one of {EXPERT_SEARCHES}, got {expert_search!r}")
        self.expert_search = expert_search
        if expert_pick not in EXPERT_PICKS:
            raise ValueError(f"expert_pick must be one of {EXPERT_PICKS}, got {expert_pick!r}")
        self.expert_pick = expert_pick
        self.default_split = split
        self._expert_keywords = ""
        self._expert_targets: dict[tuple[str, ...], str | None] = {}

    def task_set(self) -> TaskSet:
        ts = self.shop.task_set
        return TaskSet(ts.splits, ts.data_fingerprint, default_split=self.default_split, aliases=ts.aliases)

    def ground_truth(self, task_id: str) -> Mapping[str, Any] | None:
        """The goal: ``asin``, ``name``, ``attributes``, ``goal_options``, ``price_upper``, ..."""
        try:
            return self.shop.goal(task_id)
        except UnknownTaskError:  # no ground truth: the rule still writes a skill
            return None

    def shared_state(self) -> Shop:
        """The shop (products, goals, splits and its loaded search index): an env pool builds it
        once per machine and its workers use it instead of loading their own."""
        self.shop.retriever()
        return self.shop

    def describe(self) -> dict[str, Any]:
        """What the run manifest records: protocol and step cap, noun tagger, fuzzy matcher, data."""
        return {"protocol": self.protocol, "protocol_step_cap": PROTOCOL_STEPS[self.protocol],
                "max_steps": self.max_steps, "tagger": self.tagger_choice.tagger.name,
                "tagger_reason": self.tagger_choice.reason,
                "fuzzy": "thefuzz token_set_ratio (force_ascii, rounded) > 85 on rapidfuzz",
                "goals": self.goal_kind, "data": str(self.shop.root), "products": len(self.shop.products),
                "goal_count": len(self.shop.goals)}

    def _start(self, task_id: str) -> tuple[dict[str, Any], TaskInfo]:
        """The goal of ``task_id`` and its task info; sets up the expert's search."""
        goal = self.shop.goal(task_id)
        self._expert_keywords = expert_keywords(self.shop, goal, self.expert_search) if self.expert else ""
        split = next((n for n, s in self.shop.task_set.splits.items() if task_id in s), "train")
        return goal, TaskInfo(id=task_id, split=split, family=str(goal["category"]),
                              instruction=str(goal["instruction_text"]))

    def _expert_target(self, session: Session) -> str | None:
        """The product the expert buys: the goal's, or the first full-reward result (cached per
        result list, since the expert asks every step)."""
        if self.expert_pick == "goal" or not session.results:
            return None
        key = (session.goal["asin"], *session.results)
        if key not in self._expert_targets:
            self._expert_targets[key] = first_full_reward(self.shop, session.goal, session.results)
        return self._expert_targets[key]

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """As TextEnv.step; a non-string action is a no-op like any unparseable one (page unchanged)."""
        return super().step(action if isinstance(action, str) else "")


class WebShopEnv(WebShopBase):
    env_id: ClassVar[str] = "webshop"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.session: Session | None = None

    def _reset(self, task_id: str, seed: int) -> tuple[str, TaskInfo]:
        goal, task = self._start(task_id)
        self.session = Session(self.shop, goal)
        return self.observe(), task

    def observe(self) -> str:
        assert self.session is not None
        return self.session.render(self.observation_mode)

    def _step(self, action: str) -> StepOutcome:
        assert self.session is not None
        if not self.session.apply(action):
            return StepOutcome(self.observe(), invalid_action=True)
        if self.session.done:
            return StepOutcome(self.observe(), reward=self.session.reward, terminated=True,
                               extra_info={"reward_info": self.session.reward_info})
        return StepOutcome(self.observe())

    def _won(self) -> bool:
        return bool(self.session and self.session.done and self.session.reward == 1.0)

    def _score(self) -> float:
        return float(self.session.reward) if self.session and self.session.done else 0.0

    def _admissible_actions(self) -> list[str]:
        assert self.session is not None
        actions = [f"click[{c}]" for c in self.session.clickables() if c != "search"]
        if self.session.has_search_bar:
            actions.insert(0, f"search[{self.session.instruction.lower()}]")
        return actions

    def _expert_action(self) -> str | None:
        if not self.expert or self.session is None:
            return None
        return expert_action(self.session, self._expert_keywords, self._expert_target(self.session))
