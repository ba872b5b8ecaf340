"""The Cartesian control law: damped least squares on the group's Jacobian, damping that grows
smoothly near a singularity, and the slow-down of motion towards one (MoveIt Servo's condition
number thresholds).

The Jacobian's linear rows are divided by the group's characteristic length ``L`` (so 1 rad of
rotation weighs as ``L`` metres of tip motion) before its singular values are compared: a small
arm's Jacobian is not ill-conditioned merely because its links are short. On an arm under 6 DOF
the least-squares solution in that metric follows the achievable projection of the twist (the
part the arm can produce); what it cannot is reported, not halted on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .parameters import ServoParameters
from .status import StatusCode

#: Motion away from a singularity is never slowed below this factor (it must be able to leave).
LEAVING_FLOOR = 0.2
#: A twist whose unachievable part is below this fraction of its norm is followed as given.
ACHIEVABLE_TOLERANCE = 1e-3


@dataclass(frozen=True)
class DampedSolution:
    """One damped least-squares solve.

    Attributes:
        velocity: joint velocities ``(n,)``.
        condition: ``σ_max / σ_min`` of the scaled Jacobian (``inf`` at a singularity).
        damping: ``λ`` used (0 above the lower singularity threshold).
        unachievable: the fraction of the twist's norm outside the Jacobian's range (0 on a
            non-singular arm of 6 or more joints).
        singular_values: of the scaled Jacobian, largest first.
    """

    velocity: np.ndarray
    condition: float
    damping: float
    unachievable: float
    singular_values: np.ndarray


def condition_number(singular_values: np.ndarray) -> float:
    """``σ_max / σ_min`` (``inf`` when ``σ_min`` is 0)."""
    smallest = singular_values[-1]
    return float(singular_values[0] / smallest) if smallest > 0.0 else float("inf")


def damped_solve(jacobian: np.ndarray, twist: np.ndarray, parameters: ServoParameters) -> DampedSolution:
    """Joint velocities giving ``twist`` (both scaled) by damped least squares.

    The damping is ``λ² = (d σ_max)² (1 - (σ_min / σ₀)²)`` below ``σ₀ = σ_max /
    lower_singularity_threshold`` (``d``: ``singularity_damping``) and 0 above: continuous, zero on
    well-conditioned states (the twist is followed exactly), ``d σ_max`` at a singularity (joint
    speeds stay bounded).
    """
    u, s, vt = np.linalg.svd(jacobian, full_matrices=False)
    if s[0] <= 0.0:
        return DampedSolution(np.zeros(jacobian.shape[1]), float("inf"), 0.0, 1.0 if twist.any() else 0.0, s)
    threshold = s[0] / parameters.lower_singularity_threshold
    ratio = s[-1] / threshold
    lam2 = (parameters.singularity_damping * s[0]) ** 2 * (1.0 - ratio * ratio) if ratio < 1.0 else 0.0
    coefficients = u.T @ twist
    velocity = vt.T @ (coefficients * s / (s * s + lam2))
    norm = float(np.sqrt(twist @ twist))
    outside = float(np.sqrt(max(norm * norm - coefficients @ coefficients, 0.0))) / norm if norm > 0.0 else 0.0
    return DampedSolution(velocity, condition_number(s), float(np.sqrt(lam2)), outside, s)


def singularity_scale(condition: float, approaching: bool, parameters: ServoParameters) -> tuple[float, list]:
    """The factor slowing motion near a singularity and its report ``[(code, message)]``.

    Between ``lower_singularity_threshold`` and the hard threshold (``hard_stop_singularity_threshold``,
    times ``leaving_singularity_threshold_multiplier`` when moving away) the factor falls from 1
    to 0 along a smoothstep (no kink where slowing starts); beyond the hard threshold, motion
    towards the singularity is 0 (``HALT_FOR_SINGULARITY``, reached by braking at the
    acceleration limits, never at once). Motion away is slowed to :data:`LEAVING_FLOOR` at most.
    """
    lower = parameters.lower_singularity_threshold
    if condition <= lower:
        return 1.0, []
    hard = parameters.hard_stop_singularity_threshold
    if not approaching:
        hard *= parameters.leaving_singularity_threshold_multiplier
    x = min(max((condition - lower) / (hard - lower), 0.0), 1.0)
    scale = 1.0 - x * x * (3.0 - 2.0 * x)
    if not approaching:
        scale = max(scale, LEAVING_FLOOR)
    if approaching and scale <= 0.0:
        return 0.0, [(StatusCode.HALT_FOR_SINGULARITY, f"at a singularity (condition number {condition:.3g})")]
    code = (StatusCode.DECELERATE_FOR_APPROACHING_SINGULARITY if approaching
            else StatusCode.DECELERATE_FOR_LEAVING_SINGULARITY)
    words = "approaching" if approaching else "leaving"
    return scale, [(code, f"{words} a singularity (condition number {condition:.3g}): slowed to {scale:.0%}")]
