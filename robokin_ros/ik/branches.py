"""IK with a secondary objective, and several distinct solutions of one target.

:func:`solve_with_objective` runs the primary solve, then moves each solution in the task's null
space (:mod:`.objectives`). :func:`distinct_solutions` solves one target from the seed and from
batches of configurations spread over the bounds until it holds ``count`` solutions farther apart
than ``distance`` in joint space (distinct IK branches, or distinct points of a redundant arm's
self-motion), or its time runs out, and sorts them by the objective.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
from numpy.typing import NDArray

from ..checks import numbers
from ..errors import IKOptionError
from ..model import RobotModel
from ..model.configuration import wrap_angle
from .budget import CancelToken
from .objectives import Task, refine
from .options import IKOptions
from .poses import solve_poses
from .result import IKResult

Array = NDArray[np.float64]

#: Configurations solved together per round of :func:`distinct_solutions`.
ROUND_SEEDS = 64
#: Iterations of a correction back onto the task after a null-space step (it starts next to a
#: solution: 1-3 iterations usually).
CORRECTION_ITERATIONS = 20
#: Rounds of :func:`distinct_solutions` without a timeout.
MAX_ROUNDS = 16


def _seed(model: RobotModel, seed) -> Array:
    return model.home_configuration() if seed is None else model.check_q(seed, "seed")


def _cancelled(cancel: CancelToken | None, deadline: float | None) -> bool:
    return cancel is not None and cancel.cancelled or deadline is not None and time.perf_counter() > deadline


def solve_with_objective(model: RobotModel, targets, tips, seed, options: IKOptions,
                         cancel: CancelToken | None = None) -> IKResult:
    """:func:`~robokin_ros.ik.poses.solve_poses`, each solution then refined for ``options.objective``."""
    began = time.perf_counter()
    result = solve_poses(model, targets, tips, seed, options, cancel)
    batch = result.success.shape
    n_tips = 1 if isinstance(tips, str) else len(tips)
    tail = (4, 4) if isinstance(tips, str) else (n_tips, 4, 4)
    T = np.broadcast_to(numbers(targets, "targets"), batch + tail)
    seeds = np.broadcast_to(_seed(model, seed), batch + (model.n_q,))
    deadline = None if options.timeout is None else began + options.timeout * max(1, math.prod(batch))
    # Corrections start next to a solution: a few iterations, no parallel restarts.
    short = dataclasses.replace(options, max_iterations=CORRECTION_ITERATIONS, restarts=0)
    fields = {name: np.array(getattr(result, name)) for name in ("q", "success", "position_error", "rotation_error",
                                                                 "iterations", "status")}
    names = (tips,) if isinstance(tips, str) else tuple(tips)
    for index in np.ndindex(batch):
        if not fields["success"][index]:
            continue
        task = Task(model, names, T[index].reshape(n_tips, 4, 4), seeds[index], options)

        def correct(start: Array, target=T[index]) -> tuple[Array, bool]:
            r = solve_poses(model, target, tips, start, short, cancel)
            return r.q, bool(r.success)

        q = refine(task, fields["q"][index], correct, lambda: _cancelled(cancel, deadline))
        final = solve_poses(model, T[index], tips, q, short, cancel)  # (0 iterations: q is a solution) its errors
        for name in ("q", "position_error", "rotation_error"):
            fields[name][index] = getattr(final, name)
    return IKResult(**fields)


def distinct_solutions(model: RobotModel, targets, tips, seed, options: IKOptions,
                       cancel: CancelToken | None = None) -> IKResult:
    """Up to ``options.solutions`` solutions of one target, pairwise farther apart than
    ``options.solution_distance`` (Euclidean over the free coordinates, continuous joints
    wrapped), sorted by ``options.objective`` (None: ``closest``); batch shape ``(m,)``,
    ``1 <= m <= count``: the solutions found (all ``success``), or the primary solve's failed
    result when there is none. ``timeout`` bounds the whole search (None: :data:`MAX_ROUNDS`
    rounds of :data:`ROUND_SEEDS` configurations); cancelling ``cancel`` ends it.

    Raises:
        IKOptionError: a batch of targets.
    """
    count, distance = options.solutions, options.solution_distance
    T = numbers(targets, "targets")
    if T.ndim != (2 if isinstance(tips, str) else 3) or (seed is not None and np.ndim(seed) != 1):
        raise IKOptionError(f"solutions= solves one target (targets {T.shape}): call it once per target")
    seed_q = _seed(model, seed)
    names = (tips,) if isinstance(tips, str) else tuple(tips)
    task = Task(model, names, T.reshape(len(names), 4, 4), seed_q, options, options.objective or "closest")
    deadline = None if options.timeout is None else time.perf_counter() + options.timeout
    rng = np.random.default_rng(options.rng)
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

    primary = solve_poses(model, T, tips, seed_q, options, cancel)
    keep(primary)
    for _ in range(MAX_ROUNDS if deadline is None else 1 << 30):
        if len(found) >= count or _cancelled(cancel, deadline):
            break
        seeds = np.repeat(seed_q[None], ROUND_SEEDS, axis=0)
        seeds[:, task.free_q] = rng.uniform(lo, hi, (ROUND_SEEDS, len(task.free_q)))
        if deadline is not None:  # (a batch's timeout is per problem, pooled over the batch)
            options = dataclasses.replace(options, timeout=max(deadline - time.perf_counter(), 1e-6) / ROUND_SEEDS)
        keep(solve_poses(model, np.broadcast_to(T, (ROUND_SEEDS,) + T.shape), tips, seeds, options, cancel))
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
