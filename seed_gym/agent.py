"""The Agent contract and agent specs.

An agent acts on a *batch*: the rollout engine keeps every live episode in lock-step and calls
``act`` once per tick with all of them, so a model agent does one batched forward pass per tick.
Episodes join and leave the batch as they start and finish, so every call names its episodes.

Rules:

* ``reset(episode_ids, observations, infos)`` is called once when episodes start (with their first
  observation); ``act(episode_ids, observations, infos)`` returns one action per episode, in order;
  ``end(episode_ids)`` lets the agent drop per-episode state.
* An action is a plain string or an :class:`AgentAction`, which also carries what the record keeps
  for training and auditing: its :class:`~seed_gym.records.ActionTrace` (response, prompt, parse
  validity, the fields training reads back, diagnostics in ``meta``), copied onto the step as is.
* Agents must be deterministic given their ``seed`` (set from the run seed and the episode).
* An agent declares the spec options it reads (``spec_options``, or :meth:`Agent.known_options`);
  a spec with any other option is refused, so a typo never passes as a default setting.

Agents are named on the command line by a spec ``kind[:target][@key=value,...]``, e.g. ``random``,
``expert``, ``hf:models/tiny@temperature=0``, ``openai:http://127.0.0.1:8000/v1@model=x``.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from seed_gym.core import SeedGymError
from seed_gym.records import ActionTrace


@dataclass
class AgentAction(ActionTrace):
    """One action plus how it was produced (the :class:`~seed_gym.records.ActionTrace` fields, by
    keyword), which its step's record keeps field for field."""

    action: str


class Agent:
    """Base class with no-op per-episode hooks; subclasses implement :meth:`act`."""

    #: True when the agent reads ``info["expert_action"]``; the engine then asks envs for it.
    requires_expert: bool = False

    #: The ``@key=value`` options its spec may set; any other is refused, so a typo is never ignored.
    spec_options: tuple[str, ...] = ()

    @classmethod
    def known_options(cls) -> tuple[str, ...]:
        """The option names :func:`agent_class` accepts in a spec of this kind (sorted)."""
        return tuple(sorted(cls.spec_options))

    def __init__(self, spec: "AgentSpec | None" = None, seed: int = 0) -> None:
        self.spec = spec or AgentSpec(kind=type(self).__name__.lower())
        self.seed = seed

    @property
    def name(self) -> str:
        return str(self.spec)

    def reset(self, episode_ids: Sequence[str], observations: Sequence[str],
              infos: Sequence[Mapping[str, Any]]) -> None:
        """Episodes start; per-episode state (history, RNG) is set up here."""

    def act(self, episode_ids: Sequence[str], observations: Sequence[str],
            infos: Sequence[Mapping[str, Any]]) -> list[str | AgentAction]:
        raise NotImplementedError

    def end(self, episode_ids: Sequence[str]) -> None:
        """Episodes finished; drop their state."""

    def bind_env(self, env_id: str) -> None:
        """Called once before the first episode with the env id, so an agent can pick env-specific
        behaviour (a model agent's prompt template and parser)."""

    def identity(self) -> dict[str, Any]:
        """What, beyond the spec, decides this agent's actions (prompt template sha, sampling,
        model fingerprint). It joins the run identity, so a resumed run never mixes two agents.
        Must be cheap: no model is loaded for it."""
        return {}

    def identity_defaults(self) -> dict[str, Any]:
        """The value each :meth:`identity` key added since it first shipped had before it existed
        (dotted paths for nested keys: ``sampling.max_prompt_tokens``). A run that never recorded
        such a key resumes while it keeps that value (:func:`~seed_gym.records.identity_diff`), so
        a new key always joins the identity instead of joining only when it is not the default."""
        return {}

    def close(self) -> None:
        """Release backends (model weights, HTTP clients, servers)."""

    def describe(self) -> dict[str, Any]:
        """What the run manifest records about this agent."""
        return {"spec": str(self.spec), "kind": self.spec.kind}


class AgentSpecError(SeedGymError, ValueError):
    pass


