"""Numbers papers report on ALFWorld (``EnvProfile.reported``; rules in
:mod:`seed_gym.leaderboards.reference`).

Splits: the main tables evaluate on ``valid_seen`` (our ``seen``), SEED's Table 7 on
``valid_unseen`` (``unseen``). Per-family rows give the papers' task-type columns in the order of
the profile's ``family_columns`` (Pick, Look, Clean, Heat, Cool, Pick2).
"""

from __future__ import annotations

from seed_gym.envs.alfworld import PROFILE
from seed_gym.leaderboards.reference import SOURCES, ReferenceRow, family_values, table_rows

SEED, SDAR, GIGPO, OPID = SOURCES["SEED"], SOURCES["SDAR"], SOURCES["GiGPO"], SOURCES["OPID"]
OPID_CARD = f"OPID-ALFWorld-1.7B model card ({OPID})"


def _main_tables() -> list[ReferenceRow]:
    """The ALFWorld column of the main tables (success %)."""
    return [
        *table_rows("alfworld", "seen", f"{SEED} main table", [
            ("Vanilla", "Qwen2.5-3B", "[U]", 21.9), ("Skill-Prompt*", "Qwen2.5-3B", "[U]", 28.9),
            ("GRPO", "Qwen2.5-3B", "[P]", 75.0), ("Skill-GRPO*", "Qwen2.5-3B", "[P]", 80.5),
            ("GRPO+OPSD", "Qwen2.5-3B", "[P]", 81.2), ("SDAR", "Qwen2.5-3B", "[P]", 84.4),
            ("SEED", "Qwen2.5-3B", "[P]", 91.8),
        ]),
        *table_rows("alfworld", "seen", f"{SDAR} Table 1", [
            ("Vanilla", "Qwen2.5-7B", "[U]", 12.5), ("OPSD only", "Qwen2.5-7B", "[U]", 32.8),
            ("GRPO", "Qwen2.5-7B", "[P]", 81.2), ("Skill-GRPO", "Qwen2.5-7B", "[P]", 69.5),
            ("GRPO+OPSD", "Qwen2.5-7B", "[U]", 80.4), ("Skill-SD", "Qwen2.5-7B", "[U]", 85.1),
            ("RLSD", "Qwen2.5-7B", "[P]", 82.0), ("SDAR", "Qwen2.5-7B", "[P]", 85.9),
        ]),
        *table_rows("alfworld", "seen", f"{SEED} main table", [
            ("SEED", "Qwen2.5-7B", "[P]", 96.1), ("GRPO", "Qwen3-1.7B", "[P]", 46.1),
            ("SEED", "Qwen3-1.7B", "[P]", 92.0),
        ]),
    ]


def _family_rows() -> list[ReferenceRow]:
    """Section 12.4 (seen) and 12.7 (unseen): rows with per-family success."""
    def row(split: str, method: str, backbone: str, families: tuple[float | None, ...], avg: float,
            source: str, tag: str) -> ReferenceRow:
        return ReferenceRow("alfworld", split, method, backbone, {"success_rate": avg}, source, tag,
                            families=family_values(PROFILE.family_columns, families))

    rows = [
        row("seen", "SEED", "Qwen2.5-3B", (100.0, 100.0, 100.0, 100.0, 70.6, 80.0), 91.8,
            f"{SEED} Table 2", "[P]"),
        row("seen", "SEED", "Qwen2.5-7B", (100, 100, 96.3, 80.0, 100, 100), 96.1, SEED, "[U]"),
    ]
    for method, families, avg in [
        ("Vanilla", (25.0, 22.2, 3.1, 0.0, 21.4, 4.2), 12.5),
        ("Skill-Prompt*", (10.3, 50.0, 16.1, 0.0, 0.0, 5.0), 9.4),
        ("OPSD", (26.3, 33.3, 9.1, 0.0, 4.5, 5.3), 14.1),
        ("GRPO", (71.1, 41.7, 36.4, 40.0, 31.8, 31.6), 46.1),
        ("Skill-GRPO", (27.6, 54.5, 22.7, 27.3, 0.0, 19.2), 21.1),
        ("Skill-GRPO*", (31.4, 42.9, 51.9, 8.3, 11.5, 7.1), 28.1),
        ("GRPO+OPSD", (38.2, 50.0, 30.8, 28.6, 30.0, 21.1), 32.0),
        ("Skill-SD", (52.9, 37.5, 69.2, 42.9, 60.0, 36.8), 52.3),
        ("RLSD", (50.0, 37.5, 61.5, 19.0, 50.0, 21.1), 42.2),
    ]:
        rows.append(row("seen", method, "Qwen3-1.7B", families, avg, OPID_CARD, "[A]"))
    rows.append(row("seen", "SDAR", "Qwen3-1.7B", (73.5, 25.0, 76.9, 33.3, None, None), 53.9, OPID_CARD,
                    "[A]; Cool, Pick2 and Avg [U]"))
    for method, families, avg in [
        ("ReAct", (17.4, 6.7, 8.8, 7.4, 9.1, 0.0), 8.2),
        ("GRPO", (73.9, 60.0, 82.4, 59.3, 72.7, 76.9), 70.9),
        ("SEED", (90.4, 78.3, 79.5, 94.3, 86.2, 88.2), 86.2),
    ]:
        rows.append(row("unseen", method, "Qwen2.5-3B", families, avg, f"{SEED} Table 7", "[P]"))
    return rows


def _other_papers() -> list[ReferenceRow]:
    """GiGPO, SkillRL and OPID aggregate numbers (section 12.8) and a third-party reproduction."""
    return [
        *table_rows("alfworld", "seen", f"{GIGPO} Table 1", [
            ("GRPO", "Qwen2.5-1.5B", "[P]", 72.8), ("GiGPO w/ std", "Qwen2.5-1.5B", "[P]", 86.7),
            ("GiGPO w/o std", "Qwen2.5-1.5B", "[P]", 86.1), ("GRPO", "Qwen2.5-7B", "[P]", 77.6),
            ("GiGPO w/ std", "Qwen2.5-7B", "[P]", 90.8), ("GiGPO w/o std", "Qwen2.5-7B", "[P]", 90.2),
        ], setting="50 ALFWorld steps; 3-seed mean"),
        *table_rows("alfworld", "seen", SOURCES["SkillRL"], [("SkillRL", "Qwen2.5-7B", "[P]", 89.9)]),
        *table_rows("alfworld", "seen", OPID, [
            ("OPID", "Qwen2.5-3B", "[U]", 84.3), ("OPID", "Qwen2.5-7B", "[U]", 90.0),
            ("OPID", "Qwen3-1.7B", "[U]", 58.9),
        ]),
        *table_rows("alfworld", "unseen", OPID, [("OPID", "Qwen2.5-3B", "[U]", 78.6)]),
        *table_rows("alfworld", "seen", "REPRO (alphaXiv reproduction report)",
                    [("Seed-AlfWorld-3B (released)", "Qwen2.5-3B", "[T]", 89.3)],
                    setting="official evaluator, category macro"),
    ]


ROWS: tuple[ReferenceRow, ...] = (*_main_tables(), *_family_rows(), *_other_papers())
