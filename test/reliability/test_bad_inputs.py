"""Bad input to every public function: a RobokinError subclass naming the problem (never another
exception type, never a silent wrong answer), or the documented result."""

from __future__ import annotations

import dataclasses
import glob
import sys
import warnings
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
FLOATING_BASE = RobotModel.from_urdf('<robot name="f"><link name="w"/><link name="b"/><joint name="base" type="floating">'
                                     '<parent link="w"/><child link="b"/></joint></robot>')
PLANAR = RobotModel.from_urdf('<robot name="p"><link name="w"/><link name="b"/><joint name="slide" type="planar">'
                              '<parent link="w"/><child link="b"/><axis xyz="0 0 1"/></joint></robot>')
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
    ("add_body velocity NaN", lambda: PANDA.add_body("panda_link0", "jx", "revolute", "x",
                                                     limits=rk.JointLimits(-1, 1, velocity=float("nan"))),
     ModelError, ["'jx'", "velocity"]),
    ("two fixed joints at 1e308", lambda: PANDA.add_body("panda_link0", "jx", "fixed", "x", origin=ORIGIN_1E308)
     .add_body("x", "jy", "fixed", "y", origin=ORIGIN_1E308), ModelError, ["'y'", "overflows", "'jy'"]),
    ("DH with 1e308", lambda: RobotModel.from_dh([[1e308, 0, 0, 0]] * 3), ModelError, ["overflows"]),
    # issue 33 item 11: typing gaps that escaped as TypeError / ValueError or were accepted
    ("jacobian frame list", lambda: rk.jacobian(PANDA, Q, ["x"]), ArgumentError, ["frame", "list"]),
    ("jacobian frame list after a str", lambda: (rk.jacobian(PANDA, Q, TIP), rk.jacobian(PANDA, Q, [TIP])),
     ArgumentError, ["frame", "str"]),
    ("add_body limits of str", lambda: PANDA.add_body("panda_link0", "jx", "revolute", "x", limits=("a", 1)),
     ModelError, ["'jx'", "lower", "'a'"]),
    ("add_body effort -5", lambda: PANDA.add_body("panda_link0", "jx", "revolute", "x",
                                                  limits=rk.JointLimits(-1, 1, effort=-5)),
     ModelError, ["'jx'", "effort", ">= 0"]),
    ("add_body velocity str", lambda: PANDA.add_body("panda_link0", "jx", "revolute", "x",
                                                     limits=rk.JointLimits(-1, 1, velocity="fast")),
     ModelError, ["'jx'", "velocity", "'fast'"]),
    ("add_body mimic multiplier str", lambda: PANDA.add_body("panda_link0", "jx", "revolute", "x", limits=(-1, 1),
                                                             mimic=("panda_joint1", "twice")),
     ModelError, ["'jx'", "multiplier", "'twice'"]),
    ("add_body inertial of two", lambda: PANDA.add_body("panda_link0", "jx", "fixed", "x", inertial=(1.0, [0, 0, 0])),
     ModelError, ["inertial"]),
    ("add_body inertial mass str", lambda: PANDA.add_body("panda_link0", "jx", "fixed", "x",
                                                          inertial=("heavy", [0, 0, 0], np.eye(3))),
     ModelError, ["mass", "'heavy'"]),
    ("q_from_dict NaN under a floating joint's name", lambda: FLOATING_BASE.q_from_dict({"base": float("nan")}),
     NonFiniteError, ["base"]),
    ("q_from_dict str under a floating joint's name", lambda: FLOATING_BASE.q_from_dict({"base": "abc"}),
     ArgumentError, ["'base'", "not a number"]),
    ("q_from_dict None under a planar joint's name", lambda: PLANAR.q_from_dict({"slide": None}),
     ArgumentError, ["'slide'", "not a number"]),
    ("from_urdf of a file name", lambda: RobotModel.from_urdf(str(ROBOTS / "panda.urdf")), rk.URDFError,
     ["from_urdf_file", "panda.urdf"]),
    ("from_urdf of a Path", lambda: RobotModel.from_urdf(ROBOTS / "panda.urdf"), rk.URDFError, ["from_urdf_file"]),
    ("URDF robot name with a control character",
     lambda: RobotModel.from_urdf('<robot name="a&#9;b">\n<link name="l"/></robot>'),
     rk.URDFError, ["line 1", "robot name"]),
    ("URDF link name with a control character",
     lambda: RobotModel.from_urdf('<robot name="r">\n<link name="a&#10;b"/></robot>'),
     rk.URDFError, ["line 2", "link name"]),
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
        with rk.kernels.use("generic"):
            generic = rk.aba(model, np.zeros(1), np.zeros(1), np.ones(1))
    np.testing.assert_array_equal(single, generic)
    np.testing.assert_array_equal(batch, np.stack([generic, generic]))
    assert np.isinf(generic).all()


