"""WebShop's sample texts for the tiny model's tokenizer (the profile's ``corpus`` target).

A generated SynShop catalogue and its synthetic and human-style goals, browsed through the same
page machine the env renders (start, results, item, sub-pages, done), in both observation modes,
with the ReAct prompts and responses and skill records a model agent reads and writes. Drawn from
one ``random.Random`` stream seeded from the seed (the catalogue from the seed itself).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from seed_gym.agents.corpus import as_message, corpus_rng, react_prompt, react_response, skill_record

#: Catalogue size and browsing episodes by default.
PRODUCTS = 300
EPISODES = 220


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


def _admissible(session: Any) -> list[str]:
    actions = [f"click[{c}]" for c in session.clickables() if c != "search"]
    if session.has_search_bar:
        actions.insert(0, f"search[{session.instruction.lower()}]")
    return actions


def _episode(rng: random.Random, session: Any) -> list[tuple[str, str]]:
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


def _thought(rng: random.Random, session_goal: Mapping[str, Any], action: str) -> str:
    query = session_goal["query"]
    options = [
        f"I am looking for {query}. I should search with the key words of the task.",
        f"The results show some items. I will check the first one that looks like {query}.",
        "The item matches the attributes and the price is under the limit.",
        f"I need to select the right options before buying. Next action: {action}.",
        "Everything matches the instruction, so I will buy it now.",
    ]
    return " ".join(rng.sample(options, rng.randint(1, 2)))


def sample_texts(seed: int = 0, *, products: int = PRODUCTS, episodes: int = EPISODES) -> list[str]:
    """Browsing episodes on a generated catalogue of ``products`` products: pages in both modes,
    ReAct prompts and responses (the profile's ``corpus`` target)."""
    from seed_gym.envs.webshop import catalog, goals as goal_lib
    from seed_gym.envs.webshop.pages import Session

    rng = corpus_rng(seed, "webshop")
    items, ins, human = catalog.generate_catalog(products, seed)
    catalogue, prices = catalog.load_products(items, ins, random.Random(seed))
    shop = _MiniShop(catalogue, prices)
    goals = goal_lib.synthetic_goals(catalogue, prices, random.Random(seed))
    goals += goal_lib.human_goals(catalogue, prices, human, random.Random(seed))
    texts = [catalog.search_document(p) for p in list(catalogue.values())[: products // 3]]
    for index in range(min(episodes, len(goals))):
        goal = goals[rng.randrange(len(goals))]
        session = Session(shop, goal)
        steps = _episode(rng, session)
        history: list[tuple[str, str]] = []
        for step, (page, action) in enumerate(steps[:-1]):
            if step < 2 or rng.random() < 0.3:
                replay = Session(shop, goal)  # admissible actions of the page before the action
                for _, earlier in steps[:step]:
                    replay.apply(earlier)
                texts.append(as_message("user", react_prompt(
                    "webshop", task=session.instruction, observation=page,
                    admissible=_admissible(replay), history=history)))
                texts.append(as_message("assistant", react_response(_thought(rng, goal, action), action)))
            history.append((page, action))
        texts.append(steps[-1][0])
        if index % 8 == 0:
            texts.append(skill_record(rng, "WebShop", session.instruction, session.reward == 1.0, len(history),
                                      "Search with the product type and its key attributes, open the best "
                                      "matching item, select every requested option, then click buy now."))
    return texts
