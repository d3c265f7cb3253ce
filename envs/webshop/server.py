"""The WebShop web app (FastAPI + Jinja2): upstream's routes over the shared page machine.

Routes (``<sid>`` = the session/episode id; ``fixed_<i>`` or ``fixed_<i>-<tag>`` selects goal i,
any other id draws a goal by weight, seeded by the id):

* ``GET /`` -> redirect to a fresh ``/<sid>``; ``GET /<sid>``: the search page (a new episode when the
  session is new or finished, else "back to search" keeping the episode's visited products);
* ``POST /<sid>`` (form ``search_query``) -> redirect to ``/search_results/<sid>/<keywords>/1``;
* ``GET /search_results/<sid>/<keywords>/<page>``;
* ``GET /item_page/<sid>/<asin>/<keywords>/<page>/<options>`` (options: JSON object, URL-quoted);
* ``GET /item_sub_page/<sid>/<asin>/<keywords>/<page>/<sub_page>/<options>``;
* ``GET /done/<sid>/<asin>/<options>`` -> the reward.
* ``GET /api/<sid>/state`` -> the session as JSON, goal included: the env's answer key, so it is
  served only when the app is built with ``state_api=True`` (``seed-gym serve webshop --state-api``),
  for harnesses that score through it; otherwise 404.

Every page is rendered from :meth:`Session.nodes`, so the strings a browser shows are the text
env's; Jinja2 autoescaping escapes whatever users type (HTML/JS is shown, never run).

State is per session and bounded: a query is cut to ``MAX_QUERY_CHARS`` (as in the text env); one
over ``MAX_URL_KEYWORDS`` travels in URLs as a ``~k<crc><length>`` token that only its own session
resolves, from its last ``LONG_QUERIES_PER_SESSION`` such queries. Sessions live in memory
(:class:`SessionTable`): at most ``max_sessions_per_client`` per remote address and ``max_sessions``
in all. A live session is never evicted, so no flood of new sessions (every local client shares the
address 127.0.0.1) can wipe an episode in progress. The rule: a session is *live* until its episode is
bought or it goes ``session_idle_s`` without a request; a new session that finds its address's quota or
the table full takes the place of the least recently used evictable (not live) session there, and when
there is none it is refused, 429 (address quota) or 503 (table full), with a ``Retry-After`` of the
seconds until the oldest live session there can go idle.
"""

from __future__ import annotations

import json
import math
import random
import threading
import time
import uuid
import zlib
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable
from urllib.parse import quote

from starlette.requests import Request  # module level: FastAPI resolves route annotations here

from seed_gym.envs.webshop.pages import SUB_PAGES, Session, query_words
from seed_gym.envs.webshop.shop import Shop, get_shop
from seed_gym.serving import guard

TEMPLATES = Path(__file__).with_name("templates")
MAX_BODY_BYTES = 2**20
#: Keywords longer than this travel in URLs as a token the session resolves: a page's URLs stay a
#: few hundred bytes even for a capped query of multi-byte characters (quoted 9-12 bytes each).
MAX_URL_KEYWORDS = 200
LONG_QUERIES_PER_SESSION = 8
MAX_SESSIONS_PER_CLIENT = 1000
#: A session unused this long (and not finished) may be evicted: long enough for a slow agent's step.
SESSION_IDLE_S = 600.0


@dataclass
class Visit:
    """One session as the server holds it: the episode, the client that opened it, and the long
    queries its URLs name (the most recent ``LONG_QUERIES_PER_SESSION``)."""

    session: Session
    client: str
    long_queries: OrderedDict[str, str] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def keyword_part(self, keywords: str) -> str:
        """The URL segment for keywords (capped like a search): quoted, or a token for long ones."""
        keywords = " ".join(query_words(keywords.split(" "))) or " "
        if len(keywords) <= MAX_URL_KEYWORDS:
            return _q(keywords)
        token = f"~k{zlib.crc32(keywords.encode()):08x}{len(keywords):x}"
        with self._lock:  # two requests of one session may render at once
            self.long_queries[token] = keywords
            self.long_queries.move_to_end(token)
            while len(self.long_queries) > LONG_QUERIES_PER_SESSION:
                self.long_queries.popitem(last=False)
        return token

    def keywords_of(self, part: str) -> str:
        return self.long_queries.get(part, part)


