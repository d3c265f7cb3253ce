"""The plugin author's guide as the tests read it: ``docs/adding-an-env.md`` shows every file of the
example package in a fenced block headed ```` ```<lang> file=<path> ````; :func:`write_example`
writes those blocks out as a package, so the tests install exactly the code the guide shows."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "docs" / "adding-an-env.md"
EXAMPLE = REPO / "docs" / "examples" / "seed-gym-lamps"
_BLOCK = re.compile(r"^```\w+ file=(\S+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def guide_files() -> dict[str, str]:
    """Path (relative to the package root) -> text, for every file block of the guide."""
    files: dict[str, str] = {}
    for path, text in _BLOCK.findall(GUIDE.read_text(encoding="utf-8")):
        assert path not in files, f"the guide shows {path} twice"
        files[path] = text
    return files


def example_files() -> dict[str, str]:
    """The same for the package in ``docs/examples`` (build leftovers aside)."""
    return {str(p.relative_to(EXAMPLE)): p.read_text(encoding="utf-8") for p in sorted(EXAMPLE.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts and ".egg-info" not in str(p) and "build" not in p.parts}


def write_example(folder: Path) -> Path:
    """The package the guide shows, written into ``folder``; returns ``folder``."""
    for path, text in guide_files().items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text, encoding="utf-8")
    return folder
