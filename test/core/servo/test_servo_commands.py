"""Servo commands that cannot be followed (NaN, unknown frames and joints, wrong lengths), pause,
parameters and construction errors: no motion from a bad command, INVALID, nothing raised."""

from __future__ import annotations

import numpy as np
import pytest

import robokin_ros as rk
from robokin_ros.servo import JointJogCommand, PoseCommand, ServoParameters, StatusCode, TwistCommand

from .harness import bundled, run

DT = 0.002


@pytest.fixture(scope="module")
def panda():
    return bundled("panda.urdf")


def ready(model):
    """The Panda's "ready" pose (panda.srdf), away from singularities and limits."""
    return model.q_from_dict({"panda_joint2": -0.785, "panda_joint4": -2.356, "panda_joint6": 1.571,
                              "panda_joint7": 0.785})


BAD = [TwistCommand(linear=(np.nan, 0, 0)), TwistCommand(angular=(0, np.inf, 0)), TwistCommand(linear=(1, 2)),
       TwistCommand(linear=(0.1, 0, 0), frame="no_such_link"), TwistCommand(linear=("a", 0, 0)),
       JointJogCommand(names=("panda_joint1", "panda_joint2"), velocities=(0.1,)),
       JointJogCommand(names=("nope",), velocities=(0.1,)), JointJogCommand(names=("panda_finger_joint1",), velocities=(0.1,)),
       PoseCommand(pose=np.full((4, 4), np.nan)), PoseCommand(pose=np.zeros((4, 4))), PoseCommand(pose=np.eye(3)),
       PoseCommand(pose=np.eye(4), frame="nowhere"), "twist please"]


@pytest.mark.parametrize("command", BAD, ids=[str(i) for i in range(len(BAD))])
def test_a_bad_command_moves_nothing_and_says_invalid(panda, command):
    servo = rk.Servo(panda, "panda_hand_tcp")
    q = ready(panda)
    q_next, velocity, status = servo.step(q, command, DT)
    assert status.code == StatusCode.INVALID and status.message
    assert np.array_equal(q_next, q) and not velocity.any()


def test_a_bad_command_while_moving_brakes_at_the_acceleration_limits(panda):
    servo = rk.Servo(panda, "panda_hand_tcp")
    q = ready(panda)
    record, _ = run(servo, q, [TwistCommand(linear=(0.5, 0, 0))] * 50 + [TwistCommand(linear=(np.nan, 0, 0))] * 5, DT)
    v = np.array(record.velocity)
    assert record.status[-1].code == StatusCode.INVALID
    assert np.abs(v[-1]).sum() < np.abs(v[49]).sum()
    assert (np.abs(np.diff(v, axis=0)) <= servo.limits.acceleration * DT * (1 + 1e-9)).all()


def test_pause_stops_and_resumes(panda):
    servo = rk.Servo(panda, "panda_hand_tcp")
    q = ready(panda)
    twist = TwistCommand(linear=(0.5, 0, 0))
    record, q = run(servo, q, [twist] * 50, DT)
    servo.paused = True
    record, q = run(servo, q, [twist] * 200, DT)
    assert not record.velocity[-1].any() and record.status[-1].message == "paused"
    servo.paused = False
    record, _ = run(servo, q, [twist] * 5, DT)
    assert record.velocity[-1].any()


def test_unitless_commands_scale_by_moveits_scale_parameters(panda):
    params = ServoParameters.from_dict({"scale.joint": 0.25})
    servo = rk.Servo(panda, "panda_hand_tcp", parameters=params)
    q = ready(panda)
    record, _ = run(servo, q, [JointJogCommand(names=("panda_joint1",), velocities=(1.0,))] * 100, DT)
    assert record.velocity[-1][0] == pytest.approx(0.25)


def test_parameters_are_checked_and_named_as_in_moveit():
    assert "scale.linear" in ServoParameters.names() and "incoming_command_timeout" in ServoParameters.names()
    with pytest.raises(rk.ArgumentError, match="command_in_type"):
        ServoParameters(command_in_type="fast")
    with pytest.raises(rk.ArgumentError, match="scale.rotation"):
        ServoParameters.from_dict({"scale.rotation": 1.0})
    with pytest.raises(rk.ArgumentError, match="publish_period"):
        ServoParameters(publish_period=float("nan"))
    with pytest.raises(rk.ArgumentError, match="hard_stop"):
        ServoParameters(hard_stop_singularity_threshold=1.0)


def test_construction_errors_name_the_culprit(panda):
    with pytest.raises(rk.UnknownLinkError):
        rk.Servo(panda, "no_tip")
    with pytest.raises(rk.ArgumentError, match="joint_limit_margins"):
        rk.Servo(panda, "panda_hand_tcp", parameters={"joint_limit_margins": [0.1, 0.2]})
    servo = rk.Servo(panda, "panda_hand_tcp")
    with pytest.raises(rk.ShapeError):
        servo.step(np.zeros(3))
    with pytest.raises(rk.NonFiniteError):
        servo.step(np.full(panda.n_q, np.nan))
    with pytest.raises(rk.ArgumentError, match="dt"):
        servo.step(panda.home_configuration(), None, -1.0)


def test_a_robot_without_servo_settings_gets_derived_defaults(panda):
    servo = rk.Servo(panda)   # the default group's tip, the root as planning frame
    assert servo.tip == "panda_hand_tcp" and servo.base == panda.link_names[0]
    assert servo.joint_names == tuple(f"panda_joint{i}" for i in range(1, 8))
    assert np.allclose(servo.limits.acceleration, servo.parameters.default_acceleration_per_velocity * servo.limits.velocity)


def test_a_pose_in_the_tip_frame_is_a_move_from_where_the_tip_was(panda):
    servo = rk.Servo(panda, "panda_hand_tcp", parameters={"command_in_type": "speed_units"})
    q = ready(panda)
    start = rk.frame_transform(panda, q, "panda_link0", "panda_hand_tcp")
    move = np.eye(4)
    move[:3, 3] = [0.0, 0.0, 0.04]   # 4 cm along the tool's z
    record, q_end = run(servo, q, [PoseCommand(pose=move, frame="panda_hand_tcp")] * 1000, DT)
    end = rk.frame_transform(panda, q_end, "panda_link0", "panda_hand_tcp")
    assert np.linalg.norm(end[:3, 3] - (start @ move)[:3, 3]) < 1e-3
    assert np.linalg.norm(rk.spatial.log_so3(end[:3, :3] @ start[:3, :3].T)) < 0.01
