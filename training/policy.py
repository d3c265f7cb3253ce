"""The trainable policy: one causal LM + its tokenizer, and the views of it training needs.

* ``backend()`` — an :class:`~seed_gym.agents.backends.hf.HFBackend` sharing these weights, so
  rollouts and the self-evolving analyzer always use the current parameters.
* ``logprobs(...)`` — teacher-forced log-probs of response tokens (differentiable or not), the
  single computation behind student, old-policy, reference and teacher log-probs; rows that share a
  prompt (a GRPO group's first steps) run it once (:func:`~seed_gym.agents.backends.scoring.shared_prompt_logprobs`).
* ``save(dir)`` — ``save_pretrained`` of model and tokenizer: a checkpoint is a model folder any
  agent (``hf:DIR``, ``vllm:DIR``, ``seed-gym serve policy --model DIR``) loads directly.
* ``full_state_dict()`` — every weight, whole, in checkpoint names: what a rollout engine loads and
  a checkpoint saves. When :mod:`.distributed` shards the model (FSDP, ``sharded`` set), gathering
  it is a collective every rank calls; :meth:`Policy.lockstep` then also makes every rank run the
  same number of forward passes, which sharded weights need (each pass gathers them).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from seed_gym.agents.backends.base import prompt_ids
from seed_gym.agents.backends.hf import HFBackend, import_torch_transformers, load_tokenizer, pick_device, pick_dtype
from seed_gym.agents.backends.scoring import chunk_rows, forward_logprobs, pack_left, prompt_owners, \
    shared_prompt_logprobs, shares_prompts
from seed_gym.agents.checkpoints import resolve_model_dir


class Policy:
    def __init__(self, model: Any, tokenizer: Any, *, path: str | Path = "<in memory>",
                 max_prompt_tokens: int = 2048) -> None:
        self.model, self.tokenizer, self.path = model, tokenizer, Path(path)
        self.max_prompt_tokens = max_prompt_tokens
        self.sharded = False                         # set by DataParallel.prepare under FSDP
        self.lockstep: Callable[[int], int] = same  # passes this rank runs -> passes every rank runs

    @classmethod
    def load(cls, path: str | Path, *, dtype: str = "float32", device: str = "auto",
             max_prompt_tokens: int = 2048) -> "Policy":
        torch, transformers = import_torch_transformers()
        folder = resolve_model_dir(path)
        device = pick_device(torch, device)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(folder), dtype=pick_dtype(torch, dtype, device), local_files_only=True).to(device)
        return cls(model, load_tokenizer(folder), path=folder, max_prompt_tokens=max_prompt_tokens)

    @property
    def device(self) -> Any:
        return next(self.model.parameters()).device

    def frozen_copy(self) -> "Policy":
        """A reference model for the KL term: same weights now, never updated."""
        model = copy.deepcopy(self.model).eval()
        for parameter in model.parameters():
            parameter.requires_grad_(False)
        return Policy(model, self.tokenizer, path=self.path, max_prompt_tokens=self.max_prompt_tokens)

    def backend(self, batch_size: int = 32) -> HFBackend:
        return HFBackend.wrap(self.model, self.tokenizer, path=self.path, batch_size=batch_size)

    def encode_prompt(self, messages: Sequence[dict[str, Any]] | str, *, extra_tokens: int = 0) -> list[int]:
        """Prompt tokens exactly as generation fed them (:func:`prompt_ids`: chat template, assistant
        turn open or continued), left-truncated to ``max_prompt_tokens`` like the backend does;
        ``extra_tokens`` widens the budget (a teacher prompt is longer by its skill)."""
        return prompt_ids(self.tokenizer, messages, self.max_prompt_tokens + extra_tokens)

    def encode_text(self, text: str, *, eos: bool = False) -> list[int]:
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return ids + [self.tokenizer.eos_token_id] if eos else ids

    def logprobs(self, prompt_ids: Sequence[Sequence[int]], response_ids: Sequence[Sequence[int]], *,
                 grad: bool) -> tuple[Any, Any]:
        """``[B, L]`` log-probs of each response (right-aligned) and the matching mask."""
        torch, _ = import_torch_transformers()
        pad = self.tokenizer.pad_token_id
        with torch.set_grad_enabled(grad):
            if shares_prompts(prompt_ids) and not self.sharded:  # sharded: every rank must run as many passes
                return shared_prompt_logprobs(self.model, prompt_ids, response_ids, pad, self.device)
            batch = pack_left(prompt_ids, response_ids, pad, self.device)
            return forward_logprobs(self.model, batch), batch.continuation_mask

    def logprobs_chunked(self, prompt_ids: Sequence[Sequence[int]], response_ids: Sequence[Sequence[int]],
                         chunk_tokens: int = 16384) -> list[Any]:
        """No-grad log-probs row by row (1-D tensors), computed in memory-bounded chunks (as many
        chunks on every rank when the model is sharded: :meth:`idle_pass` fills in)."""
        torch, _ = import_torch_transformers()
        out: list[Any] = [None] * len(prompt_ids)
        lengths = [len(p) + len(r) for p, r in zip(prompt_ids, response_ids)]
        groups = chunk_rows(lengths, chunk_tokens, prompt_owners(prompt_ids)) if prompt_ids else []
        with torch.no_grad():
            for group in groups:
                values, _ = self.logprobs([prompt_ids[i] for i in group], [response_ids[i] for i in group], grad=False)
                for row, index in enumerate(group):
                    n = len(response_ids[index])
                    out[index] = values[row, values.shape[1] - n:].detach().cpu() if n else torch.zeros(0)
            for _ in range(self.lockstep(len(groups)) - len(groups)):
                self.idle_pass()
        return out

    def idle_pass(self, grad: bool = False) -> Any:
        """A one-token forward pass that changes nothing: a sharded model's ranks must all run as many
        passes, so a rank with less data runs these. With ``grad``, returns a zero loss to backward."""
        torch, _ = import_torch_transformers()
        token = torch.tensor([[self.tokenizer.eos_token_id]], device=self.device)
        with torch.set_grad_enabled(grad):
            return self.model(input_ids=token).logits.sum() * 0.0

    def full_state_dict(self) -> dict[str, Any]:
        """Every weight, whole, by checkpoint name (a collective on every rank when sharded)."""
        if not self.sharded:
            return self.model.state_dict()
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(self.model, options=StateDictOptions(full_state_dict=True))

    def unsharded_copy(self) -> "Policy":
        """A plain (unsharded) copy of the model with the current weights, for generation."""
        _, transformers = import_torch_transformers()
        state = self.full_state_dict()
        model = transformers.AutoModelForCausalLM.from_config(self.model.config).to(
            dtype=next(iter(state.values())).dtype, device=self.device)
        model.load_state_dict(state)
        return Policy(model.eval(), self.tokenizer, path=self.path, max_prompt_tokens=self.max_prompt_tokens)

    def save(self, folder: str | Path, state: dict[str, Any] | None = None) -> Path:
        """``save_pretrained`` into ``folder``; ``state`` is the gathered :meth:`full_state_dict`
        of a sharded model (rank 0 writes it)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        if state is not None:  # gathered copies are not shared tensors: drop the tied ones as save_pretrained would
            tied = getattr(self.model, "all_tied_weights_keys", None) or {}
            state = {name: tensor for name, tensor in state.items() if name not in tied}
        self.model.save_pretrained(str(folder), state_dict=state)
        self.tokenizer.save_pretrained(str(folder))
        return folder


def same(passes: int) -> int:
    """Lock-step rule of an unsharded model: every rank runs its own number of passes."""
    return passes
