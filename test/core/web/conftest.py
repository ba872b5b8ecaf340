"""Fixtures of the web view tests: a viser server on a free port (skipped without viser)."""

from __future__ import annotations

import pytest


@pytest.fixture
def server():
    """A viser server on a free port of 127.0.0.1, stopped after the test."""
    viser = pytest.importorskip("viser", reason="the web view needs viser (tools/requirements-web.txt)")
    server = viser.ViserServer(host="127.0.0.1", port=0, verbose=False)
    yield server
    server.stop()
