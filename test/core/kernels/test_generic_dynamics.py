"""The generic compiled dynamics (robokin_ros/kernels/generic_dynamics_numba.py,
generic_dynamics_tier.py): RNEA, its gravity / nonlinear cases, CRBA and ABA of any robot given
as arrays, compiled once per installation with the generic FK kernels.

Oracles: the numpy recursions (``robokin_ros.dynamics.recursions``, a runtime of kind
``"generic"``) and Pinocchio. A model never seen (a unique name, built here) gets its first
dynamics results from the generic tier, with no per-robot compile; which tier ran is asserted
from the kernel's state (:attr:`CompiledDynamics.backend`), never from time.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
from peers import ERD_ROBOTS, erd_urdf, pin_configuration, pin_model

import robokin_ros as rk
from robokin_ros.kernels import dynamics_codegen, fk_codegen, generic_dynamics_tier, generic_tier, parallel
from robokin_ros.kernels.plan import dynamics_tree

numba = pytest.importorskip("numba")

ROOT = Path(__file__).resolve().parents[3]
ROBOTS = ROOT / "robokin_ros" / "robots"
FIXTURES = ROOT / "test" / "fixtures"
CORPUS = ROOT.parent / "shared" / "urdf-corpus"
#: Corpus robots: a humanoid, a mimic gripper, arms with fixed tool chains, a mobile manipulator
#: (prismatic torso, continuous wheels), a dual-arm torso.
CORPUS_FILES = ["h1_2.urdf", "robotiq_2f85_ros1.urdf", "kinova_gen3_2f85.urdf", "pr2.urdf", "baxter.urdf",
                "kuka_lbr_iiwa14.urdf"]
STANDARD = (0.0, 0.0, -9.81)


def _models():
    params = [pytest.param(ROBOTS / name, id=name) for name in ("ur5e.urdf", "panda.urdf", "twin_arm_torso.urdf",
                                                                "so101_arm.urdf", "open_manipulator_x.urdf")]
    params += [pytest.param(FIXTURES / name, id=name) for name in ("prismatic_continuous_mimic.urdf", "branched.urdf")]
    for name in CORPUS_FILES:
        marks = pytest.mark.skipif(not (CORPUS / name).is_file(), reason=f"{CORPUS} (the shared URDF corpus) is absent")
        params.append(pytest.param(CORPUS / name, id=name, marks=marks))
    return params


@pytest.fixture(scope="module")
def functions():
    """The generic kernels, loaded (compiled first, in a separate process, when numba's cache
    beside their files lacks them)."""
    if not generic_tier.enabled():
        pytest.skip("the accelerator is off (ROBOKIN_ACCEL)")
    assert generic_tier.generic_kernels().load()
    return generic_tier.generic_kernels().functions()


@pytest.fixture(scope="module", params=_models())
def model(request):
    model = rk.RobotModel.from_urdf_file(request.param)
    if not generic_dynamics_tier.dynamics_arrays(model).covered:
        pytest.skip("a floating or planar joint, or no inertial: no generic dynamics kernel")
    return model


def _state(model, n, seed):
    rng = np.random.default_rng(seed)
    return (model.random_configuration(n, rng=seed), rng.normal(size=(n, model.n_v)),
            rng.normal(size=(n, model.n_v)))


def _numpy(model, q, v, a):
    """The numpy recursions' rnea, h, g, M and aba (a runtime of kind "generic")."""
    with rk.current_runtime().use(kind="generic"):
        tau = rk.rnea(model, q, v, a)
        expected = {"rnea": tau, "nonlinear": rk.nonlinear_effects(model, q, v),
                    "gravity": rk.gravity_torques(model, q), "crba": rk.crba(model, q)}
        if not dynamics_tree(model).massless_coordinates:
            expected["aba"] = rk.aba(model, q, v, tau)   # should give back a
    return expected


def _inputs(call, q, v, a, tau):
    return {"rnea": (q, v, a), "nonlinear": (q, v), "gravity": (q,), "crba": (q,), "aba": (q, v, tau)}[call]


def _run_batch(bound, inputs, width, threads=1):
    out = np.empty((inputs[0].shape[0], width))
    parallel.run_rows(bound.batch, inputs, out, threads)
    return out


def assert_close(ours, theirs, rtol=1e-9):
    scale = max(1.0, float(np.abs(theirs).max()))
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol * scale)


