"""The generic compiled tier (robokin_ros/kernels/generic_numba.py, generic_tier.py): FK and frame
Jacobians of any robot given as arrays, compiled once per installation.

Oracles: the numpy kernels (``forward_kinematics_generic``; the numpy Jacobian of
``frame_pose_and_jacobian`` under ``selection.use("generic")``) and finite differences of the
poses. A model never seen (a unique name, built here) gets its first results from the generic
tier, with no per-robot compile.
"""

from __future__ import annotations

import math
import uuid
from pathlib import Path

import numpy as np
import pytest
from reference import run_generated

import robokin_ros as rk
from robokin_ros.kernels import fk_codegen, generic_tier, lazy_accel, parallel, selection
from robokin_ros.kinematics.fk import forward_kinematics_generic
from robokin_ros.kinematics.geometric_jacobians import frame_pose_and_jacobian

numba = pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parents[3]
ROBOTS = ROOT / "robokin_ros" / "robots"
CORPUS = ROOT.parent / "shared" / "urdf-corpus"
#: Corpus robots: a humanoid, a mobile manipulator (prismatic, planar base), a mimic gripper,
#: a quadruped (floating base), arms with fixed tool chains.
CORPUS_FILES = ["h1_2.urdf", "stretch_se3.urdf", "robotiq_2f85_ros1.urdf", "anymal_c.urdf", "pr2.urdf",
                "kinova_gen3_2f85.urdf", "baxter.urdf"]


def _models():
    params = [pytest.param(ROBOTS / name, id=name) for name in ("ur5e.urdf", "panda.urdf", "twin_arm_torso.urdf",
                                                                "so101_arm.urdf", "open_manipulator_x.urdf")]
    for name in CORPUS_FILES:
        marks = pytest.mark.skipif(not (CORPUS / name).is_file(), reason=f"{CORPUS} (the shared URDF corpus) is absent")
        params.append(pytest.param(CORPUS / name, id=name, marks=marks))
    return params


@pytest.fixture(scope="module")
def functions():
    """The generic kernels, loaded (compiled first, in a separate process, when numba's cache
    beside their file lacks them)."""
    if not generic_tier.enabled():
        pytest.skip("the accelerator is off (ROBOKIN_ACCEL)")
    assert generic_tier.generic_kernels().load()
    return generic_tier.generic_kernels().functions()


@pytest.fixture(scope="module", params=_models())
def model(request):
    return rk.RobotModel.from_urdf_file(request.param)


def _covered_links(model) -> list[int]:
    """Links no floating or planar joint moves (the generic tier's)."""
    arrays = generic_tier.robot_arrays(model)
    return [i for i in range(model.n_links) if arrays.chain([i]) is not None]


def _batch(bound, q, size, threads=1):
    out = np.empty((q.shape[0], size))
    parallel.run_rows(bound.batch, (q,), out, threads)
    return out


def test_poses_equal_the_numpy_oracle(functions, model):
    links = _covered_links(model)
    q = model.random_configuration(200, rng=1)
    oracle = forward_kinematics_generic(model, q)[:, links]
    arrays = generic_tier.robot_arrays(model)
    for layout, picked in (("4x4", oracle), ("3x4", oracle[..., :3, :]), ("position", oracle[..., :3, 3])):
        bound = generic_tier.bound(arrays, "poses", (tuple(links), generic_tier.LAYOUT_CODES[layout]))
        got = _batch(bound, q, picked[0].size).reshape(picked.shape)
        np.testing.assert_allclose(got, picked, rtol=0, atol=1e-12)
        one = np.empty(picked.shape[1:])
        assert bound.single(q[7], one) == 0
        np.testing.assert_allclose(one, picked[7], rtol=0, atol=1e-12)


def test_every_link_of_a_covered_model_equals_the_generated_kernel(functions, model):
    kernel = fk_codegen.compiled_fk(model)
    if kernel is None:
        pytest.skip("a floating or planar joint: no generated kernel of every link")
    q = model.random_configuration(50, rng=2)
    bound = kernel.generic()
    got = _batch(bound, q, model.n_links * 16).reshape(-1, model.n_links, 4, 4)
    expected = np.array([run_generated(kernel.generated, x) for x in q])   # the generated code, interpreted
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


