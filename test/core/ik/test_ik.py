"""Inverse kinematics: round trips through FK, tolerances, options, kernels against the generic
FK/Jacobian, and every error path."""

from __future__ import annotations

import dataclasses
import inspect
import math
import os

import numpy as np
import pytest
from reference import run_generated

from robokin_ros import (
    ArgumentError,
    JointLimitError,
    NonFiniteError,
    RobotModel,
    ShapeError,
    UnknownJointError,
    UnknownLinkError,
    frame_transform,
    jacobian,
)
from robokin_ros.ik import IKOptionError, IKOptions, IKResult, generic_loop, integrate, lm, prepare_ik, solve_ik
from robokin_ros.ik import solver as ik_solver
from robokin_ros.ik.budget import Budget
from robokin_ros.ik.call import ik_call
from robokin_ros.ik.chain import chain_of
from robokin_ros.ik.lm import errors_stacked, lm_step_arrays, normal_solve, twist_lines
from robokin_ros.ik.options import tolerances
from robokin_ros.ik.problem import IKProblem
from robokin_ros.ik.solver import Solver
from robokin_ros.kernels import accel
from robokin_ros.kernels.fk_codegen import compiled_frames
from robokin_ros.spatial import exp_so3, inverse_transform, log_so3, transform

HERE = os.path.dirname(os.path.abspath(__file__))
ROBOTS = os.path.join(HERE, "..", "..", "..", "robokin_ros", "robots")
FIXTURES = os.path.join(HERE, "..", "..", "fixtures")
TWIN_LEFT_ARM = ["left_shoulder_pan_joint", "left_shoulder_lift_joint", "left_upper_arm_roll_joint",
                 "left_elbow_flex_joint", "left_forearm_roll_joint", "left_wrist_flex_joint"]


def robot(name: str) -> RobotModel:
    return RobotModel.from_urdf_file(os.path.join(ROBOTS, f"{name}.urdf"))


def fixture(name: str) -> RobotModel:
    return RobotModel.from_urdf_file(os.path.join(FIXTURES, f"{name}.urdf"))


def pose_errors(model, q, tip, target, base=None):
    """Independent check: position [m] and rotation [rad] error of ``tip`` at ``q`` by FK."""
    T = frame_transform(model, q, base or model.root_link, tip)
    dp = np.linalg.norm(T[..., :3, 3] - target[..., :3, 3], axis=-1)
    dr = np.linalg.norm(log_so3(np.swapaxes(target[..., :3, :3], -1, -2) @ T[..., :3, :3]), axis=-1)
    return dp, dr


def targets_of(model, tip, n, rng, active=None, seed=None):
    """Reachable targets: FK of random configurations (only ``active`` joints drawn)."""
    q = model.random_configuration(n, rng)
    if active is not None:
        base = model.home_configuration() if seed is None else seed
        keep = [i for i, name in enumerate(model.q_names) if name not in active]
        q[:, keep] = base[keep]
    return q, frame_transform(model, q, model.root_link, tip)


# ---------------------------------------------------------------------------- kernels and arithmetic
def solver(model, tips, active=None, **options):
    """The solver of one call (default options unless given), with the generated kernel if any."""
    index = tuple(model.link_index(t) for t in tips)
    active = model.active_joints if active is None else [model.joint_index(name) for name in active]
    problem = IKProblem(model, index, 0, tuple(sorted(int(j) for j in active)))
    args = dict(position_tolerance=1e-5, rotation_tolerance=1e-5, axis_tolerances=None, weights=None,
                max_iterations=200, restarts=None)
    args.update(options)
    tol = tolerances(IKOptions(**args), len(tips))
    return Solver(model, problem, model.q_lower, model.q_upper, tol, compiled_frames(model, tips))


def flat_target(T):
    """Target components (12,) or (12, B) of poses (4, 4) or (B, 4, 4): rotation row-major, position."""
    return np.concatenate([T[..., :3, :3].reshape(T.shape[:-2] + (9,)), T[..., :3, 3]], axis=-1).T


@pytest.mark.parametrize("world", [True, False])
def test_tip_errors_match_log_so3_in_the_generated_step_and_stacked(world):
    """d = [p - p_t; log(R R_tᵀ)] (world axes) or [R_tᵀ (p - p_t); log(R_tᵀ R)] (target axes),
    including tiny angles and angles near π: the generated step's lines and the numpy path's."""
    rng = np.random.default_rng(2)
    n = 40
    vectors = rng.normal(size=(n, 3))
    vectors *= (rng.uniform(0, np.pi, n) / np.linalg.norm(vectors, axis=1))[:, None]
    vectors[:5] *= 1e-9
    vectors[5:10] *= (np.pi - 1e-5) / np.linalg.norm(vectors[5:10], axis=1)[:, None]
    Rt = exp_so3(rng.normal(size=(n, 3)))
    R = (Rt @ exp_so3(vectors)) if not world else (exp_so3(vectors) @ Rt)
    p, pt = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    if world:
        expected = np.concatenate([p - pt, log_so3(R @ np.swapaxes(Rt, -1, -2))], axis=-1)
    else:
        expected = np.concatenate([np.einsum("nji,nj->ni", Rt, p - pt), log_so3(np.swapaxes(Rt, -1, -2) @ R)], axis=-1)
    np.testing.assert_allclose(expected[:, 3:], vectors, atol=1e-9)
    F = np.zeros((n, 10, 4))  # the kernel layout of one frame, row width 4
    F[:, :3, :3], F[:, :3, 3] = R, p
    T = np.tile(np.eye(4), (n, 1, 1))
    T[:, :3, :3], T[:, :3, 3] = Rt, pt
    t = flat_target(T)
    names = [f"b0_{i}{j}" for i in range(3) for j in range(3)] + [f"u0_{i}" for i in range(3)]
    source = (f"def twist(F, t):\n    {', '.join(names)} = t\n" + "\n".join(twist_lines(0, 4, world)) +
              f"\n    return [{', '.join(f'd0_{i}' for i in range(6))}]\n")
    namespace = {"log_so3": generic_loop.log_so3}   # (the generated step's import; plain Python without numba)
    exec(source, namespace)
    for k in range(n):
        np.testing.assert_allclose(namespace["twist"](F[k].reshape(-1).tolist(), t[:, k].tolist()), expected[k], atol=1e-9)
    P = np.concatenate([R.reshape(n, 9), p], axis=1).T[None]  # (1 tip, 12, n)
    np.testing.assert_allclose(errors_stacked(P, t[None], world)[0].T, expected, atol=1e-9)


