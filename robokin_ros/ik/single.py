"""One IK request (the ``/compute_ik`` case) checked and solved with as few numpy calls as possible.

:func:`solve_single` is :func:`~robokin_ros.ik.solve.solve_ik` for one target and one seed
given as float64 arrays, without a collision test, objective, per-axis tolerance, weight or
parallel restart (bound overrides are fine). What depends only on the call's names and options (the
chain of the tips below the base, its solver, the q index of the chain's coordinates) is a
:class:`SinglePlan` kept per model; per call it checks the target and seed in Python floats and
leaves every case it does not prove fine to the general path (which raises the named error), so
both paths accept and refuse the same inputs and give the same answers.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..checks import ROTATION_TOLERANCE, check_rng, finite_configuration, sequence
from ..model import RobotModel
from ..model_cache import cached
from .chain import Chain, chain_of
from .options import effective_bounds
from .requests import request, solver_for
from .result import IKResult
from .solver import Budget, Solver

#: The float check of a target's rotation accepts only what is this far inside the tolerance of
#: :func:`robokin_ros.checks.check_rigid_targets`: rounding differences never decide here.
_STRICT = 0.5 * ROTATION_TOLERANCE

Array = NDArray[np.float64]


class SinglePlan:
    """What single requests of one (model, tips, base, active joints, options) need.

    Attributes:
        solver: the solver on the chain's model (or the model's, when the model is that chain),
            within the model's limits.
        index: ``(solver n_q,)`` list, the model's q index of each coordinate the solver sees.
        lower, upper, home: the model's bounds and home configuration, lists of ``n_q`` floats.
    """

    def __init__(self, model: RobotModel, chain: Chain | None, solver: Solver, index: list):
        self.solver, self.index = solver, index
        self._chain = chain   # holds the chain's model, which the solver refers to weakly
        self._q_lower, self._q_upper = model.q_lower.copy(), model.q_upper.copy()
        self.lower, self.upper = model.q_lower.tolist(), model.q_upper.tolist()
        self.home = model.home_configuration().tolist()
        self.whole = index == list(range(model.n_q))

    def solver_within(self, lo: Array, hi: Array) -> Solver:
        """The solver of the plan's problem within the model's bounds ``lo, hi (n_q,)``."""
        if np.array_equal(lo, self._q_lower) and np.array_equal(hi, self._q_upper):
            return self.solver
        s = self.solver
        return solver_for(s.model, s.problem, lo[self.index], hi[self.index], s.tol, s.compiled)


def single_plan(model: RobotModel, tips: tuple, base, active: tuple | None, position_tolerance,
                rotation_tolerance, max_iterations) -> SinglePlan | None:
    """The :class:`SinglePlan` of these names and options (kept per model), or None when they
    need the general path (no generated kernel, a base that moves, a floating joint).

    Raises:
        RobokinError: what :func:`~robokin_ros.ik.solve.solve_ik` raises for these names or options.
    """
    key = (tips, base, active, position_tolerance, rotation_tolerance, max_iterations,
           type(position_tolerance), type(rotation_tolerance), type(max_iterations))
    return cached(model, "ik single plans", key, _build,
                  (model, tips, base, active, position_tolerance, rotation_tolerance, max_iterations))


def _build(model: RobotModel, tips: tuple, base, active: tuple | None, position_tolerance, rotation_tolerance,
           max_iterations) -> SinglePlan | None:
    if model.quaternion_slices:
        return None
    chain = chain_of(model, tips, base)
    if active is not None:
        for name in active:
            model.joint_index(name)   # unknown names are errors of the whole robot's
    if chain is None:
        solved, index = model, list(range(model.n_q))
    else:
        solved, index = chain.chain, chain.q_index.tolist()
        base = None
        if active is not None:
            active = tuple(name for name in active if name in chain.joint_names)
    call = request(solved, tips, base, active, position_tolerance, rotation_tolerance, None, None,
                   max_iterations, None)
    if call.compiled is None or call.base != 0 or call.problem.base_moves:
        return None
    return SinglePlan(model, chain, call.solver, index)


def _rigid(r0: list, r1: list, r2: list, r3: list) -> bool:
    """True when the rows of a finite ``(4, 4)`` are a rigid transform well within the tolerance:
    every entry of ``RᵀR - I`` and ``det R - 1`` within :data:`_STRICT`, last row ``0 0 0 1``."""
    if r3 != [0.0, 0.0, 0.0, 1.0]:
        return False
    a0, a1, a2, _ = r0
    b0, b1, b2, _ = r1
    c0, c1, c2, _ = r2
    defects = (a0 * a0 + b0 * b0 + c0 * c0 - 1.0, a1 * a1 + b1 * b1 + c1 * c1 - 1.0, a2 * a2 + b2 * b2 + c2 * c2 - 1.0,
               a0 * a1 + b0 * b1 + c0 * c1, a0 * a2 + b0 * b2 + c0 * c2, a1 * a2 + b1 * b2 + c1 * c2,
               a0 * (b1 * c2 - b2 * c1) - a1 * (b0 * c2 - b2 * c0) + a2 * (b0 * c1 - b1 * c0) - 1.0)
    return max(defects) <= _STRICT and min(defects) >= -_STRICT


def solve_single(model: RobotModel, targets, tips, seed, base, active_joints, lower, upper, position_tolerance,
                 rotation_tolerance, max_iterations, timeout, rng) -> IKResult | None:
    """:func:`~robokin_ros.ik.solve.solve_ik` of one target (a float64 array ``(4, 4)`` for the tip
    ``tips``, a link name; ``(1, 4, 4)`` for ``tips`` a list or tuple of one name) from ``seed``
    (None or a float64 ``(n_q,)`` array), or None when the general path must take the call
    (anything else, an input that fails a check, a plan that does not apply).

    Raises:
        RobokinError: what :func:`~robokin_ros.ik.solve.solve_ik` raises for the names, bounds
            and options (unknown tip, base or joint; bad bounds; an invalid tolerance, iteration
            count or ``rng``).
    """
    if isinstance(tips, (list, tuple)) and len(tips) == 1:
        tips, shape = tips[0], (1, 4, 4)
    else:
        shape = (4, 4)
    if not (type(tips) is str and type(targets) is np.ndarray and targets.shape == shape
            and targets.dtype == np.float64):
        return None
    if timeout is not None and not (type(timeout) is float and timeout > 0.0):  # (NaN fails too)
        return None
    if active_joints is not None:
        if not isinstance(active_joints, (list, tuple)) or not all(type(a) is str for a in active_joints):
            return None
        active_joints = tuple(active_joints)
    check_rng(rng)
    try:
        plan = single_plan(model, (tips,), base, active_joints, position_tolerance, rotation_tolerance,
                           max_iterations)
    except TypeError:   # an unhashable option: the general path refuses it
        return None
    if plan is None:
        return None
    r0, r1, r2, r3 = targets.reshape(4, 4).tolist()
    if not math.isfinite(sum(r0) + sum(r1) + sum(r2)) or not _rigid(r0, r1, r2, r3):
        return None
    full = plan.home if seed is None else finite_configuration(model, seed)
    if full is None:
        return None
    if lower is None and upper is None:
        solver, q_lower, q_upper = plan.solver, plan.lower, plan.upper
    else:
        lo, hi = effective_bounds(model, lower, upper)
        solver, q_lower, q_upper = plan.solver_within(lo, hi), lo.tolist(), hi.tolist()
    full = [lo if x < lo else hi if x > hi else x for x, lo, hi in zip(full, q_lower, q_upper)]
    target = r0[:3] + r1[:3] + r2[:3] + [r0[3], r1[3], r2[3]]
    index = plan.index
    q, status, it, position, rotation, success = solver.solve_floats(
        full if plan.whole else [full[i] for i in index], target, Budget(timeout, 1, rng))
    if not plan.whole:
        q, chain_q = full[:], q
        for i, x in zip(index, chain_q):
            q[i] = x
    return IKResult(np.array(q), np.array(success), np.array(position), np.array(rotation),
                    np.array(it, np.int64), np.array(status, "<U14"))



def prepare_ik(model: RobotModel, tips: str, *, base: str | None = None, active_joints=None,
               position_tolerance: float = 1e-5, rotation_tolerance: float = 1e-5, max_iterations: int = 500) -> bool:
    """Load (compile, or read from the disk cache) the compiled loop of single requests with
    these names and options now (e.g. at start-up), instead of in the background once the float
    path has done :data:`robokin_ros.kernels.accel.MIN_BATCH` iterations. Compiling takes
    seconds (6-10 s for a 6-7-DOF arm), once per machine (then < 1 s per process). A request with
    other options, bounds, or per-axis tolerances has a loop of its own (not loaded by this).

    Returns:
        True when single requests of these names and options will run the compiled loop; False
        when the accelerator is not active (:func:`robokin_ros.kernels.accel.active`) or these
        requests take the general path.

    Raises:
        RobokinError: what :func:`~robokin_ros.ik.solve.solve_ik` raises for these names or options.
    """
    active = None if active_joints is None else tuple(sequence(active_joints, "active_joints", one=True))
    plan = single_plan(model, (tips,), base, active, position_tolerance, rotation_tolerance, max_iterations)
    return plan is not None and plan.solver.loop is not None and plan.solver.loop.accelerate()
