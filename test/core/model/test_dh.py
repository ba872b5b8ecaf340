"""DH tables -> RobotModel: equal to the hand-written URDFs, textbook DH products, errors."""

from __future__ import annotations

import os

import numpy as np
import pytest

from robokin_ros import ModelError, NonFiniteError, RobotModel, ShapeError, forward_kinematics
from robokin_ros.model import JointType
from robokin_ros.spatial import rpy_to_matrix, transform

ROBOTS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "robokin_ros", "robots")
PI = np.pi

#: ur5e.urdf header, standard DH, rows (a, alpha, d, theta_offset).
UR5E_TABLE = [[0, PI / 2, 0.1625, 0], [-0.425, 0, 0, 0], [-0.3922, 0, 0, 0],
              [0, PI / 2, 0.1333, 0], [0, -PI / 2, 0.0997, 0], [0, 0, 0.0996, 0]]
UR5E_LINKS = ["base_link", "shoulder_link", "upper_arm_link", "forearm_link", "wrist_1_link", "wrist_2_link",
              "wrist_3_link", "tool0"]
#: panda.urdf header, modified DH, rows (a_{i-1}, alpha_{i-1}, d_i, theta_offset); flange Tz(0.107).
PANDA_TABLE = [[0, 0, 0.333, 0], [0, -PI / 2, 0, 0], [0, PI / 2, 0.316, 0], [0.0825, PI / 2, 0, 0],
               [-0.0825, -PI / 2, 0.384, 0], [0, PI / 2, 0, 0], [0.088, PI / 2, 0, 0]]
PANDA_LINKS = [f"panda_link{i}" for i in range(9)]


def textbook_dh(a, alpha, d, theta, convention):
    """The DH matrix written out entry by entry (Spong for standard, Craig for modified)."""
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
    if convention == "standard":
        return np.array([[ct, -st * ca, st * sa, a * ct], [st, ct * ca, -ct * sa, a * st],
                         [0, sa, ca, d], [0, 0, 0, 1.0]])
    return np.array([[ct, -st, 0, a], [st * ca, ct * ca, -sa, -sa * d],
                     [st * sa, ct * sa, ca, ca * d], [0, 0, 0, 1.0]])


def pose(rpy, xyz):
    return transform(rpy_to_matrix(np.asarray(rpy, float)), np.asarray(xyz, float))


def test_ur5e_from_standard_dh_equals_the_urdf():
    urdf = RobotModel.from_urdf_file(os.path.join(ROBOTS, "ur5e.urdf"))
    limits = np.c_[urdf.joint_lower[:6], urdf.joint_upper[:6]]
    dh = RobotModel.from_dh(UR5E_TABLE, "standard", limits=limits, link_names=UR5E_LINKS,
                            joint_names=urdf.joint_names, name="ur5e")
    q = urdf.random_configuration(50, rng=0)
    index = [urdf.link_index(n) for n in UR5E_LINKS]
    np.testing.assert_allclose(forward_kinematics(dh, q), forward_kinematics(urdf, q)[:, index], atol=1e-12)
    np.testing.assert_array_equal(dh.joint_lower, np.append(limits[:, 0], -np.inf))
    assert dh.joint_names == urdf.joint_names


def test_panda_from_modified_dh_equals_the_urdf():
    urdf = RobotModel.from_urdf_file(os.path.join(ROBOTS, "panda.urdf"))
    limits = np.c_[urdf.joint_lower[:7], urdf.joint_upper[:7]]
    dh = RobotModel.from_dh(PANDA_TABLE, "modified", limits=limits, tool=pose([0, 0, 0], [0, 0, 0.107]),
                       link_names=PANDA_LINKS, joint_names=urdf.joint_names[:7])
    q = urdf.random_configuration(50, rng=1)
    index = [urdf.link_index(n) for n in PANDA_LINKS]
    np.testing.assert_allclose(forward_kinematics(dh, q[:, :7]), forward_kinematics(urdf, q)[:, index], atol=1e-12)


