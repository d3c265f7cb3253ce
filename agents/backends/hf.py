"""The ``hf`` backend: transformers ``generate`` on a local checkpoint, batched, with a KV cache.

Rules beyond :mod:`seed_gym.agents.backends.base`:

* The model loads with ``from_pretrained`` from a local folder only (no hub). Tokenizers pad on
  the left, so a batch's new tokens line up and the KV cache serves every row.
* ``token_ids`` are the sampled tokens, including the EOS token when the model emitted one, so
  training learns to stop; ``text`` is their decoding, cut after the first stop string.
* ``logprobs`` are log-probabilities of those tokens under the *unmodified* model (temperature 1,
  no top-p/top-k), computed by one teacher-forced forward pass after generation. This is what an RL
  update needs as the behaviour policy's log-probs, and it costs far less memory than keeping every
  step's logits. :meth:`HFBackend.score` exposes the same computation for any continuation.
* Sampling gives every row its own seeded stream (``SamplingParams.seed_for``): a row's sample
  depends on its prompt and seed, not on the rows beside it or the batch size. Generation runs
  greedy over temperature/top-k/top-p-processed log-probs plus per-row Gumbel noise, which is
  exactly a draw from the processed distribution. The caller's RNG state is never touched.
* Generation in steps (:class:`~seed_gym.agents.backends.base.Resumable`): :meth:`HFBackend.begin`
  encodes a prompt (refusing one that does not fit, never cutting it), :meth:`HFBackend.advance`
  adds up to N tokens to a batch of rows (re-reading each row's prompt and generated ids, so no KV
  cache is kept between steps), :meth:`HFBackend.conclude` gives their generations. ``generate`` is
  these three with one step of ``max_new_tokens``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seed_gym.agents.backends.base import (
    BackendError, ContextLengthError, Generation, Prompt, SamplingParams, cut_at_stop, prompt_ids, render_prompt)
from seed_gym.agents.checkpoints import resolve_model_dir

INSTALL_HINT = 'install the model extra: pip install "seed-gym[hf]" (torch==2.13.0 and transformers)'


def import_torch_transformers() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as error:
        raise BackendError(f"the hf backend needs torch and transformers ({error}); {INSTALL_HINT}") from None
    # Loading a local folder takes milliseconds; per-load progress bars only bury the harness's own.
    transformers.utils.logging.disable_progress_bar()
    return torch, transformers


def pick_device(torch: Any, device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def pick_dtype(torch: Any, dtype: str, device: str) -> Any:
    if dtype == "auto":
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    try:
        return {"float32": torch.float32, "fp32": torch.float32, "bfloat16": torch.bfloat16,
                "bf16": torch.bfloat16, "float16": torch.float16, "fp16": torch.float16,
                "float64": torch.float64}[dtype]
    except KeyError:
        raise BackendError(f"unknown dtype {dtype!r}; use float32, bfloat16, float16 or auto") from None


def load_tokenizer(path: Path) -> Any:
    _, transformers = import_torch_transformers()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


class HFBackend:
    """Batched generation with transformers on CPU or GPU."""

    name = "hf"

    def __init__(self, model: str | Path, *, dtype: str = "auto", device: str = "auto",
                 batch_size: int = 32, max_model_len: int | None = None, score_chunk_tokens: int = 16384) -> None:
        torch, transformers = import_torch_transformers()
        self.path = resolve_model_dir(model)
        self.device = pick_device(torch, device)
        self.dtype = pick_dtype(torch, dtype, self.device)
        self.batch_size = max(1, int(batch_size))
        self.score_chunk_tokens = score_chunk_tokens
        tokenizer = load_tokenizer(self.path)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(self.path), dtype=self.dtype, local_files_only=True).to(self.device)
        model.eval()
        self._attach(model, tokenizer, max_model_len)

    @classmethod
    def wrap(cls, model: Any, tokenizer: Any, *, path: str | Path = "<in memory>", batch_size: int = 32,
             score_chunk_tokens: int = 16384) -> "HFBackend":
        """A backend over an already loaded model, sharing its weights: a trainer's rollouts and
        its analyzer then always use the current parameters (no copy, no reload)."""
        backend = cls.__new__(cls)
        backend.path = Path(path)
        backend.batch_size = max(1, int(batch_size))
        backend.score_chunk_tokens = score_chunk_tokens
        parameter = next(model.parameters())
        backend.device, backend.dtype = str(parameter.device), parameter.dtype
        tokenizer.padding_side = "left"
        backend._attach(model, tokenizer, None)
        return backend

    def _attach(self, model: Any, tokenizer: Any, max_model_len: int | None) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.max_model_len = int(max_model_len or getattr(model.config, "max_position_embeddings", 2048))
        self.eos_ids = self._eos_ids()
        self.calls = 0

    # -- public ------------------------------------------------------------------------------
    def render(self, prompt: Prompt) -> str:
        return render_prompt(self.tokenizer, prompt)

    def generate(self, prompts: Sequence[Prompt], params: SamplingParams) -> list[Generation]:
        self.calls += 1
        room = max(1, self.max_model_len - params.max_new_tokens)
        # Left-truncate: the newest context matters.
        rows = [self._continuation(prompt_ids(self.tokenizer, p, min(room, params.max_prompt_tokens or room)),
                                   params, params.seed_for(i)) for i, p in enumerate(prompts)]
        self.advance(rows, params, params.max_new_tokens)
        return self.conclude(rows, params)

    # -- generation in steps (the policy server's fair scheduling; base module rules) ---------
    def begin(self, prompt: Prompt, params: SamplingParams, seed: int) -> "Continuation":
        """A generation of ``prompt`` not yet advanced; :class:`ContextLengthError` when the prompt
        and ``params.max_new_tokens`` do not fit in the model's context (nothing is cut)."""
        ids = prompt_ids(self.tokenizer, prompt, params.max_prompt_tokens)
        if len(ids) + params.max_new_tokens > self.max_model_len:
            raise ContextLengthError(len(ids), params.max_new_tokens, self.max_model_len)
        return self._continuation(ids, params, seed)

    def advance(self, rows: Sequence["Continuation"], params: SamplingParams, tokens: int) -> None:
        """Generate up to ``tokens`` more tokens for each unfinished row (in place). Each row keeps
        its own sampling stream across calls, so a row advanced in steps gets the same tokens as in
        one call (up to floating-point ties)."""
        live = [row for row in rows if row.finish_reason is None]
        for start in range(0, len(live), self.batch_size):
            self._advance_batch(live[start:start + self.batch_size], params, tokens)

    def conclude(self, rows: Sequence["Continuation"], params: SamplingParams) -> list[Generation]:
        """The :class:`Generation` of each (finished) row: text cut after its first stop string,
        and log-probs by one teacher-forced pass when ``params.logprobs``."""
        out = []
        for row in rows:
            text, _ = cut_at_stop(self.tokenizer.decode(row.token_ids, skip_special_tokens=True), params.stop)
            out.append(Generation(text=text, prompt_tokens=len(row.prompt_ids), completion_tokens=len(row.token_ids),
                                  finish_reason=row.finish_reason or "length", token_ids=list(row.token_ids),
                                  meta={"batch_seconds": round(row.seconds, 6), "batch_size": row.batch_size}))
        if params.logprobs and rows:
            scored = self._score_ids([row.prompt_ids for row in rows], [row.token_ids for row in rows])
            for generation, logprobs in zip(out, scored):
                generation.logprobs = logprobs
        return out

    def score(self, prompts: Sequence[Prompt], continuations: Sequence[Sequence[int]]) -> list[list[float]]:
        """Log-probabilities of each continuation's tokens given its (rendered) prompt.

        One teacher-forced forward per chunk, keeping logits only for the continuation positions."""
        from seed_gym.agents.backends.scoring import continuation_logprobs

        encoded = [prompt_ids(self.tokenizer, p) for p in prompts]
        return continuation_logprobs(self.model, encoded, [list(c) for c in continuations],
                                     pad_id=self.tokenizer.pad_token_id, chunk_tokens=self.score_chunk_tokens)

    def score_choices(self, prompt: Prompt, choices: Sequence[str]) -> list[list[float]]:
        """Per-token log-probabilities of each choice text (its tokens, then EOS) as the response
        to ``prompt`` (ranked choice among admissible actions); the prompt's KV cache is computed
        once and shared. :meth:`choice_ids` gives the tokens scored."""
        return self.score_choice_ids(prompt, self.choice_ids(choices))

    def score_choice_ids(self, prompt: Prompt, choice_ids: Sequence[Sequence[int]]) -> list[list[float]]:
        """:meth:`score_choices` for choices already tokenized by :meth:`choice_ids`."""
        from seed_gym.agents.backends.scoring import choice_logprobs

        was_training = self.model.training
        self.model.eval()
        try:
            return choice_logprobs(self.model, prompt_ids(self.tokenizer, prompt), choice_ids,
                                   pad_id=self.tokenizer.pad_token_id, chunk_tokens=self.score_chunk_tokens)
        finally:
            self.model.train(was_training)

    def choice_ids(self, choices: Sequence[str]) -> list[list[int]]:
        """The tokens :meth:`score_choices` scores for each choice: its encoding, then EOS."""
        return [self._encode(c) + [self.tokenizer.eos_token_id] for c in choices]

    def describe(self) -> dict[str, Any]:
        torch, transformers = import_torch_transformers()
        return {"backend": self.name, "model": str(self.path), "dtype": str(self.dtype).replace("torch.", ""),
                "device": self.device, "batch_size": self.batch_size, "torch": torch.__version__,
                "transformers": transformers.__version__}

    def close(self) -> None:
        self.model = None

    # -- internals -----------------------------------------------------------------------------
    def _eos_ids(self) -> set[int]:
        ids = {self.tokenizer.eos_token_id}
        configured = getattr(self.model.generation_config, "eos_token_id", None)
        ids.update(configured if isinstance(configured, list) else [configured])
        return {i for i in ids if i is not None}

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _continuation(self, ids: list[int], params: SamplingParams, seed: int) -> "Continuation":
        torch, _ = import_torch_transformers()
        generator = None if params.greedy else torch.Generator(device=self.device).manual_seed(int(seed))
        return Continuation(prompt_ids=ids, max_new_tokens=params.max_new_tokens, generator=generator)

    def _advance_batch(self, rows: list["Continuation"], params: SamplingParams, tokens: int) -> None:
        torch, _ = import_torch_transformers()
        steps = max(1, min(tokens, max(row.max_new_tokens - len(row.token_ids) for row in rows)))
        batch = self.tokenizer.pad({"input_ids": [row.prompt_ids + row.token_ids for row in rows]},
                                   padding=True, return_tensors="pt").to(self.device)
        width = batch["input_ids"].shape[1]
        started = time.perf_counter()
        was_training = self.model.training
        self.model.eval()  # a trainer may share this model; generation never uses dropout
        try:
            with torch.no_grad():
                # stop strings are looked for in all of a row's generated text, this call's and earlier ones'
                criteria = self._stop_criteria([width - len(row.token_ids) for row in rows], params.stop)
                processors = self._row_sampler([row.generator for row in rows], params)
                sequences = self.model.generate(**batch, **self._generate_kwargs(params, steps),
                                                stopping_criteria=criteria, logits_processor=processors)
        finally:
            self.model.train(was_training)
        elapsed = time.perf_counter() - started
        for row, new in zip(rows, sequences[:, width:].tolist()):
            self._extend(row, new, params)
            row.seconds += elapsed
            row.batch_size = len(rows)

    def _extend(self, row: "Continuation", new: list[int], params: SamplingParams) -> None:
        """Append a call's new tokens to ``row`` and decide whether it finished: EOS (kept, so
        training learns to stop), padding (the stop criterion ended the row), a stop string in its
        text, or ``max_new_tokens`` reached."""
        before = len(row.token_ids)
        for token in new[: row.max_new_tokens - before]:
            if token in self.eos_ids:
                row.token_ids.append(token)
                row.finish_reason = "stop"
                return
            if token == self.tokenizer.pad_token_id:
                row.finish_reason = "stop"  # the row finished on a stop string; the rest is padding
                return
            row.token_ids.append(token)
        text = self.tokenizer.decode(row.token_ids, skip_special_tokens=True)
        if cut_at_stop(text, params.stop)[1] or len(row.token_ids) == before:
            row.finish_reason = "stop"
        elif len(row.token_ids) >= row.max_new_tokens:
            row.finish_reason = "length"

    def _generate_kwargs(self, params: SamplingParams, steps: int) -> dict[str, Any]:
        # Always greedy in transformers' terms: sampling is the Gumbel-max processor's (per row).
        return {"max_new_tokens": steps, "pad_token_id": self.tokenizer.pad_token_id,
                "eos_token_id": sorted(self.eos_ids), "do_sample": False,
                "temperature": None, "top_p": None, "top_k": None}

    def _row_sampler(self, generators: list[Any], params: SamplingParams) -> Any:
        _, transformers = import_torch_transformers()
        if params.greedy:
            return transformers.LogitsProcessorList()
        return transformers.LogitsProcessorList([RowSampler(generators, params, self.device)])

    def _stop_criteria(self, starts: list[int], stop: Sequence[str]) -> Any:
        _, transformers = import_torch_transformers()
        if not stop:
            return transformers.StoppingCriteriaList()
        return transformers.StoppingCriteriaList([_StopOnGenerated(self.tokenizer, starts, stop)])

    def _score_ids(self, prompt_ids: list[list[int]], continuations: list[list[int]]) -> list[list[float]]:
        from seed_gym.agents.backends.scoring import continuation_logprobs

        return continuation_logprobs(self.model, prompt_ids, continuations,
                                     pad_id=self.tokenizer.pad_token_id, chunk_tokens=self.score_chunk_tokens)


