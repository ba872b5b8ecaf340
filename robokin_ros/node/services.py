"""/compute_fk and /check_state_validity, and what every service reads from a request, with
MoveIt's meaning of the request fields (/compute_ik's steps: :mod:`.ik_service`).

:class:`RobotSnapshot` is what a call reads from the node; :class:`RequestError` an answer with
an error code; :func:`request_configuration`, :func:`frame_link`, :class:`RequestFrames`,
:func:`pose_constraints`, :func:`select_group` and :func:`resolve_group` read request fields.
The handlers are plain functions of (request, response, robot snapshot, settings), so they run
without DDS in tests. Every failure of /compute_ik and /compute_fk becomes a
``moveit_msgs/MoveItErrorCodes`` constant chosen by name, with a sentence in
``error_code.message``; /check_state_validity (which has no error code) answers ``valid=false``
and logs why. Nothing raises out of a handler.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, PoseStamped, Vector3
from moveit_msgs.msg import ConstraintEvalResult, ContactInformation, MoveItErrorCodes
from std_msgs.msg import Header

from .. import ik
from ..collision import Contact, self_collisions
from ..errors import NonFiniteError, ShapeError, UnknownJointError, UnknownLinkError
from ..kinematics import forward_kinematics, frame_transform
from ..model import SCALAR_TYPES, JointType, RobotModel
from ..model.groups import ALL_GROUP, IKGroup
from ..model.srdf import SemanticDescription
from .conversions import (
    InvalidMessageError,
    constraints_from_msg,
    matrix_to_pose,
    resolve_link,
    robot_state_to_q,
)
from .parameters import DEFAULT_VALIDITY_CAPS, REJECT, ValidityCaps

#: ``error_code.source`` of every answer.
SOURCE = 'robokin'


@dataclasses.dataclass(frozen=True)
class RobotSnapshot:
    """What a service call needs from the node, captured once per call.

    Attributes:
        model: the live model.
        q: ``(n_q,)`` latest joint states (home for joints never received).
        frame_prefix: the node's ``frame_prefix`` (accepted on incoming frame ids, added to replies).
        groups: the IK groups in force for this model (parameters, else SRDF, else derived).
        default_group: the group a request with an empty group_name gets ("" : none).
        collision: returns the robot's :class:`~robokin_ros.collision.CollisionModel`, or a
            sentence saying why there is none (no collision geometry, coal missing).
        srdf: the SRDF in force, read against ``model`` (else ignored). With a virtual joint,
            requests are read against its ``moveit_model`` as move_group reads them against its
            robot model: the virtual joint's parent frame is a frame of requests, the virtual
            joint's value comes from ``robot_state.multi_dof_joint_state`` (default: identity),
            and groups that contain it move it.
    """

    model: RobotModel
    q: np.ndarray
    frame_prefix: str = ''
    groups: Mapping[str, IKGroup] = dataclasses.field(default_factory=lambda: {ALL_GROUP: IKGroup(ALL_GROUP)})
    default_group: str = ''
    collision: Callable[[], object] = lambda: 'no collision model was set up'
    srdf: SemanticDescription | None = None

    @property
    def semantic(self) -> SemanticDescription | None:
        """The SRDF when it was read against this model and has a virtual joint, else None."""
        srdf = self.srdf
        return srdf if srdf is not None and srdf.model is self.model and srdf.virtual_joint is not None else None

    @property
    def model_frame(self) -> str:
        """MoveIt's model frame (of an empty ``frame_id``): a floating or planar virtual joint's
        parent frame, else the root link."""
        semantic = self.semantic
        if semantic is not None and semantic.virtual_joint.type != 'fixed':
            return semantic.virtual_joint.parent_frame
        return self.model.root_link

    def with_virtual_joint(self) -> RobotSnapshot:
        """This snapshot on the SRDF's ``moveit_model`` (the virtual joint at the identity); itself
        when there is no virtual joint."""
        semantic = self.semantic
        if semantic is None:
            return self
        return dataclasses.replace(self, model=semantic.moveit_model, q=semantic.moveit_configuration(self.q),
                                   srdf=None)


class RequestError(Exception):
    """A request the service answers with an error code.

    Attributes:
        code: name of a ``MoveItErrorCodes`` constant. message: the sentence for the caller.
    """

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


def set_error(error_code: MoveItErrorCodes, code: str, message: str = '') -> None:
    """Fill ``error_code`` with the constant named ``code``."""
    error_code.val = getattr(MoveItErrorCodes, code)
    error_code.message = message
    error_code.source = SOURCE


def answer(response, handler: Callable[[], str], on_crash: Callable[[BaseException], None]):
    """Run ``handler`` (which fills ``response`` and returns a success message) and set the code.

    ``RequestError`` becomes its code; any other exception becomes ``CRASH`` (and is reported
    through ``on_crash``) so a bad request can never take the node down.
    """
    try:
        message = handler()
    except RequestError as e:
        set_error(response.error_code, e.code, e.message)
    except Exception as e:  # noqa: BLE001  (the service must answer whatever happened)
        on_crash(e)
        set_error(response.error_code, 'CRASH', f'internal error: {type(e).__name__}: {e}')
    else:
        set_error(response.error_code, 'SUCCESS', message)
    return response


def require_robot(robot: RobotSnapshot | None) -> RobotSnapshot:
    """``robot``; FAILURE while the node has no robot description."""
    if robot is None:
        raise RequestError('FAILURE', 'no robot description received yet: the node is waiting for one')
    return robot


def request_configuration(robot: RobotSnapshot, state) -> np.ndarray:
    """``(n_q,)``: the latest joint states overlaid with a request's ``moveit_msgs/RobotState``."""
    try:
        return robot_state_to_q(robot.model, state, robot.q)
    except (ShapeError, NonFiniteError, InvalidMessageError) as e:
        raise RequestError('INVALID_ROBOT_STATE', f'robot_state: {e}') from None
    except UnknownJointError as e:
        raise RequestError('INVALID_ROBOT_STATE', f'robot_state: {e} (robot {robot.model.name!r})') from None


