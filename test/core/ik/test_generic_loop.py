"""The generic IK loop (robokin_ros.ik.generic_loop, issue 31): the chain given as data, compiled
once per installation, serves a robot whose own compiled loop is not on this machine yet, from
its first request. Checked against the numpy path (the same iterates to rounding: same status and
iteration count, configurations within 1e-9), by FK, on bundled arms and on built chains with
prismatic, continuous and mimic joints; a batch on it is bit-identical for every thread count; a
robot whose loop is compiled never uses it (its answers stay the generated step's bit for bit)."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

from robokin_ros import JointType, RobotModel, frame_transform
from robokin_ros.ik import IKOptions, generic_loop, generic_loop_loading, prepare_ik, solve_ik
from robokin_ros.ik.budget import Budget
from robokin_ros.ik.call import ik_call
from robokin_ros.ik.chain_arrays import chain_data
from robokin_ros.ik.compiled_loop import CompiledLoop
from robokin_ros.kernels import accel
from robokin_ros.model import ModelFields
from robokin_ros.model.configuration import wrap_angle
from robokin_ros.runtime import current_runtime
from robokin_ros.spatial import exp_so3

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
from peers import ERD_ROBOTS, example_robot_data_dir  # noqa: E402

ROBOTS = os.path.join(HERE, "..", "..", "..", "robokin_ros", "robots")

pytestmark = pytest.mark.skipif(not accel.available(), reason="numba is not installed")


@pytest.fixture
def generic(monkeypatch):
    """The generic loop on (test/conftest.py turns it off for the rest of the suite), loaded."""
    monkeypatch.setenv(generic_loop_loading.ENVIRONMENT, "1")
    assert generic_loop_loading.KERNELS.load()   # (make venv compiles it; else now, in a separate process)
    return generic_loop_loading.KERNELS.functions()


def built_chain() -> RobotModel:
    """A 5-joint chain with a prismatic joint, a continuous joint and a mimic joint (following the
    first revolute joint, x0.5 + 0.1), axes off the coordinate axes, between fixed links."""
    joints = [  # (type, axis, origin xyz, rpy, lower, upper)
        (JointType.REVOLUTE, (0, 0, 1), (0, 0, 0.1), (0, 0, 0), -2.5, 2.5),
        (JointType.PRISMATIC, (0.6, 0, 0.8), (0.05, 0, 0.2), (0.3, 0, 0), -0.2, 0.3),
        (JointType.CONTINUOUS, (0, 1, 0), (0, 0.1, 0.3), (0, 0.2, 0), -math.inf, math.inf),
        (JointType.REVOLUTE, (1, 0, 0), (0.2, 0, 0), (0, 0, 0.4), -2.0, 2.0),
        (JointType.REVOLUTE, (0, 0.6, 0.8), (0, 0, 0.15), (0.1, 0, 0), -2.8, 2.8),
        (JointType.REVOLUTE, (0, 0, 1), (0.1, 0, 0), (0, 0.3, 0), -1.0, 1.0),   # mimic of joint 0
        (JointType.FIXED, (0, 0, 1), (0, 0, 0.12), (0, 0, 0.5), 0.0, 0.0),
    ]
    from robokin_ros.spatial import pose_from_xyz_rpy
    n = len(joints)
    fields = ModelFields(
        name="built_chain", link_names=tuple(f"l{k}" for k in range(n + 1)),
        joint_names=tuple(f"j{k}" for k in range(n)), joint_parents=np.arange(n),
        joint_types=np.array([j[0] for j in joints]),
        joint_axes=np.array([np.array(j[1], float) / np.linalg.norm(j[1]) for j in joints]),
        joint_origins=np.array([pose_from_xyz_rpy(j[2], j[3]) for j in joints]),
        joint_lower=np.array([j[4] for j in joints]), joint_upper=np.array([j[5] for j in joints]),
        mimic_source=np.array([-1, -1, -1, -1, -1, 0, -1]), mimic_multiplier=np.array([1, 1, 1, 1, 1, 0.5, 1.0]),
        mimic_offset=np.array([0, 0, 0, 0, 0, 0.1, 0.0]))
    return RobotModel.create(fields)


def erd(name: str) -> RobotModel:
    folder = example_robot_data_dir()
    if folder is None:
        pytest.skip("example-robot-data is not installed")
    return RobotModel.from_urdf_file(os.path.join(folder, ERD_ROBOTS[name]))


CASES = {
    "ur5e": (lambda: RobotModel.from_urdf_file(os.path.join(ROBOTS, "ur5e.urdf")), "tool0", None, None),
    "panda": (lambda: RobotModel.from_urdf_file(os.path.join(ROBOTS, "panda.urdf")), "panda_hand_tcp", None, None),
    "twin arm from the torso": (lambda: RobotModel.from_urdf_file(os.path.join(ROBOTS, "twin_arm_torso.urdf")),
                                "left_gripper_link", "torso_link", None),
    "so101 (5 DOF)": (lambda: RobotModel.from_urdf_file(os.path.join(ROBOTS, "so101_arm.urdf")), "tool", None, None),
    "panda, 4 of 7 joints": (lambda: RobotModel.from_urdf_file(os.path.join(ROBOTS, "panda.urdf")), "panda_hand_tcp",
                             None, ["panda_joint1", "panda_joint2", "panda_joint4", "panda_joint6"]),
    "prismatic, continuous, mimic": (built_chain, "l7", None, None),
    "talos arm (erd)": (lambda: erd("talos"), "gripper_left_base_link", "torso_2_link", None),
}


def problems(model: RobotModel, tip: str, base: str | None, n: int, rng):
    """Seeds ``(n + 4, n_q)`` and targets in ``base``'s frame: FK of random configurations, then
    2 out of reach and 2 rotated by nearly π from their seed's pose (π - 1e-5: at π exactly the
    rotation's axis sign is a tie that rounding decides)."""
    seeds = model.random_configuration(n + 4, rng)
    T = frame_transform(model, model.random_configuration(n + 4, rng), base or model.root_link, tip)
    T[n:n + 2, :3, 3] += 5.0
    for k in (n + 2, n + 3):
        axis = rng.normal(size=3)
        T[k] = frame_transform(model, seeds[k], base or model.root_link, tip)
        T[k, :3, :3] = T[k, :3, :3] @ exp_so3((np.pi - 1e-5) * axis / np.linalg.norm(axis))
    return seeds, T


