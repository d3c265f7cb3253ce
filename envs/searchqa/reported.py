"""Numbers papers report on Search-QA (``EnvProfile.reported``; rules in
:mod:`seed_gym.leaderboards.reference`): the fixed ``test`` list, exact match (EM) as success %.
"""

from __future__ import annotations

from seed_gym.leaderboards.reference import SOURCES, ReferenceRow, table_rows

SEED, SDAR, GIGPO, OPID = SOURCES["SEED"], SOURCES["SDAR"], SOURCES["GiGPO"], SOURCES["OPID"]
SEVEN_SETS = "EM, macro average of 7 sets"


def _main_tables() -> list[ReferenceRow]:
    """The Search column of the main tables."""
    return [
        *table_rows("searchqa", "test", f"{SEED} main table", [
            ("Vanilla", "Qwen2.5-3B", "[U]", 31.7), ("Skill-Prompt*", "Qwen2.5-3B", "[U]", 23.9),
            ("GRPO", "Qwen2.5-3B", "[P]", 36.4), ("Skill-GRPO*", "Qwen2.5-3B", "[P]", 36.1),
            ("GRPO+OPSD", "Qwen2.5-3B", "[P]", 44.6), ("SDAR", "Qwen2.5-3B", "[P]", 43.4),
            ("SEED", "Qwen2.5-3B", "[P]", 45.7),
        ], setting=SEVEN_SETS),
        *table_rows("searchqa", "test", f"{SDAR} Table 1", [
            ("Vanilla", "Qwen2.5-7B", "[U]", 33.9), ("OPSD only", "Qwen2.5-7B", "[U]", 6.2),
            ("GRPO", "Qwen2.5-7B", "[P]", 42.0), ("Skill-GRPO", "Qwen2.5-7B", "[P]", 40.3),
            ("GRPO+OPSD", "Qwen2.5-7B", "[U]", 47.0), ("Skill-SD", "Qwen2.5-7B", "[U]", 47.8),
            ("RLSD", "Qwen2.5-7B", "[P]", 49.0), ("SDAR", "Qwen2.5-7B", "[P]", 49.0),
        ], setting=SEVEN_SETS),
        *table_rows("searchqa", "test", f"{SEED} main table", [
            ("SEED", "Qwen2.5-7B", "[P]", 48.6), ("GRPO", "Qwen3-1.7B", "[P]", 40.8),
            ("SEED", "Qwen3-1.7B", "[P]", 42.2),
        ], setting=SEVEN_SETS),
    ]


def _other_papers() -> list[ReferenceRow]:
    """GiGPO (with its Search-R1 baseline), SkillRL and OPID (section 12.8)."""
    return [
        *table_rows("searchqa", "test", GIGPO, [
            ("GiGPO", "Qwen2.5-3B", "[P]", 42.1), ("GiGPO", "Qwen2.5-7B", "[P]", 47.2),
            ("Search-R1", "Qwen2.5-3B", "[P]", 32.5), ("Search-R1", "Qwen2.5-7B", "[P]", 38.5),
        ], setting="EM, macro average"),
        *table_rows("searchqa", "test", SOURCES["SkillRL"], [("SkillRL", "Qwen2.5-7B", "[P]", 47.1)],
                    setting=SEVEN_SETS),
        *table_rows("searchqa", "test", OPID, [
            ("OPID", "Qwen2.5-3B", "[U]", 45.0), ("OPID", "Qwen2.5-7B", "[U]", 49.2),
            ("OPID", "Qwen3-1.7B", "[U]", 40.4),
        ], setting=SEVEN_SETS),
    ]


ROWS: tuple[ReferenceRow, ...] = (*_main_tables(), *_other_papers())
