"""Reference rows: numbers reported in papers, never measured here.

Rules:

* Every row is labelled ``reported`` and carries its source (paper + table) and the status tag of
  ``shared/docs/seed-method.md`` section 12: [P] paper number seen in >= 2 write-ups, [U] unverified,
  [A] stated by the authors (abstract/README/card), [T] third-party reproduction.
* Values are percentages as printed in the source (0-100), not fractions; measured rows use
  fractions. Renderers put reported rows in their own tables, never in a measured board.
* ``split`` is the split the paper evaluated on, named as our envs name it: ALFWorld main tables are
  ``valid_seen`` (``seen``), Table 7 is ``valid_unseen`` (``unseen``); WebShop and Search use their
  fixed ``test`` lists. ``setting`` notes what differs from our defaults (e.g. GiGPO's 50 steps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

#: ALFWorld family columns of the papers -> our family names (the task types in the records).
ALFWORLD_FAMILIES = {
    "Pick": "pick_and_place_simple", "Look": "look_at_obj_in_light",
    "Clean": "pick_clean_then_place_in_recep", "Heat": "pick_heat_then_place_in_recep",
    "Cool": "pick_cool_then_place_in_recep", "Pick2": "pick_two_obj_and_place",
}
SEED, SDAR = "arXiv 2607.14777", "arXiv 2605.15155"
GIGPO, SKILLRL, OPID = "arXiv 2505.10978", "arXiv 2602.08234", "arXiv 2606.26790"
OPID_CARD = "OPID-ALFWorld-1.7B model card"


@dataclass(frozen=True)
class ReferenceRow:
    """One reported result: ``metrics`` maps ``success_rate`` / ``mean_score`` to a percentage;
    ``families`` maps our family names to a success percentage (``None`` where unknown)."""

    env: str
    split: str
    method: str
    backbone: str
    metrics: Mapping[str, float]
    source: str
    tag: str
    families: Mapping[str, float | None] = field(default_factory=dict)
    setting: str = ""

    @property
    def label(self) -> str:
        return f"{self.method} · {self.backbone}"


def _alfworld_families(*values: float | None) -> dict[str, float | None]:
    return dict(zip(ALFWORLD_FAMILIES.values(), values))


def _four(backbone: str, method: str, alf: float, search: float, w_score: float, w_succ: float,
          source: str, tag: str) -> list[ReferenceRow]:
    """The four aggregate cells of a main-table row (ALFWorld, Search, WebShop score/succ)."""
    return [
        ReferenceRow("alfworld", "seen", method, backbone, {"success_rate": alf}, source, tag),
        ReferenceRow("searchqa", "test", method, backbone, {"success_rate": search}, source, tag,
                     setting="EM, macro average of 7 sets"),
        ReferenceRow("webshop", "test", method, backbone,
                     {"mean_score": w_score, "success_rate": w_succ}, source, tag),
    ]


def _main_tables() -> list[ReferenceRow]:
    t3, t7 = f"{SEED} main table", f"{SDAR} Table 1"
    rows = []
    for method, cells, tag in [
        ("Vanilla", (21.9, 31.7, 6.7, 0.8), "[U]"), ("Skill-Prompt*", (28.9, 23.9, 0.2, 0.8), "[U]"),
        ("GRPO", (75.0, 36.4, 79.8, 63.3), "[P]"), ("Skill-GRPO*", (80.5, 36.1, 76.3, 66.4), "[P]"),
        ("GRPO+OPSD", (81.2, 44.6, 77.8, 66.4), "[P]"), ("SDAR", (84.4, 43.4, 85.0, 68.0), "[P]"),
        ("SEED", (91.8, 45.7, 88.5, 78.9), "[P]"),
    ]:
        rows += _four("Qwen2.5-3B", method, *cells, source=t3, tag=tag)
    for method, cells, tag in [
        ("Vanilla", (12.5, 33.9, 5.9, 1.6), "[U]"), ("OPSD only", (32.8, 6.2, 4.5, 2.3), "[U]"),
        ("GRPO", (81.2, 42.0, 80.9, 72.6), "[P]"), ("Skill-GRPO", (69.5, 40.3, 80.4, 71.9), "[P]"),
        ("GRPO+OPSD", (80.4, 47.0, 86.8, 76.5), "[U]"), ("Skill-SD", (85.1, 47.8, 86.1, 76.5), "[U]"),
        ("RLSD", (82.0, 49.0, 87.4, 77.3), "[P]"), ("SDAR", (85.9, 49.0, 89.4, 82.8), "[P]"),
    ]:
        rows += _four("Qwen2.5-7B", method, *cells, source=t7, tag=tag)
    rows += _four("Qwen2.5-7B", "SEED", 96.1, 48.6, 89.7, 78.1, source=f"{SEED} main table", tag="[P]")
    rows += _four("Qwen3-1.7B", "GRPO", 46.1, 40.8, 67.3, 38.3, source=f"{SEED} main table", tag="[P]")
    rows += _four("Qwen3-1.7B", "SEED", 92.0, 42.2, 87.1, 77.3, source=f"{SEED} main table", tag="[P]")
    return rows


def _alfworld_family_rows() -> list[ReferenceRow]:
    """Section 12.4 (seen) and 12.7 (unseen): rows with per-family success."""
    def row(split: str, method: str, backbone: str, families: tuple, avg: float, source: str,
            tag: str) -> ReferenceRow:
        return ReferenceRow("alfworld", split, method, backbone, {"success_rate": avg}, source, tag,
                            families=_alfworld_families(*families))

    card = f"{OPID_CARD} ({OPID})"
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
        rows.append(row("seen", method, "Qwen3-1.7B", families, avg, card, "[A]"))
    rows.append(row("seen", "SDAR", "Qwen3-1.7B", (73.5, 25.0, 76.9, 33.3, None, None), 53.9, card,
                    "[A]; Cool, Pick2 and Avg [U]"))
    table7 = f"{SEED} Table 7"
    for method, families, avg in [
        ("ReAct", (17.4, 6.7, 8.8, 7.4, 9.1, 0.0), 8.2),
        ("GRPO", (73.9, 60.0, 82.4, 59.3, 72.7, 76.9), 70.9),
        ("SEED", (90.4, 78.3, 79.5, 94.3, 86.2, 88.2), 86.2),
    ]:
        rows.append(row("unseen", method, "Qwen2.5-3B", families, avg, table7, "[P]"))
    return rows


def _other_papers() -> list[ReferenceRow]:
    """GiGPO, SkillRL and OPID aggregate numbers (section 12.8)."""
    gigpo = f"{GIGPO} Table 1"
    steps50 = "50 ALFWorld steps; 3-seed mean"
    rows = []
    for backbone, cells in [("Qwen2.5-1.5B", ((72.8, 56.8), (86.7, 65.0), (86.1, 67.4))),
                            ("Qwen2.5-7B", ((77.6, 66.1), (90.8, 72.8), (90.2, 75.2)))]:
        for method, (alf, succ) in zip(("GRPO", "GiGPO w/ std", "GiGPO w/o std"), cells):
            rows.append(ReferenceRow("alfworld", "seen", method, backbone, {"success_rate": alf},
                                     gigpo, "[P]", setting=steps50))
            rows.append(ReferenceRow("webshop", "test", method, backbone, {"success_rate": succ},
                                     gigpo, "[P]", setting="3-seed mean"))
    for backbone, value in (("Qwen2.5-3B", 42.1), ("Qwen2.5-7B", 47.2)):
        rows.append(ReferenceRow("searchqa", "test", "GiGPO", backbone, {"success_rate": value}, GIGPO,
                                 "[P]", setting="EM, macro average"))
    for backbone, value in (("Qwen2.5-3B", 32.5), ("Qwen2.5-7B", 38.5)):
        rows.append(ReferenceRow("searchqa", "test", "Search-R1", backbone, {"success_rate": value},
                                 GIGPO, "[P]", setting="EM, macro average"))
    rows += _four("Qwen2.5-7B", "SkillRL", 89.9, 47.1, 85.2, 72.7, source=SKILLRL, tag="[P]")
    for backbone, cells in (("Qwen2.5-3B", (84.3, 45.0, 85.0, 74.2)), ("Qwen2.5-7B", (90.0, 49.2, 85.3, 79.7)),
                            ("Qwen3-1.7B", (58.9, 40.4, 79.6, 64.8))):
        rows += _four(backbone, "OPID", *cells, source=OPID, tag="[U]")
    rows.append(ReferenceRow("alfworld", "unseen", "OPID", "Qwen2.5-3B", {"success_rate": 78.6}, OPID, "[U]"))
    rows.append(ReferenceRow("alfworld", "seen", "Seed-AlfWorld-3B (released)", "Qwen2.5-3B",
                             {"success_rate": 89.3}, "REPRO (alphaXiv reproduction report)", "[T]",
                             setting="official evaluator, category macro"))
    return rows


REFERENCE_ROWS: tuple[ReferenceRow, ...] = (*_main_tables(), *_alfworld_family_rows(), *_other_papers())


def reference_rows(env: str, rows: Sequence[ReferenceRow] = REFERENCE_ROWS) -> list[ReferenceRow]:
    """The reported rows for one env, grouped by split (``seen`` first), then source order."""
    from seed_gym.leaderboards.boards import split_sort_key

    chosen = [row for row in rows if row.env == _normalized(env)]
    return sorted(chosen, key=lambda row: split_sort_key(row.split))


def _normalized(env: str) -> str:
    """``Search-QA``, ``search_qa`` and ``searchqa`` name one env family."""
    return "".join(ch for ch in env.lower() if ch.isalnum())
