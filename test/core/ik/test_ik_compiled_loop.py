"""The compiled IK loop on the robot's generated step (robokin_ros.ik.compiled_loop) against the
numpy path (the oracle): same answers and iterations, to rounding; one problem given as lists
against the stacked route; time budgets and cancel tokens still honoured; numba off still works."""

from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np
import pytest

from robokin_ros import (
    ArgumentError,
    InvalidTargetError,
    JointLimitError,
    NonFiniteError,
    RobotModel,
    ShapeError,
    UnknownLinkError,
    frame_transform,
)
from robokin_ros.ik import TIMEOUT, CancelToken, IKOptionError, IKOptions, prepare_ik, solve_ik
from robokin_ros.ik import solver as ik_solver
from robokin_ros.ik.call import ik_call
from robokin_ros.ik.compiled_loop import CompiledLoop
from robokin_ros.kernels import accel
from robokin_ros.runtime import current_runtime
from robokin_ros.spatial import exp_so3, log_so3

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from peers import ERD_ROBOTS, example_robot_data_dir  # noqa: E402

ROBOTS = os.path.join(HERE, "..", "..", "..", "robokin_ros", "robots")
DEAD_BAND = {"axis_tolerances": [1e-3, 1e-3, 0.0, 0.0, 0.0, np.inf]}

needs_numba = pytest.mark.skipif(not accel.available(), reason="numba is not installed")


def arm(source: str) -> RobotModel:
    if source.startswith("erd:"):
        folder = example_robot_data_dir()
        if folder is None:
            pytest.skip("example-robot-data is not installed")
        return RobotModel.from_urdf_file(os.path.join(folder, ERD_ROBOTS[source[4:]]))
    return RobotModel.from_urdf_file(os.path.join(ROBOTS, source))


def loaded_loop(model: RobotModel, tip: str, max_iterations: int, **options) -> CompiledLoop:
    """The compiled loop of the solver that ``solve_ik(model, T, tip, **options)`` uses, loaded."""
    call = ik_call(model, (tip,), IKOptions(axis_tolerances=options.get("axis_tolerances"),
                                            max_iterations=max_iterations))
    assert call.solver.loop.accelerate()
    return call.solver.loop


def problems(model: RobotModel, tip: str, n: int, seed: int):
    """Seeds ``(n + 8, n_q)`` and targets ``(n + 8, 4, 4)``: FK of random configurations, then 4
    targets out of reach (restarts until the iterations are spent), then 4 rotated by nearly π
    from their seed's pose (the first iterations take the error's near-π branch)."""
    rng = np.random.default_rng(seed)
    seeds = model.random_configuration(n + 8, rng)
    T = frame_transform(model, model.random_configuration(n + 8, rng), model.root_link, tip)
    T[n:n + 4, :3, 3] += 5.0
    for k in range(n + 4, n + 8):
        axis = rng.normal(size=3)
        T[k] = frame_transform(model, seeds[k], model.root_link, tip)
        T[k, :3, :3] = T[k, :3, :3] @ exp_so3((np.pi - 1e-5) * axis / np.linalg.norm(axis))
    return seeds, T


def count_compiled_solves(monkeypatch) -> list:
    calls = []
    run_problem = CompiledLoop.run_problem

    def counted(self, *args, **kwargs):
        calls.append(1)
        return run_problem(self, *args, **kwargs)

    monkeypatch.setattr(CompiledLoop, "run_problem", counted)
    return calls


