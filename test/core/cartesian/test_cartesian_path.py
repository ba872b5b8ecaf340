"""rk.cartesian_path against independent oracles: the FK of every returned point on the line,
the FK of every joint-space midpoint within 1 mm of it, limits, finite values, the fraction on
certified-feasible lines (a numpy Newton continuation, oracle.py), and partial paths that stop
before the point that fails."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from cartesian_oracle import error, random_feasible_line, track_line

import robokin_ros as rk
from robokin_ros import robots
from robokin_ros.cartesian.timing import coordinate_limits

CORPUS = Path(__file__).resolve().parents[4] / 'shared' / 'urdf-corpus'
BUNDLED = [('panda.urdf', 'panda_hand_tcp'), ('ur5e.urdf', 'tool0')]
CORPUS_ARMS = [('kuka_lbr_iiwa14.urdf', 'tool0'), ('ur10e_ros2.urdf', 'tool0'), ('abb_irb6700.urdf', 'tool0'),
               ('fanuc_m10ia.urdf', 'tool0')]
UR_START = np.array([0.3, -1.5, 1.5, -1.5, -1.5, 0.2])


def load(name):
    if (robots.path(name) if name in dict(BUNDLED) else None) is not None:
        return rk.RobotModel.from_urdf_file(robots.path(name))
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f'{path} is absent (the shared URDF corpus is not checked out next to the repository)')
    return rk.RobotModel.from_urdf_file(path)


def fk(model, Q, tip):
    return rk.forward_kinematics(model, Q, frames=[tip])[:, 0]


def segment_distance(p, a, b):
    ab = b - a
    t = np.clip((p - a) @ ab / max(ab @ ab, 1e-300), 0.0, 1.0)
    return np.linalg.norm(p - (a + t[:, None] * ab), axis=-1)


def check_path(model, tip, result, T0, T_goal, scaling=1.0):
    """Every returned point on the line from T0 to T_goal (1e-4 m; the orientation of the
    slerp at its position's parameter within 1e-3 rad), every midpoint within 1 mm, limits,
    finite and monotonic times, velocities and accelerations within the scaled limits."""
    Q = result.q
    assert np.all(np.isfinite(Q)) and np.all(np.isfinite(result.velocities))
    assert np.all(np.isfinite(result.accelerations)) and np.all(np.isfinite(result.times))
    assert np.all(model.within_limits(Q, tolerance=1e-9))
    T = fk(model, Q, tip)
    a, b = T0[:3, 3], T_goal[:3, 3]
    assert segment_distance(T[:, :3, 3], a, b).max() <= 1e-4
    ab = b - a
    s = np.clip((T[:, :3, 3] - a) @ ab / max(ab @ ab, 1e-300), 0, 1) if ab @ ab > 1e-12 else None
    if s is not None:
        from robokin_ros.cartesian.interpolation import interpolate
        expected = interpolate(T0, T_goal, s)
        for Ti, Ei in zip(T, expected):
            assert np.linalg.norm(error(Ti, Ei)[3:]) <= 1e-3
    if len(Q) > 1:
        mid = fk(model, 0.5 * (Q[1:] + Q[:-1]), tip)
        assert segment_distance(mid[:, :3, 3], a, b).max() <= 1e-3
        assert np.all(np.diff(result.times) > 0)
    velocity, acceleration = coordinate_limits(model, model.active_joints)
    assert np.all(np.abs(result.velocities) <= velocity * scaling + 1e-9)
    assert np.all(np.abs(result.accelerations) <= acceleration * scaling + 1e-9)
    assert result.velocities[0] == pytest.approx(np.zeros(model.n_q)) and np.allclose(result.velocities[-1], 0)


@pytest.mark.parametrize('name,tip', BUNDLED + CORPUS_ARMS, ids=[n for n, _ in BUNDLED + CORPUS_ARMS])
def test_certified_lines_are_followed_whole(name, tip):
    """Random certified-feasible lines 5–30 cm (some turning the tip up to 0.5 rad): fraction 1.0
    in at least 99 % (here: every one of 12 per arm but at most one), every point checked."""
    model = load(name)
    rng = np.random.default_rng(sum(map(ord, name)))
    full = 0
    n = 12
    for i in range(n):
        q0, T_goal, _ = random_feasible_line(model, tip, rng, rotation=0.5 if i % 3 == 2 else 0.0)
        T0 = fk(model, q0[None], tip)[0]
        result = rk.cartesian_path(model, T_goal, tip, q0, max_step=0.005)
        check_path(model, tip, result, T0, T_goal)
        full += result.fraction == 1.0
        if result.fraction == 1.0:
            assert result.status == 'complete' and np.linalg.norm(error(fk(model, result.q[-1:], tip)[0],
                                                                         T_goal)) < 1e-6
    assert full >= n - 1


def test_max_step_and_moveit_fraction_of_waypoints():
    """MoveIt's step count (floor(d / max_step) + 1 per segment) and fraction (k waypoints: each
    whole segment 1/k)."""
    model = load('ur5e.urdf')
    T0 = fk(model, UR_START[None], 'tool0')[0]
    W1, W2 = T0.copy(), T0.copy()
    W1[:3, 3] += [0.0, 0.0, 0.1]
    W2[:3, 3] += [0.05, 0.0, 0.1]
    result = rk.cartesian_path(model, [W1, W2], 'tool0', UR_START, max_step=0.01)
    assert result.fraction == 1.0
    d1 = np.linalg.norm(W1[:3, 3] - T0[:3, 3])
    d2 = np.linalg.norm(W2[:3, 3] - fk(model, result.q[result.waypoint == 0][-1:], 'tool0')[0, :3, 3])
    steps = (math.floor(d1 / 0.01) + 1, math.floor(d2 / 0.01) + 1)
    assert len(result.q) == 1 + sum(steps) and list(result.waypoint) == [-1] + [0] * steps[0] + [1] * steps[1]
    steps = np.linalg.norm(np.diff(fk(model, result.q, 'tool0')[:, :3, 3], axis=0), axis=1)
    assert steps.max() <= 0.01 + 1e-5


def test_leaving_the_workspace_stops_before_it():
    model = load('ur5e.urdf')
    T0 = fk(model, UR_START[None], 'tool0')[0]
    T_goal = T0.copy()
    T_goal[:3, 3] = T0[:3, 3] + 2.0 * T0[:3, 3] / np.linalg.norm(T0[:3, 3])
    result = rk.cartesian_path(model, T_goal, 'tool0', UR_START, max_step=0.01)
    assert 0.0 < result.fraction < 0.5 and result.status in ('unreachable', 'no_ik_solution', 'discontinuity')
    assert result.message
    check_path(model, 'tool0', result, T0, T_goal)


@pytest.mark.parametrize('start', [[0.5, -1.0, 1.2, -1.5, 0.2, 0.0], [0.0, -1.3, 1.6, -1.9, 0.3, 0.3]])
def test_a_line_through_a_wrist_singularity_is_followed_on_the_line_or_stops_before_it(start):
    """The UR5e's wrist (joint 5 at 0) between the ends of the line: every returned point and
    every midpoint stays on the line, whether the path stops before the singularity
    (discontinuity) or keeps to one wrist branch through its neighbourhood."""
    model = load('ur5e.urdf')
    qa = np.array(start)
    qb = qa + [0.0, 0.0, 0.0, 0.0, -0.6, 0.0]      # joint 5 from +0.2..0.3 to -0.3..-0.4
    T0, T_goal = fk(model, qa[None], 'tool0')[0], fk(model, qb[None], 'tool0')[0]
    result = rk.cartesian_path(model, T_goal, 'tool0', qa, max_step=0.002)
    assert result.status in ('complete', 'discontinuity', 'no_ik_solution'), result.message
    assert result.complete or (result.message and result.fraction < 1.0)
    check_path(model, 'tool0', result, T0, T_goal)
    smallest = min(np.linalg.svd(rk.jacobian(model, q, 'tool0'), compute_uv=False)[-1] for q in result.q)
    assert smallest < 0.02   # the path came near the singularity: the test exercises it


def test_a_joint_bound_stops_the_path_before_it():
    """A bound the certified line crosses halfway: the path stops before it, within the bounds."""
    model = load('ur5e.urdf')
    rng = np.random.default_rng(5)
    for _ in range(20):
        q0, T_goal, oracle = random_feasible_line(model, 'tool0', rng, length=(0.2, 0.3))
        j = int(np.argmax(np.abs(oracle[-1] - oracle[0])))
        if abs(oracle[-1, j] - oracle[0, j]) > 0.2:
            break
    upper, lower = model.q_upper.copy(), model.q_lower.copy()
    middle = 0.5 * (oracle[0, j] + oracle[-1, j])
    if oracle[-1, j] > oracle[0, j]:
        upper[j] = middle
    else:
        lower[j] = middle
    assert track_line(model, 'tool0', q0, T_goal, lower, upper) is None
    T0 = fk(model, q0[None], 'tool0')[0]
    result = rk.cartesian_path(model, T_goal, 'tool0', q0, max_step=0.005,
                               options=rk.PathOptions(lower=lower, upper=upper))
    assert result.fraction < 1.0 and result.status != 'complete'
    assert np.all((result.q >= lower - 1e-9) & (result.q <= upper + 1e-9))
    check_path(model, 'tool0', result, T0, T_goal)


def test_self_collision_stops_before_the_first_colliding_point():
    """avoid_collisions: a line the oracle follows into self-collision stops before it, every
    returned point collision-free (checked by coal through rk.self_collisions)."""
    pytest.importorskip('coal')
    model = load('panda.urdf')
    cm = rk.CollisionModel.build(model, srdf=robots.path('panda.srdf').read_text())
    rng = np.random.default_rng(3)
    tip = 'panda_hand_tcp'
    for _ in range(300):
        q0, T_goal, oracle = random_feasible_line(model, tip, rng, length=(0.2, 0.3))
        hits = rk.self_collisions(cm, oracle).in_collision
        if not hits[0] and hits.any():
            break
    else:
        pytest.skip('no line into self-collision found')
    result = rk.cartesian_path(model, T_goal, tip, q0, max_step=0.005, avoid_collisions=cm)
    assert not rk.self_collisions(cm, result.q).in_collision.any()
    free = rk.cartesian_path(model, T_goal, tip, q0, max_step=0.005)
    if rk.self_collisions(cm, free.q).in_collision.any():
        assert result.status == 'in_collision' and result.fraction < 1.0 and 'self-collision' in result.message
    check_path(model, tip, result, fk(model, q0[None], tip)[0], T_goal)


def test_moveit_jump_thresholds_cut_the_path_as_moveit():
    """A path with one step much larger than the rest is cut at it (relative threshold) and the
    fraction scaled by (i + 1) / len, as MoveIt's checkRelativeJointSpaceJump."""
    from robokin_ros.cartesian.jumps import GroupJoints, JumpThresholds, check_jumps
    model = load('ur5e.urdf')
    Q = np.zeros((20, 6))
    Q[:, 0] = np.arange(20) * 0.01
    Q[12:, 0] += 0.5
    joints = GroupJoints.of(model, model.active_joints)
    kept, factor, why = check_jumps(Q, joints, JumpThresholds(relative=2.0))
    assert kept == 12 and factor == pytest.approx(12 / 20) and why
    kept, factor, _ = check_jumps(Q, joints, JumpThresholds(revolute=0.1))
    assert kept == 12 and factor == pytest.approx(12 / 20)
    assert check_jumps(Q[:9], joints, JumpThresholds(relative=0.5))[0] == 9   # fewer than 10 points: not tested


