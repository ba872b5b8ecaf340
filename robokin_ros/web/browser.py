"""Headless Chromium screenshots of a web view (tests, benchmarks and the pictures of docs/).

WebGL in headless Chromium needs SwiftShader (software rendering): the flags below select it.
Debian's ``chromium`` package provides the browser (``apt-get install chromium``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--use-gl=swiftshader", "--enable-unsafe-swiftshader",
         "--hide-scrollbars", "--no-first-run", "--disable-extensions")


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome executable (``$ROBOKIN_CHROMIUM`` first), or None."""
    named = os.environ.get("ROBOKIN_CHROMIUM")
    if named:
        return shutil.which(named)
    return next((path for path in map(shutil.which, CANDIDATES) if path), None)


def screenshot(url: str, path: str | os.PathLike, size: tuple[int, int] = (1024, 768), wait_ms: int = 15000,
               chromium: str | None = None, timeout: float = 120.0) -> None:
    """Load ``url`` in headless Chromium and write a PNG of ``size`` (width, height) pixels to
    ``path`` after ``wait_ms`` of (virtual) time.

    Raises:
        FileNotFoundError: no Chromium found. RuntimeError: Chromium wrote no picture (its output kept).
    """
    chromium = chromium or find_chromium()
    if chromium is None:
        raise FileNotFoundError("no chromium executable (apt-get install chromium, or set ROBOKIN_CHROMIUM)")
    if os.path.exists(path):
        os.remove(path)
    # a profile of its own: two screenshots never share the user's profile (its lock, its cache)
    with tempfile.TemporaryDirectory(prefix="robokin-chromium-") as profile:
        done = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={os.fspath(path)}",
                               f"--window-size={size[0]},{size[1]}", f"--virtual-time-budget={wait_ms}", url],
                              capture_output=True, text=True, timeout=timeout, check=False)
    if not os.path.exists(path):
        raise RuntimeError(f"chromium wrote no screenshot (exit code {done.returncode}): {done.stderr[-2000:]}")