@pytest.mark.parametrize("axis_tolerances", [None, [0, 0, 0, 0, 0, np.inf]])  # world / target axes
def test_error_jacobian_matches_finite_differences_near_the_target(axis_tolerances):
    """Near the target the error d moves as the solver's Jacobian rows (in d's axes, weighted:
    position rows by POSITION_WEIGHT)."""
    model = robot("panda")
    tip = "panda_hand_tcp"
    s = solver(model, (tip,), axis_tolerances=axis_tolerances)
    assert s.tol.world == (axis_tolerances is None)
    rng = np.random.default_rng(1)
    qs = model.random_configuration(3, rng)
    T = frame_transform(model, qs, model.root_link, tip) @ transform(exp_so3(rng.normal(size=(3, 3)) * 1e-7), [1e-7, 0, 2e-7])
    t = flat_target(T)
    J = s.jacobian(s.frames(qs), t)
    axes = [row[1] for row in s.tol.rows]
    assert s.weights == [lm.POSITION_WEIGHT if i < 3 else 1.0 for i in axes]
    h = 1e-6
    for c, i in enumerate(s.problem.free_q):
        dq = np.zeros(model.n_q)
        dq[i] = h
        difference = s.errors(s.frames(qs + dq), t) - s.errors(s.frames(qs - dq), t)  # (1 tip, 6, 3)
        np.testing.assert_allclose(difference[0, axes] / (2 * h) * np.array(s.weights)[:, None], J[:, c], atol=1e-6)


def numpy_step(s, q, t):
    """Reference LM step of solver ``s`` at ``q (n_q,)`` by numpy on its stacked pieces: cost,
    the held columns (at a bound, gradient outwards) and the clamped next configuration."""
    F = s.frames(q[None])
    r, ok = s.residual(s.errors(F, t[:, None]))
    J = s.jacobian(F, t[:, None])[..., 0]
    rw = (r[s.lm_rows, 0] * np.array(s.weights)) if s.lm_rows else np.zeros(0)
    x, lo, hi = q[s.problem.free_q], s.lo, s.hi
    g = J.T @ rw
    held = ((x <= lo) & (g > 0)) | ((x >= hi) & (g < 0))
    J[:, held] = 0.0
    cost = 0.5 * rw @ rw
    dx = -np.linalg.solve(J.T @ J + (lm.DAMPING_COST * cost + lm.DAMPING_FLOOR) * np.eye(J.shape[1]), J.T @ rw)
    q_next = q.copy()
    q_next[s.problem.free_q] = np.clip(x + dx, lo, hi)
    return bool(ok[0]), cost, held, q_next


@pytest.mark.parametrize("name, tips, active, options", [
    ("panda", ("panda_hand_tcp",), None, {}),                                                   # 6 x 7: J Jᵀ
    ("panda", ("panda_hand_tcp",), ["panda_joint1", "panda_joint2", "panda_joint4", "panda_joint6"], {}),  # 6 x 4: Jᵀ J
    ("panda", ("panda_hand_tcp",), None, {"axis_tolerances": [1e-3, np.inf, 0, 0, 0, np.inf]}),  # dead band, free axes
    ("panda", ("panda_hand_tcp",), None, {"axis_tolerances": [np.inf, np.inf, 0, np.inf, np.inf, np.inf]}),  # 1 x 7
    ("twin_arm_torso", ("left_tool0", "right_tool0"), None, {"weights": [4.0, 0.25]}),           # 12 x 13, weighted
])
def test_first_iteration_matches_a_reference_step(name, tips, active, options):
    """One iteration of the numpy path (Solver.first_iteration, what the compiled loop's load
    check compares with): same cost, held columns and next configuration as a reference step by
    np.linalg.solve on the stacked pieces, from configurations with coordinates at their bounds;
    ``report`` gives the FK errors."""
    model = robot(name)
    s = solver(model, tips, active, **options)
    rng = np.random.default_rng(31)
    qs = model.random_configuration(6, rng)
    fq = s.problem.free_q
    qs[:3, fq[::2]] = model.q_lower[fq[::2]]  # at a bound: held or not, depending on the gradient
    qs[3:, fq[1::2]] = model.q_upper[fq[1::2]]
    T = np.stack([frame_transform(model, model.random_configuration(6, rng), model.root_link, tip) for tip in tips], 1)
    held_any = False
    for q, Tq in zip(qs, T):
        t = np.concatenate([flat_target(Tk) for Tk in Tq])
        ok, cost, held, q_next = numpy_step(s, q, t)
        held_any |= held.any()
        step_cost, step_q = s.first_iteration(q.tolist(), t.tolist())
        assert not ok and step_cost is not None
        assert math.isclose(step_cost, cost, rel_tol=1e-12)
        np.testing.assert_allclose(step_q, q_next, atol=1e-10)
        position, rotation, reported_ok = s.report(q.tolist(), t.tolist())
        errors = [pose_errors(model, q, tip, Tk) for tip, Tk in zip(tips, Tq)]
        assert math.isclose(position, max(e[0] for e in errors), rel_tol=1e-9)
        assert math.isclose(rotation, max(e[1] for e in errors), rel_tol=1e-9) and not reported_ok
    assert held_any
    for q in qs[:2]:  # within tolerance (a 1e-7 rad rotation off the tips' poses): the errors instead of a step
        T_here = [frame_transform(model, q, model.root_link, tip) @ transform(exp_so3([0, 1e-7, 0]), None) for tip in tips]
        t = np.concatenate([flat_target(Tk) for Tk in T_here]).tolist()
        cost, errors = s.first_iteration(q.tolist(), t)
        assert cost is None and errors == list(s.report(q.tolist(), t)[:2]) and math.isclose(errors[1], 1e-7, rel_tol=1e-6)


@pytest.mark.parametrize("m, n", [(6, 7), (6, 4), (12, 9), (1, 1)])
def test_damped_steps_match_numpy_in_arrays(m, n):
    rng = np.random.default_rng(3)
    B = 5
    J, r, damping = rng.normal(size=(B, m, n)), rng.normal(size=(B, m)), rng.uniform(1e-6, 1e-1, B)
    A = np.swapaxes(J, 1, 2) @ J + damping[:, None, None] * np.eye(n)
    expected = -np.linalg.solve(A, np.swapaxes(J, 1, 2) @ r[..., None])[..., 0]
    step = lm_step_arrays(J.transpose(1, 2, 0), r.T, damping, normal_solve(min(m, n)))
    np.testing.assert_allclose(step.T, expected, atol=1e-10)


