"""Builder operations: each returns a new model whose kinematics follow from the old one by hand,
which round-trips through URDF to an equal model, and whose invalid requests raise named errors."""

from __future__ import annotations

import os

import numpy as np
import pytest

from robokin_ros import (
    ModelError,
    NonFiniteError,
    RobotModel,
    ShapeError,
    UnknownJointError,
    UnknownLinkError,
    forward_kinematics,
)
from robokin_ros.model import JointType
from robokin_ros.model.builder import (
    JointLimits,
    add_body,
    remove_subtree,
    rename_base,
    replace_joint,
    set_fixed_transform,
)
from robokin_ros.spatial import rotation_about_axis, rpy_to_matrix, transform

HERE = os.path.dirname(__file__)
ROBOTS = os.path.join(HERE, "..", "..", "..", "robokin_ros", "robots")
FIXTURES = os.path.join(HERE, "..", "..", "fixtures")


def load(path: str) -> RobotModel:
    return RobotModel.from_urdf_file(path)


@pytest.fixture(scope="module")
def panda() -> RobotModel:
    return load(os.path.join(ROBOTS, "panda.urdf"))


@pytest.fixture(scope="module")
def twin() -> RobotModel:
    return load(os.path.join(ROBOTS, "twin_arm_torso.urdf"))


def pose(rpy, xyz) -> np.ndarray:
    return transform(rpy_to_matrix(np.asarray(rpy, float)), np.asarray(xyz, float))


def shared_q(old: RobotModel, new: RobotModel, rng):
    """Random configurations of ``new`` and the same joint values as configurations of ``old``."""
    q_new = new.random_configuration(5, rng=rng)
    q_old = np.array([old.q_from_dict(new.q_to_dict(q)) for q in q_new])
    return q_old, q_new


def world_poses(model: RobotModel, q) -> dict[str, np.ndarray]:
    T = forward_kinematics(model, q)
    return {n: T[..., i, :, :] for i, n in enumerate(model.link_names)}


def test_add_body_places_the_new_link_and_keeps_the_others(twin):
    origin = pose([0.2, -0.1, 0.4], [0.05, 0.1, 0.3])
    axis = np.array([1.0, 2.0, 2.0])
    new = add_body(twin, "torso_link", "sensor_joint", "revolute", "sensor_link", origin=origin, axis=axis,
                   limits=JointLimits(-1, 1, velocity=2.0, effort=3.0),
                   inertial=(0.5, [0.01, 0, 0.02], np.diag([1e-3, 2e-3, 3e-3])))
    assert new.n_links == twin.n_links + 1 and new.n_q == twin.n_q + 1
    assert "sensor_joint" in new.joint_names
    q_old, q_new = shared_q(twin, new, 0)
    before, after = world_poses(twin, q_old), world_poses(new, q_new)
    for name in twin.link_names:
        np.testing.assert_allclose(after[name], before[name], atol=1e-12)
    value = q_new[:, new.q_names.index("sensor_joint")]
    M = transform(rotation_about_axis(axis / 3.0, value))
    np.testing.assert_allclose(after["sensor_link"], before["torso_link"] @ origin @ M, atol=1e-12)
    i = new.link_index("sensor_link")
    assert new.link_masses[i] == 0.5 and new.link_has_inertial[i]


def test_add_body_with_mimic_of_a_mimic_resolves_the_chain(panda):
    new = add_body(panda, "panda_hand", "third_finger_joint", "prismatic", "third_finger", axis=(1, 0, 0),
                   limits=JointLimits(0, 1, velocity=0.2, effort=20), mimic=("panda_finger_joint2", 3.0, 0.01))
    j = new.joint_index("third_finger_joint")
    assert new.all_joint_names[new.mimic_source[j]] == "panda_finger_joint1"
    assert new.mimic_multiplier[j] == 3.0 and new.mimic_offset[j] == 0.01
    assert new.n_q == panda.n_q
    q = new.random_configuration(rng=1)
    T = world_poses(new, q)
    expected = T["panda_hand"] @ transform(p=[3.0 * q[-1] + 0.01, 0, 0])
    np.testing.assert_allclose(T["third_finger"], expected, atol=1e-12)