@needs_numba
@pytest.mark.parametrize("source, tip, options", [
    ("ur5e.urdf", "tool0", {}),
    ("panda.urdf", "panda_hand_tcp", {}),
    ("panda.urdf", "panda_hand_tcp", DEAD_BAND),   # target axes, a free axis: the general single path
    ("erd:xarm7", "link_eef", {}),
])
def test_compiled_loop_gives_the_numpy_paths_answers(run_with, monkeypatch, source, tip, options):
    """Same success, status, iteration count, and configuration to rounding (1e-9: the same
    algorithm, the arithmetic in another order) on random FK-made targets, unreachable ones and
    near-π rotations, one problem at a time."""
    model = arm(source)
    seeds, T = problems(model, tip, 40, 11)
    kw = dict(max_iterations=120, timeout=None, **options)
    run_with(accelerated=False)
    floats = [solve_ik(model, T[i], tip, seeds[i], rng=i, **kw) for i in range(len(T))]
    run_with(accelerated=True)
    loaded_loop(model, tip, 120, **options)
    calls = count_compiled_solves(monkeypatch)
    compiled = [solve_ik(model, T[i], tip, seeds[i], rng=i, **kw) for i in range(len(T))]
    assert len(calls) == len(T)
    for f, c in zip(floats, compiled):
        assert (bool(c.success), str(c.status), int(c.iterations)) == (bool(f.success), str(f.status), int(f.iterations))
        np.testing.assert_allclose(c.q, f.q, rtol=0.0, atol=1e-9)
        np.testing.assert_allclose([c.position_error, c.rotation_error], [f.position_error, f.rotation_error],
                                   rtol=1e-6, atol=1e-12)
    success = np.array([bool(c.success) for c in compiled])
    assert success[:40].mean() >= 0.9 and not success[40:44].any()
    assert all(str(c.status) == "max_iterations" for c in compiled[40:44])
    for c, Tk in zip(compiled, T):   # the answers, by FK
        if c.success:
            Tq = frame_transform(model, c.q, model.root_link, tip)
            bound = 1e-3 * np.sqrt(2) + 1e-5 if options else 1e-5   # position within its dead band
            assert np.linalg.norm(Tq[:3, 3] - Tk[:3, 3]) < bound + 1e-9


def count_batches(monkeypatch) -> list:
    """The sizes of the batches CompiledLoop.run_problems solves from now on."""
    sizes = []
    run_problems = CompiledLoop.run_problems

    def counted(self, kernels, target, seeds, out):
        sizes.append(len(seeds))
        return run_problems(self, kernels, target, seeds, out)

    monkeypatch.setattr(CompiledLoop, "run_problems", counted)
    return sizes


@needs_numba
@pytest.mark.parametrize("n", [30, 150])
def test_compiled_loop_in_batches(run_with, monkeypatch, n):
    """A small batch solves its problems one by one on the compiled loop, a large one on
    CompiledLoop.run_problems; without it, the batch iterates stacked in numpy: the same answers
    every way, to rounding, restarts included (each problem draws from its own stretch of the
    restart sequence): a batch's answers do not depend on whether the loop is loaded."""
    model = arm("panda.urdf")
    seeds, T = problems(model, "panda_hand_tcp", n - 8, 5)
    kw = dict(max_iterations=100, timeout=None, rng=3)
    run_with(accelerated=False)
    stacked = solve_ik(model, T, "panda_hand_tcp", seeds, **kw)
    run_with(accelerated=True)
    loaded_loop(model, "panda_hand_tcp", 100)
    calls, batches = count_compiled_solves(monkeypatch), count_batches(monkeypatch)
    compiled = solve_ik(model, T, "panda_hand_tcp", seeds, **kw)
    assert (len(calls), batches) == ((n, []) if n <= ik_solver.SCALAR_ROWS else (0, [n]))
    assert stacked.iterations[n - 8:n - 4].min() > 3 * ik_solver.STALL_ITERATIONS   # (restarted)
    np.testing.assert_array_equal(compiled.success, stacked.success)
    np.testing.assert_array_equal(compiled.status, stacked.status)
    np.testing.assert_array_equal(compiled.iterations, stacked.iterations)
    np.testing.assert_allclose(compiled.q, stacked.q, rtol=0.0, atol=1e-9)
    assert compiled.success[:n - 8].mean() >= 0.9 and not compiled.success[n - 8:n - 4].any()


