"""The generation-backend contract shared by ``hf``, ``vllm`` and ``openai``.

A backend turns a *batch* of prompts into one :class:`Generation` each. Rules:

* A prompt is either a list of chat messages (``{"role": ..., "content": ...}``), which the backend
  renders with the model's chat template (the server's, for ``openai``), or a plain string, which
  is used verbatim (``/v1/completions`` for ``openai``).
* ``SamplingParams.temperature == 0`` means greedy decoding. Greedy output depends only on the
  prompt and the weights, so every backend serving the same checkpoint gives the same text (up to
  floating-point ties); sampling is reproducible from ``SamplingParams.seed``.
* ``stop`` strings end a generation and are *kept* at the end of ``text`` (so a ReAct response still
  carries its ``</action>``); ``finish_reason`` is ``"stop"`` (EOS or a stop string) or ``"length"``.
* ``token_ids`` / ``logprobs`` are filled when ``SamplingParams.logprobs`` is set and the backend can
  (``hf`` and ``vllm`` can; an ``openai`` server may not).
* Backends never raise on a single bad generation; they raise :class:`BackendError` (with a message
  a user can act on) only when the backend itself cannot serve: missing extra, unreachable server,
  a model folder that does not load.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol, Union, runtime_checkable

from seed_gym.core import SeedGymError

Message = Mapping[str, str]
Prompt = Union[str, Sequence[Message]]


class BackendError(SeedGymError, RuntimeError):
    """A backend cannot serve: an extra is missing, a server is unreachable, a model won't load."""


@dataclass(frozen=True)
class SamplingParams:
    """How to decode. ``temperature=0`` is greedy; ``top_k=0`` and ``top_p=1`` switch those filters off."""

    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    top_k: int = 0
    stop: tuple[str, ...] = ()
    seed: int = 0
    logprobs: bool = False

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def with_seed(self, seed: int) -> "SamplingParams":
        return replace(self, seed=seed)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["stop"] = list(self.stop)
        return data


@dataclass
class Generation:
    """One generated response and what it cost."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str = "stop"
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Backend(Protocol):
    """Generates text for a batch of prompts. See the module docstring for the rules."""

    name: str

    def generate(self, prompts: Sequence[Prompt], params: SamplingParams) -> list[Generation]: ...

    def describe(self) -> dict[str, Any]:
        """What a run manifest records: backend, model path, dtype, versions."""
        ...

    def close(self) -> None: ...


def is_chat(prompt: Prompt) -> bool:
    return not isinstance(prompt, str)


def render_prompt(tokenizer: Any, prompt: Prompt) -> str:
    """The text a local model sees: strings verbatim; chat messages through the tokenizer's chat
    template with the assistant turn opened, or :func:`plain_render` when it has none. Every local
    backend (hf, vllm) and the trainer render through this one function, so they agree."""
    if not is_chat(prompt):
        return str(prompt)
    messages = [dict(message) for message in prompt]
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    return plain_render(messages)


def plain_render(messages: Sequence[Message]) -> str:
    """How a model *without* a chat template sees messages: their contents, one per paragraph.

    A prompt builder emits a single user message, so this is simply the prompt text."""
    return "\n\n".join(message["content"] for message in messages)


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` just after the first stop string that occurs; report whether one was found.

    Backends that generate past a stop string (batched ``generate`` finishes rows together) use this
    so that every backend returns the same text."""
    hits = [(text.find(marker), marker) for marker in stop if marker and marker in text]
    if not hits:
        return text, False
    start, marker = min(hits)
    return text[: start + len(marker)], True
