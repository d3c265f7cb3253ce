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
env's; Jinja2 autoescaping escapes whatever users type (HTML/JS is shown, never run). Sessions live
in memory, at most ``max_sessions`` (oldest dropped first).
"""

from __future__ import annotations

import json
import random
import threading
import uuid
import zlib
from collections import OrderedDict
from pathlib import Path
from typing import Any
from urllib.parse import quote

from seed_gym.envs.webshop.pages import SUB_PAGES, Session
from seed_gym.envs.webshop.shop import Shop, get_shop
from seed_gym.serving import guard

TEMPLATES = Path(__file__).with_name("templates")
MAX_BODY_BYTES = 2**20
#: Keywords longer than this travel in URLs as ``~k<crc>`` and are kept server-side (URLs stay short).
MAX_URL_KEYWORDS = 1000
_LONG_KEYWORDS: dict[str, str] = {}
_LONG_LOCK = threading.Lock()


def keyword_part(keywords: str) -> str:
    """The URL segment for keywords: quoted, or a token for over-long ones."""
    if len(keywords) <= MAX_URL_KEYWORDS:
        return _q(keywords)
    token = f"~k{zlib.crc32(keywords.encode()):08x}{len(keywords):x}"
    with _LONG_LOCK:
        if len(_LONG_KEYWORDS) > 1000:
            _LONG_KEYWORDS.clear()
        _LONG_KEYWORDS[token] = keywords
    return token


def keywords_of(part: str) -> str:
    with _LONG_LOCK:
        return _LONG_KEYWORDS.get(part, part)


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


def hrefs(session: Session, sid: str) -> dict[str, str]:
    """The URL each current clickable leads to."""
    kw = keyword_part(" ".join(session.keywords) or " ")
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
               max_sessions: int = 10_000, shop: Shop | None = None, state_api: bool = False) -> Any:
    from fastapi import FastAPI, Form, HTTPException, Request
    from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    shop = shop or get_shop(data, num_products=num_products, seed=seed, goals=goals)
    jinja = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=select_autoescape(["html"]))
    template = jinja.get_template("page.html")
    sessions: OrderedDict[str, Session] = OrderedDict()
    lock = threading.Lock()
    app = FastAPI(title="WebShop", docs_url=None, redoc_url=None)
    app.state.shop = shop
    app.state.sessions = sessions

    def session_for(sid: str, *, restart: bool = False) -> Session:
        with lock:
            session = sessions.get(sid)
            if session is None or restart:
                try:
                    goal = goal_for(shop, sid)
                except KeyError as error:
                    raise HTTPException(404, str(error)) from None
                visited = session.visited if session is not None and not restart else set()
                session = Session(shop, goal, visited=visited)
                sessions[sid] = session
            sessions.move_to_end(sid)
            while len(sessions) > max_sessions:
                sessions.popitem(last=False)
            return session

    def page(session: Session, sid: str) -> HTMLResponse:
        html = template.render(nodes=session.nodes(), hrefs=hrefs(session, sid), page=session.page,
                               done=session.done, reward=session.reward, keywords=" ".join(session.keywords),
                               search_url=f"/{_q(sid)}")
        return HTMLResponse(html)

    def to_results(session: Session, keywords: str, page_num: int) -> None:
        words = keywords_of(keywords).lower().split(" ")
        if session.page == "start" or session.keywords != words or session.done:
            if session.done:
                session.done, session.reward, session.reward_info = False, 0.0, None
            session.search(words)
        session.page, session.asin, session.sub_page, session.options = "results", None, None, {}
        session.page_num = page_num

    def to_item(session: Session, asin: str, keywords: str, page_num: int, options: str) -> None:
        if asin not in shop.products:
            raise HTTPException(404, "unknown product")
        to_results(session, keywords, page_num)
        session.page, session.asin = "item", asin
        groups = session.option_groups()
        session.options = {g: v for g, v in _parse_options(options).items() if groups.get(v) == g}
        session.visited.add(asin)

    @app.get("/", response_class=HTMLResponse)
    def root() -> Any:
        return RedirectResponse(f"/{uuid.uuid4().hex}", status_code=303)

    @app.get("/api/{sid}/state")
    def state(sid: str) -> Any:
        if not state_api:
            raise HTTPException(404, "the state API is off (it reveals the goal); serve with --state-api")
        s = session_for(sid)
        return JSONResponse({"page": s.page, "done": s.done, "reward": s.reward, "asin": s.asin,
                             "options": s.options, "clickables": s.clickables(), "goal": s.goal["instruction_text"],
                             "reward_info": s.reward_info})

    @app.get("/{sid}", response_class=HTMLResponse)
    def index(sid: str) -> Any:
        """The search page: a new episode for a new or finished session, else "back to search"."""
        session = session_for(sid)
        if session.done:
            session = session_for(sid, restart=True)
        session.page, session.asin, session.sub_page, session.options = "start", None, None, {}
        return page(session, sid)

    @app.post("/{sid}")
    def search(sid: str, search_query: str = Form("")) -> Any:
        session_for(sid)
        keywords = search_query.lower().strip() or " "
        return RedirectResponse(f"/search_results/{_q(sid)}/{keyword_part(keywords)}/1", status_code=303)

    @app.get("/search_results/{sid}/{keywords:path}/{page_num}", response_class=HTMLResponse)
    def results(sid: str, keywords: str, page_num: int) -> Any:
        session = session_for(sid)
        to_results(session, keywords, page_num)
        return page(session, sid)

    @app.get("/item_page/{sid}/{asin}/{keywords:path}/{page_num}/{options}", response_class=HTMLResponse)
    def item(sid: str, asin: str, keywords: str, page_num: int, options: str) -> Any:
        session = session_for(sid)
        to_item(session, asin, keywords, page_num, options)
        return page(session, sid)

    @app.get("/item_sub_page/{sid}/{asin}/{keywords:path}/{page_num}/{sub_page}/{options}", response_class=HTMLResponse)
    def sub(sid: str, asin: str, keywords: str, page_num: int, sub_page: str, options: str) -> Any:
        if sub_page not in SUB_PAGES:
            raise HTTPException(404, "unknown sub-page")
        session = session_for(sid)
        to_item(session, asin, keywords, page_num, options)
        session.page, session.sub_page = "sub", sub_page
        return page(session, sid)

    @app.get("/done/{sid}/{asin}/{options}", response_class=HTMLResponse)
    def done(sid: str, asin: str, options: str) -> Any:
        session = session_for(sid)
        if session.done:
            return page(session, sid)
        if asin not in shop.products:
            raise HTTPException(404, "unknown product")
        session.asin = asin
        groups = session.option_groups()
        session.options = {g: v for g, v in _parse_options(options).items() if groups.get(v) == g}
        session.buy()
        return page(session, sid)

    # A search form is a few hundred bytes; a megabyte bounds what one request can make us hold.
    return guard(app, max_body_bytes=MAX_BODY_BYTES)
