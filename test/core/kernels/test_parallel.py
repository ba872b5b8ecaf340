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


@pytest.fixture(autouse=True)
def every_thread_asked(run_with):
    """The threads asked run even when other processes hold the cores (this machine's tests
    share it): what is tested here is how rows are shared, not how many threads are chosen."""
    run_with(share_cores=False)


def test_thread_count_reads_the_keyword_then_the_runtime(run_with):
    run_with(threads=1)
    assert parallel.thread_count() == 1
    assert parallel.thread_count(5) <= 5
    run_with(threads=None)
    assert 1 <= parallel.thread_count() <= parallel.available_cores()


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_a_bad_thread_cap_is_refused_by_name(bad):
    with pytest.raises(ArgumentError, match="threads"):
        parallel.thread_count(bad)


@pytest.mark.parametrize("bad", ["0", "two", "-3"])
def test_a_bad_environment_cap_is_refused_by_name(bad, monkeypatch):
    from robokin_ros.runtime import THREADS_ENVIRONMENT, settings_from_environment

    monkeypatch.setenv(THREADS_ENVIRONMENT, bad)
    with pytest.raises(ArgumentError, match=THREADS_ENVIRONMENT):
        settings_from_environment()


def test_forward_kinematics_refuses_a_bad_thread_cap():
    model = rk.RobotModel.from_urdf_file(UR5E)
    with pytest.raises(ArgumentError, match="threads"):
        rk.forward_kinematics(model, np.zeros((3, model.n_q)), threads=0)


def test_chunks_cover_every_row_once_on_two_threads_at_once(run_with):
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
def test_batched_kernels_are_bit_identical_for_every_thread_count(accelerated, run_with, monkeypatch):
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
        run_with(threads=threads)
        return [rk.forward_kinematics(model, q, threads=threads), rk.jacobian(model, q, "tool0", threads=threads),
                rk.rnea(model, q, v, v), rk.self_collisions(checker, q).in_collision]

    one = results(1)
    import numba
    compiled = []   # (a kernel called with types it was not compiled for would compile here)
    compile_now = numba.core.dispatcher.Dispatcher.compile
    monkeypatch.setattr(numba.core.dispatcher.Dispatcher, "compile",
                        lambda self, sig: compiled.append(self.py_func.__name__) or compile_now(self, sig))
    for threads in (2, 3):
        for a, b in zip(one, results(threads)):
            assert a.dtype == b.dtype and np.array_equal(a, b)
    q.flags.writeable = False   # read-only inputs take the same compiled code
    assert np.array_equal(rk.forward_kinematics(model, q, threads=2), one[0])
    assert np.array_equal(rk.rnea(model, q, np.broadcast_to(v[0], v.shape), v), rk.rnea(model, q, v[[0] * len(v)], v))
    assert compiled == []


def test_run_rows_runs_the_kernel_on_every_thread_at_once_and_each_row_once():
    """run_rows hands the same kernel call to the pool and runs it on the caller; both are in it
    at once (a barrier) and take rows off the shared claims (here a Python kernel with a lock:
    the compiled ones take them atomically)."""
    rows = parallel.MIN_PARALLEL_ROWS + 77
    x = np.arange(rows, dtype=float)[:, None]
    out = np.zeros((rows, 1))
    seen, names, lock = np.zeros(rows, np.int64), set(), threading.Lock()
    barrier = threading.Barrier(2, timeout=60.0)

    def kernel(xb, o, claims):
        barrier.wait()
        names.add(threading.current_thread().name)
        while True:
            with lock:
                start = int(claims[0])
                claims[0] += claims[1]
            if start >= rows:
                return
            stop = min(start + int(claims[1]), rows)
            o[start:stop] = 2.0 * xb[start:stop]
            seen[start:stop] += 1

    parallel.run_rows(kernel, (x,), out, threads=2)
    assert (seen == 1).all() and np.array_equal(out, 2.0 * x) and len(names) == 2


@pytest.mark.skipif(not accel.available(), reason="numba is not installed")
def test_a_compiled_kernel_shares_its_rows_between_threads_and_returns_when_all_are_written():
    """A generated batch kernel compiled by numba: on 1 and 3 threads (more threads than claims
    at the end) the same bits, every row written once (the rows-written count), and a caller
    whose rows are done waits for the others' (its return means the output is complete)."""
    import numba

    from robokin_ros.kernels import numba_source

    body = ["    r0 = cos(q[0]) * q[1] + q[2]", "    r1 = sin(q[1]) - q[0] * q[2]"]
    source = numba_source.wrapper_source(body, ["r0", "r1", 1.5], (2, 1)).replace("cache=True", "cache=False")
    namespace: dict = {}
    exec(compile(source, "<generated>", "exec"), namespace)  # noqa: S102
    kernel = namespace["kernel"]
    rng = np.random.default_rng(5)
    rows = parallel.MIN_PARALLEL_ROWS * 3 + 5
    a, b = rng.normal(size=(rows, 2)), rng.normal(size=(rows, 1))
    results = []
    for threads in (1, 3):
        out = np.full((rows, 3), np.nan)
        parallel.run_rows(kernel, (a, b), out, threads=threads)
        results.append(out)
    expected = np.column_stack([np.cos(a[:, 0]) * a[:, 1] + b[:, 0], np.sin(a[:, 1]) - a[:, 0] * b[:, 0],
                                np.full(rows, 1.5)])
    np.testing.assert_allclose(results[0], expected, rtol=0, atol=1e-15)
    assert np.array_equal(results[0], results[1])
    taken = np.array([0, 64, 0], np.int64)
    kernel(a, b, np.empty((rows, 3)), taken)
    assert taken[2] == rows and taken[0] >= rows
    assert isinstance(kernel, numba.core.registry.CPUDispatcher)