@needs_numba
def test_a_batch_on_every_core_is_bit_identical_for_every_thread_count(run_with, monkeypatch):
    """CompiledLoop.run_problems in chunks over 1, 2 and 3 threads, and on one thread in pieces of
    its scratch's size: the same bits (each problem alone, restarts from its own stretch of the
    sequence), in the order of the problems; the chunks ran on several threads (their thread
    names); the compiled functions were called with the types they were compiled for (nothing
    compiled in this process)."""
    run_with(share_cores=False)   # (the threads asked, even when other processes hold the cores)
    from robokin_ros.ik import compiled_loop
    from robokin_ros.kernels import parallel
    model = arm("ur5e.urdf")
    seeds, T = problems(model, "tool0", 600, 9)
    loop = loaded_loop(model, "tool0", 150)
    names = set()
    run_chunks = parallel.run_chunks

    def watched(rows, work, *args, **kwargs):
        def named(start, stop):
            names.add(threading.current_thread().name)
            work(start, stop)
        return run_chunks(rows, named, *args, **kwargs)

    monkeypatch.setattr(parallel, "run_chunks", watched)
    batches = count_batches(monkeypatch)
    results = [solve_ik(model, T, "tool0", seeds, max_iterations=150, threads=k) for k in (1, 2, 3)]
    monkeypatch.setattr(compiled_loop, "SCRATCH_ROWS", 37)
    results.append(solve_ik(model, T, "tool0", seeds, max_iterations=150, threads=1))
    assert batches == [len(T)] * 4 and len(names) >= 2
    assert all(len(f.signatures) == 1 for f in loop.batch[1:]) and len(loop.batch.run_many.signatures) == 1
    for other in results[1:]:
        for field in ("q", "success", "status", "iterations", "position_error", "rotation_error"):
            np.testing.assert_array_equal(getattr(other, field), getattr(results[0], field))
    r = results[0]
    assert r.success[:600].mean() >= 0.95 and not r.success[600:604].any()
    assert (r.iterations[600:604] > 3 * ik_solver.STALL_ITERATIONS).all()
    ok = r.success
    Tq = frame_transform(model, r.q[ok], model.root_link, "tool0")   # honest: the answers, by FK
    assert np.abs(Tq[:, :3, 3] - T[ok, :3, 3]).max() <= 1e-5 + 1e-12
    with pytest.raises(ArgumentError, match="threads"):
        solve_ik(model, T, "tool0", seeds, threads=0)


@needs_numba
def test_a_batch_on_the_compiled_loop_keeps_its_time_budget_and_cancel_token():
    """A batch whose pooled time budget runs out, or whose token is cancelled, stops at the next
    check of a chunk: problems not started end ``timeout`` at their seeds (0 iterations). (4,004
    problems that each spend 500 iterations, ~1 s of work, against a pooled budget of 4 ms.)"""
    model = arm("ur5e.urdf")
    seeds, T = problems(model, "tool0", 4000, 13)
    T[:, :3, 3] += 5.0   # every target out of reach: each problem spends its iterations
    loaded_loop(model, "tool0", 500)
    result = solve_ik(model, T, "tool0", seeds, timeout=1e-6, threads=1)
    started = result.iterations > 0
    assert not result.success.any() and started.sum() < len(T)
    assert set(result.status[~started].tolist()) == {TIMEOUT}
    np.testing.assert_array_equal(result.q[~started], seeds[~started])
    token = CancelToken()
    token.cancel()
    cancelled = solve_ik(model, T, "tool0", seeds, cancel=token, threads=2)
    assert (cancelled.iterations == 0).all() and set(cancelled.status.tolist()) == {TIMEOUT}


@needs_numba
def test_a_batch_row_with_a_huge_iteration_budget_does_not_hold_off_the_budget_checks():
    """Rows of 2**62 iterations each (out of reach: they never converge): a chunk pauses the row
    it is in when its quota is spent, so a cancelled token ends the batch; a row the token
    stopped mid-way reports its best iterate and its iterations, within the limits."""
    model = arm("ur5e.urdf")
    seeds, T = problems(model, "tool0", 300, 14)
    T[:, :3, 3] += 5.0
    loaded_loop(model, "tool0", 2 ** 62)
    token = CancelToken()
    timer = threading.Timer(0.3, token.cancel)
    timer.start()
    try:
        result = solve_ik(model, T, "tool0", seeds, max_iterations=2 ** 62, cancel=token, threads=1)
    finally:
        timer.cancel()
    assert token.cancelled and set(result.status.tolist()) == {TIMEOUT} and not result.success.any()
    stopped = result.iterations > 0
    assert stopped.any() and model.within_limits(result.q).all()
    assert (result.position_error[stopped] < 5.0 * np.sqrt(3) + 1.0).all()


