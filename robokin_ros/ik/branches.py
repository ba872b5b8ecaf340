"""IK with a secondary objective, and several distinct solutions of one target.

:func:`solve_with_objective` runs the primary solve (the plain request's answer), then moves each
solution in the task's null space (:mod:`.objectives`) and keeps it only where the objective is
better than the plain answer's. :func:`distinct_solutions` solves one target from the seed and from
batches of configurations spread over the bounds until it holds ``count`` solutions farther apart
than ``distance`` in joint space (distinct IK branches, or distinct points of a redundant arm's
self-motion), compared modulo 2π on every joint that turns (continuous joints, and revolute joints
whose range exceeds 2π: a solution and its 2π-shifted copy are one branch), each reported in the
range nearest the seed, or its search ends (see :func:`distinct_solutions`), and sorts them by the
objective.
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
from .budget import CancelToken, request_offset
from .objectives import Task, refine
from .options import IKOptions
from .poses import solve_poses
from .reach import reach_upper_bound
from .result import IKResult

Array = NDArray[np.float64]

#: Configurations solved together per round of :func:`distinct_solutions`.
ROUND_SEEDS = 64
#: Iterations of a correction back onto the task after a null-space step (it starts next to a
#: solution: 1-3 iterations usually).
CORRECTION_ITERATIONS = 20
#: Rounds of :func:`distinct_solutions` without a finite timeout (None or ``inf``).
MAX_ROUNDS = 16
#: Rounds in a row that add no solution end :func:`distinct_solutions` (measured on the bundled
#: UR5e, solutions=8: every real branch of Hawkins' closed form on 120/120 random poses already
#: with 1; 3 for margin).
STALE_ROUNDS = 3
#: Fields of :class:`IKResult`, in order.
_FIELDS = ("q", "success", "position_error", "rotation_error", "iterations", "status")


def _seed(model: RobotModel, seed) -> Array:
    return model.home_configuration() if seed is None else model.check_q(seed, "seed")


def _cancelled(cancel: CancelToken | None, deadline: float | None) -> bool:
    return cancel is not None and cancel.cancelled or deadline is not None and time.perf_counter() > deadline


def solve_with_objective(model: RobotModel, targets, tips, seed, options: IKOptions,
                         cancel: CancelToken | None = None) -> IKResult:
    """:func:`~robokin_ros.ik.poses.solve_poses` (the plain request's answer), each solution then
    refined for ``options.objective`` (:func:`~robokin_ros.ik.objectives.refine`) and compared with
    the plain answer: the refined one is kept only where it is a solution and no
    :meth:`~robokin_ros.ik.objectives.Task.measures` is worse than the plain answer's, so the
    answer is never worse than a plain request's for the objective."""
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
    fields = {name: np.array(getattr(result, name)) for name in _FIELDS}
    names = (tips,) if isinstance(tips, str) else tuple(tips)
    for index in np.ndindex(batch):
        if not fields["success"][index]:
            continue
        task = Task(model, names, T[index].reshape(n_tips, 4, 4), seeds[index], options)

        def correct(start: Array, target=T[index]) -> tuple[Array, bool]:
            r = solve_poses(model, target, tips, start, short, cancel)
            return r.q, bool(r.success)

        plain = fields["q"][index].copy()
        q = refine(task, plain, correct, lambda: _cancelled(cancel, deadline))
        final = solve_poses(model, T[index], tips, q, short, cancel)  # (0 iterations: q is a solution) its errors
        if bool(final.success) and all(a <= b for a, b in zip(task.measures(final.q), task.measures(plain))):
            for name in ("q", "position_error", "rotation_error"):
                fields[name][index] = getattr(final, name)
    return IKResult(**fields)


def distinct_solutions(model: RobotModel, targets, tips, seed, options: IKOptions,
                       cancel: CancelToken | None = None) -> IKResult:
    """Up to ``options.solutions`` solutions of one target, pairwise farther apart than
    ``options.solution_distance`` (Euclidean over the free coordinates, compared modulo 2π on
    every continuous joint and every revolute joint whose range exceeds 2π), each reported with
    those joints in the range nearest the seed (within the bounds), sorted by
    ``options.objective`` (None: ``closest``); batch shape ``(m,)``, ``1 <= m <= count``: the
    solutions found (all ``success``), or the primary solve's failed result when there is none.

    The primary solve is the plain request's; then rounds of :data:`ROUND_SEEDS` configurations
    spread over the bounds (drawn from ``options.rng``; None: from the request, repeatable). The
    search ends when it holds ``count`` solutions, after :data:`STALE_ROUNDS` rounds in a row
    that find no new one, when ``timeout`` (here the whole search's budget) runs out, after
    :data:`MAX_ROUNDS` rounds when there is no finite timeout (None or ``inf``), or when
    ``cancel`` is cancelled; no round runs for a target beyond the chain's reach
    (:func:`~robokin_ros.ik.reach.reach_upper_bound`).

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
    timeout = options.timeout
    deadline = time.perf_counter() + timeout if timeout is not None and math.isfinite(timeout) else None
    rng = np.random.default_rng(request_offset((T, seed_q)) if options.rng is None else options.rng)
    lo, hi = _spread(task)
    found: list[IKResult] = []

    def keep(result: IKResult) -> bool:
        """Add the solutions of ``result`` (batch ``()`` or ``(B,)``) that are new; whether any was."""
        batched, added = np.ndim(result.success) == 1, False
        for k in np.flatnonzero(np.atleast_1d(result.success)).tolist():
            one = IKResult(*(np.asarray(getattr(result, f))[k] if batched else np.asarray(getattr(result, f))
                             for f in _FIELDS))
            one = dataclasses.replace(one, q=task.nearest_seed(one.q))
            if len(found) < count and all(_distance(task, one.q, other.q) > distance for other in found):
                found.append(one)
                added = True
        return added

    primary = solve_poses(model, T, tips, seed, options, cancel)   # the plain request's answer
    keep(primary)
    stale, reachable = 0, _within_reach(model, task, T, options)
    for _ in range(MAX_ROUNDS if deadline is None else 1 << 30):
        if len(found) >= count or stale >= STALE_ROUNDS or not reachable or _cancelled(cancel, deadline):
            break
        seeds = np.repeat(seed_q[None], ROUND_SEEDS, axis=0)
        seeds[:, task.free_q] = rng.uniform(lo, hi, (ROUND_SEEDS, len(task.free_q)))
        if deadline is not None:  # (a batch's timeout is per problem, pooled over the batch)
            options = dataclasses.replace(options, timeout=max(deadline - time.perf_counter(), 1e-6) / ROUND_SEEDS)
        added = keep(solve_poses(model, np.broadcast_to(T, (ROUND_SEEDS,) + T.shape), tips, seeds, options, cancel))
        stale = 0 if added else stale + 1
    if not found:
        return IKResult(*(np.asarray(getattr(primary, f))[None] for f in _FIELDS))
    found.sort(key=lambda r: task.value(r.q))
    return IKResult(*(np.stack([np.asarray(getattr(r, f)) for r in found]) for f in _FIELDS))


def _spread(task: Task) -> tuple[Array, Array]:
    """Bounds ``(n_free,)`` of the configurations a round starts from: the bounds, ±π where there
    is none, one turn around the middle of a revolute joint whose range exceeds 2π (every branch
    is there modulo 2π)."""
    lo = np.where(np.isfinite(task.lo), task.lo, -np.pi)
    hi = np.where(np.isfinite(task.hi), task.hi, np.pi)
    middle = 0.5 * (lo + hi)
    turn = task.turns & (hi - lo > 2.0 * np.pi)
    return np.where(turn, middle - np.pi, lo), np.where(turn, middle + np.pi, hi)


def _within_reach(model: RobotModel, task: Task, T: Array, options: IKOptions) -> bool:
    """False when a tip's target position is farther from the base than the chain reaches (by
    more than its tolerances): no configuration solves it."""
    box = (np.zeros((len(task.tips), 6)) if options.axis_tolerances is None
           else np.broadcast_to(np.array(options.axis_tolerances, float), (len(task.tips), 6)))
    base = model.link_names[task.base]
    for k, (tip, target) in enumerate(zip(task.tips, T.reshape(len(task.tips), 4, 4))):
        slack = float(np.linalg.norm(box[k, :3])) + options.position_tolerance
        if float(np.linalg.norm(target[:3, 3])) > reach_upper_bound(model, base, tip) * (1.0 + 1e-9) + slack:
            return False
    return True


def _distance(task: Task, a: Array, b: Array) -> float:
    """Distance of ``a, b (n_q,)`` over the free coordinates, modulo 2π where a joint turns."""
    d = a[task.free_q] - b[task.free_q]
    d[task.turns] = wrap_angle(d[task.turns])
    return float(np.linalg.norm(d))
