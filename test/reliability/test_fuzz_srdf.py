"""SRDF mutation fuzzing, bounded for ``make test`` (``make fuzz`` runs the same mutations for a
time budget): every mutant of a real SRDF reads against its robot into a usable description, or
is a RobokinError -- never a RecursionError, another exception or a slow read (issue 24, case 2)."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzz import check_srdf, mutate_srdf, seed_srdfs  # noqa: E402

SRDFS = seed_srdfs()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(SRDFS) - 1), seed=st.integers(0, 2 ** 32 - 1), steps=st.integers(1, 4))
def test_mutated_srdfs_read_or_raise_robokin_errors(index, seed, steps):
    label, model, text = SRDFS[index]
    mutant = mutate_srdf(text, random.Random(seed), steps)
    with np.errstate(all="ignore"):
        problem = check_srdf(model, mutant)
    assert problem is None, f"{label} (seed {seed}, {steps} steps): {problem}"


def test_the_srdf_checker_catches_a_recursion_error(monkeypatch):
    """The oracle can fail: a RecursionError out of the reader (what a deep subgroup chain did)
    is reported."""
    import fuzz

    def broken(text, model):
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(fuzz, "parse_srdf", broken)
    label, model, text = SRDFS[0]
    assert "RecursionError" in check_srdf(model, text)


def test_the_srdf_checker_reports_a_read_that_does_not_finish(monkeypatch):
    """A hang (what a shared-subgroup DAG was: exponential time) is a finding, not a stuck run."""
    import fuzz

    def endless(text, model):
        while True:
            pass
    monkeypatch.setattr(fuzz, "parse_srdf", endless)
    monkeypatch.setattr(fuzz, "SLOW_SECONDS", 0.2)
    label, model, text = SRDFS[0]
    assert "did not finish within 0.2 s" in check_srdf(model, text)


def test_srdf_mutations_change_the_text_and_reach_the_stress_blocks():
    rng = random.Random(0)
    label, model, text = SRDFS[0]
    mutants = [mutate_srdf(text, rng, 2) for _ in range(200)]
    assert sum(m != text for m in mutants) >= 180
    assert any('name="z1199"' in m for m in mutants) and any("<virtual_joint" in m for m in mutants)
