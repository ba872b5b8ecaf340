"""/check_state_validity_multiple: ``moveit_msgs/srv/GetMultiStateValidity`` (moveit_msgs 2.7.0),
many states in one call, evaluated together.

As MoveIt's multi-state validation capability reads the request: ``robot_state`` over the latest
joint states is the start, and each ``joint_states[i]`` is laid over the state before it (the
names it does not mention keep their previous value), making state ``i``. The answer is
``valid`` when every state is valid by the rules of /check_state_validity
(:func:`~robokin_ros.node.validity_service.check_state_validity`: self-collision of pairs with a link of
``group_name``, joint, position and orientation constraints; joint limits are not checked, as
move_group does not either); ``contacts`` and ``constraint_result`` are those of the first invalid
state (MoveIt stops there), or of the last state when all are valid. Here the joint constraints
of all states are one array operation and the self-collision check one batched call; position
and orientation constraints are evaluated state by state. No rclpy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
from builtin_interfaces.msg import Time
from std_msgs.msg import Header

from ..collision import pair_collisions
from ..errors import UnknownJointError
from ..model import RobotModel
from .conversions import JointStateMap
from .parameters import DEFAULT_VALIDITY_CAPS, REJECT, ValidityCaps
from .requests import RequestError, RequestFrames, RobotSnapshot, group_links, request_configuration, require_robot
from .validity_service import (
    JointChecks,
    check_constraint_count,
    contact_message,
    eval_results,
    involves,
    pose_constraint_results,
    refuse_visibility,
    self_collision,
)

#: The service's name (MoveIt's multi-state validity capability serves the same type).
SERVICE_NAME = 'check_state_validity_multiple'


def joint_state_configurations(model: RobotModel, base: np.ndarray, joint_states) -> np.ndarray:
    """``(N, n_q)``: ``base (n_q,)`` with each of the N ``sensor_msgs/JointState`` s laid over the
    state before it (MoveIt's ``setVariableValues`` on one state).

    Raises:
        RequestError: INVALID_ROBOT_STATE naming the message: names and positions of different
            lengths, an unknown joint, a non-finite position.
    """
    mapping = JointStateMap(model)
    Q = np.empty((len(joint_states), model.n_q))
    current = np.array(base, dtype=float)
    names = list(joint_states[0].name) if joint_states else []
    if joint_states and all(js.name == names and len(js.position) == len(names) for js in joint_states):
        entries, indices, unknown = mapping.lookup(names)   # the usual request: one array operation
        values = np.array([js.position for js in joint_states], float).reshape(len(joint_states), -1)[:, entries]
        if not unknown and np.isfinite(values).all():
            Q[:] = current
            Q[:, indices] = values
            return Q
    for i, js in enumerate(joint_states):
        names = js.name
        if len(names) != len(js.position):
            raise RequestError('INVALID_ROBOT_STATE', f'joint_states[{i}] has {len(names)} names but '
                                                      f'{len(js.position)} positions')
        update = mapping.parse(names, js.position)
        if update.unknown:
            raise RequestError('INVALID_ROBOT_STATE', f'joint_states[{i}]: '
                                                      f'{UnknownJointError(update.unknown[0], model.q_names)} '
                                                      f'(robot {model.name!r})')
        if update.nonfinite:
            raise RequestError('INVALID_ROBOT_STATE', f'joint_states[{i}]: non-finite positions of '
                                                      f'{list(update.nonfinite)}')
        current[update.q_indices] = update.values
        Q[i] = current
    return Q


@dataclasses.dataclass(frozen=True)
class StateVerdicts:
    """The N states of a request and what holds at each.

    Attributes:
        valid: ``(N,)`` bool: the verdict of /check_state_validity on each state.
        constraint_results: state index -> its ``ConstraintEvalResult`` s (joint constraints
            first, then position, then orientation ones).
        contacts: state index -> its self-collision contacts.
        (Both made on demand: the answer shows one state's.)
    """

    valid: np.ndarray
    constraint_results: Callable[[int], list]
    contacts: Callable[[int], list]


def evaluate_states(snap: RobotSnapshot, request, policy: str = REJECT,
                    on_problem: Callable[[str], None] = lambda m: None) -> StateVerdicts:
    """The :class:`StateVerdicts` of a ``GetMultiStateValidity`` request on ``snap``.

    Raises:
        RequestError: the request cannot be evaluated (bad state, unknown group or joint,
            visibility constraints, collision geometry that cannot be checked with ``policy``
            reject): every state is answered invalid.
    """
    view = snap.with_virtual_joint()
    model = snap.model
    Q_view = joint_state_configurations(view.model, request_configuration(view, request.robot_state),
                                        request.joint_states)
    Q = Q_view if view is snap else np.array([snap.semantic.model_configuration(q) for q in Q_view],
                                             float).reshape(-1, model.n_q)
    links = group_links(view, request.group_name)
    c = request.constraints
    refuse_visibility(c)
    joint_ok, joint_distance = JointChecks.read(model, c.joint_constraints).evaluate(Q)
    valid = joint_ok.all(axis=1)
    pose_results = [[] for _ in Q_view]
    if c.position_constraints or c.orientation_constraints:
        pose_results = [pose_constraint_results(RequestFrames(view, q_view, snap.model_frame), c) for q_view in Q_view]
        valid &= np.array([all(r.result for r in state) for state in pose_results], bool)
    valid &= ~_colliding(snap, Q, links, policy, on_problem)
    return StateVerdicts(valid, lambda i: eval_results(joint_ok[i], joint_distance[i]) + pose_results[i],
                         lambda i: self_collision(snap, Q[i], links, policy, on_problem)[1])


def _colliding(snap: RobotSnapshot, Q: np.ndarray, links: set | None, policy: str,
               on_problem: Callable[[str], None]) -> np.ndarray:
    """``(N,)`` bool: states with a checked link pair involving ``links`` in self-collision, in
    one batched check. A robot whose geometry cannot be checked is handled as
    /check_state_validity handles it (``policy``)."""
    collision = snap.collision()
    if isinstance(collision, str) or not len(Q):
        if len(Q):
            self_collision(snap, Q[0], links, policy, on_problem)   # raises, or says it is unchecked
        return np.zeros(len(Q), bool)
    states = pair_collisions(collision, Q)
    if links is not None:   # the pairs with a link of the group
        states = states[:, [involves([pair], links) for pair in collision.pair_names]]
    return states.any(axis=1)


def check_multi_state_validity(request, response, robot: RobotSnapshot | None, stamp: Time,
                               on_problem: Callable[[str], None] = lambda m: None,
                               on_crash: Callable[[BaseException], None] = lambda e: None,
                               policy: str = REJECT, max_states: int | None = None,
                               caps: ValidityCaps = DEFAULT_VALIDITY_CAPS):
    """Answer a ``moveit_msgs/srv/GetMultiStateValidity`` request (see the module's docstring).

    A request that cannot be evaluated, or with more than ``max_states`` states (parameter
    ``max_validity_states``), or more constraints or region primitives than ``caps`` allows
    (:func:`~robokin_ros.node.validity_service.check_constraint_count`; both checked before any other
    work), is answered ``valid=false`` and ``on_problem`` says why (the service has no error
    code); no request of zero states is invalid.
    """
    response.valid = False
    try:
        n = len(request.joint_states)
        if max_states is not None and n > max_states:
            raise RequestError('INVALID_ROBOT_STATE', f'{n} joint_states, more than max_validity_states = '
                                                      f'{max_states}')
        check_constraint_count(request.constraints, caps)
        snap = require_robot(robot)
        verdicts = evaluate_states(snap, request, policy, on_problem)
        invalid = np.flatnonzero(~verdicts.valid)
        shown = int(invalid[0]) if invalid.size else n - 1
        if shown >= 0:
            header = Header(frame_id=snap.frame_prefix + snap.model.root_link, stamp=stamp)
            response.contacts = [contact_message(header, k) for k in verdicts.contacts(shown)]
            response.constraint_result = verdicts.constraint_results(shown)
        response.valid = not invalid.size
    except RequestError as e:
        on_problem(f'/{SERVICE_NAME} answered valid=false: {e.message}')
    except Exception as e:  # noqa: BLE001  (the service must answer whatever happened)
        on_crash(e)
    return response
