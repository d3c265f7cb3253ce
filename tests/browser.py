"""Headless Chromium for the page tests (Debian chromium + chromium-driver, driven by selenium):
a driver at a given window width, full-page screenshots, and layout facts read through JavaScript."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

#: Where page screenshots are kept after a test run (git-ignored).
OUTPUT_DIR = Path(__file__).resolve().parent / "_output"
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run")

#: Elements whose right edge passes the viewport (what would run off the page), as "tag.class: text".
OVERFLOWING_JS = """
const width = document.documentElement.clientWidth;
return [...document.querySelectorAll('body *')].filter(e => {
  if (!e.getClientRects().length) return false;
  const box = e.getBoundingClientRect();
  return box.right > width + 1 && !e.closest('.scroll');
}).map(e => e.tagName.toLowerCase() + '.' + e.className + ': ' + (e.textContent || '').slice(0, 60));
"""


@contextlib.contextmanager
def chromium(tmp_path: Path, width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Chromium driver with a fresh profile, browser console logs kept; quit afterwards."""
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    browser, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not (browser and driver_path):
        pytest.skip("Debian chromium + chromium-driver not installed (README set-up command 2 installs them)")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in (*FLAGS, f"--window-size={width},{height}", f"--user-data-dir={tempfile.mkdtemp(dir=tmp_path)}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(driver_path))
    try:
        yield driver
    finally:
        driver.quit()


def console_errors(driver: Any) -> list[dict[str, Any]]:
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def full_page_screenshot(driver: Any, name: str, width: int = 1280, max_height: int = 12000) -> Path:
    """The whole page at ``width`` px as ``tests/_output/<name>``; returns its path."""
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(width, min(height + 120, max_height))
    OUTPUT_DIR.mkdir(exist_ok=True)
    path = OUTPUT_DIR / name
    driver.save_screenshot(str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return path