class SessionsFull(Exception):
    """No room for a new session: every session its address (429) or the table (503) holds is live."""

    def __init__(self, status: int, message: str, retry_after_s: float) -> None:
        super().__init__(message)
        self.status, self.retry_after_s = status, retry_after_s


class SessionTable:
    """Visits by session id, bounded per client and in all; live sessions are never evicted (module
    docstring). Not thread-safe: the app holds its lock around every call."""

    def __init__(self, max_sessions: int, max_per_client: int, idle_s: float = SESSION_IDLE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        for name, value in (("max_sessions", max_sessions), ("max_sessions_per_client", max_per_client)):
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        if not idle_s > 0:
            raise ValueError(f"session_idle_s must be positive, got {idle_s}")
        self.max_sessions, self.max_per_client, self.idle_s, self.clock = max_sessions, max_per_client, idle_s, clock
        self._visits: dict[str, Visit] = {}
        self._last_used: OrderedDict[str, float] = OrderedDict()  # all sessions, least recently used first
        self._by_client: dict[str, OrderedDict[str, None]] = {}  # the same order, per client

    def __len__(self) -> int:
        return len(self._visits)

    def __contains__(self, sid: object) -> bool:
        return sid in self._visits

    def __getitem__(self, sid: str) -> Visit:
        return self._visits[sid]

    def get(self, sid: str) -> Visit | None:
        """The visit (now the most recently used), or None."""
        visit = self._visits.get(sid)
        if visit is not None:
            self._touch(sid, visit.client)
        return visit

    def put(self, sid: str, visit: Visit) -> None:
        """Hold ``visit`` under ``sid``; a new sid may evict an idle or finished session (of its client
        when the client is at its quota, else of the table when it is full), or raises SessionsFull."""
        old = self._visits.get(sid)
        if old is not None:
            visit.client = old.client  # a session stays counted against the client that opened it
        else:
            own = self._by_client.get(visit.client, OrderedDict())
            if len(own) >= self.max_per_client:
                self._evict_one(own, 429, f"this address holds {len(own)} live sessions (its quota)")
            elif len(self._visits) >= self.max_sessions:
                self._evict_one(self._last_used, 503, f"the server holds {len(self._visits)} live sessions")
        self._visits[sid] = visit
        self._touch(sid, visit.client)

    def _touch(self, sid: str, client: str) -> None:
        self._last_used[sid] = self.clock()
        self._last_used.move_to_end(sid)
        self._by_client.setdefault(client, OrderedDict())[sid] = None
        self._by_client[client].move_to_end(sid)

    def _evict_one(self, order: OrderedDict[str, Any], status: int, why: str) -> None:
        """Forget the least recently used session in ``order`` that is not live, or raise SessionsFull."""
        oldest = next(iter(order))  # least recently used first: if it is not idle, none is
        idle_for = self.clock() - self._last_used[oldest]
        if idle_for >= self.idle_s:
            return self._drop(oldest)
        finished = next((sid for sid in order if self._visits[sid].session.done), None)
        if finished is not None:
            return self._drop(finished)
        wait = self.idle_s - idle_for
        raise SessionsFull(status, f"no room for a new session: {why}, and live sessions are never evicted; "
                                   f"retry in {math.ceil(wait)} s", wait)

    def _drop(self, sid: str) -> None:
        visit = self._visits.pop(sid)
        del self._last_used[sid]
        own = self._by_client[visit.client]
        del own[sid]
        if not own:
            del self._by_client[visit.client]


def goal_for(shop: Shop, sid: str) -> dict[str, Any]:
    """``fixed_<i>[-tag]`` -> goal i; anything else -> a goal drawn by weight, seeded by ``sid``."""
    head = sid.split("-", 1)[0]
    if head.startswith("fixed_"):
        return shop.goal(head)
    rng = random.Random(zlib.crc32(sid.encode()))
    return rng.choices(shop.goals, weights=[g.get("weight", 1.0) for g in shop.goals])[0]


def _q(text: str) -> str:
    return quote(text, safe="")


def _options_part(options: dict[str, str]) -> str:
    return _q(json.dumps(options, sort_keys=True))


def _parse_options(raw: str) -> dict[str, str]:
    """The options part of a URL: a flat JSON object of strings; anything else means no options."""
    try:
        value = json.loads(raw)
    except (ValueError, TypeError, RecursionError):  # RecursionError: thousands of nested "["
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, str)}


