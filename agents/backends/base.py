"""The generation-backend contract shared by ``hf``, ``vllm`` and ``openai``.

A backend turns a *batch* of prompts into one :class:`Generation` each. Rules:

* A prompt is either a list of chat messages (``{"role": ..., "content": ...}``), which the backend
  renders with the model's chat template (the server's, for ``openai``), or a plain string, which
  is used verbatim (``/v1/completions`` for ``openai``).
* ``SamplingParams.temperature == 0`` means greedy decoding. Greedy output depends only on the
  prompt and the weights, so every backend serving the same checkpoint gives the same text (up to
  floating-point ties). Sampling is reproducible: prompt ``i`` of a batch samples from its own
  stream, seeded by ``SamplingParams.seed_for(i)`` (``row_seeds[i]`` when given, else a seed
  derived from ``(seed, i)``). A caller that passes ``row_seeds`` (the model agent: one seed per
  episode and step) gets the same sample for a prompt whatever else shares its batch.
* A chat prompt whose last message is ``{"role": "assistant", "content": ..., "continue": True}``
  *continues* that assistant turn (Search-R1's growing transcript): the messages before it are
  rendered with the chat template and the assistant turn opened, then the content follows
  verbatim, with no end-of-turn. Local backends tokenize it piece by piece when the message has
  ``segments`` (``[{"text", "max_tokens"}]``: each piece alone, cut to its first ``max_tokens``
  tokens, as Search-R1 builds its rolling input); ``openai`` sends it with vLLM's
  ``continue_final_message``.
* ``SamplingParams.max_prompt_tokens`` keeps only the *last* that many prompt tokens (left
  truncation, Search-R1's ``max_prompt_length``); local backends also always leave room for
  ``max_new_tokens`` within the model's context.
* ``stop`` strings end a generation and are *kept* at the end of ``text`` (so a ReAct response still
  carries its ``</action>``); ``finish_reason`` is ``"stop"`` (EOS or a stop string) or ``"length"``.
* ``token_ids`` / ``logprobs`` are filled when ``SamplingParams.logprobs`` is set and the backend can
  (``hf`` and ``vllm`` can; an ``openai`` server may not).
* Backends never raise on a single bad generation; they raise :class:`BackendError` (with a message
  a user can act on) only when the backend itself cannot serve: missing extra, unreachable server,
  a model folder that does not load.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol, Union, runtime_checkable

from seed_gym.core import SeedGymError

Message = Mapping[str, Any]
Prompt = Union[str, Sequence[Message]]


class BackendError(SeedGymError, RuntimeError):
    """A backend cannot serve: an extra is missing, a server is unreachable, a model won't load."""


class ContextLengthError(BackendError, ValueError):
    """A prompt and the tokens asked for do not fit in the model's context (nothing was cut)."""

    def __init__(self, prompt_tokens: int, max_new_tokens: int, context: int) -> None:
        super().__init__(f"This model's maximum context length is {context} tokens. However, you requested "
                         f"{prompt_tokens + max_new_tokens} tokens ({prompt_tokens} in the prompt, "
                         f"{max_new_tokens} in the completion). Please reduce the length of the prompt or "
                         f"of the completion (max_tokens).")
        self.prompt_tokens, self.max_new_tokens, self.context = prompt_tokens, max_new_tokens, context


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
    max_prompt_tokens: int | None = None  # keep only the last N prompt tokens
    row_seeds: tuple[int, ...] = ()       # one sampling seed per prompt; see seed_for

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

    def seed_for(self, row: int) -> int:
        """The sampling seed of prompt ``row``: ``row_seeds[row]`` when given, else one derived
        from ``(seed, row)``, so identical prompts in one batch (a GRPO group) still differ."""
        return self.row_seeds[row] if self.row_seeds else row_seed(self.seed, row)

    def to_dict(self) -> dict[str, Any]:
        """The settings a run identity records (per-prompt seeds are not settings)."""
        data = asdict(self)
        data["stop"] = list(self.stop)
        data.pop("row_seeds")
        return data