def test_generic_frames_match_the_generated_kernel():
    model = robot("twin_arm_torso")
    tips = ("left_tool0", "right_tool0", "camera_optical_frame")
    q = model.random_configuration(7, np.random.default_rng(4))
    generic = ik_solver._generic_frames(model, [model.link_index(t) for t in tips], max(4, model.n_v), q)
    generated = np.array([run_generated(compiled_frames(model, tips).generated, x) for x in q])   # interpreted
    np.testing.assert_allclose(generic, generated, atol=1e-12)


def near_seed_problems(model, tip, n, seed):
    """Targets a small motion away from random seeds: they converge without a restart."""
    rng = np.random.default_rng(seed)
    seeds = model.random_configuration(n, rng)
    lo, hi = model.q_lower, model.q_upper
    q = np.clip(seeds + rng.normal(scale=0.05, size=seeds.shape), lo, hi)
    return seeds, frame_transform(model, q, model.root_link, tip)


@pytest.mark.parametrize("options", [{}, {"axis_tolerances": [1e-3, 1e-3, 0, 0, 0, np.inf]},
                                     {"axis_tolerances": [0, 0, 0, np.inf, np.inf, np.inf]}])
def test_compiled_loop_equals_numpy_path(run_with, monkeypatch, options):
    """The numpy path (numba off) against the compiled loop one problem at a time and in a batch
    (SCALAR_ROWS 0): the same iterations and answers to rounding."""
    model = robot("panda")
    seeds, T = near_seed_problems(model, "panda_hand_tcp", 12, 5)
    run_with(accelerated=False)
    stacked = solve_ik(model, T, "panda_hand_tcp", seeds, rng=0, **options)
    assert stacked.success.all()
    if not accel.available():
        return
    run_with(accelerated=True)
    assert prepare_ik(model, "panda_hand_tcp", axis_tolerances=options.get("axis_tolerances"))
    one_by_one = solve_ik(model, T, "panda_hand_tcp", seeds, rng=0, **options)
    monkeypatch.setattr(ik_solver, "SCALAR_ROWS", 0)
    batch = solve_ik(model, T, "panda_hand_tcp", seeds, rng=0, **options)
    for other in (one_by_one, batch):
        np.testing.assert_allclose(other.q, stacked.q, atol=1e-9)
        np.testing.assert_array_equal(other.iterations, stacked.iterations)
        np.testing.assert_allclose(other.position_error, stacked.position_error, atol=1e-12)
        np.testing.assert_allclose(other.rotation_error, stacked.rotation_error, atol=1e-12)


def test_generated_and_generic_kernels_give_the_same_solutions(run_with, monkeypatch):
    model = robot("ur5e")
    seeds, T = near_seed_problems(model, "tool0", 6, 6)
    generated = solve_ik(model, T, "tool0", seeds, rng=0)
    run_with(kind="generic")
    generic = solve_ik(model, T, "tool0", seeds, rng=0)
    assert generated.success.all() and generic.success.all()
    np.testing.assert_allclose(generic.q, generated.q, atol=1e-9)
    np.testing.assert_array_equal(generic.iterations, generated.iterations)
    single = solve_ik(model, T[0], "tool0", seeds[0], rng=0)  # the generic kernel, one problem
    np.testing.assert_allclose(single.q, generated.q[0], atol=1e-9)


def test_integrate_floating_matches_the_jacobian():
    """FK(integrate(q, h v)) moves the tip by h J v (child-frame floating velocity)."""
    model = fixture("floating")
    rng = np.random.default_rng(3)
    q = model.random_configuration(None, rng)
    v = rng.normal(size=model.n_v)
    J = jacobian(model, q, "tip")
    h = 1e-6
    Tp = frame_transform(model, integrate(model, q, h * v), model.root_link, "tip")
    Tm = frame_transform(model, integrate(model, q, -h * v), model.root_link, "tip")
    np.testing.assert_allclose((Tp[:3, 3] - Tm[:3, 3]) / (2 * h), (J @ v)[:3], atol=1e-6)
    w = log_so3(Tp[:3, :3] @ Tm[:3, :3].T) / (2 * h)
    np.testing.assert_allclose(w, (J @ v)[3:], atol=1e-6)
    quat = integrate(model, q, v)[3:7]
    assert np.isclose(np.linalg.norm(quat), 1.0)


def test_integrate_rejects_a_wrong_velocity_length():
    model = fixture("floating")
    with pytest.raises(ShapeError, match=r"v must have shape \(\.\.\., 7\), got \(3,\)"):
        integrate(model, model.home_configuration(), np.zeros(3))


# ------------------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("name, tip, active", [
    ("ur5e", "tool0", None),
    ("panda", "panda_hand_tcp", None),
    ("twin_arm_torso", "left_tool0", ["torso_lift_joint"] + TWIN_LEFT_ARM),
])
def test_round_trip_on_bundled_robots(name, tip, active):
    model = robot(name)
    q_true, T = targets_of(model, tip, 60, np.random.default_rng(4), active)
    result = solve_ik(model, T, tip, active_joints=active, rng=0)
    assert isinstance(result, IKResult) and result.q.shape == (60, model.n_q)
    dp, dr = pose_errors(model, result.q, tip, T)
    assert result.success.mean() >= 0.95
    assert np.all(dp[result.success] <= 1e-5 + 1e-12) and np.all(dr[result.success] <= 1e-5 + 1e-12)
    np.testing.assert_allclose(result.position_error, dp, atol=1e-12)
    np.testing.assert_allclose(result.rotation_error, dr, atol=1e-9)
    assert model.within_limits(result.q).all()
    assert set(result.status[result.success]) == {"converged"}


@pytest.mark.parametrize("name, tip", [("floating", "tip"), ("planar_joint", "tip"),
                                       ("prismatic_continuous_mimic", "tool"), ("branched", "left_tip")])
