"""The servo's parameters: MoveIt Servo's names and meanings where they apply
(``moveit_servo/config/servo_parameters.yaml``), with defaults that work on a robot without any
servo YAML (the limits come from the URDF; what it lacks is derived).

:meth:`ServoParameters.from_dict` reads MoveIt's dotted names (``scale.linear``); the fields
spell them with underscores. Every value is checked when the parameters are made
(:class:`~robokin_ros.errors.ArgumentError` naming the parameter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

from ..errors import ArgumentError

#: ``command_in_type`` values: commands in [-1, 1] scaled by ``scale.*``, or in SI units.
COMMAND_IN_TYPES = ("unitless", "speed_units")
#: ``command_out_type`` values (the node's output message).
COMMAND_OUT_TYPES = ("trajectory_msgs/JointTrajectory", "std_msgs/Float64MultiArray")
#: MoveIt's dotted parameter names -> field names.
DOTTED = {"scale.linear": "scale_linear", "scale.rotational": "scale_rotational", "scale.joint": "scale_joint"}
_MOVEIT_NAMES = {field: dotted for dotted, field in DOTTED.items()}


@dataclass(frozen=True)
class ServoParameters:
    """Servo parameters (MoveIt Servo's names; ours where MoveIt has none are marked).

    Attributes:
        move_group_name: the group to move ("": the robot's default group).
        planning_frame: frame of twist and pose commands without a frame ("": the group's base).
        ee_frame: the tip ("": the group's tip).
        command_in_type: ``unitless`` (commands in [-1, 1] times ``scale.*``) or ``speed_units``.
        scale_linear: ``scale.linear``, m/s of a unitless linear 1.0.
        scale_rotational: ``scale.rotational``, rad/s of a unitless angular 1.0.
        scale_joint: ``scale.joint``, rad/s of a unitless joint jog 1.0.
        publish_period: seconds between commands out (the node's cycle).
        incoming_command_timeout: a command older than this [s] stops the motion.
        joint_limit_margins: margin [rad or m] kept inside each position limit (one value for all,
            or one per group joint).
        lower_singularity_threshold: condition number where slowing down starts.
        hard_stop_singularity_threshold: condition number where motion towards the singularity
            has slowed to zero.
        leaving_singularity_threshold_multiplier: the hard threshold is this much higher when
            moving away from a singularity (a gentler slow-down).
        command_out_type: ``trajectory_msgs/JointTrajectory`` or ``std_msgs/Float64MultiArray``.
        command_out_topic: where the node publishes the commands.
        publish_joint_positions, publish_joint_velocities, publish_joint_accelerations: what a
            JointTrajectory point carries (a Float64MultiArray carries positions, or velocities
            when positions are off).
        check_collisions: slow down near self-collision (needs coal).
        self_collision_proximity_threshold: distance [m] under which motion towards contact slows
            (HALT only at contact).
        collision_check_rate: self-collision checks per second (simulated time).
        status_topic: where the node publishes ServoStatus.
        joint_topic: the joint states the node reads.
        default_velocity_limit: ours: [rad/s or m/s] for a joint whose URDF gives none.
        default_acceleration_per_velocity: ours: a joint without a URDF ``acceleration`` gets
            this many times its velocity limit per second [1/s] (full speed in 1/this s).
        pose_gain: ours: the pose command's proportional gain [1/s].
        singularity_damping: ours: the largest damping of the damped least squares, as a fraction
            of the largest singular value (reached at a singularity; none above
            ``lower_singularity_threshold``).
    """

    move_group_name: str = ""
    planning_frame: str = ""
    ee_frame: str = ""
    command_in_type: str = "unitless"
    scale_linear: float = 0.4
    scale_rotational: float = 0.8
    scale_joint: float = 0.5
    publish_period: float = 0.01
    incoming_command_timeout: float = 0.1
    joint_limit_margins: tuple = (0.1,)
    lower_singularity_threshold: float = 17.0
    hard_stop_singularity_threshold: float = 30.0
    leaving_singularity_threshold_multiplier: float = 2.0
    command_out_type: str = "trajectory_msgs/JointTrajectory"
    command_out_topic: str = "~/joint_trajectory"
    publish_joint_positions: bool = True
    publish_joint_velocities: bool = True
    publish_joint_accelerations: bool = False
    check_collisions: bool = False
    self_collision_proximity_threshold: float = 0.01
    collision_check_rate: float = 10.0
    status_topic: str = "~/status"
    joint_topic: str = "/joint_states"
    default_velocity_limit: float = 1.0
    default_acceleration_per_velocity: float = 5.0
    pose_gain: float = 5.0
    singularity_damping: float = 0.05

    def __post_init__(self):
        _check_choice("command_in_type", self.command_in_type, COMMAND_IN_TYPES)
        _check_choice("command_out_type", self.command_out_type, COMMAND_OUT_TYPES)
        for name in ("scale_linear", "scale_rotational", "scale_joint", "publish_period", "incoming_command_timeout",
                     "lower_singularity_threshold", "default_velocity_limit", "default_acceleration_per_velocity",
                     "pose_gain", "collision_check_rate"):
            _check_positive(name, getattr(self, name))
        _check_positive("self_collision_proximity_threshold", self.self_collision_proximity_threshold)
        if not self.hard_stop_singularity_threshold > self.lower_singularity_threshold:
            raise ArgumentError("hard_stop_singularity_threshold",
                                f"{self.hard_stop_singularity_threshold!r} must exceed lower_singularity_threshold "
                                f"{self.lower_singularity_threshold!r}")
        if not self.leaving_singularity_threshold_multiplier >= 1.0:
            raise ArgumentError("leaving_singularity_threshold_multiplier", "must be a number >= 1")
        if not 0.0 <= self.singularity_damping <= 1.0:
            raise ArgumentError("singularity_damping", "must be a number in [0, 1]")
        margins = self.joint_limit_margins
        margins = (margins,) if isinstance(margins, (int, float)) else tuple(margins)
        if not margins or not all(_number(m) and m >= 0 for m in margins):
            raise ArgumentError("joint_limit_margins", f"must be numbers >= 0, got {margins!r}")
        object.__setattr__(self, "joint_limit_margins", tuple(float(m) for m in margins))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every parameter's name as MoveIt spells it (dotted where MoveIt's is)."""
        fields_to_dotted = {v: k for k, v in DOTTED.items()}
        return tuple(fields_to_dotted.get(f.name, f.name) for f in fields(cls))

    @classmethod
    def from_dict(cls, values: dict) -> ServoParameters:
        """Parameters from ``{name: value}`` with MoveIt's names (``scale.linear``) or the field
        names; an unknown name is an :class:`ArgumentError` naming it."""
        return cls().updated(values)

    def updated(self, values: dict) -> ServoParameters:
        """These parameters with ``values`` (as :meth:`from_dict`) replacing some."""
        known = {f.name for f in fields(self)}
        changes = {}
        for name, value in values.items():
            key = DOTTED.get(name, name)
            if key not in known:
                raise ArgumentError(str(name), f"not a servo parameter; known: {', '.join(self.names())}")
            changes[key] = value
        return replace(self, **changes)

    def as_dict(self) -> dict:
        """``{MoveIt name: value}`` of every parameter."""
        return dict(zip(self.names(), (getattr(self, f.name) for f in fields(self))))


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_positive(name: str, value) -> None:
    if not (_number(value) and value > 0):
        raise ArgumentError(_MOVEIT_NAMES.get(name, name), f"must be a finite number > 0, got {value!r}")


def _check_choice(name: str, value, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ArgumentError(name, f"{value!r} is not one of {', '.join(choices)}")