@needs_numba
def test_timeout_and_a_cancel_token_end_the_compiled_loop(monkeypatch):
    """An unreachable target ends near its time budget (checked every CHUNK iterations), and
    cancelling its token ends a solve without one; both report the best iterate."""
    model = arm("ur5e.urdf")
    loaded_loop(model, "tool0", 10**12)
    calls = count_compiled_solves(monkeypatch)
    far = frame_transform(model, model.home_configuration(), model.root_link, "tool0")
    far[:3, 3] += 5.0
    start = time.perf_counter()
    r = solve_ik(model, far, "tool0", timeout=0.05, max_iterations=10**12)
    elapsed = time.perf_counter() - start
    assert str(r.status) == TIMEOUT and not r.success and r.iterations > 0 and calls
    assert 0.05 <= elapsed   # (the loop checks the clock every ~30 µs)
    assert r.position_error < 5.0 * np.sqrt(3) - 0.1   # the best iterate, not the seed

    token = CancelToken()
    stopper = threading.Timer(0.05, token.cancel)
    stopper.start()
    try:
        r = solve_ik(model, far, "tool0", timeout=None, max_iterations=10**12, cancel=token)
    finally:
        stopper.join()
    assert token.cancelled
    assert str(r.status) == TIMEOUT and not r.success and r.iterations > 0
    assert r.position_error < 5.0 * np.sqrt(3) - 0.1


def test_without_numba_single_requests_run_the_numpy_path(run_with, monkeypatch):
    """The accelerator off (ROBOKIN_ACCEL=0) or numba absent: prepare_ik says so, and requests
    are solved in numpy on one row, answers checked by FK."""
    model = arm("panda.urdf")
    seeds, T = problems(model, "panda_hand_tcp", 10, 2)
    for setting, value in (("accelerated", False), ("available", False)):
        with monkeypatch.context() as m, current_runtime().use(accelerated=False if setting == "accelerated" else True):
            if setting == "available":   # numba not installed
                m.setattr(accel, "available", lambda: value)
            assert not prepare_ik(model, "panda_hand_tcp", max_iterations=300)
            calls = count_compiled_solves(m)
            results = [solve_ik(model, T[i], "panda_hand_tcp", seeds[i], max_iterations=300) for i in range(10)]
            assert not calls
            assert sum(bool(r.success) for r in results) >= 9
            for r, Tk in zip(results, T):
                if r.success:
                    Tq = frame_transform(model, r.q, model.root_link, "panda_hand_tcp")
                    assert np.linalg.norm(Tq[:3, 3] - Tk[:3, 3]) < 1e-5
                    assert np.linalg.norm(log_so3(Tk[:3, :3].T @ Tq[:3, :3])) < 1e-5


@pytest.mark.parametrize("source, tip, base, active, bounds", [
    ("panda.urdf", "panda_hand_tcp", None, None, None),              # a chain of the robot (fingers left out)
    ("ur5e.urdf", "tool0", "base_link", ["shoulder_pan_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
                                         "wrist_3_joint", "shoulder_lift_joint"], None),
    ("panda.urdf", "panda_hand_tcp", None, ["panda_joint1", "panda_joint2", "panda_joint4", "panda_joint6",
                                            "panda_finger_joint1"], None),  # 4 of 7 joints (J^T J), a finger ignored
    ("panda.urdf", "panda_hand_tcp", None, None, "limits"),          # the model's limits passed (the node does)
    ("ur5e.urdf", "tool0", None, None, "narrowed"),                  # MoveIt joint constraints
])
def test_single_request_path_equals_the_general_path(source, tip, base, active, bounds):
    """One target as a float64 (4, 4) array, as a one-tip list with a (1, 4, 4) array (what the
    node sends), as nested lists, and as a batch of one (target (1, 4, 4), seed (1, n_q): the
    stacked route): the same results (to rounding, ~1e-15: the numpy path answers until the
    compiled loop is loaded, which the first requests start), each an answer by FK (independently
    of the solver)."""
    model = arm(source)
    seeds, T = problems(model, tip, 12, 9)
    lower, upper = None, None
    if bounds is not None:
        lower, upper = model.q_lower.copy(), model.q_upper.copy()
        if bounds == "narrowed":
            lower[1], upper[2] = -1.0, 0.5
    for i in range(len(T)):
        kw = dict(base=base, active_joints=active, lower=lower, upper=upper, max_iterations=150, rng=i)
        fast = solve_ik(model, T[i], tip, seeds[i], **kw)
        listed = solve_ik(model, T[i][None], [tip], seeds[i], **kw)
        general = solve_ik(model, T[i].tolist(), tip, seeds[i].tolist(), **kw)
        stacked = solve_ik(model, T[i][None], tip, seeds[i][None], **kw)
        if bounds == "narrowed":
            assert -1.0 <= fast.q[1] and fast.q[2] <= 0.5
        assert stacked.q.shape == (1, model.n_q)
        one = type(stacked)(*(np.asarray(getattr(stacked, f))[0] for f in
                              ("q", "success", "position_error", "rotation_error", "iterations", "status")))
        for r in (listed, general, one):   # (to rounding: the robot's compiled step may load in between)
            assert r.q.shape == fast.q.shape == (model.n_q,) and r.success.shape == ()
            np.testing.assert_allclose(r.q, fast.q, rtol=0.0, atol=1e-12)
            assert (bool(r.success), str(r.status), int(r.iterations)) == \
                (bool(fast.success), str(fast.status), int(fast.iterations))
        if fast.success:   # the answer, by FK
            Tq = frame_transform(model, fast.q, base or model.root_link, tip)
            assert np.linalg.norm(Tq[:3, 3] - T[i][:3, 3]) < 1e-5 + 1e-9
            assert np.linalg.norm(log_so3(T[i][:3, :3].T @ Tq[:3, :3])) < 1e-5 + 1e-9
        if active is not None:   # joints not listed stay at the (clamped) seed
            still = [k for k, name in enumerate(model.q_names) if name not in active]
            np.testing.assert_array_equal(fast.q[still], np.clip(seeds[i], model.q_lower, model.q_upper)[still])


