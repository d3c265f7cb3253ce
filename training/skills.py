"""Skills in prompts: SEED's insertion H(h, s) and SDAR's static skill bank (seed-method.md §7, §11).

**Insertion** (:func:`insert_skill`). The episode-level block

    **Episode-Level Skill**
    Refer to this episode-level skill when deciding what action to take in the current episode:
    [<skill>]

goes on its own lines directly after the first line that holds the task — ``Your task is to:``,
``Your question:`` or a Search-R1 style ``Question:`` line — else just before the
line with ``Now it's your turn``, else at the very start. Nothing else in the prompt changes: removing
the block gives back the original text byte for byte. The same skill goes into every step prompt of
the trajectory.

*Prompt-length rule.* The skill must never be lost to truncation. Callers budget the prompt length
with the block already inserted; when a prompt is too long, the trainer left-truncates only the
history part (the past observations and actions), never the task line, the skill block or the
current observation.

**Skill bank** (:class:`SkillBank`). SDAR's teacher sees a static bank: general skills for the env plus
the skills of the task's family (a task type, a product category, a data source) as
``[Privileged Skill Information]\\n{skills}\\n\\n`` before the prompt (:func:`prepend_privileged`).
An env declares its bank in its profile (``skill_bank``, e.g. ``envs/<env>/skills.py``); users load
their own from a folder of Markdown files or a JSON file (:meth:`SkillBank.load`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seed_gym.profile import resolve
from seed_gym.registry import profile

EPISODE_SKILL_HEADER = "**Episode-Level Skill**"
EPISODE_SKILL_INTRO = "Refer to this episode-level skill when deciding what action to take in the current episode:"
#: What a task line holds. The *earliest* line holding any of them wins: the task line comes before
#: the history, which might quote one.
TASK_MARKERS = ("Your task is to:", "Your question:", "Question:")
TURN_MARKER = "Now it's your turn"
PRIVILEGED_HEADER = "[Privileged Skill Information]"

Message = Mapping[str, str]


def skill_block(skill: str) -> str:
    """The episode-level block for ``skill`` (no trailing newline)."""
    return f"{EPISODE_SKILL_HEADER}\n{EPISODE_SKILL_INTRO}\n[{skill.strip()}]"


def insert_skill(prompt_text: str, skill: str) -> str:
    """H(h, s): ``prompt_text`` with the episode-level block for ``skill`` (module rules)."""
    block = skill_block(skill)
    lines = prompt_text.splitlines(keepends=True)
    task_line = next((i for i, line in enumerate(lines) if any(m in line for m in TASK_MARKERS)), None)
    if task_line is not None:
        line = lines[task_line]
        if line.endswith(("\n", "\r")):
            lines[task_line] = line + block + "\n"
        else:  # the task line ends the text
            lines[task_line] = line + "\n" + block
        return "".join(lines)
    turn_line = next((i for i, line in enumerate(lines) if TURN_MARKER in line), None)
    if turn_line is not None:
        lines.insert(turn_line, block + "\n\n")
        return "".join(lines)
    return f"{block}\n\n{prompt_text}"


def insert_skill_messages(messages: Sequence[Message], skill: str) -> list[dict[str, str]]:
    """:func:`insert_skill` on chat messages: the block goes into the first user message that holds a
    task line, else into the last user message; the other messages are copied unchanged."""
    out = [dict(message) for message in messages]
    users = [i for i, m in enumerate(out) if m.get("role") == "user"]
    if not users:
        raise ValueError("no user message to insert the skill into")
    target = next((i for i in users if any(m in out[i].get("content", "") for m in TASK_MARKERS)), users[-1])
    out[target]["content"] = insert_skill(out[target].get("content", ""), skill)
    return out


def prepend_privileged(prompt_text: str, skills: str) -> str:
    """SDAR's teacher prompt: ``[Privileged Skill Information]\\n{skills}\\n\\n`` + the prompt."""
    return f"{PRIVILEGED_HEADER}\n{skills}\n\n{prompt_text}"