def test_add_fixed_body_under_a_leaf(panda):
    new = add_body(panda, "panda_hand_tcp", "camera_joint", "fixed", "camera", origin=pose([0, 0, 1], [0, 0, 0.02]),
                   mesh="package://x/camera.stl")
    q = new.random_configuration(rng=2)
    T = world_poses(new, q)
    np.testing.assert_allclose(T["camera"], T["panda_hand_tcp"] @ pose([0, 0, 1], [0, 0, 0.02]), atol=1e-12)
    assert new.link_meshes[new.link_index("camera")] == "package://x/camera.stl"


def test_remove_subtree_drops_descendants_and_coordinates(twin):
    new = remove_subtree(twin, "left_upper_arm_roll_link")
    gone = [n for n in twin.link_names if n not in new.link_names]
    assert all(n.startswith("left_") for n in gone) and len(gone) >= 5
    assert not any(n.startswith("left_upper_arm_roll") or n.startswith("left_elbow") for n in new.joint_names)
    q_old, q_new = shared_q(twin, new, 3)
    before, after = world_poses(twin, q_old), world_poses(new, q_new)
    for name in new.link_names:
        np.testing.assert_allclose(after[name], before[name], atol=1e-12)


def test_replace_joint_changes_the_motion_between_the_same_links():
    ur5e = load(os.path.join(ROBOTS, "ur5e.urdf"))
    new = replace_joint(ur5e, "elbow_joint", "prismatic", axis=(1, 0, 0),
                        limits=JointLimits(-0.1, 0.2, velocity=1, effort=1))
    assert JointType(new.joint_types[new.joint_index("elbow_joint")]) == JointType.PRISMATIC
    q = new.random_configuration(4, rng=4)
    T = world_poses(new, q)
    j = ur5e.joint_index("elbow_joint")
    s = q[:, new.q_names.index("elbow_joint")]
    shift = np.zeros((4, 4, 4))
    shift[:] = np.eye(4)
    shift[:, 0, 3] = s
    np.testing.assert_allclose(T["forearm_link"], T["upper_arm_link"] @ ur5e.joint_origins[j] @ shift, atol=1e-12)
    fixed = replace_joint(ur5e, "elbow_joint", "fixed")
    assert fixed.n_q == 5
    q_old, q_new = shared_q(ur5e, fixed, 5)
    q_old[:, ur5e.q_names.index("elbow_joint")] = 0.0
    np.testing.assert_allclose(forward_kinematics(fixed, q_new), forward_kinematics(ur5e, q_old), atol=1e-12)


def test_replace_a_mimic_source_by_a_mimic_rechains_the_followers(panda):
    new = replace_joint(panda, "panda_finger_joint1", "prismatic", axis=(0, 1, 0),
                        limits=JointLimits(0, 0.04, velocity=0.2, effort=20), mimic=("panda_joint7", 0.5, 0.02))
    follower = new.joint_index("panda_finger_joint2")
    assert new.all_joint_names[new.mimic_source[follower]] == "panda_joint7"
    assert new.mimic_multiplier[follower] == 0.5 and new.mimic_offset[follower] == 0.02
    assert new.n_q == 7


