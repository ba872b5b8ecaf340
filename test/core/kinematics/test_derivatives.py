"""Pose derivatives, second derivatives and the kinematic Hessian vs finite differences and hand derivations."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.linalg

from robokin_ros import (
    LOCAL,
    LOCAL_WORLD_ALIGNED,
    WORLD,
    NonFiniteError,
    RobotModel,
    ShapeError,
    UnknownLinkError,
    forward_kinematics,
    jacobian,
)
from robokin_ros.kinematics.derivatives import kinematic_hessian, pose_derivatives, pose_second_derivatives
from robokin_ros.model import JointType, ModelFields
from robokin_ros.spatial import matrix_to_quat_xyzw, quat_xyzw_to_matrix, skew

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from peers import ERD_ROBOTS, erd_urdf, pin_configuration, pin_model  # noqa: E402

HERE = os.path.dirname(__file__)
ROBOTS = os.path.join(HERE, "..", "..", "..", "robokin_ros", "robots")
FIXTURES = os.path.join(HERE, "..", "..", "fixtures")
MODELS = {name: os.path.join(ROBOTS, f"{name}.urdf") for name in ("ur5e", "panda", "twin_arm_torso")}
MODELS.update({name: os.path.join(FIXTURES, f"{name}.urdf")
               for name in ("prismatic_continuous_mimic", "floating", "planar_joint", "branched", "planar_2link")})


@pytest.fixture(scope="module", params=sorted(MODELS))
def model(request) -> RobotModel:
    return RobotModel.from_urdf_file(MODELS[request.param])


def twist_hat(xi: np.ndarray) -> np.ndarray:
    """4x4 matrix of a twist (v, ω), written independently of the module under test."""
    out = np.zeros((4, 4))
    out[:3, :3] = skew(xi[3:])
    out[:3, 3] = xi[:3]
    return out


def integrate(model: RobotModel, q: np.ndarray, dv: np.ndarray) -> np.ndarray:
    """``q ⊕ dv`` for each row of ``dv (m, n_v)``: floating joints move their child frame by
    ``exp(dv)`` (local velocity, as Pinocchio's integrate); other coordinates add."""
    out = np.tile(q, (dv.shape[0], 1))
    for j in model.active_joints:
        qi, vi, nv = model.joint_q_index[j], model.joint_v_index[j], model.joint_nv[j]
        if model.joint_types[j] != JointType.FLOATING:
            out[:, qi:qi + nv] += dv[:, vi:vi + nv]
            continue
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = quat_xyzw_to_matrix(q[qi + 3:qi + 7]), q[qi:qi + 3]
        for r in range(dv.shape[0]):
            M = T @ scipy.linalg.expm(twist_hat(dv[r, vi:vi + 6]))
            out[r, qi:qi + 3], out[r, qi + 3:qi + 7] = M[:3, 3], matrix_to_quat_xyzw(M[:3, :3])
    return out


def central_steps(n_v: int, h: float) -> np.ndarray:
    """Rows +h e_0, -h e_0, +h e_1, ... ``(2 n_v, n_v)``."""
    return np.repeat(np.eye(n_v), 2, axis=0) * np.tile([h, -h], n_v)[:, None]


def test_pose_derivatives_match_central_differences(model):
    h = 1e-6
    for q in model.random_configuration(2, rng=1):
        T = forward_kinematics(model, integrate(model, q, central_steps(model.n_v, h)))
        fd = (T[0::2] - T[1::2]) / (2 * h)                             # (n_v, n_links, 4, 4)
        for k, frame in enumerate(model.link_names):
            dT = pose_derivatives(model, q, frame)
            np.testing.assert_allclose(dT, fd[:, k], atol=1e-8, err_msg=frame)


def test_pose_second_derivatives_match_central_differences(model):
    h, n = 1e-4, model.n_v
    q = model.random_configuration(rng=2)
    E = np.eye(n) * h
    plus, minus = (E[:, None] + E[None, :]).reshape(-1, n), (E[:, None] - E[None, :]).reshape(-1, n)

    def fk(steps):  # T(q ⊕ step) for the n x n steps, (n, n, n_links, 4, 4)
        return forward_kinematics(model, integrate(model, q, steps)).reshape(n, n, model.n_links, 4, 4)

    fd = (fk(plus) - fk(minus) - fk(-minus) + fk(-plus)) / (4 * h * h)
    for k, frame in enumerate(model.link_names):
        d2 = pose_second_derivatives(model, q, frame)
        np.testing.assert_allclose(d2, fd[:, :, k], atol=2e-6, err_msg=frame)
        np.testing.assert_array_equal(d2, np.swapaxes(d2, 0, 1))


@pytest.mark.parametrize("reference", [WORLD, LOCAL, LOCAL_WORLD_ALIGNED])
def test_kinematic_hessian_matches_central_differences_of_jacobian(model, reference):
    h = 1e-6
    q = model.random_configuration(rng=3)
    qs = integrate(model, q, central_steps(model.n_v, h))
    for frame in model.link_names:
        J = jacobian(model, qs, frame, reference)
        fd = np.moveaxis((J[0::2] - J[1::2]) / (2 * h), 0, 1)          # (6, n_v_i, n_v_j)
        H = kinematic_hessian(model, q, frame, reference)
        np.testing.assert_allclose(H, fd, atol=1e-8, err_msg=frame)


def test_hand_derived_planar_two_link():
    model = RobotModel.from_urdf_file(MODELS["planar_2link"])
    L1, L2 = 1.0, 0.5
    q1, q2 = 0.7, -1.1
    c1, s1, c12, s12 = np.cos(q1), np.sin(q1), np.cos(q1 + q2), np.sin(q1 + q2)
    x, y = L1 * c1 + L2 * c12, L1 * s1 + L2 * s12
    dT = pose_derivatives(model, [q1, q2], "tool")
    np.testing.assert_allclose(dT[0, :3, 3], [-y, x, 0], atol=1e-15)
    np.testing.assert_allclose(dT[1, :3, 3], [-L2 * s12, L2 * c12, 0], atol=1e-15)
    R = np.array([[c12, -s12, 0], [s12, c12, 0], [0, 0, 1]])
    K = skew([0, 0, 1.0])
    for i in range(2):
        np.testing.assert_allclose(dT[i, :3, :3], K @ R, atol=1e-15)
    d2 = pose_second_derivatives(model, [q1, q2], "tool")
    np.testing.assert_allclose(d2[0, 0, :3, 3], [-x, -y, 0], atol=1e-15)
    for i, j in ((0, 1), (1, 0), (1, 1)):
        np.testing.assert_allclose(d2[i, j, :3, 3], [-L2 * c12, -L2 * s12, 0], atol=1e-15)
        np.testing.assert_allclose(d2[i, j, :3, :3], K @ K @ R, atol=1e-15)
    H = kinematic_hessian(model, [q1, q2], "tool", LOCAL_WORLD_ALIGNED)
    np.testing.assert_allclose(H[:3, 0, 0], [-x, -y, 0], atol=1e-15)
    for i, j in ((0, 1), (1, 0), (1, 1)):
        np.testing.assert_allclose(H[:3, i, j], [-L2 * c12, -L2 * s12, 0], atol=1e-15)
    np.testing.assert_array_equal(H[3:], 0.0)  # the angular Jacobian [0 0 1; 0 0 1] is constant


def test_axis_angle_second_derivative_is_K_squared_R():
    """d²R/dθ² = K² R for R = I + sinθ K + (1 − cosθ) K² about any unit axis."""
    axis = np.array([0.3, -0.5, 0.8]) / np.linalg.norm([0.3, -0.5, 0.8])
    model = RobotModel.create(ModelFields(name="one", link_names=["a", "b"], joint_names=["j"], joint_parents=[0],
                                          joint_types=[JointType.CONTINUOUS], joint_axes=[axis],
                                          joint_origins=[np.eye(4)]))
    K = skew(axis)
    for theta in (0.0, 0.4, 2.5):
        R = np.eye(3) + np.sin(theta) * K + (1 - np.cos(theta)) * K @ K
        np.testing.assert_allclose(pose_derivatives(model, [theta], "b")[0, :3, :3], K @ R, atol=1e-15)
        d2 = pose_second_derivatives(model, [theta], "b")[0, 0, :3, :3]
        np.testing.assert_allclose(d2, K @ K @ R, atol=1e-15)
        np.testing.assert_allclose(d2, -np.sin(theta) * K + np.cos(theta) * K @ K, atol=1e-15)


def test_batched_equals_looped_and_poses_reuse():
    model = RobotModel.from_urdf_file(MODELS["twin_arm_torso"])
    q = model.random_configuration(6, rng=4).reshape(2, 3, model.n_q)
    frame = model.leaf_links[0]
    dT, d2 = pose_derivatives(model, q, frame), pose_second_derivatives(model, q, frame)
    H = kinematic_hessian(model, q, frame, LOCAL)
    assert dT.shape == (2, 3, model.n_v, 4, 4)
    assert d2.shape == (2, 3, model.n_v, model.n_v, 4, 4)
    assert H.shape == (2, 3, 6, model.n_v, model.n_v)
    for a in range(2):
        for b in range(3):
            np.testing.assert_allclose(dT[a, b], pose_derivatives(model, q[a, b], frame), atol=1e-15)
            np.testing.assert_allclose(d2[a, b], pose_second_derivatives(model, q[a, b], frame), atol=1e-15)
            np.testing.assert_allclose(H[a, b], kinematic_hessian(model, q[a, b], frame, "local"), atol=1e-15)
    poses = forward_kinematics(model, q)
    np.testing.assert_array_equal(pose_derivatives(model, q, frame, poses=poses), dT)
    np.testing.assert_array_equal(kinematic_hessian(model, q, frame, LOCAL, poses=poses), H)


def test_root_frame_has_zero_derivatives():
    model = RobotModel.from_urdf_file(MODELS["branched"])
    q = model.random_configuration(rng=5)
    assert not pose_derivatives(model, q, model.root_link).any()
    assert not pose_second_derivatives(model, q, model.root_link).any()
    assert not kinematic_hessian(model, q, model.root_link).any()


def test_errors_name_the_culprit():
    model = RobotModel.from_urdf_file(MODELS["ur5e"])
    q = model.home_configuration()
    with pytest.raises(UnknownLinkError, match="unknown link 'tool1'; did you mean 'tool0'"):
        pose_derivatives(model, q, "tool1")
    with pytest.raises(ShapeError, match=r"q must have shape \(\.\.\., 6\), got \(5,\)"):
        pose_second_derivatives(model, q[:5], "tool0")
    with pytest.raises(NonFiniteError, match=r"q has non-finite entries at \['elbow_joint'\]"):
        kinematic_hessian(model, np.where(np.arange(6) == 2, np.nan, q), "tool0")
    with pytest.raises(ShapeError, match=r"poses must have shape \(9, 4, 4\)"):
        pose_derivatives(model, q, "tool0", poses=np.zeros((8, 4, 4)))
    with pytest.raises(ValueError, match="unknown Jacobian reference 'body'"):
        kinematic_hessian(model, q, "tool0", reference="body")


@pytest.mark.parametrize("robot", ["ur5", "panda", "xarm7", "kinova", "talos"])
def test_kinematic_hessian_agrees_with_pinocchio(robot):
    """Pinocchio's getJointKinematicHessian, at the child link of every movable joint.

    Pinocchio counts mimic joints as independent: ours = Pᵀ H_pin P with P mapping its v to ours
    (with multipliers). Pinocchio stores ``H[:, j, i] = ∂J_j/∂q_i``; pin 4.1's Python binding returns
    the column-major buffer as a C-ordered ``(6, nv, nv)`` array, so it is re-read in Fortran order.
    """
    pin = pytest.importorskip("pinocchio")
    path = erd_urdf(ERD_ROBOTS[robot])
    model = RobotModel.from_urdf_file(path)
    pmodel, pdata = pin_model(path)
    P = np.zeros((pmodel.nv, model.n_v))
    for jid in range(1, pmodel.njoints):
        j = model.joint_index(pmodel.names[jid])
        s = model.velocity_source_joints[j]
        P[pmodel.joints[jid].idx_v, model.joint_v_index[s]] = model.mimic_multiplier[j] if model.is_mimic[j] else 1.0
    q = model.random_configuration(rng=6)
    pin.computeJointJacobians(pmodel, pdata, pin_configuration(model, pmodel, q))
    pin.computeJointKinematicHessians(pmodel, pdata, pin_configuration(model, pmodel, q))
    poses = forward_kinematics(model, q)
    for reference, pin_reference in ((WORLD, pin.WORLD), (LOCAL, pin.LOCAL),
                                     (LOCAL_WORLD_ALIGNED, pin.LOCAL_WORLD_ALIGNED)):
        for jid in range(1, pmodel.njoints):
            frame = model.link_names[model.joint_index(pmodel.names[jid]) + 1]
            raw = pin.getJointKinematicHessian(pmodel, pdata, jid, pin_reference)
            H_pin = raw.ravel().reshape(raw.shape, order="F")  # the binding's buffer is column-major
            expected = np.einsum("ai,xba,bj->xij", P, H_pin, P)  # H_pin[:, b, a] = ∂J_b/∂q_a
            H = kinematic_hessian(model, q, frame, reference, poses=poses)
            np.testing.assert_allclose(H, expected, atol=1e-12, err_msg=f"{frame} {reference}")
