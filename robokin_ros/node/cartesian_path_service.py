"""/compute_cartesian_path: ``moveit_msgs/srv/GetCartesianPath`` as move_group serves it, over
:func:`robokin_ros.cartesian.cartesian_path`.

:func:`compute_cartesian_path` is the handler: :func:`read_path_request` reads the request
against the robot (group, link, frames, start state merged over the latest joint states, path
constraints, collision policy) into a :class:`PathRequest`, the core call follows the path, and
:func:`path_reply` fills the trajectory. Bad input is refused before any work with a MoveIt error
code and one line (docs/node.md gives every field and how the service differs from move_group).
No rclpy.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from builtin_interfaces.msg import Duration
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from ..cartesian import CartesianPathResult, JumpThresholds, PathOptions, PathTiming, cartesian_path
from ..errors import ArgumentError, UnknownJointError
from ..kinematics import frame_transform
from ..model import RobotModel
from .conversions import InvalidMessageError, joint_bounds, pose_to_matrix, q_to_robot_state
from .ik_service import Handling, collision_policy
from .parameters import IKSettings
from .requests import (
    RequestError,
    RequestFrames,
    RobotSnapshot,
    answer,
    check_constraint_size,
    frame_link,
    pose_constraints,
    request_configuration,
    require_robot,
    resolve_group,
    select_group,
)

#: MoveIt's smallest ``max_step`` (``std::numeric_limits<double>::epsilon()``).
MIN_STEP = np.finfo(float).eps


@dataclasses.dataclass(frozen=True)
class PathRequest:
    """A ``GetCartesianPath`` request read against the robot.

    Attributes:
        model: the model the path is followed on. q: ``(model.n_q,)`` the start.
        group: the group's name. joints: its joints (None: every joint). base: the frame of
            ``waypoints``. tip: the link that follows them. frame: the trajectory's frame id.
        waypoints: ``(k, 4, 4)`` in ``base`` (or, with ``relative``, in the tip's frame).
        lower, upper: ``(n_q,)`` the bounds narrowed by the joint constraints.
        constraints: the path's position and orientation constraints (in ``base``).
        collision: the collision model (None: not checked); unchecked: '' or why not.
    """

    model: RobotModel
    q: np.ndarray
    group: str
    joints: tuple[str, ...] | None
    base: str
    tip: str
    frame: str
    waypoints: np.ndarray
    relative: bool
    lower: np.ndarray
    upper: np.ndarray
    constraints: list
    collision: object = None
    unchecked: str = ''


def compute_cartesian_path(request, response, robot: RobotSnapshot | None, settings: IKSettings, max_points: int,
                           handling: Handling | None = None):
    """Answer a ``moveit_msgs/srv/GetCartesianPath`` request (docs/node.md gives every field)."""

    def handle() -> str:
        check_path_request(request, settings, max_points)
        snap = require_robot(robot)
        parsed = read_path_request(snap, request, settings)
        response.start_state = q_to_robot_state(parsed.model, parsed.q)
        if not len(parsed.waypoints):
            response.fraction = 0.0
            return 'no waypoints: nothing to follow (fraction 0, as move_group answers)'
        try:
            result = cartesian_path(
                parsed.model, parsed.waypoints, parsed.tip, parsed.q, base=parsed.base, max_step=request.max_step,
                jumps=JumpThresholds(request.jump_threshold, request.prismatic_jump_threshold,
                                     request.revolute_jump_threshold),
                avoid_collisions=parsed.collision or False, constraints=parsed.constraints,
                timing=PathTiming(request.max_velocity_scaling_factor, request.max_acceleration_scaling_factor,
                                  request.max_cartesian_speed, _speed_link(snap, request, parsed)),
                options=PathOptions(relative=parsed.relative, active_joints=parsed.joints, lower=parsed.lower,
                                    upper=parsed.upper, max_points=max_points))
        except ArgumentError as e:
            bound = ' (parameter cartesian_max_points)' if e.argument == 'max_points' else ''
            raise RequestError('FAILURE', f'{e}{bound}') from None
        return path_reply(parsed, result, response)

    return answer(response, handle, (handling or Handling()).on_crash)


# ---------------------------------------------------------------------------------- read the request
def check_path_request(request, settings: IKSettings, max_points: int) -> None:
    """Refuse, before any work, what move_group refuses (``max_step`` not above machine epsilon:
    FAILURE) and what it would answer with nonsense: a NaN or negative threshold, scaling or
    speed (FAILURE), more waypoints than ``cartesian_max_points`` (FAILURE), more constraints
    than the ``ik_max_*`` bounds (INVALID_GOAL_CONSTRAINTS)."""
    if not request.max_step >= MIN_STEP:
        raise RequestError('FAILURE', f'max_step must be > 0 (the largest step between consecutive points of the '
                                      f'path, in metres), got {request.max_step!r}')
    for name in ('jump_threshold', 'prismatic_jump_threshold', 'revolute_jump_threshold', 'max_cartesian_speed'):
        value = getattr(request, name)
        if not (math.isfinite(value) and value >= 0.0):
            raise RequestError('FAILURE', f'{name} must be a finite number >= 0 (0: not used), got {value!r}')
    for name in ('max_velocity_scaling_factor', 'max_acceleration_scaling_factor'):
        if math.isnan(getattr(request, name)):
            raise RequestError('FAILURE', f'{name} is NaN (outside (0, 1] means 1.0, as MoveIt)')
    if len(request.waypoints) > max_points:
        raise RequestError('FAILURE', f'{len(request.waypoints)} waypoints: at most {max_points} '
                                      '(parameter cartesian_max_points)')
    check_constraint_size(request.path_constraints, (settings.max_constraints, 'ik_max_constraints'),
                          (settings.max_primitives, 'ik_max_primitives'))


def read_path_request(snap: RobotSnapshot, request, settings: IKSettings) -> PathRequest:
    """The :class:`PathRequest` of ``request``, as move_group reads it.

    Raises:
        RequestError: COLLISION_CHECKING_UNAVAILABLE, INVALID_GROUP_NAME, INVALID_LINK_NAME,
            INVALID_ROBOT_STATE, FRAME_TRANSFORM_FAILURE, INVALID_GOAL_CONSTRAINTS, FAILURE.
    """
    view = snap.with_virtual_joint()
    collision, unchecked = collision_policy(snap, request.avoid_collisions, settings.avoid_collisions_policy)
    group = select_group(view, request.group_name)
    base, default_tip, joints = resolve_group(view, group)
    if joints is not None and not joints:
        raise RequestError('INVALID_GROUP_NAME', f'group {group.name!r} has no movable joint: it follows no path')
    if not request.link_name and not default_tip:
        raise RequestError('INVALID_LINK_NAME', f'no link_name given and group {group.name!r} has no tip')
    tip = frame_link(view, request.link_name, 'INVALID_LINK_NAME', 'link_name', False) if request.link_name \
        else default_tip
    frames = RequestFrames(view, request_configuration(view, request.start_state), snap.model_frame)
    header = request.header.frame_id
    relative = bool(header) and frame_link(view, header, 'FRAME_TRANSFORM_FAILURE', 'header.frame_id', True,
                                           snap.model_frame) == tip
    waypoints = _waypoints(frames, base, header, request.waypoints, relative)
    parsed = PathRequest(model=view.model, q=frames.q, group=group.name, joints=joints, base=base, tip=tip,
                         frame=snap.frame_prefix + snap.model_frame, waypoints=waypoints, relative=relative,
                         lower=view.model.q_lower, upper=view.model.q_upper, constraints=[], collision=collision,
                         unchecked=unchecked)
    parsed = _with_constraints(parsed, frames, request.path_constraints)
    return _on_path_model(snap, parsed)


def _waypoints(frames: RequestFrames, base: str, frame_id: str, poses, relative: bool) -> np.ndarray:
    """``(k, 4, 4)`` the waypoints in ``base`` (``relative``: as given, in the link's frame)."""
    T_base_header = np.eye(4) if relative else frames.transform(base, frame_id, 'waypoints: header.frame_id')
    out = np.empty((len(poses), 4, 4))
    for i, pose in enumerate(poses):
        try:
            out[i] = T_base_header @ pose_to_matrix(pose, f'waypoint {i}')
        except InvalidMessageError as e:
            raise RequestError('INVALID_GOAL_CONSTRAINTS', str(e)) from None
    return out


def _with_constraints(parsed: PathRequest, frames: RequestFrames, c) -> PathRequest:
    """``parsed`` with the joint bounds and pose constraints of its ``path_constraints``."""
    if c.visibility_constraints:
        raise RequestError('INVALID_GOAL_CONSTRAINTS', 'visibility constraints are not evaluated (joint, position '
                                                       'and orientation path constraints are)')
    try:
        lower, upper = joint_bounds(parsed.model, c.joint_constraints)
    except (UnknownJointError, InvalidMessageError) as e:
        raise RequestError('INVALID_GOAL_CONSTRAINTS', f'path_constraints.joint_constraints: {e}') from None
    constraints = pose_constraints(frames, c, parsed.base, parsed.model)
    return dataclasses.replace(parsed, lower=lower, upper=upper, constraints=constraints)


def _on_path_model(snap: RobotSnapshot, parsed: PathRequest) -> PathRequest:
    """``parsed`` (read on the SRDF's moveit_model) on the URDF's model; a group moving the
    virtual joint is refused (FAILURE: not supported)."""
    semantic = snap.semantic
    if semantic is None:
        return parsed
    if parsed.joints is not None and semantic.virtual_joint.name in parsed.joints:
        raise RequestError('FAILURE', f'group {parsed.group!r} moves the virtual joint '
                                      f'{semantic.virtual_joint.name!r}: Cartesian paths of a moving base are '
                                      'not served')
    model, base, waypoints = snap.model, parsed.base, parsed.waypoints
    if base not in model.link_names:
        T_root_base = frame_transform(parsed.model, parsed.q, model.root_link, base)
        base = model.root_link
        waypoints = waypoints if parsed.relative else T_root_base @ waypoints
    if parsed.tip not in model.link_names:
        raise RequestError('INVALID_LINK_NAME', f'link {parsed.tip!r} is not a link of robot {model.name!r}')
    keep = [i for i, name in enumerate(parsed.model.q_names) if name in model.q_names]
    return dataclasses.replace(parsed, model=model, q=semantic.model_configuration(parsed.q), base=base,
                               waypoints=waypoints, lower=parsed.lower[keep], upper=parsed.upper[keep])


def _speed_link(snap: RobotSnapshot, request, parsed: PathRequest) -> str:
    """The link ``max_cartesian_speed`` limits (empty: the path's link)."""
    if not request.cartesian_speed_limited_link or request.max_cartesian_speed <= 0.0:
        return parsed.tip
    link = frame_link(snap, request.cartesian_speed_limited_link, 'INVALID_LINK_NAME',
                      'cartesian_speed_limited_link', False)
    return link


# ---------------------------------------------------------------------------------- reply
def path_reply(parsed: PathRequest, result: CartesianPathResult, response) -> str:
    """Fill ``response.solution`` and ``fraction`` from ``result``; the reply's message."""
    model = parsed.model
    names = [name for name in (parsed.joints or model.joint_names)
             if model.joint_q_index[model.joint_index(name)] >= 0]
    index = [int(model.joint_q_index[model.joint_index(name)]) for name in names]
    trajectory = JointTrajectory(joint_names=names)
    trajectory.header.frame_id = parsed.frame
    for q, t, v, a in zip(result.q[:, index].tolist(), result.times.tolist(), result.velocities[:, index].tolist(),
                          result.accelerations[:, index].tolist()):
        seconds = math.floor(t)
        trajectory.points.append(JointTrajectoryPoint(
            positions=q, velocities=v, accelerations=a,
            time_from_start=Duration(sec=int(seconds), nanosec=min(int(round((t - seconds) * 1e9)), 999_999_999))))
    response.solution.joint_trajectory = trajectory
    response.fraction = float(result.fraction)
    followed = (f'followed {100 * result.fraction:.4g} % of the path of {parsed.tip!r} in group {parsed.group!r}: '
                f'{len(result.q)} points, {result.times[-1]:.4g} s')
    stopped = f'stopped ({result.status}): {result.message}' if result.status != 'complete' else ''
    return '; '.join(m for m in (parsed.unchecked, followed, stopped) if m)