def test_set_parent_to_joint_moves_the_subtree(panda):
    P = pose([0.1, 0.2, 0.3], [0.01, 0.02, 0.4])
    new = set_fixed_transform(panda, "panda_joint4", parent_to_joint=P)
    q = panda.random_configuration(3, rng=6)
    T_old, T_new = world_poses(panda, q), world_poses(new, q)
    k = panda.joint_index("panda_joint4")
    change = T_new["panda_link3"] @ P @ np.linalg.inv(T_old["panda_link3"] @ panda.joint_origins[k])
    for name in panda.link_names:
        expected = change @ T_old[name] if panda.support_mask[panda.link_index(name), k + 1] else T_old[name]
        np.testing.assert_allclose(T_new[name], expected, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("joint, X", [
    ("panda_joint4", pose([0.3, -0.2, 0.5], [0, 0, 0.07])),            # revolute, translation along z
    ("panda_finger_joint1", pose([0.3, -0.2, 0.5], [0.01, 0.02, 0.03])),  # prismatic, any translation
    ("panda_hand_joint", pose([0.3, -0.2, 0.5], [0.01, 0.02, 0.03])),     # fixed, any translation
])
def test_set_joint_to_child_moves_only_the_child_frame(panda, joint, X):
    new = set_fixed_transform(panda, joint, joint_to_child=X)
    q = panda.random_configuration(3, rng=7)
    T_old, T_new = world_poses(panda, q), world_poses(new, q)
    child = panda.link_names[panda.joint_index(joint) + 1]
    for name in panda.link_names:
        expected = T_old[name] @ X if name == child else T_old[name]
        np.testing.assert_allclose(T_new[name], expected, atol=1e-12, err_msg=name)
    i_old, i_new = panda.link_index(child), new.link_index(child)
    if panda.link_has_inertial[i_old]:  # the body stays: COM and inertia in world axes unchanged
        R_old, R_new = T_old[child][..., :3, :3], T_new[child][..., :3, :3]
        com_old = T_old[child][..., :3, :3] @ panda.link_coms[i_old] + T_old[child][..., :3, 3]
        com_new = T_new[child][..., :3, :3] @ new.link_coms[i_new] + T_new[child][..., :3, 3]
        np.testing.assert_allclose(com_new, com_old, atol=1e-12)
        np.testing.assert_allclose(R_new @ new.link_inertias[i_new] @ np.swapaxes(R_new, -1, -2),
                                   R_old @ panda.link_inertias[i_old] @ np.swapaxes(R_old, -1, -2), atol=1e-12)


def test_rename_base(panda):
    new = rename_base(panda, "world")
    assert new.root_link == "world" and new.link_names[1:] == panda.link_names[1:]
    q = panda.random_configuration(2, rng=8)
    np.testing.assert_array_equal(forward_kinematics(new, q), forward_kinematics(panda, q))
    with pytest.raises(ModelError, match="link 'panda_link3' already exists"):
        rename_base(panda, "panda_link3")


def test_operations_return_new_models_and_leave_the_input_alone(panda):
    before = panda.to_urdf()
    add_body(panda, "panda_link0", "j", "continuous", "l")
    remove_subtree(panda, "panda_hand")
    rename_base(panda, "world")
    assert panda.to_urdf() == before


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(parent="nowhere"), UnknownLinkError, "unknown link 'nowhere'"),
    (dict(child_name="panda_hand"), ModelError, "link 'panda_hand' already exists"),
    (dict(joint_name="panda_joint1"), ModelError, "joint 'panda_joint1' already exists"),
    (dict(joint_type="ball"), ModelError, "unknown joint type 'ball'; expected one of fixed, revolute"),
    (dict(limits=None), ModelError, "joint 'new_joint' of type revolute needs limits=\\(lower, upper\\)"),
    (dict(limits=(1, 0)), ModelError, r"joint 'new_joint' has invalid limits \(1, 0\)"),
    (dict(joint_type="continuous"), ModelError, "joint 'new_joint' of type continuous takes no position limits"),
    (dict(joint_type="continuous", limits=JointLimits(upper=1.0, velocity=2.0)), ModelError,
     "joint 'new_joint' of type continuous takes no position limits"),
    (dict(limits=JointLimits(-1.0, velocity=2.0)), ModelError, r"needs limits=\(lower, upper\)"),
    (dict(limits=(-1, 1, 2)), ModelError, r"joint 'new_joint': limits must be \(lower, upper\) or a JointLimits"),
    (dict(axis=(0, 0, 0)), ModelError, "joint 'new_joint' has a zero axis"),
    (dict(axis=(0, 1)), ShapeError, r"axis must have shape \(3,\), got \(2,\)"),
    (dict(axis=(0, np.inf, 1)), NonFiniteError, r"axis has non-finite entries at \[1\]"),
    (dict(origin=np.eye(3)), ShapeError, r"origin must have shape \(4, 4\), got \(3, 3\)"),
    (dict(origin=np.diag([1, 1, -1, 1.0])), ModelError, "origin is not a rigid transform"),
    (dict(mimic="nothing"), UnknownJointError, "unknown joint 'nothing'"),
    (dict(mimic="new_joint"), ModelError, "mimic joints form a cycle through 'new_joint'"),
    (dict(mimic="panda_joint1", joint_type="planar", limits=None), ModelError,
     "joint 'new_joint' of type planar cannot mimic"),
    (dict(inertial=(-1.0, np.zeros(3), np.eye(3))), ModelError, "inertial must have mass >= 0"),
    (dict(inertial=(1.0, np.zeros(2), np.eye(3))), ShapeError, r"inertial com must have shape \(3,\)"),
])
def test_add_body_errors(panda, kwargs, error, message):
    args = dict(parent="panda_hand", joint_name="new_joint", joint_type="revolute", child_name="new_link",
                limits=(-1, 1))
    args.update(kwargs)
    with pytest.raises(error, match=message):
        add_body(panda, args.pop("parent"), args.pop("joint_name"), args.pop("joint_type"), args.pop("child_name"),
                 **args)


