"""``cartesian_path``: a joint path whose tip follows straight lines through waypoints, as
MoveIt's ``/compute_cartesian_path`` computes it, without joint-space jumps, timed within the
robot's limits.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from .. import checks
from ..collision import CollisionModel, collision_model
from ..errors import ArgumentError
from ..ik import IKOptions
from ..kinematics import forward_kinematics
from ..model import RobotModel
from .checks import StateChecks
from .interpolation import interpolate, step_count
from .jumps import GroupJoints, JumpThresholds, check_jumps
from .timing import coordinate_limits, scaling, time_parameterize
from .tracking import COMPLETE, Deviation, Tracker

Array = np.ndarray

#: The status of a path cut by MoveIt's jump tests.
JUMP_THRESHOLD = 'jump_threshold'
#: Default bound on the path's points (steps over every segment, before refinement).
MAX_POINTS = 100_000


@dataclasses.dataclass(frozen=True)
class CartesianPathResult:
    """A Cartesian path, as far as it could be followed.

    Attributes:
        q: ``(N, n_q)`` the joint path, its first row the start configuration.
        times: ``(N,)`` [s] time from start of each point.
        velocities, accelerations: ``(N, n_q)`` at each point.
        poses: ``(N, 4, 4)`` the tip's target pose of each point in the base frame (the first:
            the tip's pose at the start).
        fraction: the fraction of the path followed, as MoveIt defines it.
        status: ``'complete'``, or why the path stopped: ``'unreachable'``, ``'no_ik_solution'``,
            ``'joint_limit'``, ``'discontinuity'``, ``'in_collision'``, ``'path_constraints'``,
            ``'jump_threshold'``.
        message: one line: where and why it stopped ('' when complete).
        waypoint: ``(N,)`` the waypoint each point moves towards (-1: the start).
    """

    q: Array
    times: Array
    velocities: Array
    accelerations: Array
    poses: Array
    fraction: float
    status: str
    message: str
    waypoint: Array

    @property
    def complete(self) -> bool:
        return self.status == COMPLETE


@dataclasses.dataclass(frozen=True)
class PathOptions:
    """How a path is interpolated, solved and checked (the defaults suit most calls).

    Attributes:
        max_rotation_step: [rad] the largest rotation between consecutive points, >= 0 (0: not
            bounded, as MoveIt's ``MaxEEFStep(max_step)``; None: ``max_step`` taken in radians).
        relative: each waypoint is in the tip's frame at the start of its segment (MoveIt's
            waypoints given in the link's own frame), not in ``base``.
        active_joints, lower, upper: as :func:`~robokin_ros.ik.solve_ik`'s: the joints that move
            (also those MoveIt's jump tests compare; None: the joints from ``base`` to the tip)
            and narrower bounds.
        max_deviation, max_rotation_deviation: [m], [rad] how far the joint-space midpoint of
            two consecutive points may leave the line (> 0).
        position_tolerance, rotation_tolerance: [m], [rad] of each point's IK solution.
        axis_tolerances: None, or ``(6,)`` as :func:`~robokin_ros.ik.solve_ik`'s (``inf`` frees an
            axis of the error twist in the target's axes: ``[0, 0, 0, inf, inf, inf]`` follows the
            position alone, for arms under 6 DOF); a freed rotation axis leaves the rotation out
            of the continuity test.
        max_points: the most steps the interpolation may make, refused before any IK.
    """

    max_rotation_step: float | None = None
    relative: bool = False
    active_joints: tuple | None = None
    lower: object = None
    upper: object = None
    max_deviation: float = 1e-3
    max_rotation_deviation: float = 1e-2
    position_tolerance: float = 1e-8
    rotation_tolerance: float = 1e-8
    axis_tolerances: tuple | None = None
    max_points: int = MAX_POINTS


@dataclasses.dataclass(frozen=True)
class PathTiming:
    """How the path is timed: MoveIt's ``max_velocity_scaling_factor`` and
    ``max_acceleration_scaling_factor`` (outside (0, 1], or NaN: 1.0), and ``max_cartesian_speed``
    [m/s] of ``speed_link`` (None: the tip; 0: not limited)."""

    velocity_scaling: float = 1.0
    acceleration_scaling: float = 1.0
    max_cartesian_speed: float = 0.0
    speed_link: str | None = None


def cartesian_path(model: RobotModel, waypoints, tip: str, q0, *, base: str | None = None,
                   max_step: float = 0.01, jumps: JumpThresholds | None = None,
                   avoid_collisions: bool | CollisionModel = False, constraints=(),
                   timing: PathTiming | None = None, options: PathOptions | None = None) -> CartesianPathResult:
    """Follow straight lines (position interpolated linearly, orientation slerped) from the
    tip's pose at ``q0`` through ``waypoints`` (docs/api.md, *Cartesian paths*).

    Args:
        model: the robot. waypoints: ``(4, 4)`` or ``(k, 4, 4)`` poses of ``tip`` in ``base``
            (None: the root link).
        tip: the link that follows the path. q0: ``(n_q,)`` the start configuration.
        max_step: [m] the largest translation between consecutive points, > 0.
        jumps: MoveIt's jump tests (:class:`JumpThresholds`; None: none).
        avoid_collisions: True (the model's default collision model) or a
            :class:`~robokin_ros.collision.CollisionModel`: every point free of self-collision.
        constraints: path constraints (:class:`~robokin_ros.ik.PositionConstraint`,
            :class:`~robokin_ros.ik.OrientationConstraint`, poses in ``base``) every point meets.
        timing: :class:`PathTiming` (None: the limits unscaled).
        options: :class:`PathOptions` (None: the defaults).

    Raises:
        ArgumentError: a bad option, or more points than ``options.max_points``. ShapeError /
            NonFiniteError / InvalidTargetError: bad waypoints or ``q0``. UnknownLinkError: ``tip``,
            ``base`` or ``timing.speed_link``.
    """
    options = PathOptions() if options is None else options
    timing = PathTiming() if timing is None else timing
    q0 = checks.real_array(q0, 'q0', (model.n_q,), batch=False, labels=model.q_names)
    targets = _waypoints(waypoints)
    max_step = _positive(max_step, 'max_step')
    rotation_step = (max_step if options.max_rotation_step is None
                     else _non_negative(options.max_rotation_step, 'max_rotation_step'))
    thresholds = _thresholds(JumpThresholds() if jumps is None else jumps)
    ik_options = IKOptions(base=base, position_tolerance=options.position_tolerance,
                           rotation_tolerance=options.rotation_tolerance, axis_tolerances=options.axis_tolerances,
                           active_joints=options.active_joints, lower=options.lower, upper=options.upper,
                           max_iterations=100)
    rotation_free = options.axis_tolerances is not None and bool(np.any(np.asarray(options.axis_tolerances)[3:] > 0))
    deviation = Deviation(_positive(options.max_deviation, 'max_deviation'),
                          np.inf if rotation_free else _positive(options.max_rotation_deviation,
                                                                 'max_rotation_deviation'))
    model.link_index(tip)
    speed_link = tip if timing.speed_link is None else model.link_names[model.link_index(timing.speed_link)]
    path_checks = _state_checks(model, ik_options, avoid_collisions, tuple(constraints))
    tracker = Tracker(model, tip, ik_options, path_checks, deviation)
    retry = (Tracker(model, tip, dataclasses.replace(ik_options, objective='center'), path_checks, deviation)
             if _redundant(model, tip, base, options.active_joints) else None)
    plan = _Plan(tracker=tracker, retry=retry, targets=targets, relative=bool(options.relative), max_step=max_step,
                 rotation_step=rotation_step, thresholds=thresholds,
                 max_points=checks.check_count(options.max_points, 'max_points', minimum=1))
    followed = plan.follow(q0)
    return _finish(model, followed, _group_joints(model, tip, base, options.active_joints), thresholds,
                   dataclasses.replace(timing, speed_link=speed_link))


# ---------------------------------------------------------------------------------- arguments
def _positive(value, name: str) -> float:
    if not checks.is_real(value) or not value > 0.0:
        raise ArgumentError(name, f'must be a finite number > 0, got {value!r}')
    return float(value)


def _non_negative(value, name: str) -> float:
    if not checks.is_real(value) or not value >= 0.0:
        raise ArgumentError(name, f'must be a finite number >= 0, got {value!r}')
    return float(value)


def _thresholds(jumps: JumpThresholds) -> JumpThresholds:
    if not isinstance(jumps, JumpThresholds):
        raise ArgumentError('jumps', f'must be a JumpThresholds, got {type(jumps).__name__}')
    return JumpThresholds(*(_non_negative(getattr(jumps, name), f'jumps.{name} ({name} jump threshold)')
                            for name in ('relative', 'prismatic', 'revolute')))


def _waypoints(waypoints) -> Array:
    """``(k, 4, 4)`` rigid transforms, k >= 1."""
    T = checks.real_array(waypoints, 'waypoints', (4, 4))
    T = T.reshape(-1, 4, 4)
    if not len(T):
        raise ArgumentError('waypoints', 'no waypoint given: give at least one pose')
    checks.check_rigid_targets(T)
    return T


def _state_checks(model: RobotModel, options: IKOptions, avoid_collisions, constraints: tuple) -> StateChecks:
    lower = model.q_lower if options.lower is None else np.maximum(model.q_lower, np.asarray(options.lower))
    upper = model.q_upper if options.upper is None else np.minimum(model.q_upper, np.asarray(options.upper))
    if avoid_collisions is True:
        avoid_collisions = collision_model(model)
    collision = avoid_collisions if isinstance(avoid_collisions, CollisionModel) else None
    return StateChecks(model, lower, upper, collision, constraints, options.base)


def _redundant(model: RobotModel, tip: str, base: str | None, active_joints) -> bool:
    """More joints move the tip than a pose has coordinates (a null space to use)."""
    names = active_joints if active_joints is not None else model.path_joints(base or model.root_link, tip)
    return len(set(names) & set(model.path_joints(base or model.root_link, tip))) > 6


def _group_joints(model: RobotModel, tip: str, base: str | None, active_joints) -> GroupJoints:
    """The joints MoveIt's jump tests compare: ``active_joints``, else those moving the tip."""
    names = active_joints if active_joints is not None else model.path_joints(base or model.root_link, tip)
    return GroupJoints.of(model, np.array([model.joint_index(j) for j in names], int))


# ---------------------------------------------------------------------------------- following
@dataclasses.dataclass
class _Followed:
    """The points of every segment followed, and how far (MoveIt's fraction before the jump tests)."""

    q: list
    poses: list
    waypoint: list
    fraction: float = 0.0
    status: str = COMPLETE
    message: str = ''


@dataclasses.dataclass(frozen=True)
class _Plan:
    tracker: Tracker
    retry: Tracker | None
    targets: Array
    relative: bool
    max_step: float
    rotation_step: float
    thresholds: JumpThresholds
    max_points: int

    def follow(self, q0: Array) -> _Followed:
        """Every segment in turn (MoveIt's fraction: whole segments count 1/k each, the one that
        stopped the share of its steps followed). A segment that stops on a redundant arm is
        followed again from its start with the null-space objective ``center`` (joints kept away
        from their limits), and the farther of the two kept."""
        T0 = self.tracker.tip_poses(q0[None])[0]
        self._check_size(T0)
        out = _Followed([q0], [T0], [-1])
        q, T = q0, T0
        k = len(self.targets)
        for w, W in enumerate(self.targets):
            goal = T @ W if self.relative else W
            steps = step_count(T, goal, self.max_step, self.rotation_step, self.thresholds.relative > 0.0)
            track = self.tracker.track(q, T, _segment(T, goal), steps)
            if track.status and self.retry is not None:   # a redundant arm: again, centring its joints
                again = self.retry.track(q, T, _segment(T, goal), steps)
                track = again if again.s[-1] > track.s[-1] else track
            out.q += track.q[1:]
            out.poses += track.T[1:]
            out.waypoint += [w] * (len(track.q) - 1)
            if track.status:
                out.fraction += track.s[-1] / k
                out.status = track.status
                out.message = f'stopped on the way to waypoint {w}: {track.message}'
                return out
            out.fraction = (w + 1) / k
            q = track.q[-1]
            T = self.tracker.tip_poses(q[None])[0]
        return out

    def _check_size(self, T0: Array) -> None:
        """Refuse a path of more than ``max_points`` steps before any IK (relative waypoints are
        counted from their targets' own sizes)."""
        total, T = 0, T0
        for W in self.targets:
            goal = T @ W if self.relative else W
            total += step_count(T, goal, self.max_step, self.rotation_step, self.thresholds.relative > 0.0)
            T = goal
            if total > self.max_points:
                raise ArgumentError('max_points', f'the path needs more than {self.max_points} points at max_step '
                                                  f'{self.max_step:g} m: raise max_step or max_points')


def _segment(T_a: Array, T_b: Array):
    return lambda s: interpolate(T_a, T_b, s)


def _finish(model: RobotModel, followed: _Followed, joints: GroupJoints, thresholds: JumpThresholds,
            speed: PathTiming) -> CartesianPathResult:
    """Apply MoveIt's jump tests, then time the path."""
    Q = np.array(followed.q)
    kept, factor, why = check_jumps(Q, joints, thresholds)
    status, message, fraction = followed.status, followed.message, followed.fraction * factor
    if kept < len(Q):
        status, message = JUMP_THRESHOLD, f'{why}: the path is cut after {kept} points'
    Q = Q[:kept]
    velocity, acceleration = coordinate_limits(model, model.active_joints)
    velocity = velocity * scaling(speed.velocity_scaling)
    acceleration = acceleration * scaling(speed.acceleration_scaling)
    cartesian = float(speed.max_cartesian_speed)
    tips = (forward_kinematics(model, Q, frames=[speed.speed_link])[:, 0, :3, 3]
            if math.isfinite(cartesian) and cartesian > 0.0 else None)
    timing = time_parameterize(Q, velocity, acceleration, tips, cartesian if tips is not None else 0.0)
    return CartesianPathResult(q=Q, times=timing.times, velocities=timing.velocities,
                               accelerations=timing.accelerations, poses=np.array(followed.poses[:kept]),
                               fraction=float(fraction), status=status, message=message,
                               waypoint=np.array(followed.waypoint[:kept], int))