def test_scaling_and_cartesian_speed():
    model = load('ur5e.urdf')
    T0 = fk(model, UR_START[None], 'tool0')[0]
    T_goal = T0.copy()
    T_goal[:3, 3] += [0.0, 0.1, 0.0]
    fast = rk.cartesian_path(model, T_goal, 'tool0', UR_START, max_step=0.005)
    slow = rk.cartesian_path(model, T_goal, 'tool0', UR_START, max_step=0.005,
                             timing=rk.PathTiming(velocity_scaling=0.1, acceleration_scaling=0.1))
    check_path(model, 'tool0', slow, T0, T_goal, scaling=0.1)
    assert slow.times[-1] > 3 * fast.times[-1]
    for bad in (0.0, -1.0, 2.0, math.nan):
        same = rk.cartesian_path(model, T_goal, 'tool0', UR_START, max_step=0.005,
                                  timing=rk.PathTiming(velocity_scaling=bad))
        assert same.times[-1] == pytest.approx(fast.times[-1])
    capped = rk.cartesian_path(model, T_goal, 'tool0', UR_START, max_step=0.005,
                                timing=rk.PathTiming(max_cartesian_speed=0.01))
    p = fk(model, capped.q, 'tool0')[:, :3, 3]
    assert np.all(np.linalg.norm(np.diff(p, axis=0), axis=1) / np.diff(capped.times) <= 0.01 * (1 + 1e-6))


