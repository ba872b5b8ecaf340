"""Forward kinematics and frame transforms: hand-derived fixtures, the per-configuration
reference implementation (test/core/reference.py), batching, property tests on random trees,
errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from reference import random_tree, reference_fk

from robokin_ros import NonFiniteError, RobotModel, ShapeError, UnknownLinkError, forward_kinematics, frame_transform
from robokin_ros.kernels.plan import plane_frame
from robokin_ros.spatial import inverse_transform

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RNG = np.random.default_rng(2024)


def fixture(name: str) -> RobotModel:
    return RobotModel.from_urdf_file(FIXTURES / f"{name}.urdf")


def Rx(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def Ry(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def Rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def pose(model, T, link):
    return T[..., model.link_index(link), :, :]


# ---------------------------------------------------------------------------- hand-derived
@pytest.mark.parametrize("q1, q2", [(0.0, 0.0), (0.3, -1.1), (np.pi / 2, np.pi / 2), (-2.5, 3.0)])
def test_planar_2link_closed_form(q1, q2):
    m = fixture("planar_2link")
    T = forward_kinematics(m, [q1, q2])
    assert T.shape == (4, 4, 4)
    L1, L2 = 1.0, 0.5
    tool = pose(m, T, "tool")
    np.testing.assert_allclose(tool[:3, 3], [L1 * np.cos(q1) + L2 * np.cos(q1 + q2),
                                             L1 * np.sin(q1) + L2 * np.sin(q1 + q2), 0.0], atol=1e-15)
    np.testing.assert_allclose(tool[:3, :3], Rz(q1 + q2), atol=1e-15)
    np.testing.assert_allclose(pose(m, T, "link2")[:3, 3], [L1 * np.cos(q1), L1 * np.sin(q1), 0], atol=1e-15)
    np.testing.assert_array_equal(pose(m, T, "base_link"), np.eye(4))
    np.testing.assert_array_equal(tool[3], [0, 0, 0, 1])


@pytest.mark.parametrize("s, w", [(0.0, 0.0), (0.4, 0.9), (1.0, -2.7), (0.25, 7.0)])
def test_prismatic_continuous_mimic_closed_form(s, w):
    m = fixture("prismatic_continuous_mimic")
    T = forward_kinematics(m, [s, w])
    follower = 2.0 * w + 0.1
    R_follower = Ry(w) @ Rz(follower)
    p_follower = np.array([s, 0, 0.1]) + Ry(w) @ [0.2, 0, 0]
    np.testing.assert_allclose(pose(m, T, "slider")[:3, 3], [s, 0, 0], atol=1e-15)
    np.testing.assert_allclose(pose(m, T, "wheel")[:3, :3], Ry(w), atol=1e-15)
    np.testing.assert_allclose(pose(m, T, "follower")[:3, :3], R_follower, atol=1e-14)
    np.testing.assert_allclose(pose(m, T, "follower")[:3, 3], p_follower, atol=1e-15)
    np.testing.assert_allclose(pose(m, T, "tool")[:3, 3], p_follower + R_follower @ [0.1, 0, 0], atol=1e-15)
    assert m.all_joint_values(np.array([s, w]))["follower_joint"] == pytest.approx(follower)


def test_floating_base_with_known_quaternion():
    m = fixture("floating")
    x, y, z, arm = 1.0, -2.0, 0.5, 0.4
    half = np.pi / 4  # quarter turn about z: quaternion (0, 0, sin π/4, cos π/4)
    T = forward_kinematics(m, [x, y, z, 0.0, 0.0, np.sin(half), np.cos(half), arm])
    R_body = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(pose(m, T, "body")[:3, :3], R_body, atol=1e-15)
    np.testing.assert_allclose(pose(m, T, "body")[:3, 3], [x, y, z], atol=1e-15)
    tip = [x, y, z] + R_body @ ([0.5, 0, 0] + Rz(arm) @ [0.3, 0, 0])
    np.testing.assert_allclose(pose(m, T, "tip")[:3, 3], tip, atol=1e-15)
    np.testing.assert_allclose(pose(m, T, "tip")[:3, :3], R_body @ Rz(arm), atol=1e-15)


def test_floating_quaternion_is_normalised():
    m = fixture("floating")
    q = np.array([0, 0, 0, 0.0, 0.0, 3 * np.sin(0.2), 3 * np.cos(0.2), 0.0])
    np.testing.assert_allclose(pose(m, forward_kinematics(m, q), "body")[:3, :3], Rz(0.4), atol=1e-15)


@pytest.mark.parametrize("x, y, theta", [(0, 0, 0), (0.5, -0.2, 1.0), (-1.0, 2.0, -3.0)])
def test_planar_joint_x_y_theta(x, y, theta):
    m = fixture("planar_joint")
    T = forward_kinematics(m, [x, y, theta])
    np.testing.assert_allclose(pose(m, T, "carriage")[:3, 3], [x, y, 0], atol=1e-15)
    np.testing.assert_allclose(pose(m, T, "tip")[:3, 3], [x + 0.3 * np.cos(theta), y + 0.3 * np.sin(theta), 0],
                               atol=1e-15)
    np.testing.assert_allclose(pose(m, T, "tip")[:3, :3], Rz(theta), atol=1e-15)


def planar_about(axis):
    return RobotModel.from_urdf(
        f'<robot name="p"><link name="a"/><link name="b"/><joint name="j" type="planar"><parent link="a"/>'
        f'<child link="b"/><origin xyz="0.1 0.2 0.3" rpy="0.4 0.5 0.6"/><axis xyz="{axis}"/></joint></robot>')


@pytest.mark.parametrize("axis", ["0 0 1", "0 1 0", "1 0 0", "1 2 -3"])
def test_planar_joint_moves_in_the_plane_normal_to_its_axis(axis):
    m = planar_about(axis)
    origin = m.joint_origins[0]
    n = origin[:3, :3] @ m.joint_axes[0]  # the axis in the parent (= world) frame
    q = RNG.uniform(-2, 2, (50, 3))
    T = forward_kinematics(m, q)[:, 1]
    offset = T[:, :3, 3] - origin[:3, 3]
    np.testing.assert_allclose(offset @ n, 0.0, atol=1e-14)  # translation in the plane
    np.testing.assert_allclose(np.linalg.norm(offset, axis=1), np.linalg.norm(q[:, :2], axis=1), atol=1e-14)
    relative = np.swapaxes(origin[:3, :3], 0, 1) @ T[:, :3, :3]
    np.testing.assert_allclose(relative @ m.joint_axes[0], np.tile(m.joint_axes[0], (50, 1)), atol=1e-14)
    np.testing.assert_allclose((np.trace(relative, axis1=1, axis2=2) - 1) / 2, np.cos(q[:, 2]), atol=1e-14)


def test_plane_frame_convention():
    np.testing.assert_array_equal(plane_frame([0, 0, 1]), np.eye(3))
    for axis in RNG.normal(size=(20, 3)):
        A = plane_frame(axis)
        np.testing.assert_allclose(A.T @ A, np.eye(3), atol=1e-15)
        np.testing.assert_allclose(A[:, 2], axis / np.linalg.norm(axis), atol=1e-15)
        assert np.linalg.det(A) == pytest.approx(1.0)


@pytest.mark.parametrize("q", [(0.0, 0.0, 0.0), (0.7, -0.4, 1.2)])
def test_branched_closed_form(q):
    m = fixture("branched")
    T = forward_kinematics(m, q)
    base = np.array([0, 0, 0.1])
    left = base + Rz(q[0]) @ ([0, 0.2, 0.5] + Ry(q[1]) @ [0, 0, 0.4])
    right = base + Rz(q[0]) @ ([0, -0.2, 0.5] + Ry(q[2]) @ [0, 0, 0.3])
    np.testing.assert_allclose(pose(m, T, "left_tip")[:3, 3], left, atol=1e-15)
    np.testing.assert_allclose(pose(m, T, "right_tip")[:3, 3], right, atol=1e-15)
    np.testing.assert_allclose(pose(m, T, "right_tip")[:3, :3], Rz(q[0]) @ Ry(q[2]), atol=1e-15)


def test_minimal_model_without_coordinates(kernel):
    m = fixture("good_minimal")
    np.testing.assert_array_equal(forward_kinematics(m, np.zeros(0)), np.eye(4)[None])
    assert forward_kinematics(m, np.zeros((5, 0))).shape == (5, 1, 4, 4)


# ---------------------------------------------------------------------------- reference and batching
def test_equals_reference_implementation(model, kernel):
    wild = model.random_configuration(5, rng=RNG)  # far outside the limits: FK does not care
    scaled = np.ones(model.n_q, bool)
    for s in model.quaternion_slices:
        scaled[s] = False
    wild[:, scaled] *= 5.0
    q = np.concatenate([model.random_configuration(20, rng=RNG), model.home_configuration()[None], wild])
    T = forward_kinematics(model, q)
    for qi, Ti in zip(q, T):
        np.testing.assert_allclose(Ti, reference_fk(model, qi), rtol=0, atol=1e-12)


def test_batched_equals_looped(model, kernel):
    q = model.random_configuration(6, rng=RNG).reshape(2, 3, model.n_q)
    T = forward_kinematics(model, q)
    assert T.shape == (2, 3, model.n_links, 4, 4)
    for i in range(2):
        for j in range(3):
            np.testing.assert_array_equal(T[i, j], forward_kinematics(model, q[i, j]))
    assert forward_kinematics(model, q[:0].reshape(0, model.n_q)).shape == (0, model.n_links, 4, 4)


def test_accepts_lists_float32_and_strided_input(model):
    q = model.random_configuration(8, rng=RNG)
    expected = forward_kinematics(model, q[::2])
    np.testing.assert_array_equal(forward_kinematics(model, np.asfortranarray(q)[::2]), expected)
    np.testing.assert_array_equal(forward_kinematics(model, q[::2].tolist()), expected)
    np.testing.assert_allclose(forward_kinematics(model, q[::2].astype(np.float32)), expected, atol=1e-5)


def test_does_not_modify_its_input(model):
    q = model.random_configuration(3, rng=RNG)
    copy = q.copy()
    forward_kinematics(model, q)
    np.testing.assert_array_equal(q, copy)


# ---------------------------------------------------------------------------- random trees (hypothesis)
trees = st.builds(lambda seed, n: random_tree(np.random.default_rng(seed), n),
                  st.integers(0, 2**32 - 1), st.integers(2, 12))


@settings(max_examples=40, deadline=None)
@given(model=trees, seed=st.integers(0, 2**32 - 1))
def test_random_tree_equals_reference(model, seed):
    assume(model.n_q > 0)
    q = model.random_configuration(3, rng=seed)
    T = forward_kinematics(model, q)
    for qi, Ti in zip(q, T):
        np.testing.assert_allclose(Ti, reference_fk(model, qi), atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(model=trees, seed=st.integers(0, 2**32 - 1), data=st.data())
def test_random_tree_frame_transform_identities(model, seed, data):
    assume(model.n_q > 0)
    names = st.sampled_from(model.link_names)
    a, b, c = data.draw(names), data.draw(names), data.draw(names)
    q = model.random_configuration(4, rng=seed).reshape(2, 2, model.n_q)
    T_ab, T_bc, T_ac = (frame_transform(model, q, x, y) for x, y in ((a, b), (b, c), (a, c)))
    assert T_ac.shape == (2, 2, 4, 4)
    np.testing.assert_allclose(T_ab @ T_bc, T_ac, atol=1e-12)           # composition
    T_ba = frame_transform(model, q, b, a)
    np.testing.assert_allclose(T_ab @ T_ba, np.broadcast_to(np.eye(4), T_ab.shape), atol=1e-12)
    np.testing.assert_allclose(T_ba, inverse_transform(T_ab), atol=1e-12)  # inverse symmetry
    world = forward_kinematics(model, q)
    np.testing.assert_allclose(frame_transform(model, q, model.root_link, b), world[..., model.link_index(b), :, :],
                               atol=1e-15)
    np.testing.assert_allclose(frame_transform(model, q, a, a), np.broadcast_to(np.eye(4), T_ab.shape), atol=1e-13)


# ---------------------------------------------------------------------------- frame_transform
def test_frame_transform_by_hand():
    m = fixture("branched")
    q = np.array([0.4, 0.3, -0.8])
    T = frame_transform(m, q, "left_tip", "right_tip")
    world = forward_kinematics(m, q)
    expected = np.linalg.inv(pose(m, world, "left_tip")) @ pose(m, world, "right_tip")
    np.testing.assert_allclose(T, expected, atol=1e-14)
    # the trunk rotation cancels between the two sides
    np.testing.assert_allclose(frame_transform(m, [1.3, 0.3, -0.8], "left_tip", "right_tip"), T, atol=1e-14)


def test_frame_transform_reuses_poses():
    m = fixture("branched")
    q = m.random_configuration(5, rng=RNG)
    poses = forward_kinematics(m, q)
    np.testing.assert_array_equal(frame_transform(m, q, "left", "right", poses=poses),
                                  frame_transform(m, q, "left", "right"))
    fake = poses.copy()
    fake[:, m.link_index("right"), :3, 3] += 1.0  # proves the given poses are used, not recomputed
    assert not np.allclose(frame_transform(m, q, "base", "right", poses=fake), frame_transform(m, q, "base", "right"))


def test_frame_transform_poses_shape_error():
    m = fixture("branched")
    q = m.random_configuration(5, rng=RNG)
    with pytest.raises(ShapeError) as info:
        frame_transform(m, q, "left", "right", poses=forward_kinematics(m, q[0]))
    assert str(info.value) == "poses must have shape (5, 6, 4, 4), got (6, 4, 4)"


@pytest.mark.parametrize("a, b, bad", [("left_tp", "right", "left_tp"), ("left", "rigth", "rigth")])
def test_frame_transform_unknown_frame(a, b, bad):
    m = fixture("branched")
    with pytest.raises(UnknownLinkError) as info:
        frame_transform(m, np.zeros(3), a, b)
    assert str(info.value).startswith(f"unknown link {bad!r}; did you mean")


def test_bad_q_errors():
    m = fixture("branched")
    with pytest.raises(ShapeError, match=r"q must have shape \(\.\.\., 3\), got \(2, 4\)"):
        forward_kinematics(m, np.zeros((2, 4)))
    with pytest.raises(ShapeError, match=r"got \(\)"):
        frame_transform(m, 0.0, "left", "right")
    with pytest.raises(NonFiniteError, match=r"q has non-finite entries at \['right_joint'\]"):
        forward_kinematics(m, [0.0, 0.0, np.nan])