@pytest.mark.parametrize("case", list(CASES))
def test_the_generic_loop_walks_the_numpy_paths_iterates(generic, case):
    """The compiled loop on the chain step against the numpy path on one row (the oracle): the
    same status and iteration count, the same configuration (modulo 2π on continuous joints: the
    numpy path reports them nearest the seed) and errors to rounding; answers checked by FK."""
    make, tip, base, active = CASES[case]
    model = make()
    call = ik_call(model, (tip,), IKOptions(base=base, active_joints=active, max_iterations=200))
    s = call.solver
    chain = chain_data(s)
    assert chain is not None
    run = generic[0]

    def generic_run(x, chunk, max_iterations):
        return run(x, chunk, max_iterations, *chain)

    seeds, T = problems(s.model, tip, base if s.model is model else None, 40, np.random.default_rng(5))
    if s.model is not model:   # solved on the chain's model: targets in its root's frame
        T = frame_transform(s.model, s.model.home_configuration(), s.model.root_link, s.model.root_link) @ T
    for i in range(len(T)):
        target = np.concatenate([T[i, :3, :3].reshape(9), T[i, :3, 3]]).tolist()
        q0 = s.model.clamp(seeds[i]).tolist()
        with current_runtime().use(accelerated=False):
            floats = s.solve_problem(q0[:], target, Budget(None, 1, i))
        ours = s.loop.run_problem(generic_run, q0[:], target, Budget(None, 1, i))
        assert ours[1:3] == floats[1:3] and ours[5] == floats[5], (i, ours[1:3], floats[1:3])   # status, iterations
        np.testing.assert_allclose(wrap_angle(np.subtract(ours[0], floats[0])), 0.0, rtol=0.0, atol=1e-9)
        np.testing.assert_allclose(ours[3:5], floats[3:5], rtol=1e-6, atol=1e-12)
        if ours[5]:   # an answer, by FK
            Tq = frame_transform(s.model, np.array(ours[0]), s.model.root_link, s.model.link_names[s.problem.tips[0]])
            assert np.linalg.norm(Tq[:3, 3] - T[i, :3, 3]) <= 1e-5 + 1e-12


def test_what_the_generic_loop_does_not_cover_takes_the_numpy_path(generic):
    panda = RobotModel.from_urdf_file(os.path.join(ROBOTS, "panda.urdf"))
    twin = RobotModel.from_urdf_file(os.path.join(ROBOTS, "twin_arm_torso.urdf"))
    assert chain_data(ik_call(panda, ("panda_hand_tcp",), IKOptions()).solver) is not None
    dead_band = IKOptions(axis_tolerances=[0, 0, 0, 0, 0, math.inf])
    assert chain_data(ik_call(panda, ("panda_hand_tcp",), dead_band).solver) is None
    two = ik_call(twin, ("left_gripper_link", "right_gripper_link"), IKOptions()).solver
    assert chain_data(two) is None