def test_equal_to_the_numpy_recursions(functions, model, run_with):
    q, v, a = _state(model, 40, 1)
    expected = _numpy(model, q, v, a)
    arrays = generic_dynamics_tier.dynamics_arrays(model)
    n = model.n_v
    for call, want in expected.items():
        bound = generic_dynamics_tier.bound(arrays, call, STANDARD)
        inputs = _inputs(call, q, v, a, expected["rnea"])
        got = _run_batch(bound, inputs, want[0].size).reshape(want.shape)
        assert_close(got, want if call != "aba" else a)
        if call == "aba":
            assert_close(got, want)
        one = np.empty((n, n) if call == "crba" else n)
        assert bound.single(*(x[3] for x in inputs), one) == 0
        assert_close(one, want[3])


def test_coriolis_case_under_zero_gravity(functions, run_with):
    model = rk.RobotModel.from_urdf_file(ROBOTS / "panda.urdf")
    q, v, _ = _state(model, 10, 2)
    with rk.current_runtime().use(kind="generic"):
        expected = rk.coriolis_torques(model, q, v)
    bound = generic_dynamics_tier.bound(generic_dynamics_tier.dynamics_arrays(model), "nonlinear", (0.0, 0.0, 0.0))
    assert_close(_run_batch(bound, (q, v), model.n_v), expected)


@pytest.mark.parametrize("name", ["ur5", "panda", "kinova", "xarm7"])
def test_agrees_with_pinocchio(functions, name):
    pin = pytest.importorskip("pinocchio")
    path = erd_urdf(ERD_ROBOTS[name])
    model = rk.RobotModel.from_urdf_file(path)
    pm, pd = pin_model(path)
    P = np.zeros((pm.nv, model.n_v))   # Pinocchio's velocity of ours (a mimic joint moves with its source)
    for jid in range(1, pm.njoints):
        j = model.joint_index(pm.names[jid])
        scale = model.mimic_multiplier[j] if model.is_mimic[j] else 1.0
        P[pm.joints[jid].idx_v, model.joint_v_index[model.velocity_source_joints[j]]] = scale
    arrays = generic_dynamics_tier.dynamics_arrays(model)
    kernels = {call: generic_dynamics_tier.bound(arrays, call, STANDARD).single for call in generic_dynamics_tier.CALLS}
    q, v, a = _state(model, 3, 3)
    for x, dx, ddx in zip(q, v, a):
        pq = pin_configuration(model, pm, x)
        tau, M, g = np.empty(model.n_v), np.empty((model.n_v, model.n_v)), np.empty(model.n_v)
        assert kernels["rnea"](x, dx, ddx, tau) == 0
        assert_close(tau, P.T @ pin.rnea(pm, pd, pq, P @ dx, P @ ddx))
        assert kernels["crba"](x, M) == 0
        Mp = pin.crba(pm, pd, pq)
        assert_close(M, P.T @ (np.triu(Mp) + np.triu(Mp, 1).T) @ P)
        assert kernels["gravity"](x, g) == 0
        assert_close(g, P.T @ pin.computeGeneralizedGravity(pm, pd, pq))
        if not model.is_mimic.any():   # (then P is a permutation)
            acc = np.empty(model.n_v)
            assert kernels["aba"](x, dx, tau, acc) == 0
            assert_close(acc, P.T @ pin.aba(pm, pd, pq, P @ dx, P @ tau), rtol=1e-8)   # M's conditioning


@pytest.mark.parametrize("name", ["ur5e.urdf", "panda.urdf"])
def test_threads_are_bit_identical(functions, name, run_with):
    run_with(share_cores=False)   # (two threads even where the machine is busy)
    model = rk.RobotModel.from_urdf_file(ROBOTS / name)
    q, v, a = _state(model, 10_000, 4)
    assert q.shape[0] >= parallel.MIN_PARALLEL_ROWS
    arrays = generic_dynamics_tier.dynamics_arrays(model)
    for call in generic_dynamics_tier.CALLS:
        bound = generic_dynamics_tier.bound(arrays, call, STANDARD)
        inputs = _inputs(call, q, v, a, a)
        width = model.n_v * (model.n_v if call == "crba" else 1)
        with rk.current_runtime().use(threads=1):
            one = _run_batch(bound, inputs, width, threads=1)
        with rk.current_runtime().use(threads=2):
            two = _run_batch(bound, inputs, width, threads=2)
        assert np.array_equal(one, two), call


def test_bad_inputs_are_refused_not_compiled(functions):
    model = rk.RobotModel.from_urdf_file(ROBOTS / "ur5e.urdf")
    arrays = generic_dynamics_tier.dynamics_arrays(model)
    rnea = generic_dynamics_tier.bound(arrays, "rnea", STANDARD).single
    crba = generic_dynamics_tier.bound(arrays, "crba", STANDARD).single
    q, z, out = model.home_configuration(), np.zeros(model.n_v), np.empty(model.n_v)
    assert rnea(q, z, z, out) == 0
    assert rnea(q[:-1], z, z, out) == 2
    assert rnea(q, z[:-1], z, out) == 2
    assert rnea(q, z, z, np.empty(model.n_v + 1)) == 2
    assert crba(q, np.empty((model.n_v, model.n_v + 1))) == 2
    bad = z.copy()
    bad[1] = np.inf
    assert rnea(q, z, bad, out) == 1
    with pytest.raises(TypeError):   # another dtype: refused (never compiled in this process)
        rnea(q.astype(np.float32), z, z, out)


