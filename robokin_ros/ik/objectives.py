"""Secondary objectives of IK, followed in the null space of the task after the primary solve.

A solve with an objective first runs as without one (the plain request's answer, the same bits:
restarts are seeded from the request); a solution (within tolerance) is then moved step by step
along ``-N ∇h`` (``N = I - J⁺J``, ``J`` the rows of the task that count, in the targets' axes, over
the free coordinates), each step corrected back onto the task by a short solve from the moved
configuration and kept only if it is still a solution and lowers ``h`` (:func:`refine`); the
answer is then compared with the plain one and the better kept
(:func:`~robokin_ros.ik.branches.solve_with_objective`). So an objective never costs a solvable
target and never does worse than the plain request: at worst the plain answer comes back.

Objectives (``h`` of the free coordinates ``x``):

- ``closest``: ``½‖x - x_seed‖²`` (continuous joints wrapped): least motion from the seed, the one
  to use along a path;
- ``center``: ``½ Σ ((x - x_mid) / (x_hi - x_lo))²`` over bounded coordinates: away from the limits;
- ``manipulability``: ``-w``, Yoshikawa's measure ``w = √det(J Jᵀ)`` (the product of the
  singular values) of the first tip's 6-row Jacobian (LOCAL_WORLD_ALIGNED, free columns): away
  from singularities; a step that lowers the smallest singular value is refused too, so neither
  measure ends below the plain answer's.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..kinematics import LOCAL_WORLD_ALIGNED, forward_kinematics, jacobian
from ..model import RobotModel
from ..model.configuration import wrap_angle
from .options import IKOptions, effective_bounds
from .problem import IKProblem

Array = NDArray[np.float64]
#: Null-space steps tried per solution (each one a short corrective solve).
MAX_STEPS = 24
#: [rad or m] longest step in the free coordinates.
MAX_STEP = 0.2
#: [rad or m] a null-space direction shorter than this ends the refinement (nothing left to gain).
MIN_STEP = 1e-4
#: Step for the finite-difference gradient of ``manipulability``.
GRADIENT_STEP = 1e-6


class Task:
    """What the null space of one call needs: free coordinates, the task's rows and the objective.

    Args:
        model: the robot. tips: tip names. targets: ``(n_tips, 4, 4)`` ``T_base_tip``.
        seed: ``(n_q,)``. options: the call's (``base``, ``active_joints``, bounds,
        ``axis_tolerances`` (inf: a free axis)). objective: one of
        :data:`~robokin_ros.ik.options.OBJECTIVES`; None: ``options.objective``.
    """

    def __init__(self, model: RobotModel, tips: tuple[str, ...], targets: Array, seed: Array, options: IKOptions,
                 objective: str | None = None):
        self.model, self.tips = model, tips
        self.objective = options.objective if objective is None else objective
        self.base = model.link_index(options.base) if options.base is not None else 0
        active = (tuple(int(j) for j in model.active_joints) if options.active_joints is None
                  else tuple(sorted({model.joint_index(n) for n in options.active_joints})))
        problem = IKProblem(model, tuple(model.link_index(t) for t in tips), self.base, active)
        self.free_q, self.free_v = problem.free_q, problem.free_v
        self.periodic = problem.periodic
        self.usable = problem.scalar and len(self.free_q) > 0
        lower, upper = effective_bounds(model, options.lower, options.upper)
        self.lo, self.hi = lower[self.free_q], upper[self.free_q]
        # Coordinates that turn: continuous joints, and revolute joints with a range over 2π
        # (x and x ± 2π within the bounds are the same pose).
        self.turns = problem.periodic | (problem.revolute & (self.hi - self.lo > 2.0 * math.pi))
        self.R_base_target = targets[:, :3, :3]
        axis = options.axis_tolerances
        box = np.zeros((len(tips), 6)) if axis is None else np.broadcast_to(np.array(axis, float), (len(tips), 6))
        self.rows = np.isfinite(box)
        self.seed = seed[self.free_q]

    def nearest_seed(self, q: Array) -> Array:
        """``q (n_q,)`` with every coordinate that turns (:attr:`turns`) moved by whole turns to
        the value nearest the seed within the bounds (a new array; the same pose)."""
        q = q.copy()
        c = self.free_q[self.turns]
        x, seed, lo, hi = q[c], self.seed[self.turns], self.lo[self.turns], self.hi[self.turns]
        two_pi = 2.0 * math.pi
        with np.errstate(invalid="ignore"):
            turns = np.round((seed - x) / two_pi)
            turns = np.minimum(np.maximum(turns, np.ceil((lo - x) / two_pi)), np.floor((hi - x) / two_pi))
        q[c] = np.clip(x + two_pi * np.nan_to_num(turns), lo, hi)
        return q

    def measures(self, q: Array) -> tuple[float, ...]:
        """``(h(q), ...)``: the objective, then measures a step may not worsen (manipulability: the
        negated smallest singular value)."""
        if self.objective != "manipulability":
            return (self.value(q),)
        s = self._singular_values(q)
        return -float(np.prod(s)), -float(s[-1])

    def _singular_values(self, q: Array) -> Array:
        J = jacobian(self.model, q, self.model.link_names[self.model.link_index(self.tips[0])],
                     LOCAL_WORLD_ALIGNED)[:, self.free_v]
        return np.linalg.svd(J, compute_uv=False)

    def value(self, q: Array) -> float:
        """``h(q)`` for ``q (n_q,)``."""
        x = q[self.free_q]
        if self.objective == "closest":
            d = x - self.seed
            d[self.periodic] = wrap_angle(d[self.periodic])
            return 0.5 * float(d @ d)
        if self.objective == "center":
            finite = np.isfinite(self.lo) & np.isfinite(self.hi) & (self.hi > self.lo)
            r = (x[finite] - 0.5 * (self.lo[finite] + self.hi[finite])) / (self.hi[finite] - self.lo[finite])
            return 0.5 * float(r @ r)
        return -float(np.prod(self._singular_values(q)))

    def gradient(self, q: Array) -> Array:
        """``∇h`` over the free coordinates ``(n_free,)``."""
        x = q[self.free_q]
        if self.objective == "closest":
            d = x - self.seed
            d[self.periodic] = wrap_angle(d[self.periodic])
            return d
        if self.objective == "center":
            finite = np.isfinite(self.lo) & np.isfinite(self.hi) & (self.hi > self.lo)
            g = np.zeros_like(x)
            width = self.hi[finite] - self.lo[finite]
            g[finite] = (x[finite] - 0.5 * (self.lo[finite] + self.hi[finite])) / width ** 2
            return g
        h0, g = self.value(q), np.zeros(len(self.free_q))
        for c, i in enumerate(self.free_q.tolist()):
            moved = q.copy()
            moved[i] += GRADIENT_STEP
            g[c] = (self.value(moved) - h0) / GRADIENT_STEP
        return g

    def task_jacobian(self, q: Array) -> Array:
        """The task's rows that count ``(n_rows, n_free)``, each tip's in its target's axes."""
        T = forward_kinematics(self.model, q)
        R_world_base = T[self.base, :3, :3]
        blocks = []
        for k, tip in enumerate(self.tips):
            J = jacobian(self.model, q, tip, LOCAL_WORLD_ALIGNED, poses=T)[:, self.free_v]
            Rt = (R_world_base @ self.R_base_target[k]).T
            blocks.append(np.concatenate([Rt @ J[:3], Rt @ J[3:]])[self.rows[k]])
        return np.concatenate(blocks)

    def direction(self, q: Array) -> Array:
        """``-N ∇h`` ``(n_free,)``, no longer than :data:`MAX_STEP`."""
        J = self.task_jacobian(q)
        g = self.gradient(q)
        step = -(g - np.linalg.pinv(J, rcond=1e-8) @ (J @ g)) if J.size else -g
        if self.objective == "manipulability":  # (its gradient has no natural scale)
            return MAX_STEP * step / max(float(np.linalg.norm(step)), 1e-300)
        length = float(np.linalg.norm(step))
        return step if length <= MAX_STEP else step * (MAX_STEP / length)


def refine(task: Task, q: Array, correct, stop) -> Array:
    """``q (n_q,)`` (a solution) moved along the objective's null-space direction while it stays
    a solution, ``h`` drops and no other of :meth:`Task.measures` rises; ``correct(q_start) ->
    (q, success)`` is the corrective solve, ``stop() -> bool`` says when the call's time is spent
    (or it is cancelled)."""
    if not task.usable:
        return q
    h, alpha = task.measures(q), 1.0
    for _ in range(MAX_STEPS):
        if stop():
            break
        direction = task.direction(q)
        if float(np.linalg.norm(direction)) < MIN_STEP:
            break
        step = alpha * direction
        moved = q.copy()
        moved[task.free_q] = np.clip(q[task.free_q] + step, task.lo, task.hi)
        candidate, success = correct(moved)
        value = task.measures(candidate) if success else (math.inf,)
        if value[0] < h[0] - 1e-12 and all(v <= w for v, w in zip(value[1:], h[1:])):
            q, h, alpha = candidate, value, min(1.0, 2.0 * alpha)
        else:
            alpha *= 0.5
            if alpha < 1.0 / 32:
                break
    return q