def test_round_trip_on_fixtures_with_floating_planar_mimic_joints(name, tip):
    model = fixture(name)
    _, T = targets_of(model, tip, 12, np.random.default_rng(5))
    result = solve_ik(model, T, tip, rng=0, restarts=2)
    dp, dr = pose_errors(model, result.q, tip, T)
    assert result.success.mean() >= 0.9
    assert np.all(dp[result.success] <= 1e-5 + 1e-12) and np.all(dr[result.success] <= 1e-5 + 1e-12)
    for s in model.quaternion_slices:
        np.testing.assert_allclose(np.linalg.norm(result.q[:, s], axis=-1), 1.0)


def test_continuous_joint_reported_nearest_the_seed():
    model = fixture("prismatic_continuous_mimic")
    _, T = targets_of(model, "tool", 10, np.random.default_rng(6))
    seed = model.home_configuration()
    wheel = model.q_names.index("wheel_joint")
    seed[wheel] = 10.0
    result = solve_ik(model, T, "tool", seed, rng=0)
    assert result.success.all()
    assert np.all(np.abs(result.q[:, wheel] - 10.0) <= np.pi + 1e-12)


def test_multi_tip_on_the_twin_arm_robot():
    model = robot("twin_arm_torso")
    tips = ["left_tool0", "right_tool0"]
    q = model.random_configuration(20, np.random.default_rng(7))
    T = np.stack([frame_transform(model, q, model.root_link, t) for t in tips], axis=1)
    result = solve_ik(model, T, tips, rng=0)
    assert result.q.shape == (20, model.n_q) and result.success.mean() >= 0.9
    for k, tip in enumerate(tips):
        dp, dr = pose_errors(model, result.q[result.success], tip, T[result.success, k])
        assert np.all(dp <= 1e-5 + 1e-12) and np.all(dr <= 1e-5 + 1e-12)
    worst = np.maximum(*(pose_errors(model, result.q, t, T[:, k])[0] for k, t in enumerate(tips)))
    np.testing.assert_allclose(result.position_error, worst, atol=1e-12)


def test_targets_in_a_base_frame():
    model = robot("twin_arm_torso")
    q = model.random_configuration(10, np.random.default_rng(8))
    T = frame_transform(model, q, "torso_link", "left_tool0")
    result = solve_ik(model, T, "left_tool0", q * 0 + model.home_configuration(), base="torso_link", rng=0)
    dp, dr = pose_errors(model, result.q, "left_tool0", T, base="torso_link")
    assert result.success.mean() >= 0.9 and np.all(dp[result.success] <= 1e-5 + 1e-12)
    lift = model.q_names.index("torso_lift_joint")  # supports the base: never moves
    assert np.all(result.q[:, lift] == model.home_configuration()[lift])


def test_single_requests_in_a_base_frame_moved_by_the_seed():
    """One request at a time (the scalar path): the base's pose comes from the seed's torso joint,
    which is not at home, and never moves."""
    model = robot("twin_arm_torso")
    rng = np.random.default_rng(18)
    q = model.random_configuration(12, rng)
    lift = model.q_names.index("torso_lift_joint")
    for k in range(len(q)):
        seed = model.home_configuration()
        seed[lift] = q[k, lift]
        T = frame_transform(model, q[k], "torso_link", "left_tool0")
        result = solve_ik(model, T, "left_tool0", seed, base="torso_link", active_joints=TWIN_LEFT_ARM, rng=k)
        assert result.success, k
        dp, dr = pose_errors(model, result.q, "left_tool0", T, base="torso_link")
        assert dp <= 1e-5 + 1e-12 and dr <= 1e-5 + 1e-12
        assert result.q[lift] == seed[lift]


def test_a_problem_on_part_of_the_robot_is_solved_on_that_chain_alone():
    """The arm below the torso: the chain model has only the arm's links and joints, and its
    answers (single and batched) equal a solve on the whole robot with the other joints frozen."""
    model = robot("twin_arm_torso")
    chain = chain_of(model, ("left_tool0",), "torso_link")
    assert chain.chain.root_link == "torso_link" and chain.chain.joint_names == tuple(TWIN_LEFT_ARM[:6])
    assert [model.q_names[i] for i in chain.q_index] == list(chain.chain.q_names)
    assert chain_of(model, ("left_tool0",), "right_tool0") is None      # base not an ancestor: whole robot
    rng = np.random.default_rng(19)
    q = model.random_configuration(8, rng)
    seeds = model.random_configuration(8, rng)
    T = frame_transform(model, q, "torso_link", "left_tool0")
    batched = solve_ik(model, T, "left_tool0", seeds, base="torso_link", rng=0)
    others = [i for i in range(model.n_q) if i not in chain.q_index]
    for k in range(len(q)):
        single = solve_ik(model, T[k], "left_tool0", seeds[k], base="torso_link", rng=0)
        for result in (single, IKResult(*(np.asarray(a)[k] for a in dataclasses.astuple(batched)))):
            assert result.success
            dp, dr = pose_errors(model, result.q, "left_tool0", T[k], base="torso_link")
            assert dp <= 1e-5 + 1e-12 and dr <= 1e-5 + 1e-12
            np.testing.assert_array_equal(result.q[others], model.clamp(seeds[k])[others])


# ------------------------------------------------------------------------------------- tolerances
def test_limits_always_respected_even_when_failing():
    model = robot("panda")
    _, T = targets_of(model, "panda_hand_tcp", 10, np.random.default_rng(9))
    T[:5, :3, 3] += 10.0  # out of reach
    result = solve_ik(model, T, "panda_hand_tcp", rng=0, max_iterations=50)
    assert model.within_limits(result.q).all()
    assert not result.success[:5].any()


def test_position_only_frees_the_rotation():
    model = robot("panda")
    tip = "panda_hand_tcp"
    _, T = targets_of(model, tip, 20, np.random.default_rng(10))
    T[:, :3, :3] = exp_so3(np.random.default_rng(11).normal(size=(20, 3)))  # mostly unreachable with this position
    full = solve_ik(model, T, tip, rng=0, max_iterations=60)
    result = solve_ik(model, T, tip, axis_tolerances=[0, 0, 0, np.inf, np.inf, np.inf], rng=0)
    dp, dr = pose_errors(model, result.q, tip, T)
    assert result.success.mean() >= 0.95 and np.all(dp[result.success] <= 1e-5 + 1e-12)
    assert np.median(dr) > 0.1  # the rotation really was free (reported raw)
    assert full.success.mean() < result.success.mean()


