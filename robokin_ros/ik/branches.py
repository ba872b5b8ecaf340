"""IK with a secondary objective, and several distinct solutions of one target.

:func:`solve_with_objective` runs the primary solve, then moves each solution in the task's null
space (:mod:`.objectives`). :func:`distinct_solutions` solves one target from the seed and from
batches of configurations spread over the bounds until it holds ``count`` solutions farther apart
than ``distance`` in joint space (distinct IK branches, or distinct points of a redundant arm's
self-motion), or its time runs out, and sorts them by the objective.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ..checks import is_real, is_whole, numbers
from ..errors import IKOptionError
from ..model import RobotModel
from ..model.configuration import wrap_angle
from .objectives import Task, refine
from .options import effective_bounds
from .result import IKResult

Array = NDArray[np.float64]

#: Configurations solved together per round of :func:`distinct_solutions`.
ROUND_SEEDS = 64
#: Iterations of a correction back onto the task after a null-space step (it starts next to a
#: solution: 1-3 iterations usually).
CORRECTION_ITERATIONS = 20
#: Rounds of :func:`distinct_solutions` without a timeout.
MAX_ROUNDS = 16


def _task(model: RobotModel, targets: Array, tips, seed: Array, objective: str, options: dict) -> Task:
    names = (tips,) if isinstance(tips, str) else tuple(tips)
    T = targets.reshape(len(names), 4, 4)
    lo, hi = effective_bounds(model, options.get("lower"), options.get("upper"))
    axis = options.get("axis_tolerances")
    return Task(model, names, options.get("base"), T, None if axis is None else numbers(axis, "axis_tolerances"),
                options.get("active_joints"), lo, hi, seed, objective)


def _seed(model: RobotModel, seed) -> Array:
    return model.home_configuration() if seed is None else model.check_q(seed, "seed")


def solve_with_objective(solve: Callable[..., IKResult], model: RobotModel, targets, tips, seed, objective: str,
                         options: dict) -> IKResult:
    """``solve(model, targets, tips, seed, **options)``, each solution then refined for ``objective``."""
    began = time.perf_counter()
    result = solve(model, targets, tips, seed, **options)
    batch = result.success.shape
    n_tips = 1 if isinstance(tips, str) else len(tips)
    tail = (4, 4) if isinstance(tips, str) else (n_tips, 4, 4)
    T = np.broadcast_to(numbers(targets, "targets"), batch + tail)
    seeds = np.broadcast_to(_seed(model, seed), batch + (model.n_q,))
    timeout = options.get("timeout")
    deadline = None if timeout is None else began + timeout * max(1, math.prod(batch))
    # Corrections start next to a solution: a few iterations, no parallel restarts.
    short = dict(options, max_iterations=CORRECTION_ITERATIONS, restarts=None)
    fields = {name: np.array(getattr(result, name)) for name in ("q", "success", "position_error", "rotation_error",
                                                                 "iterations", "status")}
    for index in np.ndindex(batch):
        if not fields["success"][index]:
            continue
        task = _task(model, T[index], tips, seeds[index], objective, options)

        def correct(start: Array, target=T[index]) -> tuple[Array, bool]:
            r = solve(model, target, tips, start, **short)
            return r.q, bool(r.success)

        q = refine(task, fields["q"][index], correct, deadline)
        final = solve(model, T[index], tips, q, **short)  # (0 iterations: q is a solution) its errors
        for name in ("q", "position_error", "rotation_error"):
            fields[name][index] = getattr(final, name)
    return IKResult(**fields)


def distinct_solutions(solve: Callable[..., IKResult], model: RobotModel, targets, tips, seed, count: int,
                       distance: float, objective: str | None, options: dict) -> IKResult:
    """Up to ``count`` solutions of one target, pairwise farther apart than ``distance`` (Euclidean
    over the free coordinates, continuous joints wrapped), sorted by ``objective`` (None:
    ``closest``); batch shape ``(m,)``, ``1 <= m <= count``: the solutions found (all
    ``success``), or the primary solve's failed result when there is none. ``timeout`` bounds the
    whole search (None: :data:`MAX_ROUNDS` rounds of :data:`ROUND_SEEDS` configurations).

    Raises:
        IKOptionError: ``count`` not a whole number >= 1, ``distance`` not > 0, or a batch of targets.
    """
    if not is_whole(count) or count < 1:
        raise IKOptionError(f"solutions must be a whole number >= 1, got {count!r}")
    if not is_real(distance) or not distance > 0:
        raise IKOptionError(f"solution_distance must be > 0, got {distance!r}")
    T = numbers(targets, "targets")
    if T.ndim != (2 if isinstance(tips, str) else 3) or (seed is not None and np.ndim(seed) != 1):
        raise IKOptionError(f"solutions= solves one target (targets {T.shape}): call it once per target")
    seed_q = _seed(model, seed)
    task = _task(model, T, tips, seed_q, objective or "closest", options)
    timeout = options.get("timeout")
    deadline = None if timeout is None else time.perf_counter() + timeout
    rng = np.random.default_rng(options.get("rng"))
    lo = np.where(np.isfinite(task.lo), task.lo, -np.pi)
    hi = np.where(np.isfinite(task.hi), task.hi, np.pi)
    found: list[IKResult] = []

    def keep(result: IKResult) -> None:
        """Add the solutions of ``result`` (batch ``()`` or ``(B,)``) that are new."""
        batched = np.ndim(result.success) == 1
        for k in np.flatnonzero(np.atleast_1d(result.success)).tolist():
            one = IKResult(*(np.asarray(getattr(result, f))[k] if batched else np.asarray(getattr(result, f))
                             for f in ("q", "success", "position_error", "rotation_error", "iterations", "status")))
            if len(found) < count and all(_distance(task, one.q, other.q) > distance for other in found):
                found.append(one)

    primary = solve(model, T, tips, seed_q, **options)
    keep(primary)
    for _ in range(MAX_ROUNDS if deadline is None else 1 << 30):
        if len(found) >= count or (deadline is not None and time.perf_counter() > deadline):
            break
        seeds = np.repeat(seed_q[None], ROUND_SEEDS, axis=0)
        seeds[:, task.free_q] = rng.uniform(lo, hi, (ROUND_SEEDS, len(task.free_q)))
        if deadline is not None:  # (a batch's timeout is per problem, pooled over the batch)
            options = dict(options, timeout=max(deadline - time.perf_counter(), 1e-6) / ROUND_SEEDS)
        keep(solve(model, np.broadcast_to(T, (ROUND_SEEDS,) + T.shape), tips, seeds, **options))
    if not found:
        return IKResult(*(np.asarray(getattr(primary, f))[None] for f in
                          ("q", "success", "position_error", "rotation_error", "iterations", "status")))
    found.sort(key=lambda r: task.value(r.q))
    return IKResult(*(np.stack([np.asarray(getattr(r, f)) for r in found]) for f in
                      ("q", "success", "position_error", "rotation_error", "iterations", "status")))


def _distance(task: Task, a: Array, b: Array) -> float:
    d = a[task.free_q] - b[task.free_q]
    d[task.periodic] = wrap_angle(d[task.periodic])
    return float(np.linalg.norm(d))