@pytest.mark.parametrize('kwargs,argument', [
    ({'max_step': 0.0}, 'max_step'), ({'max_step': math.nan}, 'max_step'), ({'max_step': -1.0}, 'max_step'),
    ({'jumps': rk.JumpThresholds(relative=-1.0)}, 'relative'),
    ({'jumps': rk.JumpThresholds(revolute=math.nan)}, 'revolute'),
    ({'options': rk.PathOptions(max_points=5)}, 'max_points'),
    ({'options': rk.PathOptions(max_deviation=0.0)}, 'max_deviation'),
    ({'waypoints': np.zeros((0, 4, 4))}, 'waypoints')])
def test_bad_arguments_raise_typed_errors(kwargs, argument):
    model = load('ur5e.urdf')
    T0 = fk(model, UR_START[None], 'tool0')[0]
    T_goal = T0.copy()
    T_goal[:3, 3] += [0.0, 0.1, 0.0]
    kwargs = {'waypoints': T_goal, 'max_step': 0.005, **kwargs}
    with pytest.raises(rk.ArgumentError, match=argument):
        rk.cartesian_path(model, kwargs.pop('waypoints'), 'tool0', UR_START, **kwargs)


def test_bad_waypoints_and_names():
    model = load('ur5e.urdf')
    T = np.eye(4)
    T[0, 0] = math.nan
    with pytest.raises(rk.NonFiniteError):
        rk.cartesian_path(model, T, 'tool0', UR_START)
    with pytest.raises(rk.InvalidTargetError):
        rk.cartesian_path(model, np.zeros((4, 4)), 'tool0', UR_START)
    with pytest.raises(rk.UnknownLinkError):
        rk.cartesian_path(model, np.eye(4), 'nope', UR_START)