def test_mimic_of_a_floating_joint_is_refused():
    floating = load(os.path.join(FIXTURES, "floating.urdf"))
    with pytest.raises(ModelError, match="joint 'j' mimics 'floating_joint' of type floating"):
        add_body(floating, "tip", "j", "continuous", "l", mimic="floating_joint")


def test_remove_subtree_errors(panda):
    with pytest.raises(ModelError, match="cannot remove the root link 'panda_link0'"):
        remove_subtree(panda, "panda_link0")
    with pytest.raises(ModelError, match=r"joints \['panda_finger_joint2'\] mimic joints that would be removed "
                                         "with 'panda_leftfinger'"):
        remove_subtree(panda, "panda_leftfinger")
    with pytest.raises(UnknownLinkError, match="unknown link 'panda_lnk3'; did you mean 'panda_link3'"):
        remove_subtree(panda, "panda_lnk3")


def test_replace_joint_errors(panda):
    with pytest.raises(UnknownJointError, match="unknown joint 'panda_jont1'"):
        replace_joint(panda, "panda_jont1", "fixed")
    with pytest.raises(ModelError, match="joint 'panda_finger_joint2' mimics 'panda_finger_joint1' of type fixed"):
        replace_joint(panda, "panda_finger_joint1", "fixed")


@pytest.mark.parametrize("joint, kwargs, error, message", [
    ("panda_joint4", dict(joint_to_child=transform(p=[0.1, 0, 0])), ModelError,
     "joint_to_child would move the rotation axis of joint 'panda_joint4' by 0.1 m"),
    ("panda_joint4", dict(parent_to_joint=np.eye(3)), ShapeError, r"parent_to_joint must have shape \(4, 4\)"),
    ("panda_joint4", dict(joint_to_child=np.full((4, 4), np.nan)), NonFiniteError, "joint_to_child has non-finite"),
    ("panda_jint4", dict(parent_to_joint=np.eye(4)), UnknownJointError, "unknown joint 'panda_jint4'"),
])
def test_set_fixed_transform_errors(panda, joint, kwargs, error, message):
    with pytest.raises(error, match=message):
        set_fixed_transform(panda, joint, **kwargs)


