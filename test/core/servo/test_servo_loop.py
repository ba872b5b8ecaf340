"""Closed loop: the servo's output integrated into joint states on bundled and corpus arms; the
tip's achieved twist (forward-kinematics differences) against the commanded one, limits,
singularities, pose targets, stale commands. Time is simulated (cycles of dt), never measured."""

from __future__ import annotations

import numpy as np
import pytest

import robokin_ros as rk
from robokin_ros.servo import JointJogCommand, PoseCommand, StatusCode, TwistCommand

from .harness import (
    BUNDLED,
    CORPUS_ARMS,
    SMALL,
    angle_between,
    base_tip,
    bundled,
    corpus,
    limit_violations,
    run,
    scaled_jacobian,
    twist_between,
    well_conditioned,
)

DT = 0.002
SPEED = {"command_in_type": "speed_units"}
#: Twists [linear m/s; angular rad/s] in the planning frame: pure, mixed and rotating.
TWISTS = [(0.05, 0.0, 0.0, 0.0, 0.0, 0.0), (0.0, -0.04, 0.03, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 0.0, 0.0, 0.3),
          (0.03, 0.02, -0.02, 0.1, -0.1, 0.0)]


def arms():
    return ([pytest.param(("bundled", file, tip), id=file) for file, tip in BUNDLED]
            + [pytest.param(("corpus", name, None), id=name) for name in CORPUS_ARMS])


def load(arm):
    kind, name, tip = arm
    return (bundled(name), tip) if kind == "bundled" else corpus(name)