def test_an_arm_under_six_dof_answers_honestly_and_follows_positions():
    """The 5-DOF SO-101: a line holding a generic orientation is followed no farther than the
    arm can hold it (fraction < 1, every returned point on the line and its orientation); with the
    rotation freed (axis_tolerances) the positions are followed whole, on the line."""
    model = rk.RobotModel.from_urdf_file(robots.path('so101_arm.urdf'))
    q0 = model.home_configuration()
    q0[:5] = [0.2, -0.4, 0.6, 0.5, 0.1]
    q0 = model.clamp(q0)
    T0 = fk(model, q0[None], 'tool')[0]
    T_goal = T0.copy()
    T_goal[:3, 3] += [0.0, 0.04, 0.02]
    held = rk.cartesian_path(model, T_goal, 'tool', q0, max_step=0.002)
    assert held.fraction < 1.0
    check_path(model, 'tool', held, T0, T_goal)
    free = rk.cartesian_path(model, T_goal, 'tool', q0, max_step=0.002,
                             options=rk.PathOptions(axis_tolerances=(0, 0, 0, np.inf, np.inf, np.inf)))
    assert free.fraction == 1.0, free.message
    P = fk(model, free.q, 'tool')[:, :3, 3]
    assert segment_distance(P, T0[:3, 3], T_goal[:3, 3]).max() <= 1e-4
    mid = fk(model, 0.5 * (free.q[1:] + free.q[:-1]), 'tool')[:, :3, 3]
    assert segment_distance(mid, T0[:3, 3], T_goal[:3, 3]).max() <= 1e-3
    assert np.all(model.within_limits(free.q, tolerance=1e-9))


