"""Threads racing on shared models while a kernel compiles in the background, and a bounded
soak: model churn and 100,000 calls leave no model alive and bounded memory."""

from __future__ import annotations

import gc
import os
import threading
import weakref
from pathlib import Path

import numpy as np
import pytest

import robokin_ros as rk
from robokin_ros import RobotModel
from robokin_ros.kernels import accel, compile_process, selection
from robokin_ros.kernels.fk_codegen import compiled_fk

ROBOTS = Path(__file__).resolve().parents[2] / "robokin_ros" / "robots"
XML = (ROBOTS / "panda.urdf").read_text()


def reference_fk(model, q):
    with selection.use("generic"):
        return rk.forward_kinematics(model, q)


@pytest.mark.slow   # compiles a kernel in a cold cache
def test_threads_agree_while_a_kernel_compiles_in_the_background(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path))   # a cold cache: the batch below starts a compile
    model = RobotModel.from_urdf(XML)
    rng = np.random.default_rng(0)
    batches = [model.random_configuration(accel.MIN_BATCH, rng=rng) for _ in range(4)]
    expected = [reference_fk(model, b) for b in batches]
    tip = "panda_hand_tcp"
    targets = [rk.frame_transform(model, b[0], model.root_link, tip) for b in batches]
    errors = []

    def work(k):
        try:
            for _ in range(5):
                np.testing.assert_allclose(rk.forward_kinematics(model, batches[k]), expected[k], atol=1e-12)
                result = rk.solve_ik(model, targets[k], tip, seed=batches[k][0] + 0.01, timeout=2.0)
                assert bool(result.success)
                rk.jacobian(model, batches[k][:3], tip)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k % 4,)) for k in range(8)]   # two threads per batch
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors[0]
    join_background_compiles()
    assert compiled_fk(model)._accelerated is not None or not accel.available()


@pytest.fixture(autouse=True)
def background_compiles_at_our_priority():
    """These tests wait for background compiles: theirs run at this process's priority (a
    Runtime setting), not the default lowest, at which they starved while other processes held
    every core (make test with a spinning process per core: 120 s waits ran out)."""
    with rk.using(rk.Runtime(background_niceness=0)) as runtime:
        yield runtime
    runtime.close()


def join_background_compiles():
    """Wait for the background compiles: bounded by the compile's own limit (a compile process
    past ``COMPILE_TIMEOUT`` is stopped), not by a guess at the scheduler (120 s ran out with a
    spinning process on every core)."""
    for thread in threading.enumerate():
        if thread.name == "robokin_ros accel":
            thread.join(timeout=compile_process.COMPILE_TIMEOUT + 60)


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.slow   # 300,000 calls of each kind
@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc for RSS")
def test_model_churn_and_many_calls_leave_nothing_behind():
    def churn(n):
        refs = []
        for k in range(n):
            model = RobotModel.from_urdf(XML.replace('name="panda"', f'name="panda{k}"', 1))
            q = model.random_configuration(rng=k)
            rk.forward_kinematics(model, q)
            rk.jacobian(model, q, "panda_hand_tcp")
            rk.solve_ik(model, rk.frame_transform(model, q, model.root_link, "panda_hand_tcp"), "panda_hand_tcp",
                        seed=q, max_iterations=50)
            rk.gravity_torques(model, q)
            refs.append(weakref.ref(model))
            del model
        return refs

    join_background_compiles()
    churn(20)   # warm-up: lazily built module-level state
    gc.collect()
    before = rss_bytes()
    refs = churn(200)
    gc.collect()
    assert all(r() is None for r in refs), f"{sum(r() is not None for r in refs)} models still alive"
    growth = rss_bytes() - before
    assert growth < 20e6, f"RSS grew {growth / 1e6:.1f} MB over 200 models"

    model = RobotModel.from_urdf(XML)
    q = model.random_configuration(1000, rng=1)
    rk.prepare(model)   # the kernels loaded now, not by the counted calls below (a load costs tens of MB of LLVM)
    for k in range(1000):
        rk.forward_kinematics(model, q[k])
    join_background_compiles()
    gc.collect()
    objects, growth = len(gc.get_objects()), []
    for _ in range(2):   # a leak grows both windows; another thread's allocation (a full run's leftovers) one
        before = rss_bytes()
        for k in range(100_000):
            rk.forward_kinematics(model, q[k % 1000])
        gc.collect()
        growth.append(rss_bytes() - before)
    assert min(growth) < 5e6, f"RSS grew {[round(g / 1e6, 1) for g in growth]} MB per 100,000 calls"
    assert len(gc.get_objects()) - objects < 1000


