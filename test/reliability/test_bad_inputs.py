"""Bad input to every public function: a RobokinError subclass naming the problem (never another
exception type, never a silent wrong answer), or the documented result."""

from __future__ import annotations

import glob
import sys
from pathlib import Path

import numpy as np
import pytest

import robokin_ros as rk
from robokin_ros import (
    ArgumentError,
    IKOptionError,
    InvalidTargetError,
    ModelError,
    NonFiniteError,
    RobokinError,
    RobotModel,
    ShapeError,
    UnknownLinkError,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from peers import example_robot_data_dir  # noqa: E402

ROBOTS = Path(__file__).resolve().parents[2] / "robokin_ros" / "robots"
PANDA = RobotModel.from_urdf_file(ROBOTS / "panda.urdf")
Q = PANDA.home_configuration()
TIP = "panda_hand_tcp"
T = rk.frame_transform(PANDA, Q, PANDA.root_link, TIP)
ORIGIN_1E308 = np.array([[1, 0, 0, 1e308], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])

#: (label, call, expected error type, words of the message)
CASES = [
    ("jacobian reference", lambda: rk.jacobian(PANDA, Q, TIP, reference="bogus"), ArgumentError, ["bogus"]),
    ("jacobians reference", lambda: rk.jacobians(PANDA, Q, reference=3), ArgumentError, ["reference"]),
    ("fk of text", lambda: rk.forward_kinematics(PANDA, "abc"), ArgumentError, ["q", "numbers"]),
    ("fk of complex", lambda: rk.forward_kinematics(PANDA, Q + 0j), ArgumentError, ["complex"]),
    ("fk of None", lambda: rk.forward_kinematics(PANDA, None), ArgumentError, ["q", "None"]),
    ("fk NaN single", lambda: rk.forward_kinematics(PANDA, Q * np.nan), NonFiniteError, ["panda_joint1"]),
    ("fk inf batch", lambda: rk.forward_kinematics(PANDA, np.full((3, PANDA.n_q), np.inf)), NonFiniteError, ["q"]),
    ("fk wrong size", lambda: rk.forward_kinematics(PANDA, np.zeros(3)), ShapeError, ["(..., 8)", "(3,)"]),
    ("unknown frame", lambda: rk.frame_transform(PANDA, Q, "panda_link0", "nowhere"), UnknownLinkError, ["nowhere"]),
    ("within_limits text tolerance", lambda: PANDA.within_limits(Q, tolerance="x"), ArgumentError, ["tolerance"]),
    ("within_limits NaN tolerance", lambda: PANDA.within_limits(Q, tolerance=np.nan), ArgumentError, ["tolerance"]),
    ("random_configuration(-1)", lambda: PANDA.random_configuration(-1), ArgumentError, ["n", "-1"]),
    ("random_configuration(2.5)", lambda: PANDA.random_configuration(2.5), ArgumentError, ["n"]),
    ("q_from_dict(None)", lambda: PANDA.q_from_dict(None), ArgumentError, ["mapping"]),
    ("q_from_dict NaN", lambda: PANDA.q_from_dict({"panda_joint1": np.nan}), NonFiniteError, ["panda_joint1"]),
    ("q_from_dict text", lambda: PANDA.q_from_dict({"panda_joint1": "one"}), ArgumentError, ["panda_joint1"]),
    ("all_joint_values of a batch", lambda: PANDA.all_joint_values(np.zeros((3, PANDA.n_q))), ShapeError, ["(8,)"]),
    ("ik tolerance 1e200", lambda: rk.solve_ik(PANDA, T, TIP, position_tolerance=1e200), IKOptionError,
     ["position_tolerance"]),
    ("ik max_iterations inf", lambda: rk.solve_ik(PANDA, T, TIP, max_iterations=float("inf")), IKOptionError,
     ["max_iterations"]),
    ("ik max_iterations NaN", lambda: rk.solve_ik(PANDA, T, TIP, max_iterations=float("nan")), IKOptionError,
     ["max_iterations"]),
    ("ik tips None", lambda: rk.solve_ik(PANDA, T, None), IKOptionError, ["tips"]),
    ("ik timeout NaN", lambda: rk.solve_ik(PANDA, T, TIP, timeout=float("nan")), IKOptionError, ["timeout"]),
    ("ik zero rotation", lambda: rk.solve_ik(PANDA, np.diag([0, 0, 0, 1.0]), TIP), InvalidTargetError, ["det R = 0"]),
    ("ik reflection", lambda: rk.solve_ik(PANDA, np.diag([-1, 1, 1, 1.0]), TIP), InvalidTargetError, ["det R = -1"]),
    ("ik -R", lambda: rk.solve_ik(PANDA, np.diag([-1, -1, -1, 1.0]), TIP), InvalidTargetError, ["det R = -1"]),
    ("ik rank 1", lambda: rk.solve_ik(PANDA, np.block([[np.outer([1, 0, 0], [1, 0, 0]), np.zeros((3, 1))],
                                                       [np.zeros((1, 3)), np.ones((1, 1))]]), TIP),
     InvalidTargetError, ["not rigid"]),
    ("ik bad bottom row", lambda: rk.solve_ik(PANDA, np.vstack([T[:3], [1, 0, 0, 1]]), TIP), InvalidTargetError,
     ["last row"]),
    ("ik batch with one reflection", lambda: rk.solve_ik(PANDA, np.stack([T, np.diag([-1, 1, 1, 1.0])]), TIP),
     InvalidTargetError, ["[(1, 0)]"]),
    ("add_body child None", lambda: PANDA.add_body("panda_link0", "jx", "revolute", None, limits=(-1, 1)),
     ModelError, ["names must be non-empty strings"]),
    ("add_body mimic NaN", lambda: PANDA.add_body("panda_link0", "jx", "revolute", "x", limits=(-1, 1),
                                                  mimic=("panda_joint1", float("nan"), 0)), ModelError,
     ["'jx'", "mimic multiplier"]),
    ("add_body velocity NaN", lambda: PANDA.add_body("panda_link0", "jx", "revolute", "x", limits=(-1, 1),
                                                     velocity=float("nan")), ModelError, ["'jx'", "velocity"]),
    ("two fixed joints at 1e308", lambda: PANDA.add_body("panda_link0", "jx", "fixed", "x", origin=ORIGIN_1E308)
     .add_body("x", "jy", "fixed", "y", origin=ORIGIN_1E308), ModelError, ["'y'", "overflows", "'jy'"]),
    ("DH with 1e308", lambda: RobotModel.from_dh([[1e308, 0, 0, 0]] * 3), ModelError, ["overflows"]),
]


@pytest.mark.parametrize("label, call, error, words", CASES, ids=[c[0] for c in CASES])
def test_bad_input_raises_a_named_robokin_error(label, call, error, words):
    with pytest.raises(RobokinError) as info:
        call()
    assert isinstance(info.value, error), (type(info.value), info.value)
    assert isinstance(info.value, (ValueError, KeyError))
    for word in words:
        assert word in str(info.value), f"{word!r} not in {info.value}"


def test_huge_limits_still_give_finite_random_configurations():
    model = RobotModel.from_urdf('<robot name="r"><link name="a"/><link name="b"/><joint name="j" type="prismatic">'
                                 '<parent link="a"/><child link="b"/><limit lower="-1e308" upper="1e308"/></joint></robot>')
    q = model.random_configuration(1000, rng=0)
    assert np.isfinite(q).all() and (np.abs(q) <= 1e308).all()
    assert (q > 1e306).any() and (q < -1e306).any()   # spread over the range, not collapsed


def iris():
    base = example_robot_data_dir()
    hits = glob.glob(f"{base}/**/iris_simple*.urdf", recursive=True) if base else []
    if not hits:
        pytest.skip("example-robot-data's iris_simple is not installed")
    return RobotModel.from_urdf_file(hits[0])


@pytest.mark.parametrize("name", ["rnea", "crba", "aba", "gravity_torques", "center_of_mass",
                                  "center_of_mass_jacobian", "kinetic_energy", "nonlinear_effects",
                                  "pose_derivatives", "kinematic_hessian", "pose_second_derivatives"])
def test_a_robot_without_movable_joints(name):
    """example-robot-data's iris_simple: every function works and returns empty joint axes."""
    model = iris()
    assert model.n_v == 0
    q, v = model.home_configuration(), np.zeros(0)
    args = {"rnea": (q, v, v), "aba": (q, v, v), "kinetic_energy": (q, v), "nonlinear_effects": (q, v),
            "pose_derivatives": (q, model.link_names[-1]), "kinematic_hessian": (q, model.link_names[-1]),
            "pose_second_derivatives": (q, model.link_names[-1])}.get(name, (q,))
    out = np.asarray(getattr(rk, name)(model, *args))
    assert 0 in out.shape or out.shape in ((), (3,))
    assert np.isfinite(out).all()


def test_massless_direction_gives_the_same_answer_in_every_kernel():
    """A link with its mass on the joint axis and no rotational inertia: ABA divides by zero.
    Generated single, generated batch and generic kernels all return inf (no ZeroDivisionError)."""
    model = RobotModel.from_urdf(
        '<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/>'
        '<inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>'
        '<joint name="j" type="continuous"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/></joint></robot>')
    with np.errstate(divide="ignore", invalid="ignore"):
        single = rk.aba(model, np.zeros(1), np.zeros(1), np.ones(1))
        batch = rk.aba(model, np.zeros((2, 1)), np.zeros((2, 1)), np.ones((2, 1)))
        old = rk.kinematics.use_generated_kernels
        rk.kinematics.use_generated_kernels = False
        try:
            generic = rk.aba(model, np.zeros(1), np.zeros(1), np.ones(1))
        finally:
            rk.kinematics.use_generated_kernels = old
    np.testing.assert_array_equal(single, generic)
    np.testing.assert_array_equal(batch, np.stack([generic, generic]))
    assert np.isinf(generic).all()


def test_jacobians_peak_memory_is_near_its_output():
    import sys as _sys
    import tracemalloc
    _sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from peers import ERD_ROBOTS, erd_urdf
    model = RobotModel.from_urdf_file(erd_urdf(ERD_ROBOTS["talos"]))
    q = model.random_configuration(1500, rng=0)
    rk.jacobians(model, q[:2])   # build the per-model constants first
    tracemalloc.start()
    out = rk.jacobians(model, q)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak <= 1.1 * out.nbytes, f"peak {peak / out.nbytes:.2f}x the output"
    np.testing.assert_allclose(out[7], rk.jacobians(model, q[7]), atol=1e-12)


def test_zero_floating_quaternion_and_nan_point_or_poses_are_refused():
    model = RobotModel.from_urdf((Path(__file__).resolve().parents[1] / "fixtures" / "floating.urdf").read_text())
    q = model.home_configuration()
    s = model.quaternion_slices[0]
    q[s] = 0.0
    with pytest.raises(ArgumentError, match="quaternion .* is zero"):
        rk.forward_kinematics(model, q)
    with pytest.raises(NonFiniteError, match="point"):
        rk.jacobian(PANDA, Q, TIP, point=[np.nan, 0, 0])
    poses = rk.forward_kinematics(PANDA, Q)
    poses[3, 0, 0] = np.nan
    with pytest.raises(NonFiniteError, match="poses.*panda_link3"):
        rk.frame_transform(PANDA, Q, "panda_link0", TIP, poses=poses)
