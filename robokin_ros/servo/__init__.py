"""Servo: jog one group of an arm by twist, joint or pose commands, cycle by cycle (MoveIt Servo's
commands, parameters and status codes; ROS-free). See docs/servo.md.

    servo = rk.Servo(model, "tool0")
    q, velocity, status = servo.step(q, rk.servo.TwistCommand(linear=(0.1, 0, 0)), dt=0.002)
"""

from .commands import CommandType, JointJogCommand, PoseCommand, TwistCommand
from .law import damped_solve, singularity_scale
from .limits import GroupLimits
from .parameters import COMMAND_IN_TYPES, COMMAND_OUT_TYPES
from .parameters import ServoParameters as ServoParameters
from .servo import Servo as Servo
from .servo import ServoStep
from .status import ServoStatus as ServoStatus
from .status import StatusCode

# Servo, ServoParameters and ServoStatus are documented on the package face (robokin_ros).
__all__ = ["COMMAND_IN_TYPES", "COMMAND_OUT_TYPES", "CommandType", "GroupLimits", "JointJogCommand", "PoseCommand",
           "ServoStep", "StatusCode", "TwistCommand", "damped_solve", "singularity_scale"]
