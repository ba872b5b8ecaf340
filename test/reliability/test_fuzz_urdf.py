"""URDF mutation fuzzing, bounded for ``make test`` (``make fuzz`` runs the same mutations for
a time budget): every mutant of a real description loads and works, or is a RobokinError."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzz import check, mutate, seed_documents  # noqa: E402

DOCUMENTS = seed_documents()


@pytest.mark.slow   # 300 hypothesis cases
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(DOCUMENTS) - 1), seed=st.integers(0, 2 ** 32 - 1), steps=st.integers(1, 4))
def test_mutated_descriptions_load_or_raise_robokin_errors(index, seed, steps):
    label, text = DOCUMENTS[index]
    mutant = mutate(text, random.Random(seed), steps)
    with np.errstate(all="ignore"):
        problem = check(mutant)
    assert problem is None, f"{label} (seed {seed}, {steps} steps): {problem}"


def test_the_checker_catches_a_non_robokin_exception(monkeypatch):
    """The oracle can fail: an exception of another type from the loader is reported."""
    import robokin_ros as rk

    def broken(text):
        raise KeyError("boom")
    monkeypatch.setattr(rk.RobotModel, "from_urdf", staticmethod(broken))
    assert "KeyError" in check(DOCUMENTS[0][1])


def test_mutations_change_the_text():
    rng = random.Random(0)
    text = DOCUMENTS[0][1]
    assert sum(mutate(text, rng, 2) != text for _ in range(50)) >= 45