def test_rotation_about_tool_z_is_free():
    model = robot("ur5e")
    _, T = targets_of(model, "tool0", 20, np.random.default_rng(12))
    angles = np.random.default_rng(13).uniform(-np.pi, np.pi, 20)
    T = T @ transform(exp_so3(angles[:, None] * [0, 0, 1]))  # spin each target about its own z
    result = solve_ik(model, T, "tool0", axis_tolerances=[0, 0, 0, 0, 0, np.inf], rng=0)
    assert result.success.mean() >= 0.95
    Tr = frame_transform(model, result.q, model.root_link, "tool0")[result.success]
    Ts = T[result.success]
    np.testing.assert_allclose(Tr[:, :3, 3], Ts[:, :3, 3], atol=1e-5)
    np.testing.assert_allclose(Tr[:, :3, 2], Ts[:, :3, 2], atol=1e-5)  # z axes agree
    assert np.median(np.abs(np.sum(Tr[:, :3, 0] * Ts[:, :3, 0], axis=-1))) < 0.99  # x axes need not


def test_axis_box_tolerance_is_honoured():
    model = robot("ur5e")
    _, T = targets_of(model, "tool0", 10, np.random.default_rng(14))
    box = np.array([0.02, 0.02, 0.02, 0.0, 0.0, 0.0])
    shifted = T @ transform(None, [0.015, 0.0, 0.0])  # inside the box around the original pose
    result = solve_ik(model, shifted, "tool0", axis_tolerances=box, rng=0)
    assert result.success.all()
    Tr = frame_transform(model, result.q, model.root_link, "tool0")
    local = inverse_transform(shifted) @ Tr  # error twist in the target frame
    assert np.all(np.abs(local[:, :3, 3]) <= 0.02 + 1e-5)
    assert np.all(np.linalg.norm(log_so3(local[:, :3, :3]), axis=-1) <= 1e-5 + 1e-12)


def test_unreachable_target_reports_failure_with_a_finite_residual():
    model = robot("ur5e")
    T = transform(None, [10.0, 0.0, 0.0])
    result = solve_ik(model, T, "tool0", rng=0, max_iterations=40)
    assert result.q.shape == (model.n_q,) and not result.success
    assert np.isfinite(result.position_error) and result.position_error > 8.0
    assert result.status == "max_iterations" and result.iterations == 40
    assert model.within_limits(result.q)


def test_weights_pull_the_compromise_towards_the_heavier_tip():
    """Only the (prismatic, vertical) torso lift moves: the weighted least-squares optimum is the
    weighted mean of the two lifts each tip wants."""
    model = robot("twin_arm_torso")
    lift = model.q_names.index("torso_lift_joint")
    tips = ["left_tool0", "right_tool0"]
    qa, qb = model.home_configuration(), model.home_configuration()
    qa[lift], qb[lift] = 0.1, 0.3
    T = np.stack([frame_transform(model, qa, model.root_link, tips[0]),
                  frame_transform(model, qb, model.root_link, tips[1])])
    result = solve_ik(model, T, tips, active_joints=["torso_lift_joint"], weights=[10.0, 1.0], rng=0, max_iterations=60)
    assert not result.success
    assert result.q[lift] == pytest.approx((10 * 0.1 + 1 * 0.3) / 11, abs=1e-4)


# ---------------------------------------------------------------------------------------- options
def test_active_joints_leave_the_others_at_the_seed():
    model = robot("twin_arm_torso")
    seed = model.random_configuration(None, np.random.default_rng(15))
    _, T = targets_of(model, "left_tool0", 10, np.random.default_rng(16), TWIN_LEFT_ARM, seed)
    result = solve_ik(model, T, "left_tool0", seed, active_joints=TWIN_LEFT_ARM + ["left_gripper_finger_left_joint"], rng=0)
    assert result.success.mean() >= 0.9
    others = [i for i, n in enumerate(model.q_names) if n not in TWIN_LEFT_ARM]
    assert np.array_equal(result.q[:, others], np.broadcast_to(seed[others], (10, len(others))))


def test_bound_overrides_are_honoured():
    model = robot("panda")
    lower, upper = np.full(model.n_q, -np.inf), np.full(model.n_q, np.inf)
    lower[0], upper[0] = 0.2, 0.5
    q = model.random_configuration(10, np.random.default_rng(17))
    q[:, 0] = np.random.default_rng(18).uniform(0.2, 0.5, 10)
    T = frame_transform(model, q, model.root_link, "panda_hand_tcp")
    result = solve_ik(model, T, "panda_hand_tcp", lower=lower, upper=upper, rng=0)
    assert result.success.mean() >= 0.9
    assert np.all((result.q[:, 0] >= 0.2) & (result.q[:, 0] <= 0.5))
    assert model.within_limits(result.q).all()
    for k in range(3):  # single requests (the float path) too
        single = solve_ik(model, T[k], "panda_hand_tcp", lower=lower, upper=upper, rng=0)
        assert single.success and 0.2 <= single.q[0] <= 0.5 and model.within_limits(single.q)


def test_fixed_rng_gives_identical_results():
    model = robot("panda")
    _, T = targets_of(model, "panda_hand_tcp", 10, np.random.default_rng(19))
    a = solve_ik(model, T, "panda_hand_tcp", restarts=3, rng=42)
    b = solve_ik(model, T, "panda_hand_tcp", restarts=3, rng=42)
    for x, y in zip(dataclass_values(a), dataclass_values(b)):
        np.testing.assert_array_equal(x, y)


def dataclass_values(result):
    return [result.q, result.success, result.position_error, result.rotation_error, result.iterations, result.status]


@pytest.mark.parametrize("scalar_rows", [0, 10**9])  # a batch in chunks / one by one (on the compiled loop)
def test_batched_equals_looped(monkeypatch, scalar_rows):
    """Targets near their seeds converge without restarts, so each problem is independent; a
    single request gives the batch's answer (to rounding: either may run on the numpy path or the
    compiled loop, which the first requests start loading)."""
    model = robot("ur5e")
    rng = np.random.default_rng(20)
    seeds = model.random_configuration(8, rng)
    T = frame_transform(model, seeds + rng.normal(scale=0.05, size=seeds.shape), model.root_link, "tool0")
    monkeypatch.setattr(ik_solver, "SCALAR_ROWS", scalar_rows)
    batched = solve_ik(model, T.reshape(2, 4, 4, 4), "tool0", seeds.reshape(2, 4, -1), rng=0)
    assert batched.q.shape == (2, 4, model.n_q) and batched.status.shape == (2, 4)
    for i in range(8):
        single = solve_ik(model, T[i], "tool0", seeds[i], rng=0)
        assert single.q.shape == (model.n_q,) and single.success.shape == () and single.status.dtype == batched.status.dtype
        np.testing.assert_allclose(single.q, batched.q.reshape(8, -1)[i], atol=1e-9)
        np.testing.assert_allclose(single.position_error, batched.position_error.reshape(8)[i], atol=1e-12)
        assert single.success == batched.success.reshape(8)[i]
        assert single.iterations == batched.iterations.reshape(8)[i]


