"""What every service reads from a MoveIt request, with MoveIt's meaning of the request fields.

:class:`RobotSnapshot` is what a call reads from the node; :class:`RequestError` an answer with
an error code (:func:`answer` turns it into ``error_code``); :func:`request_configuration`,
:func:`frame_link`, :class:`RequestFrames`, :func:`pose_constraints`, :func:`select_group`,
:func:`resolve_group`, :func:`group_links` and :func:`check_constraint_size` read request fields
against the robot. The handlers over this toolkit, one module per service:
:mod:`~robokin_ros.node.fk_service`, :mod:`~robokin_ros.node.ik_service`,
:mod:`~robokin_ros.node.ik_solutions_service`, :mod:`~robokin_ros.node.validity_service` and
:mod:`~robokin_ros.node.multi_validity_service`. No rclpy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import numpy as np
from moveit_msgs.msg import MoveItErrorCodes

from .. import ik
from ..errors import NonFiniteError, ShapeError, UnknownJointError, UnknownLinkError
from ..kinematics import frame_transform
from ..model import RobotModel
from ..model.groups import ALL_GROUP, IKGroup
from ..model.srdf import SemanticDescription
from .conversions import InvalidMessageError, constraints_from_msg, resolve_link, robot_state_to_q

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


# ---------------------------------------------------------------------------------- request size
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