def row_seed(seed: int, row: int) -> int:
    """A 63-bit seed for ``(seed, row)``: fixed for a given pair, different across rows, and
    unrelated between neighbouring seeds (``seed + row`` would make row 1 of seed 0 repeat row 0
    of seed 1)."""
    digest = hashlib.blake2b(f"{seed}:{row}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1


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


@runtime_checkable
class Resumable(Protocol):
    """A backend that generates in steps, so a server can interleave short requests with long
    ones (``hf``). A row's tokens do not depend on how its generation was split into steps."""

    def begin(self, prompt: Prompt, params: SamplingParams, seed: int) -> Any:
        """A row for ``prompt`` sampling from ``seed``; :class:`ContextLengthError` if it cannot fit."""
        ...

    def advance(self, rows: Sequence[Any], params: SamplingParams, tokens: int) -> None:
        """Up to ``tokens`` more tokens for each unfinished row; a finished row has a ``finish_reason``."""
        ...

    def conclude(self, rows: Sequence[Any], params: SamplingParams) -> list[Generation]: ...


@runtime_checkable
class ChoiceScorer(Protocol):
    """A backend that scores given responses instead of sampling one (``choose=rank``)."""

    def choice_ids(self, choices: Sequence[str]) -> list[list[int]]:
        """The token ids scored for each choice (its encoding, then EOS)."""
        ...

    def score_choice_ids(self, prompt: Prompt, choice_ids: Sequence[Sequence[int]]) -> list[list[float]]:
        """Per choice, the log-probability of each of its tokens after ``prompt``."""
        ...


def is_chat(prompt: Prompt) -> bool:
    return not isinstance(prompt, str)


def continued_turn(prompt: Prompt) -> Message | None:
    """The assistant message a prompt continues (module rules), or None."""
    if not is_chat(prompt) or not prompt:
        return None
    last = prompt[-1]
    return last if last.get("role") == "assistant" and last.get("continue") else None


def render_prompt(tokenizer: Any, prompt: Prompt) -> str:
    """The text a local model sees: strings verbatim; chat messages through the tokenizer's chat
    template with the assistant turn opened, or :func:`plain_render` when it has none; a continued
    assistant turn's content after that. Every local backend (hf, vllm) and the trainer render
    through this one function, so they agree."""
    if not is_chat(prompt):
        return str(prompt)
    continued = continued_turn(prompt)
    messages = [{"role": m["role"], "content": m["content"]} for m in (prompt[:-1] if continued else prompt)]
    if getattr(tokenizer, "chat_template", None):
        head = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    else:
        head = plain_render(messages)
    return head + (str(continued["content"]) if continued else "")


def prompt_ids(tokenizer: Any, prompt: Prompt, max_tokens: int | None = None) -> list[int]:
    """The token ids a local model is fed for ``prompt``: :func:`render_prompt`'s text without
    added special tokens, except that a continued turn with ``segments`` is tokenized piece by
    piece (each cut to its ``max_tokens``); then only the last ``max_tokens`` ids are kept."""
    continued = continued_turn(prompt)
    segments = continued.get("segments") if continued else None
    if segments is None:
        ids = _encode(tokenizer, render_prompt(tokenizer, prompt))
    else:
        ids = _encode(tokenizer, render_prompt(tokenizer, prompt[:-1]))
        for segment in segments:
            piece = _encode(tokenizer, str(segment["text"]))
            limit = segment.get("max_tokens")
            ids += piece[:limit] if limit else piece
    return ids[-max_tokens:] if max_tokens else ids


def _encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []


def plain_render(messages: Sequence[Message]) -> str:
    """How a model *without* a chat template sees messages: their contents, one per paragraph.

    A prompt builder emits a single user message, so this is simply the prompt text."""
    return "\n\n".join(str(message["content"]) for message in messages)


def cut_at_stop(text: str, stop: Sequence[str]) -> tuple[str, bool]:
    """Cut ``text`` just after the first stop string that occurs; report whether one was found.

    Backends that generate past a stop string (batched ``generate`` finishes rows together) use this
    so that every backend returns the same text."""
    hits = [(text.find(marker), marker) for marker in stop if marker and marker in text]
    if not hits:
        return text, False
    start, marker = min(hits)
    return text[: start + len(marker)], True
