"""Jacobians: central finite differences of the reference FK (reference.fd_jacobians) on every
bundled robot and fixture in the three references, point offsets, closed forms, the relations
between references, batching, random trees, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from reference import fd_jacobians, random_tree

from robokin_ros import (
    LOCAL,
    LOCAL_WORLD_ALIGNED,
    WORLD,
    NonFiniteError,
    Reference,
    RobokinError,
    RobotModel,
    ShapeError,
    UnknownLinkError,
    forward_kinematics,
    jacobian,
    jacobians,
)
from robokin_ros.kinematics.geometric_jacobians import frame_pose_and_jacobian

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
REFERENCES = [WORLD, LOCAL, LOCAL_WORLD_ALIGNED]
FD_ATOL = 1e-7  # central differences with h = 1e-6: truncation ~1e-12, round-off ~1e-10
RNG = np.random.default_rng(99)


def fixture(name: str) -> RobotModel:
    return RobotModel.from_urdf_file(FIXTURES / f"{name}.urdf")


@pytest.mark.parametrize("reference", REFERENCES, ids=lambda r: r.name)
def test_every_frame_matches_finite_differences(model, reference):
    for q in model.random_configuration(3, rng=RNG):
        fd = fd_jacobians(model, q)[reference.value]
        J = jacobians(model, q, reference)
        assert J.shape == (model.n_links, 6, model.n_v)
        np.testing.assert_allclose(J, fd, atol=FD_ATOL)


@pytest.mark.parametrize("reference", REFERENCES, ids=lambda r: r.name)
def test_point_offset_matches_finite_differences(model, reference, kernel):
    q = model.random_configuration(rng=RNG)
    point = RNG.uniform(-0.3, 0.3, 3)
    fd = fd_jacobians(model, q, point=point)[reference.value]
    for k, name in enumerate(model.link_names):
        np.testing.assert_allclose(jacobian(model, q, name, reference, point=point), fd[k], atol=FD_ATOL)


def test_single_frame_equals_all_frames(model, kernel):
    q = model.random_configuration(6, rng=RNG).reshape(2, 3, model.n_q)
    for reference in REFERENCES:
        J_all = jacobians(model, q, reference)
        assert J_all.shape == (2, 3, model.n_links, 6, model.n_v)
        for k, name in enumerate(model.link_names):
            np.testing.assert_allclose(jacobian(model, q, name, reference), J_all[:, :, k], atol=1e-14)


def test_batched_equals_looped(model, kernel):
    q = model.random_configuration(4, rng=RNG).reshape(2, 2, model.n_q)
    J = jacobians(model, q, LOCAL)
    tip = model.leaf_links[-1]
    Jt = jacobian(model, q, tip, WORLD)
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(J[i, j], jacobians(model, q[i, j], LOCAL), atol=1e-15)
            np.testing.assert_allclose(Jt[i, j], jacobian(model, q[i, j], tip, WORLD), atol=1e-15)


def test_relations_between_references(model):
    q = model.random_configuration(5, rng=RNG)
    T = forward_kinematics(model, q)
    R, p = T[..., :3, :3], T[..., :3, 3]
    lwa, local, world = (jacobians(model, q, r) for r in (LOCAL_WORLD_ALIGNED, LOCAL, WORLD))
    Rt = np.swapaxes(R, -1, -2)
    np.testing.assert_allclose(local[..., :3, :], Rt @ lwa[..., :3, :], atol=1e-14)   # LOCAL = Rᵀ LWA
    np.testing.assert_allclose(local[..., 3:, :], Rt @ lwa[..., 3:, :], atol=1e-14)
    shifted = lwa[..., :3, :] - np.cross(lwa[..., 3:, :], p[..., :, None], axis=-2)   # WORLD = LWA moved to 0
    np.testing.assert_allclose(world[..., :3, :], shifted, atol=1e-14)
    np.testing.assert_array_equal(world[..., 3:, :], lwa[..., 3:, :])


def test_frame_pose_and_jacobian_share_the_work(model, kernel):
    q = model.random_configuration(3, rng=RNG).reshape(3, 1, model.n_q)
    T = forward_kinematics(model, q)
    for k, name in enumerate(model.link_names):
        pose, J = frame_pose_and_jacobian(model, q, name, LOCAL, point=[0.1, 0.0, -0.2])
        np.testing.assert_allclose(pose, T[:, :, k], atol=1e-14)  # the frame's pose, not the point's
        np.testing.assert_allclose(J, jacobian(model, q, name, LOCAL, point=[0.1, 0.0, -0.2]), atol=1e-14)


def test_poses_are_reused(model):
    q = model.random_configuration(2, rng=RNG)
    T = forward_kinematics(model, q)
    tip = model.leaf_links[0]
    np.testing.assert_array_equal(jacobians(model, q, WORLD, poses=T), jacobians(model, q, WORLD))
    np.testing.assert_array_equal(jacobian(model, q, tip, LOCAL, poses=T), jacobian(model, q, tip, LOCAL))


# ---------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("q1, q2", [(0.3, -1.1), (2.0, 0.5)])
def test_planar_2link_closed_form(q1, q2):
    m = fixture("planar_2link")
    L1, L2 = 1.0, 0.5
    s1, c1, s12, c12 = np.sin(q1), np.cos(q1), np.sin(q1 + q2), np.cos(q1 + q2)
    expected = np.array([[-L1 * s1 - L2 * s12, -L2 * s12], [L1 * c1 + L2 * c12, L2 * c12], [0, 0],
                         [0, 0], [0, 0], [1, 1]])
    np.testing.assert_allclose(jacobian(m, [q1, q2], "tool"), expected, atol=1e-15)
    np.testing.assert_allclose(jacobian(m, [q1, q2], "tool", "local")[3:], [[0, 0], [0, 0], [1, 1]], atol=1e-15)
    # Velocity of the body point at the world origin: rotation about z through it, so zero for joint 1.
    np.testing.assert_allclose(jacobian(m, [q1, q2], "tool", WORLD)[:3, 0], 0.0, atol=1e-15)


def test_mimic_adds_its_motion_into_the_source_column():
    m = fixture("prismatic_continuous_mimic")
    q = np.array([0.3, 0.0])
    J = jacobian(m, q, "tool")
    # At w = 0 the wheel (about y) and the follower (about z, 2x) both turn the tool: ω = (0, 1, 2).
    np.testing.assert_allclose(J[3:, 1], [0.0, 1.0, 2.0], atol=1e-15)
    np.testing.assert_allclose(J[:, 0], [1, 0, 0, 0, 0, 0], atol=1e-15)  # slider along x


def test_branches_do_not_move_each_other():
    m = fixture("branched")
    q = m.random_configuration(rng=RNG)
    np.testing.assert_array_equal(jacobian(m, q, "left_tip")[:, 2], 0.0)
    np.testing.assert_array_equal(jacobian(m, q, "right_tip")[:, 1], 0.0)
    np.testing.assert_array_equal(jacobian(m, q, "base"), 0.0)


def test_floating_joint_columns_are_the_body_twist():
    m = fixture("floating")
    q = m.random_configuration(rng=RNG)
    np.testing.assert_allclose(jacobian(m, q, "body", LOCAL)[:, :6], np.eye(6), atol=1e-15)


def test_planar_joint_columns():
    m = fixture("planar_joint")
    J = jacobian(m, [0.2, -0.1, 0.7], "carriage", LOCAL_WORLD_ALIGNED)
    np.testing.assert_allclose(J, [[1, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 0], [0, 0, 0], [0, 0, 1]], atol=1e-15)


def test_world_reference_ignores_the_point():
    m = fixture("branched")
    q = m.random_configuration(rng=RNG)
    np.testing.assert_allclose(jacobian(m, q, "left", WORLD, point=[0.1, 0.2, 0.3]), jacobian(m, q, "left", WORLD),
                               atol=1e-15)


def test_model_without_coordinates(kernel):
    m = fixture("good_minimal")
    assert jacobian(m, np.zeros(0), "base_link").shape == (6, 0)
    assert jacobians(m, np.zeros((2, 0))).shape == (2, 1, 6, 0)


# ---------------------------------------------------------------------------- random trees
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 8), reference=st.sampled_from(REFERENCES))
def test_random_tree_matches_finite_differences(seed, n, reference):
    rng = np.random.default_rng(seed)
    model = random_tree(rng, n)
    assume(model.n_v > 0)
    q = model.random_configuration(rng=rng)
    point = rng.uniform(-0.5, 0.5, 3)
    fd = fd_jacobians(model, q, point=point)[reference.value]
    J = np.array([jacobian(model, q, name, reference, point=point) for name in model.link_names])
    np.testing.assert_allclose(J, fd, atol=FD_ATOL)


# ---------------------------------------------------------------------------- references and errors
@pytest.mark.parametrize("text, expected", [("world", WORLD), ("LOCAL", LOCAL), (" local_world_aligned ", LOCAL_WORLD_ALIGNED),
                                            ("Local_World_Aligned", LOCAL_WORLD_ALIGNED), (WORLD, WORLD)])
def test_reference_parse(text, expected):
    assert Reference.parse(text) is expected


def test_unknown_reference():
    m = fixture("branched")
    for call in (lambda r: jacobian(m, np.zeros(3), "left", r), lambda r: jacobians(m, np.zeros(3), r)):
        with pytest.raises(ValueError) as info:
            call("body")
        assert isinstance(info.value, RobokinError)
        assert str(info.value) == "reference: unknown Jacobian reference 'body'; expected one of WORLD, LOCAL, LOCAL_WORLD_ALIGNED"


def test_unknown_frame():
    m = fixture("branched")
    with pytest.raises(UnknownLinkError) as info:
        jacobian(m, np.zeros(3), "left_tipp")
    assert str(info.value).startswith("unknown link 'left_tipp'; did you mean 'left_tip'")


@pytest.mark.parametrize("point", [[0.1, 0.2], np.zeros((2, 3)), 0.5])
def test_bad_point_shape(point):
    m = fixture("branched")
    with pytest.raises(ShapeError) as info:
        jacobian(m, np.zeros(3), "left", point=point)
    assert str(info.value) == f"point must have shape (3,), got {np.shape(point)}"


def test_bad_q_and_poses():
    m = fixture("branched")
    with pytest.raises(ShapeError, match=r"q must have shape \(\.\.\., 3\), got \(2,\)"):
        jacobian(m, np.zeros(2), "left")
    with pytest.raises(NonFiniteError, match="trunk_joint"):
        jacobians(m, [np.inf, 0, 0])
    q = np.zeros((4, 3))
    with pytest.raises(ShapeError, match=r"poses must have shape \(4, 6, 4, 4\), got \(6, 4, 4\)"):
        jacobians(m, q, poses=forward_kinematics(m, q[0]))
    with pytest.raises(ShapeError, match="poses must have shape"):
        jacobian(m, q, "left", poses=forward_kinematics(m, q)[:, :5])