def _tips(model, count=3) -> list[str]:
    covered = set(_covered_links(model))
    leaves = [i for i in range(1, model.n_links) if i in covered and i not in set(model.link_parents[1:].tolist())]
    return [model.link_names[i] for i in leaves[:count]]


def test_frame_jacobians_equal_the_numpy_oracle(functions, model):
    q = model.random_configuration(100, rng=3)
    arrays = generic_tier.robot_arrays(model)
    width = max(4, model.n_v)
    for tip in _tips(model):
        with selection.use("generic"):
            T, J = frame_pose_and_jacobian(model, q, tip)
        k = model.link_index(tip)
        frames = generic_tier.bound(arrays, "frames", (k,))
        got = _batch(frames, q, 10 * width).reshape(-1, 10, width)
        np.testing.assert_allclose(got[:, :4, :4], T, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got[:, 4:, :model.n_v], J, rtol=0, atol=1e-12)
        one = np.empty((6, model.n_v))
        assert generic_tier.bound(arrays, "jacobian", k).single(q[5], one) == 0
        np.testing.assert_allclose(one, J[5], rtol=0, atol=1e-12)


def _log3(R):
    angle = math.acos(max(-1.0, min(1.0, (np.trace(R) - 1.0) / 2.0)))
    w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    return w * (0.5 if angle < 1e-9 else angle / (2.0 * math.sin(angle)))


def test_jacobians_match_finite_differences(functions):
    model = rk.RobotModel.from_urdf_file(ROBOTS / "panda.urdf")   # n_q == n_v, a mimic finger
    arrays = generic_tier.robot_arrays(model)
    tip = model.link_index("panda_leftfinger")
    every = generic_tier.bound(arrays, "poses", (tuple(range(model.n_links)), 0))
    jacobian = generic_tier.bound(arrays, "jacobian", tip)
    h = 1e-6
    for q in model.random_configuration(5, rng=4):
        J = np.empty((6, model.n_v))
        assert jacobian.single(q, J) == 0
        T0 = np.empty((model.n_links, 4, 4))
        every.single(q, T0)
        for col in range(model.n_v):
            poses = []
            for sign in (1.0, -1.0):
                x = q.copy()
                x[col] += sign * h
                T = np.empty((model.n_links, 4, 4))
                assert every.single(x, T) == 0
                poses.append(T[tip])
            np.testing.assert_allclose(J[:3, col], (poses[0][:3, 3] - poses[1][:3, 3]) / (2 * h), atol=1e-7)
            rotation = _log3(poses[0][:3, :3] @ poses[1][:3, :3].T) / (2 * h)
            np.testing.assert_allclose(J[3:, col], rotation, atol=1e-7)


@pytest.mark.parametrize("name", ["ur5e.urdf", "panda.urdf"])
def test_threads_are_bit_identical(functions, name):
    model = rk.RobotModel.from_urdf_file(ROBOTS / name)
    arrays = generic_tier.robot_arrays(model)
    q = model.random_configuration(10_000, rng=5)
    assert q.shape[0] >= parallel.MIN_PARALLEL_ROWS
    every = generic_tier.bound(arrays, "poses", (tuple(range(model.n_links)), 0))
    tip = model.n_links - 1
    frames = generic_tier.bound(arrays, "frames", (tip,))
    for bound, size in ((every, model.n_links * 16), (frames, 10 * max(4, model.n_v))):
        one, two = _batch(bound, q, size, threads=1), _batch(bound, q, size, threads=2)
        assert np.array_equal(one, two)


def test_bad_inputs_are_refused_not_compiled(functions):
    model = rk.RobotModel.from_urdf_file(ROBOTS / "ur5e.urdf")
    bound = generic_tier.bound(generic_tier.robot_arrays(model), "poses", (tuple(range(model.n_links)), 0))
    out = np.empty((model.n_links, 4, 4))
    q = model.home_configuration()
    assert bound.single(q, np.empty((model.n_links + 1, 4, 4))) == 2
    assert bound.single(q, np.empty((model.n_links, 2, 8))) == 2
    assert bound.single(q[:-1], out) == 2
    with pytest.raises(ValueError):
        parallel.run_rows(bound.batch, (np.zeros((3, model.n_q + 1)),), np.empty((3, model.n_links * 16)), 1)
    bad = q.copy()
    bad[2] = np.nan
    assert bound.single(bad, out) == 1
    with pytest.raises(TypeError):   # another dtype: refused (never compiled in this process)
        bound.single(q.astype(np.float32), out)