@pytest.mark.parametrize("fixture, joint", [("floating.urdf", "floating_joint"), ("planar_joint.urdf", "planar_joint")])
def test_set_joint_to_child_refuses_multi_dof_joints(fixture, joint):
    model = load(os.path.join(FIXTURES, fixture))
    with pytest.raises(ModelError, match=f"joint '{joint}' is (floating|planar): moving its child frame would change"):
        set_fixed_transform(model, joint, joint_to_child=transform(p=[0, 0, 0.1]))


#: Every operation, on robots with inertials, mimic joints and branches; each result must round-trip.
OPERATIONS = {
    "add_revolute": lambda m: add_body(m, "panda_link3", "extra_joint", "revolute", "extra",
                                       origin=pose([1, 0, 0], [0, 0.1, 0]), axis=(0, 1, 1),
                                       limits=JointLimits(-1, 1, velocity=1, effort=2),
                                       inertial=(0.3, [0.01, 0, 0], np.diag([1e-3, 1e-3, 2e-3]))),
    "add_mimic": lambda m: add_body(m, "panda_hand", "extra_joint", "prismatic", "extra",
                                    limits=JointLimits(0, 1, velocity=1, effort=2), mimic=("panda_finger_joint2", 2.0, 0.1)),
    "add_fixed_with_mesh": lambda m: add_body(m, "panda_link0", "extra_joint", "fixed", "extra",
                                              mesh="package://p/m.stl"),
    "remove_subtree": lambda m: remove_subtree(m, "panda_link5"),
    "replace_joint": lambda m: replace_joint(m, "panda_joint2", "continuous", axis=(1, 0, 0),
                                             limits=JointLimits(velocity=1, effort=2)),
    "set_parent_to_joint": lambda m: set_fixed_transform(m, "panda_joint6",
                                                         parent_to_joint=pose([0, 1, 0], [0, 0, 0.1])),
    "set_joint_to_child": lambda m: set_fixed_transform(m, "panda_joint6",
                                                        joint_to_child=pose([0, 0, 1], [0, 0, 0.1])),
    "rename_base": lambda m: rename_base(m, "world"),
}


def test_joint_limits_record_sets_every_limit_and_round_trips(panda):
    limits = JointLimits(-0.5, 0.25, velocity=2.0, effort=3.0, acceleration=4.0, deceleration=5.0, jerk=6.0)
    new = add_body(panda, "panda_hand", "extra_joint", "prismatic", "extra", axis=(1, 0, 0), limits=limits)
    j = new.joint_index("extra_joint")
    got = [float(values[j]) for values in (new.joint_lower, new.joint_upper, new.joint_velocity, new.joint_effort,
                                           new.joint_acceleration, new.joint_deceleration, new.joint_jerk)]
    assert got == [-0.5, 0.25, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert RobotModel.from_urdf(new.to_urdf()).equals(new)
    plain = add_body(panda, "panda_hand", "extra_joint", "prismatic", "extra", axis=(1, 0, 0), limits=(-0.5, 0.25))
    k = plain.joint_index("extra_joint")
    assert (plain.joint_lower[k], plain.joint_upper[k]) == (-0.5, 0.25)
    assert np.isinf([plain.joint_velocity[k], plain.joint_effort[k], plain.joint_jerk[k]]).all()
    spin = replace_joint(panda, "panda_joint1", "continuous", limits=JointLimits(velocity=1.5))
    i = spin.joint_index("panda_joint1")
    assert spin.joint_velocity[i] == 1.5 and np.isinf(spin.joint_effort[i])
    assert (spin.joint_lower[i], spin.joint_upper[i]) == (-np.inf, np.inf)


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_results_round_trip_through_urdf(panda, operation):
    model = OPERATIONS[operation](panda)
    again = RobotModel.from_urdf(model.to_urdf())
    assert again.equals(model)
