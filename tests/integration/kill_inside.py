"""Run ``seed-gym ARGS`` in this process and kill it with SIGKILL at one point inside its Nth
checkpoint write, as the OOM killer or a pre-empted node would: ``python kill_inside.py POINT N ARGS...``.

The training code is the real one, unchanged; this harness only wraps the call at ``POINT`` so the
process dies there:

* ``after-weights``: the model and tokenizer files are written, nothing else;
* ``mid-optimizer``: half of ``optimizer.pt``'s bytes are on disk;
* ``before-commit``: the checkpoint is complete, ``LATEST`` does not name it yet.
"""

from __future__ import annotations

import io
import os
import signal
import sys
from pathlib import Path


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def arm(point: str, nth: int) -> None:
    calls = 0

    def due() -> bool:
        nonlocal calls
        calls += 1
        return calls == nth

    if point == "after-weights":
        from seed_gym.training.policy import Policy

        save = Policy.save

        def save_then_die(self, folder, *args, **kwargs):  # type: ignore[no-untyped-def]
            out = save(self, folder, *args, **kwargs)
            if due():
                die()
            return out

        Policy.save = save_then_die
    elif point == "mid-optimizer":
        import torch

        torch_save = torch.save

        def half_then_die(obj, f, *args, **kwargs):  # type: ignore[no-untyped-def]
            if not (isinstance(f, (str, os.PathLike)) and Path(f).name == "optimizer.pt") or not due():
                return torch_save(obj, f, *args, **kwargs)
            buffer = io.BytesIO()
            torch_save(obj, buffer, *args, **kwargs)
            with open(f, "wb") as handle:
                handle.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
                handle.flush()
                os.fsync(handle.fileno())
            die()

        torch.save = half_then_die
    elif point == "before-commit":
        from seed_gym.training.runs import TrainRun

        commit = TrainRun.commit_checkpoint

        def die_first(self, update, keep):  # type: ignore[no-untyped-def]
            if due():
                die()
            return commit(self, update, keep)

        TrainRun.commit_checkpoint = die_first
    else:
        raise SystemExit(f"unknown point {point!r}")


if __name__ == "__main__":
    arm(sys.argv[1], int(sys.argv[2]))
    from seed_gym.cli import main

    main(sys.argv[3:])
