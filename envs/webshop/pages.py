"""The WebShop page state machine, shared by the text env and the web server.

Pages: ``start`` (search bar), ``results`` (10 of the top 50 per page), ``item`` (options,
title, price, rating, sub-page links, buy), ``sub`` (description / features / reviews) and
``done`` (the reward). Actions follow upstream's grammar ``(.+)\\[(.+)\\]`` with the argument
lower-cased:

* ``search[kw]`` is accepted on any page (the keywords are the argument split on spaces, empty
  words dropped, and cut after ``MAX_QUERY_CHARS`` characters: upstream has no cap, but its Lucene
  index refuses queries of over 1,024 terms, and the cap bounds what a session holds);
* ``click[x]`` is valid iff x is a current clickable other than ``search``;
* anything else is a no-op (``apply`` returns False and nothing changes);
* ``next >`` / ``< prev`` move +-1 results page, unbounded (pages past 5 are empty); ``< prev`` on
  an item page returns to the results, on a sub-page to the item page; an option value sets
  ``options[group] = value`` (equal values in two groups collide: the later group wins);
* ``click[buy now]`` is the only action that ends the episode.

A page is rendered as a list of :class:`Node` (visible strings in page order); the text
observation joins them with `` [SEP] ``, ``text_rich`` writes one line per node with button markup,
and the HTML templates emit the same nodes, so every front end shows the same strings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from seed_gym.envs.webshop.reward import get_reward

PER_PAGE = 10
SUB_PAGES = ("description", "features", "reviews")
MAX_QUERY_CHARS = 1000


@dataclass(frozen=True)
class Node:
    """One visible string; ``click`` is its clickable name (lower case) when it is a button/link."""

    text: str
    click: str | None = None
    clicked: bool = False
    kind: str = "text"  # text | button | link | option | header


def parse_action(action: str) -> tuple[str, str] | None:
    """``(name, lower-cased argument)`` or None when the action does not fit the grammar.

    The grammar is upstream's regex ``(.+)\\[(.+)\\]`` over the whole stripped action: the name runs to
    the last ``[`` that leaves a non-empty name and argument. Found with ``rfind`` in linear time;
    the regex backtracks quadratically on actions such as ``"[" * 65536``.
    """
    if not isinstance(action, str):
        return None
    text = action.strip()
    if not text.endswith("]"):
        return None
    bracket = text.rfind("[", 1, len(text) - 2)
    if bracket < 1:
        return None
    return text[:bracket].strip().lower(), text[bracket + 1:-1].lower()


def query_words(words: list[str]) -> list[str]:
    """The words a search uses: empty ones dropped, then cut to ``MAX_QUERY_CHARS`` characters
    (counted with one space between words); ``[""]`` when nothing is left."""
    words = [w for w in words if w]
    if sum(map(len, words)) + len(words) - 1 > MAX_QUERY_CHARS:
        words = [w for w in " ".join(words)[:MAX_QUERY_CHARS].split(" ") if w]
    return words or [""]


def price_text(product: dict[str, Any]) -> str:
    return str(product.get("Price"))


@dataclass
class Session:
    """One episode's position in the shop."""

    shop: Any
    goal: dict[str, Any]
    page: str = "start"
    keywords: list[str] = field(default_factory=list)
    page_num: int = 1
    results: list[str] = field(default_factory=list)
    asin: str | None = None
    options: dict[str, str] = field(default_factory=dict)
    sub_page: str | None = None
    visited: set[str] = field(default_factory=set)
    last_clicked: str | None = None
    reward: float = 0.0
    reward_info: dict[str, Any] | None = None
    done: bool = False

    @property
    def instruction(self) -> str:
        return str(self.goal["instruction_text"])

    @property
    def product(self) -> dict[str, Any] | None:
        return self.shop.products.get(self.asin) if self.asin else None

    # -- clickables ----------------------------------------------------------------------
    def option_groups(self) -> dict[str, str]:
        """Clickable option value -> its group (later groups win on equal values)."""
        product = self.product or {}
        mapping: dict[str, str] = {}
        for group, values in (product.get("options") or {}).items():
            for value in values:
                mapping[value.lower()] = group
        return mapping

    def page_results(self) -> list[str]:
        start = (self.page_num - 1) * PER_PAGE
        return self.results[start:start + PER_PAGE] if start >= 0 else []

    def clickables(self) -> list[str]:
        if self.page == "start":
            return ["search"]
        if self.page == "results":
            nav = ["back to search"] + (["< prev"] if self.page_num > 1 else []) + ["next >"]
            return nav + [a.lower() for a in self.page_results()]
        if self.page == "item":
            return ["back to search", "< prev", *self.option_groups(), *SUB_PAGES, "buy now"]
        if self.page == "sub":
            return ["back to search", "< prev"]
        return []

    @property
    def has_search_bar(self) -> bool:
        return self.page == "start"

    # -- transitions -----------------------------------------------------------------------
    def search(self, keywords: list[str]) -> None:
        self.keywords = query_words(keywords)
        self.results = self.shop.search(self.keywords)
        self.page, self.page_num, self.asin, self.sub_page = "results", 1, None, None
        self.options = {}

    def apply(self, action: str) -> bool:
        """Apply an action; False (and no change) when it is not valid here."""
        if self.done:
            return False
        parsed = parse_action(action)
        if parsed is None:
            return False
        name, arg = parsed
        if name == "search":
            self.search(arg.split(" "))
            self.last_clicked = None
            return True
        if name != "click" or arg == "search" or arg not in self.clickables():
            return False
        self._click(arg)
        self.last_clicked = arg
        return True

    def _click(self, arg: str) -> None:
        if arg == "back to search":
            self.page, self.asin, self.sub_page, self.options = "start", None, None, {}
        elif arg == "next >":
            self.page_num += 1
        elif arg == "< prev":
            if self.page == "results":
                self.page_num -= 1
            elif self.page == "item":
                self.page, self.asin, self.options = "results", None, {}
            else:
                self.page, self.sub_page = "item", None
        elif self.page == "results":
            asin = next(a for a in self.page_results() if a.lower() == arg)
            self.page, self.asin, self.options = "item", asin, {}
            self.visited.add(asin)
        elif arg in SUB_PAGES:
            self.page, self.sub_page = "sub", arg
        elif arg == "buy now":
            self.buy()
        else:
            self.options[self.option_groups()[arg]] = arg

    def buy(self) -> None:
        product = self.product
        assert product is not None and self.asin is not None
        self.reward, self.reward_info = get_reward(product, self.goal, self.shop.prices[self.asin],
                                                   self.options, verbose=True)
        self.page, self.done = "done", True

    # -- rendering -------------------------------------------------------------------------
    def nodes(self) -> list[Node]:
        """The page's visible strings, in order."""
        head = [Node("Instruction:", kind="header"), Node(self.instruction, kind="header")]
        if self.page == "start":
            return [Node("WebShop", kind="header"), *head, Node("Search", "search", kind="button")]
        back = Node("Back to Search", "back to search", kind="button")
        prev = Node("< Prev", "< prev", kind="button")
        if self.page == "results":
            nodes = [*head, back, Node(f"Page {self.page_num} (Total results: {len(self.results)})")]
            if self.page_num > 1:
                nodes.append(prev)
            nodes.append(Node("Next >", "next >", kind="button"))
            for asin in self.page_results():
                product = self.shop.products[asin]
                nodes += [Node(asin, asin.lower(), asin in self.visited, kind="link"),
                          Node(str(product["Title"])), Node(price_text(product))]
            return nodes
        product = self.product or {}
        if self.page == "item":
            nodes = [*head, back, prev]
            for group, values in (product.get("options") or {}).items():
                nodes.append(Node(group))
                nodes += [Node(v, v.lower(), self.options.get(group) == v, kind="option") for v in values]
            return nodes + [Node(str(product.get("Title", ""))), Node(f"Price: {price_text(product)}"),
                            Node(f"Rating: {product.get('Rating', 'N.A.')}"),
                            Node("Description", "description", kind="button"),
                            Node("Features", "features", kind="button"),
                            Node("Reviews", "reviews", kind="button"),
                            Node("Buy Now", "buy now", kind="button")]
        if self.page == "sub":
            nodes = [*head, back, prev]
            if self.sub_page == "description":
                nodes.append(Node(str(product.get("Description", ""))))
            elif self.sub_page == "features":
                nodes += [Node(str(b)) for b in product.get("BulletPoints") or []]
            return nodes
        return [Node("Thank you for shopping with us!", kind="header"), Node("Your score (min 0.0, max 1.0)"),
                Node(f"{self.reward}")]

    def clicked_option(self) -> str | None:
        """The option value the last action clicked, while its item page shows (``text_rich`` prefix)."""
        if self.last_clicked and self.page == "item" and self.last_clicked in self.option_groups():
            return self.last_clicked
        return None

    def render(self, mode: str = "text") -> str:
        return render_nodes(self.nodes(), mode, self.clicked_option())


def render_nodes(nodes: list[Node], mode: str = "text", clicked_option: str | None = None) -> str:
    """An observation from a page's nodes (empty strings are not shown, as in a browser)."""
    nodes = [n for n in nodes if n.text != ""]
    if mode == "text":
        return " [SEP] ".join(n.text for n in nodes)
    if mode == "text_rich":
        lines = []
        for n in nodes:
            if n.click is None:
                lines.append(n.text)
            elif n.clicked:
                lines.append(f"[clicked button] {n.text} [clicked button_]")
            else:
                lines.append(f"{chr(10) if n.kind == 'link' else ''}[button] {n.text} [button_]")
        text = "\n".join(lines)
        return f"You have clicked {clicked_option}.\n{text}" if clicked_option else text
    raise ValueError(f"unknown observation mode {mode!r}; use 'text' or 'text_rich'")
