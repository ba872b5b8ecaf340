"""Messages of the servo node: incoming commands (``TwistStamped``, ``control_msgs/JointJog``,
``PoseStamped``) into the core's servo commands, and the commands out (``JointTrajectory`` or
``Float64MultiArray``) and ``moveit_msgs/ServoStatus``.

A message the node cannot use raises :class:`~robokin_ros.node.conversions.InvalidMessageError`
naming the field; values the servo itself checks (NaN twists, unknown frames and joints) pass
through and come back as an INVALID cycle.
"""

from __future__ import annotations

import numpy as np
from builtin_interfaces.msg import Duration
from control_msgs.msg import JointJog
from geometry_msgs.msg import PoseStamped, TwistStamped
from moveit_msgs.msg import ServoStatus as ServoStatusMsg
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..servo import JointJogCommand, PoseCommand, ServoParameters, ServoStatus, TwistCommand
from .conversions import InvalidMessageError, pose_to_matrix, strip_prefix

#: The most joints a JointJog may name (a larger message is refused before it is read).
MAX_JOG_JOINTS = 1000
#: The longest frame name read from a header.
MAX_FRAME = 256


def frame_of(header_frame: str, prefix: str) -> str | None:
    """The link a command's ``header.frame_id`` names (``frame_prefix`` removed); None: empty."""
    if len(header_frame) > MAX_FRAME:
        raise InvalidMessageError(f'header.frame_id of {len(header_frame)} characters')
    frame = strip_prefix(header_frame, prefix)
    return frame or None


def twist_command(msg: TwistStamped, prefix: str) -> TwistCommand:
    """The servo command of a ``TwistStamped`` (in its ``header.frame_id``'s axes)."""
    t = msg.twist
    return TwistCommand(linear=(t.linear.x, t.linear.y, t.linear.z), angular=(t.angular.x, t.angular.y, t.angular.z),
                        frame=frame_of(msg.header.frame_id, prefix))


def joint_jog_command(msg: JointJog) -> JointJogCommand:
    """The servo command of a ``JointJog`` (its ``velocities``; ``displacements`` are not used, as
    in MoveIt Servo)."""
    if len(msg.joint_names) > MAX_JOG_JOINTS:
        raise InvalidMessageError(f'JointJog names {len(msg.joint_names)} joints (at most {MAX_JOG_JOINTS})')
    if len(msg.velocities) != len(msg.joint_names):
        raise InvalidMessageError(f'JointJog has {len(msg.joint_names)} joint_names and '
                                  f'{len(msg.velocities)} velocities')
    return JointJogCommand(names=tuple(msg.joint_names), velocities=tuple(np.asarray(msg.velocities, dtype=float)))


def pose_command(msg: PoseStamped, prefix: str) -> PoseCommand:
    """The servo command of a ``PoseStamped`` (the tip's wanted pose in ``header.frame_id``)."""
    return PoseCommand(pose=pose_to_matrix(msg.pose, 'pose'), frame=frame_of(msg.header.frame_id, prefix))


def status_message(status: ServoStatus) -> ServoStatusMsg:
    msg = ServoStatusMsg()
    msg.code = int(status.code)
    msg.message = status.message
    return msg


def command_message(parameters: ServoParameters, names: tuple, positions: np.ndarray, velocities: np.ndarray,
                    stamp) -> JointTrajectory | Float64MultiArray:
    """The command out, as ``command_out_type`` says: a one-point ``JointTrajectory`` (positions,
    velocities, accelerations as ``publish_joint_*`` say; ``time_from_start`` one period), or a
    ``Float64MultiArray`` of the positions (velocities when ``publish_joint_positions`` is off)."""
    if parameters.command_out_type == 'std_msgs/Float64MultiArray':
        msg = Float64MultiArray()
        msg.data = (positions if parameters.publish_joint_positions else velocities).tolist()
        return msg
    point = JointTrajectoryPoint()
    if parameters.publish_joint_positions:
        point.positions = positions.tolist()
    if parameters.publish_joint_velocities:
        point.velocities = velocities.tolist()
    if parameters.publish_joint_accelerations:
        point.accelerations = [0.0] * len(names)
    seconds = parameters.publish_period
    point.time_from_start = Duration(sec=int(seconds), nanosec=int(round((seconds % 1.0) * 1e9)))
    msg = JointTrajectory()
    msg.header.stamp = stamp
    msg.joint_names = list(names)
    msg.points = [point]
    return msg


def message_type(parameters: ServoParameters):
    """The class of the command out."""
    return Float64MultiArray if parameters.command_out_type == 'std_msgs/Float64MultiArray' else JointTrajectory