@pytest.mark.slow   # 1,500 Jacobians of Talos under tracemalloc
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


# ---------------------------------------------------------------------------- every function × argument × bad kind
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MODELS = {"panda": PANDA,
          "floating": RobotModel.from_urdf((FIXTURES / "floating.urdf").read_text()),
          "mimic": RobotModel.from_urdf((FIXTURES / "prismatic_continuous_mimic.urdf").read_text()),
          "planar": RobotModel.from_urdf((FIXTURES / "planar_joint.urdf").read_text())}
GRAVITY = np.array([0.0, 0.0, -9.81])


def public_calls(model: RobotModel) -> dict:
    """name -> (call taking keyword arguments, {argument: a good value}, arguments that may be None)."""
    q, v, tip = model.home_configuration(), np.zeros(model.n_v), model.link_names[-1]
    T = rk.frame_transform(model, q, model.root_link, tip)
    qv, qvg = {"q": q, "v": v}, {"q": q, "v": v, "gravity": GRAVITY}
    return {
        "forward_kinematics": (lambda q: rk.forward_kinematics(model, q), {"q": q}, ()),
        "forward_kinematics 3x4": (lambda q: rk.forward_kinematics(model, q, layout="3x4"), {"q": q}, ()),
        "link_positions": (lambda q: rk.link_positions(model, q), {"q": q}, ()),
        "joint_poses": (lambda q: rk.joint_poses(model, q), {"q": q}, ()),
        "frame_transform": (lambda q: rk.frame_transform(model, q, model.root_link, tip), {"q": q}, ()),
        "jacobian": (lambda q, point: rk.jacobian(model, q, tip, point=point), {"q": q, "point": np.ones(3)},
                     ("point",)),
        "frame_pose_and_jacobian": (lambda q, point: rk.frame_pose_and_jacobian(model, q, tip, point=point),
                                    {"q": q, "point": np.ones(3)}, ("point",)),
        "jacobians": (lambda q: rk.jacobians(model, q), {"q": q}, ()),
        "kinematic_hessian": (lambda q: rk.kinematic_hessian(model, q, tip), {"q": q}, ()),
        "pose_derivatives": (lambda q: rk.pose_derivatives(model, q, tip), {"q": q}, ()),
        "pose_second_derivatives": (lambda q: rk.pose_second_derivatives(model, q, tip), {"q": q}, ()),
        "integrate": (lambda q, v: rk.integrate(model, q, v), qv, ()),
        "rnea": (lambda q, v, a, gravity: rk.rnea(model, q, v, a, gravity=gravity), {**qvg, "a": v}, ()),
        "aba": (lambda q, v, tau, gravity: rk.aba(model, q, v, tau, gravity=gravity), {**qvg, "tau": v}, ()),
        "crba": (lambda q: rk.crba(model, q), {"q": q}, ()),
        "gravity_torques": (lambda q, gravity: rk.gravity_torques(model, q, gravity=gravity),
                            {"q": q, "gravity": GRAVITY}, ()),
        "nonlinear_effects": (lambda q, v, gravity: rk.nonlinear_effects(model, q, v, gravity=gravity), qvg, ()),
        "coriolis_torques": (lambda q, v: rk.coriolis_torques(model, q, v), qv, ()),
        "center_of_mass": (lambda q: rk.center_of_mass(model, q), {"q": q}, ()),
        "center_of_mass_jacobian": (lambda q: rk.center_of_mass_jacobian(model, q), {"q": q}, ()),
        "kinetic_energy": (lambda q, v: rk.kinetic_energy(model, q, v), qv, ()),
        "clamp": (lambda q: model.clamp(q), {"q": q}, ()),
        "within_limits": (lambda q: model.within_limits(q), {"q": q}, ()),
        "q_to_dict": (lambda q: model.q_to_dict(q), {"q": q}, ()),
        "all_joint_values": (lambda q: model.all_joint_values(q), {"q": q}, ()),
        "solve_ik": (lambda targets, seed, lower, upper: rk.solve_ik(model, targets, tip, seed=seed, lower=lower,
                                                                     upper=upper, max_iterations=3, rng=0),
                     {"targets": T, "seed": q, "lower": model.q_lower, "upper": model.q_upper},
                     ("seed", "lower", "upper")),
    }


