"""Inverse kinematics: Levenberg–Marquardt on the SE(3) pose error, within the joint limits.

The algorithm runs in two technologies. numpy (:meth:`Solver.stacked
<robokin_ros.ik.solver.Solver.stacked>`): many problems iterate together, stacked: the kernel's
batched output is a ``(size, B)`` array and every operation covers all rows (the small normal
systems are solved by a straight-line Cholesky factorisation whose entries are ``(B,)`` arrays,
or by LAPACK for a few rows); finished problems make room for waiting ones. It is the oracle and
the path without numba, also for one problem (one row). numba: the one compiled outer loop
(:func:`robokin_ros.ik.generic_loop.loop`) on the robot's generated step
(:mod:`robokin_ros.ik.compiled_loop`: the same iterates to rounding, ~0.5 µs an iteration), loaded
in the background once the other paths have been busy, at once by :func:`prepare_ik
<robokin_ros.ik.preparation.prepare_ik>`, or when the solver is made if the machine has it
compiled; until then on the step of any serial chain given as arrays (compiled once per
installation) when it covers the problem. One problem (one target set, one seed) is checked and
set up with few numpy calls (:func:`~robokin_ros.ik.poses.solve_poses`). Models the generator
does not handle (floating, planar joints) use the generic FK and Jacobians, stacked. Stalled rows
restart at the next points of a low-discrepancy (R2) sequence of configurations within the bounds.

Notation: a *problem* is one target set (a pose per tip) with one seed; a *row* is one iterate
of one problem (its seed, or a restart). ``x`` are the problem's free coordinates (the
``v`` coordinates of the joints allowed to move). A tip's error twist [linear; angular] is
``d = [R_tᵀ (p - p_t); log(R_tᵀ R)]`` in the target's axes; when every axis counts alike (no
dead band, no free axis) the step is computed in the world axes instead, with
``[p - p_t; log(R R_tᵀ)]`` (the same vector rotated by ``R_t``, so the same least squares) and
the kernel's LOCAL_WORLD_ALIGNED Jacobian as it is.

Call graph: :func:`solve_ik` makes the call's :class:`~robokin_ros.ik.options.IKOptions` and hands
them to :func:`solve_with_options`, which dispatches to :func:`~robokin_ros.ik.branches.distinct_solutions`,
:func:`~robokin_ros.ik.branches.solve_with_objective` or the primitive
:func:`~robokin_ros.ik.poses.solve_poses` (which they call too); the primitive takes the cached
:class:`~robokin_ros.ik.call.IKCall` and solves one target set given as lists (:meth:`Solver.solve_problem
<robokin_ros.ik.solver.Solver.solve_problem>`) or a stacked batch (:meth:`Solver.solve_problems
<robokin_ros.ik.solver.Solver.solve_problems>`), each on the compiled loop
(:meth:`CompiledLoop.run_problem <robokin_ros.ik.compiled_loop.CompiledLoop.run_problem>`) when it
serves the call, else in numpy.
"""

from __future__ import annotations

import dataclasses

from ..errors import ArgumentError, IKOptionError
from ..model import RobotModel
from .branches import distinct_solutions, solve_with_objective
from .budget import CancelToken
from .options import DEFAULT_MAX_ITERATIONS, IKOptions
from .poses import solve_poses
from .result import IKResult


