"""WebShop (``webshop``, ``webshop-browser``): the upstream shop protocol on a SynShop catalogue.

Importing this package is cheap; the catalogue and index load on the first env.
"""

from __future__ import annotations


def register_envs() -> None:
    """Entry point of the ``seed_gym.envs`` group: registers ``webshop`` and ``webshop-browser``."""
    from seed_gym.registry import register

    register("webshop", "seed_gym.envs.webshop.env:WebShopEnv", gym_id="seed_gym/WebShop-v0",
             description="WebShop text env (upstream pages, reward and action grammar; SynShop catalogue)")
    register("webshop-browser", "seed_gym.envs.webshop.browser:WebShopBrowserEnv",
             gym_id="seed_gym/WebShopBrowser-v0",
             description="WebShop through the web server in headless Chromium (selenium)")