def prepend_privileged_messages(messages: Sequence[Message], skills: str) -> list[dict[str, str]]:
    """:func:`prepend_privileged` on the first user message."""
    out = [dict(message) for message in messages]
    first = next((i for i, m in enumerate(out) if m.get("role") == "user"), None)
    if first is None:
        raise ValueError("no user message to prepend the skills to")
    out[first]["content"] = prepend_privileged(out[first].get("content", ""), skills)
    return out


# -- skill bank -----------------------------------------------------------------------------------
@dataclass
class SkillBank:
    """General skills plus per-family skills for one env.

    Matching (:meth:`family_for`): the task's ``family`` normalised (lower case, a ``syn_`` prefix
    dropped, ``aliases`` applied) is looked up exactly, then as a prefix of a key or a key as its
    prefix (``pick_clean`` ~ ``pick_clean_then_place_in_recep``); failing that, the first key that
    occurs as a word in the instruction (SDAR's category keywords). No match: general
    skills only."""

    env: str
    general: list[str] = field(default_factory=list)
    families: dict[str, list[str]] = field(default_factory=dict)
    aliases: dict[str, str] = field(default_factory=dict)

    @classmethod
    def for_env(cls, env_id: str) -> "SkillBank":
        """The bank the env's profile declares (``skill_bank``)."""
        target = profile(env_id).skill_bank
        if not target:
            raise ValueError(f"{env_id!r} declares no skill bank (skill_bank in its profile); "
                             "load your own with SkillBank.load")
        data = resolve(target)
        return cls(env_id, list(data["general"]), {k: list(v) for k, v in data["families"].items()},
                   dict(data.get("aliases", {})))

    def family_for(self, task: Mapping[str, Any]) -> str | None:
        family = _normal(str(task.get("family", "")))
        family = self.aliases.get(family, family)
        if family:
            if family in self.families:
                return family
            for key in self.families:
                if key.startswith(family) or family.startswith(key):
                    return key
        words = f" {' '.join(re.findall(r'[a-z0-9]+', str(task.get('instruction', '')).lower()))} "
        for key in self.families:
            if f" {key.replace('_', ' ')} " in words:
                return key
        for alias, key in self.aliases.items():
            if f" {alias.replace('_', ' ')} " in words and key in self.families:
                return key
        return None

    def skills_for(self, task: Mapping[str, Any]) -> str:
        """The general skills and the matched family's skills, as a bulleted text."""
        family = self.family_for(task)
        return self._render([("General skills", self.general)] +
                            ([(f"Skills for {family} tasks", self.families[family])] if family else []))

    def all_skills(self) -> str:
        """Every skill in the bank (SDAR's "full" retrieval)."""
        return self._render([("General skills", self.general)] +
                            [(f"Skills for {key} tasks", skills) for key, skills in self.families.items()])

    @staticmethod
    def _render(sections: list[tuple[str, list[str]]]) -> str:
        return "\n".join(f"{title}:\n" + "\n".join(f"- {s}" for s in skills)
                         for title, skills in sections if skills)

    # -- files ----------------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike[str], env: str = "") -> "SkillBank":
        """A user bank from a JSON file or a folder.

        * JSON file: ``{"general": [...], "families": {"<family>": [...]}, "aliases": {...}}``; a
          value may be one string instead of a list.
        * Folder: ``skills.json`` (as above) if present; otherwise Markdown files —
          ``general.md`` or ``general_skills.md`` for the general skills, every other ``*.md`` for
          the family named by its stem, or by ``skill_mapping.json`` (``{"<family>": "<file>.md" or
          [files]}``, SDAR's layout). In a Markdown file each top-level bullet (``-``, ``*``,
          ``1.``) is one skill, continuation lines included; a file without bullets holds one skill
          per paragraph; headings are ignored."""
        path = Path(path).expanduser()
        if path.is_file():
            return cls._from_json(json.loads(path.read_text(encoding="utf-8")), env or path.stem)
        if not path.is_dir():
            raise FileNotFoundError(f"skill bank {path} does not exist")
        if (path / "skills.json").is_file():
            return cls._from_json(json.loads((path / "skills.json").read_text(encoding="utf-8")), env or path.name)
        general: list[str] = []
        for name in ("general.md", "general_skills.md"):
            if (path / name).is_file():
                general += parse_markdown_skills((path / name).read_text(encoding="utf-8"))
        mapping_file = path / "skill_mapping.json"
        if mapping_file.is_file():
            mapping = json.loads(mapping_file.read_text(encoding="utf-8"))
        else:
            mapping = {p.stem: p.name for p in sorted(path.glob("*.md"))
                       if p.name not in ("general.md", "general_skills.md", "README.md")}
        families = {}
        for family, files in mapping.items():
            names = [files] if isinstance(files, str) else list(files)
            families[_normal(family)] = [s for n in names for s in
                                         parse_markdown_skills((path / n).read_text(encoding="utf-8"))]
        return cls(env or path.name, general, families)

    @classmethod
    def _from_json(cls, data: Mapping[str, Any], env: str) -> "SkillBank":
        def as_list(value: Any) -> list[str]:
            return [value] if isinstance(value, str) else [str(v) for v in value or []]

        return cls(str(data.get("env", env)), as_list(data.get("general")),
                   {_normal(k): as_list(v) for k, v in (data.get("families") or {}).items()},
                   {_normal(k): _normal(v) for k, v in (data.get("aliases") or {}).items()})

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Write the bank as a Markdown folder that :meth:`load` reads back (a start for editing)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "general.md").write_text("".join(f"- {s}\n" for s in self.general), encoding="utf-8")
        for key, skills in self.families.items():
            (folder / f"{key}.md").write_text("".join(f"- {s}\n" for s in skills), encoding="utf-8")
        return folder


