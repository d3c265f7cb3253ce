"""Local model folders: where a checkpoint is, and a cheap fingerprint of what is in it.

Models only ever load from local folders (``from_pretrained(DIR)``), never from a hub. The
fingerprint joins a run's identity, so a resumed run refuses to mix episodes of a model that was
retrained in place. It hashes every config/tokenizer file whole, and each weight file by its size
plus its first and last 4 MiB — enough to tell checkpoints apart without reading 15 GB.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from seed_gym.agents.backends.base import BackendError

_EDGE = 4 << 20
_WEIGHT_SUFFIXES = {".safetensors", ".bin", ".pt", ".pth", ".gguf"}


def resolve_model_dir(model: str | Path) -> Path:
    path = Path(model).expanduser()
    if not (path / "config.json").is_file():
        raise BackendError(
            f"{path} is not a model folder (no config.json). Models load from local folders only; "
            "build the tiny one with `seed-gym model init --out DIR` or point at a downloaded checkpoint")
    return path


def _hash_file(digest: "hashlib._Hash", path: Path) -> None:
    size = path.stat().st_size
    digest.update(f"{path.name}\0{size}\0".encode())
    with path.open("rb") as handle:
        if path.suffix not in _WEIGHT_SUFFIXES or size <= 2 * _EDGE:
            digest.update(handle.read())
            return
        digest.update(handle.read(_EDGE))
        handle.seek(size - _EDGE)
        digest.update(handle.read(_EDGE))


def model_fingerprint(model: str | Path) -> str:
    path = resolve_model_dir(model)
    digest = hashlib.sha256()
    for file in sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")):
        _hash_file(digest, file)
    return "sha256:" + digest.hexdigest()[:16]
