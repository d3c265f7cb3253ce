"""Prompt templates and the prompt builder: one env step -> the chat messages a model sees.

Templates are data (TOML files in ``agents/templates/``), one per env, chosen by env id; users pass
their own with ``@template=path.toml``. A template names:

* ``first`` / ``step`` — the text at step 0 and at later steps (``str.format`` fields below);
* ``history_item`` / ``history_separator`` — how one past step is shown, and how they are joined;
* ``history_length`` — the window k: only the last k steps are shown (``@history=k`` overrides);
* ``parser`` (``react`` or ``search-r1``), ``stop`` strings and ``max_new_tokens`` for decoding;
* ``admissible_item`` / ``admissible_separator`` — how admissible actions are listed;
* optional ``system`` — a system message.

Fields: ``task``, ``observation``, ``first_observation``, ``admissible_actions``,
``admissible_block``, ``step_count``, ``current_step``, ``history_length``, ``action_history``.
History items see ``step`` (1-based), ``observation`` (before the action), ``action``,
``response`` (the raw model text) and ``result`` (the observation the action produced).

The builder emits chat messages; a backend renders them with the model's chat template when the
tokenizer has one (the server's, for ``openai``), so every backend sees the same prompt.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seed_gym.core import SeedGymError

TEMPLATE_DIR = Path(__file__).parent / "templates"

#: env id -> template file. Envs without an entry use ``generic.toml``.
ENV_TEMPLATES: dict[str, Path] = {
    "alfworld": TEMPLATE_DIR / "alfworld.toml",
    "webshop": TEMPLATE_DIR / "webshop.toml",
    "webshop-browser": TEMPLATE_DIR / "webshop.toml",
    "searchqa": TEMPLATE_DIR / "searchqa.toml",
}


class TemplateError(SeedGymError, ValueError):
    pass


@dataclass(frozen=True)
class PromptTemplate:
    id: str
    first: str
    step: str
    parser: str = "react"
    history_length: int = 5
    max_new_tokens: int = 256
    stop: tuple[str, ...] = ()
    history_item: str = "[Observation {step}: '{observation}', Action {step}: '{action}']"
    history_separator: str = "\n"
    admissible_item: str = "'{action}'"
    admissible_separator: str = ", "
    system: str = ""
    source: str = ""

    @property
    def sha(self) -> str:
        """Content hash: two runs used the same prompts only if their template shas match."""
        text = "\x00".join([self.first, self.step, self.history_item, self.history_separator,
                            self.admissible_item, self.admissible_separator, self.system])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


_KNOWN_KEYS = set(PromptTemplate.__dataclass_fields__) - {"source"}


def load_template(path: str | Path) -> PromptTemplate:
    path = Path(path).expanduser()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TemplateError(f"prompt template {path} does not exist") from None
    except tomllib.TOMLDecodeError as error:
        raise TemplateError(f"prompt template {path} is not valid TOML: {error}") from None
    unknown = set(data) - _KNOWN_KEYS
    missing = {"id", "first", "step"} - set(data)
    if unknown or missing:
        raise TemplateError(f"prompt template {path}: " + "; ".join(filter(None, [
            f"missing {sorted(missing)}" if missing else "",
            f"unknown keys {sorted(unknown)} (known: {sorted(_KNOWN_KEYS)})" if unknown else ""])))
    data["stop"] = tuple(data.get("stop", ()))
    template = PromptTemplate(**data, source=str(path))
    _check_fields(template)
    return template


def _check_fields(template: PromptTemplate) -> None:
    """Render once with dummy values so a typo in a field name fails at load, not mid-run."""
    try:
        builder = PromptBuilder(template)
        builder.build(EpisodeView("t", "o", [("o", "a", "r")]), "o", ["a"])
        builder.build(EpisodeView("t", "o", []), "o", ["a"])
    except (KeyError, IndexError, ValueError) as error:
        raise TemplateError(f"prompt template {template.source or template.id} uses an unknown field: {error}") from None


def template_for_env(env_id: str, override: str | Path | None = None) -> PromptTemplate:
    return load_template(override or ENV_TEMPLATES.get(env_id, TEMPLATE_DIR / "generic.toml"))


def register_template(env_id: str, path: str | Path) -> None:
    """Give a (plugin) env its own template file."""
    ENV_TEMPLATES[env_id] = Path(path)


@dataclass
class EpisodeView:
    """What the builder needs of one episode: its task, first observation and past steps as
    ``(observation, action, response)``; the result of step i is the observation of step i+1."""

    task: str
    first_observation: str
    steps: list[tuple[str, str, str]] = field(default_factory=list)




class PromptBuilder:
    """Renders a template for one episode at one step."""

    def __init__(self, template: PromptTemplate, history_length: int | None = None) -> None:
        self.template = template
        self.history_length = template.history_length if history_length is None else int(history_length)
        if self.history_length < 0:
            raise TemplateError(f"history length must be >= 0, got {self.history_length}")

    def build(self, episode: EpisodeView, observation: str,
              admissible_actions: Sequence[str] | None) -> list[dict[str, str]]:
        text = self.text(episode, observation, admissible_actions)
        messages = [{"role": "system", "content": self.template.system}] if self.template.system else []
        return messages + [{"role": "user", "content": text}]

    def text(self, episode: EpisodeView, observation: str, admissible_actions: Sequence[str] | None) -> str:
        t = self.template
        admissible = t.admissible_separator.join(
            t.admissible_item.format(action=a) for a in (admissible_actions or []))
        shown = self._window(episode, observation)
        fields: dict[str, Any] = {
            "task": episode.task, "observation": observation, "first_observation": episode.first_observation,
            "admissible_actions": admissible,
            "admissible_block": (f"Your admissible actions of the current situation are: [{admissible}]."
                                 if admissible_actions else ""),
            "step_count": len(episode.steps), "current_step": len(episode.steps) + 1,
            "history_length": len(shown),
            "action_history": t.history_separator.join(t.history_item.format(**item) for item in shown),
        }
        return (t.step if episode.steps else t.first).format(**fields)

    def _window(self, episode: EpisodeView, observation: str) -> list[Mapping[str, Any]]:
        items = []
        for index, (before, action, response) in enumerate(episode.steps):
            result = episode.steps[index + 1][0] if index + 1 < len(episode.steps) else observation
            items.append({"step": index + 1, "observation": before, "action": action,
                          "response": response, "result": result})
        return items[len(items) - self.history_length:] if self.history_length else []
