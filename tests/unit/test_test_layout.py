"""The README's test command collects ``tests/unit`` and ``tests/integration`` in one pytest run.

The test folders are not packages (integration tests import their helpers, such as ``browser``,
from their own folder), so pytest imports every test file under its basename: two files with one
basename in different folders stop the whole run at collection.
"""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_files_share_a_basename():
    names = Counter(path.name for path in TESTS.rglob("*.py") if path.name != "conftest.py")
    shared = sorted(name for name, count in names.items() if count > 1)
    assert shared == [], f"rename one of each: {shared}"
