"""``webshop-browser``: WebShop episodes driven through the web server in headless Chromium (selenium).

The env starts the app (:mod:`seed_gym.envs.webshop.server`) once per process on 127.0.0.1 and a
free port, in a uvicorn thread, and one Chromium per env. Each episode is a fresh session
``/<task id>-<random tag>``.

* Observation: the page's ``.ws-node`` strings in document order, read from the live DOM and
  rendered exactly as the text env renders its nodes (``text`` or ``text_rich``), so the same
  actions give the same observations and rewards as ``webshop``.
* ``search[kw]``: typed into the search box and submitted on the search page; on other pages
  (upstream accepts search anywhere) the browser goes to the results URL.
* ``click[x]``: a real click on the element whose ``data-click`` is x; x must be one of the
  page's clickables (not ``search``). Anything else is a no-op with the page unchanged.
* Reward: the done page's ``data-reward``. Expert actions come from the server-side session.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
import uuid
from typing import Any, ClassVar
from urllib.parse import quote

from seed_gym.core import MissingDataError, StepOutcome, TaskInfo
from seed_gym.envs.webshop.env import WebShopBase, expert_action
from seed_gym.envs.webshop.pages import Node, parse_action, query_words, render_nodes

CHROME_FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                "--no-first-run")
CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
_READ_NODES = """
return Array.from(document.querySelectorAll('.ws-node')).map(e => [e.textContent,
  e.getAttribute('data-click'), e.getAttribute('data-clicked') === 'true', e.getAttribute('data-kind') || 'text']);
"""
_SERVERS: dict[int, tuple[Any, str]] = {}
_SERVERS_LOCK = threading.Lock()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(app: Any, port: int | None = None, **limits: Any) -> tuple[Any, str]:
    """Run ``app`` with uvicorn in a daemon thread on 127.0.0.1 (the shared connection limits of
    :func:`seed_gym.serving.server_config`); returns (server, base URL)."""
    from seed_gym.serving import serve_in_thread

    return serve_in_thread(app, port=port or 0, **limits)


def shared_server(shop: Any) -> tuple[Any, str]:
    """One app server per shop per process."""
    from seed_gym.envs.webshop.server import create_app

    with _SERVERS_LOCK:
        if id(shop) not in _SERVERS:
            app = create_app(shop=shop)
            _SERVERS[id(shop)] = (app, start_server(app)[1])
        return _SERVERS[id(shop)]


def make_driver() -> Any:
    """Headless Chromium with a fresh profile (Debian chromium + chromium-driver)."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as error:
        raise MissingDataError("webshop-browser needs selenium: pip install 'seed-gym[browser]'") from error
    if not (shutil.which("chromium") or shutil.which(CHROMIUM)):
        raise MissingDataError("webshop-browser needs Chromium: apt-get install chromium chromium-driver")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or CHROMIUM
    profile = tempfile.mkdtemp(prefix="seed-gym-chromium-")
    for flag in (*CHROME_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or CHROMEDRIVER), options=options)
    driver._seed_gym_profile = profile  # removed on close
    return driver


