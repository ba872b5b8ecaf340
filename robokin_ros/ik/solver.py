"""The Levenberg–Marquardt iterations of IK: many rows stacked in numpy, or on the compiled loop.

A :class:`Solver` holds everything fixed for one problem, options and bounds (no per-call
state). IK runs in two technologies, the same algorithm in each: numpy (:meth:`Solver.stacked`,
every problem's rows iterated together; the oracle, and the path without numba, also for one
problem) and numba (the one compiled outer loop, :func:`robokin_ros.ik.generic_loop.loop`, on
the robot's generated step once loaded, :mod:`~robokin_ros.ik.compiled_loop`, else on the chain
step compiled once per installation). :meth:`Solver.solve_problems` runs a batch of problems,
:meth:`Solver.solve_problem` one problem given as lists (the ``/compute_ik`` case). Per call, a
:class:`~robokin_ros.ik.budget.Budget` holds the time limit, the cancel token, the restart
sequence and the collision test; an :class:`Outcome` the results as problems finish.
"""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..kinematics import LOCAL_WORLD_ALIGNED, forward_kinematics, jacobian
from ..model import RobotModel
from ..model.configuration import integrate, wrap_angle
from ..runtime import current_runtime
from . import generic_loop_loading
from .budget import Budget
from .chain_arrays import chain_data
from .collision_gate import rejected_rows
from .compiled_loop import BatchKernels, CompiledLoop
from .lm import (
    DAMPING_COST,
    DAMPING_FLOOR,
    POSITION_WEIGHT,
    STALL_ITERATIONS,
    STALL_PROGRESS,
    errors_stacked,
    lm_step_arrays,
    normal_solve,
)
from .options import Tolerances
from .problem import IKProblem
from .result import CONVERGED, MAX_ITERATIONS, NO_FREE_JOINTS, TIMEOUT

Array = NDArray[np.float64]

#: Rows iterated together in a vectorised pass (finished problems make room for waiting ones).
BATCH_ROWS = 2048
#: Calls with this many problems or fewer run one by one on the compiled loop (each checks the
#: time budget every :data:`~robokin_ros.ik.compiled_loop.CHUNK` iterations); larger batches run
#: on it in chunks on every core (:meth:`CompiledLoop.run_problems
#: <robokin_ros.ik.compiled_loop.CompiledLoop.run_problems>`). Without a compiled loop (numba off
#: or not loaded yet, a problem it does not cover, parallel restarts, a collision test), every
#: batch and single problem iterates stacked in numpy (:meth:`Solver.stacked`). Every problem walks
#: the same iterates on every path, its restarts included (each draws from its own stretch of the
#: restart sequence), so a batch's answers do not depend on which path ran, to rounding (~1e-12).
SCALAR_ROWS = 64


def _generic_frames(model: RobotModel, tips: Sequence[int], width: int, q: Array) -> Array:
    """The generated kernel's batched output ``(B, n_tips, 10, width)`` by the public FK and the
    numpy Jacobians, for ``q (B, n_q)`` (models the generator does not handle: floating, planar
    joints; and the oracle while no compiled tier runs the generated kernel)."""
    T = forward_kinematics(model, q)
    out = np.zeros((q.shape[0], len(tips), 10, width))
    for k, tip in enumerate(tips):
        out[:, k, :4, :4] = T[:, tip]
        out[:, k, 4:, :model.n_v] = jacobian(model, q, model.link_names[tip], LOCAL_WORLD_ALIGNED, poses=T)
    return out


class _Errors(NamedTuple):
    """Where :meth:`Solver.record_errors` writes one configuration's errors."""

    position_error: Array
    rotation_error: Array


class Outcome:
    """Per-call results of a batch, filled as problems finish."""

    def __init__(self, seeds: Array, budget: Budget):
        n = len(seeds)
        self.q, self.success = seeds.copy(), np.zeros(n, bool)
        self.position_error, self.rotation_error = np.zeros(n), np.zeros(n)
        self.iterations = np.zeros(n, np.int64)
        self.status = np.full(n, MAX_ITERATIONS, dtype="<U14")
        self.unfinished = np.ones(n, bool)  # errors still to evaluate at q
        self.restarts = np.zeros(n, np.int64)  # restarts each problem has drawn (vectorised)
        self.budget = budget