def solve_ik(model: RobotModel, targets, tips, seed=None, *,
             base: str | None = None,
             position_tolerance: float = 1e-5,
             rotation_tolerance: float = 1e-5,
             axis_tolerances=None,
             weights=None,
             active_joints=None,
             lower=None,
             upper=None,
             timeout: float | None = None,
             max_iterations: int = DEFAULT_MAX_ITERATIONS,
             restarts: int | None = 0,
             rng=None,
             avoid_collisions=False,
             objective: str | None = None,
             solutions: int | None = None,
             solution_distance: float = 0.1,
             threads: int | None = None,
             options: IKOptions | None = None,
             cancel: CancelToken | None = None) -> IKResult:
    """Joint configurations that put one or several tips at target poses.

    The keywords ``base`` ... ``threads`` are the fields of
    :class:`~robokin_ros.ik.options.IKOptions`, with its defaults (a test holds them equal).

    Damped least squares (Levenberg–Marquardt, position rows weighted by
    :data:`~robokin_ros.ik.lm.POSITION_WEIGHT`) from each seed; a row whose cost stops dropping restarts at another
    configuration (see ``restarts``); a problem stops as soon as one of its rows meets the
    tolerances (several rows at once: the one closest to the seed wins). Problems run on the
    compiled loop when it serves the call (:func:`~robokin_ros.ik.preparation.prepare_ik`, or in
    the background after :data:`~robokin_ros.kernels.accel.MIN_BATCH` iterations; up to
    :data:`~robokin_ros.ik.solver.SCALAR_ROWS` one by one, a batch on every core, ``threads``;
    the time budget then checked every :data:`~robokin_ros.ik.compiled_loop.CHUNK` iterations,
    every :data:`~robokin_ros.ik.compiled_loop.BATCH_QUOTA` in a batch), else stacked in numpy;
    each problem walks the same iterates every way (to rounding), restarts included: each draws
    from its own stretch of the restart sequence; bit-identical for every thread count.

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
        max_iterations: iterations per problem (restarts included). The default, 2000
            (:data:`~robokin_ros.ik.options.DEFAULT_MAX_ITERATIONS`), solves every FK-made target
            of the bundled arms (measured on 590,000: at most 1,229 iterations; 99.98 % within
            200); one iteration costs ~0.5 µs on the compiled loop (an unreachable target gives
            up after ~1 ms), ~0.5 ms for one problem in numpy.
        restarts: extra rows per problem started at other configurations alongside the seed
            (all iterated together, vectorised, even for one problem); None or 0: the seed row
            only. Independently of it, a row whose cost has not dropped by ``STALL_PROGRESS``
            (10 %) for ``STALL_ITERATIONS`` (3) iterations restarts elsewhere. Restart
            configurations are consecutive points of a low-discrepancy (R2) sequence within the
            bounds, from a point chosen by ``rng``.
        rng: None, a whole number >= 0 (seed) or a ``numpy.random.Generator``, choosing where
            the restarts start. None: chosen from the request itself (a hash of the targets and
            the seed), so the same request gives the same answer bit for bit, in a fresh process
            and in a long-running one, as long as no time budget runs out (a ``timeout`` that ends
            the search depends on the machine's speed).
        avoid_collisions: False; True (the model's default
            :func:`~robokin_ros.collision.collision_model`) or a
            :class:`~robokin_ros.collision.CollisionModel`: a configuration within tolerance that
            is in self-collision is not a solution (its row restarts elsewhere); a problem that
            finds no other ends ``success=False``, status ``"in_collision"`` whenever the
            configuration it returns is in self-collision (within the tolerances or not, also
            after a spent iteration or time budget), which ``result.describe()`` says.
        objective: None, or a secondary objective followed in the task's null space once a
            problem is solved (see :mod:`robokin_ros.ik.objectives`): ``"closest"`` (least motion
            from the seed), ``"center"`` (away from the joint limits), ``"manipulability"``
            (Yoshikawa's measure of the first tip's Jacobian, its smallest singular value never
            lowered). It never turns a solved problem into a failure, and its answer is never
            worse for the objective than the plain request's (the better of the two is kept).
        solutions: None, or ``k >= 1``: one target (no batch) solved from the seed and from
            configurations spread over the bounds until ``k`` solutions pairwise farther apart
            than ``solution_distance`` are found, rounds stop finding new ones, or ``timeout``
            (here the whole search's budget; None or ``inf``: a fixed number of rounds) runs out;
            each reported nearest the seed modulo 2π on the joints that turn; sorted by
            ``objective`` (None: closest to the seed) (see
            :func:`robokin_ros.ik.branches.distinct_solutions`).
        threads: the most threads a batch runs on (None: ``ROBOKIN_THREADS``, else every core this
            process may use; see :mod:`robokin_ros.kernels.parallel`); the answers are the same
            bit for bit whatever the count.
        solution_distance: [rad or m] least Euclidean distance between two of the ``solutions``
            over the free coordinates, modulo 2π on continuous joints and on revolute joints
            whose range exceeds 2π (a 2π-shifted copy is the same branch).
        options: None, or an :class:`~robokin_ros.ik.options.IKOptions` holding the options above
            (``base`` ... ``solution_distance``), checked once when made: the value to build once
            and pass to many calls. An option may be given either way, not both (a keyword left
            at its default defers to ``options``).
        cancel: None, or a :class:`~robokin_ros.ik.budget.CancelToken`: cancelling it ends this
            solve at its next budget check as if its time budget were spent (status ``"timeout"``).

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
        IKOptionError: negative tolerance, weight or timeout; max_iterations < 1; restarts < 0;
            an option given both as a keyword and in ``options``; ``options`` not an IKOptions.
        ArgumentError: targets, seed, bounds, weights or tolerances that are not real numbers
            (text, None, complex); an ``rng`` of another kind; ``cancel`` not a CancelToken;
            ``threads`` not a whole number >= 1.
        CollisionUnavailableError: ``avoid_collisions`` without coal installed.
    """
    given = locals()
    keywords = {name: given[name] for name in _DEFAULTS}
    return solve_with_options(model, targets, tips, seed, _options(options, keywords), cancel)


