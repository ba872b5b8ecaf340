"""The prepared handle :class:`robokin_ros.Kinematics` against the checked public functions, the
generic kernels and Pinocchio, on many random configurations of several robots; its ``out=``
semantics, its typed errors, and the same results with numba switched off."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import (
    ArgumentError,
    Kinematics,
    ModelError,
    NonFiniteError,
    RobotModel,
    ShapeError,
    UnknownLinkError,
    aba,
    crba,
    forward_kinematics,
    gravity_torques,
    jacobian,
    prepare,
    rnea,
)
from robokin_ros.kernels import accel, selection
from robokin_ros.kernels.dynamics_codegen import PREPARABLE
from robokin_ros.kinematics import forward_kinematics_generic

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from peers import ERD_ROBOTS, column_map, erd_urdf, pin_configuration, pin_model  # noqa: E402

ROBOTS = Path(__file__).resolve().parents[3] / "robokin_ros" / "robots"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
N_CONFIGURATIONS = 40

#: label -> (URDF path or ERD key, tip frame, dynamics prepared by the handle)
CASES = {
    "bundled ur5e": (ROBOTS / "ur5e.urdf", "tool0", None),
    "bundled panda": (ROBOTS / "panda.urdf", "panda_hand_tcp", None),
    "bundled twin_arm_torso": (ROBOTS / "twin_arm_torso.urdf", None, None),
    "mimic fixture": (FIXTURES / "prismatic_continuous_mimic.urdf", "tool", None),
    "erd ur5": ("ur5", "tool0", None),
    "erd panda": ("panda", "panda_hand_tcp", None),
    # Talos: rnea and crba only (its aba takes minutes to compile on a fresh machine)
    "erd talos": ("talos", "gripper_left_fingertip_1_link", ("rnea", "crba")),
}


def _path(source) -> str:
    return str(source) if isinstance(source, Path) else erd_urdf(ERD_ROBOTS[source])


@pytest.fixture(scope="module", params=sorted(CASES))
def prepared(request):
    source, tip, dynamics = CASES[request.param]
    path = _path(source)
    model = RobotModel.from_urdf_file(path)
    tip = tip or model.link_names[-1]
    return path, model, tip, Kinematics(model, frames=[tip], dynamics=dynamics)


def _configurations(model, seed):
    rng = np.random.default_rng(seed)
    q = model.random_configuration(N_CONFIGURATIONS, rng)
    v, a = rng.normal(size=(2, N_CONFIGURATIONS, model.n_v))
    return q, v, a


@pytest.mark.slow   # compiles Talos's rnea kernel
def test_the_handle_runs_compiled_code_when_numba_is_active(prepared):
    _, model, tip, handle = prepared
    assert handle.accelerated == accel.active()
    if accel.active():   # FK and Jacobians: compiled at once (the generic tier until the generated one loads)
        assert handle._fk.ready_single is not None and handle._jacobians[tip].ready_single is not None
        assert Kinematics(model, frames=[tip], dynamics=("rnea",))._entry("rnea") is not None   # dynamics too
        assert prepare(model, dynamics=("rnea",))
        assert handle._entry("rnea") is PREPARABLE["rnea"](model).accelerated_single is not None


def test_fk_and_jacobian_equal_the_checked_path_and_the_generic_kernel(prepared):
    _, model, tip, handle = prepared
    q, _, _ = _configurations(model, 1)
    for qi in q:
        # (the generated kernel may load in the background between two calls: the same bits
        # when the same tier ran both, else the same to rounding)
        backends = handle._fk.backend, handle._jacobians[tip].backend
        T, same_T = handle.fk(qi), forward_kinematics(model, qi)
        np.testing.assert_allclose(T, forward_kinematics_generic(model, qi), rtol=0, atol=1e-12)
        J = handle.jacobian(qi, tip)
        assert J.shape == (6, model.n_v) and J.flags.c_contiguous
        with selection.use("generic"):
            np.testing.assert_allclose(J, jacobian(model, qi, tip), rtol=0, atol=1e-12)
        same_J = jacobian(model, qi, tip)
        for ours, same, kernel, before in ((T, same_T, handle._fk, backends[0]),
                                           (J, same_J, handle._jacobians[tip], backends[1])):
            if kernel.backend == before:
                np.testing.assert_array_equal(ours, same)
            else:
                np.testing.assert_allclose(ours, same, rtol=0, atol=1e-12)


def test_dynamics_equal_the_checked_path_and_the_generic_kernels(prepared):
    _, model, _, handle = prepared
    q, v, a = _configurations(model, 2)
    calls = [("rnea", rnea, handle.rnea, True), ("crba", crba, handle.crba, False)]
    if handle._entry("aba") is not None:
        calls += [("aba", aba, handle.aba, True), ("gravity", gravity_torques, handle.gravity_torques, False)]
    for qi, vi, ai in zip(q, v, a):
        for label, public, method, with_rates in calls:
            args = (qi, vi, ai) if with_rates else (qi,)
            kernel = PREPARABLE["gravity_torques" if label == "gravity" else label](model)
            backend = kernel.backend   # (the generated kernel may load in the background meanwhile)
            ours = method(*args)
            with selection.use("generic"):
                expected = public(model, *args)
            np.testing.assert_allclose(ours, expected, rtol=1e-9, atol=1e-9, err_msg=label)
            same = public(model, *args)
            if kernel.backend == backend:   # the same tier ran both: the same bits
                np.testing.assert_array_equal(ours, same, err_msg=label)


def test_against_pinocchio(prepared):
    pin = pytest.importorskip("pinocchio")
    path, model, tip, handle = prepared
    pmodel, pdata = pin_model(path)
    frames = [pmodel.getFrameId(name, pin.BODY) for name in model.link_names]
    tip_id = pmodel.getFrameId(tip, pin.BODY)
    P = column_map(model, pmodel)
    q, v, a = _configurations(model, 3)
    for qi, vi, ai in zip(q, v, a):
        pq = pin_configuration(model, pmodel, qi)
        pin.framesForwardKinematics(pmodel, pdata, pq)
        expected = np.array([pdata.oMf[f].homogeneous for f in frames])
        np.testing.assert_allclose(handle.fk(qi), expected, rtol=0, atol=1e-9)
        J = pin.computeFrameJacobian(pmodel, pdata, pq, tip_id, pin.LOCAL_WORLD_ALIGNED) @ P
        np.testing.assert_allclose(handle.jacobian(qi, tip), J, rtol=0, atol=1e-9)
        pv, pa = P @ vi, P @ ai      # a mimic joint, independent in Pinocchio, moves with its source
        np.testing.assert_allclose(handle.rnea(qi, vi, ai), P.T @ pin.rnea(pmodel, pdata, pq, pv, pa),
                                   rtol=1e-8, atol=1e-8)
        M = pin.crba(pmodel, pdata, pq)
        M = np.triu(M) + np.triu(M, 1).T
        np.testing.assert_allclose(handle.crba(qi), P.T @ M @ P, rtol=1e-8, atol=1e-8)


def test_out_is_written_and_returned(prepared):
    _, model, tip, handle = prepared
    q, v, a = _configurations(model, 4)
    T_out, J_out = np.empty((model.n_links, 4, 4)), np.empty((6, model.n_v))
    tau_out, M_out = np.empty(model.n_v), np.empty((model.n_v, model.n_v))
    assert handle.fk(q[0], out=T_out) is T_out
    np.testing.assert_array_equal(T_out, handle.fk(q[0]))
    assert handle.jacobian(q[1], tip, out=J_out) is J_out
    np.testing.assert_array_equal(J_out, handle.jacobian(q[1], tip))
    assert handle.rnea(q[2], v[2], a[2], out=tau_out) is tau_out
    np.testing.assert_array_equal(tau_out, handle.rnea(q[2], v[2], a[2]))
    assert handle.crba(q[3], out=M_out) is M_out
    np.testing.assert_array_equal(M_out, handle.crba(q[3]))
    assert handle.fk(q[0]) is not handle.fk(q[0])   # a fresh array per call without out=


@pytest.mark.parametrize("bad, error", [
    (lambda shape: np.empty(shape[:-1] + (shape[-1] + 1,)), ShapeError),
    (lambda shape: np.empty(shape, np.float32), ArgumentError),
    (lambda shape: np.empty(shape + (2,))[..., 0], ArgumentError),                # not C-contiguous
    (lambda shape: _read_only(shape), ArgumentError),
], ids=["shape", "float32", "strided", "read-only"])
def test_a_bad_out_raises_the_public_typed_error(prepared, bad, error):
    _, model, tip, handle = prepared
    q, v, a = _configurations(model, 5)
    with pytest.raises(error):
        handle.fk(q[0], out=bad((model.n_links, 4, 4)))
    with pytest.raises(error):
        handle.jacobian(q[0], tip, out=bad((6, model.n_v)))
    with pytest.raises(error):
        handle.rnea(q[0], v[0], a[0], out=bad((model.n_v,)))
    with pytest.raises(error):
        handle.crba(q[0], out=bad((model.n_v, model.n_v)))


def _read_only(shape):
    x = np.zeros(shape)
    x.flags.writeable = False
    return x


def test_bad_configurations_raise_typed_errors(prepared):
    _, model, tip, handle = prepared
    q, v, a = _configurations(model, 6)
    nan = q[0].copy()
    nan[0] = np.nan
    for call in (lambda x: handle.fk(x), lambda x: handle.jacobian(x, tip), lambda x: handle.crba(x),
                 lambda x: handle.rnea(x, v[0], a[0])):
        with pytest.raises(NonFiniteError):
            call(nan)
        with pytest.raises(ShapeError):
            call(q[0][:-1])
        with pytest.raises(ArgumentError):
            call("not numbers")
    inf = v[0].copy()
    inf[-1] = np.inf
    with pytest.raises(NonFiniteError):
        handle.rnea(q[0], inf, a[0])
    with pytest.raises(UnknownLinkError):
        handle.jacobian(q[0], "no_such_link")


def test_other_inputs_take_the_public_function(prepared):
    _, model, tip, handle = prepared
    q, v, a = _configurations(model, 7)
    np.testing.assert_array_equal(handle.fk(q[0].tolist()), forward_kinematics(model, q[0]))
    np.testing.assert_array_equal(handle.fk(q[:3]), forward_kinematics(model, q[:3]))    # a batch
    strided = np.repeat(q[0], 2)[::2]
    # (the strided call runs the frame's poses + Jacobians kernel, the contiguous one its Jacobian
    # kernel: either tier, generic or generated, so equal to rounding)
    np.testing.assert_allclose(handle.jacobian(strided, tip), jacobian(model, q[0], tip), rtol=0, atol=1e-12)
    np.testing.assert_allclose(handle.rnea(q[:2], v[:2], a[:2]), rnea(model, q[:2], v[:2], a[:2]), atol=1e-12)


def test_mimic_values_that_overflow_raise():
    model = RobotModel.from_urdf_file(FIXTURES / "prismatic_continuous_mimic.urdf")
    handle = Kinematics(model, frames=["tool"])
    q = np.array([0.5, 1e308])                       # finite, but the follower's 2 q + 0.1 is not
    for call in (handle.fk, lambda x: handle.jacobian(x, "tool"), handle.crba, handle.gravity_torques):
        with pytest.raises(NonFiniteError, match="mimic"):
            call(q)


def test_without_numba_the_methods_are_the_public_functions(run_with, monkeypatch):
    run_with(accelerated=False)
    model = RobotModel.from_urdf_file(ROBOTS / "panda.urdf")
    handle = Kinematics(model, frames=["panda_hand_tcp"])
    assert not handle.accelerated
    q, v, a = _configurations(model, 8)
    out = np.empty((model.n_links, 4, 4))
    for qi, vi, ai in zip(q[:5], v, a):
        assert handle.fk(qi, out=out) is out
        np.testing.assert_allclose(out, forward_kinematics_generic(model, qi), rtol=0, atol=1e-12)
        np.testing.assert_allclose(handle.jacobian(qi, "panda_hand_tcp"), jacobian(model, qi, "panda_hand_tcp"),
                                   rtol=0, atol=1e-12)
        np.testing.assert_allclose(handle.rnea(qi, vi, ai), rnea(model, qi, vi, ai), rtol=0, atol=1e-9)
        np.testing.assert_allclose(handle.aba(qi, vi, ai), aba(model, qi, vi, ai), rtol=0, atol=1e-9)
    with pytest.raises(NonFiniteError):
        handle.fk(np.full(model.n_q, np.nan))


def _floating_fixture_poses(q: np.ndarray) -> np.ndarray:
    """Closed form of floating.urdf's link poses (world, body, arm, tip) at ``q (8,)``: ``T_float``
    from ``[x, y, z, qx, qy, qz, qw]``, then ``Tx(0.5) Rz(q_arm)`` and ``Tx(0.3)``."""
    x, y, z, w = q[3:7] / np.linalg.norm(q[3:7])
    R = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    body = np.eye(4)
    body[:3, :3], body[:3, 3] = R, q[:3]
    c, s = np.cos(q[7]), np.sin(q[7])
    arm_in_body = np.array([[c, -s, 0, 0.5], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
    tip_in_arm = np.eye(4)
    tip_in_arm[0, 3] = 0.3
    arm = body @ arm_in_body
    return np.stack([np.eye(4), body, arm, arm @ tip_in_arm])


def test_a_floating_base_model_works_through_the_public_functions():
    model = RobotModel.from_urdf_file(FIXTURES / "floating.urdf")
    assert list(model.link_names) == ["world", "body", "arm", "tip"]
    handle = Kinematics(model, dynamics=())
    q = model.random_configuration(3, np.random.default_rng(9))
    for qi in q:
        expected = _floating_fixture_poses(qi)             # an independent oracle: the closed form
        np.testing.assert_allclose(handle.fk(qi), expected, rtol=0, atol=1e-12)
        np.testing.assert_allclose(forward_kinematics(model, qi), expected, rtol=0, atol=1e-12)


MASSLESS = """<robot name="massless"><link name="a"/><link name="b"/>
<joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>
<limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""


def test_dynamics_arguments_are_checked():
    massless = RobotModel.from_urdf(MASSLESS)
    assert Kinematics(massless).fk(np.zeros(1)).shape == (2, 4, 4)     # default: no dynamics
    with pytest.raises(ModelError):
        Kinematics(massless, dynamics=("rnea",))
    with pytest.raises(ArgumentError, match="unknown calls"):
        Kinematics(massless, dynamics=("inverse",))
    with pytest.raises(UnknownLinkError):
        Kinematics(massless, frames=["c"])


def test_a_dynamics_out_may_be_one_of_the_inputs(prepared):
    _, model, _, handle = prepared
    q, v, a = _configurations(model, 10)
    expected = rnea(model, q[0], v[0], a[0])
    buffer = a[0].copy()
    assert handle.rnea(q[0], v[0], buffer, out=buffer) is buffer
    np.testing.assert_array_equal(buffer, expected)