def bad_values(good: np.ndarray) -> dict:
    """kind -> a bad value in place of ``good``: the kinds a caller gets wrong."""
    wrong_length = np.zeros(good.shape[:-1] + (good.shape[-1] + 1,))
    nan, inf = good.copy(), good.copy()
    nan.flat[0], inf.flat[-1] = np.nan, np.inf
    objects = np.empty(good.shape, dtype=object)
    objects[...] = object()
    return {"text": "abc", "None": None, "complex": good + 1j, "objects": objects, "NaN": nan, "inf": inf,
            "wrong length": wrong_length, "list of text": ["1.0"] * good.shape[-1], "dict": {"a": 1.0},
            "text array": good.astype(str)}


@pytest.mark.parametrize("model_name", list(MODELS))
@pytest.mark.parametrize("function", list(public_calls(PANDA)))
def test_every_argument_of_every_public_function_refuses_bad_values(model_name, function):
    """Each bad kind for each argument: a RobokinError subclass whose message names the argument
    (never numpy's ValueError/TypeError, a warning, or a silent answer)."""
    model = MODELS[model_name]
    call, good, optional = public_calls(model)[function]
    failures = []
    for argument, value in good.items():
        for kind, bad in bad_values(value).items():
            if kind == "None" and argument in optional or kind == "inf" and argument in ("lower", "upper"):
                continue   # documented: None means the default, ±inf no bound
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    call(**{**good, argument: bad})
                failures.append(f"{argument} {kind}: no error")
            except RobokinError as error:
                if argument not in str(error):
                    failures.append(f"{argument} {kind}: message does not name it: {error}")
            except Exception as error:  # noqa: BLE001 - what the test looks for
                failures.append(f"{argument} {kind}: {type(error).__name__}: {error}")
    assert not failures, "\n".join(failures)


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("model_name", list(MODELS))
@pytest.mark.parametrize("function", list(public_calls(PANDA)))
def test_np_matrix_arguments_work_like_arrays(model_name, function):
    """An ``np.matrix`` argument gives what the plain array of its data gives (a 1 x n matrix is
    a batch of one configuration; for a vector argument such as a point or bounds, the vector)."""
    model = MODELS[model_name]
    call, good, _ = public_calls(model)[function]
    for argument, value in good.items():
        if value.ndim > 2:
            continue
        vector = argument in VECTOR_ARGUMENTS or function in ("q_to_dict", "all_joint_values")
        plain = value if vector else np.asarray(np.matrix(value))
        expected = call(**{**good, argument: plain})
        matrix = np.matrix(value)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = call(**{**good, argument: matrix})
        if isinstance(expected, dict):
            assert got == expected
            continue
        as_tuple = lambda r: dataclasses.astuple(r) if isinstance(r, rk.IKResult) else r if isinstance(r, tuple) \
            else (r,)  # noqa: E731
        for a, b in zip(as_tuple(expected), as_tuple(got)):
            assert type(b) is not np.matrix
            np.testing.assert_array_equal(np.asarray(b), np.asarray(a), err_msg=f"{function} {argument}")


