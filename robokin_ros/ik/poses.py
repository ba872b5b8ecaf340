"""The IK primitive: :func:`solve_poses`, tip poses from seeds on the call's cached
:class:`~robokin_ros.ik.call.IKCall`, without objective or distinct solutions.

One problem (one target set, one seed; the ``/compute_ik`` case) is checked and set up with few
numpy calls, its entries as lists (:func:`_solve_target_set`), and solved by
:meth:`Solver.solve_problem <robokin_ros.ik.solver.Solver.solve_problem>`; anything else is
stacked (:meth:`Solver.solve_problems <robokin_ros.ik.solver.Solver.solve_problems>`).
A problem on a chain of the robot is solved on the chain's model, the robot's other coordinates
kept at the (clamped) seed.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..checks import ROTATION_TOLERANCE, check_rigid_targets, finite_configuration, numbers
from ..errors import IKOptionError, NonFiniteError, ShapeError
from ..kinematics import forward_kinematics, frame_pose_and_jacobian
from ..model import RobotModel
from .budget import Budget, CancelToken
from .call import IKCall, ik_call
from .collision_gate import collision_test, refuse_collisions
from .options import IKOptions
from .result import IKResult
from .solver import Outcome

Array = NDArray[np.float64]

#: The float check of one target's rotation accepts only what is this far inside the tolerance
#: of :func:`robokin_ros.checks.check_rigid_targets`; anything else goes to that check, which
#: decides (rounding differences never do).
_STRICT = 0.5 * ROTATION_TOLERANCE


def solve_poses(model: RobotModel, targets, tips, seed, options: IKOptions,
                cancel: CancelToken | None = None) -> IKResult:
    """:func:`~robokin_ros.ik.solve_ik` without ``objective`` and ``solutions`` (ignored here):
    the arguments, result and errors are solve_ik's, the options one validated value.

    Raises:
        RobokinError: what :func:`~robokin_ros.ik.solve_ik` raises for these tips, targets,
            seed and options.
    """
    single = isinstance(tips, str)
    if not single and not (isinstance(tips, (list, tuple)) and all(isinstance(t, str) for t in tips)):
        raise IKOptionError(f"tips must be a link name or a sequence of link names, got {str(tips)[:60]!r}", "tips")
    call = ik_call(model, (tips,) if single else tuple(tips), options)
    T, entries = checked_targets(targets, call.n_tips, single)
    accept = collision_test(model, options.avoid_collisions)
    if entries is not None and call.single_lane and (seed is None or getattr(seed, "ndim", None) == 1
                                                or np.ndim(seed) == 1):
        budget = Budget(options.timeout, 1, options.rng, accept, cancel, (entries, seed))
        return _solve_target_set(model, call, (T, entries), seed, budget)
    return _solve_batch(model, call, T, seed, lambda n: Budget(options.timeout, n, options.rng, accept, cancel,
                                                               (T, seed), threads=options.threads))


def checked_targets(targets, n_tips: int, single: bool) -> tuple[Array, list | None]:
    """``targets`` as ``(..., n_tips, 4, 4)`` finite rigid transforms, and for one target set
    (no batch) its ``16 n_tips`` entries as a list of floats (row-major; None for a batch).

    Raises:
        ShapeError: not ``(..., 4, 4)`` (``single``) nor ``(..., n_tips, 4, 4)``.
        NonFiniteError: NaN or inf entries (naming the batch indices).
        InvalidTargetError: a target that is not a rigid transform.
        ArgumentError: not real numbers.
    """
    T = numbers(targets, "targets")
    tail = (4, 4) if single else (n_tips, 4, 4)
    if T.ndim < len(tail) or T.shape[T.ndim - len(tail):] != tail:
        raise ShapeError("targets", "(..., 4, 4)" if single else f"(..., {n_tips}, 4, 4)", T.shape)
    T = T.reshape(T.shape[:T.ndim - len(tail)] + (n_tips, 4, 4))
    if T.ndim == 3:   # one target set: checked in floats
        entries = T.reshape(-1).tolist()
        if not math.isfinite(sum(entries)) and not all(math.isfinite(x) for x in entries):
            raise NonFiniteError("targets", [()])  # (a finite sum proves finite entries; an overflow is checked)
        for k in range(n_tips):
            if not _rigid(entries[16 * k:16 * k + 16]):
                check_rigid_targets(T)   # raises, or accepts what is within the tolerance
                break
        return T, entries
    finite = np.isfinite(T).all(axis=(-3, -2, -1))
    if not finite.all():
        raise NonFiniteError("targets", [tuple(int(k) for k in i) for i in np.argwhere(~finite)])
    check_rigid_targets(T)
    return T, None


def _rigid(e: list) -> bool:
    """True when the 16 entries ``e`` (row-major) of a finite ``(4, 4)`` are a rigid transform well
    within the tolerance: every entry of ``RᵀR - I`` and ``det R - 1`` within :data:`_STRICT`,
    last row ``0 0 0 1``."""
    if e[12:] != [0.0, 0.0, 0.0, 1.0]:
        return False
    a0, a1, a2, b0, b1, b2, c0, c1, c2 = e[0:3] + e[4:7] + e[8:11]
    defects = (a0 * a0 + b0 * b0 + c0 * c0 - 1.0, a1 * a1 + b1 * b1 + c1 * c1 - 1.0, a2 * a2 + b2 * b2 + c2 * c2 - 1.0,
               a0 * a1 + b0 * b1 + c0 * c1, a0 * a2 + b0 * b2 + c0 * c2, a1 * a2 + b1 * b2 + c1 * c2,
               a0 * (b1 * c2 - b2 * c1) - a1 * (b0 * c2 - b2 * c0) + a2 * (b0 * c1 - b1 * c0) - 1.0)
    return max(defects) <= _STRICT and min(defects) >= -_STRICT


def _solve_target_set(model: RobotModel, call: IKCall, targets: tuple[Array, list], seed, budget: Budget) -> IKResult:
    """One target set ``targets``: ``T (n_tips, 4, 4)`` (checked) and its entries as a list
    (see :func:`checked_targets`), from ``seed`` (None or ``(n_q,)``), with few numpy calls: the
    seed checked and clamped in floats, the targets' components as a list
    (:meth:`Solver.solve_problem <robokin_ros.ik.solver.Solver.solve_problem>`).

    Raises:
        ShapeError, NonFiniteError, ArgumentError: a bad seed (see :meth:`RobotModel.check_q`).
    """
    if seed is None:
        full = call.home
    else:
        full = finite_configuration(model, seed)
        if full is None:
            full = model.check_q(seed, "seed").tolist()   # raises the named error, or accepts a list
    full = call.clamped_seed(model, full)
    q0 = full if call.whole else [full[i] for i in call.index]
    problem, nt = call.problem, call.n_tips
    T, entries = targets
    if problem.base_moves:  # joints that move the base stay at the seed: its pose is the seed's
        solved = call.solver.model
        T_world_base = frame_pose_and_jacobian(solved, np.array(q0), solved.link_names[problem.base])[0]
        entries = (T_world_base @ T).reshape(-1).tolist()
    elif problem.base:
        entries = (problem.T_world_base @ T).reshape(-1).tolist()
    target = [x for k in range(0, 16 * nt, 16) for x in entries[k:k + 3] + entries[k + 4:k + 7] + entries[k + 8:k + 11]
              + entries[k + 3:k + 12:4]]
    q, status, it, position, rotation, success = call.solver.solve_problem(q0, target, budget)
    if not call.whole:
        q, solved_q = full[:], q
        for i, x in zip(call.index, solved_q):
            q[i] = x
    result = IKResult(np.array(q), np.array(success), np.array(position), np.array(rotation),
                      np.array(it, np.int64), np.array(status, "<U14"))
    return refuse_collisions(result, budget.accept)


def _solve_batch(model: RobotModel, call: IKCall, T: Array, seed, budget) -> IKResult:
    """Targets ``T (..., n_tips, 4, 4)`` (checked) from ``seed`` (None or ``(..., n_q)``), stacked;
    ``budget(n)`` the call's :class:`Budget` for ``n`` problems."""
    batch = T.shape[:-3]
    seed_q = model.home_configuration() if seed is None else model.check_q(seed, "seed")
    try:
        batch = np.broadcast_shapes(batch, seed_q.shape[:-1])
    except ValueError:
        raise ShapeError("seed", f"(..., {model.n_q}) broadcastable to the targets' batch {batch}",
                         seed_q.shape) from None
    n, nt = math.prod(batch), call.n_tips
    T = np.broadcast_to(T, batch + (nt, 4, 4)).reshape(n, nt, 4, 4)
    seeds = call.clamped_seeds(model, np.broadcast_to(seed_q, batch + (model.n_q,)).reshape(n, model.n_q))
    solved = seeds if call.whole else seeds[:, call.index]
    problem = call.problem
    if problem.base_moves:
        T = forward_kinematics(call.solver.model, solved)[:, None, problem.base] @ T
    elif problem.base:
        T = problem.T_world_base @ T
    # Target components (n, n_tips * 12): per tip its rotation row-major, then its position
    # (written in place: no temporaries of the batch's size)
    components = np.empty((n, nt, 12))
    for row in range(3):
        components[..., 3 * row:3 * row + 3] = T[..., row, :3]
    components[..., 9:] = T[..., :3, 3]
    targets_flat = components.reshape(n, nt * 12)
    out = Outcome(solved, budget(n))
    q, *rest = call.solver.solve_problems(targets_flat, solved, out)
    if not call.whole:
        seeds[:, call.index] = q
        q = seeds
    result = IKResult(*(a.reshape(batch + a.shape[1:]) for a in [q] + rest))
    return refuse_collisions(result, out.budget.accept)