def solve_with_options(model: RobotModel, targets, tips, seed, options: IKOptions,
                       cancel: CancelToken | None = None) -> IKResult:
    """:func:`solve_ik` with its options as one validated value: distinct solutions
    (:func:`~robokin_ros.ik.branches.distinct_solutions`), an objective
    (:func:`~robokin_ros.ik.branches.solve_with_objective`), else the primitive
    (:func:`~robokin_ros.ik.poses.solve_poses`).

    Raises:
        ArgumentError: ``cancel`` not None nor a :class:`~robokin_ros.ik.budget.CancelToken`;
            else what :func:`solve_ik` raises.
    """
    if cancel is not None and not isinstance(cancel, CancelToken):
        raise ArgumentError("cancel", f"must be None or a CancelToken, got {type(cancel).__name__}")
    if options.solutions is not None:
        return distinct_solutions(model, targets, tips, seed, options, cancel)
    if options.objective is not None:
        return solve_with_objective(model, targets, tips, seed, options, cancel)
    return solve_poses(model, targets, tips, seed, options, cancel)


def _options(options, keywords: dict) -> IKOptions:
    """The call's :class:`IKOptions`: made of ``keywords`` (every option, by name), or ``options``
    when every keyword is left at its default (a keyword that is None or equal to its default
    counts as not given).

    Raises:
        IKOptionError: ``options`` not an IKOptions, or an option given both ways.
    """
    if options is None:
        return IKOptions(**keywords)
    if not isinstance(options, IKOptions):
        raise IKOptionError(f"options must be an IKOptions or None, got {type(options).__name__}", "options")
    for name, value in keywords.items():
        if value is not None and not _is_default(value, _DEFAULTS[name]):
            raise IKOptionError(f"{name} given both as a keyword and in options=: give it once", name)
    return options


def _is_default(value, default) -> bool:
    """``value`` is the option's default (the very object, or a number of its type equal to it)."""
    return value is default or (type(value) is type(default) and value == default)


#: The options :func:`solve_ik` takes as keywords, and their defaults.
_DEFAULTS = {field.name: field.default for field in dataclasses.fields(IKOptions)}