def frame_link(robot: RobotSnapshot, name: str, code: str, what: str, empty_is_root: bool,
               model_frame: str = '') -> str:
    """Link of a frame id (empty: ``model_frame``, else the root link, when ``empty_is_root``);
    the error ``code`` naming ``what`` when it is no link of the robot."""
    if not name and empty_is_root and model_frame:
        return model_frame
    try:
        return resolve_link(robot.model, name, robot.frame_prefix, empty_is_root)
    except UnknownLinkError as e:
        raise RequestError(code, f'{what}: {e} (robot {robot.model.name!r})') from None


@dataclasses.dataclass(frozen=True)
class RequestFrames:
    """The frames of a request's headers, read as move_group reads them.

    Attributes:
        view: the snapshot requests are read against (:meth:`RobotSnapshot.with_virtual_joint`).
        q: ``(view.model.n_q,)`` the request's configuration.
        model_frame: MoveIt's model frame, the frame of an empty ``frame_id``
            (:attr:`RobotSnapshot.model_frame` of the snapshot before the view).
    """

    view: RobotSnapshot
    q: np.ndarray
    model_frame: str

    def transform(self, frame: str, frame_id: str, what: str) -> np.ndarray:
        """``T_frame_header (4, 4)``: the pose of a header's ``frame_id`` in the link ``frame``;
        FRAME_TRANSFORM_FAILURE naming ``what`` when ``frame_id`` is no link."""
        link = frame_link(self.view, frame_id, 'FRAME_TRANSFORM_FAILURE', what, True, self.model_frame)
        return frame_transform(self.view.model, self.q, frame, link)