#: Arguments that are one vector (and q of the single-configuration functions): a 1 x n matrix
#: gives that vector (else it is a batch of one).
VECTOR_ARGUMENTS = ("point", "gravity", "lower", "upper")


@pytest.mark.parametrize("call, words", [
    (lambda: PANDA.random_configuration(10**15), ["n", "8e+15", "more than"]),
    (lambda: PANDA.random_configuration(np.int64(10**12)), ["n", "more than"]),
    (lambda: PANDA.random_configuration(1e15), ["n", "whole number"]),
    (lambda: PANDA.random_configuration(True), ["n", "whole number"]),
    (lambda: PANDA.random_configuration(3, rng="x"), ["rng", "'x'"]),
    (lambda: PANDA.random_configuration(3, rng=1.5), ["rng", "1.5"]),
    (lambda: PANDA.random_configuration(3, rng=-1), ["rng"]),
    (lambda: rk.solve_ik(PANDA, T, TIP, rng="x"), ["rng", "'x'"]),
    (lambda: rk.solve_ik(PANDA, T + 1e-3j, TIP), ["targets", "complex"]),
    (lambda: rk.solve_ik(PANDA, np.stack([T, T]) + 1e-3j, TIP), ["targets", "complex"]),
    (lambda: rk.solve_ik(PANDA, T.astype(object), TIP, weights=["1"]), ["weights"]),
    (lambda: rk.solve_ik(PANDA, T, TIP, axis_tolerances="abc"), ["axis_tolerances"]),
    (lambda: rk.rnea(PANDA, Q, np.zeros(PANDA.n_v), np.zeros(PANDA.n_v), f_ext="x"), ["f_ext"]),
    (lambda: rk.frame_transform(PANDA, Q, "panda_link0", TIP, poses="x"), ["poses"]),
    (lambda: rk.solve_ik(PANDA, T, TIP, active_joints=5), ["active_joints", "sequence"]),
    (lambda: RobotModel.from_dh("abc"), ["table", "real numbers"]),
    (lambda: RobotModel.from_dh(np.ones((2, 4)) + 1j), ["table", "complex"]),
    (lambda: RobotModel.from_dh(np.ones((2, 4)), limits=[["a", "b"]] * 2), ["limits", "real numbers"]),
    (lambda: RobotModel.from_dh(np.ones((2, 4)), joint_types=5), ["joint_types", "sequence"]),
    (lambda: RobotModel.from_dh(np.ones((2, 4)), link_names=5), ["link_names", "sequence"]),
    (lambda: RobotModel.from_dh(np.ones((2, 4)), tool="x"), ["tool", "real numbers"]),
    (lambda: rk.integrate(PANDA, Q, np.full(PANDA.n_v, np.nan)), ["v", "panda_joint1"]),
    (lambda: rk.integrate(PANDA, np.zeros((2, PANDA.n_q)), np.zeros((3, PANDA.n_v))), ["q, v", "broadcast"]),
])
def test_counts_generators_and_other_arguments_are_checked(call, words):
    with pytest.raises(RobokinError) as info:
        call()
    assert isinstance(info.value, (ArgumentError, NonFiniteError, ShapeError)), type(info.value)
    for word in words:
        assert word in str(info.value), f"{word!r} not in {info.value}"


def test_the_largest_allowed_count_is_documented_and_smaller_ones_work():
    from robokin_ros.checks import MAX_ELEMENTS
    n = MAX_ELEMENTS // PANDA.n_q
    with pytest.raises(ArgumentError, match="more than"):
        PANDA.random_configuration(n + 1)
    assert PANDA.random_configuration(1000, rng=np.random.default_rng(1)).shape == (1000, PANDA.n_q)
    np.testing.assert_array_equal(PANDA.random_configuration(5, rng=7), PANDA.random_configuration(5, rng=7))


MIMIC_TIMES_2 = RobotModel.from_urdf(
    '<robot name="m"><link name="a"/>'
    '<link name="b"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial>'
    '</link><link name="c"><inertial><mass value="1"/><inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
    '</inertial></link><joint name="j1" type="continuous"><parent link="a"/><child link="b"/><axis xyz="0 0 1"/>'
    '</joint><joint name="j2" type="continuous"><parent link="b"/><child link="c"/><axis xyz="0 1 0"/>'
    '<mimic joint="j1" multiplier="2"/></joint></robot>')