def test_single_request_path_refuses_what_the_general_path_refuses():
    model = arm("panda.urdf")
    T = frame_transform(model, model.home_configuration(), model.root_link, "panda_hand_tcp")
    skewed = T.copy()
    skewed[0, 0] += 1e-3
    with pytest.raises(InvalidTargetError):
        solve_ik(model, skewed, "panda_hand_tcp")
    bottom = T.copy()
    bottom[3, 0] = 1e-9
    with pytest.raises(InvalidTargetError):
        solve_ik(model, bottom, "panda_hand_tcp")
    nan_target = T.copy()
    nan_target[1, 3] = np.nan
    with pytest.raises(NonFiniteError):
        solve_ik(model, nan_target, "panda_hand_tcp")
    seed = model.home_configuration()
    seed[2] = np.inf
    with pytest.raises(NonFiniteError):
        solve_ik(model, T, "panda_hand_tcp", seed)
    with pytest.raises(UnknownLinkError):
        solve_ik(model, T, "no_such_link")
    for timeout in (0.0, -1.0, float("nan")):
        with pytest.raises(IKOptionError):
            solve_ik(model, T, "panda_hand_tcp", timeout=timeout)
    with pytest.raises(IKOptionError):
        solve_ik(model, T, "panda_hand_tcp", position_tolerance=-1.0)
    with pytest.raises(ShapeError):
        solve_ik(model, T, "panda_hand_tcp", lower=np.zeros(3))
    with pytest.raises(JointLimitError):
        solve_ik(model, T, "panda_hand_tcp", lower=model.q_upper + 1.0)
    # a rotation off by less than the check's tolerance is still accepted (by the general path)
    tilted = T.copy()
    tilted[:3, :3] *= 1.0 + 2e-7   # det 1 + 6e-7: beyond the float check, within the tolerance
    assert solve_ik(model, tilted, "panda_hand_tcp").success


@needs_numba
def test_the_compiled_log_so3_equals_numpys():
    """The numba SO(3) log (the generic loop's, which every generated step imports) against
    spatial.log_so3, near π (where the axis comes from the symmetric part), at π exactly, near 0
    and at generic angles."""
    from robokin_ros.ik import compiled_loop, generic_loop

    compiled_log = generic_loop.log_so3
    assert "from robokin_ros.ik.generic_loop import log_so3, loop, loop_rows," in compiled_loop.shared_imports()
    rng = np.random.default_rng(6)
    axes = rng.normal(size=(60, 3))
    axes /= np.linalg.norm(axes, axis=1)[:, None]
    angles = np.concatenate([np.pi - rng.uniform(0, 1e-3, 40), [np.pi] * 5, rng.uniform(1e-8, 3.0, 10), [0.0, 1e-9, 1e-7, 1e-5, 1e-3]])
    for axis, angle in zip(axes, angles):
        R = exp_so3(angle * axis)
        np.testing.assert_allclose(compiled_log(tuple(R.reshape(9).tolist())), log_so3(R), rtol=0.0, atol=1e-12)