def hrefs(visit: Visit, sid: str) -> dict[str, str]:
    """The URL each current clickable leads to."""
    session = visit.session
    kw = visit.keyword_part(" ".join(session.keywords))
    base = {"back to search": f"/{_q(sid)}"}
    if session.page == "results":
        base["next >"] = f"/search_results/{_q(sid)}/{kw}/{session.page_num + 1}"
        base["< prev"] = f"/search_results/{_q(sid)}/{kw}/{session.page_num - 1}"
        for asin in session.page_results():
            base[asin.lower()] = f"/item_page/{_q(sid)}/{_q(asin)}/{kw}/{session.page_num}/{_options_part({})}"
    elif session.page in ("item", "sub") and session.asin:
        asin = _q(session.asin)
        item = f"/item_page/{_q(sid)}/{asin}/{kw}/{session.page_num}"
        base["< prev"] = (f"/search_results/{_q(sid)}/{kw}/{session.page_num}" if session.page == "item"
                          else f"{item}/{_options_part(session.options)}")
        for value, group in session.option_groups().items():
            base[value] = f"{item}/{_options_part({**session.options, group: value})}"
        for sub in SUB_PAGES:
            base[sub] = (f"/item_sub_page/{_q(sid)}/{asin}/{kw}/{session.page_num}/{sub}/"
                         f"{_options_part(session.options)}")
        base["buy now"] = f"/done/{_q(sid)}/{asin}/{_options_part(session.options)}"
    return base