@pytest.mark.parametrize("call", [
    lambda q: rk.forward_kinematics(MIMIC_TIMES_2, q),
    lambda q: rk.joint_poses(MIMIC_TIMES_2, q),
    lambda q: [MIMIC_TIMES_2.all_joint_values(x) for x in np.atleast_2d(q)],
    lambda q: rk.jacobian(MIMIC_TIMES_2, q, "c"),
    lambda q: rk.link_positions(MIMIC_TIMES_2, q),
    lambda q: rk.rnea(MIMIC_TIMES_2, q, np.zeros(1), np.zeros(1)),
    lambda q: rk.aba(MIMIC_TIMES_2, q, np.zeros(1), np.zeros(1)),
    lambda q: rk.crba(MIMIC_TIMES_2, q),
    lambda q: rk.solve_ik(MIMIC_TIMES_2, np.eye(4), "c", seed=q),
], ids=["fk", "joint_poses", "all_joint_values", "jacobian", "link_positions", "rnea", "aba", "crba", "ik seed"])
@pytest.mark.parametrize("kernels", ["generated", "generic"])
def test_a_mimic_value_that_overflows_is_a_named_non_finite_error(call, kernels):
    """Issue 24 case 1: j1 = 1e308 with a mimic multiplier 2 gives j2 = inf; every path (the
    single-configuration generated kernels included) raises NonFiniteError naming j2 and j1."""
    with rk.kernels.use(kernels):
        for q in (np.array([1e308]), np.array([[0.5], [-1e308]])):
            with pytest.raises(NonFiniteError, match=r"mimic joint 'j2' = 2 \* 'j1'"):
                call(q)
    assert np.isfinite(rk.forward_kinematics(MIMIC_TIMES_2, np.array([1e307]))).all()   # 2e307 is fine


def test_a_mimic_overflow_is_caught_before_the_compiled_dynamics_entry():
    """The numba single-configuration entry checks its inputs' finiteness, not the mimic values."""
    rk.prepare(MIMIC_TIMES_2, fk=False, dynamics=("rnea",))
    with pytest.raises(NonFiniteError, match="mimic joint 'j2'"):
        rk.rnea(MIMIC_TIMES_2, np.array([1e308]), np.zeros(1), np.zeros(1))
    np.testing.assert_allclose(rk.rnea(MIMIC_TIMES_2, np.array([0.3]), np.zeros(1), np.zeros(1)),
                               rk.rnea(MIMIC_TIMES_2, np.array([[0.3]]), np.zeros((1, 1)), np.zeros((1, 1)))[0])


FLOATING = MODELS["floating"]


@pytest.mark.parametrize("scale", [0.0, 1e-200, 1e-12])
@pytest.mark.parametrize("call", [
    lambda q: rk.forward_kinematics(FLOATING, q), lambda q: rk.joint_poses(FLOATING, q),
    lambda q: rk.jacobians(FLOATING, q), lambda q: rk.rnea(FLOATING, q, np.zeros(7), np.zeros(7)),
    lambda q: rk.integrate(FLOATING, q, np.zeros(7)), lambda q: FLOATING.clamp(q),
    lambda q: rk.center_of_mass(FLOATING, q), lambda q: rk.kinematic_hessian(FLOATING, q, "tip"),
], ids=["fk", "joint_poses", "jacobians", "rnea", "integrate", "clamp", "com", "hessian"])
def test_a_floating_quaternion_too_short_to_normalise_names_the_joint(scale, call):
    q = FLOATING.home_configuration()
    q[FLOATING.quaternion_slices[0]] = scale * np.array([0.1, 0.2, 0.3, 0.9])
    with pytest.raises(ArgumentError, match="quaternion .* of floating joint 'floating_joint' has norm"):
        call(q)