@pytest.mark.parametrize("convention", ["standard", "modified"])
def test_tool_pose_is_the_product_of_textbook_dh_matrices(convention):
    """Mixed revolute / prismatic rows, theta offsets, a base and a tool offset."""
    rng = np.random.default_rng(2)
    table = np.c_[rng.uniform(-0.5, 0.5, 5), rng.uniform(-PI, PI, 5),
                  rng.uniform(-0.5, 0.5, 5), rng.uniform(-PI, PI, 5)]
    types = ["revolute", "prismatic", "revolute", "revolute", "prismatic"]
    limits = [(-3, 3), (-0.2, 0.4), (-3, 3), (-np.inf, np.inf), (0, 0.1)]
    base, tool = pose([0.1, -0.2, 0.3], [0.5, 0, 0.2]), pose([0.3, 0.2, -0.1], [0, 0.05, 0.1])
    model = RobotModel.from_dh(table, convention, joint_types=types, limits=limits, base=base, tool=tool)
    assert [JointType(t) for t in model.joint_types] == [JointType.REVOLUTE, JointType.PRISMATIC, JointType.REVOLUTE,
                                                          JointType.CONTINUOUS, JointType.PRISMATIC, JointType.FIXED]
    for q in model.random_configuration(20, rng=3):
        T = base.copy()
        for (a, alpha, d, theta), t, qi in zip(table, types, q):
            T = T @ (textbook_dh(a, alpha, d, theta + qi, convention) if t == "revolute"
                     else textbook_dh(a, alpha, d + qi, theta, convention))
        np.testing.assert_allclose(forward_kinematics(model, q)[-1], T @ tool, atol=1e-12)


def test_default_names_types_and_limits():
    model = RobotModel.from_dh(UR5E_TABLE[:2])
    assert model.link_names == ("base_link", "link1", "link2", "tool")
    assert model.all_joint_names == ("joint1", "joint2", "tool_joint")
    assert [JointType(t) for t in model.joint_types] == [JointType.CONTINUOUS, JointType.CONTINUOUS, JointType.FIXED]
    assert model.name == "dh_robot" and model.n_q == 2


def test_round_trip_through_urdf_gives_an_equal_model():
    model = RobotModel.from_dh(PANDA_TABLE, "modified", limits=[(-2, 2)] * 7, tool=pose([0, 0, 1], [0, 0, 0.1]))
    again = RobotModel.from_urdf(model.to_urdf())
    q = model.random_configuration(10, rng=4)
    np.testing.assert_allclose(forward_kinematics(again, q), forward_kinematics(model, q), atol=1e-12)
    assert again.equals(model)


@pytest.mark.parametrize("table, message", [
    ([0.1, 0.2, 0.3, 0.4],
     r"table must have shape \(n, 4\) with rows \(a, alpha, d, theta_offset\), n >= 1, got \(4,\)"),
    ([[0.1, 0.2, 0.3]], r"got \(1, 3\)"),
    (np.zeros((0, 4)), r"got \(0, 4\)"),
])
def test_bad_table_shape(table, message):
    with pytest.raises(ShapeError, match=message):
        RobotModel.from_dh(table)


def test_non_finite_table_names_row_and_column():
    table = np.zeros((3, 4))
    table[1, 2] = np.nan
    with pytest.raises(NonFiniteError, match=r"table has non-finite entries at \['row 1 d'\]"):
        RobotModel.from_dh(table)


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(convention="craig"), ModelError, "unknown DH convention 'craig'; expected one of standard, modified"),
    (dict(joint_types=["revolute"]), ModelError, "joint_types must have 2 entries"),
    (dict(joint_types=["revolute", "helical"]), ModelError, r"unknown DH joint types \['helical'\]"),
    (dict(joint_types=["revolute", "prismatic"]), ModelError, r"prismatic joints \['joint2'\] need limits"),
    (dict(limits=[(0, 1)]), ShapeError, r"limits must have shape \(2, 2\), got \(1, 2\)"),
    (dict(limits=[(0, 1), (2, 1)]), ModelError, "joint 'joint2' has lower limit 2 > upper limit 1"),
    (dict(limits=[(0, 1), (0, np.nan)]), NonFiniteError, r"limits has non-finite entries at \[1\]"),
    (dict(joint_types=["revolute", "prismatic"], limits=[(0, 1), (-np.inf, np.inf)]), ModelError,
     "joint 'joint2' has non-finite limits"),
    (dict(tool=np.eye(3)), ShapeError, r"tool must have shape \(4, 4\), got \(3, 3\)"),
    (dict(base=2 * np.eye(4)), ModelError, "base is not a rigid transform"),
    (dict(link_names=["a", "b", "c"]), ModelError, "link_names must have 4 names, got 3"),
    (dict(link_names=["a", "b", "b", "c"]), ModelError, r"link_names has duplicate names \['b'\]"),
    (dict(joint_names=["j", "tool_joint"]), ModelError, "clashes with the tool joint name 'tool_joint'"),
])
def test_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        RobotModel.from_dh(UR5E_TABLE[:2], **kwargs)