@dataclasses.dataclass
class _Rows:
    """State of the rows of a vectorised pass, one column (last axis) per row."""

    q: Array          # (n_q, B)
    target: Array     # (n_tips * 12, B)
    problem: Array    # (B,) index of the row's problem
    iteration: Array  # (B,) iterations of the row's problem
    best_cost: Array  # (B,)
    best_q: Array     # (n_q, B)
    stall: Array      # (B,) iterations since the last progress
    reference: Array  # (B,) cost at the last progress

    def select(self, keep) -> _Rows:
        return _Rows(*(getattr(self, f.name)[..., keep] for f in dataclasses.fields(self)))

    def extend(self, other: _Rows) -> _Rows:
        return _Rows(*(np.concatenate([getattr(self, f.name), getattr(other, f.name)], axis=-1)
                       for f in dataclasses.fields(self)))


def _r2_steps(d: int) -> Array:
    """Steps ``(d,)`` of the R2 sequence ``frac(0.5 + k α)`` in ``d`` dimensions:
    ``α_j = φ_d^-(j+1)`` with ``φ_d`` the positive root of ``x^(d+1) = x + 1`` (Roberts 2018)."""
    phi = 2.0
    for _ in range(64):  # fixed point iteration, a contraction
        phi = (1.0 + phi) ** (1.0 / (d + 1))
    return (1.0 / phi) ** np.arange(1, d + 1) % 1.0


def _pick(problem: Array, key: Array, rows: Array) -> Array:
    """Among ``rows``, the one with the smallest ``key`` for each problem they belong to."""
    if rows.size == 0:
        return rows
    order = rows[np.lexsort((key[rows], problem[rows]))]
    p = problem[order]
    return order[np.concatenate([[True], p[1:] != p[:-1]])]