def pose_constraints(frames: RequestFrames, c, frame: str, model: RobotModel,
                     T_base_frame: np.ndarray | None = None) -> list:
    """A request's ``moveit_msgs/Constraints`` position and orientation constraints as
    :class:`robokin_ros.ik.PositionConstraint` and :class:`robokin_ros.ik.OrientationConstraint`
    with poses in the solve's base: header frames resolved by ``frames`` relative to the link
    ``frame``, then mapped by ``T_base_frame (4, 4)`` (None: the identity, ``frame`` is the
    base); their links must be links of ``model``."""
    def frame_pose(frame_id: str, what: str) -> np.ndarray:
        T_frame_header = frames.transform(frame, frame_id, f'{what}: header.frame_id')
        return T_frame_header if T_base_frame is None else T_base_frame @ T_frame_header

    try:
        constraints = constraints_from_msg(c.position_constraints, c.orientation_constraints, frame_pose)
    except (InvalidMessageError, ik.IKOptionError) as e:
        raise RequestError('INVALID_GOAL_CONSTRAINTS', str(e)) from None
    for link in sorted({k.link for k in constraints}):
        if link not in model.link_names:
            raise RequestError('INVALID_LINK_NAME', f'constraint on {link!r}: not a link of robot {model.name!r}')
    return constraints


# ---------------------------------------------------------------------------------- groups
def select_group(robot: RobotSnapshot, name: str) -> IKGroup:
    """The group a request names (empty: the default group, or the only group there is)."""
    groups = robot.groups
    if not name:
        name = robot.default_group or (next(iter(groups)) if len(groups) == 1 else '')
        if not name:
            raise RequestError('INVALID_GROUP_NAME', f'group_name is empty and no default_ik_group is set; '
                                                     f'groups: {sorted(groups)}')
    group = groups.get(name)
    if group is None:
        raise RequestError('INVALID_GROUP_NAME', f'unknown group {name!r}; groups: {sorted(groups)}')
    return group


def resolve_group(robot: RobotSnapshot, group: IKGroup) -> tuple[str, str, tuple[str, ...] | None]:
    """Base link, default tip ("" if none) and movable joints (None: all) of a group on the model."""
    model = robot.model
    try:
        base = model.root_link if not group.base else model.link_names[model.link_index(group.base)]
        tip = model.link_names[model.link_index(group.tip)] if group.tip else ''
        for joint in group.joints:
            model.joint_index(joint)
    except (UnknownLinkError, UnknownJointError) as e:
        raise RequestError('INVALID_GROUP_NAME',
                           f'group {group.name!r} does not fit robot {model.name!r}: {e}') from None
    if group.joints:
        return base, tip, group.joints
    if not tip:
        return base, tip, None
    joints = model.path_joints(base, tip)
    return base, tip, joints


# ---------------------------------------------------------------------------------- services
def compute_fk(request, response, robot: RobotSnapshot | None, stamp: Time,
               on_crash: Callable[[BaseException], None] = lambda e: None):
    """Answer a ``moveit_msgs/srv/GetPositionFK`` request: poses of ``fk_link_names`` in
    ``header.frame_id`` (empty: the root link) for ``robot_state`` over the latest joint states."""

    def handle() -> str:
        snap = require_robot(robot)
        view = snap.with_virtual_joint()
        model = view.model
        frame = frame_link(view, request.header.frame_id, 'FRAME_TRANSFORM_FAILURE', 'header.frame_id', True,
                      snap.model_frame)
        q = request_configuration(view, request.robot_state)
        links = [frame_link(view, name, 'INVALID_LINK_NAME', 'fk_link_names', False) for name in request.fk_link_names]
        poses = forward_kinematics(model, q)
        frame_id = request.header.frame_id or snap.frame_prefix + snap.model_frame
        response.pose_stamped = [
            PoseStamped(header=Header(frame_id=frame_id, stamp=stamp),
                        pose=matrix_to_pose(frame_transform(model, q, frame, link, poses=poses)))
            for link in links]
        response.fk_link_names = list(request.fk_link_names)
        return f'{len(links)} poses in {frame_id!r}'

    return answer(response, handle, on_crash)


