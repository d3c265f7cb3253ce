"""WebShop (``webshop``, ``webshop-browser``): the upstream shop protocol on a SynShop catalogue.

Importing this package is cheap; the catalogue and index load on the first env.
"""

from __future__ import annotations

from pathlib import Path

from seed_gym.profile import EnvProfile

#: One profile for both ids: the browser env is the same benchmark behind Chromium. seed-method.md
#: §9 (15 steps, 16 tasks) and §3 (R = 10 iff the shop reward is 1, 0.1 per invalid step).
PROFILE = EnvProfile(
    prompt_template=Path(__file__).parent / "prompts" / "webshop-verl-agent.toml",
    prompt_views={"webshop-verl-agent": "seed_gym.envs.webshop.verl_agent:view"},
    rl_max_steps=15, rl_tasks=16, reward_scale=10.0, invalid_penalty=0.1,
    rule="seed_gym.envs.webshop.rule:webshop_rule",
    skill_bank="seed_gym.envs.webshop.skills:SKILL_BANK",
    corpus="seed_gym.envs.webshop.corpus:sample_texts",
    reported="seed_gym.envs.webshop.reported:ROWS",
    checks="seed_gym.envs.webshop.doctor:checks",
)


def register_envs() -> None:
    """Entry point of the ``seed_gym.envs`` group: registers ``webshop`` and ``webshop-browser``."""
    from seed_gym.registry import register

    register("webshop", "seed_gym.envs.webshop.env:WebShopEnv", gym_id="seed_gym/WebShop-v0",
             description="WebShop text env (upstream pages, reward and action grammar; SynShop catalogue)",
             profile=PROFILE)
    register("webshop-browser", "seed_gym.envs.webshop.browser:WebShopBrowserEnv",
             gym_id="seed_gym/WebShopBrowser-v0",
             description="WebShop through the web server in headless Chromium (selenium)", profile=PROFILE)
