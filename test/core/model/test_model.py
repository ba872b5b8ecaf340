"""RobotModel: topology, coordinate index maps, configurations, name lookups, input checks,
immutability."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import (
    ArgumentError,
    JointType,
    ModelError,
    ModelFields,
    NonFiniteError,
    RobokinError,
    RobotModel,
    ShapeError,
    UnknownJointError,
    UnknownLinkError,
)
from robokin_ros.model import configuration
from robokin_ros.model.urdf import urdf_fields

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
ROBOTS = Path(__file__).resolve().parents[3] / "robokin_ros" / "robots"


def fixture(name: str) -> RobotModel:
    return RobotModel.from_urdf_file(FIXTURES / f"{name}.urdf")


@pytest.fixture(scope="module")
def branched():
    return fixture("branched")


@pytest.fixture(scope="module")
def floating():
    return fixture("floating")


@pytest.fixture(scope="module")
def mimic():
    return fixture("prismatic_continuous_mimic")


# ---------------------------------------------------------------------------- topology
def test_branched_topology_by_hand(branched):
    m = branched
    #   base(0) - trunk(1) -+- left(2) - left_tip(3)
    #                       +- right(4) - right_tip(5)
    assert m.link_names == ("base", "trunk", "left", "left_tip", "right", "right_tip")
    assert m.root_link == "base" and m.frame_names == m.link_names
    assert list(m.link_parents) == [-1, 0, 1, 2, 1, 4]
    assert m.all_joint_names == ("trunk_joint", "left_joint", "left_tip_joint", "right_joint", "right_tip_joint")
    assert list(m.joint_parents) == [0, 1, 2, 1, 4] and list(m.joint_children) == [1, 2, 3, 4, 5]
    assert m.link_children == ((1,), (2, 4), (3,), (), (5,), ())
    assert [list(s) for s in m.link_subtrees] == [[0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5], [2, 3], [3], [4, 5], [5]]
    assert [list(s) for s in m.link_supports] == [[0], [0, 1], [0, 1, 2], [0, 1, 2, 3], [0, 1, 4], [0, 1, 4, 5]]
    assert list(m.link_depths) == [0, 1, 2, 3, 2, 3]
    assert [list(level) for level in m.depth_levels] == [[0], [1], [2, 4], [3, 5]]
    assert m.leaf_links == ("left_tip", "right_tip")
    assert m.support_mask[3, 2] and not m.support_mask[3, 4] and not m.support_mask[2, 3]
    # v coordinates: trunk moves everything but the base; left/right only their own side.
    expected = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 1, 0], [1, 0, 1], [1, 0, 1]], bool)
    np.testing.assert_array_equal(m.velocity_support, expected)
    assert list(m.is_fixed) == [False, False, True, False, True]
    assert list(m.velocity_source_joints) == [0, 1, -1, 3, -1]


def test_parents_come_before_children_in_bundled_robots():
    for path in ROBOTS.glob("*.urdf"):
        m = RobotModel.from_urdf_file(path)
        assert all(m.link_parents[i] < i for i in range(1, m.n_links)), path.name
        assert m.n_joints == m.n_links - 1


def test_create_rejects_bad_trees():
    common = dict(name="x", joint_types=[1], joint_axes=[[0, 0, 1]], joint_origins=[np.eye(4)])
    with pytest.raises(ValueError, match="n - 1 joints"):
        RobotModel.create(ModelFields(link_names=["a", "b", "c"], joint_names=["j"], joint_parents=[0], **common))
    with pytest.raises(ValueError, match="topological order"):
        RobotModel.create(ModelFields(link_names=["a", "b"], joint_names=["j"], joint_parents=[1], **common))
    with pytest.raises(ArgumentError, match="ModelFields"):
        RobotModel.create(dict(link_names=["a", "b"], joint_names=["j"], joint_parents=[0], **common))


# ---------------------------------------------------------------------------- index maps
def test_index_maps_with_floating_joint(floating):
    m = floating
    assert (m.n_q, m.n_v) == (8, 7)
    assert list(m.joint_nq) == [7, 1, 0] and list(m.joint_nv) == [6, 1, 0]
    assert list(m.joint_q_index) == [0, 7, -1] and list(m.joint_v_index) == [0, 6, -1]
    assert m.joint_names == ("floating_joint", "arm_joint")
    assert m.q_names == tuple(f"floating_joint/{s}" for s in ("x", "y", "z", "qx", "qy", "qz", "qw")) + ("arm_joint",)
    assert m.v_names == tuple(f"floating_joint/{s}" for s in ("vx", "vy", "vz", "wx", "wy", "wz")) + ("arm_joint",)
    assert m.quaternion_slices == (slice(3, 7),)


def test_index_maps_with_planar_joint():
    m = fixture("planar_joint")
    assert (m.n_q, m.n_v) == (3, 3)
    assert m.q_names == ("planar_joint/x", "planar_joint/y", "planar_joint/theta") == m.v_names
    assert list(m.joint_q_index) == [0, -1]


def test_mimic_joint_has_no_coordinate(mimic):
    m = mimic
    f = m.joint_index("follower_joint")
    assert m.is_mimic[f] and m.mimic_source[f] == m.joint_index("wheel_joint")
    assert (m.mimic_multiplier[f], m.mimic_offset[f]) == (2.0, 0.1)
    assert m.joint_nq[f] == 0 and m.joint_q_index[f] == -1 and m.joint_v_index[f] == -1
    assert m.joint_names == ("slider_joint", "wheel_joint") and (m.n_q, m.n_v) == (2, 2)
    assert m.velocity_source_joints[f] == m.joint_index("wheel_joint")
    assert list(m.active_joints) == [0, 1]


def test_minimal_model_has_no_coordinates():
    m = fixture("good_minimal")
    assert (m.n_links, m.n_joints, m.n_q, m.n_v) == (1, 0, 0, 0)
    assert m.home_configuration().shape == (0,) and m.random_configuration(3, rng=0).shape == (3, 0)


# ---------------------------------------------------------------------------- configurations
def limited_model():
    """One joint of each kind, with a revolute and a prismatic joint whose range excludes 0."""
    types = [JointType.REVOLUTE, JointType.PRISMATIC, JointType.CONTINUOUS, JointType.FLOATING, JointType.PLANAR,
             JointType.REVOLUTE]
    return RobotModel.create(ModelFields(
        name="limited", link_names=[f"l{i}" for i in range(7)], joint_names=["rev", "pris", "cont", "free", "plane", "neg"],
        joint_parents=[0, 1, 2, 3, 4, 5], joint_types=types, joint_axes=np.tile([0.0, 0.0, 1.0], (6, 1)),
        joint_origins=np.tile(np.eye(4), (6, 1, 1)),
        joint_lower=[0.5, 0.1, -np.inf, -np.inf, -np.inf, -2.0], joint_upper=[1.5, 0.3, np.inf, np.inf, np.inf, -1.0]))


def test_home_configuration_clamps_zero_and_has_identity_quaternion():
    m = limited_model()
    home = m.home_configuration()
    assert m.q_names[3:10] == tuple(f"free/{s}" for s in ("x", "y", "z", "qx", "qy", "qz", "qw"))
    np.testing.assert_array_equal(home, [0.5, 0.1, 0.0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, -1.0])
    assert m.within_limits(home)


def test_home_configuration_of_floating_fixture(floating):
    np.testing.assert_array_equal(floating.home_configuration(), [0, 0, 0, 0, 0, 0, 1, 0])


def test_random_configuration_within_limits():
    m = limited_model()
    q = m.random_configuration(2000, rng=np.random.default_rng(3))
    assert q.shape == (2000, m.n_q) and m.random_configuration(rng=1).shape == (m.n_q,)
    assert m.within_limits(q).all()
    assert (q[:, 0] >= 0.5).all() and (q[:, 0] <= 1.5).all() and (q[:, 13] <= -1.0).all()
    cont, theta = q[:, 2], q[:, 12]
    for angle in (cont, theta):  # continuous / planar angle: [-π, π], and actually spread over it
        assert (np.abs(angle) <= np.pi).all() and angle.min() < -3.0 and angle.max() > 3.0
    np.testing.assert_allclose(np.linalg.norm(q[:, 6:10], axis=1), 1.0, atol=1e-12)
    assert (q[:, 6:10] < 0).any(axis=0).all()  # not a hemisphere-only sampler
    assert (np.abs(q[:, 3:6]) <= 1.0).all() and (np.abs(q[:, 10:12]) <= 1.0).all()


def test_random_configuration_is_deterministic_given_a_seed():
    m = limited_model()
    a, b = m.random_configuration(5, rng=42), m.random_configuration(5, rng=np.random.default_rng(42))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, m.random_configuration(5, rng=43))


def test_clamp():
    m = limited_model()
    q = m.home_configuration()
    q[[0, 1, 13]] = 7.0, -7.0, 0.0
    q[6:10] = 0.0, 0.0, 0.0, 2.0     # not unit
    q[2] = 100.0                     # continuous: unbounded, kept
    out = m.clamp(q)
    assert (out[0], out[1], out[13], out[2]) == (1.5, 0.1, -1.0, 100.0)
    np.testing.assert_array_equal(out[6:10], [0, 0, 0, 1])
    assert q[0] == 7.0  # input untouched
    batch = m.clamp(np.stack([q, q]).reshape(1, 2, -1))
    assert batch.shape == (1, 2, m.n_q) and np.array_equal(batch[0, 1], out)


def test_configuration_functions_take_the_model_first():
    """The free functions of model.configuration (Pinocchio-style) against values worked by hand."""
    m = limited_model()
    home = configuration.home_configuration(m)
    np.testing.assert_array_equal(home, [0.5, 0.1, 0.0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, -1.0])
    q = configuration.random_configuration(m, 300, rng=5)
    assert q.shape == (300, m.n_q) and configuration.within_limits(m, q).all()
    far = q + 10.0
    out = configuration.clamp(m, far)
    expected = np.clip(far, m.q_lower, m.q_upper)
    expected[:, 6:10] /= np.linalg.norm(expected[:, 6:10], axis=1, keepdims=True)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-15)
    assert not configuration.within_limits(m, far).any() and configuration.within_limits(m, far, 11.0).all()
    values = configuration.q_to_dict(m, home)
    assert values["rev"] == 0.5 and values["free/qw"] == 1.0 and len(values) == m.n_q
    np.testing.assert_array_equal(configuration.q_from_dict(m, {**values, "neg": -1.5}), home + np.eye(m.n_q)[13] * -0.5)
    assert configuration.all_joint_values(m, home) == {"rev": 0.5, "pris": 0.1, "cont": 0.0, "neg": -1.0}
    assert configuration.check_q(m, [home.tolist()] * 2).shape == (2, m.n_q)
    with pytest.raises(ShapeError, match=r"base must have shape \(14,\)"):
        configuration.check_q(m, home[:3], "base", single=True)
    with pytest.raises(UnknownJointError, match="unknown joint 'nothing'"):
        configuration.q_from_dict(m, {"nothing": 1.0}, strict=True)
    with pytest.raises(ArgumentError, match="'free' is a floating joint with 7 coordinates"):
        configuration.q_from_dict(m, {"free": 1.0}, strict=True)


def test_a_single_configuration_and_a_batch_name_the_same_overflowing_mimic(mimic):
    """One configuration takes the Python-float mimic check, a batch the array one: same error."""
    m = mimic.replace_joint("follower_joint", "continuous", mimic=("wheel_joint", 1e300, 0.0))
    for q in (np.array([0.0, 1e10]), np.array([[0.0, 1.0], [0.0, 1e10]])):
        with pytest.raises(NonFiniteError, match=r"mimic joint 'follower_joint' = 1e\+300 \* 'wheel_joint' \+ 0"):
            m.check_q(q)
    assert m.check_q(np.array([0.0, 1.0])).shape == (2,)


def test_fields_record_is_frozen_and_replaceable():
    text = (FIXTURES / "branched.urdf").read_text()
    fields = urdf_fields(text)
    assert isinstance(fields, ModelFields)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fields.name = "other"
    renamed = RobotModel.create(dataclasses.replace(fields, name="other"))
    assert renamed.name == "other" and renamed.equals(RobotModel.from_urdf(text))
    with pytest.raises(ModelError, match="joint 'trunk_joint': velocity limit is NaN"):
        RobotModel.create(dataclasses.replace(fields, joint_velocity=np.full(len(fields.joint_names), np.nan)))


def test_within_limits_batch_and_tolerance():
    m = limited_model()
    q = np.stack([m.home_configuration()] * 3)
    q[1, 0] = 1.5 + 1e-6
    q[2, 13] = -2.5
    np.testing.assert_array_equal(m.within_limits(q), [True, False, False])
    np.testing.assert_array_equal(m.within_limits(q, tolerance=1e-5), [True, True, False])


def test_q_from_dict_and_back(mimic, floating):
    q = mimic.q_from_dict({"wheel_joint": 0.7, "follower_joint": 99.0, "unknown": 1.0})
    np.testing.assert_array_equal(q, [0.0, 0.7])  # mimic value ignored, unknown ignored, slider home
    base = np.array([0.3, 0.1])
    np.testing.assert_array_equal(mimic.q_from_dict({"wheel_joint": 0.7}, base=base), [0.3, 0.7])
    assert base[1] == 0.1
    assert mimic.q_to_dict(np.array([0.3, 0.7])) == {"slider_joint": 0.3, "wheel_joint": 0.7}
    qf = floating.q_from_dict({"floating_joint/z": 2.0, "floating_joint/qw": 1.0, "arm_joint": -0.5})
    np.testing.assert_array_equal(qf, [0, 0, 2.0, 0, 0, 0, 1.0, -0.5])
    assert floating.q_to_dict(qf)["floating_joint/z"] == 2.0


def test_q_from_dict_strict_names_unknown_joint(mimic):
    mimic.q_from_dict({"follower_joint": 1.0}, strict=True)  # a known (mimic) joint is not an error
    with pytest.raises(UnknownJointError) as info:
        mimic.q_from_dict({"wheel_jiont": 1.0}, strict=True)
    assert str(info.value).startswith("unknown joint 'wheel_jiont'; did you mean 'wheel_joint'")


def test_q_to_dict_needs_a_single_configuration(mimic):
    with pytest.raises(ShapeError, match=r"q must have shape \(2,\), got \(3, 2\)"):
        mimic.q_to_dict(np.zeros((3, 2)))


def test_all_joint_values_include_mimic_joints(mimic):
    values = mimic.all_joint_values(np.array([0.25, 0.5]))
    assert values == {"slider_joint": 0.25, "wheel_joint": 0.5, "follower_joint": 2.0 * 0.5 + 0.1}


# ---------------------------------------------------------------------------- names and checks
def test_unknown_link_lists_close_matches(branched):
    with pytest.raises(UnknownLinkError) as info:
        branched.link_index("left_tp")
    err = info.value
    assert isinstance(err, KeyError) and isinstance(err, RobokinError)
    assert err.name == "left_tp" and err.kind == "link" and err.close_matches[0] == "left_tip"
    assert str(err).startswith("unknown link 'left_tp'; did you mean 'left_tip'")
    assert branched.frame_index("right") == 4


def test_unknown_name_without_close_match(branched):
    with pytest.raises(UnknownJointError) as info:
        branched.joint_index("xyzzy")
    assert str(info.value) == "unknown joint 'xyzzy'" and info.value.close_matches == []
    with pytest.raises(UnknownLinkError, match="unknown link 3"):
        branched.link_index(3)  # not a name at all


def test_check_q_shape_error_names_expected_and_given(branched):
    for bad in (np.zeros(4), np.zeros((2, 2)), 1.0):
        with pytest.raises(ShapeError) as info:
            branched.check_q(bad)
        err = info.value
        assert isinstance(err, ValueError) and err.expected == "(..., 3)" and err.got == np.shape(bad)
        assert str(err) == f"q must have shape (..., 3), got {np.shape(bad)}"
    with pytest.raises(ShapeError, match="seed must have shape"):
        branched.check_q(np.zeros(2), argument="seed")


def test_check_q_non_finite_names_the_joints(branched, floating):
    q = np.zeros((4, 3))
    q[1, 1] = np.nan
    q[3, 1] = np.inf
    q[2, 2] = -np.inf
    with pytest.raises(NonFiniteError) as info:
        branched.check_q(q)
    assert isinstance(info.value, ValueError) and info.value.indices == [1, 2]
    assert str(info.value) == "q has non-finite entries at ['left_joint', 'right_joint']"
    with pytest.raises(NonFiniteError, match=r"\['floating_joint/qw'\]"):
        floating.check_q([0, 0, 0, 0, 0, 0, np.nan, 0])


@pytest.mark.parametrize("rows", [4, 100])   # (small and large batches: one reduction each, two kinds)
def test_check_q_finds_one_bad_entry_in_a_batch_and_accepts_huge_finite_values(branched, rows):
    q = np.full((rows, 3), 1e200)   # finite, though its sum of squares overflows
    assert branched.check_q(q) is not None
    for bad in (np.nan, np.inf, -np.inf):
        q[rows - 1, 2] = bad
        with pytest.raises(NonFiniteError, match="right_joint"):
            branched.check_q(q)
        with pytest.raises(NonFiniteError):
            branched.check_q(np.asfortranarray(q))   # (not contiguous in C order)
        q[rows - 1, 2] = 0.0


def test_check_q_accepts_lists_and_batches(branched):
    assert branched.check_q([1, 2, 3]).dtype == float
    assert branched.check_q(np.zeros((2, 5, 3), dtype=np.float32)).shape == (2, 5, 3)


# ---------------------------------------------------------------------------- immutability
def test_model_is_immutable(branched):
    with pytest.raises(dataclasses.FrozenInstanceError):
        branched.name = "other"
    for name in ("link_parents", "joint_types", "joint_axes", "joint_origins", "joint_lower", "mimic_source",
                 "link_masses", "link_inertias", "joint_q_index", "joint_v_index", "support_mask", "q_lower",
                 "active_joints", "velocity_support"):
        array = getattr(branched, name)
        assert not array.flags.writeable, name
        with pytest.raises(ValueError):
            array.flat[0] = 1
    for level in branched.depth_levels + branched.link_subtrees:
        assert not level.flags.writeable


def test_repr(branched):
    assert repr(branched) == "RobotModel('branched': 6 links, 5 joints, n_q=3, n_v=3)"