def test_a_cancel_token_ends_a_solve_running_in_another_thread():
    # what the node's shutdown relies on: a solve with a 1e6 s budget ends at its next budget check
    model = RobotModel.from_urdf(XML)
    target = np.eye(4)
    target[0, 3] = 5.0   # out of reach
    token = rk.CancelToken()
    results = []
    thread = threading.Thread(target=lambda: results.append(
        rk.solve_ik(model, target, "panda_hand_tcp", timeout=1e6, max_iterations=2 ** 62, cancel=token)))
    thread.start()
    try:
        thread.join(0.5)
        assert thread.is_alive()   # still solving
        token.cancel()
        thread.join(5.0)
        assert not thread.is_alive()
    finally:
        token.cancel()
        thread.join(60.0)
    assert token.cancelled
    assert str(results[0].status) == "timeout" and not bool(results[0].success)


def test_cancelling_one_token_stops_only_the_solves_given_it():
    """Two solves (one problem, and a stacked batch) given token A and one given token B run at
    once: cancelling A ends A's two, B's goes on; a solve given no token meanwhile spends its
    iteration budget as usual; then cancelling B ends B's."""
    model = RobotModel.from_urdf(XML)
    target = np.eye(4)
    target[0, 3] = 5.0   # out of reach
    a, b = rk.CancelToken(), rk.CancelToken()
    results: dict = {}

    def solve(name, token, targets):
        results[name] = rk.solve_ik(model, targets, "panda_hand_tcp", timeout=1e6, max_iterations=2 ** 62,
                                    cancel=token)

    threads = {name: threading.Thread(target=solve, args=(name, token, targets)) for name, token, targets in
               (("a", a, target), ("a batch", a, np.stack([target] * 200)), ("b", b, target))}
    for thread in threads.values():
        thread.start()
    try:
        threads["a"].join(0.5)
        assert all(thread.is_alive() for thread in threads.values())   # all still solving
        a.cancel()
        threads["a"].join(10.0)
        threads["a batch"].join(10.0)
        assert not threads["a"].is_alive() and not threads["a batch"].is_alive()
        assert threads["b"].is_alive() and not b.cancelled
        untouched = rk.solve_ik(model, target, "panda_hand_tcp", max_iterations=300)
        assert str(untouched.status) == "max_iterations" and int(untouched.iterations) == 300
        assert threads["b"].is_alive()
        b.cancel()
        threads["b"].join(10.0)
        assert not threads["b"].is_alive()
    finally:
        a.cancel()
        b.cancel()
        for thread in threads.values():
            thread.join(60.0)
    for name in ("a", "b"):
        assert str(results[name].status) == "timeout" and not bool(results[name].success)
    assert (results["a batch"].status == "timeout").all() and not results["a batch"].success.any()


@pytest.mark.slow   # compiles a kernel in a cold cache
def test_stop_background_loads_waits_for_a_running_compile(tmp_path, monkeypatch):
    from robokin_ros.kernels import lazy_accel
    if not accel.active():
        pytest.skip("numba is not installed or ROBOKIN_ACCEL is off: nothing compiles in the background")
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path))   # a cold cache: the batch below starts a compile
    # a link at an offset of its own: no kernel this process loaded before (shared by source) has this source,
    # so the load below really compiles instead of finishing at once from memory
    offset = 0.1 + int.from_bytes(os.urandom(4), "little") * 1e-12
    model = RobotModel.from_urdf(XML.replace("</robot>", '<link name="probe"/><joint name="probe_joint" type="fixed">'
                                             f'<parent link="panda_hand"/><child link="probe"/><origin xyz="0 0 {offset!r}"/>'
                                             "</joint></robot>"))
    try:
        rk.forward_kinematics(model, model.random_configuration(accel.MIN_BATCH, rng=0))
        running = lazy_accel.running_background_loads()
        assert running, "the batch started no background compile"
        assert lazy_accel.stop_background_loads(120.0)
        assert not any(t.is_alive() for t in running)
        other = RobotModel.from_urdf(XML.replace('name="panda"', 'name="panda2"', 1))
        rk.forward_kinematics(other, other.random_configuration(accel.MIN_BATCH, rng=0))
        assert not lazy_accel.running_background_loads()   # none starts after the stop
        assert compiled_fk(other)._accelerated is None
    finally:
        lazy_accel.resume_background_loads()
    rk.forward_kinematics(other, other.random_configuration(accel.MIN_BATCH, rng=1))   # starts again after the resume
    assert lazy_accel.stop_background_loads(120.0)
    lazy_accel.resume_background_loads()
    assert compiled_fk(other)._accelerated is not None
