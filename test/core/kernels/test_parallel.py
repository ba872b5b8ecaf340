"""Every core in one call (issue 31): batched kernels over chunks on threads, bit-identical results."""

from __future__ import annotations

import pathlib
import threading

import numpy as np
import pytest

import robokin_ros as rk
from robokin_ros.errors import ArgumentError
from robokin_ros.kernels import accel, parallel

UR5E = pathlib.Path(rk.__file__).resolve().parent / "robots" / "ur5e.urdf"


def test_thread_count_reads_the_keyword_then_the_environment_then_the_cores(monkeypatch):
    monkeypatch.delenv(parallel.ENVIRONMENT, raising=False)
    assert parallel.thread_count() == parallel.available_cores()
    monkeypatch.setenv(parallel.ENVIRONMENT, "3")
    assert parallel.thread_count() == 3
    assert parallel.thread_count(5) == 5


def test_the_process_default_comes_after_the_keyword_and_the_environment(monkeypatch):
    monkeypatch.delenv(parallel.ENVIRONMENT, raising=False)
    try:
        parallel.set_default_threads(1)
        assert parallel.thread_count() == 1 and parallel.thread_count(3) == 3
        monkeypatch.setenv(parallel.ENVIRONMENT, "2")
        assert parallel.thread_count() == 2
        monkeypatch.delenv(parallel.ENVIRONMENT)
        with pytest.raises(ArgumentError, match="threads"):
            parallel.set_default_threads(0)
        assert parallel.thread_count() == 1   # (a refused default changes nothing)
    finally:
        parallel.set_default_threads(None)
    assert parallel.thread_count() == parallel.available_cores()


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_a_bad_thread_cap_is_refused_by_name(bad):
    with pytest.raises(ArgumentError, match="threads"):
        parallel.thread_count(bad)


@pytest.mark.parametrize("bad", ["0", "two", "-3"])
def test_a_bad_environment_cap_is_refused_by_name(bad, monkeypatch):
    monkeypatch.setenv(parallel.ENVIRONMENT, bad)
    with pytest.raises(ArgumentError, match=parallel.ENVIRONMENT):
        parallel.thread_count()


def test_forward_kinematics_refuses_a_bad_thread_cap():
    model = rk.RobotModel.from_urdf_file(UR5E)
    with pytest.raises(ArgumentError, match="threads"):
        rk.forward_kinematics(model, np.zeros((3, model.n_q)), threads=0)


def test_chunks_cover_every_row_once_on_two_threads_at_once():
    """Two chunks wait for each other (a barrier): they can only pass on two threads at once."""
    rows = parallel.MIN_PARALLEL_ROWS + 123
    seen = np.zeros(rows, np.int64)
    barrier = threading.Barrier(2, timeout=60.0)
    names = set()

    def work(start, stop):
        if start < 2 * parallel.CHUNK_ROWS:
            barrier.wait()
        names.add(threading.current_thread().name)
        seen[start:stop] += 1

    parallel.run_chunks(rows, work, threads=2)
    assert (seen == 1).all()
    assert len(names) == 2


def test_one_thread_and_small_batches_run_on_the_caller():
    calls = []
    parallel.run_chunks(parallel.MIN_PARALLEL_ROWS - 1, lambda a, b: calls.append((a, b)), threads=4)
    parallel.run_chunks(parallel.MIN_PARALLEL_ROWS * 2, lambda a, b: calls.append((a, b)), threads=1)
    assert calls == [(0, parallel.MIN_PARALLEL_ROWS - 1), (0, parallel.MIN_PARALLEL_ROWS * 2)]


def test_an_error_in_a_chunk_reaches_the_caller_after_every_chunk():
    rows = parallel.MIN_PARALLEL_ROWS * 2
    done = []

    def work(start, stop):
        done.append(start)
        if start == parallel.CHUNK_ROWS:
            raise ValueError("chunk failed")

    with pytest.raises(ValueError, match="chunk failed"):
        parallel.run_chunks(rows, work, threads=2)
    assert sorted(done) == list(range(0, rows, parallel.CHUNK_ROWS))


@pytest.mark.slow
@pytest.mark.skipif(not accel.available(), reason="numba is not installed")
def test_batched_kernels_are_bit_identical_for_every_thread_count(accelerated, monkeypatch):
    """FK, a tip Jacobian, RNEA and self-collision of a batch (odd size: a short last chunk)
    give the same bits on 1, 2 and 3 threads."""
    model = rk.RobotModel.from_urdf_file(UR5E)
    assert rk.prepare(model, frames=[("tool0",)], dynamics=("rnea",))
    q = model.random_configuration(parallel.MIN_PARALLEL_ROWS * 2 + 77, np.random.default_rng(3))
    v = np.random.default_rng(4).normal(size=q.shape)
    checker = rk.collision_model(model)
    rk.self_collisions(checker, q[:300])
    for thread in threading.enumerate():   # the collision kernel's background load
        if thread.name == "robokin_ros accel":
            thread.join(600.0)

    def results(threads):
        monkeypatch.setenv(parallel.ENVIRONMENT, str(threads))
        return [rk.forward_kinematics(model, q, threads=threads), rk.jacobian(model, q, "tool0", threads=threads),
                rk.rnea(model, q, v, v), rk.self_collisions(checker, q).in_collision]

    one = results(1)
    for threads in (2, 3):
        for a, b in zip(one, results(threads)):
            assert a.dtype == b.dtype and np.array_equal(a, b)


def test_guided_chunks_shrink_and_cover_every_row_once():
    rows = 20000
    starts = parallel._guided_starts(rows, 2, 1024)
    sizes = np.diff(starts + [rows])
    assert starts[0] == 0 and (sizes > 0).all()
    assert sizes[0] == rows // 4 and (np.diff(sizes) <= 0).all()   # 1 / (2 threads) of the rows left
    assert (sizes[:-1] >= 1024).all()
    seen = np.zeros(rows, np.int64)

    def work(start, stop):
        seen[start:stop] += 1

    parallel.run_chunks(rows, work, threads=2, guided=True)
    assert (seen == 1).all()