def test_vectorised_batch_with_restarts_walks_each_problems_own_restarts(run_with, monkeypatch):
    """Far targets stall and restart while problems wait for room (BATCH_ROWS 64). Each problem
    draws its restarts from its own stretch of the sequence, so the batch gives the answers of
    the same batch with room for every row at once (the same iterations; q to rounding);
    answers exact, within limits, and honest."""
    model = robot("panda")
    q_true, T = targets_of(model, "panda_hand_tcp", 120, np.random.default_rng(24))
    seed = np.where(np.isfinite(model.q_lower), 0.5 * (model.q_lower + model.q_upper), 0.0)
    run_with(accelerated=False)
    floats = solve_ik(model, T, "panda_hand_tcp", seed, rng=0, max_iterations=500)   # every row at once
    monkeypatch.setattr(ik_solver, "BATCH_ROWS", 64)  # problems wait for room
    result = solve_ik(model, T, "panda_hand_tcp", seed, rng=0, max_iterations=500)
    np.testing.assert_array_equal(result.iterations, floats.iterations)
    np.testing.assert_array_equal(result.success, floats.success)
    np.testing.assert_allclose(result.q, floats.q, rtol=0.0, atol=1e-9)
    dp, dr = pose_errors(model, result.q, "panda_hand_tcp", T)
    assert result.success.mean() >= 0.98 and model.within_limits(result.q).all()
    assert np.all(dp[result.success] <= 1e-5 + 1e-12) and np.all(dr[result.success] <= 1e-5 + 1e-12)
    np.testing.assert_allclose(result.position_error, dp, atol=1e-12)
    np.testing.assert_allclose(result.rotation_error, dr, atol=1e-9)
    assert result.iterations.max() > ik_solver.STALL_ITERATIONS  # some problems did restart


def test_one_seed_broadcasts_over_the_targets():
    model = robot("ur5e")
    seed = model.random_configuration(None, np.random.default_rng(21))
    _, T = targets_of(model, "tool0", 5, np.random.default_rng(22))
    result = solve_ik(model, T, "tool0", seed, rng=0)
    assert result.q.shape == (5, model.n_q) and result.success.all()


def test_restarts_pick_the_converged_row_closest_to_the_seed():
    model = robot("ur5e")
    seed = model.random_configuration(None, np.random.default_rng(23))
    T = frame_transform(model, seed, model.root_link, "tool0")
    result = solve_ik(model, T, "tool0", seed, restarts=7, rng=0)
    assert result.success and result.iterations == 0
    np.testing.assert_array_equal(result.q, seed)


def test_r2_steps_solve_the_defining_equation():
    """α_j = φ^-j with φ^(d+1) = φ + 1 (d = 1: the golden ratio)."""
    np.testing.assert_allclose(ik_solver._r2_steps(1), [(math.sqrt(5) - 1) / 2])
    for d in (2, 7, 9):
        alpha = ik_solver._r2_steps(d)
        phi = 1 / alpha[0]
        assert math.isclose(phi ** (d + 1), phi + 1, rel_tol=1e-12)
        np.testing.assert_allclose(alpha, phi ** -np.arange(1, d + 1))


def test_restarts_cover_the_window_evenly_and_repeat_with_the_seed():
    """Restart configurations: within the bounds, one turn around the middle of a wider
    revolute range (the UR5e's ±2π joints), every eighth of each coordinate's window hit within
    64 restarts, the same for the same seed and not for another."""
    ur5e, panda = robot("ur5e"), robot("panda")
    s = solver(ur5e, ("tool0",))
    np.testing.assert_allclose(s.restart_lo, -np.pi)
    np.testing.assert_allclose(s.restart_hi, np.pi)
    p = solver(panda, ("panda_hand_tcp",))
    np.testing.assert_array_equal(p.restart_lo, p.lo)
    np.testing.assert_array_equal(p.restart_hi, p.hi)
    for model, sv in ((ur5e, s), (panda, p)):
        home = np.tile(model.home_configuration()[:, None], (1, 64))

        def restarts(budget, problems=np.zeros(64, np.int64)):  # noqa: B008 - 64 restarts of problem 0
            return sv.restart(home.copy(), ik_solver.Outcome(home.T, budget), problems)

        a, b = restarts(Budget(None, 1, 7)), restarts(Budget(None, 1, 7))
        np.testing.assert_array_equal(a, b)
        assert not np.allclose(a, restarts(Budget(None, 1, 8)))
        # rows of several problems: each takes its own problem's next restarts, in row order
        mixed = restarts(Budget(None, 1, 7), np.arange(64) % 2)
        np.testing.assert_array_equal(mixed[:, 0::2], a[:, :32])
        assert not np.allclose(mixed[:, 1::2], a[:, :32])
        fraction = (a[sv.problem.free_q] - sv.restart_lo[:, None]) / (sv.restart_hi - sv.restart_lo)[:, None]
        assert fraction.min() >= 0 and fraction.max() < 1
        for row in fraction:
            assert np.bincount((row * 8).astype(int), minlength=8).min() >= 4  # 8 expected per bin
        assert model.within_limits(restarts(Budget(None, 1, np.random.default_rng(3))).T).all()


def test_single_and_vectorised_restarts_agree(monkeypatch):
    """A far target needs restarts: one row alone in a vectorised pass (BATCH_ROWS 1) walks
    the same restarts as a single request, so both give the same answer."""
    model = robot("panda")
    tip = "panda_hand_tcp"
    seed = np.where(np.isfinite(model.q_lower), 0.5 * (model.q_lower + model.q_upper), 0.0)
    _, T = targets_of(model, tip, 40, np.random.default_rng(33))
    floats = solve_ik(model, T, tip, seed, rng=5, max_iterations=300)
    restarted = np.flatnonzero(floats.success & (floats.iterations > 3 * ik_solver.STALL_ITERATIONS))[:3]
    assert restarted.size
    monkeypatch.setattr(ik_solver, "SCALAR_ROWS", 0)
    monkeypatch.setattr(ik_solver, "BATCH_ROWS", 1)
    for i in restarted:
        one = solve_ik(model, T[i:i + 1], tip, seed, rng=5, max_iterations=300)
        single = solve_ik(model, T[i], tip, seed, rng=5, max_iterations=300)
        assert one.iterations[0] == single.iterations and one.success[0] and single.success
        np.testing.assert_allclose(one.q[0], single.q, atol=1e-9)


