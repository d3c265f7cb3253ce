"""Prompt templates and the prompt builder: one env step -> the chat messages a model sees.

Templates are data (TOML files), one per env, declared as ``prompt_template`` in the env's profile
(``envs/<env>/prompts/``); an env that declares none gets ``agents/templates/generic.toml``. Users
pass their own with ``@template=path.toml``. A template names:

* ``first`` / ``step`` — the text at step 0 and at later steps (``str.format`` fields below);
  with ``first_without_history`` the ``first`` text is also used whenever the window is 0
  (verl-agent's ``*_TEMPLATE_NO_HIS``), and with ``history_char_limit`` whenever the ``step`` text
  would be longer than that many characters (verl-agent's fallback for long shop pages);
* ``history_item`` / ``history_separator`` — how one past step is shown, and how they are joined;
* ``history_length`` — the window k: only the last k steps are shown (``@history=k`` overrides;
  -1 shows every past step);
* ``parser`` (``react``, or a response style an env's profile declares, e.g. ``search-r1``), ``stop`` strings and ``max_new_tokens`` for decoding,
  ``prompt_tokens`` (keep only the last N prompt tokens);
* ``admissible_item`` / ``admissible_separator`` — how admissible actions are listed;
  ``hide_actions`` — admissible actions left out of the list (verl-agent drops ``help``);
* ``view`` — an env's own rendering of observations and actions for this layout, a name the env's
  profile declares in ``prompt_views`` (e.g. verl-agent's quoted shop pages);
* ``continue_turn`` — Search-R1's transcript: the ``first`` text is the user turn, and every later
  prompt *continues one assistant turn* with the past responses and observations (``segments``,
  each observation cut to its first ``observation_tokens`` tokens) instead of closing the user
  turn and opening a new one; ``retokenize_response`` — training re-tokenizes the recorded
  (cut) response instead of using the sampled ids, as Search-R1 does;
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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seed_gym.core import SeedGymError
from seed_gym.profile import resolve
from seed_gym.registry import declared_names, declared_target, profile

TEMPLATE_DIR = Path(__file__).parent / "templates"

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
    # -- layout options (module docstring); defaults render as before they existed
    first_without_history: bool = False
    history_char_limit: int = 0          # 0: no limit
    hide_actions: tuple[str, ...] = ()
    view: str = ""
    continue_turn: bool = False
    observation_tokens: int = 0          # 0: observations are not cut
    prompt_tokens: int = 0               # 0: only the model's context limits the prompt
    retokenize_response: bool = False
    source: str = ""

    @property
    def sha(self) -> str:
        """Content hash: two runs used the same prompts only if their template shas match.
        Layout options join the hash only when set, so a template that sets none keeps its sha."""
        parts = [self.first, self.step, self.history_item, self.history_separator,
                 self.admissible_item, self.admissible_separator, self.system]
        parts += [f"{name}={getattr(self, name)!r}" for name in _LAYOUT_OPTIONS
                  if getattr(self, name) != PromptTemplate.__dataclass_fields__[name].default]
        return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


_LAYOUT_OPTIONS = ("first_without_history", "history_char_limit", "hide_actions", "view", "continue_turn",
                   "observation_tokens", "prompt_tokens", "retokenize_response")
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
    data["hide_actions"] = tuple(data.get("hide_actions", ()))
    if data.get("view") and declared_target("prompt_views", data["view"]) is None:
        raise TemplateError(f"prompt template {path}: unknown view {data['view']!r} "
                            f"(known: {declared_names('prompt_views')})")
    template = PromptTemplate(**data, source=str(path))
    _check_fields(template)
    return template


def _check_fields(template: PromptTemplate) -> None:
    """Render once with dummy values so a typo in a field name fails at load, not mid-run."""
    try:
        builder = PromptBuilder(template)
        builder.text(EpisodeView("t", "o", [("o", "a", "r")]), "o", ["a"])
        builder.text(EpisodeView("t", "o", []), "o", ["a"])
    except (KeyError, IndexError, ValueError) as error:
        raise TemplateError(f"prompt template {template.source or template.id} uses an unknown field: {error}") from None


GENERIC_TEMPLATE = TEMPLATE_DIR / "generic.toml"


def template_for_env(env_id: str | None, override: str | Path | None = None) -> PromptTemplate:
    """``override``, else the template the env's profile declares, else (also for no env yet) the
    generic one."""
    declared = profile(env_id).prompt_template if env_id else None
    return load_template(override or declared or GENERIC_TEMPLATE)


@dataclass
class EpisodeView:
    """What the builder needs of one episode: its task, first observation and past steps as
    ``(observation, action, response)``; the result of step i is the observation of step i+1."""

    task: str
    first_observation: str
    steps: list[tuple[str, str, str]] = field(default_factory=list)




class PromptBuilder:
    """Renders a template for one episode at one step."""

    def __init__(self, template: PromptTemplate, history_length: int | None = None,
                 observation_tokens: int | None = None) -> None:
        self.template = template
        self.history_length = template.history_length if history_length is None else int(history_length)
        if self.history_length < -1:
            raise TemplateError(f"history length must be >= 0 (or -1: every step), got {self.history_length}")
        self.observation_tokens = template.observation_tokens if observation_tokens is None else int(observation_tokens)
        self._view: Callable[..., tuple[str, str, list[str]]] | None = None

    def build(self, episode: EpisodeView, observation: str,
              admissible_actions: Sequence[str] | None) -> list[dict[str, Any]]:
        """The chat messages for this step: an optional system message, the user turn, and (with
        ``continue_turn``, after the first step) the assistant turn being continued."""
        system = [{"role": "system", "content": self.template.system}] if self.template.system else []
        if not self.template.continue_turn:
            return system + [{"role": "user", "content": self.text(episode, observation, admissible_actions)}]
        user = {"role": "user", "content": self._opening(episode)}
        segments = self.segments(episode, observation)
        if not segments:
            return system + [user]
        transcript = "".join(segment["text"] for segment in segments)
        return system + [user, {"role": "assistant", "content": transcript, "continue": True, "segments": segments}]

    def text(self, episode: EpisodeView, observation: str, admissible_actions: Sequence[str] | None) -> str:
        """The whole prompt as one text (a continued turn: the user turn, then the transcript)."""
        if self.template.continue_turn:
            return self._opening(episode) + "".join(segment["text"] for segment in self.segments(episode, observation))
        first = not episode.steps or (self.template.first_without_history and self.history_length == 0)
        text = self._render(episode, observation, admissible_actions, first=first)
        limit = self.template.history_char_limit
        if not first and limit and len(text) > limit:
            text = self._render(episode, observation, admissible_actions, first=True)
        return text

    def _opening(self, episode: EpisodeView) -> str:
        """A continued turn's user message: the ``first`` text on the first observation."""
        return self._render(EpisodeView(episode.task, episode.first_observation, []), episode.first_observation,
                            None, first=True)

    def segments(self, episode: EpisodeView, observation: str) -> list[dict[str, Any]]:
        """A continued turn's pieces: per past step in the window, the response as the env took it
        (the recorded action) and the observation it produced (cut to ``observation_tokens``)."""
        cut = self.observation_tokens or None
        pieces: list[dict[str, Any]] = []
        for item in self._window(episode, observation):
            pieces.append({"text": item["action"]})
            pieces.append({"text": item["result"], "max_tokens": cut} if cut else {"text": item["result"]})
        return [piece for piece in pieces if piece["text"]]

    def _render(self, episode: EpisodeView, observation: str, admissible_actions: Sequence[str] | None, *,
                first: bool) -> str:
        t = self.template
        shown = self._window(episode, observation)
        task, observation, actions = self.view(episode.task, episode.first_observation, observation,
                                               admissible_actions)
        actions = [a for a in actions if a not in t.hide_actions]
        admissible = t.admissible_separator.join(t.admissible_item.format(action=a) for a in actions)
        if t.view:  # history items show the viewed observations too
            seen = lambda text: self.view(episode.task, episode.first_observation, text, None)[1]  # noqa: E731
            shown = [{**item, "observation": seen(item["observation"]), "result": seen(item["result"])}
                     for item in shown]
        fields: dict[str, Any] = {
            "task": task, "observation": observation, "first_observation": episode.first_observation,
            "admissible_actions": admissible,
            "admissible_block": (f"Your admissible actions of the current situation are: [{admissible}]."
                                 if actions else ""),
            "step_count": len(episode.steps), "current_step": len(episode.steps) + 1,
            "history_length": len(shown),
            "action_history": t.history_separator.join(t.history_item.format(**item) for item in shown),
        }
        return (t.first if first else t.step).format(**fields)

    def view(self, task: str, first_observation: str, observation: str,
             admissible_actions: Sequence[str] | None) -> tuple[str, str, list[str]]:
        """What the template shows of the env at this step: the view's rendering, or as is."""
        if not self.template.view:
            return task, observation, list(admissible_actions or [])
        if self._view is None:
            self._view = resolve(declared_target("prompt_views", self.template.view) or "")
        return self._view(task, first_observation, observation, admissible_actions)

    def _window(self, episode: EpisodeView, observation: str) -> list[Mapping[str, Any]]:
        """The last ``history_length`` steps (all while fewer were taken; -1: all, 0: none)."""
        k = self.history_length
        if k == 0:
            return []
        steps = episode.steps if k < 0 else episode.steps[-k:]
        offset = len(episode.steps) - len(steps)
        items = []
        for index, (before, action, response) in enumerate(steps, start=offset):
            result = episode.steps[index + 1][0] if index + 1 < len(episode.steps) else observation
            items.append({"step": index + 1, "observation": before, "action": action,
                          "response": response, "result": result})
        return items