def group_links(robot: RobotSnapshot, name: str) -> set | None:
    """Links a group's joints move (MoveIt checks only pairs involving them); None: every link."""
    if not name:
        return None
    group = select_group(robot, name)
    _, _, joints = resolve_group(robot, group)
    model = robot.model
    joints = model.active_joints.tolist() if joints is None else [model.joint_index(j) for j in joints]
    moved = np.zeros(model.n_links, bool)
    for j in joints:
        moved |= model.support_mask[:, j + 1]   # links with joint j (child link j + 1) on their path
    return {model.link_names[i] for i in np.flatnonzero(moved)}


@dataclasses.dataclass(frozen=True)
class JointChecks:
    """``moveit_msgs/JointConstraint`` s read against a model, evaluated on many states at once.

    Attributes:
        q_index: ``(k,)`` the q coordinate of each constraint.
        wrap: ``(k,)`` bool: the joint is continuous (its offset is wrapped to [-π, π]).
        position, below, above: ``(k,)`` each constraint's position and tolerances.
    """

    q_index: np.ndarray
    wrap: np.ndarray
    position: np.ndarray
    below: np.ndarray
    above: np.ndarray

    @classmethod
    def read(cls, model: RobotModel, constraints) -> JointChecks:
        """The checks of ``constraints`` on ``model``.

        Raises:
            RequestError: INVALID_GOAL_CONSTRAINTS: a constraint names no independent 1-DOF joint,
                or its position is not finite, or a tolerance is NaN.
        """
        index = {model.all_joint_names[j]: j for j in model.active_joints.tolist()
                 if model.joint_types[j] in SCALAR_TYPES}
        rows = []
        for c in constraints:
            if c.joint_name not in index:
                raise RequestError('INVALID_GOAL_CONSTRAINTS', f'joint constraint on {c.joint_name!r}: not an '
                                                               f'independent 1-DOF joint of robot {model.name!r}')
            if not math.isfinite(c.position) or math.isnan(c.tolerance_below) or math.isnan(c.tolerance_above):
                raise RequestError('INVALID_GOAL_CONSTRAINTS', f'joint constraint on {c.joint_name!r}: position must '
                                                               f'be finite and tolerances numbers, got position '
                                                               f'{c.position!r}, tolerances {c.tolerance_below!r} '
                                                               f'below, {c.tolerance_above!r} above')
            j = index[c.joint_name]
            rows.append((model.joint_q_index[j], model.joint_types[j] == JointType.CONTINUOUS, c.position,
                         c.tolerance_below, c.tolerance_above))
        columns = list(zip(*rows)) or [()] * 5
        return cls(np.array(columns[0], np.intp), np.array(columns[1], bool),
                   *(np.array(column, float) for column in columns[2:]))

    def evaluate(self, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """MoveIt's JointConstraint::decide at ``Q (N, n_q)``: the offset from ``position``, wrapped
        for continuous joints, within ``[-tolerance_below, tolerance_above]``.

        Returns:
            ``(N, k)`` bool: satisfied, and ``(N, k)`` distance ``|offset|``.
        """
        offset = Q[:, self.q_index] - self.position
        two_pi = 2.0 * math.pi
        offset = np.where(self.wrap, offset - two_pi * np.round(offset / two_pi), offset)
        ok = (-self.below - 1e-12 <= offset) & (offset <= self.above + 1e-12)
        return ok, np.abs(offset)


def eval_results(ok: np.ndarray, distance: np.ndarray) -> list:
    """``ConstraintEvalResult`` s of one state's ``(k,)`` verdicts and distances."""
    return [ConstraintEvalResult(result=bool(r), distance=float(d)) for r, d in zip(ok.tolist(), distance.tolist())]


def pose_constraint_results(frames: RequestFrames, c) -> list:
    """``ConstraintEvalResult`` of each position, then orientation constraint at ``frames.q`` of
    ``frames.view.model`` (MoveIt's decide; distance: how far outside the constraint, 0 inside)."""
    model = frames.view.model
    constraints = pose_constraints(frames, c, model.root_link, model)
    return [ConstraintEvalResult(result=r.satisfied, distance=r.excess)
            for r in ik.residuals(model, frames.q, model.root_link, constraints)]


def self_collision(snap: RobotSnapshot, q: np.ndarray, links: set | None, policy: str,
                   on_problem: Callable[[str], None]) -> tuple[bool, list]:
    """Whether a checked link pair involving ``links`` (None: any link) is in self-collision at
    ``q (n_q,)`` of ``snap.model``, and the contacts of those pairs; (False, []) when the robot
    has no collision geometry, or when its geometry cannot be checked and ``policy`` is
    solve_unchecked (``on_problem`` says so).

    Raises:
        RequestError: the geometry cannot be checked and ``policy`` is reject.
    """
    collision = snap.collision()
    if not isinstance(collision, str):
        found = self_collisions(collision, q, contacts=True)
        return (involves(found.pairs, links),
                [k for k in found.contacts if links is None or k.link_a in links or k.link_b in links])
    model = snap.model
    if any(model.link_collisions):
        if policy == REJECT:
            raise RequestError('COLLISION_CHECKING_UNAVAILABLE',
                               f'the collision geometry of robot {model.name!r} cannot be checked '
                               f'({collision}); set avoid_collisions_policy to solve_unchecked to answer from '
                               'the joint constraints alone')
        on_problem(f'/check_state_validity: self-collision NOT checked ({collision}); answered from the joint '
                   'constraints alone (avoid_collisions_policy solve_unchecked)')
    return False, []


def involves(pairs, links: set | None) -> bool:
    """Some link pair ``(a, b)`` of ``pairs`` has a link in ``links`` (None: any pair at all)."""
    return any(links is None or a in links or b in links for a, b in pairs)


def contact_message(header: Header, k: Contact) -> ContactInformation:
    """A contact between two links as ``moveit_msgs/ContactInformation``."""
    return ContactInformation(header=header, position=Point(x=float(k.position[0]), y=float(k.position[1]),
                                                            z=float(k.position[2])),
                              normal=Vector3(x=float(k.normal[0]), y=float(k.normal[1]), z=float(k.normal[2])),
                              depth=float(k.depth), contact_body_1=k.link_a, body_type_1=ContactInformation.ROBOT_LINK,
                              contact_body_2=k.link_b, body_type_2=ContactInformation.ROBOT_LINK)


def check_constraint_count(c, caps: ValidityCaps) -> None:
    """Refuse a state-validity request's ``moveit_msgs/Constraints`` before any of its work
    (:func:`check_constraint_size` with ``validity_max_constraints`` / ``validity_max_primitives``;
    a mesh region is refused later without its vertices being read).

    Raises:
        RequestError: INVALID_GOAL_CONSTRAINTS naming the count, the cap and its parameter.
    """
    check_constraint_size(c, (caps.max_constraints, 'validity_max_constraints'),
                          (caps.max_primitives, 'validity_max_primitives'))


def check_constraint_size(c, constraints: tuple[int, str], primitives: tuple[int, str]) -> None:
    """Refuse ``moveit_msgs/Constraints`` ``c`` with more constraints (joint, position,
    orientation and visibility together) or more region primitives and meshes over its position
    constraints than allowed; ``constraints`` and ``primitives`` are each (cap, the parameter
    holding it).

    Raises:
        RequestError: INVALID_GOAL_CONSTRAINTS naming the count, the cap and its parameter.
    """
    count = (len(c.joint_constraints) + len(c.position_constraints) + len(c.orientation_constraints)
             + len(c.visibility_constraints))
    if count > constraints[0]:
        raise RequestError('INVALID_GOAL_CONSTRAINTS', f'{count} constraints in one request: at most '
                                                       f'{constraints[0]} (parameter {constraints[1]})')
    regions = sum(len(k.constraint_region.primitives) + len(k.constraint_region.meshes)
                  for k in c.position_constraints)
    if regions > primitives[0]:
        raise RequestError('INVALID_GOAL_CONSTRAINTS', f'{regions} region primitives and meshes in one request: '
                                                       f'at most {primitives[0]} (parameter {primitives[1]})')


def refuse_visibility(c) -> None:
    """INVALID_GOAL_CONSTRAINTS for a ``moveit_msgs/Constraints`` with visibility constraints."""
    if c.visibility_constraints:
        raise RequestError('INVALID_GOAL_CONSTRAINTS', 'visibility constraints are not evaluated (joint, '
                                                       'position and orientation constraints are)')


def check_state_validity(request, response, robot: RobotSnapshot | None, stamp: Time,
                         on_problem: Callable[[str], None] = lambda m: None,
                         on_crash: Callable[[BaseException], None] = lambda e: None, policy: str = REJECT,
                         caps: ValidityCaps = DEFAULT_VALIDITY_CAPS):
    """Answer a ``moveit_msgs/srv/GetStateValidity`` request as move_group does: the state
    (``robot_state`` over the latest joint states) is valid when no checked link pair is in
    self-collision (only pairs with a link of ``group_name`` when one is given) and every joint,
    position and orientation constraint holds (their meaning: :mod:`robokin_ros.ik.constraints`).
    Contacts are listed (bodies ``ROBOT_LINK``, point and normal in the root frame, normal from
    body 1 towards body 2); constraints get one ``constraint_result`` each, joint constraints
    first, then position, then orientation ones (``distance``: how far outside, 0 when met).
    Visibility constraints are not evaluated: such a request is answered ``valid=false`` (the
    service has no error code) and ``on_problem`` says why, as for an unknown group or joint, a
    robot without a model, or more constraints or region primitives than ``caps`` allows
    (checked before any other work: :func:`check_constraint_count`). Joint limits are not checked
    (move_group does not either).

    A robot without collision geometry is never in self-collision. One whose geometry cannot be
    checked (coal missing, or none of its meshes loads) is not silently valid: with ``policy``
    (parameter ``avoid_collisions_policy``) ``reject`` the answer is ``valid=false``, with
    ``solve_unchecked`` it comes from the joint constraints alone; ``on_problem`` says so either way."""
    response.valid = False
    try:
        check_constraint_count(request.constraints, caps)
        snap = require_robot(robot)
        view = snap.with_virtual_joint()
        model = snap.model
        q_view = request_configuration(view, request.robot_state)
        q = snap.semantic.model_configuration(q_view) if view is not snap else q_view
        links = group_links(view, request.group_name)
        c = request.constraints
        refuse_visibility(c)
        ok, distance = JointChecks.read(model, c.joint_constraints).evaluate(q[None])
        constraint_results = (eval_results(ok[0], distance[0])
                              + pose_constraint_results(RequestFrames(view, q_view, snap.model_frame), c))
        colliding, contacts = self_collision(snap, q, links, policy, on_problem)
        header = Header(frame_id=snap.frame_prefix + model.root_link, stamp=stamp)
        response.contacts = [contact_message(header, k) for k in contacts]
        response.constraint_result = constraint_results
        response.valid = not colliding and all(r.result for r in constraint_results)
    except RequestError as e:
        on_problem(f'/check_state_validity answered valid=false: {e.message}')
    except Exception as e:  # noqa: BLE001  (the service must answer whatever happened)
        on_crash(e)
    return response
