"""Spawned worker processes that never re-run the user's script.

A ``spawn`` child normally re-imports the parent's ``__main__`` (as ``__mp_main__``) before it
unpickles its task. When that main module is a plain script calling seed-gym at its top level
(no ``if __name__ == "__main__":`` guard), every child re-runs the script: it asks for the same
data again and waits forever on the lock its parent holds, or fails while bootstrapping. Workers
whose code lives entirely in installed modules (ALFWorld's game generator, for example) need
nothing from ``__main__``, so :func:`main_free_spawn_context` starts them without it: the parent
hides its main module while a child's start-up data is written, which is all ``multiprocessing``
reads it for. Scripts, notebooks and the REPL then behave the same.

Not for workers that may need objects defined in the user's script (an env class registered
from ``__main__``): those keep the standard spawn context (``seed_gym.pools.spawn_context_for``
chooses per env for the process pool's env workers).
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Iterator
from contextlib import contextmanager
from multiprocessing.context import SpawnContext, SpawnProcess
from typing import Any

_main_swap = threading.Lock()


@contextmanager
def _main_hidden() -> Iterator[None]:
    """``sys.modules["__main__"]`` is a bare module while a child is being launched."""
    with _main_swap:
        real_main = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")  # no __file__, __spec__ None
        try:
            yield
        finally:
            sys.modules["__main__"] = real_main


class _MainFreeProcess(SpawnProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        with _main_hidden():
            return SpawnProcess._Popen(process_obj)


class _MainFreeSpawnContext(SpawnContext):
    Process = _MainFreeProcess


def main_free_spawn_context() -> SpawnContext:
    """A ``spawn`` context (for ``ProcessPoolExecutor(mp_context=...)`` and the like) whose
    children do not import the parent's ``__main__``."""
    return _MainFreeSpawnContext()