@dataclass
class Continuation:
    """One prompt's generation in progress (:meth:`HFBackend.begin`): its prompt and generated
    ids, its sampling stream (None when greedy) and, once it ended, its ``finish_reason``."""

    prompt_ids: list[int]
    max_new_tokens: int
    generator: Any = None
    token_ids: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    seconds: float = 0.0   # time spent in the generate calls that advanced it
    batch_size: int = 0    # rows in its last generate call


class RowSampler:
    """Sampling as a logits processor: temperature, top-k and top-p as in transformers' warpers,
    then log-softmax plus Gumbel noise from each row's own generator. The argmax of the result is
    a draw from the processed distribution (the Gumbel-max trick), so greedy ``generate`` with this
    processor samples, and row ``r`` at its ``n``-th new token always uses the ``n``-th draw of
    the stream seeded by ``seeds[r]`` — whatever the other rows are."""

    def __init__(self, seeds: Sequence[Any], params: SamplingParams, device: str) -> None:
        """``seeds``: per row a seed, or a ``torch.Generator`` to go on drawing from (a row advanced in steps)."""
        torch, _ = import_torch_transformers()
        self.temperature, self.top_k, self.top_p = params.temperature, params.top_k, params.top_p
        self.generators = [seed if isinstance(seed, torch.Generator) else
                           torch.Generator(device=device).manual_seed(int(seed)) for seed in seeds]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        torch, _ = import_torch_transformers()
        # shifted so the best score is 0, divided in float64: a tiny temperature (1e-40, even one
        # float32 rounds to 0) then sends the others to -inf (near-greedy, as meant) instead of
        # overflowing every score to inf, or dividing 0 by 0 (NaN)
        scores = scores.double()
        scores = ((scores - scores.max(dim=-1, keepdim=True).values) / self.temperature).float()
        if 0 < self.top_k < scores.shape[-1]:
            kth = torch.topk(scores, self.top_k, dim=-1).values[..., -1:]
            scores = scores.masked_fill(scores < kth, float("-inf"))
        if self.top_p < 1.0:
            ordered, order = torch.sort(scores, descending=True, dim=-1)
            mass = ordered.softmax(dim=-1).cumsum(dim=-1)
            drop = mass - ordered.softmax(dim=-1) >= self.top_p  # keep the smallest set reaching top_p
            scores = scores.masked_fill(torch.zeros_like(drop).scatter(-1, order, drop), float("-inf"))
        uniform = torch.stack([torch.rand(scores.shape[-1], generator=g, device=scores.device)
                               for g in self.generators])
        gumbel = -torch.log(-torch.log(uniform.clamp(min=1e-20, max=1.0 - 1e-7)))
        return scores.log_softmax(dim=-1) + gumbel


class _StopOnGenerated:
    """Ends a row once its *generated* text contains a stop string.

    transformers' own ``stop_strings`` also match across the prompt boundary (a prompt ending in
    ``"\n"`` with stop ``"\n\n"`` stops after one new token), so only generated tokens are read
    here, from column ``starts[row]`` on (a row continued in steps has earlier generated tokens in
    its input): the last few of them, enough to hold the longest stop string, since each step adds
    one token."""

    def __init__(self, tokenizer: Any, starts: Sequence[int], stop: Sequence[str]) -> None:
        self.tokenizer, self.starts = tokenizer, list(starts)
        self.stop = [s for s in stop if s]
        self.window = max(len(s) for s in self.stop) + 2

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        torch, _ = import_torch_transformers()
        first = input_ids.shape[1] - self.window
        low = max(min(self.starts), first)
        tails = [row[max(start, first) - low:] for row, start in zip(input_ids[:, low:].tolist(), self.starts)]
        texts = self.tokenizer.batch_decode(tails, skip_special_tokens=True)
        return torch.tensor([any(s in text for s in self.stop) for text in texts], device=input_ids.device)