_SPEC_RE = re.compile(r"^(?P<kind>[A-Za-z][\w-]*)(?::(?P<target>[^@]+))?(?:@(?P<params>.*))?$")


@dataclass(frozen=True)
class AgentSpec:
    """A parsed ``kind[:target][@key=value,...]``; ``str()`` gives the canonical form back."""

    kind: str
    target: str | None = None
    params: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, text: str) -> "AgentSpec":
        match = _SPEC_RE.match(text.strip())
        if not match:
            raise AgentSpecError(f"bad agent spec {text!r}; expected kind[:target][@key=value,...]")
        params: list[tuple[str, str]] = []
        for item in filter(None, (match["params"] or "").split(",")):
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise AgentSpecError(f"bad parameter {item!r} in agent spec {text!r}; use key=value")
            params.append((key.strip(), value.strip()))
        return cls(match["kind"].lower(), match["target"], tuple(sorted(params)))

    @property
    def options(self) -> dict[str, str]:
        return dict(self.params)

    def __str__(self) -> str:
        text = self.kind + (f":{self.target}" if self.target else "")
        if self.params:
            text += "@" + ",".join(f"{k}={v}" for k, v in self.params)
        return text

    @property
    def slug(self) -> str:
        """A file-name-safe form, used for run directories."""
        return re.sub(r"[^\w.=-]+", "_", str(self)).strip("_")


#: Agent kinds -> "module:Class".
AGENT_KINDS: dict[str, str] = {
    "random": "seed_gym.agents.scripted:RandomAgent",
    "expert": "seed_gym.agents.scripted:ExpertAgent",
    "human": "seed_gym.agents.scripted:HumanAgent",
    "hf": "seed_gym.agents.model:HFAgent",
    "vllm": "seed_gym.agents.model:VLLMAgent",
    "openai": "seed_gym.agents.model:OpenAIAgent",
}


def register_agent_kind(kind: str, target: str) -> None:
    """Add an agent kind (``"module:Class"``). Env packages call this from their entry-point
    hook (e.g. Search-QA's ``closed-book``), so their agents appear wherever the env does."""
    AGENT_KINDS[kind.lower()] = target


def _parse(spec: str | AgentSpec) -> AgentSpec:
    return spec if isinstance(spec, AgentSpec) else AgentSpec.parse(spec)


def agent_class(spec: str | AgentSpec) -> type[Agent]:
    """The class an agent spec names, without building it (no model is loaded); a spec option that
    class does not declare (:meth:`Agent.known_options`) is an :class:`AgentSpecError`."""
    parsed = _parse(spec)
    if parsed.kind not in AGENT_KINDS:
        from seed_gym.registry import load_entry_points

        load_entry_points()  # plugins register their agent kinds there
    if parsed.kind not in AGENT_KINDS:
        raise AgentSpecError(f"unknown agent kind {parsed.kind!r}; known: {', '.join(sorted(AGENT_KINDS))}")
    module_name, _, attr = AGENT_KINDS[parsed.kind].partition(":")
    cls: type[Agent] = getattr(importlib.import_module(module_name), attr)
    known = cls.known_options()
    unknown = sorted(set(parsed.options) - set(known))
    if unknown:
        valid = f"valid options: {', '.join(known)}" if known else "it takes no options"
        raise AgentSpecError(f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
                             f"for the {parsed.kind} agent; {valid}")
    return cls


def make_agent(spec: str | AgentSpec, *, seed: int = 0) -> Agent:
    """Build an agent from its spec: ``make_agent("random", seed=1)``."""
    parsed = _parse(spec)
    return agent_class(parsed)(parsed, seed=seed)


class CountingAgent:
    """Wraps an agent to count its ``act`` calls (rounds, for benchmarks) without changing what it does."""

    def __init__(self, agent: Agent) -> None:
        self.agent, self.calls = agent, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.agent, name)

    def act(self, *args: Any) -> Any:
        self.calls += 1
        return self.agent.act(*args)


def as_agent_action(value: str | AgentAction) -> AgentAction:
    return value if isinstance(value, AgentAction) else AgentAction(action=str(value))
