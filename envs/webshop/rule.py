"""The WebShop rule: :func:`webshop_rule` and what it reads the episode with.

Rules: the goal (product, requested options, price cap) is the env's ground truth when given, else
read off the instruction's synthetic wording (:func:`parse_shop_goal` -> :class:`ShopGoal`); item
pages are parsed from the observation text (:func:`parse_item_page` -> :class:`ShopPage`). A success
states the search -> open -> select options -> Buy Now order actually taken; a failure states what
the purchase got wrong against the goal (an option, the price cap, the product), or that there was
no purchase, with its warning signs and the correct workflow.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from seed_gym.records import EpisodeRecord
from seed_gym.training.rules.common import common_warnings, english_list, episode_ending, step_result

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
            after = parse_item_page(step_result(record, index))
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
    wanted = english_list([f"{k}: {v}" for k, v in goal.options.items()]) or "no options"
    cap = f"${goal.price_cap:.2f}" if goal.price_cap else "no cap"
    label = record.task.get("family") or "webshop"
    if purchase and record.won:
        price = _price_text(purchase.page)
        chosen = english_list([f"{k}: {v}" for k, v in purchase.selected.items()]) or "no options"
        query = searches[-1] if searches else goal.product
        summary = (f"WebShop ({label}) task '{instruction}' {episode_ending(record)}. The agent searched '{query}', opened "
                   f"'{purchase.page.title}' ({purchase.asin.upper()}, {price}), selected {chosen} and bought it "
                   f"(score {record.score:.2f}).")
        skill = (f"Workflow for buying {goal.product}: search a short query naming the product ('{query}') -> open "
                 f"a result whose title is the requested product and whose price is under {cap} "
                 f"('{purchase.page.title}', {price}) -> on the item page click each requested option ({wanted}) "
                 f"-> click Buy Now. Core rule: check the title, price and every option against the instruction "
                 f"before buying.")
        return summary, skill
    mistakes = _shop_mistakes(record, goal, searches, opened, purchase)
    signs = common_warnings(record)
    target = (f" The target product was '{goal.name}' ({goal.asin})" +
              (f" with {english_list(goal.attributes)}" if goal.attributes else "") + "." if goal.name else "")
    summary = (f"WebShop ({label}) task '{instruction}' {episode_ending(record)}. {mistakes[0][0].upper()}{mistakes[0][1:]}."
               + target)
    skill = (f"Avoid: {'; '.join(mistakes)}. " + (f"Warning signs: {english_list(signs)}. " if signs else "")
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
        seen = english_list([f"'{title}'" for _, _, title in opened], 4)
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
