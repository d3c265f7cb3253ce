"""Numbers papers report on WebShop (``EnvProfile.reported``; rules in
:mod:`seed_gym.leaderboards.reference`): the fixed ``test`` list, score % then success %.
"""

from __future__ import annotations

from seed_gym.leaderboards.reference import SOURCES, ReferenceRow, table_rows

SEED, SDAR, OPID = SOURCES["SEED"], SOURCES["SDAR"], SOURCES["OPID"]
SCORE_AND_SUCCESS = ("mean_score", "success_rate")


def _main_tables() -> list[ReferenceRow]:
    """The WebShop columns of the main tables (score %, success %)."""
    return [
        *table_rows("webshop", "test", f"{SEED} main table", [
            ("Vanilla", "Qwen2.5-3B", "[U]", 6.7, 0.8), ("Skill-Prompt*", "Qwen2.5-3B", "[U]", 0.2, 0.8),
            ("GRPO", "Qwen2.5-3B", "[P]", 79.8, 63.3), ("Skill-GRPO*", "Qwen2.5-3B", "[P]", 76.3, 66.4),
            ("GRPO+OPSD", "Qwen2.5-3B", "[P]", 77.8, 66.4), ("SDAR", "Qwen2.5-3B", "[P]", 85.0, 68.0),
            ("SEED", "Qwen2.5-3B", "[P]", 88.5, 78.9),
        ], metrics=SCORE_AND_SUCCESS),
        *table_rows("webshop", "test", f"{SDAR} Table 1", [
            ("Vanilla", "Qwen2.5-7B", "[U]", 5.9, 1.6), ("OPSD only", "Qwen2.5-7B", "[U]", 4.5, 2.3),
            ("GRPO", "Qwen2.5-7B", "[P]", 80.9, 72.6), ("Skill-GRPO", "Qwen2.5-7B", "[P]", 80.4, 71.9),
            ("GRPO+OPSD", "Qwen2.5-7B", "[U]", 86.8, 76.5), ("Skill-SD", "Qwen2.5-7B", "[U]", 86.1, 76.5),
            ("RLSD", "Qwen2.5-7B", "[P]", 87.4, 77.3), ("SDAR", "Qwen2.5-7B", "[P]", 89.4, 82.8),
        ], metrics=SCORE_AND_SUCCESS),
        *table_rows("webshop", "test", f"{SEED} main table", [
            ("SEED", "Qwen2.5-7B", "[P]", 89.7, 78.1), ("GRPO", "Qwen3-1.7B", "[P]", 67.3, 38.3),
            ("SEED", "Qwen3-1.7B", "[P]", 87.1, 77.3),
        ], metrics=SCORE_AND_SUCCESS),
    ]


def _other_papers() -> list[ReferenceRow]:
    """GiGPO (success only), SkillRL and OPID (section 12.8)."""
    return [
        *table_rows("webshop", "test", f"{SOURCES['GiGPO']} Table 1", [
            ("GRPO", "Qwen2.5-1.5B", "[P]", 56.8), ("GiGPO w/ std", "Qwen2.5-1.5B", "[P]", 65.0),
            ("GiGPO w/o std", "Qwen2.5-1.5B", "[P]", 67.4), ("GRPO", "Qwen2.5-7B", "[P]", 66.1),
            ("GiGPO w/ std", "Qwen2.5-7B", "[P]", 72.8), ("GiGPO w/o std", "Qwen2.5-7B", "[P]", 75.2),
        ], setting="3-seed mean"),
        *table_rows("webshop", "test", SOURCES["SkillRL"], [("SkillRL", "Qwen2.5-7B", "[P]", 85.2, 72.7)],
                    metrics=SCORE_AND_SUCCESS),
        *table_rows("webshop", "test", OPID, [
            ("OPID", "Qwen2.5-3B", "[U]", 85.0, 74.2), ("OPID", "Qwen2.5-7B", "[U]", 85.3, 79.7),
            ("OPID", "Qwen3-1.7B", "[U]", 79.6, 64.8),
        ], metrics=SCORE_AND_SUCCESS),
    ]


ROWS: tuple[ReferenceRow, ...] = (*_main_tables(), *_other_papers())