def create_app(*, data: str | None = None, num_products: int = 1000, seed: int = 0, goals: str = "synthetic",
               max_sessions: int = 10_000, max_sessions_per_client: int = MAX_SESSIONS_PER_CLIENT,
               session_idle_s: float = SESSION_IDLE_S, shop: Shop | None = None, state_api: bool = False) -> Any:
    from fastapi import FastAPI, Form, HTTPException
    from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    shop = shop or get_shop(data, num_products=num_products, seed=seed, goals=goals)
    jinja = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html"]))
    template = jinja.get_template("page.html")
    sessions = SessionTable(max_sessions, max_sessions_per_client, session_idle_s)
    lock = threading.Lock()
    app = FastAPI(title="WebShop", docs_url=None, redoc_url=None)
    app.state.shop = shop
    app.state.sessions = sessions

    def visit_for(sid: str, request: Request, *, restart: bool = False) -> Visit:
        with lock:
            visit = sessions.get(sid)
            if visit is None or restart:
                try:
                    goal = goal_for(shop, sid)
                except KeyError as error:
                    raise HTTPException(404, str(error)) from None
                visited = visit.session.visited if visit is not None and not restart else set()
                long_queries = visit.long_queries if visit is not None else OrderedDict()
                visit = Visit(Session(shop, goal, visited=visited), request.client.host if request.client else "?",
                              long_queries)
                try:
                    sessions.put(sid, visit)
                except SessionsFull as full:
                    raise HTTPException(full.status, str(full),
                                        headers={"Retry-After": str(math.ceil(full.retry_after_s))}) from None
            return visit

    def page(visit: Visit, sid: str) -> HTMLResponse:
        session = visit.session
        html = template.render(nodes=session.nodes(), hrefs=hrefs(visit, sid), page=session.page,
                               done=session.done, reward=session.reward, keywords=" ".join(session.keywords),
                               search_url=f"/{_q(sid)}")
        return HTMLResponse(html)

    def to_results(visit: Visit, keywords: str, page_num: int) -> None:
        session = visit.session
        words = query_words(visit.keywords_of(keywords).lower().split(" "))
        if session.page == "start" or session.keywords != words or session.done:
            if session.done:
                session.done, session.reward, session.reward_info = False, 0.0, None
            session.search(words)
        session.page, session.asin, session.sub_page, session.options = "results", None, None, {}
        session.page_num = page_num

    def to_item(visit: Visit, asin: str, keywords: str, page_num: int, options: str) -> None:
        if asin not in shop.products:
            raise HTTPException(404, "unknown product")
        to_results(visit, keywords, page_num)
        session = visit.session
        session.page, session.asin = "item", asin
        groups = session.option_groups()
        session.options = {g: v for g, v in _parse_options(options).items() if groups.get(v) == g}
        session.visited.add(asin)

    @app.get("/", response_class=HTMLResponse)
    def root() -> Any:
        return RedirectResponse(f"/{uuid.uuid4().hex}", status_code=303)

    @app.get("/api/{sid}/state")
    def state(sid: str, request: Request) -> Any:
        if not state_api:
            raise HTTPException(404, "the state API is off (it reveals the goal); serve with --state-api")
        s = visit_for(sid, request).session
        return JSONResponse({"page": s.page, "done": s.done, "reward": s.reward, "asin": s.asin,
                             "options": s.options, "clickables": s.clickables(), "goal": s.goal["instruction_text"],
                             "reward_info": s.reward_info})

    @app.get("/{sid}", response_class=HTMLResponse)
    def index(sid: str, request: Request) -> Any:
        """The search page: a new episode for a new or finished session, else "back to search"."""
        visit = visit_for(sid, request)
        if visit.session.done:
            visit = visit_for(sid, request, restart=True)
        session = visit.session
        session.page, session.asin, session.sub_page, session.options = "start", None, None, {}
        return page(visit, sid)

    @app.post("/{sid}")
    def search(sid: str, request: Request, search_query: str = Form("")) -> Any:
        visit = visit_for(sid, request)
        keywords = search_query.lower().strip()
        return RedirectResponse(f"/search_results/{_q(sid)}/{visit.keyword_part(keywords)}/1", status_code=303)

    @app.get("/search_results/{sid}/{keywords:path}/{page_num}", response_class=HTMLResponse)
    def results(sid: str, keywords: str, page_num: int, request: Request) -> Any:
        visit = visit_for(sid, request)
        to_results(visit, keywords, page_num)
        return page(visit, sid)

    @app.get("/item_page/{sid}/{asin}/{keywords:path}/{page_num}/{options}", response_class=HTMLResponse)
    def item(sid: str, asin: str, keywords: str, page_num: int, options: str, request: Request) -> Any:
        visit = visit_for(sid, request)
        to_item(visit, asin, keywords, page_num, options)
        return page(visit, sid)

    @app.get("/item_sub_page/{sid}/{asin}/{keywords:path}/{page_num}/{sub_page}/{options}", response_class=HTMLResponse)
    def sub(sid: str, asin: str, keywords: str, page_num: int, sub_page: str, options: str, request: Request) -> Any:
        if sub_page not in SUB_PAGES:
            raise HTTPException(404, "unknown sub-page")
        visit = visit_for(sid, request)
        to_item(visit, asin, keywords, page_num, options)
        visit.session.page, visit.session.sub_page = "sub", sub_page
        return page(visit, sid)

    @app.get("/done/{sid}/{asin}/{options}", response_class=HTMLResponse)
    def done(sid: str, asin: str, options: str, request: Request) -> Any:
        visit = visit_for(sid, request)
        session = visit.session
        if session.done:
            return page(visit, sid)
        if asin not in shop.products:
            raise HTTPException(404, "unknown product")
        session.asin = asin
        groups = session.option_groups()
        session.options = {g: v for g, v in _parse_options(options).items() if groups.get(v) == g}
        session.buy()
        return page(visit, sid)

    # A search form is a few hundred bytes; a megabyte bounds what one request can make us hold.
    return guard(app, max_body_bytes=MAX_BODY_BYTES)
