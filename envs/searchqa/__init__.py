"""Search-QA under the Search-R1 protocol, on a generated SynWiki world or real Search-R1 data.

Importing this package is cheap; data, indexes and servers load when first used.
"""

from __future__ import annotations

from pathlib import Path

from seed_gym.profile import EnvProfile

#: No step cap of our own: the env keeps Search-R1's budget (4 generations that may search, then an
#: answer-only one). 128 tasks per update (seed-method.md §9); R = EM, 0.01 per invalid step (§3).
PROFILE = EnvProfile(
    prompt_template=Path(__file__).parent / "prompts" / "searchqa.toml",
    response_parsers={"search-r1": "seed_gym.envs.searchqa.parsing:SEARCH_R1"},
    rl_max_steps=None, rl_tasks=128, reward_scale=1.0, invalid_penalty=0.01,
    rule="seed_gym.envs.searchqa.rule:searchqa_rule",
    skill_bank="seed_gym.envs.searchqa.skills:SKILL_BANK",
    corpus="seed_gym.envs.searchqa.corpus:sample_texts",
    reported="seed_gym.envs.searchqa.reported:ROWS",
)


def register_envs() -> None:
    """Entry point of the ``seed_gym.envs`` group: registers ``searchqa`` and ``closed-book``."""
    from seed_gym.agent import register_agent_kind
    from seed_gym.registry import register

    register("searchqa", "seed_gym.envs.searchqa.env:SearchQAEnv", gym_id="seed_gym/SearchQA-v0",
             description="Search-augmented QA (Search-R1 protocol) over a generated multi-hop wiki world",
             profile=PROFILE)
    register_agent_kind("closed-book", "seed_gym.envs.searchqa.agents:ClosedBookAgent")