def test_a_robot_new_to_the_machine_solves_on_the_generic_loop_from_its_first_request(run_with, generic, tmp_path, monkeypatch):
    """An empty kernel cache: the robot's own loop is not compiled, so single requests and a batch
    run on the generic loop (counted), answers checked by FK; the batch is bit-identical on 1 and
    2 threads and walks the iterates of the same batch solved stacked in numpy."""
    cache = tmp_path / "kernels"
    cache.mkdir(mode=0o700)
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(cache))
    run_with(compile_after=10**9)   # (the robot's own loop does not start compiling)
    runs, many, *rows = generic
    counted = {"run": 0, "run_many": 0}

    def run_counted(*args):
        counted["run"] += 1
        return runs(*args)

    def many_counted(*args):
        counted["run_many"] += 1
        return many(*args)

    monkeypatch.setattr(generic_loop_loading.KERNELS, "_loaded", (run_counted, many_counted, *rows))
    model = RobotModel.from_urdf_file(os.path.join(ROBOTS, "ur5e.urdf"))
    s = ik_call(model, ("tool0",), IKOptions(max_iterations=300)).solver
    assert s.chain is not None and not s.loop.in_cache()
    seeds, T = problems(model, "tool0", None, 300, np.random.default_rng(8))
    singles = [solve_ik(model, T[i], "tool0", seeds[i], max_iterations=300) for i in range(20)]
    assert counted["run"] >= 20 and s.loop.function() is None
    for r, Tk in zip(singles, T):
        if r.success:
            Tq = frame_transform(model, r.q, model.root_link, "tool0")
            assert np.linalg.norm(Tq[:3, 3] - Tk[:3, 3]) <= 1e-5 + 1e-12
    assert sum(bool(r.success) for r in singles) >= 19
    one, two = (solve_ik(model, T, "tool0", seeds, max_iterations=300, threads=k) for k in (1, 2))
    assert counted["run_many"] >= 2
    assert all(len(f.signatures) == 1 for f in rows)   # (called with the types compiled for: no compile here)
    for field in ("q", "success", "status", "iterations"):
        np.testing.assert_array_equal(getattr(one, field), getattr(two, field))
    run_with(accelerated=False)
    floats = solve_ik(model, T, "tool0", seeds, max_iterations=300)
    np.testing.assert_array_equal(one.iterations, floats.iterations)
    np.testing.assert_array_equal(one.status, floats.status)
    np.testing.assert_allclose(one.q, floats.q, rtol=0.0, atol=1e-9)
    assert one.success[:300].mean() >= 0.98 and not one.success[300:302].any()


def test_a_robot_whose_loop_is_compiled_never_uses_the_generic_loop(generic):
    """Its answers are then the generated step's bit for bit from its first request (the same
    request, repeated in a fresh process, gives the same bits)."""
    assert prepare_ik(RobotModel.from_urdf_file(os.path.join(ROBOTS, "panda.urdf")), "panda_hand_tcp",
                      max_iterations=321)
    fresh = RobotModel.from_urdf_file(os.path.join(ROBOTS, "panda.urdf"))   # (a solver of its own)
    s = ik_call(fresh, ("panda_hand_tcp",), IKOptions(max_iterations=321)).solver
    assert s.loop.in_cache() and s.chain is None and s._generic_runs() is None


def test_the_generic_loop_can_be_turned_off(generic, monkeypatch):
    monkeypatch.setenv(generic_loop_loading.ENVIRONMENT, "off")
    assert generic_loop_loading.KERNELS.functions() is None and not generic_loop_loading.enabled()
    monkeypatch.setattr(CompiledLoop, "in_cache", lambda self: False)
    model = RobotModel.from_urdf_file(os.path.join(ROBOTS, "so101_arm.urdf"))
    assert ik_call(model, ("tool",), IKOptions(max_iterations=77)).solver.chain is None


def test_once_loaded_the_loop_is_recorded_as_compiled_and_a_new_process_loads_it_in_its_caller(generic, tmp_path):
    """Our own record (not numba's files) says it is compiled; a fresh process then loads it in
    the calling thread (no compile: numba's cache answers), and the record of another copy of
    the file does not hold."""
    import subprocess
    import sys

    assert generic_loop_loading.compiled() and generic_loop_loading.RECORD.holds()
    program = ("import threading, robokin_ros.ik.generic_loop_loading as g; assert g.compiled(); "
               "assert g.KERNELS.functions() is not None; assert threading.active_count() == 1")
    root = os.path.dirname(os.path.dirname(os.path.dirname(generic_loop.__file__)))
    env = dict(os.environ, ROBOKIN_GENERIC_IK="1", PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    copy = tmp_path / "generic_loop.py"
    copy.write_bytes(open(generic_loop.__file__, "rb").read())
    from robokin_ros.kernels.compile_record import CompileRecord
    assert not CompileRecord(str(copy)).holds()