def test_requests_are_cached_yet_validated(ur5e):
    T = frame_transform(ur5e, ur5e.home_configuration(), ur5e.root_link, "tool0")
    assert solve_ik(ur5e, T, "tool0", active_joints=["shoulder_pan_joint", "wrist_1_joint"]).success
    options = IKOptions(active_joints=["shoulder_pan_joint", "wrist_1_joint"], max_iterations=200)
    assert ik_call(ur5e, ("tool0",), options) is ik_call(ur5e, ("tool0",), IKOptions(**vars(options)))
    with pytest.raises(IKOptionError, match=r"position_tolerance must be a number in \[0, 1e\+06\], got -1"):
        solve_ik(ur5e, T, "tool0", position_tolerance=-1)
    with pytest.raises(UnknownJointError, match="nope"):
        solve_ik(ur5e, T, "tool0", active_joints=["shoulder_pan_joint", "nope"])


def test_a_huge_finite_target_fails_within_the_limits(ur5e):
    """1e300 m away: the cost overflows, the steps are NaN; the answer is the seed, within the limits."""
    model = robot("panda")
    T = transform(None, [1e300, 0.0, 0.0])
    for targets in (T, np.stack([T, T])):
        result = solve_ik(model, targets, "panda_hand_tcp", max_iterations=20)
        assert not result.success.any() and model.within_limits(result.q).all()


def test_timeout_stops_early_with_its_status():
    model = robot("panda")
    T = transform(None, [5.0, 0.0, 0.0])
    result = solve_ik(model, T, "panda_hand_tcp", timeout=1e-4, max_iterations=10**6, rng=0)
    assert not result.success and result.status == "timeout"
    assert 0 <= result.iterations < 10**6


def test_no_free_joints_is_reported():
    model = robot("twin_arm_torso")
    T = frame_transform(model, model.home_configuration(), model.root_link, "left_tool0")
    result = solve_ik(model, T, "left_tool0", active_joints=["head_pan_joint"])
    assert result.success and result.status == "converged"
    result = solve_ik(model, T @ transform(None, [0.1, 0, 0]), "left_tool0", active_joints=["head_pan_joint"])
    assert not result.success and result.status == "no_free_joints"


# ----------------------------------------------------------------------------------------- errors
@pytest.fixture(scope="module")
def ur5e():
    return robot("ur5e")


def test_non_finite_target_raises(ur5e):
    T = np.tile(np.eye(4), (3, 1, 1))
    T[1, 0, 3] = np.nan
    with pytest.raises(NonFiniteError, match=r"targets has non-finite entries at \[\(1,\)\]"):
        solve_ik(ur5e, T, "tool0")


@pytest.mark.parametrize("targets, tips, message", [
    (np.eye(3), "tool0", r"targets must have shape \(\.\.\., 4, 4\), got \(3, 3\)"),
    (np.eye(4), ["tool0", "flange"], r"targets must have shape \(\.\.\., 2, 4, 4\), got \(4, 4\)"),
    (np.eye(4), [], r"tips must have shape one name or a non-empty sequence of names"),
])
def test_wrong_target_shapes_raise(ur5e, targets, tips, message):
    with pytest.raises(ShapeError, match=message):
        solve_ik(ur5e, targets, tips)


def test_seed_errors(ur5e):
    with pytest.raises(ShapeError, match=r"seed must have shape \(\.\.\., 6\), got \(5,\)"):
        solve_ik(ur5e, np.eye(4), "tool0", np.zeros(5))
    with pytest.raises(ShapeError, match=r"seed must have shape \(\.\.\., 6\) broadcastable to the targets' batch \(3,\)"):
        solve_ik(ur5e, np.tile(np.eye(4), (3, 1, 1)), "tool0", np.zeros((2, 6)))
    with pytest.raises(NonFiniteError, match=r"seed has non-finite entries at \['elbow_joint'\]"):
        solve_ik(ur5e, np.eye(4), "tool0", np.array([0, 0, np.inf, 0, 0, 0]))


def test_unknown_names_raise(ur5e):
    with pytest.raises(UnknownLinkError, match=r"unknown link 'tool1'; did you mean 'tool0'"):
        solve_ik(ur5e, np.eye(4), "tool1")
    with pytest.raises(UnknownLinkError, match=r"unknown link 'bas_link'"):
        solve_ik(ur5e, np.eye(4), "tool0", base="bas_link")
    with pytest.raises(UnknownJointError, match=r"unknown joint 'elbow'"):
        solve_ik(ur5e, np.eye(4), "tool0", active_joints=["elbow"])


def test_bound_errors(ur5e):
    with pytest.raises(ShapeError, match=r"lower must have shape \(6,\), got \(2,\)"):
        solve_ik(ur5e, np.eye(4), "tool0", lower=[0, 0])
    with pytest.raises(NonFiniteError, match=r"upper has non-finite entries at \['shoulder_pan_joint'\]"):
        solve_ik(ur5e, np.eye(4), "tool0", upper=[np.nan, 1, 1, 1, 1, 1])
    with pytest.raises(JointLimitError, match=r"joint 'elbow_joint' = 4 is outside its limits"):
        solve_ik(ur5e, np.eye(4), "tool0", lower=[-np.inf, -np.inf, 4.0, -np.inf, -np.inf, -np.inf])


