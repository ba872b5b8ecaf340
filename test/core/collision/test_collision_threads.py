"""Batched self-collision on every core (issue 31): a batch is handed out in chunks over the
threads, each chunk checked from its kernel call to its names on one thread, and every result
(verdicts, named pairs, pair states, distances) is the same bits on 1, 2 and 3 threads, on the
compiled check and on numpy's path alike.

Before: the compiled kernel split over threads, but coal's pairs and the per-configuration lists
were built afterwards on the calling thread (about 60 % of the call, no faster on 2 threads).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import CollisionModel, RobotModel, self_collisions
from robokin_ros.collision import in_collision, pair_collisions
from robokin_ros.collision.single import BATCH_CHUNK, SingleCheck
from robokin_ros.kernels import accel as rk_accel
from robokin_ros.kernels.selection import use
from robokin_ros.runtime import current_runtime

pytest.importorskip("coal")

ROBOTS = Path(__file__).resolve().parents[3] / "robokin_ros" / "robots"
PANDA_XML = (ROBOTS / "panda.urdf").read_text()
PANDA_SRDF = (ROBOTS / "panda.srdf").read_text()


def panda() -> tuple[RobotModel, CollisionModel]:
    model = RobotModel.from_urdf(PANDA_XML)
    return model, CollisionModel.build(model, srdf=PANDA_SRDF)


def every_result(cm: CollisionModel, q: np.ndarray, threads: int, monkeypatch) -> list:
    """Every batched result of ``q`` on ``threads`` threads, as arrays and lists."""
    with current_runtime().use(threads=threads, share_cores=False):
        named = self_collisions(cm, q)
        near = self_collisions(cm, q[:200], distance=True)
        return [named.in_collision, named.pairs, in_collision(cm, q), pair_collisions(cm, q), near.min_distance]


def same(a, b) -> bool:
    return np.array_equal(a, b) and np.asarray(a).dtype == np.asarray(b).dtype if isinstance(a, np.ndarray) else a == b


@pytest.mark.parametrize("compiled", [True, False])
def test_batched_results_are_the_same_bits_on_every_thread_count(compiled, monkeypatch):
    if compiled and not rk_accel.active():
        pytest.skip("numba is not installed or the accelerator is off")
    model, cm = panda()
    if compiled:
        assert cm.prepare()
    q = model.random_configuration(4 * BATCH_CHUNK + 77, np.random.default_rng(31))   # a short last chunk
    with use(accelerated=compiled):
        one = every_result(cm, q, 1, monkeypatch)
        assert 0 < one[0].sum() < len(q)   # both verdicts
        for threads in (2, 3):
            assert all(same(a, b) for a, b in zip(one, every_result(cm, q, threads, monkeypatch))), threads


def test_chunks_run_from_kernel_to_names_on_two_threads_at_once(run_with, monkeypatch):
    """Two chunks of one call wait for each other (a barrier) inside the compiled check: they pass
    only when two threads check at once."""
    run_with(share_cores=False)   # (the threads asked, even when other processes hold the cores)
    if not rk_accel.active():
        pytest.skip("numba is not installed or the accelerator is off")
    model, cm = panda()
    assert cm.prepare()
    q = model.random_configuration(4 * BATCH_CHUNK, np.random.default_rng(32))
    expected = self_collisions(cm, q)
    barrier, names = threading.Barrier(2, timeout=60.0), set()
    states_rows = SingleCheck.states_rows

    def meeting(self, qb, poses=False):
        if not names:
            barrier.wait()
        names.add(threading.current_thread().name)
        return states_rows(self, qb, poses)

    monkeypatch.setattr(SingleCheck, "states_rows", meeting)
    run_with(threads=2)
    found = self_collisions(cm, q)
    assert len(names) == 2
    assert found.pairs == expected.pairs


def test_a_configuration_the_kernel_refuses_is_decided_by_numpy_alone(monkeypatch):
    """A configuration whose geometry poses the kernel finds not finite (n_hit = -1: an
    overflowing mimic joint) goes to numpy's path on its own; its chunk stays on the kernel."""
    if not rk_accel.active():
        pytest.skip("numba is not installed or the accelerator is off")
    model, cm = panda()
    assert cm.prepare()
    q = model.random_configuration(300, np.random.default_rng(33))
    with use(accelerated=False):
        reference = self_collisions(cm, q)
    check = cm.single_check
    kernel, refused = check._batch_kernel, [3, 4, 250]

    def refusing(qb, mode, poses, index, counts):
        kernel(qb, mode, poses, index, counts)
        counts[refused, 0] = -1

    monkeypatch.setattr(check, "_batch_kernel", refusing)
    fallback = []
    numpy_states = SingleCheck._fallback
    monkeypatch.setattr(SingleCheck, "_fallback", lambda self, qb, first: fallback.append(qb) or numpy_states(self, qb, first))
    assert check.states_rows(q)[0].tolist() == pair_collisions(cm, q).tolist()   # (pair_collisions: refusing too)
    assert self_collisions(cm, q).pairs == reference.pairs
    assert in_collision(cm, q).tolist() == reference.in_collision.tolist()
    assert all(np.array_equal(row, q[k:k + 1]) for row, k in zip(fallback, refused * 4))
    assert len(fallback) == 4 * len(refused)


@pytest.mark.parametrize("enabled", [True, False])
def test_a_batch_leaves_the_collector_as_it_was_and_makes_its_lists_on_reading(enabled, monkeypatch):
    """No process-wide switch in a library call: the garbage collector stays as the caller set it
    during the call (seen from inside it) and after; the batch keeps its pairs as index arrays
    and makes the per-configuration lists on first reading (then keeps them)."""
    import gc

    from robokin_ros.collision import batch

    model, cm = panda()
    q = model.random_configuration(20000, np.random.default_rng(34))
    collector_on = []
    entries = batch._pair_entries

    def recording(*args):
        collector_on.append(gc.isenabled())
        return entries(*args)

    monkeypatch.setattr(batch, "_pair_entries", recording)
    (gc.enable if enabled else gc.disable)()
    try:
        found = self_collisions(cm, q)
        assert gc.isenabled() == enabled
    finally:
        gc.enable()
    assert len(collector_on) > 1 and all(on == enabled for on in collector_on)
    assert "pairs" not in vars(found)   # not made yet
    pairs = found.pairs
    assert found.pairs is pairs and len(pairs) == len(q) and any(pairs)
    names = cm.pair_names
    states = pair_collisions(cm, q)
    assert pairs == [list(dict.fromkeys(names[k] for k in np.flatnonzero(row))) for row in states]
    assert [bool(p) for p in pairs] == found.in_collision.tolist()