class WebShopBrowserEnv(WebShopBase):
    """Same constructor arguments as ``webshop`` (see :class:`~seed_gym.envs.webshop.env.WebShopBase`)."""

    env_id: ClassVar[str] = "webshop-browser"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.driver: Any = None
        self.sid = ""
        self._clicked_option: str | None = None

    # -- browser ---------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return shared_server(self.shop)[1]

    @property
    def visit(self) -> Any:
        """The server's record of this env's session (:class:`~seed_gym.envs.webshop.server.Visit`)."""
        return shared_server(self.shop)[0].state.sessions[self.sid]

    @property
    def session(self) -> Any:
        return self.visit.session

    def _nodes(self) -> list[Node]:
        return [Node(t, c, bool(k), kind) for t, c, k, kind in self.driver.execute_script(_READ_NODES)]

    def _body(self, name: str) -> str:
        return str(self.driver.find_element("tag name", "body").get_attribute(name) or "")

    def observe(self) -> str:
        return render_nodes(self._nodes(), self.observation_mode, self._clicked_option)

    def _clickables(self) -> list[str]:
        return [n.click for n in self._nodes() if n.click]

    # -- episode ---------------------------------------------------------------------------
    def _reset(self, task_id: str, seed: int) -> tuple[str, TaskInfo]:
        _, task = self._start(task_id)
        if self.driver is None:
            self.driver = make_driver()
        self.sid = f"{task_id}-{uuid.uuid4().hex[:12]}"
        self.driver.get(f"{self.base_url}/{quote(self.sid)}")
        self._clicked_option = None
        return self.observe(), task

    def _click_and_wait(self, element: Any) -> None:
        """Click an element that navigates, and wait until the next page has replaced this one."""
        from selenium.webdriver.support import expected_conditions
        from selenium.webdriver.support.ui import WebDriverWait

        from selenium.common.exceptions import WebDriverException

        old = self.driver.find_element("tag name", "html")
        element.click()

        def replaced(_: Any) -> bool:
            # Chromium reports a node of the unloaded page either as stale or, mid-navigation,
            # as "Node with given id does not belong to the document": both mean it is gone.
            try:
                return bool(expected_conditions.staleness_of(old)(self.driver))
            except WebDriverException:
                return True

        WebDriverWait(self.driver, 60).until(replaced)
        WebDriverWait(self.driver, 60).until(
            lambda d: d.execute_script("return document.readyState") == "complete")

    def _search(self, keywords: str) -> None:
        # Typed as the text env searches: cut to the query cap. A megabyte typed whole would post a
        # form over the server's body cap (a 413 page, not the results the text env shows).
        keywords = " ".join(query_words(keywords.split(" ")))
        boxes = self.driver.find_elements("id", "search_input")
        if boxes:
            self.driver.execute_script("arguments[0].value = arguments[1];", boxes[0], keywords)
            self._click_and_wait(self.driver.find_element("css selector", "button[data-click='search']"))
        else:
            self.driver.get(f"{self.base_url}/search_results/{quote(self.sid)}/"
                            f"{self.visit.keyword_part(keywords.strip())}/1")

    def _step(self, action: str) -> StepOutcome:
        parsed = parse_action(action)
        if self._body("data-done") == "true" or parsed is None:
            return StepOutcome(self.observe(), invalid_action=True)
        name, arg = parsed
        if name == "search":
            self._search(arg)
            self._clicked_option = None
            return StepOutcome(self.observe())
        if name != "click" or arg == "search" or arg not in self._clickables():
            return StepOutcome(self.observe(), invalid_action=True)
        kind = next(n.kind for n in self._nodes() if n.click == arg)
        target = next(e for e in self.driver.find_elements("css selector", "[data-click]")
                      if e.get_attribute("data-click") == arg)
        self._click_and_wait(target)
        self._clicked_option = arg if kind == "option" else None
        if self._body("data-done") == "true":
            reward = float(self._body("data-reward"))
            return StepOutcome(self.observe(), reward=reward, terminated=True,
                               extra_info={"reward_info": self.session.reward_info})
        return StepOutcome(self.observe())

    def _won(self) -> bool:
        return bool(self.driver) and self._score() == 1.0

    def _score(self) -> float:
        if self.driver is None or self._body("data-done") != "true":
            return 0.0
        return float(self._body("data-reward"))

    def _admissible_actions(self) -> list[str]:
        clicks = self._clickables()
        actions = [f"click[{c}]" for c in clicks if c != "search"]
        if "search" in clicks:
            actions.insert(0, f"search[{self.session.instruction.lower()}]")
        return actions

    def _expert_action(self) -> str | None:
        if not self.expert:
            return None
        return expert_action(self.session, self._expert_keywords, self._expert_target(self.session))

    def close(self) -> None:
        if self.driver is not None:
            profile = getattr(self.driver, "_seed_gym_profile", None)
            try:
                self.driver.quit()
            finally:
                self.driver = None
                if profile:
                    shutil.rmtree(profile, ignore_errors=True)
