"""The lint layer: ruff with the project's rules (ruff.toml) over the package, tests, benchmarks,
launch file and tools. Skipped with a reason where ruff is not installed (a ROS 2 machine without
it); `make test` and `make check` install it."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None, reason="ruff is not installed (pip install ruff)")
def test_ruff_finds_nothing():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"ruff found problems:\n{result.stdout}{result.stderr}"


def test_the_package_ships_its_type_marker():
    """PEP 561: robokin_ros declares inline types (py.typed, installed with the package)."""
    assert (ROOT / "robokin_ros" / "py.typed").is_file()
    setup = (ROOT / "setup.py").read_text()
    assert "'py.typed'" in setup