def test_a_short_but_normalisable_quaternion_is_normalised():
    q = FLOATING.home_configuration()
    s = FLOATING.quaternion_slices[0]
    q[s] = 1e-6 * np.array([0.0, 0.0, 0.6, 0.8])
    unit = q.copy()
    unit[s] = [0.0, 0.0, 0.6, 0.8]
    np.testing.assert_allclose(rk.forward_kinematics(FLOATING, q), rk.forward_kinematics(FLOATING, unit), atol=1e-12)


def test_q_from_dict_strict_knows_floating_joint_names():
    with pytest.raises(ArgumentError, match=r"'floating_joint' is a floating joint with 7 coordinates: give them as "
                                            r"\['floating_joint/x'"):
        FLOATING.q_from_dict({"floating_joint": 1.0}, strict=True)
    q = FLOATING.q_from_dict({"floating_joint/x": 1.0, "floating_joint/qw": 1.0, "arm_joint": 0.5}, strict=True)
    assert q[0] == 1.0 and q[-1] == 0.5
    assert FLOATING.q_from_dict({"floating_joint": 1.0}).tolist() == FLOATING.home_configuration().tolist()
    with pytest.raises(rk.UnknownJointError):
        FLOATING.q_from_dict({"floating": 1.0}, strict=True)


@pytest.mark.parametrize("kwargs, words", [
    ({"name": "a\x00b"}, ["robot's name", "control characters", r"'a\x00b'"]),
    ({"name": "arm\n"}, ["robot's name"]),
    ({"joint_names": ["j1", "j\x1b2"]}, ["control characters", r"'j\x1b2'"]),
    ({"link_names": ["base", "l1", "l\x7f", "tool"]}, ["control characters"]),
])
def test_from_dh_refuses_control_characters_at_construction(kwargs, words):
    with pytest.raises(ModelError) as info:
        RobotModel.from_dh([[0.1, 0, 0.2, 0]] * 2, **kwargs)
    for word in words:
        assert word in str(info.value)


def _massless_base(joint_type: str, inertia: str, mimic_arm: bool = False) -> RobotModel:
    axis = '<axis xyz="0 0 1"/>' if joint_type == "planar" else ""
    ixx, iyy, izz = inertia.split()
    arm = ('<link name="c"><inertial><origin xyz="0.1 0 0"/><mass value="1"/><inertia ixx="0" ixy="0" ixz="0" '
           'iyy="0" iyz="0" izz="0"/></inertial></link><joint name="arm" type="revolute"><parent link="b"/><child link="c"/>'
           '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
           '<link name="d"/><joint name="follower" type="revolute"><parent link="c"/><child link="d"/>'
           '<axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/><mimic joint="arm"/></joint>'
           if mimic_arm else "")
    return RobotModel.from_urdf(
        f'<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/><inertia ixx="{ixx}" ixy="0" '
        f'ixz="0" iyy="{iyy}" iyz="0" izz="{izz}"/></inertial></link><joint name="base" type="{joint_type}">'
        f'<parent link="a"/><child link="b"/>{axis}</joint>{arm}</robot>')


@pytest.mark.parametrize("model", [_massless_base("floating", "0 0 0"), _massless_base("floating", "1 0 0"),
                                   _massless_base("planar", "0 0 0"), _massless_base("planar", "1 1 0")],
                         ids=["floating point mass", "floating flat", "planar point mass", "planar no z inertia"])
def test_aba_of_a_base_that_moves_no_inertia_names_the_joint(model):
    q, v = model.home_configuration(), np.zeros(model.n_v)
    for qb, vb in ((q, v), (np.stack([q, q]), np.stack([v, v]))):
        with pytest.raises(ModelError, match="joint 'base' moves no mass or inertia"):
            rk.aba(model, qb, vb, vb)


def test_aba_with_mimic_joints_and_a_singular_mass_matrix_is_a_model_error():
    """Point masses on the x axis: nothing resists a rotation of the floating base about x."""
    model = _massless_base("floating", "0 0 0", mimic_arm=True)
    q, v = model.home_configuration(), np.zeros(model.n_v)
    with pytest.raises(ModelError, match="the mass matrix is singular"):
        rk.aba(model, q, v, v)
