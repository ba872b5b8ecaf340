"""A robot's generated IK step, compiled by numba, run by the one compiled outer loop.

One generated numba module per :class:`~robokin_ros.ik.solver.Solver`: the tips' poses +
Jacobians kernel (:func:`robokin_ros.kernels.fk_codegen.generate_frames_source`, as ``flat``),
the solver's straight-line ``iteration`` (:func:`~robokin_ros.ik.step_source.step_source`:
constants folded in) and ``restart``, and ``run``/``run_many``: calls of the one outer loop,
:func:`robokin_ros.ik.generic_loop.loop` and :func:`~robokin_ros.ik.generic_loop.loop_rows`
(imported, not copied; the step passed in and inlined). ``run`` does up to ``chunk`` iterations
and returns to Python when the problem converges, spends its iterations, needs its first
restart index (drawn from the call's ``rng`` only then), or after ``chunk`` iterations, so that
Python checks the time budget and the call's cancel token (numba has no clock):
:meth:`Budget.timed_out <robokin_ros.ik.budget.Budget.timed_out>`. ``run_many`` runs the rows
of a batch, one after the other, until a quota of iterations is spent (the next budget check; a
row still iterating then is paused and goes on at the next call);
:meth:`CompiledLoop.run_problems` hands its chunks to every core
(:mod:`robokin_ros.kernels.parallel`: each problem alone with its own restarts, so the answers are
bit-identical for every thread count).

The generated step is kept beside the chain step of :mod:`~robokin_ros.ik.generic_loop` because
it is measured faster (straight-line code with the robot's constants folded in; see
``docs/benchmarks.md``, "IK: one outer loop") and because it covers what the chain step does not
(several tips, per-axis tolerances, floating and planar joints). The same problem gives the
same iterates as the numpy path (:meth:`Solver.stacked <robokin_ros.ik.solver.Solver.stacked>`)
to rounding (~1e-12).

Loading follows :class:`~robokin_ros.kernels.lazy_accel.LazyAccelerated`: requests run the
chain step or the numpy path until the generated one is loaded; once
:data:`robokin_ros.kernels.accel.MIN_BATCH` iterations have gone through a solver, it compiles
(in a separate process) or loads from the disk cache in a background thread;
:func:`robokin_ros.ik.prepare_ik` loads it at once. The self-check of a loaded loop
(:meth:`CompiledLoop.check_problem`) compares one iteration with the numpy path's, starting away
from its target also on a one-joint chain.

Layout of ``run``'s state ``x (2 n_q + 12 n_tips + 7,)``: :mod:`~robokin_ros.ik.loop_layout`.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import math
import threading
import weakref
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..kernels import accel, parallel
from ..kernels.lazy_accel import LazyAccelerated
from . import generic_loop, generic_loop_loading, lm, loop_layout
from .loop_layout import (
    BEST_COST,
    CONVERGED,
    ITERATIONS,
    NEEDS_RESTART_INDEX,
    PAUSED,
    POSITION_ERROR,
    RESTART,
    ROTATION_ERROR,
    SPENT,
)
from .result import CONVERGED as CONVERGED_STATUS
from .result import MAX_ITERATIONS, TIMEOUT
from .step_source import step_source

#: Iterations ``run`` does between returns to Python (its time-budget checks): ~15-40 µs on the
#: benchmark arms, against budgets of milliseconds.
CHUNK = 32

#: Iterations ``run_many`` does (whole problems) between the batch's time-budget checks: ~0.5-1 ms.
BATCH_QUOTA = 1024
#: Problems per chunk of a batch handed to a thread (small: hard problems must not leave one
#: thread the straggler), and the smallest batch split over threads.
BATCH_CHUNK, MIN_PARALLEL_PROBLEMS = 64, 256
#: Most problems set up at once on a thread (its scratch: a batch on one thread runs in pieces).
SCRATCH_ROWS = 1024

_JIT = "@numba.njit(cache=True, nogil=True, error_model='numpy')"



#: The row functions of :mod:`~robokin_ros.ik.loop_layout` every generated loop defines, each
#: calling the generic loop's compiled one (imported; the module's own name keeps its compiled
#: code in the module's cache entry, loaded with it).
ROW_FUNCTIONS = ("start_rows", "finish_rows")


@functools.cache
def shared_imports() -> str:
    """The generated modules' import of the compiled functions they share with the generic loop
    (real imports, not their text): the outer loop :func:`robokin_ros.ik.generic_loop.loop` and
    :func:`~robokin_ros.ik.generic_loop.loop_rows`, the SO(3) log
    :func:`~robokin_ros.ik.generic_loop.log_so3` (inlined into ``iteration``), and
    :data:`ROW_FUNCTIONS` defined as calls of the generic loop's. A
    digest of the files they are compiled from comes first: numba's cache of a generated module
    is keyed on its own text, so a change there makes new modules instead of loading code
    compiled from the old functions. Read on first use (the compiling process of the generic
    loop imports this module while that one is still being made)."""
    digest = hashlib.sha256()
    for module in (generic_loop, loop_layout, lm):
        with open(module.__file__, "rb") as file:
            digest.update(file.read())
    shared = ", ".join(["log_so3", "loop", "loop_rows", *(f"{name} as shared_{name}" for name in ROW_FUNCTIONS)])
    lines = [f"# shared functions: {generic_loop.__name__} and {loop_layout.__name__}, sha256 {digest.hexdigest()}",
             f"from {generic_loop.__name__} import {shared}"]
    for name in ROW_FUNCTIONS:
        arguments = ", ".join(inspect.signature(getattr(loop_layout, name)).parameters)
        lines += ["", "", _JIT, f"def {name}({arguments}):", f"    return shared_{name}({arguments})"]
    return "\n".join(lines)


#: The verdicts of :func:`~robokin_ros.ik.loop_layout.finish_rows`'s codes.
VERDICTS = np.array([CONVERGED_STATUS, MAX_ITERATIONS, TIMEOUT], "<U14")


def loop_source(s) -> str:
    """Source of the numba module of solver ``s`` (see the module docstring): ``flat(q)``,
    ``iteration(q, t, mu, qn, err, context)``, ``restart(q, k, context)``, ``run(x, chunk,
    max_iterations)``, ``run_many(X, status, max_iterations, quota)`` and what it shares with the
    generic loop (:func:`shared_imports`)."""
    generated = s.compiled.generated
    n_q, size = s.model.n_q, len(generated.values)
    flat = [_JIT, "def flat(q):", *generated.body, f"    F = np.empty({size})"]
    flat += [f"    F[{k}] = {v!r}" if isinstance(v, float) else f"    F[{k}] = {v}"
             for k, v in enumerate(generated.values)]
    flat.append("    return F")
    restarts = [f"    q[{i}] = {lo!r} + (0.5 + k * {step!r}) % 1.0 * {width!r}"
                for i, lo, width, step in s.restart_floats]
    run = [_JIT,
           "def restart(q, k, context):",
           *(restarts or ["    pass"]),
           "",
           "",
           _JIT,
           "def run(x, chunk, max_iterations):",
           f"    return loop(x, np.empty({n_q}), chunk, max_iterations, iteration=iteration, restart=restart, "
           "context=0.0)",
           "",
           "",
           _JIT,
           "def run_many(X, status, max_iterations, quota):",
           f"    return loop_rows(X, status, max_iterations, quota, np.empty({n_q}), iteration=iteration, "
           "restart=restart, context=0.0)"]
    iteration = step_source(s).replace("def iteration(", f"{_JIT}\ndef iteration(", 1)
    return "\n".join(["# generated by robokin_ros.ik.compiled_loop; safe to delete (rebuilt on demand)",
                      "from math import cos, inf, nan, pi, sin, sqrt",
                      "import numba",
                      "import numpy as np",
                      shared_imports(), "", "", "\n".join(flat), "", "", iteration, "", "\n".join(run)]) + "\n"


class CompiledLoop(LazyAccelerated):
    """The compiled ``run`` of one solver, loaded on demand (see the module docstring)."""

    counts_calls = True
    kind = "compiled IK loop"

    def __init__(self, solver):
        super().__init__()
        self._solver = weakref.ref(solver)   # the solver holds this object
        n_q, n_t = solver.model.n_q, 12 * solver.n_tips
        self._state = 2 * n_q + n_t
        self._n_q = n_q
        self._local = threading.local()   # per thread: its scratch (_scratch)

    def function(self, iterations: int = 0):
        """The loaded ``run``, or None; ``iterations`` spent on the other paths count towards
        starting the background load."""
        return self._kernel(iterations)

    def _load(self):
        solver, width = self._solver(), self._state + 7
        calls = [("run", (np.zeros(width), 0, 1.0)),
                 ("run_many", (np.zeros((1, width)), np.zeros(1, np.int64), 1.0, 1.0)),
                 *generic_loop_loading.row_calls(self._n_q, 12 * solver.n_tips)]
        return accel.load_function(loop_source(solver), "run", calls, lambda run: self._agrees(run, solver),
                                   solver.model.name)

    def in_cache(self) -> bool:
        """Whether this machine's kernel cache holds the loop (loading it compiles nothing)."""
        return accel.in_cache(loop_source(self._solver()))

    def _installed(self, run) -> None:
        #: The module's batch functions (loaded with ``run``, from the same module).
        module = run.py_func.__globals__
        self.batch = BatchKernels(module["run_many"], module["start_rows"], module["finish_rows"])

    def check_problem(self, solver) -> tuple[list, list]:
        """The start configuration and target components of the self-check (:meth:`_agrees`):
        :func:`~robokin_ros.kernels.accel.check_configuration` clamped into the bounds, and the
        tips' pose at another configuration (the same values reversed and shifted by 0.5 rad or m
        each: a different configuration also for one joint, where reversing alone changes
        nothing and the check would start at its target)."""
        start = accel.check_configuration(self._n_q)
        q = np.clip(start, solver.q_lower, solver.q_upper).tolist()
        pose = solver.frames(np.array([[x + 0.5 for x in start[::-1]]]))[:, 0].tolist()
        return q, [pose[i] for i in solver.pose_index.reshape(-1).tolist()]

    def _agrees(self, run, solver) -> bool:
        """One compiled iteration equals the numpy path's on :meth:`check_problem` to rounding:
        the same cost and next configuration, or (a start already within tolerance, e.g. a tip
        the joint does not move) the same convergence and errors."""
        q, target = self.check_problem(solver)
        cost, q_next = solver.first_iteration(q, target)
        x = np.array(q + target + q + [0.0, 0.0, math.inf, math.inf, -1.0, 0.0, 0.0])
        status = run(x, 1, 1e9)
        if cost is None:
            return status == CONVERGED and np.allclose(x[self._state + POSITION_ERROR:], q_next, rtol=1e-9,
                                                       atol=1e-12)
        return status == PAUSED and math.isclose(x[self._state + BEST_COST], cost, rel_tol=1e-9) and np.allclose(
            x[:self._n_q], q_next, rtol=0.0, atol=1e-9)

    def run_problem(self, run, q: list, target: list, budget, problem: int = 0) -> tuple:
        """Solve problem number ``problem`` of the call from ``q`` (a list, the seed) to the
        target components ``target`` (a list) on ``run`` (this loop's or the generic one's),
        stalled attempts restarting in turn along the problem's stretch of the restart sequence.

        Returns:
            ``(q, status, iterations, position error, rotation error, success)``.
        """
        solver, n, S = self._solver(), self._n_q, self._state
        x = np.array(q + target + q + [0.0, 0.0, math.inf, math.inf, -1.0, 0.0, 0.0])
        max_iterations = float(solver.tol.max_iterations)
        while True:
            status = run(x, CHUNK, max_iterations)
            if status == CONVERGED or status == SPENT:
                break
            if status == NEEDS_RESTART_INDEX:
                x[S + RESTART] = float(solver.restart_base(budget, problem))
            if budget.timed_out():
                x[:n] = x[S - n:S]   # the best iterate
                break
        q, it = x[:n].tolist(), int(x[S + ITERATIONS])
        if status == CONVERGED:
            return q, CONVERGED_STATUS, it, float(x[S + POSITION_ERROR]), float(x[S + ROTATION_ERROR]), True
        return (q, MAX_ITERATIONS if status == SPENT else TIMEOUT, it) + solver.report(q, target)

    def run_problems(self, kernels: BatchKernels, target, seeds, out) -> None:
        """:meth:`Solver.solve_problems <robokin_ros.ik.solver.Solver.solve_problems>` of a batch on ``kernels``:
        each problem alone from its seed, with its own stretch of the restart sequence, in chunks
        of :data:`BATCH_CHUNK` problems on ``out.budget.threads`` threads
        (:func:`robokin_ros.kernels.parallel.run_chunks`), each chunk from its set-up to its
        results compiled on its thread (the GIL held only between calls); the time budget is
        checked every :data:`BATCH_QUOTA` iterations of a thread. Problems not started when it
        runs out end ``"timeout"`` at their seeds, with 0 iterations.

        Args:
            target: ``(n, n_tips * 12)`` target components. seeds: ``(n, n_q)``.
            out: the call's :class:`~robokin_ros.ik.solver.Outcome` (filled).
        """
        solver, n = self._solver(), len(seeds)
        # (the compiled functions' argument types: C-contiguous, writeable arrays)
        target, seeds = np.require(target, np.float64, "CW"), np.require(seeds, np.float64, "CW")
        first, stride = int(solver.restart_base(out.budget, 0)), int(solver.restart_stride)
        max_iterations, budget = float(solver.tol.max_iterations), out.budget

        def piece(rows: slice) -> None:   # set up, solved and read back on this thread's scratch
            X, status, verdicts = self._scratch(rows.stop - rows.start)
            kernels.start_rows(X, seeds[rows], target[rows], first, stride, rows.start)
            at = 0
            while at < len(X) and not budget.timed_out():
                at += kernels.run_many(X[at:], status[at:], max_iterations, float(BATCH_QUOTA))
            results = (out.q[rows], out.iterations[rows], out.position_error[rows], out.rotation_error[rows],
                       out.success[rows], out.unfinished[rows])
            kernels.finish_rows(X, status, verdicts, results)
            out.status[rows] = VERDICTS[verdicts]

        def work(start: int, stop: int) -> None:   # a chunk (one thread's whole batch: in pieces)
            for at in range(start, stop, SCRATCH_ROWS):
                piece(slice(at, min(at + SCRATCH_ROWS, stop)))

        parallel.run_chunks(n, work, budget.threads, chunk_rows=BATCH_CHUNK, min_rows=MIN_PARALLEL_PROBLEMS)


    def _scratch(self, rows: int) -> tuple:
        """This thread's states ``X (rows, S + 7)``, loop statuses ``(rows,)`` (all ``PAUSED``)
        and verdict codes ``(rows,)`` for ``rows <=`` :data:`SCRATCH_ROWS` problems of
        :meth:`run_problems` (views of scratch it reuses: a call allocates no states for its whole
        batch, whose first touch of fresh pages cost a tenth of a 2-thread batch)."""
        kept = getattr(self._local, "scratch", None)
        if kept is None or len(kept[0]) < rows:
            kept = self._local.scratch = (np.empty((rows, self._state + 7)), np.empty(rows, np.int64),
                                          np.empty(rows, np.int8))
        X, status, verdicts = (a[:rows] for a in kept)
        status[:] = PAUSED
        return X, status, verdicts


class BatchKernels(NamedTuple):
    """The compiled functions :meth:`CompiledLoop.run_problems` runs, from one loop's module:
    ``run_many(X, status, max_iterations, quota)`` and :mod:`~robokin_ros.ik.loop_layout`'s
    ``start_rows`` and ``finish_rows``."""

    run_many: Callable
    start_rows: Callable
    finish_rows: Callable