class Solver:
    """The Levenberg–Marquardt iterations for one problem, options and bounds (no per-call state)."""

    @property
    def model(self) -> RobotModel:
        return self._model()

    def __init__(self, model: RobotModel, problem: IKProblem, lo: Array, hi: Array, tol: Tolerances, compiled):
        # Kept in the model's registry (robokin_ros.model_cache): a strong reference here would
        # keep the model alive.
        self._model = weakref.ref(model)
        self.problem, self.tol, self.compiled = problem, tol, compiled
        fq = problem.free_q
        self.lo, self.hi = lo[fq], hi[fq]
        self.q_lower, self.q_upper = lo.tolist(), hi.tolist()
        finite = np.isfinite(self.lo) & np.isfinite(self.hi)
        periodic = problem.periodic & ~np.isfinite(self.lo) & ~np.isfinite(self.hi)
        self.wrap = np.flatnonzero(periodic)
        self.restarted = problem.randomised & (finite | periodic)
        # Restarts stay within the bounds, and within one turn around the middle of a revolute
        # joint's range when it is wider (every angle is there; measured on the UR5e's ±2π
        # joints: 15 % fewer iterations, the 99th percentile 99 -> 63).
        lo_, hi_ = np.where(finite, self.lo, -np.pi), np.where(finite, self.hi, np.pi)
        half = np.where(problem.revolute, np.minimum(0.5 * (hi_ - lo_), np.pi), 0.5 * (hi_ - lo_))
        middle = 0.5 * (lo_ + hi_)
        self.restart_lo, self.restart_hi = np.maximum(middle - half, lo_), np.minimum(middle + half, hi_)
        self.r2_steps = _r2_steps(len(fq))
        # Each problem's stretch of the restart sequence: room for every restart its rows can draw.
        self.restart_stride = (1 + tol.restarts) * (tol.max_iterations // STALL_ITERATIONS + 1)
        self.bounded_v = np.array(problem.bounded_v, np.int64)
        self.bounded_q = np.array(problem.bounded_q, np.int64)
        self.bounded_lo, self.bounded_hi = lo[self.bounded_q][:, None], hi[self.bounded_q][:, None]
        nt, w = len(problem.tips), max(4, model.n_v)
        self.n_tips, self.width = nt, w
        rows = tol.rows
        self.lm_rows = [k for k, row in enumerate(rows) if row[2] > 0.0]  # rows in the least squares
        self.weights = [rows[k][2] * (POSITION_WEIGHT if rows[k][1] < 3 else 1.0) for k in self.lm_rows]
        self.unit_weights = len(self.lm_rows) == len(rows) and all(s == 1.0 for s in self.weights)
        self.free = list(enumerate(zip(fq.tolist(), self.lo.tolist(), self.hi.tolist())))
        self.restart_floats = [(int(fq[c]), float(self.restart_lo[c]), float(self.restart_hi[c] - self.restart_lo[c]),
                               float(self.r2_steps[c])) for c in np.flatnonzero(self.restarted).tolist()]
        # Indices into the flat kernel output: the tips' poses, the Jacobian rows (world axes)
        # of the weighted constrained axes, and every Jacobian row of every tip.
        columns = problem.free_v.tolist()
        weighted = [rows[j] for j in self.lm_rows]
        self.jacobian_array = np.array([[10 * w * k + (4 + i) * w + c for c in columns] for k, i, _, _ in weighted],
                                       np.int64).reshape(len(self.lm_rows), len(columns))
        self.pose_index = np.array([[10 * w * k + r * w + c for r in range(3) for c in range(3)] +
                                    [10 * w * k + r * w + 3 for r in range(3)] for k in range(nt)])
        self.tip_jacobian_index = np.array([[[10 * w * k + (4 + a) * w + c for c in columns] for a in range(6)]
                                            for k in range(nt)]).reshape(nt, 6, len(columns))
        self.row_index = np.array([6 * k + i for k, i, _, _ in rows], np.int64)
        self.box = np.array([b for _, _, _, b in rows])[:, None]
        self.sqrt_weight = np.array(self.weights)[:, None, None]
        self.linear = np.array([[row[0] == k and row[1] < 3 for row in rows] for k in range(nt)], float)
        self.angular = np.array([[row[0] == k and row[1] >= 3 for row in rows] for k in range(nt)], float)
        # The stacked damped step's straight-line solve of the smaller normal system
        self.normal_solve = normal_solve(min(len(self.lm_rows), len(fq))) if self.lm_rows and len(fq) else None
        # The robot's generated step, run by the compiled outer loop, loaded once the other paths
        # have been busy (see compiled_loop)
        self.loop = CompiledLoop(self) if compiled is not None and self.free and self.lm_rows else None
        # ... and, while that is not compiled on this machine, the chain step compiled once per
        # installation (see generic_loop; None: not needed, off, or a problem it does not cover).
        # Compiled on this machine already: loaded now, before any time budget (< 1 s), so that
        # the same request gets the same bits from the first (the numpy path agrees to rounding).
        self.chain, self._generic = None, None
        cached = self.loop is not None and current_runtime().accelerated and self.loop.in_cache()
        if cached:
            self.loop.accelerate()
        elif self.loop is not None and generic_loop_loading.enabled():
            self.chain = chain_data(self)
        if self.chain is not None:
            generic_loop_loading.KERNELS.functions()   # loads them now (before any time budget) or starts compiling

    # ------------------------------------------------------------------ driver
    def solve_problems(self, target: Array, seeds: Array, out: Outcome):
        """Solve ``n`` problems: target components ``(n, n_tips * 12)`` from ``seeds (n, n_q)``:
        on the compiled loop when it serves them (one by one up to :data:`SCALAR_ROWS`, else in
        chunks on every core), else stacked in numpy."""
        n = len(seeds)
        if len(self.problem.free_q) == 0:
            out.status[:] = NO_FREE_JOINTS
        elif (compiled := self._compiled(out.budget)) is not None:
            run, kernels = compiled
            if n <= SCALAR_ROWS:
                for p in range(n):
                    (out.q[p], out.status[p], out.iterations[p], out.position_error[p], out.rotation_error[p],
                     out.success[p]) = self.loop.run_problem(run, seeds[p].tolist(), target[p].tolist(), out.budget, p)
                out.unfinished[:] = False
            else:
                self.loop.run_problems(kernels, target, seeds, out)
            self.loop.function(int(out.iterations.sum()))   # (counts towards loading the generated step)
        else:
            with np.errstate(over="ignore", invalid="ignore"):   # (a huge target: costs overflow, steps NaN)
                self.stacked(out, target, seeds)
        left = np.flatnonzero(out.unfinished)
        if left.size:
            with np.errstate(over="ignore", invalid="ignore"):
                d = self.errors(self.frames(out.q[left]), target[left].T)
                ok = self.residual(d)[1]
                self.record_errors(out, left, d)
            out.success[left] = ok
            out.status[left[ok & (out.status[left] == NO_FREE_JOINTS)]] = CONVERGED
        if self.wrap.size:  # continuous joints: the equivalent angle nearest the seed
            cols = self.problem.free_q[self.wrap]
            out.q[:, cols] = seeds[:, cols] + wrap_angle(out.q[:, cols] - seeds[:, cols])
        return out.q, out.success, out.position_error, out.rotation_error, out.iterations, out.status

    def solve_problem(self, seed: list, target: list, budget: Budget) -> tuple:
        """One problem from ``seed`` (a list of ``n_q`` floats, not modified) to the target
        components ``target`` (a list): on the compiled loop when it serves the problem, else
        stacked in numpy on one row; continuous joints reported nearest the seed.

        Returns:
            ``(q (list), status, iterations, position error, rotation error, success)``.
        """
        compiled = self._compiled(budget)
        if compiled is None:
            out = Outcome(np.array([seed], float), budget)
            q, success, position, rotation, it, status = self.solve_problems(np.array([target], float), out.q.copy(),
                                                                             out)
            return q[0].tolist(), str(status[0]), int(it[0]), float(position[0]), float(rotation[0]), bool(success[0])
        q, status, it, position, rotation, success = self.loop.run_problem(compiled[0], seed, target, budget)
        self.loop.function(it + 1)   # iterations count towards loading the generated step
        for c in self.wrap.tolist():  # continuous joints: the equivalent angle nearest the seed
            i = self.free[c][1][0]
            q[i] = seed[i] + wrap_angle(q[i] - seed[i])
        return q, status, it, position, rotation, success

    def _compiled(self, budget: Budget) -> tuple[object, BatchKernels] | None:
        """``(run, batch kernels)`` of the compiled loop when it may serve this call (no parallel
        restarts, no collision test): on the generated step once loaded, else on the chain step
        (see :meth:`_generic_runs`); None: neither is loaded."""
        if self.loop is None or self.tol.restarts or budget.accept is not None:
            return None
        run = self.loop.function()
        if run is not None:
            return run, self.loop.batch
        return self._generic_runs()

    def _generic_runs(self) -> tuple | None:
        """``(run, batch kernels)`` of the compiled loop on the chain step
        (:mod:`~robokin_ros.ik.generic_loop`, the same iterates as the generated step to rounding)
        bound to this problem's chain, when it covers this problem and is loaded; else None.
        Bound once (single requests ask on every call)."""
        if self.chain is None or not current_runtime().accelerated:
            return None
        if self._generic is None and (generic := generic_loop_loading.KERNELS.functions()) is not None:
            (fdata, idata), (run, run_many, start_rows, finish_rows) = self.chain, generic
            self._generic = ((lambda x, chunk, max_iterations: run(x, chunk, max_iterations, fdata, idata)),
                             BatchKernels((lambda X, status, max_iterations, quota: run_many(X, status, max_iterations,
                                                                                            quota, fdata, idata)),
                                          start_rows, finish_rows))
        return self._generic

    def restart_base(self, budget: Budget, problem: int) -> int:
        """Index in the R2 sequence of problem ``problem``'s first restart (its stretch of
        :attr:`restart_stride` indices)."""
        return budget.first_restart() + problem * self.restart_stride

    def report(self, q: list, target: list) -> tuple:
        """``(position error, rotation error, within tolerance)`` of one configuration ``q`` (a
        list) against the target components ``target`` (a list), in numpy: the worst tip's raw
        errors, and whether every tip is within tolerance."""
        with np.errstate(over="ignore", invalid="ignore"):   # (a huge target)
            d = self.errors(self.frames(np.array([q], float)), np.array(target, float)[:, None])
            out = _Errors(np.zeros(1), np.zeros(1))
            self.record_errors(out, slice(0, 1), d)
            return float(out.position_error[0]), float(out.rotation_error[0]), bool(self.residual(d)[1][0])

    def first_iteration(self, q: list, target: list) -> tuple:
        """One numpy iteration from ``q`` (a list) to the target components ``target`` (a list):
        ``(cost, next q)``, or ``(None, [position error, rotation error])`` when within tolerance
        (the compiled loop's self-check compares its first iteration with this)."""
        Q, t = np.array(q, float)[:, None], np.array(target, float)[:, None]
        F = self.frames(Q.T)
        d = self.errors(F, t)
        r, ok = self.residual(d)
        if ok[0]:
            position, rotation, _ = self.report(q, target)
            return None, [position, rotation]
        rw = r if self.unit_weights else r[self.lm_rows] * self.sqrt_weight[:, 0]
        cost = 0.5 * (rw * rw).sum(axis=0)
        zero = np.zeros(1, np.int64)
        rows = _Rows(q=Q.copy(), target=t, problem=zero, iteration=zero.copy(), best_cost=cost, best_q=Q.copy(),
                     stall=zero.copy(), reference=cost.copy())
        self.step(None, rows, F, t, r, cost)
        return float(cost[0]), rows.q[:, 0].tolist()

    # ------------------------------------------------------------------ many problems, stacked
    def frames(self, q: Array) -> Array:
        """Kernel output of configurations ``q (B, n_q)`` as ``(size, B)``."""
        B = q.shape[0]
        F = None
        if self.compiled is not None:   # its compiled tier that runs now; None: the oracle below
            # one row (a single problem, a batch's last one): the kernel's single entry
            F = self.compiled.single(q[0]) if B == 1 else self.compiled.batch(q)
        if F is None:
            F = _generic_frames(self.model, self.problem.tips, self.width, q)
        return F.reshape(B, -1).T

    def errors(self, F: Array, target: Array) -> Array:
        """Error twists ``(n_tips, 6, B)`` from the kernel output ``F (size, B)`` and target
        components ``(n_tips * 12, B)``."""
        return errors_stacked(F[self.pose_index], target.reshape(self.n_tips, 12, -1), self.tol.world)

    def residual(self, d: Array) -> tuple[Array, Array]:
        """Residual rows ``(n_rows, B)`` of the error twists and whether every tip is within tolerance."""
        r = d.reshape(-1, d.shape[-1])
        if not self.tol.world:
            r = r[self.row_index]
            r = r - np.clip(r, -self.box, self.box)
        sq = r * r
        ok = ((self.linear @ sq <= self.tol.position ** 2) & (self.angular @ sq <= self.tol.rotation ** 2)).all(axis=0)
        return r, ok

    def jacobian(self, F: Array, target: Array) -> Array:
        """Weighted Jacobian rows ``(n_lm_rows, n_free, B)`` in the axes of the residual."""
        if self.tol.world:
            J = F[self.jacobian_array]
        else:
            Jw = F[self.tip_jacobian_index]                                          # (n_tips, 6, n_free, B)
            Rt = target.reshape(self.n_tips, 12, -1)[:, :9].reshape(self.n_tips, 3, 3, -1)
            J = np.concatenate([np.einsum("tkib,tkcb->ticb", Rt, Jw[:, :3]),
                                np.einsum("tkib,tkcb->ticb", Rt, Jw[:, 3:])],
                               axis=1).reshape(6 * self.n_tips, Jw.shape[2], -1)[self.row_index[self.lm_rows]]
        return J if self.unit_weights else J * self.sqrt_weight

    @staticmethod
    def record_errors(out: Outcome, problems, d: Array) -> None:
        """Worst raw position and rotation error over the tips of ``d (n_tips, 6, k)``."""
        out.position_error[problems] = np.sqrt((d[:, :3] ** 2).sum(axis=1)).max(axis=0)
        out.rotation_error[problems] = np.sqrt((d[:, 3:] ** 2).sum(axis=1)).max(axis=0)

    def restart(self, q: Array, out: Outcome, problems: Array) -> Array:
        """Rows ``q (n_q, k)`` of ``problems (k,)`` with their free coordinates moved to the next
        configurations of their problems' stretches of the R2 sequence within the bounds (rows of
        one problem take consecutive ones, in row order)."""
        fq = self.problem.free_q
        order = np.argsort(problems, kind="stable")
        grouped = problems[order]
        first = np.concatenate([[True], grouped[1:] != grouped[:-1]])
        rank = np.arange(grouped.size) - np.maximum.accumulate(np.where(first, np.arange(grouped.size), 0))
        drawn = np.empty(grouped.size, np.int64)
        drawn[order] = out.restarts[grouped] + rank
        np.add.at(out.restarts, problems, 1)
        index = self.restart_base(out.budget, 0) + problems * self.restart_stride + drawn
        fraction = (0.5 + np.outer(self.r2_steps, index.astype(float))) % 1.0
        draw = self.restart_lo[:, None] + fraction * (self.restart_hi - self.restart_lo)[:, None]
        q[fq] = np.where(self.restarted[:, None], draw, q[fq])
        return q

    def load(self, out: Outcome, target: Array, seeds: Array, start: int, stop: int) -> _Rows:
        """Rows of problems ``start:stop``: each seed, then ``restarts`` restarted rows."""
        R = 1 + self.tol.restarts
        q = np.repeat(seeds[start:stop].T, R, axis=1)
        problem = np.repeat(np.arange(start, stop), R)
        if R > 1:
            extra = np.arange(q.shape[1]) % R > 0
            q[:, extra] = self.restart(q[:, extra], out, problem[extra])
        inf, zero = np.full(q.shape[1], np.inf), np.zeros(q.shape[1], np.int64)
        return _Rows(q=q, target=np.repeat(target[start:stop].T, R, axis=1), problem=problem, iteration=zero,
                     best_cost=inf, best_q=q.copy(), stall=zero.copy(), reference=inf.copy())

    def stacked(self, out: Outcome, target: Array, seeds: Array) -> None:
        """Iterate the problems together in numpy, at most :data:`BATCH_ROWS` rows at a time:
        finished problems make room for waiting ones. Row iterations count towards loading the
        compiled loop (which later calls then use)."""
        tol, problem, n, R = self.tol, self.problem, len(seeds), 1 + self.tol.restarts
        loaded = min(n, max(1, BATCH_ROWS // R))
        rows = self.load(out, target, seeds, 0, loaded)
        several = R > 1  # some problem has several rows
        while rows.problem.size:
            if self.loop is not None and R == 1:
                self.loop.function(rows.problem.size)   # (counts towards loading the generated step)
            F = self.frames(rows.q.T)
            d = self.errors(F, rows.target)
            r, ok = self.residual(d)
            rejected = rejected_rows(out.budget.accept, rows.q, ok)  # avoid_collisions: in collision, restart elsewhere
            ok &= ~rejected
            rw = r if self.unit_weights else r[self.lm_rows] * self.sqrt_weight[:, 0]
            cost = 0.5 * (rw * rw).sum(axis=0)
            improved = (cost < rows.best_cost) & ~rejected
            rows.best_cost = np.where(improved, cost, rows.best_cost)
            rows.best_q[:, improved] = rows.q[:, improved]
            progress = cost < rows.reference * (1.0 - STALL_PROGRESS)
            rows.reference = np.where(progress, cost, rows.reference)
            rows.stall = np.where(progress | rejected, np.where(rejected, STALL_ITERATIONS, 0), rows.stall + 1)
            finished = []
            if ok.any():  # converged: per problem, the converged row closest to its seed
                ok_rows = np.flatnonzero(ok)
                if several:
                    diff = rows.q[problem.free_q][:, ok_rows] - seeds[rows.problem[ok_rows]][:, problem.free_q].T
                    diff[self.wrap] = wrap_angle(diff[self.wrap])
                    distance = np.zeros(ok.shape)
                    distance[ok_rows] = (diff * diff).sum(axis=0)
                    ok_rows = _pick(rows.problem, distance, ok_rows)
                problems = rows.problem[ok_rows]
                out.q[problems], out.status[problems] = rows.q[:, ok_rows].T, CONVERGED
                out.iterations[problems] = rows.iteration[ok_rows]
                self.record_errors(out, problems, d[..., ok_rows])
                out.success[problems], out.unfinished[problems] = True, False
                finished.append(problems)
            timed_out = out.budget.timed_out()
            spent = rows.iteration >= tol.max_iterations
            if timed_out or spent.any():  # not converged: per problem, its best iterate
                candidates = (timed_out | spent) & ~np.isin(rows.problem, finished[0] if finished else [])
                best = _pick(rows.problem, rows.best_cost, np.flatnonzero(candidates))
                problems = rows.problem[best]
                out.q[problems], out.iterations[problems] = rows.best_q[:, best].T, rows.iteration[best]
                out.status[problems] = TIMEOUT if timed_out else MAX_ITERATIONS
                finished.append(problems)
            if timed_out:
                out.status[loaded:], out.iterations[loaded:] = TIMEOUT, 0
                return
            self.step(out, rows, F, rows.target, r, cost)
            rows.iteration += 1
            if finished:
                rows = rows.select(~np.isin(rows.problem, np.concatenate(finished)))
            if loaded < n and rows.problem.size <= BATCH_ROWS - R:
                more = min(n, loaded + (BATCH_ROWS - rows.problem.size) // R)
                rows, loaded = rows.extend(self.load(out, target, seeds, loaded, more)), more

    def step(self, out: Outcome | None, rows: _Rows, F: Array, target: Array, r: Array, cost: Array) -> None:
        """One damped step of every row (in place), coordinates held at a bound the gradient
        pushes outwards (their column zeroed), clamped into the bounds; stalled rows restart
        (``out``: the call's outcome, which counts each problem's restarts; None: no row stalled)."""
        problem = self.problem
        if self.lm_rows:  # else every weight is zero
            J = self.jacobian(F, target)
            rw = r if self.unit_weights else r[self.lm_rows] * self.sqrt_weight[:, 0]
            x = rows.q[self.bounded_q]
            at_lo, at_hi = x <= self.bounded_lo, x >= self.bounded_hi
            if at_lo.any() or at_hi.any():
                g = np.einsum("acb,ab->cb", J[:, self.bounded_v], rw)
                J[:, self.bounded_v] *= ~((at_lo & (g > 0)) | (at_hi & (g < 0)))
            dx = lm_step_arrays(J, rw, DAMPING_COST * cost + DAMPING_FLOOR, self.normal_solve)
            fq = problem.free_q
            if problem.scalar:
                x = rows.q[fq] + dx
            else:
                dv = np.zeros((self.model.n_v, dx.shape[1]))
                dv[problem.free_v] = dx
                x = integrate(self.model, rows.q.T, dv.T).T[fq]
            x = np.minimum(np.maximum(x, self.lo[:, None]), self.hi[:, None])
            x[self.wrap] = wrap_angle(x[self.wrap])
            rows.q[fq] = x
        stuck = np.flatnonzero(rows.stall >= STALL_ITERATIONS)
        if stuck.size:
            rows.q[:, stuck] = self.restart(rows.q[:, stuck], out, rows.problem[stuck])
            rows.stall[stuck], rows.reference[stuck] = 0, np.inf
