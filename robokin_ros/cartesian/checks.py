"""What every point of a Cartesian path must satisfy besides its pose: the joint bounds, no
self-collision (with a collision model) and the path constraints (MoveIt's position and
orientation constraints, judged as /check_state_validity judges them:
:func:`robokin_ros.ik.residuals`). :class:`StateChecks` answers for many points at once and
says in words why the first bad one is bad.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..collision import CollisionModel, in_collision, self_collisions
from ..ik import residuals
from ..model import RobotModel

Array = np.ndarray

#: Slack [rad or m] on the joint bounds (the solver's clamped steps land on them to rounding).
BOUND_SLACK = 1e-9

#: The reasons a point fails, as :attr:`CartesianPathResult.status` names them.
IN_COLLISION = 'in_collision'
PATH_CONSTRAINTS = 'path_constraints'
JOINT_LIMIT = 'joint_limit'


@dataclasses.dataclass(frozen=True)
class StateChecks:
    """The checks of a path's points.

    Attributes:
        model: the robot. lower, upper: ``(n_q,)`` the bounds (the model's limits narrowed by the
            caller's). collision: None, or the collision model (every checked pair).
        constraints: :class:`~robokin_ros.ik.PositionConstraint` /
            :class:`~robokin_ros.ik.OrientationConstraint` s, poses in ``base`` (None: the root).
    """

    model: RobotModel
    lower: Array
    upper: Array
    collision: CollisionModel | None = None
    constraints: tuple = ()
    base: str | None = None

    def failures(self, Q: Array) -> list[str]:
        """For each row of ``Q (k, n_q)``: '' when it passes, else the status of its first failure."""
        out = [''] * len(Q)
        outside = ~np.all((Q >= self.lower - BOUND_SLACK) & (Q <= self.upper + BOUND_SLACK), axis=1)
        colliding = (in_collision(self.collision, Q) if self.collision is not None and len(Q)
                     else np.zeros(len(Q), bool))
        for i in range(len(Q)):
            if outside[i]:
                out[i] = JOINT_LIMIT
            elif colliding[i]:
                out[i] = IN_COLLISION
            elif self.constraints and not all(r.satisfied for r in residuals(self.model, Q[i], self.base,
                                                                            self.constraints)):
                out[i] = PATH_CONSTRAINTS
        return out

    def describe(self, q: Array, status: str) -> str:
        """Why ``q (n_q,)`` fails ``status``, in words."""
        if status == IN_COLLISION and self.collision is not None:
            pairs = self_collisions(self.collision, q).pairs
            return f'in self-collision ({", ".join(f"{a}–{b}" for a, b in pairs[:3])})'
        if status == PATH_CONSTRAINTS:
            found = residuals(self.model, q, self.base, self.constraints)
            return 'path constraints violated: ' + ', '.join(r.describe() for r in found if not r.satisfied)
        if status == JOINT_LIMIT:
            names = [self.model.q_names[i] for i in np.flatnonzero((q < self.lower - BOUND_SLACK)
                                                                   | (q > self.upper + BOUND_SLACK))]
            return f'outside the joint bounds: {names}'
        return status
