"""Shared fixtures. Unit tests (tests/unit) are fast and need no engine; integration tests
(tests/integration, marked ``integration``) run real engines and servers."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
OFFICIAL_ARCHIVE = SHARED_DATA / "alfworld-official-valid.tar.xz"


@pytest.fixture(scope="session", autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory):
    """Generated data never lands in the user's ~/.cache during tests (one cache per session;
    ``SEED_GYM_TEST_HOME`` keeps it across sessions)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SEED_GYM_HOME", os.environ.get("SEED_GYM_TEST_HOME") or
                     str(tmp_path_factory.getbasetemp() / "seed-gym-home"))
        yield


@pytest.fixture(scope="session")
def official_alfworld(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real ALFWorld valid games from ../shared/data, unpacked once per session."""
    if not OFFICIAL_ARCHIVE.exists():
        pytest.skip(f"real ALFWorld games not found at {OFFICIAL_ARCHIVE} (shared reference data)")
    root = tmp_path_factory.mktemp("alfworld-official")
    with tarfile.open(OFFICIAL_ARCHIVE) as archive:
        archive.extractall(root, filter="data")
    return root / "json_2.1.1"


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny offline model (seed 0, size ``tiny``), built once per session into a temp folder
    from the env corpus (a few seconds; nothing is downloaded or cached across sessions)."""
    pytest.importorskip("transformers", reason="the tiny model needs torch and transformers (the [hf] extra)")
    from seed_gym.agents.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-model") / "model", seed=0, size="tiny")
