"""Data parallelism for ``seed-gym train`` under ``torchrun`` (one process per GPU, or per CPU slot).

Launch: ``torchrun --nproc_per_node 8 -m seed_gym.cli train --algo seed ...``. Without torchrun
(``WORLD_SIZE`` unset) everything below is a no-op and training runs in one process.

Rules:

* Every rank loads the same weights and draws the same tasks per update; rank r rolls out the
  tasks ``r, r + W, ...`` — whole GRPO groups, so group-normalised advantages stay exact.
* Gradients are averaged by an explicit all-reduce after each mini-batch, weighted by response
  tokens, so the step is the token-mean gradient over *all* ranks' samples. No model wrapper is
  used: ranks may hold different numbers of samples (or none) without deadlocking, as long as all
  take the same number of mini-batches (a config value, so they do).
* Rank 0 alone writes metrics and checkpoints and runs evaluations; the others wait at a barrier.

``parallel="fsdp"`` (``--set parallel=fsdp``) shards instead of replicating: torch's
``fully_shard`` (FSDP2) on every decoder layer (the classes a transformers model lists in
``_no_split_modules``) and on the whole model, for the policy and for the frozen reference, so each
rank holds 1/W of the parameters, gradients and AdamW state. The rules above still hold, with these
differences:

* FSDP reduce-scatters the gradients itself, as a sum (like the all-reduce above; its default would
  average, and gloo has no pre-scaled sum, so the sum is forced);
* every forward pass gathers the weights from all ranks, so every rank runs as many passes: the
  policy's ``lockstep`` takes the maximum over ranks and a rank with fewer rows runs empty passes
  (:meth:`~seed_gym.training.policy.Policy.idle_pass`);
* a checkpoint is still a ``save_pretrained`` folder: every rank takes part in gathering the full
  weights and the full optimizer state, rank 0 writes them (optimizer state keyed by parameter
  name); a resumed run loads the folder on every rank and shards it again;
* ``rank_param_spread`` is not logged (there is one copy of each weight); ``rank_param_share``,
  the share of the weights rank 0 holds, is (about 1/W).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, TypeVar

import torch

T = TypeVar("T")


class DataParallel:
    def __init__(self, mode: str = "ddp") -> None:
        if mode not in ("ddp", "fsdp"):
            raise ValueError(f"parallel must be ddp or fsdp, got {mode!r}")
        self.mode = mode
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if self.world > 1 and not torch.distributed.is_initialized():
            backend = "nccl" if torch.cuda.is_available() else "gloo"
            torch.distributed.init_process_group(backend)

    @property
    def enabled(self) -> bool:
        return self.world > 1

    @property
    def sharded(self) -> bool:
        return self.enabled and self.mode == "fsdp"

    def prepare(self, policy: Any) -> None:
        """Shard ``policy``'s model under fsdp (module rules); otherwise leave it as it is."""
        if not self.sharded:
            return
        from torch.distributed.fsdp import FSDPModule, fully_shard

        model = policy.model
        layer_classes = set(getattr(model, "_no_split_modules", None) or ())
        for module in list(model.modules()):
            if type(module).__name__ in layer_classes:
                fully_shard(module)
        fully_shard(model)
        for module in model.modules():  # each sharded unit reduces its own gradients
            if isinstance(module, FSDPModule):
                module.set_gradient_divide_factor(1.0)  # a sum over ranks, as sum_gradients does
                module.set_force_sum_reduction_for_comms(True)
        policy.sharded, policy.lockstep = True, self.max

    def max(self, value: int) -> int:
        if not self.enabled:
            return value
        tensor = torch.tensor([int(value)], dtype=torch.int64, device=self._device())
        torch.distributed.all_reduce(tensor, op=torch.distributed.ReduceOp.MAX)
        return int(tensor.item())

    def optimizer_state(self, policy: Any, optimizer: Any) -> dict[str, Any]:
        """What ``optimizer.pt`` holds: the optimizer's state dict, gathered whole under fsdp (a
        collective; rank 0 gets it, the others an empty dict)."""
        if not self.sharded:
            return optimizer.state_dict()
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_optimizer_state_dict

        return get_optimizer_state_dict(policy.model, optimizer,
                                        options=StateDictOptions(full_state_dict=True, cpu_offload=True))

    def load_optimizer_state(self, policy: Any, optimizer: Any, state: dict[str, Any]) -> None:
        if not self.sharded:
            optimizer.load_state_dict(state)
            return
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

        set_optimizer_state_dict(policy.model, optimizer, optim_state_dict=state,
                                 options=StateDictOptions(full_state_dict=True))

    def checkpoint_weights(self, policy: Any) -> dict[str, Any] | None:
        """The full weights for rank 0 to save under fsdp (a collective); None otherwise (the
        model saves its own)."""
        if not self.sharded:
            return None
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(policy.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def device(self, requested: str) -> str:
        """Each rank gets its own GPU under torchrun; CPU ranks share the CPU."""
        if self.enabled and requested in ("auto", "cuda") and torch.cuda.is_available():
            return f"cuda:{self.local_rank}"
        return requested

    def shard(self, items: Sequence[T]) -> list[T]:
        return list(items[self.rank::self.world])

    def sum(self, value: float) -> float:
        if not self.enabled:
            return value
        tensor = torch.tensor([float(value)], dtype=torch.float64, device=self._device())
        torch.distributed.all_reduce(tensor)
        return float(tensor.item())

    def sum_gradients(self, model: Any) -> None:
        """Add up every parameter's gradient across ranks (missing gradients count as zero); under
        fsdp the backward pass has already reduce-scattered them."""
        if not self.enabled or self.sharded:
            return
        for parameter in model.parameters():
            if parameter.grad is None:
                parameter.grad = torch.zeros_like(parameter)
            torch.distributed.all_reduce(parameter.grad)

    def parameter_spread(self, model: Any) -> float:
        """max - min over ranks of a parameter checksum: 0 while the replicas are in sync."""
        if not self.enabled:
            return 0.0
        checksum = torch.tensor([sum(float(p.detach().double().sum()) for p in model.parameters())],
                                dtype=torch.float64, device=self._device())
        high, low = checksum.clone(), checksum.clone()
        torch.distributed.all_reduce(high, op=torch.distributed.ReduceOp.MAX)
        torch.distributed.all_reduce(low, op=torch.distributed.ReduceOp.MIN)
        return float(high.item() - low.item())

    def parameter_share(self, model: Any) -> float:
        """The share of the model's weights this rank holds: 1 for a replica, about 1/W sharded."""
        held = sum(p.to_local().numel() if hasattr(p, "to_local") else p.numel() for p in model.parameters())
        return held / max(1, sum(p.numel() for p in model.parameters()))

    def barrier(self) -> None:
        if self.enabled:
            torch.distributed.barrier()

    def close(self) -> None:
        if self.enabled and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()

    def _device(self) -> str:
        return f"cuda:{self.local_rank}" if torch.cuda.is_available() and torch.distributed.get_backend() == "nccl" else "cpu"


SINGLE = DataParallel.__new__(DataParallel)
SINGLE.world, SINGLE.rank, SINGLE.local_rank, SINGLE.mode = 1, 0, 0, "ddp"
