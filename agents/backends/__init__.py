"""Generation backends behind one interface (:mod:`.base`): ``hf``, ``vllm`` and ``openai``.

Each is imported lazily by name, so the core install never needs torch, transformers or vllm.
``BACKEND_OPTIONS`` lists the constructor options an agent spec may set (``@dtype=bfloat16``),
with their types, so a typo is an error instead of a silently ignored setting.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Callable

from seed_gym.agents.backends.base import Backend, BackendError, Generation, Prompt, SamplingParams

__all__ = ["Backend", "BackendError", "Generation", "Prompt", "SamplingParams", "make_backend",
           "BACKENDS", "BACKEND_OPTIONS"]

BACKENDS: dict[str, str] = {
    "hf": "seed_gym.agents.backends.hf:HFBackend",
    "vllm": "seed_gym.agents.backends.vllm:VLLMBackend",
    "openai": "seed_gym.agents.backends.openai:OpenAIBackend",
}

BACKEND_OPTIONS: dict[str, dict[str, Callable[[str], Any]]] = {
    "hf": {"dtype": str, "device": str, "batch_size": int, "max_model_len": int},
    "vllm": {"dtype": str, "max_model_len": int, "max_num_seqs": int, "gpu_memory_utilization": float,
             "tensor_parallel_size": int},
    "openai": {"model": str, "api_key": str, "concurrency": int, "timeout": float, "max_retries": int,
               "backoff": float},
}


def backend_class(kind: str) -> type:
    try:
        module_name, _, attr = BACKENDS[kind].partition(":")
    except KeyError:
        raise BackendError(f"unknown backend {kind!r}; known: {', '.join(sorted(BACKENDS))}") from None
    return getattr(importlib.import_module(module_name), attr)


def convert_options(kind: str, options: Mapping[str, str]) -> dict[str, Any]:
    known = BACKEND_OPTIONS.get(kind, {})
    converted = {}
    for key, value in options.items():
        if key not in known:
            raise BackendError(f"unknown option {key!r} for the {kind} backend; known: {', '.join(sorted(known))}")
        try:
            converted[key] = known[key](value)
        except ValueError:
            raise BackendError(f"option {key}={value!r} of the {kind} backend must be {known[key].__name__}") from None
    return converted


def require_target(kind: str, target: str | None) -> str:
    """The model folder (hf, vllm) or base URL (openai) an agent spec must name."""
    if not target:
        what = "a base URL, e.g. openai:http://127.0.0.1:8000/v1" if kind == "openai" else f"a model folder, e.g. {kind}:models/tiny"
        raise BackendError(f"the {kind} agent needs {what}")
    return target


def make_backend(kind: str, target: str | None, options: Mapping[str, str] | None = None) -> Backend:
    """``make_backend("hf", "models/tiny", {"dtype": "float32"})``; ``target`` is a model folder
    (hf, vllm) or a base URL (openai)."""
    return backend_class(kind)(require_target(kind, target), **convert_options(kind, options or {}))
