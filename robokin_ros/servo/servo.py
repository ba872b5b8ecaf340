""":class:`Servo`: jog one group of an arm by twist, joint or pose commands, one cycle at a time.

A cycle (:meth:`Servo.step`): choose the command (a fresh one, the last one while younger than
``incoming_command_timeout``, else none: stop), turn it into wanted joint velocities (joint jog:
as given; twist and pose: damped least squares on the group's Jacobian, :mod:`.law`), slow down
near singularities and self-collision, keep every joint inside its position, velocity and
acceleration limits (:mod:`.limits`), and integrate one step.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..checks import rigid_transform
from ..errors import ArgumentError, NonFiniteError, RobokinError, ShapeError, UnknownLinkError
from ..kinematics import Kinematics
from ..model import JointType, RobotModel
from ..model.groups import default_groups
from ..spatial import log_so3
from .commands import JointJogCommand, PoseCommand, TwistCommand
from .law import ACHIEVABLE_TOLERANCE, damped_solve, singularity_scale
from .limits import GroupLimits
from .parameters import ServoParameters
from .proximity import CollisionSlowdown
from .status import ServoStatus, StatusCode, merged

#: Joint types a servo group may hold (one coordinate each).
_SCALAR = (JointType.REVOLUTE, JointType.CONTINUOUS, JointType.PRISMATIC)
#: Shortest characteristic length [m] (the weight of rotation against translation).
MIN_LENGTH = 0.05


class ServoStep(NamedTuple):
    """One cycle's result: ``q_next (n_q,)``, ``velocity (n_v,)`` (zero outside the group) and
    its :class:`ServoStatus`."""

    q: np.ndarray
    velocity: np.ndarray
    status: ServoStatus


class InvalidCommand(Exception):
    """A command that cannot be followed (the message says why); the cycle reports INVALID."""


class Servo:
    """Real-time jogging of one group (the joints from ``base`` down to ``tip``).

    Args:
        model: the robot.
        tip: the end effector link (None: ``parameters.ee_frame``, else the tip of the robot's
            default group).
        base: the planning frame (None: ``parameters.planning_frame``, else the root link).
        parameters: :class:`ServoParameters`, a ``{name: value}`` dict of MoveIt's names, or None.
        collision: a :class:`~robokin_ros.collision.CollisionModel` (or True: the model's default)
            to slow down near self-collision; None: ``parameters.check_collisions`` decides.

    Raises:
        UnknownLinkError: an unknown tip or base.
        ArgumentError: bad parameters; a group without joints, or with a joint that is neither
            revolute nor continuous nor prismatic.

    Attributes:
        joint_names: the group's joints (the order of its velocities).
        limits: its :class:`~robokin_ros.servo.limits.GroupLimits`.
        length: the characteristic length [m] weighing rotation against translation.
        paused: while True every cycle stops the motion (as a stale command).
    """

    def __init__(self, model: RobotModel, tip: str | None = None, base: str | None = None,
                 parameters=None, collision=None):
        if parameters is None:
            parameters = ServoParameters()
        elif isinstance(parameters, dict):
            parameters = ServoParameters.from_dict(parameters)
        self.model, self.parameters = model, parameters
        self.tip = tip or parameters.ee_frame or next(iter(default_groups(model).values())).tip
        self.base = base or parameters.planning_frame or model.link_names[0]
        self.joint_names = _group_joints(model, self.base, self.tip)
        margins = len(parameters.joint_limit_margins)
        if margins not in (1, len(self.joint_names)):
            raise ArgumentError("joint_limit_margins", f"give 1 or {len(self.joint_names)} values, got {margins}")
        joints = [model.joint_index(n) for n in self.joint_names]
        self._q_index = np.asarray(model.joint_q_index)[joints]
        self._v_index = np.asarray(model.joint_v_index)[joints]
        self._column = {n: i for i, n in enumerate(self.joint_names)}
        self.limits = GroupLimits.of(model, self.joint_names, parameters)
        self.length = _characteristic_length(model, self.base, self.tip)
        self._weights = np.array([1.0 / self.length] * 3 + [1.0] * 3)
        self._kin = Kinematics(model, frames=(self.tip,), dynamics=())
        self._poses = np.empty((model.n_links, 4, 4))
        self._jacobian = np.empty((6, model.n_v))
        self._tip_i, self._base_i = model.link_index(self.tip), model.link_index(self.base)
        if collision is None and parameters.check_collisions:
            collision = True
        self._collision = None if collision is None else CollisionSlowdown(model, collision, parameters)
        self.paused = False
        self._pose_checked = (None, None)
        self.reset()

    @property
    def velocity(self) -> np.ndarray:
        """The group's velocity commanded last cycle ``(n,)`` (a copy)."""
        return self._velocity.copy()

    def reset(self, velocity=None) -> None:
        """Forget the last command; the robot is at rest (or moving at ``velocity (n,)``)."""
        self._velocity = np.zeros(len(self.joint_names)) if velocity is None else np.array(velocity, dtype=float)
        self._command, self._age = None, np.inf

    def stop(self) -> None:
        """Forget the command in force: the next cycles brake to rest at the acceleration limits."""
        self._command = None

    def step(self, q, command=None, dt: float | None = None) -> ServoStep:
        """One cycle from configuration ``q``.

        Args:
            q: the robot's configuration ``(n_q,)`` (the measured joint states).
            command: a :class:`TwistCommand`, :class:`JointJogCommand` or :class:`PoseCommand`
                received since the last cycle, or None (the last one goes on until
                ``incoming_command_timeout`` of cycles' ``dt`` has passed, then the group stops,
                braking at its acceleration limits).
            dt: the cycle [s] (None: ``publish_period``).

        Returns:
            :class:`ServoStep` ``(q_next, velocity, status)``: ``q + velocity dt``.

        A bad command never raises: that cycle's status is INVALID and it moves only to stop.

        Raises:
            ShapeError: a ``q`` of the wrong length.
            NonFiniteError: a ``q`` with NaN or inf.
            ArgumentError: ``dt`` not a finite number > 0.
        """
        dt = self.parameters.publish_period if dt is None else dt
        if not (isinstance(dt, (int, float)) and np.isfinite(dt) and dt > 0):
            raise ArgumentError("dt", f"must be a finite number > 0, got {dt!r}")
        q = self._checked(q)
        if command is not None:
            self._command, self._age = command, 0.0
        else:
            self._age += dt
        active = None if self.paused or self._age > self.parameters.incoming_command_timeout else self._command
        q_group = q[self._q_index]
        wanted, reports, scale, condition = np.zeros(len(self.joint_names)), [], 1.0, 0.0
        if active is not None:
            try:
                wanted, reports, scale, condition = self._wanted(q, active)
            except InvalidCommand as error:
                self._command = None
                reports = [(StatusCode.INVALID, str(error))]
        elif self.paused:
            reports = [(StatusCode.NO_WARNING, "paused")]
        if self._collision is not None and wanted.any():
            factor, notes = self._collision.scale(q, dt)
            wanted, scale, reports = wanted * factor, scale * factor, reports + notes
        v, notes = self.limits.apply(wanted, self._velocity, q_group, dt)
        self._velocity = v
        q_next = q.copy()
        q_next[self._q_index] = q_group + v * dt
        velocity = np.zeros(self.model.n_v)
        velocity[self._v_index] = v
        code, message = merged(reports + notes)
        return ServoStep(q_next, velocity, ServoStatus(code, message, scale, condition))

    # ------------------------------------------------------------------ commands
    def _checked(self, q) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        if q.shape != (self.model.n_q,):
            raise ShapeError("q", f"({self.model.n_q},)", q.shape)
        if not np.isfinite(q).all():
            raise NonFiniteError("q", np.flatnonzero(~np.isfinite(q)).tolist())
        return q

    def _wanted(self, q, command):
        """Wanted group velocity, reports, slow-down factor and condition number of ``command``."""
        if isinstance(command, JointJogCommand):
            return self._joint_velocity(command), [], 1.0, 0.0
        if isinstance(command, TwistCommand):
            poses = self._kin.fk(q, self._poses)
            return self._cartesian(q, self._twist(command, poses))
        if isinstance(command, PoseCommand):
            poses = self._kin.fk(q, self._poses)
            return self._cartesian(q, self._pose_twist(command, poses))
        raise InvalidCommand(f"not a servo command: {type(command).__name__}")

    def _joint_velocity(self, command: JointJogCommand) -> np.ndarray:
        names = tuple(command.names)
        values = _finite(command.velocities, "joint jog velocities", (len(names),))
        wanted = np.zeros(len(self.joint_names))
        for name, value in zip(names, values):
            if name not in self._column:
                raise InvalidCommand(f"joint jog names {name!r}, not a joint of the group "
                                     f"({', '.join(self.joint_names)})")
            wanted[self._column[name]] = value
        if self.parameters.command_in_type == "unitless":
            wanted *= self.parameters.scale_joint
        return wanted

    def _frame_rotation(self, frame, poses) -> np.ndarray | None:
        """``R_base_frame`` of a command's frame (None for the base itself)."""
        if frame is None or frame == "" or frame == self.base:
            return None
        try:
            index = self.model.link_index(frame)
        except UnknownLinkError as error:
            raise InvalidCommand(str(error)) from None
        return poses[self._base_i, :3, :3].T @ poses[index, :3, :3]

    def _twist(self, command: TwistCommand, poses) -> np.ndarray:
        linear = _finite(command.linear, "twist linear", (3,))
        angular = _finite(command.angular, "twist angular", (3,))
        if self.parameters.command_in_type == "unitless":
            linear, angular = linear * self.parameters.scale_linear, angular * self.parameters.scale_rotational
        R = self._frame_rotation(command.frame, poses)
        return np.concatenate([linear, angular] if R is None else [R @ linear, R @ angular])

    def _pose_twist(self, command: PoseCommand, poses) -> np.ndarray:
        """The twist closing the pose error: ``pose_gain`` times the error, capped at
        ``scale.linear`` m/s and ``scale.rotational`` rad/s (a straight, proportional approach)."""
        base = poses[self._base_i]
        R_base = base[:3, :3].T
        if self._pose_checked[0] is not command:
            # Checked, and put in the planning frame, once: the frame's pose when the command came
            # (as MoveIt transforms a pose target on receipt), however long it is held.
            try:
                target = rigid_transform(command.pose, "pose")
            except RobokinError as error:
                raise InvalidCommand(str(error)) from None
            if command.frame not in (None, "", self.base):
                frame = poses[self._frame_index(command.frame)]
                T_base_frame = np.eye(4)
                T_base_frame[:3, :3] = R_base @ frame[:3, :3]
                T_base_frame[:3, 3] = R_base @ (frame[:3, 3] - base[:3, 3])
                target = T_base_frame @ target
            self._pose_checked = (command, target)
        target = self._pose_checked[1]
        tip = poses[self._tip_i]
        R_tip = R_base @ tip[:3, :3]
        p_tip = R_base @ (tip[:3, 3] - base[:3, 3])
        gain = self.parameters.pose_gain
        linear = _capped(gain * (target[:3, 3] - p_tip), self.parameters.scale_linear)
        angular = _capped(gain * log_so3(target[:3, :3] @ R_tip.T), self.parameters.scale_rotational)
        return np.concatenate([linear, angular])

    def _frame_index(self, frame: str) -> int:
        try:
            return self.model.link_index(frame)
        except UnknownLinkError as error:
            raise InvalidCommand(str(error)) from None

    # ------------------------------------------------------------------ Cartesian law
    def _group_jacobian(self, q) -> np.ndarray:
        """The group's Jacobian in the base's axes, linear rows divided by :attr:`length` ``(6, n)``."""
        J = self._kin.jacobian(q, self.tip, self._jacobian)[:, self._v_index]
        R = self._poses[self._base_i, :3, :3].T
        J[:3] = R @ J[:3]
        J[3:] = R @ J[3:]
        return J * self._weights[:, None]

    def _cartesian(self, q, twist: np.ndarray):
        J = self._group_jacobian(q)
        solution = damped_solve(J, twist * self._weights, self.parameters)
        reports = []
        if solution.unachievable > ACHIEVABLE_TOLERANCE:
            reports.append((StatusCode.NO_WARNING,
                            f"the group's {len(self.joint_names)} joints cannot produce {solution.unachievable:.0%} "
                            "of this twist: following its achievable projection"))
        scale = 1.0
        if solution.condition > self.parameters.lower_singularity_threshold:
            approaching = self._approaching(q, solution.singular_values, solution.velocity)
            scale, notes = singularity_scale(solution.condition, approaching, self.parameters)
            reports += notes
        return solution.velocity * scale, reports, scale, solution.condition

    def _approaching(self, q, s_now: np.ndarray, velocity) -> bool:
        """Whether moving along ``velocity`` lowers the inverse condition number (MoveIt's test,
        made on the step itself: a Jacobian a small step ahead)."""
        peak = np.abs(velocity).max()
        if peak == 0.0:
            return False
        ahead = q.copy()
        ahead[self._q_index] += velocity * (1e-3 / peak)
        self._kin.fk(ahead, self._poses)
        s_ahead = np.linalg.svd(self._group_jacobian(ahead), compute_uv=False)
        return s_ahead[-1] * s_now[0] < s_now[-1] * s_ahead[0]


def _finite(values, what: str, shape: tuple) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise InvalidCommand(f"{what}: not numbers") from None
    if array.shape != shape:
        raise InvalidCommand(f"{what}: {array.size} values where {shape[0]} are needed")
    if not np.isfinite(array).all():
        raise InvalidCommand(f"{what}: NaN or infinite values")
    return array


def _capped(vector: np.ndarray, limit: float) -> np.ndarray:
    norm = float(np.sqrt(vector @ vector))
    return vector * (limit / norm) if norm > limit else vector


def _group_joints(model: RobotModel, base: str, tip: str) -> tuple:
    names = model.path_joints(base, tip)
    if not names:
        raise ArgumentError("tip", f"no joint moves {tip!r} relative to {base!r}")
    bad = [n for n in names if model.joint_types[model.joint_index(n)] not in _SCALAR]
    if bad:
        raise ArgumentError("base", f"the servo moves revolute, continuous and prismatic joints only; "
                                    f"{', '.join(bad)} between {base!r} and {tip!r} is not one (give a base below it)")
    return names


def _characteristic_length(model: RobotModel, base: str, tip: str) -> float:
    """The sum of the joint offsets from the group's first joint down to the tip (an upper bound
    of the lever arms in the Jacobian), at least :data:`MIN_LENGTH`."""
    path = model.path_joints(base, tip, independent=False)
    offsets = [np.linalg.norm(np.asarray(model.joint_origins[model.joint_index(n)])[:3, 3]) for n in path[1:]]
    return max(float(np.sum(offsets)), MIN_LENGTH)
