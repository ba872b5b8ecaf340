"""The outcome of an IK call: :class:`IKResult` and its status values."""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

#: Values of :attr:`IKResult.status`.
CONVERGED, MAX_ITERATIONS, TIMEOUT, NO_FREE_JOINTS = "converged", "max_iterations", "timeout", "no_free_joints"
#: Status of a problem whose only configurations within tolerance were in self-collision
#: (``avoid_collisions``).
IN_COLLISION = "in_collision"


@dataclasses.dataclass(frozen=True)
class IKResult:
    """Outcome of :func:`solve_ik`, one entry per problem (batch shape ``...``).

    Attributes:
        q: ``(..., n_q)`` best configuration per problem: the converged solution closest to its
            seed, else the iterate with the smallest residual (the seed if nothing was better).
            Joints that may not move keep their seed values; continuous joints are reported
            within π of their seed value.
        success: ``(...)`` bool: every tip within its tolerances and ``q`` within the bounds.
        position_error: ``(...)`` [m] worst tip position error ``‖p_tip - p_target‖`` (raw,
            before per-axis tolerances are applied).
        rotation_error: ``(...)`` [rad] worst tip rotation angle ``|log(R_targetᵀ R_tip)|`` (raw).
        iterations: ``(...)`` int, iterations spent on the problem.
        status: ``(...)`` str: ``"converged"``, ``"max_iterations"`` (iteration budget spent),
            ``"timeout"`` (time budget spent), ``"no_free_joints"`` (no allowed joint moves a tip)
            or ``"in_collision"`` (``avoid_collisions``: the reported ``q`` meets the tolerances
            but is in self-collision).
    """

    q: Array
    success: np.ndarray
    position_error: Array
    rotation_error: Array
    iterations: np.ndarray
    status: np.ndarray
