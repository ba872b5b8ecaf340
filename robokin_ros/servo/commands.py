"""The three kinds of servo command (MoveIt Servo's ``TwistCommand``, ``JointJogCommand`` and
``PoseCommand``), as plain values: what :meth:`robokin_ros.servo.Servo.step` follows.

A command is checked when a cycle uses it, against the servo's model and group: a problem (a NaN,
an unknown frame or joint, lengths that differ) makes that cycle an ``INVALID`` one, without
motion from it; nothing raises.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

import numpy as np


class CommandType(enum.IntEnum):
    """``moveit_msgs/srv/ServoCommandType`` request constants."""

    JOINT_JOG = 0
    TWIST = 1
    POSE = 2


@dataclass(frozen=True)
class TwistCommand:
    """Move the tip with this twist.

    Attributes:
        linear: ``(3,)`` linear velocity of the tip's origin [m/s] (unitless: fraction of
            ``scale.linear``).
        angular: ``(3,)`` angular velocity [rad/s] (unitless: fraction of ``scale.rotational``).
        frame: the link whose axes the twist is written in; None or the group's base: the
            planning frame; the tip: the end effector's own axes.
    """

    linear: tuple = (0.0, 0.0, 0.0)
    angular: tuple = (0.0, 0.0, 0.0)
    frame: str | None = None

    kind = CommandType.TWIST


@dataclass(frozen=True)
class JointJogCommand:
    """Move these joints at these velocities (the others of the group stay still).

    Attributes:
        names: joint names of the group.
        velocities: one per name [rad/s or m/s] (unitless: fraction of ``scale.joint``).
    """

    names: tuple = ()
    velocities: tuple = ()

    kind = CommandType.JOINT_JOG


@dataclass(frozen=True)
class PoseCommand:
    """Bring the tip to this pose (a proportional approach, speed capped by ``scale.linear`` and
    ``scale.rotational``, slowing down to the target without overshoot).

    Attributes:
        pose: ``(4, 4)`` ``T_frame_tip`` wanted.
        frame: the link the pose is given in; None: the planning frame (the group's base). The
            pose is put in the planning frame when the command is first used (a pose in the tip's
            frame is a move relative to where the tip was then).
    """

    pose: np.ndarray = field(default_factory=lambda: np.eye(4))
    frame: str | None = None

    kind = CommandType.POSE


Command = TwistCommand | JointJogCommand | PoseCommand