ARM = """<robot name="{name}">
  <link name="base"/>
  <link name="a"><inertial><mass value="2.0"/><origin xyz="0 0 0.1"/>
    <inertia ixx="0.02" iyy="0.02" izz="0.01" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <link name="b"><inertial><mass value="1.0"/><origin xyz="0.1 0 0"/>
    <inertia ixx="0.01" iyy="0.02" izz="0.02" ixy="0.001" ixz="0" iyz="0"/></inertial></link>
  <link name="tool"><inertial><mass value="0.5"/><origin xyz="0.02 0 0.01"/>
    <inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="a"/><origin xyz="0 0 0.3" rpy="0.1 0 0"/>
    <axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0.2 0 0.1"/>
    <axis xyz="0 1 0"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j3" type="prismatic"><parent link="b"/><child link="tool"/><origin xyz="0.1 0.05 0"/>
    <axis xyz="1 0 0"/><limit lower="0" upper="0.2" effort="1" velocity="1"/></joint>
</robot>"""


def test_a_new_robot_gets_compiled_dynamics_from_its_first_call(functions, accelerated, run_with):
    run_with(background_compiles=False)   # no per-robot kernel starts compiling
    model = rk.RobotModel.from_urdf(ARM.format(name=f"never_seen_{uuid.uuid4().hex}"))
    kinematics = rk.Kinematics(model)
    q, v, a = _state(model, 300, 5)
    expected = _numpy(model, q, v, a)
    tau, M = kinematics.rnea(q[0], v[0], a[0]), kinematics.crba(q[1])
    g, acc = kinematics.gravity_torques(q[2]), kinematics.aba(q[3], v[3], expected["rnea"][3])
    for call in ("rnea", "crba", "gravity_torques", "aba"):
        kernel = dynamics_codegen.PREPARABLE[call](model)
        assert kernel.accelerated_single is None                 # no per-robot kernel loaded (none compiled)
        assert kernel.backend == fk_codegen.GENERIC, call
        assert kernel.ready_single is kernel.generic().single    # the generic compiled tier answered
    assert_close(tau, expected["rnea"][0])
    assert_close(M, expected["crba"][1])
    assert_close(g, expected["gravity"][2])
    assert_close(acc, a[3])
    # the public functions: one configuration and a batch, through the same tier
    assert np.array_equal(rk.rnea(model, q[0], v[0], a[0]), tau)
    assert_close(rk.crba(model, q), expected["crba"])
    assert_close(rk.nonlinear_effects(model, q, v), expected["nonlinear"])
    assert dynamics_codegen.compiled_crba(model).accelerated_single is None   # the batch ran the generic tier too
    assert dynamics_codegen.compiled_center_of_mass(model).backend == fk_codegen.NUMPY   # not covered


def test_the_generated_kernel_replaces_the_generic_one_once_loaded(functions, accelerated):
    model = rk.RobotModel.from_urdf(ARM.format(name=f"never_seen_{uuid.uuid4().hex}"))
    kernel = dynamics_codegen.compiled_crba(model)
    generic = kernel.generic()
    assert kernel.ready_single is generic.single and kernel.backend == fk_codegen.GENERIC
    assert kernel.accelerate()                               # the per-robot compile (a separate process)
    assert kernel.ready_single is kernel.accelerated_single is not None
    assert kernel.backend == fk_codegen.GENERATED
    q = model.random_configuration(rng=8)
    x, y = np.empty((model.n_v, model.n_v)), np.empty((model.n_v, model.n_v))
    assert generic.single(q, x) == 0 and kernel.ready_single(q, y) == 0
    assert_close(x, y, rtol=1e-12)


PLANAR = """<robot name="{name}">
  <link name="world"/><link name="base"><inertial><mass value="1"/>
    <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="drive" type="planar"><parent link="world"/><child link="base"/><axis xyz="0 0 1"/></joint>
</robot>"""


def test_floating_and_planar_joints_are_not_covered(functions):
    model = rk.RobotModel.from_urdf(PLANAR.format(name=f"planar_{uuid.uuid4().hex}"))
    arrays = generic_dynamics_tier.dynamics_arrays(model)
    assert not arrays.covered
    assert generic_dynamics_tier.bound(arrays, "rnea", STANDARD) is generic_tier.NOT_COVERED
    assert dynamics_codegen.compiled_crba(model) is None     # the numpy recursions serve it
