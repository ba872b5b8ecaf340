"""~/compute_ik_solutions: the distinct IK solutions (branches) of one /compute_ik request.

The request is ``robokin_interfaces/srv/GetPositionIKSolutions``: a ``moveit_msgs/PositionIKRequest``
read exactly as /compute_ik reads it (:func:`~robokin_ros.node.ik_service.read_ik_request`) and
``max_solutions`` (0: parameter ``ik_max_solutions``; more is clamped to it). The answer lists up to
that many solutions as ``moveit_msgs/RobotState`` s, pairwise farther apart than the core's
``solution_distance`` with revolute joints of a range over 2π compared modulo 2π
(:func:`robokin_ros.ik.solve_ik` with ``solutions=k``), ordered by the group's objective (else
the nearest to the seed first), all found within the request's timeout; ``error_code`` as
/compute_ik's (SUCCESS with at least one). Pose targets only: a request with constraints gets
INVALID_GOAL_CONSTRAINTS.
"""

from __future__ import annotations

import numpy as np

from .. import ik
from ..collision import in_collision
from .conversions import q_to_robot_state
from .ik_service import NO_ITERATION_BUDGET, Handling, IKRequest, failure, read_ik_request
from .parameters import IKSettings
from .requests import RequestError, RobotSnapshot, answer, require_robot

#: The service's name, under the node's name (``/robokin/compute_ik_solutions``).
SERVICE_NAME = 'compute_ik_solutions'
FIELDS = ('q', 'success', 'position_error', 'rotation_error', 'iterations', 'status')


def compute_ik_solutions(request, response, robot: RobotSnapshot | None, settings: IKSettings,
                         handling: Handling | None = None):
    """Answer a ``robokin_interfaces/srv/GetPositionIKSolutions`` request (module docstring)."""
    handling = handling or Handling()

    def handle() -> str:
        parsed = read_ik_request(require_robot(robot), request.ik_request, settings)
        if parsed.constraints:
            raise RequestError('INVALID_GOAL_CONSTRAINTS', f'/{SERVICE_NAME} solves pose targets only: send '
                                                           'constraints to /compute_ik')
        asked = int(request.max_solutions)
        count = min(asked or settings.max_solutions, settings.max_solutions)
        result = _distinct_solutions(parsed, settings, count, handling.cancel)
        first = ik.IKResult(*(np.asarray(getattr(result, f))[0] for f in FIELDS))
        residual = (f'position error {float(first.position_error):.3g} m, rotation error '
                    f'{float(first.rotation_error):.3g} rad of the first solution')
        if not bool(first.success):
            raise failure(parsed, first, residual)
        response.solutions = [q_to_robot_state(parsed.model, q) for q in np.asarray(result.q)]
        clamped = (f' (max_solutions {asked} clamped to ik_max_solutions = {settings.max_solutions})'
                   if asked > settings.max_solutions else '')
        solved = (f'{len(response.solutions)} distinct solutions of {parsed.tips} in group '
                  f'{parsed.group.name!r} (asked {count}{clamped}); {residual}')
        return '; '.join(m for m in (parsed.unchecked, solved) if m)

    return answer(response, handle, handling.on_crash)


def _distinct_solutions(parsed: IKRequest, settings: IKSettings, count: int,
                        cancel: ik.CancelToken | None) -> ik.IKResult:
    """Up to ``count`` distinct solutions of ``parsed`` (batch ``(m,)``; the primary solve's
    failed result when there is none); those in self-collision dropped when the group moves the
    virtual joint (checked after solving, as /compute_ik does)."""
    checked_by_solver = parsed.collision is not None and parsed.semantic is None
    try:
        result = ik.solve_ik(
            parsed.model, np.stack(parsed.targets), parsed.tips, seed=parsed.seed, base=parsed.base,
            position_tolerance=settings.position_tolerance, rotation_tolerance=settings.rotation_tolerance,
            active_joints=parsed.joints, lower=parsed.lower, upper=parsed.upper, timeout=parsed.timeout,
            max_iterations=settings.max_iterations or NO_ITERATION_BUDGET,
            avoid_collisions=parsed.collision if checked_by_solver else False,
            objective=settings.objectives.get(parsed.group.name) or None, solutions=count, cancel=cancel)
    except ik.InvalidTargetError as e:
        raise RequestError('INVALID_GOAL_CONSTRAINTS', f'pose targets: {e}') from None
    if parsed.collision is None or parsed.semantic is None or not np.asarray(result.success).any():
        return result
    free = ~in_collision(parsed.collision, parsed.semantic.model_configuration(np.asarray(result.q)))
    if not free.any():
        raise RequestError('NO_IK_SOLUTION', f'no collision-free IK solution for {parsed.tips}: every solution '
                                             'found is in self-collision')
    return ik.IKResult(*(np.asarray(getattr(result, f))[free] for f in FIELDS))
