"""What an IK call needs that depends only on its names and options, kept per model.

A :class:`Request` (problem, options, kernel, solver) is built once per distinct call and kept
in :mod:`robokin_ros.model_cache`, as are the problems and solvers it is made of: every key a
``/compute_ik`` client can vary (tips, base, joints, tolerances, bounds) is bounded per model.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import NDArray

from .. import model_cache
from ..errors import ShapeError
from ..kernels import selection
from ..kernels.fk_codegen import compiled_frames
from ..model import RobotModel
from .options import Tolerances, effective_bounds, parse_options
from .problem import IKProblem, ik_problem
from .solver import Solver

Array = NDArray[np.float64]


@dataclasses.dataclass(frozen=True)
class Request:
    """What a call needs that depends only on its names and options.

    Attributes:
        problem: the free coordinates. tol: the options. compiled: the generated poses +
        Jacobians kernel of the tips, or None (generic kernels). n_tips: number of tips.
        base: the base's link index. solver: the solver for the model's own bounds.
    """

    problem: IKProblem
    tol: Tolerances
    compiled: object
    n_tips: int
    base: int
    solver: Solver


def request(model: RobotModel, tip_names: tuple, base, active_names: tuple | None, position_tolerance,
            rotation_tolerance, axis_tolerances, weights, max_iterations, restarts) -> Request:
    """Validate a call's names and options into a :class:`Request`; kept per model when the
    options are plain scalars (the /compute_ik case, where this would cost as much as a few
    iterations).

    Raises:
        ShapeError: no tips. UnknownLinkError, UnknownJointError: unknown names.
        IKOptionError: an invalid option (see :func:`~robokin_ros.ik.options.parse_options`).
    """
    def build() -> Request:
        if not tip_names:
            raise ShapeError("tips", "one name or a non-empty sequence of names", (0,))
        tip_idx = tuple(model.link_index(t) for t in tip_names)
        base_idx = 0 if base is None else model.link_index(base)
        if active_names is None:
            active = tuple(int(j) for j in model.active_joints)
        else:
            active = tuple(sorted({model.joint_index(name) for name in active_names}))
        tol = parse_options(len(tip_idx), position_tolerance, rotation_tolerance, axis_tolerances, weights,
                            max_iterations, restarts)
        compiled = compiled_frames(model, tip_names) if selection.use_generated else None
        problem = ik_problem(model, tip_idx, base_idx, active)
        solver = solver_for(model, problem, *effective_bounds(model, None, None), tol, compiled)
        return Request(problem, tol, compiled, len(tip_idx), base_idx, solver)

    if axis_tolerances is not None or weights is not None:
        return build()
    options = (position_tolerance, rotation_tolerance, max_iterations, restarts)
    key = (tip_names, base, active_names, options, tuple(type(x) for x in options), selection.use_generated)
    try:
        hash(key)
    except TypeError:   # an unhashable option: validated (and refused) by build
        return build()
    return model_cache.cached(model, "ik requests", key, build)


def solver_for(model: RobotModel, problem: IKProblem, lo: Array, hi: Array, tol: Tolerances, compiled) -> Solver:
    """The solver of a problem, options, bounds ``lo, hi (n_q,)`` and kernel (kept in
    :mod:`robokin_ros.model_cache`)."""
    default = lo is model.q_lower and hi is model.q_upper
    key = (problem.tips, problem.base, problem.active, tol, id(compiled),
           None if default else (lo.tobytes(), hi.tobytes()))
    return model_cache.cached(model, "ik solvers", key, Solver, (model, problem, lo, hi, tol, compiled))