def offline_skill_bank(env_id: str, records: Sequence[Any], skills: Sequence[Any], *,
                       per_family: int = 3, general: int = 2) -> SkillBank:
    """A static skill library computed once, offline (the "static offline skills" ablation of SEED's
    Table 2): the episode skills an analyzer wrote for ``records`` (one per record, None where it
    failed), the ``per_family`` most frequent per task family and the ``general`` most frequent
    overall. Ties keep the order in which skills were first written, so the bank is deterministic."""
    from collections import Counter

    overall: Counter[str] = Counter()
    by_family: dict[str, Counter[str]] = {}
    for record, skill in zip(records, skills):
        text = getattr(skill, "episode_skill", None)
        if not text:
            continue
        overall[text] += 1
        by_family.setdefault(_normal(str(record.task.get("family", ""))), Counter())[text] += 1
    families = {family: [text for text, _ in counts.most_common(per_family)]
                for family, counts in by_family.items() if family}
    return SkillBank(env_id, [text for text, _ in overall.most_common(general)], families)


def _normal(family: str) -> str:
    family = family.strip().lower()
    return family.removeprefix("syn_")


_BULLET = re.compile(r"^(?:[-*+]|\d+[.)])\s+(.*)$")


def parse_markdown_skills(text: str) -> list[str]:
    """Skills in Markdown: top-level bullets, else paragraphs (headings dropped)."""
    lines = [line.rstrip() for line in text.splitlines() if not line.lstrip().startswith("#")]
    skills: list[str] = []
    if any(_BULLET.match(line) for line in lines):
        for line in lines:
            bullet = _BULLET.match(line)
            if bullet:
                skills.append(bullet.group(1).strip())
            elif line.strip() and skills:
                skills[-1] += " " + line.strip()
        return [s for s in skills if s]
    return [" ".join(p.split()) for p in re.split(r"\n\s*\n", "\n".join(lines)) if p.strip()]
