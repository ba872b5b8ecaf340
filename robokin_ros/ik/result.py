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
        position_error: ``(...)`` [m] worst tip position error ``‖p_tip - p_target‖`` at the
            returned ``q`` (raw, before per-axis tolerances are applied; never another attempt's).
        rotation_error: ``(...)`` [rad] worst tip rotation angle ``|log(R_targetᵀ R_tip)|`` at the
            returned ``q`` (raw).
        iterations: ``(...)`` int, iterations spent on the problem.
        status: ``(...)`` str: ``"converged"``, ``"max_iterations"`` (iteration budget spent),
            ``"timeout"`` (time budget spent), ``"no_free_joints"`` (no allowed joint moves a tip)
            or ``"in_collision"`` (``avoid_collisions``: the reported ``q`` is in self-collision,
            whether it meets the tolerances or is the best iterate of a spent budget).
    """

    q: Array
    success: np.ndarray
    position_error: Array
    rotation_error: Array
    iterations: np.ndarray
    status: np.ndarray

    def describe(self, index: tuple = ()) -> str:
        """One line on problem ``index`` (``()``: a single problem): solved or not, its status,
        iterations, and the errors of the configuration returned (``q[index]``), e.g.
        ``"solved (converged) in 12 iterations: position error 3.1e-06 m, rotation error 2e-06 rad"``,
        ``"not solved (in_collision) after 2000 iterations: the configuration returned is in
        self-collision; position error ..."`` or ``"not solved (max_iterations) after 2000
        iterations: the best configuration found has position error 0.59 m, rotation error 1.57 rad"``.

        Raises:
            IndexError: ``index`` not a problem of the batch.
        """
        index = tuple(index)
        if len(index) != np.ndim(self.success):
            raise IndexError(f"index {index} of a batch of shape {np.shape(self.success)}: give one per axis")
        errors = (f"position error {float(np.asarray(self.position_error)[index]):.3g} m, "
                  f"rotation error {float(np.asarray(self.rotation_error)[index]):.3g} rad")
        status, iterations = str(np.asarray(self.status)[index]), int(np.asarray(self.iterations)[index])
        if bool(np.asarray(self.success)[index]):
            return f"solved ({status}) in {iterations} iterations: {errors}"
        if status == IN_COLLISION:
            return (f"not solved (in_collision) after {iterations} iterations: the configuration returned is in "
                    f"self-collision; {errors}")
        return f"not solved ({status}) after {iterations} iterations: the best configuration found has {errors}"