def follow(servo, q0, twist, seconds=0.4, frame=None):
    """Run a constant twist; return the record and the achieved twists of the last half."""
    command = TwistCommand(linear=twist[:3], angular=twist[3:], frame=frame)
    steps = int(seconds / DT)
    record, _ = run(servo, q0, [command] * steps, DT)
    achieved = [twist_between(servo, record.q[k], record.q[k + 1], DT) for k in range(steps // 2, steps)]
    return record, np.array(achieved)


def check_following(achieved: np.ndarray, wanted: np.ndarray, what: str):
    for part, rows in (("linear", slice(0, 3)), ("angular", slice(3, 6))):
        if np.linalg.norm(wanted[rows]) < 1e-9:
            assert np.abs(achieved[:, rows]).max() < 0.02 * np.linalg.norm(wanted), (what, part)
            continue
        for a in achieved:
            error = angle_between(a[rows], wanted[rows])
            ratio = np.linalg.norm(a[rows]) / np.linalg.norm(wanted[rows])
            assert error <= 2.0, f"{what}: {part} direction error {error:.2f} deg"
            assert 0.9 <= ratio <= 1.05, f"{what}: {part} speed ratio {ratio:.3f}"


@pytest.mark.parametrize("arm", arms())
def test_constant_twists_are_followed_from_well_conditioned_states(arm):
    model, tip = load(arm)
    servo = rk.Servo(model, tip, parameters=SPEED)
    q0 = well_conditioned(servo)
    for twist in TWISTS:
        servo.reset()
        record, achieved = follow(servo, q0, np.array(twist))
        check_following(achieved, np.array(twist), f"{tip} {twist}")
        assert set(record.codes()) == {StatusCode.NO_WARNING}
        assert not any(limit_violations(servo, record, DT).values())


def test_a_twist_in_the_tip_frame_is_followed_in_the_tips_axes():
    model = bundled("panda.urdf")
    servo = rk.Servo(model, "panda_hand_tcp", parameters=SPEED)
    q0 = well_conditioned(servo)
    local = np.array([0.0, 0.0, 0.04, 0.0, 0.0, 0.2])   # along and about the tool's z
    record, achieved = follow(servo, q0, local, frame="panda_hand_tcp")
    for k, a in enumerate(achieved):
        R = base_tip(servo, record.q[len(record.q) // 2 + k])[:3, :3]
        assert angle_between(a[:3], R @ local[:3]) <= 2.0
        assert angle_between(a[3:], R @ local[3:]) <= 2.0


@pytest.mark.parametrize("file, tip", SMALL)
def test_arms_under_6_dof_follow_the_achievable_projection_without_halting(file, tip):
    model = bundled(file)
    servo = rk.Servo(model, tip, parameters=SPEED)
    q0 = well_conditioned(servo)
    weights = np.array([1 / servo.length] * 3 + [1.0] * 3)
    rng = np.random.default_rng(1)
    for twist in list(TWISTS) + [tuple(rng.normal(size=6) * np.array([0.03] * 3 + [0.15] * 3)) for _ in range(4)]:
        servo.reset()
        twist = np.array(twist)
        record, achieved = follow(servo, q0, twist)
        codes = record.codes()
        assert StatusCode.HALT_FOR_SINGULARITY not in codes and StatusCode.INVALID not in codes
        steps = len(record.velocity)
        for k, a in zip(range(steps // 2, steps), achieved):
            J = scaled_jacobian(servo, record.q[k])           # finite-difference oracle
            x = twist * weights
            projected = J @ np.linalg.lstsq(J, x, rcond=None)[0]
            if np.linalg.norm(projected) < 0.05 * np.linalg.norm(x):
                continue   # nothing achievable in this direction
            assert angle_between(a * weights, projected) <= 2.0
            assert 0.9 <= np.linalg.norm(a * weights) / np.linalg.norm(projected) <= 1.05
        residual = np.linalg.norm(x - projected) / np.linalg.norm(x)
        if residual > 0.01:
            assert "achievable projection" in record.status[-1].message
        assert not any(limit_violations(servo, record, DT).values())


def outward_twist(servo, q, speed=0.3):
    """A linear twist pointing from the group's first joint to the tip (towards full stretch)."""
    model = servo.model
    poses = rk.forward_kinematics(model, q)
    base = np.linalg.inv(poses[model.link_index(servo.base)])
    first = model.link_names[model.joint_index(servo.joint_names[1]) + 1]
    p_tip = (base @ poses[model.link_index(servo.tip)])[:3, 3]
    p_shoulder = (base @ poses[model.link_index(first)])[:3, 3]
    d = (p_tip - p_shoulder) / np.linalg.norm(p_tip - p_shoulder)
    return np.concatenate([speed * d, np.zeros(3)])


@pytest.mark.parametrize("file, tip, codes", [
    ("ur5e.urdf", "tool0", {StatusCode.DECELERATE_FOR_APPROACHING_SINGULARITY}),
    # the Panda's elbow (joint 4, upper limit -0.07) stops it short of full stretch
    ("panda.urdf", "panda_hand_tcp", {StatusCode.DECELERATE_FOR_APPROACHING_SINGULARITY, StatusCode.JOINT_BOUND})])
def test_driving_into_full_stretch_slows_down_smoothly(file, tip, codes):
    model = bundled(file)
    servo = rk.Servo(model, tip, parameters=SPEED)
    q0 = well_conditioned(servo)
    twist = outward_twist(servo, q0)
    command = TwistCommand(linear=twist[:3], angular=twist[3:])
    record, q_end = run(servo, q0, [command] * 2000, DT)
    violations = limit_violations(servo, record, DT)
    assert not any(violations.values()), violations
    assert codes & set(record.codes()), set(record.codes())
    final = twist_between(servo, record.q[-2], record.q[-1], DT)
    assert np.linalg.norm(final[:3]) < 0.5 * np.linalg.norm(twist[:3])   # slowed down
    assert np.isfinite(q_end).all()


def test_driving_into_a_wrist_singularity_slows_down_smoothly():
    model = bundled("ur5e.urdf")
    servo = rk.Servo(model, "tool0", parameters=SPEED)
    q0 = np.array([0.0, -1.6, 1.6, -1.6, 0.35, 0.0])   # wrist_2 near 0: wrist axes 1 and 3 near alignment
    J = np.array([twist_between(servo, q0, q0 + dq, 1.0) for dq in np.eye(6) * 1e-6]).T * 1e6
    twist = -0.5 * J[:, 4]   # what wrist_2 moving towards 0 at 0.5 rad/s would do
    command = TwistCommand(linear=twist[:3], angular=twist[3:])
    record, q_end = run(servo, q0, [command] * 1500, DT)
    violations = limit_violations(servo, record, DT)
    assert not any(violations.values()), violations
    assert StatusCode.DECELERATE_FOR_APPROACHING_SINGULARITY in record.codes()
    _, v = record.arrays()
    assert np.abs(v[-1]).max() < 0.1 * np.abs(v).max()   # came to (near) rest, braking at the limits
    assert abs(q_end[4]) > 1e-3   # short of the singularity itself


@pytest.mark.parametrize("file, tip", BUNDLED + SMALL)
def test_a_pose_target_5_cm_away_converges_without_overshoot(file, tip):
    model = bundled(file)
    servo = rk.Servo(model, tip, parameters=SPEED)
    q0 = well_conditioned(servo)
    start = base_tip(servo, q0)
    target = start.copy()
    offset = np.array([0.03, -0.03, 0.0265])   # 5 cm
    target[:3, 3] += offset
    if len(servo.joint_names) >= 6:
        target[:3, :3] = rk.spatial.exp_so3(np.array([0.0, 0.0, 0.1])) @ start[:3, :3]
    else:   # an arm under 6 DOF: its own orientation at a reachable nearby configuration
        q_goal = q0.copy()
        q_goal[servo._q_index] += 0.15   # noqa: SLF001
        target = base_tip(servo, q_goal)
        offset = target[:3, 3] - start[:3, 3]
    record, q_end = run(servo, q0, [PoseCommand(pose=target)] * int(2.0 / DT), DT)
    end = base_tip(servo, q_end)
    assert np.linalg.norm(end[:3, 3] - target[:3, 3]) <= 1e-3
    assert np.linalg.norm(rk.spatial.log_so3(end[:3, :3] @ target[:3, :3].T)) <= 0.01
    along = [(base_tip(servo, q)[:3, 3] - target[:3, 3]) @ offset / np.linalg.norm(offset) for q in record.q]
    assert max(along) <= 1e-4   # never past the target along the approach
    assert not any(limit_violations(servo, record, DT).values())


def test_a_stale_command_stops_the_motion():
    model = bundled("panda.urdf")
    timeout = 0.1
    servo = rk.Servo(model, "panda_hand_tcp", parameters={**SPEED, "incoming_command_timeout": timeout})
    q0 = well_conditioned(servo)
    command = TwistCommand(linear=(0.05, 0.0, 0.0))
    steps = 100
    record, _ = run(servo, q0, [command] * steps + [None] * 200, DT)
    _, v = record.arrays()
    speed = np.abs(v).max(axis=1)
    stale_after = steps - 1 + round(timeout / DT)   # the last cycle the command is fresh
    # Within timeout + 2 periods the motion is stopping: every later cycle slower than the last.
    later = speed[stale_after + 2:]
    assert (np.diff(later) <= 1e-12).all() and later[0] < speed[stale_after]
    brake = max(np.abs(v[stale_after]) / servo.limits.acceleration) / DT
    assert (speed[stale_after + 2 + int(np.ceil(brake)):] == 0).all()
    assert not any(limit_violations(servo, record, DT).values())


def test_joint_jog_stops_before_a_position_limit():
    model = bundled("panda.urdf")
    servo = rk.Servo(model, "panda_hand_tcp", parameters=SPEED)
    q0 = model.home_configuration()
    q0[model.joint_names.index("panda_joint4")] = -2.0
    jog = JointJogCommand(names=("panda_joint4",), velocities=(2.0,))
    record, q_end = run(servo, q0, [jog] * 3000, DT)
    assert not any(limit_violations(servo, record, DT).values())
    j = model.joint_names.index("panda_joint4")
    assert q_end[j] <= model.joint_upper[model.joint_index("panda_joint4")] - 0.1 + 1e-9
    assert StatusCode.JOINT_BOUND in record.codes()


@pytest.mark.parametrize("file, tip", BUNDLED + SMALL)
def test_random_commands_never_break_a_limit(file, tip):
    model = bundled(file)
    servo = rk.Servo(model, tip)
    rng = np.random.default_rng(3)
    q = model.random_configuration(rng=rng)
    commands = []
    for _ in range(30):
        kind = rng.integers(3)
        if kind == 0:
            c = TwistCommand(linear=tuple(rng.uniform(-1, 1, 3)), angular=tuple(rng.uniform(-1, 1, 3)))
        elif kind == 1:
            c = JointJogCommand(names=servo.joint_names, velocities=tuple(rng.uniform(-1, 1, len(servo.joint_names))))
        else:
            c = None
        commands += [c] * 50
    record, q_end = run(servo, q, commands, DT)
    assert not any(limit_violations(servo, record, DT).values())


def test_motion_towards_self_collision_slows_down():
    pytest.importorskip("coal", reason="coal (self-collision) is not installed")
    from robokin_ros import robots
    model = bundled("panda.urdf")
    cm = rk.CollisionModel.build(model, srdf=robots.path("panda.srdf").read_text())
    servo = rk.Servo(model, "panda_hand_tcp", collision=cm, parameters={
        **SPEED, "self_collision_proximity_threshold": 0.1, "collision_check_rate": 1.0 / DT})
    q0 = model.q_from_dict({"panda_joint2": -0.785, "panda_joint4": -2.356, "panda_joint6": 1.571,
                            "panda_joint7": 0.785})
    jog = JointJogCommand(names=("panda_joint4",), velocities=(-1.0,))   # folds the elbow: the hand nears the arm
    record, q_end = run(servo, q0, [jog] * 600, DT)
    codes = record.codes()
    assert StatusCode.DECELERATE_FOR_COLLISION in codes
    slowed = [s.scale for s in record.status if s.code == StatusCode.DECELERATE_FOR_COLLISION]
    assert min(slowed) < 0.9
    distances = rk.self_collisions(cm, np.array(record.q), distance=False).in_collision
    assert not distances.any()
    assert not any(limit_violations(servo, record, DT).values())