def test_the_continuity_test_rejects_a_branch_switch_and_accepts_the_same_branch():
    """Two IK solutions of a pose 1 mm from the last point: the one on the last point's branch is
    joined continuously, the ones on other branches (elbow, wrist or shoulder flipped) are not."""
    from robokin_ros.cartesian.checks import StateChecks
    from robokin_ros.cartesian.tracking import Deviation, Tracker
    model = load('ur5e.urdf')
    tracker = Tracker(model, 'tool0', rk.IKOptions(), StateChecks(model, model.q_lower, model.q_upper), Deviation())
    T_a = fk(model, UR_START[None], 'tool0')[0]
    T_b = T_a.copy()
    T_b[:3, 3] += [0.0, 0.001, 0.0]
    found = rk.solve_ik(model, T_b, 'tool0', UR_START, solutions=8)
    Q = found.q[found.success]
    near = np.linalg.norm(Q - UR_START, axis=1) < 0.05
    assert near.sum() == 1 and (~near).sum() >= 3
    joined = tracker.continuous(UR_START, T_a, Q, np.repeat(T_b[None], len(Q), axis=0))
    assert np.array_equal(joined, near)


def test_rotation_deviation_against_known_rotations():
    from robokin_ros.cartesian.tracking import rotation_deviation
    from robokin_ros.spatial import rotation_about_axis
    z, x = np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0])
    R_a, R_b = np.eye(3)[None], rotation_about_axis(z, 0.2)[None]
    for R, expected in ((rotation_about_axis(z, 0.1), 0.0), (rotation_about_axis(z, 0.13), 0.03),
                        (rotation_about_axis(z, 0.1) @ rotation_about_axis(x, 0.02), 0.02)):
        assert rotation_deviation(R[None], R_a, R_b)[0] == pytest.approx(expected, abs=1e-7)


@pytest.mark.parametrize('name,tip', [('ur5e.urdf', 'tool0'), ('abb_irb6700.urdf', 'tool0')])
def test_certified_polylines_turning_the_tip_are_followed_whole(name, tip):
    """Three chained certified lines (each turning the tip up to 0.4 rad) as one request of
    three waypoints on a 6-DOF arm (one continuous solution from the start): fraction 1.0, each
    point on its own segment, the fraction of MoveIt's definition at every waypoint."""
    from cartesian_oracle import track_line
    model = load(name)
    rng = np.random.default_rng(11)
    done = 0
    for _ in range(60):
        q0, T1, path1 = random_feasible_line(model, tip, rng, length=(0.05, 0.15), rotation=0.4)
        goals, q, ok = [T1], path1[-1], True
        for _ in range(2):
            T = fk(model, q[None], tip)[0]
            d = rng.normal(size=3)
            G = T.copy()
            G[:3, 3] += d / np.linalg.norm(d) * rng.uniform(0.05, 0.15)
            oracle = track_line(model, tip, q, G)
            if oracle is None:
                ok = False
                break
            goals.append(G)
            q = oracle[-1]
        if not ok:
            continue
        result = rk.cartesian_path(model, np.array(goals), tip, q0, max_step=0.005)
        assert result.fraction == 1.0, result.message
        starts = [fk(model, q0[None], tip)[0]] + goals[:-1]
        for w in range(3):
            rows = np.flatnonzero(result.waypoint == w)
            P = fk(model, result.q[rows], tip)[:, :3, 3]
            a = fk(model, result.q[rows[0] - 1:rows[0]], tip)[0, :3, 3]
            assert segment_distance(P, a, goals[w][:3, 3]).max() <= 1e-4
            assert np.linalg.norm(starts[w][:3, 3] - a) <= 1e-6
        done += 1
        if done == 3:
            break
    assert done == 3


def test_a_coarse_max_step_is_refined_until_every_midpoint_is_on_the_line():
    """max_step 0.5 m on a 22 cm line: MoveIt's one step would join two points whose joint-space
    midpoint leaves the line by centimetres; the pair is halved until every midpoint is within 1 mm."""
    model = load('ur5e.urdf')
    T0 = fk(model, UR_START[None], 'tool0')[0]
    T_goal = T0.copy()
    T_goal[:3, 3] += [0.0, 0.2, 0.1]
    direct = fk(model, 0.5 * (UR_START + rk.cartesian_path(model, T_goal, 'tool0', UR_START,
                                                           max_step=0.01).q[-1])[None], 'tool0')[0]
    assert segment_distance(direct[None, :3, 3], T0[:3, 3], T_goal[:3, 3])[0] > 1e-3   # one step would leave it
    result = rk.cartesian_path(model, T_goal, 'tool0', UR_START, max_step=0.5)
    assert result.fraction == 1.0 and len(result.q) > 2
    check_path(model, 'tool0', result, T0, T_goal)
