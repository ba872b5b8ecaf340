"""IK options checked once per call: tolerances, weights, iteration budgets and joint bounds."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numpy.typing import NDArray

from ..checks import is_real, is_whole, numbers
from ..errors import IKOptionError, JointLimitError, NonFiniteError, ShapeError
from ..model import RobotModel

Array = NDArray[np.float64]


def effective_bounds(model: RobotModel, lower, upper) -> tuple[Array, Array]:
    """Effective ``(n_q,)`` bounds: the model's limits intersected with the overrides."""
    if lower is None and upper is None and not model.quaternion_slices:
        return model.q_lower, model.q_upper
    lo, hi = model.q_lower.copy(), model.q_upper.copy()
    for name, given, pick in (("lower", lower, np.maximum), ("upper", upper, np.minimum)):
        if given is None:
            continue
        given = numbers(given, name, vector=True)
        if given.shape != (model.n_q,):
            raise ShapeError(name, f"({model.n_q},)", given.shape)
        if np.isnan(given).any():
            bad = np.flatnonzero(np.isnan(given))
            raise NonFiniteError(name, bad.tolist(), [model.q_names[i] for i in bad])
        if name == "lower":
            lo = pick(lo, given)
        else:
            hi = pick(hi, given)
    for s in model.quaternion_slices:
        lo[s], hi[s] = -1.0, 1.0
    empty = np.flatnonzero(lo > hi)
    if empty.size:
        i = empty[0]
        value = hi[i] if upper is not None and hi[i] < model.q_upper[i] else lo[i]
        raise JointLimitError(model.q_names[i], float(value),
                              float(model.q_lower[i]), float(model.q_upper[i]))
    return lo, hi


@dataclasses.dataclass(frozen=True)
class Tolerances:
    position: float
    rotation: float
    rows: tuple[tuple[int, int, float, float], ...]  # constrained axes: (tip, axis 0-5, √weight, dead band)
    world: bool                                      # no dead band, no free axis: step in world axes
    max_iterations: int
    restarts: int


#: Largest position [m] or rotation [rad] tolerance accepted (larger ones mean nothing and
#: would overflow squared residuals).
MAX_TOLERANCE = 1e6


def parse_options(nt, position_tolerance, rotation_tolerance, axis_tolerances, weights, max_iterations,
             restarts) -> Tolerances:
    """Validate the options (but the timeout)."""
    for name, value in (("position_tolerance", position_tolerance), ("rotation_tolerance", rotation_tolerance)):
        if not is_real(value) or not 0 <= value <= MAX_TOLERANCE:
            raise IKOptionError(f"{name} must be a number in [0, {MAX_TOLERANCE:g}], got {value!r}")
    if not is_whole(max_iterations) or max_iterations < 1:
        raise IKOptionError(f"max_iterations must be a whole number >= 1, got {max_iterations!r}")
    if restarts is not None and (not is_whole(restarts) or restarts < 0):
        raise IKOptionError(f"restarts must be a whole number >= 0, got {restarts!r}")
    box = [[0.0] * 6] * nt
    if axis_tolerances is not None:
        given = numbers(axis_tolerances, "axis_tolerances")
        if given.shape not in ((6,), (nt, 6)):
            raise ShapeError("axis_tolerances", f"(6,) or ({nt}, 6)", given.shape)
        if np.isnan(given).any() or (given < 0).any():
            raise IKOptionError(f"axis_tolerances must be >= 0 (inf frees an axis), got {given.tolist()}")
        box = np.broadcast_to(given, (nt, 6)).tolist()
    sqrt_w = [1.0] * nt
    if weights is not None:
        w = numbers(weights, "weights", vector=True)
        if w.shape != (nt,):
            raise ShapeError("weights", f"({nt},)", w.shape)
        if not np.isfinite(w).all() or (w < 0).any():
            raise IKOptionError(f"weights must be finite and >= 0, got {w.tolist()}")
        sqrt_w = np.sqrt(w).tolist()
    rows = tuple((k, i, sqrt_w[k], box[k][i]) for k in range(nt) for i in range(6) if math.isfinite(box[k][i]))
    return Tolerances(float(position_tolerance), float(rotation_tolerance), rows,
                       not any(any(b) for b in box), int(max_iterations), 0 if restarts is None else int(restarts))
