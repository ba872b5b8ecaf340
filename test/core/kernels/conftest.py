"""Fixtures of the kernel tests: the numba accelerator on, its compiled code in a temporary cache."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A temporary kernel cache directory per test module."""
    return str(tmp_path_factory.mktemp("robokin_cache"))


@pytest.fixture
def accelerated(run_with, cache, monkeypatch):
    """Accelerator on, compiled code in the module's temporary cache directory."""
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", cache)
    run_with(accelerated=True)
    return cache
