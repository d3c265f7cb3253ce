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
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, TypeVar

import torch

T = TypeVar("T")


class DataParallel:
    def __init__(self) -> None:
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
        """Add up every parameter's gradient across ranks (missing gradients count as zero)."""
        if not self.enabled:
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

    def barrier(self) -> None:
        if self.enabled:
            torch.distributed.barrier()

    def close(self) -> None:
        if self.enabled and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()

    def _device(self) -> str:
        return f"cuda:{self.local_rank}" if torch.cuda.is_available() and torch.distributed.get_backend() == "nccl" else "cpu"


SINGLE = DataParallel.__new__(DataParallel)
SINGLE.world, SINGLE.rank, SINGLE.local_rank = 1, 0, 0