PLANAR = """<robot name="{name}">
  <link name="world"/><link name="base"/><link name="arm"/><link name="post"/>
  <joint name="drive" type="planar"><parent link="world"/><child link="base"/><axis xyz="0 0 1"/></joint>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><origin xyz="0 0 0.4"/>
    <axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
  <joint name="mount" type="revolute"><parent link="world"/><child link="post"/><origin xyz="1 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
</robot>"""


def test_floating_and_planar_joints_are_not_covered(functions):
    model = rk.RobotModel.from_urdf(PLANAR.format(name=f"planar_{uuid.uuid4().hex}"))
    arrays = generic_tier.robot_arrays(model)
    covered = {model.link_names[i] for i in _covered_links(model)}
    assert covered == {"world", "post"}
    assert generic_tier.bound(arrays, "poses", (tuple(range(model.n_links)), 0)) is generic_tier.NOT_COVERED
    post = generic_tier.bound(arrays, "poses", ((model.link_index("post"),), 0))   # beside the planar base
    q = model.random_configuration(4, rng=9)
    got = _batch(post, q, 16).reshape(-1, 4, 4)
    np.testing.assert_allclose(got, forward_kinematics_generic(model, q)[:, model.link_index("post")], atol=1e-12)


ARM = """<robot name="{name}">
  <link name="base"/><link name="a"/><link name="b"/><link name="tool"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><origin xyz="0 0 0.3" rpy="0.1 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0.2 0 0.1"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j3" type="prismatic"><parent link="b"/><child link="tool"/><origin xyz="0.1 0.05 0"/>
    <axis xyz="1 0 0"/><limit lower="0" upper="0.2" effort="1" velocity="1"/></joint>
</robot>"""


@pytest.fixture
def no_background_loads():
    """No per-robot kernel starts loading (lazy_accel's public switch), restored afterwards."""
    lazy_accel.stop_background_loads(30.0)
    yield
    lazy_accel.resume_background_loads()


def test_a_new_robot_gets_compiled_results_from_its_first_call(functions, no_background_loads):
    model = rk.RobotModel.from_urdf(ARM.format(name=f"never_seen_{uuid.uuid4().hex}"))
    kinematics = rk.Kinematics(model, frames=["tool"])
    q = model.random_configuration(3, rng=6)
    T = kinematics.fk(q[0])
    kernel = fk_codegen.compiled_fk(model)
    assert kernel.accelerated_single is None                 # no per-robot kernel loaded (none compiled)
    assert kernel.ready_single is kernel.generic().single    # the generic compiled tier answered
    np.testing.assert_allclose(T, forward_kinematics_generic(model, q[0]), rtol=0, atol=1e-12)
    J = kinematics.jacobian(q[1], "tool")
    jacobian_kernel = fk_codegen.compiled_jacobian(model, "tool")
    assert jacobian_kernel.accelerated_single is None and jacobian_kernel.ready_single is not None
    with selection.use("generic"):
        np.testing.assert_allclose(J, rk.jacobian(model, q[1], "tool"), rtol=0, atol=1e-12)
    qb = model.random_configuration(300, rng=7)
    np.testing.assert_allclose(rk.forward_kinematics(model, qb), forward_kinematics_generic(model, qb), rtol=0,
                               atol=1e-12)
    assert kernel.accelerated_single is None                 # the batch ran the generic tier too


def test_the_generated_kernel_replaces_the_generic_one_once_loaded(functions, cache, monkeypatch):
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", cache)
    model = rk.RobotModel.from_urdf(ARM.format(name=f"never_seen_{uuid.uuid4().hex}"))
    kernel = fk_codegen.compiled_fk(model)
    generic = kernel.generic()
    assert kernel.ready_single is generic.single
    assert kernel.accelerate()                               # the per-robot compile (a separate process)
    assert kernel.ready_single is kernel.accelerated_single is not None
    q = model.random_configuration(rng=8)
    a, b = np.empty((model.n_links, 4, 4)), np.empty((model.n_links, 4, 4))
    assert generic.single(q, a) == 0 and kernel.ready_single(q, b) == 0
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
