"""Inverse kinematics: Levenberg–Marquardt on the SE(3) pose error, within the joint limits.

A few problems (the ``/compute_ik`` case) iterate one at a time in plain Python floats: each
solver generates one straight-line function doing a whole iteration on the robot's generated
kernel output (:mod:`robokin_ros.kernels.fk_codegen`: ``flat`` on a list) — error twists, tolerance test,
weighted Jacobian rows, bound handling, the normal equations' Cholesky solve and the clamped
step — with the tips, tolerances, weights, free joints and bounds folded in as constants,
where a numpy call would cost more than the arithmetic it does; the same loop compiled by numba
(:mod:`robokin_ros.ik.compiled_loop`: the same iterates, ~0.5 µs an iteration) takes over once
loaded, in the background once the float path has been busy, or at once by :func:`prepare_ik
<robokin_ros.ik.single.prepare_ik>` (for the few problems solved one at a time, and the last
few of a batch: the same iterates, so the answers do not depend on whether it is loaded). A
single request of one tip skips most numpy calls of the checks (:mod:`robokin_ros.ik.single`).
Many problems iterate together,
stacked: the kernel's batched output is a ``(size, B)`` array and every operation covers all
rows (the small normal systems are solved by a straight-line Cholesky factorisation whose
entries are ``(B,)`` arrays). Finished problems make room for waiting ones; the last few
finish in floats. Models the generator does not handle (floating, planar joints) use the
generic FK and Jacobians, stacked. Stalled rows restart at the next points of a
low-discrepancy (R2) sequence of configurations within the bounds.

Notation: a *problem* is one target set (a pose per tip) with one seed; a *row* is one iterate
of one problem (its seed, or a restart). ``x`` are the problem's free coordinates (the
``v`` coordinates of the joints allowed to move). A tip's error twist [linear; angular] is
``d = [R_tᵀ (p - p_t); log(R_tᵀ R)]`` in the target's axes; when every axis counts alike (no
dead band, no free axis) the step is computed in the world axes instead, with
``[p - p_t; log(R R_tᵀ)]`` (the same vector rotated by ``R_t``, so the same least squares) and
the kernel's LOCAL_WORLD_ALIGNED Jacobian as it is.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from ..checks import check_rigid_targets, check_rng, finite_mimics, is_real, numbers, sequence
from ..errors import IKOptionError, NonFiniteError, ShapeError
from ..kernels.fk_codegen import compiled_frames
from ..kinematics import forward_kinematics
from ..model import RobotModel
from .branches import distinct_solutions, solve_with_objective
from .chain import Chain, chain_of
from .collision_gate import collision_test, refuse_collisions
from .objectives import check_objective
from .options import effective_bounds
from .requests import request, solver_for
from .result import IKResult
from .single import solve_single
from .solver import Budget, Outcome


def solve_ik(model: RobotModel, targets, tips, seed=None, *, base: str | None = None,
             position_tolerance: float = 1e-5, rotation_tolerance: float = 1e-5,
             axis_tolerances=None, weights=None, active_joints: Sequence[str] | None = None,
             lower=None, upper=None, timeout: float | None = None, max_iterations: int = 500,
             restarts: int | None = None, rng=None, avoid_collisions=False, objective: str | None = None,
             solutions: int | None = None, solution_distance: float = 0.1) -> IKResult:
    """Joint configurations that put one or several tips at target poses.

    Damped least squares (Levenberg–Marquardt, position rows weighted by
    :data:`~robokin_ros.ik.lm.POSITION_WEIGHT`) from each seed; a row whose cost stops dropping restarts at another
    configuration (see ``restarts``); a problem stops as soon as one of its rows meets the
    tolerances (several rows at once: the one closest to the seed wins). Up to
    :data:`~robokin_ros.ik.solver.SCALAR_ROWS` problems iterate one by one in Python floats on the generated kernel; a
    larger batch iterates vectorised (stalled problems get :data:`~robokin_ros.ik.solver.EXTRA_ROWS` extra restarted
    rows once every problem is under way, so results of a batch and of single calls agree
    exactly only for problems that need no restart). What iterates one by one runs on the
    call's compiled loop once it is loaded (:func:`~robokin_ros.ik.single.prepare_ik`, or in
    the background after :data:`~robokin_ros.kernels.accel.MIN_BATCH` float iterations), with
    the same iterates as in floats (the time budget is then checked every
    :data:`~robokin_ros.ik.compiled_loop.CHUNK` iterations).

    Args:
        model: the robot.
        targets: ``T_base_tip`` ``(..., 4, 4)`` for one tip, ``(..., n_tips, 4, 4)`` for a
            sequence of tips [m]; the rotation part must be a rotation matrix.
        tips: a frame (link) name, or a sequence of names solved together (tips of a tree).
        seed: ``(..., n_q)`` start configurations, broadcast against the targets' batch
            (clamped into the bounds); None: the home configuration. Joints that may not move
            stay at the seed.
        base: frame the targets are expressed in (default: the root link). Joints supporting
            the base do not move (they would not change the tip pose relative to a base that is
            an ancestor of the tips).
        position_tolerance: [m] largest accepted position error per tip.
        rotation_tolerance: [rad] largest accepted rotation angle per tip.
        axis_tolerances: ``(6,)`` or per tip ``(n_tips, 6)``: TRAC-IK style ± bounds on the error
            twist ``[x y z rx ry rz]`` expressed in the target frame's axes [m, rad]; an error
            within the box counts as zero, ``np.inf`` frees an axis (position only:
            ``[0, 0, 0, inf, inf, inf]``; any rotation about the tool z: ``[0]*5 + [inf]``).
            The position / rotation tolerances then apply to the excess outside the box.
        weights: ``(n_tips,)`` non-negative weight of each tip's error in the least squares.
        active_joints: names of the joints allowed to move (default: all). Fixed and mimic
            joints may be listed and are ignored (a mimic joint follows its source).
        lower, upper: ``(n_q,)`` bounds overriding the model's limits (their intersection is
            used; ±inf for none), e.g. from MoveIt joint constraints.
        timeout: [s] time budget per problem, pooled over the batch (the call stops iterating
            after ``timeout × number of problems``); None: no time limit.
        max_iterations: iterations per problem (restarts included). The default, 500, solves
            what a 5 ms budget per problem solves (measured with the TRAC-IK protocol on the
            arms and the 18 humanoid and legged-robot arms of ``bench/bench_ik.py``: every
            target within 500 iterations, 99.98 % within 200; one iteration costs 15-30 µs in
            floats, ~0.5 µs on the compiled loop).
        restarts: extra rows per problem started at other configurations alongside the seed
            (all iterated together, vectorised, even for one problem); None or 0: the seed row
            only. Independently of it, a row whose cost has not dropped by ``STALL_PROGRESS``
            (10 %) for ``STALL_ITERATIONS`` (3) iterations restarts elsewhere. Restart
            configurations are consecutive points of a low-discrepancy (R2) sequence within the
            bounds, from a point chosen by ``rng``.
        rng: None, a whole number >= 0 (seed) or a ``numpy.random.Generator``, choosing where
            the restarts start (fixed: deterministic results).
        avoid_collisions: False; True (the model's default
            :func:`~robokin_ros.collision.collision_model`) or a
            :class:`~robokin_ros.collision.CollisionModel`: a configuration within tolerance that
            is in self-collision is not a solution (its row restarts elsewhere); a problem that
            finds no other ends ``success=False``, status ``"in_collision"`` if its best
            configuration meets the tolerances.
        objective: None, or a secondary objective followed in the task's null space once a
            problem is solved (see :mod:`robokin_ros.ik.objectives`): ``"closest"`` (least motion
            from the seed), ``"center"`` (away from the joint limits), ``"manipulability"``
            (largest smallest singular value of the first tip's Jacobian). It never turns a
            solved problem into a failure.
        solutions: None, or ``k >= 1``: one target (no batch) solved from the seed and from
            configurations spread over the bounds until ``k`` solutions pairwise farther apart
            than ``solution_distance`` are found or ``timeout`` (here the whole search's budget)
            runs out; sorted by ``objective`` (None: closest to the seed) (see
            :func:`robokin_ros.ik.branches.distinct_solutions`).
        solution_distance: [rad or m] least Euclidean distance between two of the ``solutions``
            over the free coordinates (continuous joints wrapped).

    Returns:
        :class:`IKResult` with batch shape ``...`` (the broadcast of the targets' and seed's);
        with ``solutions``, batch shape ``(m,)``, ``1 <= m <= k`` (the failed primary result when
        nothing solves).

    Raises:
        ShapeError: targets, seed, bounds, weights or tolerances of the wrong shape.
        NonFiniteError: NaN or inf in the targets or seed (NaN in the bounds).
        InvalidTargetError: a target that is not a rigid transform (see :data:`robokin_ros.checks.ROTATION_TOLERANCE`).
        UnknownLinkError: unknown tip or base. UnknownJointError: unknown active joint.
        JointLimitError: a bound override that leaves a joint no admissible value.
        IKOptionError: negative tolerance, weight or timeout; max_iterations < 1; restarts < 0.
        ArgumentError: targets, seed, bounds, weights or tolerances that are not real numbers
            (text, None, complex); an ``rng`` of another kind.
        CollisionUnavailableError: ``avoid_collisions`` without coal installed.
    """
    if objective is not None or solutions is not None:
        check_objective(objective)
        options = dict(base=base, position_tolerance=position_tolerance, rotation_tolerance=rotation_tolerance,
                       axis_tolerances=axis_tolerances, weights=weights, active_joints=active_joints, lower=lower,
                       upper=upper, timeout=timeout, max_iterations=max_iterations, restarts=restarts, rng=rng,
                       avoid_collisions=avoid_collisions)
        if solutions is not None:
            return distinct_solutions(solve_ik, model, targets, tips, seed, solutions, solution_distance, objective,
                                      options)
        return solve_with_objective(solve_ik, model, targets, tips, seed, objective, options)
    single = isinstance(tips, str)
    if avoid_collisions is False and axis_tolerances is None and weights is None and not restarts:
        # maybe one request of one tip: checked in floats
        result = solve_single(model, targets, tips, seed, base, active_joints, lower, upper, position_tolerance,
                              rotation_tolerance, max_iterations, timeout, rng)
        if result is not None:
            return result
    check_rng(rng)
    if active_joints is not None:
        active_joints = sequence(active_joints, "active_joints", one=True)
    if not single and not (isinstance(tips, (list, tuple)) and all(isinstance(t, str) for t in tips)):
        raise IKOptionError(f"tips must be a link name or a sequence of link names, got {str(tips)[:60]!r}")
    # (Collisions involve the whole robot: a collision-aware problem is solved on all of it.)
    chain = None if avoid_collisions else chain_of(model, (tips,) if single else tuple(tips), base)
    if chain is not None:
        return _solve_on_chain(model, chain, targets, tips, seed, active_joints=active_joints, lower=lower,
                               upper=upper, position_tolerance=position_tolerance,
                               rotation_tolerance=rotation_tolerance, axis_tolerances=axis_tolerances,
                               weights=weights, timeout=timeout, max_iterations=max_iterations, restarts=restarts,
                               rng=rng)
    if timeout is not None and (not is_real(timeout) and timeout != math.inf or timeout <= 0):
        raise IKOptionError(f"timeout must be > 0 seconds or None, got {timeout!r}")
    active_names = active_joints
    call = request(model, (tips,) if single else tuple(tips), base, active_names, position_tolerance,
                       rotation_tolerance, axis_tolerances, weights, max_iterations, restarts)
    problem, tol, compiled, nt, base_idx = call.problem, call.tol, call.compiled, call.n_tips, call.base
    T = numbers(targets, "targets")
    tail = (4, 4) if single else (nt, 4, 4)
    if T.ndim < len(tail) or T.shape[T.ndim - len(tail):] != tail:
        raise ShapeError("targets", "(..., 4, 4)" if single else f"(..., {nt}, 4, 4)", T.shape)
    if (T.ndim == len(tail) and (seed is None or np.ndim(seed) == 1) and compiled is not None
            and tol.restarts == 0):
        # One problem (the /compute_ik case): validated and solved on Python floats.
        flat = T.reshape(nt, 16).tolist()
        entries = [x for row in flat for x in row]
        if not math.isfinite(sum(entries)) and not all(math.isfinite(x) for x in entries):
            raise NonFiniteError("targets", [()])  # (a finite sum proves finite entries; an overflow is checked)
        check_rigid_targets(T)
        seed_list = model.home_configuration().tolist() if seed is None else numbers(seed, "seed").tolist()
        if len(seed_list) != model.n_q or not (math.isfinite(sum(seed_list)) or all(map(math.isfinite, seed_list))) \
                or not finite_mimics(model, seed_list):
            model.check_q(seed, "seed")  # raises the named error
        solver = (call.solver if lower is None and upper is None else
                  solver_for(model, problem, *effective_bounds(model, lower, upper), tol, compiled))
        seed_list = [lo if x < lo else hi if x > hi else x
                     for x, lo, hi in zip(seed_list, solver.q_lower, solver.q_upper)]
        if problem.base_moves:  # joints that move the base stay at the seed: its pose is the seed's
            T_world_base = compiled_frames(model, (model.link_names[base_idx],)).single(np.array(seed_list))[0, :4, :4]
            flat = (T_world_base @ T.reshape(nt, 4, 4)).reshape(nt, 16).tolist()
        elif base_idx:
            flat = (problem.T_world_base @ T.reshape(nt, 4, 4)).reshape(nt, 16).tolist()
        target = [x for row in flat for x in row[0:3] + row[4:7] + row[8:11] + row[3:12:4]]
        accept = collision_test(model, avoid_collisions)
        return refuse_collisions(solver.solve_one(seed_list, target, Budget(timeout, 1, rng, accept)), accept)

    T = T.reshape(T.shape[:T.ndim - len(tail)] + (nt, 4, 4))
    finite = np.isfinite(T).all(axis=(-3, -2, -1))
    if not finite.all():
        raise NonFiniteError("targets", [tuple(int(k) for k in i) for i in np.argwhere(~finite)]
                             if finite.ndim else [()])
    check_rigid_targets(T)
    batch = T.shape[:-3]
    seed_q = model.home_configuration() if seed is None else model.check_q(seed, "seed")
    try:
        batch = np.broadcast_shapes(batch, seed_q.shape[:-1])
    except ValueError:
        raise ShapeError("seed", f"(..., {model.n_q}) broadcastable to the targets' batch {batch}",
                         seed_q.shape) from None
    lo, hi = effective_bounds(model, lower, upper)

    n = math.prod(batch)
    T = np.broadcast_to(T, batch + (nt, 4, 4)).reshape(n, nt, 4, 4)
    seeds = np.minimum(np.maximum(np.broadcast_to(seed_q, batch + (model.n_q,)).reshape(n, model.n_q), lo), hi)
    for s in model.quaternion_slices:
        seeds[:, s] /= np.linalg.norm(seeds[:, s], axis=-1, keepdims=True)
    if problem.base_moves:
        T = forward_kinematics(model, seeds)[:, None, base_idx] @ T
    elif base_idx:
        T = problem.T_world_base @ T
    # Target components (n, n_tips * 12): per tip its rotation row-major, then its position.
    targets_flat = np.concatenate([T[..., :3, :3].reshape(n, nt, 9), T[..., :3, 3]], axis=-1).reshape(n, nt * 12)
    solver = solver_for(model, problem, lo, hi, tol, compiled)
    accept = collision_test(model, avoid_collisions)
    result = solver.solve(targets_flat, seeds, Outcome(seeds, Budget(timeout, n, rng, accept)))
    return refuse_collisions(IKResult(*(a.reshape(batch + a.shape[1:]) for a in result)), accept)


def _solve_on_chain(model: RobotModel, chain: Chain, targets, tips, seed, *, active_joints, lower, upper,
                    **options) -> IKResult:
    """:func:`solve_ik` on ``chain``'s own model, coordinates outside it kept at the (clamped) seed."""
    index = chain.q_index
    if active_joints is not None:
        names = sequence(active_joints, "active_joints", one=True)
        for name in names:
            model.joint_index(name)  # unknown names are errors of the whole robot's
        active_joints = [name for name in names if name in chain.joint_names]
    if lower is not None or upper is not None:
        lo, hi = effective_bounds(model, lower, upper)
        lower, upper = lo[index], hi[index]
    else:
        lo, hi = model.q_lower, model.q_upper
    if seed is None:
        full = model.home_configuration()
    else:  # clamped and normalised as the solver treats seeds
        full = np.minimum(np.maximum(model.check_q(seed, "seed"), lo), hi)
        for s in model.quaternion_slices:
            full[..., s] /= np.linalg.norm(full[..., s], axis=-1, keepdims=True)
    result = solve_ik(chain.chain, targets, tips, full[..., index], active_joints=active_joints, lower=lower,
                      upper=upper, **options)
    q = np.array(np.broadcast_to(full, result.q.shape[:-1] + (model.n_q,)))
    q[..., index] = result.q
    return dataclasses.replace(result, q=q)
