"""/check_state_validity: ``moveit_msgs/srv/GetStateValidity``, whether one state is valid, as
move_group decides it, and the rules it decides by (:mod:`~robokin_ros.node.multi_validity_service`
applies them to many states at once).

:func:`check_state_validity` is the handler, a plain function of (request, response, robot
snapshot, stamp, ...) over :mod:`~robokin_ros.node.requests`, so it runs without DDS in tests.
The service has no error code: a request it cannot evaluate is answered ``valid=false`` and the
reason is logged. Nothing raises out of it. The rules: :class:`JointChecks` (joint
constraints, on many states at once), :func:`pose_constraint_results`, :func:`self_collision`,
:func:`check_constraint_count` and :func:`refuse_visibility`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Vector3
from moveit_msgs.msg import ConstraintEvalResult, ContactInformation
from std_msgs.msg import Header

from .. import ik
from ..collision import Contact, self_collisions
from ..model import SCALAR_TYPES, JointType, RobotModel
from .parameters import DEFAULT_VALIDITY_CAPS, REJECT, ValidityCaps
from .requests import (
    RequestError,
    RequestFrames,
    RobotSnapshot,
    check_constraint_size,
    group_links,
    pose_constraints,
    request_configuration,
    require_robot,
)


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