@pytest.mark.parametrize("options, error, message", [
    ({"position_tolerance": -1.0}, IKOptionError, r"position_tolerance must be a number in \[0, 1e\+06\], got -1.0"),
    ({"rotation_tolerance": np.nan}, IKOptionError, r"rotation_tolerance must be a number in \[0, 1e\+06\]"),
    ({"timeout": 0.0}, IKOptionError, r"timeout must be > 0 seconds or None, got 0.0"),
    ({"max_iterations": 0}, IKOptionError, r"max_iterations must be a whole number >= 1, got 0"),
    ({"restarts": -1}, IKOptionError, r"restarts must be a whole number >= 0, got -1"),
    ({"axis_tolerances": [0, 0, 0]}, ShapeError, r"axis_tolerances must have shape \(6,\) or \(1, 6\), got \(3,\)"),
    ({"axis_tolerances": [0, 0, 0, -1, 0, 0]}, IKOptionError, r"axis_tolerances must be >= 0"),
    ({"weights": [1.0, 2.0]}, ShapeError, r"weights must have shape \(1,\), got \(2,\)"),
    ({"weights": [-1.0]}, IKOptionError, r"weights must be finite and >= 0, got \[-1.0\]"),
])
def test_bad_options_raise(ur5e, options, error, message):
    with pytest.raises(error, match=message):
        solve_ik(ur5e, np.eye(4), "tool0", **options)


# ---------------------------------------------------------------------------- options as a value, cancel tokens
def test_options_as_one_value_give_the_keywords_results(ur5e):
    """``options=IKOptions(...)`` and the same keywords: the same answer (batch and one target);
    an option given both ways, or an options of another type, is refused naming it."""
    rng = np.random.default_rng(4)
    q = ur5e.random_configuration(6, rng)
    T = frame_transform(ur5e, q, ur5e.root_link, "tool0")
    seeds = ur5e.random_configuration(6, rng)
    kw = dict(max_iterations=80, rng=3, lower=ur5e.q_lower * 0.9, active_joints=list(ur5e.joint_names))
    options = IKOptions(**kw)
    for targets, seed in ((T, seeds), (T[0], seeds[0])):
        a, b = solve_ik(ur5e, targets, "tool0", seed, **kw), solve_ik(ur5e, targets, "tool0", seed, options=options)
        for field in ("q", "success", "iterations", "status", "position_error"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    with pytest.raises(IKOptionError, match="max_iterations given both") as error:
        solve_ik(ur5e, T[0], "tool0", max_iterations=80, options=options)
    assert error.value.argument == "max_iterations"
    with pytest.raises(IKOptionError, match="options must be an IKOptions"):
        solve_ik(ur5e, T[0], "tool0", options=dict(kw))
    with pytest.raises(ArgumentError, match="cancel"):
        solve_ik(ur5e, T[0], "tool0", cancel=True)


def test_solve_ik_shows_every_option_with_its_default():
    """solve_ik's keyword-only parameters are IKOptions's fields, in order and with their
    defaults (then options and cancel): written twice, held equal here; an unknown keyword is
    Python's TypeError."""
    parameters = inspect.signature(solve_ik).parameters.values()
    keyword_only = [(p.name, p.default) for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]
    fields = [(f.name, f.default) for f in dataclasses.fields(IKOptions)]
    assert keyword_only == fields + [("options", None), ("cancel", None)]
    with pytest.raises(TypeError, match="tolerance"):
        solve_ik(None, np.eye(4), "tool0", tolerance=1e-3)


def test_ik_options_are_checked_when_made_and_frozen():
    with pytest.raises(IKOptionError, match=r"position_tolerance must be a number in \[0, 1e\+06\], got -1"):
        IKOptions(position_tolerance=-1)
    with pytest.raises(IKOptionError, match="max_iterations must be a whole number >= 1, got True"):
        IKOptions(max_iterations=True)
    with pytest.raises(IKOptionError, match="timeout must be > 0 seconds or None, got nan"):
        IKOptions(timeout=float("nan"))
    with pytest.raises(IKOptionError, match="restarts must be a whole number >= 0"):
        IKOptions(restarts=-1)
    with pytest.raises(IKOptionError, match="objective must be one of"):
        IKOptions(objective="fastest")
    with pytest.raises(IKOptionError, match="solutions must be a whole number >= 1"):
        IKOptions(solutions=0)
    with pytest.raises(IKOptionError, match="weights must be finite and >= 0"):
        IKOptions(weights=[1.0, -1.0])
    with pytest.raises(IKOptionError, match="avoid_collisions must be a bool or a CollisionModel"):
        IKOptions(avoid_collisions="yes")
    with pytest.raises(ArgumentError, match="rng"):
        IKOptions(rng=1.5)
    options = IKOptions(position_tolerance=1, max_iterations=np.int64(7), restarts=None, lower=np.zeros(3),
                        axis_tolerances=np.array([[0.0] * 5 + [np.inf]] * 2))
    assert options.position_tolerance == 1.0 and type(options.position_tolerance) is float
    assert options.max_iterations == 7 and type(options.max_iterations) is int and options.restarts == 0
    assert options.lower == (0.0, 0.0, 0.0) and np.array(options.axis_tolerances).shape == (2, 6)
    assert options == IKOptions(**vars(options)) and hash(options) == hash(IKOptions(**vars(options)))
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.max_iterations = 3
    with pytest.raises(IKOptionError, match="max_iterations"):
        dataclasses.replace(options, max_iterations=0)


def test_a_cancelled_token_ends_every_route_at_once(ur5e):
    """A token cancelled before the call: one target (floats or the compiled loop), a stacked
    batch, an objective and distinct solutions all end at their first budget check with status
    timeout; a solve given a fresh token is unaffected."""
    from robokin_ros.ik import CancelToken

    far = frame_transform(ur5e, ur5e.home_configuration(), ur5e.root_link, "tool0")
    far[:3, 3] += 5.0
    token = CancelToken()
    token.cancel()
    one = solve_ik(ur5e, far, "tool0", max_iterations=10**9, cancel=token)
    assert str(one.status) == "timeout" and int(one.iterations) <= 32   # (the compiled loop checks every CHUNK)
    batch = solve_ik(ur5e, np.stack([far] * 100), "tool0", max_iterations=10**9, cancel=token)
    assert (batch.status == "timeout").all() and batch.iterations.max() <= 1
    objective = solve_ik(ur5e, far, "tool0", max_iterations=10**9, objective="closest", cancel=token)
    assert str(objective.status) == "timeout"
    found = solve_ik(ur5e, far, "tool0", max_iterations=10**9, solutions=3, cancel=token)
    assert found.status.tolist() == ["timeout"]
    fresh = solve_ik(ur5e, far, "tool0", max_iterations=40, cancel=CancelToken())
    assert str(fresh.status) == "max_iterations" and int(fresh.iterations) == 40
