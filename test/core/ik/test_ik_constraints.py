"""IK under MoveIt-style constraints, the small arms (5 and 4 DOF) and the reach bound: every
answer is checked by FK here, independently of the solver's own check."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from robokin_ros import RobotModel, forward_kinematics, frame_transform
from robokin_ros.errors import IKOptionError
from robokin_ros.ik import reach_upper_bound
from robokin_ros.ik.constrained import solve_constrained
from robokin_ros.ik.constraints import (
    ROTATION_VECTOR,
    XYZ_EULER_ANGLES,
    OrientationConstraint,
    PositionConstraint,
    Region,
    xyz_euler_angles,
)
from robokin_ros.spatial import exp_so3

ROBOTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "robokin_ros", "robots")
SO101 = RobotModel.from_urdf_file(os.path.join(ROBOTS, "so101_arm.urdf"))
OMX = RobotModel.from_urdf_file(os.path.join(ROBOTS, "open_manipulator_x.urdf"))
PANDA = RobotModel.from_urdf_file(os.path.join(ROBOTS, "panda.urdf"))
SMALL = [(SO101, 5), (OMX, 4)]


def _tool(model, q):
    return frame_transform(model, q, model.root_link, "tool")


def _off_plane(T, angle):
    """``T`` turned by ``angle`` about its own x axis (out of a pan-and-pitch arm's reach)."""
    out = T.copy()
    out[:3, :3] = T[:3, :3] @ exp_so3(np.array([angle, 0.0, 0.0]))
    return out


def test_small_arms_have_the_published_degrees_of_freedom():
    for model, dof in SMALL:
        tips = model.path_joints(model.root_link, "tool")
        assert len(tips) == dof, (model.name, tips)


@pytest.mark.parametrize("model", [SO101, OMX], ids=lambda m: m.name)
def test_full_pose_an_arm_under_6_dof_cannot_reach_is_never_success(model):
    rng = np.random.default_rng(5)
    for q in model.random_configuration(6, rng):
        target = _off_plane(_tool(model, q), 0.4)
        result = solve_constrained(model, [], poses={"tool": target}, timeout=0.05)
        assert not bool(result.result.success)
        reached = _tool(model, result.result.q)
        miss = max(np.linalg.norm(reached[:3, 3] - target[:3, 3]),
                   np.linalg.norm(Rotation.from_matrix(target[:3, :3].T @ reached[:3, :3]).as_rotvec()))
        assert miss > 1e-3
        assert float(result.result.position_error) + float(result.result.rotation_error) > 1e-3


@pytest.mark.parametrize("model", [SO101, OMX], ids=lambda m: m.name)
def test_yaw_free_pick_solves_and_keeps_the_approach_axis(model):
    """Tool z (the approach) within 0.01 rad of the target's, any rotation about it: the arm
    answers within an iteration budget (no wall-clock budget: the numpy path, which serves until
    a compiled step is loaded, spends ~0.6 ms an iteration), and FK of the answer meets the
    position and the two constrained axes."""
    rng = np.random.default_rng(6)
    for q in model.random_configuration(6, rng):
        reachable = _tool(model, q)
        target = reachable.copy()
        target[:3, :3] = reachable[:3, :3] @ exp_so3(np.array([0.0, 0.0, rng.uniform(-3, 3)]))
        constraint = OrientationConstraint("tool", target[:3, :3], (0.01, 0.01, math.pi))
        result = solve_constrained(model, [constraint], poses={"tool": target}, timeout=None, rng=0,
                                   max_iterations=10 ** 4)
        assert bool(result.result.success), [r.describe() for r in result.residuals]
        reached = _tool(model, result.result.q)
        assert np.linalg.norm(reached[:3, 3] - target[:3, 3]) < 1e-4
        angles = Rotation.from_matrix(target[:3, :3].T @ reached[:3, :3]).as_euler("XYZ")
        assert abs(angles[0]) <= 0.01 + 1e-9 and abs(angles[1]) <= 0.01 + 1e-9


def test_position_only_request_solves_on_a_4_dof_arm():
    rng = np.random.default_rng(7)
    for q in OMX.random_configuration(5, rng):
        centre = _tool(OMX, q)
        region = PositionConstraint("tool", (0.0, 0.0, 0.0), (Region("sphere", (0.002,), centre),))
        result = solve_constrained(OMX, [region], timeout=0.5, rng=0)
        assert bool(result.result.success)
        assert np.linalg.norm(_tool(OMX, result.result.q)[:3, 3] - centre[:3, 3]) <= 0.002


@pytest.mark.parametrize("shape,dims", [("box", (0.02, 0.04, 0.01)), ("sphere", (0.015,)), ("cylinder", (0.02, 0.01))])
def test_position_region_with_an_offset_point_holds_by_fk(shape, dims):
    """The Panda's point 0.1 m along the hand's z must lie in a region placed (and turned) away
    from where it is at the seed; checked against the region's own geometry here."""
    rng = np.random.default_rng(8)
    q_goal = PANDA.random_configuration(rng=rng)
    T_hand = frame_transform(PANDA, q_goal, PANDA.root_link, "panda_hand")
    point = T_hand[:3, :3] @ np.array([0.0, 0.0, 0.1]) + T_hand[:3, 3]
    T_region = np.eye(4)
    T_region[:3, :3] = Rotation.from_euler("xyz", [0.3, -0.2, 0.9]).as_matrix()
    T_region[:3, 3] = point + [0.004, -0.003, 0.002]
    constraint = PositionConstraint("panda_hand", (0.0, 0.0, 0.1), (Region(shape, dims, T_region),))
    result = solve_constrained(PANDA, [constraint], timeout=1.0, rng=0)
    assert bool(result.result.success)
    T = frame_transform(PANDA, result.result.q, PANDA.root_link, "panda_hand")
    local = T_region[:3, :3].T @ (T[:3, :3] @ [0.0, 0.0, 0.1] + T[:3, 3] - T_region[:3, 3])
    if shape == "box":
        assert (np.abs(local) <= 0.5 * np.array(dims) + 1e-9).all()
    elif shape == "sphere":
        assert np.linalg.norm(local) <= dims[0] + 1e-9
    else:
        assert abs(local[2]) <= 0.5 * dims[0] + 1e-9 and math.hypot(local[0], local[1]) <= dims[1] + 1e-9


def test_constraints_on_two_links_combine():
    """Panda: the hand's orientation about a rotation vector band, and the elbow (link4) in a box."""
    rng = np.random.default_rng(9)
    q_goal = PANDA.random_configuration(rng=rng)
    T = forward_kinematics(PANDA, q_goal)
    hand, elbow = T[PANDA.link_index("panda_hand")], T[PANDA.link_index("panda_link4")]
    box = np.eye(4)
    box[:3, 3] = elbow[:3, 3]
    constraints = [OrientationConstraint("panda_hand", hand[:3, :3], (0.05, 0.05, 0.05), ROTATION_VECTOR),
                   PositionConstraint("panda_link4", (0.0, 0.0, 0.0), (Region("box", (0.02, 0.02, 0.02), box),))]
    result = solve_constrained(PANDA, constraints, poses={"panda_hand": hand}, timeout=1.0, rng=0)
    assert bool(result.result.success)
    T = forward_kinematics(PANDA, result.result.q)
    assert (np.abs(T[PANDA.link_index("panda_link4"), :3, 3] - elbow[:3, 3]) <= 0.01 + 1e-9).all()
    rotvec = Rotation.from_matrix(hand[:3, :3].T @ T[PANDA.link_index("panda_hand"), :3, :3]).as_rotvec()
    assert (np.abs(rotvec) <= 0.05 + 1e-9).all()


def test_xyz_euler_angles_match_scipy_intrinsic_xyz():
    for R in Rotation.random(50, random_state=3).as_matrix():
        angles, regular = xyz_euler_angles(R)
        assert regular and np.allclose(angles, Rotation.from_matrix(R).as_euler("XYZ"), atol=1e-9)


def test_orientation_check_uses_the_desired_frames_axes():
    """A rotation about the desired frame's z is free with z tolerance π, about x it is not."""
    R_desired = Rotation.from_euler("xyz", [0.4, 0.2, -0.7]).as_matrix()
    c = OrientationConstraint("tool", R_desired, (0.01, 0.01, math.pi), XYZ_EULER_ANGLES)
    T = np.eye(4)
    T[:3, :3] = R_desired @ exp_so3(np.array([0.0, 0.0, 2.0]))
    assert c.excess(T) == 0.0
    T[:3, :3] = R_desired @ exp_so3(np.array([0.3, 0.0, 0.0]))
    assert c.excess(T) == pytest.approx(0.29)


def test_bad_constraints_are_named():
    with pytest.raises(IKOptionError, match="cone"):
        Region("cone", (0.1, 0.1), np.eye(4))
    with pytest.raises(IKOptionError, match="a sphere region needs 1"):
        Region("sphere", (0.1, 0.2), np.eye(4))
    with pytest.raises(IKOptionError, match="parameterization"):
        OrientationConstraint("tool", np.eye(3), (0.1, 0.1, 0.1), 7)
    with pytest.raises(IKOptionError, match="two orientation constraints"):
        c = OrientationConstraint("tool", np.eye(3), (0.1, 0.1, 0.1))
        solve_constrained(OMX, [c, c])
    with pytest.raises(IKOptionError, match="no region"):
        PositionConstraint("tool", (0.0, 0.0, 0.0), ())


def test_reach_bounds_every_configuration_and_is_the_sum_of_offsets():
    """The bound is never exceeded (sampled), and on a planar chain it is reached when stretched."""
    for model, tip in ((PANDA, "panda_hand"), (SO101, "tool"), (OMX, "tool")):
        reach = reach_upper_bound(model, model.root_link, tip)
        q = model.random_configuration(20000, np.random.default_rng(1))
        distance = np.linalg.norm(forward_kinematics(model, q)[:, model.link_index(tip), :3, 3], axis=1)
        assert distance.max() <= reach
    planar = RobotModel.from_dh([[0.3, 0.0, 0.0, 0.0], [0.2, 0.0, 0.0, 0.0]])
    assert reach_upper_bound(planar, planar.root_link, "tool") == pytest.approx(0.5)
    assert reach_upper_bound(PANDA, "panda_hand", PANDA.root_link) == math.inf


def test_every_axis_free_answers_the_seed():
    """An orientation constraint freeing all three axes and nothing else: no axis is asked for, so
    the seed is the answer (not a solver call with no tips)."""
    seed = OMX.random_configuration(rng=3)
    free = OrientationConstraint("tool", np.eye(3), (math.pi, math.pi, math.pi))
    result = solve_constrained(OMX, [free], seed, poses={})
    assert bool(result.result.success)
    np.testing.assert_array_equal(result.result.q, seed)


def test_euler_singularity_counts_the_combined_angle_as_yaw_when_it_breaks_the_yaw_tolerance():
    """Pitch π/2 (gimbal lock): roll and yaw merge into one angle (0.6 rad here), reported as
    roll; MoveIt moves it to yaw when it exceeds the yaw tolerance. So a roll tolerance of 0.7 is
    met when the yaw tolerance is 0.7 too, and not when the yaw tolerance is 0.01."""
    for pitch in (math.pi / 2, -math.pi / 2):
        R = Rotation.from_euler("XYZ", [0.0, pitch, 0.6]).as_matrix()
        R[np.abs(R) < 1e-15] = 0.0   # (exactly singular)
        angles, regular = xyz_euler_angles(R)
        assert not regular and abs(angles[0]) == pytest.approx(0.6) and angles[2] == 0.0
        T = np.eye(4)
        T[:3, :3] = R
        assert OrientationConstraint("tool", np.eye(3), (0.7, 2.0, 0.7)).excess(T) == 0.0
        assert OrientationConstraint("tool", np.eye(3), (0.7, 2.0, 0.01)).excess(T) == pytest.approx(0.59)


def test_one_free_axis_without_a_pose_target_solves_near_a_half_turn():
    """The hand's orientation with its z free (desired = reachable turned 3 rad about z, near the
    rotation logarithm's singularity) and its origin in a small sphere, no pose target: solved,
    the approach axis within the band."""
    rng = np.random.default_rng(12)
    for q_goal in PANDA.random_configuration(4, rng):
        T = frame_transform(PANDA, q_goal, PANDA.root_link, "panda_hand")
        R = T[:3, :3] @ exp_so3(np.array([0.0, 0.0, 3.0]))
        constraints = [OrientationConstraint("panda_hand", R, (0.02, 0.02, math.pi), ROTATION_VECTOR),
                       PositionConstraint("panda_hand", (0.0, 0.0, 0.0), (Region("sphere", (0.003,), T),))]
        result = solve_constrained(PANDA, constraints, rng=0, max_iterations=2000)   # (12-18 needed)
        assert bool(result.result.success), [r.describe() for r in result.residuals]
        reached = frame_transform(PANDA, result.result.q, PANDA.root_link, "panda_hand")
        assert np.linalg.norm(reached[:3, 3] - T[:3, 3]) <= 0.003
        z_error = math.acos(min(1.0, float(reached[:3, 2] @ R[:3, 2])))
        assert z_error <= 0.02 * math.sqrt(2) + 1e-9


def test_position_regions_are_a_union():
    """Two regions: one the tool cannot reach (behind and below the base), one it can: solved, the
    point in the second; the first alone: not solved, its residual reported."""
    q_goal = OMX.random_configuration(rng=13)
    T = _tool(OMX, q_goal)
    away = np.eye(4)
    away[:3, 3] = [-0.1, 0.0, -0.2]
    regions = (Region("sphere", (0.005,), away), Region("sphere", (0.005,), T))
    result = solve_constrained(OMX, [PositionConstraint("tool", (0.0, 0.0, 0.0), regions)], timeout=0.5, rng=0)
    assert bool(result.result.success)
    assert np.linalg.norm(_tool(OMX, result.result.q)[:3, 3] - T[:3, 3]) <= 0.005
    alone = solve_constrained(OMX, [PositionConstraint("tool", (0.0, 0.0, 0.0), regions[:1])], timeout=0.1, rng=0)
    assert not bool(alone.result.success)
    assert alone.residuals[0].excess > 0.01 and "m outside" in alone.residuals[0].describe()
