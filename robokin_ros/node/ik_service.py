"""/compute_ik in three steps: read the request, solve, reply.

:func:`compute_ik` is the handler; it runs :func:`read_ik_request` (the request against the
robot: collision policy, group, IK links, target frames, seed, virtual joint, constraints, reach,
into one :class:`IKRequest`), :func:`solve_ik_request` (the solver call, into an
:class:`IKSolution`) and :func:`ik_reply` (the solution into the response, or the MoveIt error
code of the failure, and the reply text). Each step raises :class:`~.requests.RequestError`
for an answer with an error code. Before any of them, :func:`check_request_size` bounds the
request's work (the ``ik_max_*`` parameters).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from .. import ik
from ..collision import CollisionModel, in_collision
from ..errors import UnknownJointError
from ..kinematics import frame_transform
from ..model import RobotModel
from ..model.groups import IKGroup
from ..model.srdf import SemanticDescription
from .conversions import InvalidMessageError, duration_to_seconds, joint_bounds, pose_to_matrix, q_to_robot_state
from .parameters import REJECT, IKSettings
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

#: Iterations passed to the solver when ``ik_max_iterations`` is 0: the timeout ends the search.
NO_ITERATION_BUDGET = 2 ** 62
#: The error code of an :class:`~robokin_ros.ik.IKOptionError` by the option it names: the
#: request's constraints and targets are the caller's to fix; any other option comes from the
#: node's parameters (``ik_*``), a setting the solver refuses.
OPTION_ERROR_CODES = {'constraints': 'INVALID_GOAL_CONSTRAINTS', 'options': 'INVALID_GOAL_CONSTRAINTS',
                      'axis_tolerances': 'INVALID_GOAL_CONSTRAINTS', 'tips': 'INVALID_LINK_NAME'}


@dataclasses.dataclass(frozen=True)
class IKRequest:
    """A ``moveit_msgs/PositionIKRequest`` read against the robot: what the solve needs.

    Attributes:
        group: the request's IK group.
        model: the model solved on: the URDF's, or the SRDF's ``moveit_model`` when the group
            moves the virtual joint.
        seed: ``(model.n_q,)`` the start configuration.
        base: the link ``targets`` and constraint poses are expressed in.
        tips: the IK links, in the request's order.
        targets: ``T_base_tip (4, 4)`` of each of ``tips``.
        joints: the joints the solve moves (None: every joint of ``model``).
        timeout: [s] the solve's time budget.
        lower, upper: ``(model.n_q,)`` the joint limits narrowed by the joint constraints.
        constraints: the position and orientation constraints (poses in ``base``).
        collision: the collision model solutions are checked with (None: not checked).
        semantic: the SRDF whose virtual joint the solve moves (None: solving on the URDF's
            model); its solutions are checked for self-collision once, after the solve.
        unchecked: '' or the sentence saying that the solution is NOT checked for self-collision
            (avoid_collisions asked, no collision model, policy solve_unchecked).
    """

    group: IKGroup
    model: RobotModel
    seed: np.ndarray
    base: str
    tips: list[str]
    targets: list[np.ndarray]
    joints: tuple[str, ...] | None
    timeout: float = 0.0
    lower: np.ndarray | None = None
    upper: np.ndarray | None = None
    constraints: list = dataclasses.field(default_factory=list)
    collision: CollisionModel | None = None
    semantic: SemanticDescription | None = None
    unchecked: str = ''


@dataclasses.dataclass(frozen=True)
class IKSolution:
    """What the solve found.

    Attributes:
        result: the solver's :class:`robokin_ros.ik.IKResult` (``success`` includes the
            constraint check).
        residuals: each constraint's :class:`robokin_ros.ik.Residual` (empty without constraints).
    """

    result: ik.IKResult
    residuals: tuple = ()


@dataclasses.dataclass(frozen=True)
class Handling:
    """How the node runs a request: the token that ends its solves (cancelled on shutdown) and
    what to do with an unexpected exception (logged by the node; the reply says FAILURE)."""

    cancel: ik.CancelToken | None = None
    on_crash: Callable[[BaseException], None] = lambda e: None


def compute_ik(request, response, robot: RobotSnapshot | None, settings: IKSettings,
               handling: Handling = Handling()):
    """Answer a ``moveit_msgs/srv/GetPositionIK`` request (docs/node.md gives every field)."""

    def handle() -> str:
        check_request_size(request.ik_request, settings)
        parsed = read_ik_request(require_robot(robot), request.ik_request, settings)
        return ik_reply(parsed, solve_ik_request(parsed, settings, handling.cancel), response)

    return answer(response, handle, handling.on_crash)


# ---------------------------------------------------------------------------------- read the request
def check_request_size(req, settings: IKSettings) -> None:
    """Refuse a ``moveit_msgs/PositionIKRequest`` whose work exceeds the node's bounds, before
    any of it: more IK links than ``ik_max_links``, more constraints than
    ``ik_max_constraints``, more region primitives and meshes than ``ik_max_primitives``, or
    two orientation constraints on one link (one per link is solved).

    Raises:
        RequestError: INVALID_LINK_NAME (IK links), INVALID_GOAL_CONSTRAINTS (the others).
    """
    links = max(len(req.ik_link_names), len(req.pose_stamped_vector))
    if links > settings.max_ik_links:
        raise RequestError('INVALID_LINK_NAME', f'{links} IK links in one request: at most {settings.max_ik_links} '
                                                '(parameter ik_max_links)')
    c = req.constraints
    check_constraint_size(c, (settings.max_constraints, 'ik_max_constraints'),
                          (settings.max_primitives, 'ik_max_primitives'))
    links = [k.link_name for k in c.orientation_constraints]
    twice = sorted({link for link in links if links.count(link) > 1})
    if twice:
        raise RequestError('INVALID_GOAL_CONSTRAINTS', f'two orientation constraints on {twice[0]!r}: give one per '
                                                       'link (their tolerances as one constraint)')


def read_ik_request(snap: RobotSnapshot, req, settings: IKSettings) -> IKRequest:
    """The :class:`IKRequest` of a ``moveit_msgs/PositionIKRequest``, as move_group reads it.

    Raises:
        RequestError: COLLISION_CHECKING_UNAVAILABLE, INVALID_GROUP_NAME, INVALID_ROBOT_STATE,
            INVALID_LINK_NAME, FRAME_TRANSFORM_FAILURE, INVALID_GOAL_CONSTRAINTS, or
            NO_IK_SOLUTION (a group without joints, a target beyond the chain's reach).
    """
    view = snap.with_virtual_joint()
    collision, unchecked = collision_policy(snap, req.avoid_collisions, settings.avoid_collisions_policy)
    group = select_group(view, req.group_name)
    base, default_tip, joints = resolve_group(view, group)
    if joints is not None and not joints:
        raise RequestError('NO_IK_SOLUTION', f'group {group.name!r} has no movable joint: there is no IK to solve')
    frames = RequestFrames(view, request_configuration(view, req.robot_state), snap.model_frame)
    tips, poses = _ik_links(view, req, default_tip, group)
    targets = [_target(frames, base, tip, pose) for tip, pose in zip(tips, poses)]
    parsed = IKRequest(group=group, model=view.model, seed=frames.q, base=base, tips=tips, targets=targets,
                        joints=joints, collision=collision, unchecked=unchecked)
    parsed = _on_solve_model(snap, parsed)
    parsed = _with_constraints(parsed, frames, req.constraints, view_base=base)
    _check_reach(parsed)
    timeout = duration_to_seconds(req.timeout)
    return dataclasses.replace(parsed, timeout=timeout if timeout > 0 else settings.timeout)


def collision_policy(snap: RobotSnapshot, avoid_collisions: bool, policy: str) -> tuple[CollisionModel | None, str]:
    """The collision model a request's ``avoid_collisions`` checks with (None: none) and '' or
    the sentence saying the solution is not checked (no collision model, ``policy``
    solve_unchecked).

    Raises:
        RequestError: COLLISION_CHECKING_UNAVAILABLE: no collision model, ``policy`` reject.
    """
    if not avoid_collisions:
        return None, ''
    collision = snap.collision()
    if not isinstance(collision, str):
        return collision, ''
    if policy == REJECT:
        raise RequestError('COLLISION_CHECKING_UNAVAILABLE',
                           f'avoid_collisions=true but {collision}; send avoid_collisions=false '
                           '(or set avoid_collisions_policy to solve_unchecked)')
    return None, f'solved WITHOUT collision checking ({collision})'


def _ik_links(robot: RobotSnapshot, request, default_tip: str, group: IKGroup) -> tuple[list[str], list]:
    """IK links and their PoseStamped targets, as MoveIt reads them."""
    if request.ik_link_names:
        if len(request.ik_link_names) != len(request.pose_stamped_vector):
            raise RequestError('INVALID_LINK_NAME', f'{len(request.ik_link_names)} ik_link_names but '
                                                    f'{len(request.pose_stamped_vector)} poses in pose_stamped_vector')
        names, poses = list(request.ik_link_names), list(request.pose_stamped_vector)
    elif request.pose_stamped_vector:
        if len(request.pose_stamped_vector) != 1:
            raise RequestError('INVALID_LINK_NAME', f'{len(request.pose_stamped_vector)} poses in pose_stamped_vector '
                                                    f'need as many ik_link_names')
        names, poses = [request.ik_link_name], list(request.pose_stamped_vector)
    else:
        names, poses = [request.ik_link_name], [request.pose_stamped]
    tips = []
    for name in names:
        if not name and not default_tip:
            raise RequestError('INVALID_LINK_NAME', f'no IK link named and group {group.name!r} has no tip')
        tips.append(frame_link(robot, name, 'INVALID_LINK_NAME', 'ik_link_name', False) if name else default_tip)
    if len(set(tips)) != len(tips):
        raise RequestError('INVALID_LINK_NAME', f'IK links repeat: {tips}')
    return tips, poses


def _target(frames: RequestFrames, base: str, tip: str, pose) -> np.ndarray:
    """``T_base_tip (4, 4)`` of a ``geometry_msgs/PoseStamped`` target of ``tip``."""
    T_base_frame = frames.transform(base, pose.header.frame_id, f'pose of {tip!r}: header.frame_id')
    try:
        T_frame_tip = pose_to_matrix(pose.pose, f'target pose of {tip!r}')
    except InvalidMessageError as e:
        raise RequestError('INVALID_GOAL_CONSTRAINTS', str(e)) from None
    return T_base_frame @ T_frame_tip


def _on_solve_model(snap: RobotSnapshot, parsed: IKRequest) -> IKRequest:
    """``parsed`` (read on the SRDF's moveit_model) on the model to solve on: the moveit_model
    when the group moves the virtual joint, else the URDF's (the seed without the virtual joint's
    coordinates; targets in the virtual joint's parent frame re-expressed in the root link). A
    group without joints (``None``: group 'all') moves the URDF's joints only."""
    semantic = snap.semantic
    if semantic is None:
        return parsed
    if parsed.joints is not None and semantic.virtual_joint.name in parsed.joints:
        return dataclasses.replace(parsed, semantic=semantic)
    model, base, targets = snap.model, parsed.base, parsed.targets
    if base not in model.link_names:
        T_root_base = frame_transform(parsed.model, parsed.seed, model.root_link, base)
        base, targets = model.root_link, [T_root_base @ T for T in targets]
    for tip in parsed.tips:
        if tip not in model.link_names:
            raise RequestError('INVALID_LINK_NAME', f'IK link {tip!r} is not a link of robot {model.name!r}')
    return dataclasses.replace(parsed, model=model, seed=semantic.model_configuration(parsed.seed), base=base,
                               targets=targets)


def _with_constraints(parsed: IKRequest, frames: RequestFrames, c, view_base: str) -> IKRequest:
    """``parsed`` with the joint bounds and pose constraints of a ``moveit_msgs/Constraints``
    (header frames read in ``frames``, relative to the group's base ``view_base``)."""
    if c.visibility_constraints:
        raise RequestError('INVALID_GOAL_CONSTRAINTS', 'visibility constraints are not supported by /compute_ik '
                                                       '(position, orientation and joint constraints are)')
    try:
        lower, upper = joint_bounds(parsed.model, c.joint_constraints)
    except (UnknownJointError, InvalidMessageError) as e:
        raise RequestError('INVALID_GOAL_CONSTRAINTS', f'joint_constraints: {e}') from None
    T_base_view = (frame_transform(frames.view.model, frames.q, parsed.base, view_base)
                   if parsed.base != view_base else None)
    constraints = pose_constraints(frames, c, view_base, parsed.model, T_base_view)
    return dataclasses.replace(parsed, lower=lower, upper=upper, constraints=constraints)


def _check_reach(parsed: IKRequest) -> None:
    """NO_IK_SOLUTION at once for a pose target (or a whole position region) beyond the chain's
    reach (:func:`robokin_ros.ik.reach_upper_bound`: the sum of its link offsets)."""
    constraints = parsed.constraints
    points = [(tip, float(np.linalg.norm(T[:3, 3])), 0.0) for tip, T in zip(parsed.tips, parsed.targets)
              if not any(isinstance(k, ik.PositionConstraint) and k.link == tip for k in constraints)]
    points += [(k.link, min(float(np.linalg.norm(r.T_base_region[:3, 3])) - r.outer_radius() for r in k.regions),
                float(np.linalg.norm(k.offset))) for k in constraints if isinstance(k, ik.PositionConstraint)]
    for link, distance, offset in points:
        reach = ik.reach_upper_bound(parsed.model, parsed.base, link) + offset
        if distance > reach:
            raise RequestError('NO_IK_SOLUTION', f'the target of {link!r} is {distance:.4g} m from '
                                                 f'{parsed.base!r}, beyond the reach of the chain ({reach:.4g} m, '
                                                 'the sum of its link offsets)')


# ---------------------------------------------------------------------------------- solve
def solve_ik_request(parsed: IKRequest, settings: IKSettings,
                     cancel: ik.CancelToken | None = None) -> IKSolution:
    """Solve ``parsed`` with the node's solver settings (``ik_*`` parameters); a cancelled
    ``cancel`` ends the solve at its next iteration (status timeout, the best iterate).

    Raises:
        RequestError: INVALID_GOAL_CONSTRAINTS (targets the solver refuses; constraints it
            refuses: too many, two orientation constraints on one link), INVALID_LINK_NAME (tips
            it refuses), FAILURE (a solver option from the node's parameters it refuses; see
            :data:`OPTION_ERROR_CODES`), NO_IK_SOLUTION (a solution moving the virtual joint
            found in self-collision).
    """
    checked_by_solver = parsed.collision is not None and parsed.semantic is None
    options = dict(position_tolerance=settings.position_tolerance, rotation_tolerance=settings.rotation_tolerance,
                   active_joints=parsed.joints, lower=parsed.lower, upper=parsed.upper, timeout=parsed.timeout,
                   max_iterations=settings.max_iterations or NO_ITERATION_BUDGET, restarts=settings.restarts,
                   avoid_collisions=parsed.collision if checked_by_solver else False,
                   objective=settings.objectives.get(parsed.group.name) or None, cancel=cancel)
    try:
        if parsed.constraints:
            solved = ik.solve_constrained(parsed.model, parsed.constraints, parsed.seed, base=parsed.base,
                                          poses=dict(zip(parsed.tips, parsed.targets)), **options)
            solution = IKSolution(solved.result, solved.residuals)
        else:
            solution = IKSolution(ik.solve_ik(parsed.model, np.stack(parsed.targets), parsed.tips,
                                              seed=parsed.seed, base=parsed.base, **options))
    except ik.InvalidTargetError as e:
        raise RequestError('INVALID_GOAL_CONSTRAINTS', f'pose targets: {e}') from None
    except ik.IKOptionError as e:
        code = OPTION_ERROR_CODES.get(e.argument, 'FAILURE')
        where = '' if code != 'FAILURE' else f' (IK option {e.argument!r}, from the node\'s ik_* parameters)'
        raise RequestError(code, f'{e}{where}') from None
    result = solution.result
    if parsed.collision is not None and parsed.semantic is not None and bool(result.success) \
            and in_collision(parsed.collision, parsed.semantic.model_configuration(result.q))[0]:
        raise RequestError('NO_IK_SOLUTION', f'no collision-free IK solution for {parsed.tips}: the solution found '
                                             'is in self-collision (a group moving the virtual joint is checked '
                                             'after solving, without retries)')
    return solution


# ---------------------------------------------------------------------------------- reply
def ik_reply(parsed: IKRequest, solution: IKSolution, response) -> str:
    """Put a successful solution into ``response`` and return the reply text.

    Raises:
        RequestError: the failure's MoveIt error code (:func:`failure`).
    """
    result = solution.result
    errors = (f'position error {float(result.position_error):.3g} m, rotation error '
              f'{float(result.rotation_error):.3g} rad after {int(result.iterations)} iterations')
    if solution.residuals:
        errors += '; constraints: ' + ', '.join(r.describe() for r in solution.residuals)
    if not bool(result.success):
        raise failure(parsed, result, 'best ' + errors)
    response.solution = q_to_robot_state(parsed.model, result.q)
    solved = f'solved {parsed.tips} in group {parsed.group.name!r}: {errors}'
    return '; '.join(m for m in (parsed.unchecked, solved, _collision_note(parsed.collision)) if m)


def failure(parsed: IKRequest, result: ik.IKResult, residual: str) -> RequestError:
    """The error of an unsuccessful solve: NO_IK_SOLUTION, or TIMED_OUT when the time ran out,
    with the solver's status and ``residual`` (the best errors)."""
    tips, status = parsed.tips, str(result.status)
    rejected = ' (configurations in self-collision were rejected)' if parsed.collision is not None else ''
    if status == ik.IN_COLLISION:
        return RequestError('NO_IK_SOLUTION', f'no collision-free IK solution for {tips}: the best '
                                              f'configuration is in self-collision; {residual}')
    if status == ik.TIMEOUT:
        return RequestError('TIMED_OUT', f'no IK solution for {tips} within the {parsed.timeout:.3g} s '
                                         f'timeout{rejected}; {residual}')
    if status == ik.CONVERGED:   # converged on the solver's bands, refused by the constraint check
        status = 'constraints not satisfied'
    return RequestError('NO_IK_SOLUTION', f'no IK solution for {tips} ({status}){rejected}; {residual}')


def _collision_note(collision: CollisionModel | None) -> str:
    """'' or what the self-collision check covered (a mesh that could not be loaded is a part of
    the robot the check did not see)."""
    if collision is None:
        return ''
    skipped = (f'; {len(collision.warnings)} collision meshes could not be loaded and are NOT checked'
               if collision.warnings else '')
    return f'checked for self-collision ({len(collision.pairs)} geometry pairs{skipped})'
