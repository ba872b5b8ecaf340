"""Inverse kinematics: Levenberg–Marquardt on the SE(3) pose error, within the joint limits.

A few problems (the ``/compute_ik`` case) iterate one at a time in plain Python floats: each
solver generates one straight-line function doing a whole iteration on the robot's generated
kernel output (:mod:`robokin_ros.codegen`: ``flat`` on a list) — error twists, tolerance test,
weighted Jacobian rows, bound handling, the normal equations' Cholesky solve and the clamped
step — with the tips, tolerances, weights, free joints and bounds folded in as constants,
where a numpy call would cost more than the arithmetic it does. Many problems iterate together,
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
import time
import weakref
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from . import kinematics
from .codegen import compiled_frames
from .errors import JointLimitError, NonFiniteError, RobokinError, ShapeError
from .jacobians import LOCAL_WORLD_ALIGNED, jacobian
from .kinematics import forward_kinematics
from .model import SCALAR_TYPES, JointType, RobotModel
from .spatial import log_so3, quat_xyzw_to_matrix

Array = NDArray[np.float64]

#: Values of :attr:`IKResult.status`.
CONVERGED, MAX_ITERATIONS, TIMEOUT, NO_FREE_JOINTS = "converged", "max_iterations", "timeout", "no_free_joints"
#: Status of a problem whose only configurations within tolerance were in self-collision
#: (``avoid_collisions``).
IN_COLLISION = "in_collision"

#: Levenberg–Marquardt damping ``λ = DAMPING_COST · ½‖r‖² + DAMPING_FLOOR`` (Sugihara 2011).
DAMPING_COST, DAMPING_FLOOR = 0.1, 1e-6
#: A row whose cost has not dropped by ``STALL_PROGRESS`` (relative) for ``STALL_ITERATIONS``
#: iterations restarts elsewhere (measured on the benchmark arms: 3 needs fewer iterations in
#: all than 5 or 7; a stalled row rarely recovers).
STALL_ITERATIONS, STALL_PROGRESS = 3, 0.1
#: Factor on the position rows [m] against the rotation rows [rad] in the least squares (a 1 cm
#: error weighs as 0.03 rad). Tolerances are unaffected. Measured on the benchmark arms: 3 needs
#: ~10 % fewer iterations and restarts than 1; 0.5 needs more.
POSITION_WEIGHT = 3.0
#: Restarts of a call take consecutive points of an R2 low-discrepancy sequence (Roberts 2018)
#: from a random start among this many: consecutive restarts cover the bounds evenly and cost
#: no random draw (measured: ~3 % fewer iterations than uniform draws, and a draw cost as much
#: as an iteration).
RESTART_OFFSETS = 1 << 20
#: Rows iterated together in a vectorised pass (finished problems make room for waiting ones).
BATCH_ROWS = 2048
#: Calls with this many problems or fewer (and no parallel restarts) solve them one by one in
#: Python floats: a vectorised iteration costs a fixed ~1 ms of numpy calls, a float iteration
#: 15-30 µs (measured per problem on the Panda and the Talos arm: floats 2-4x faster for 16
#: problems, 1.2-2x for 64, about even at 128; vectorised 1.8x faster at 256).
SCALAR_ROWS = 64
#: A batch's last problems (this many) finish one by one in floats too.
TAIL_PROBLEMS = 4
#: Restarted rows added to a problem whose only row stalls once no problem waits for a row.
EXTRA_ROWS = 7


class IKOptionError(RobokinError, ValueError):
    """An IK option with an invalid value (negative tolerance, weight or timeout, ...)."""


class InvalidTargetError(RobokinError, ValueError):
    """A target pose whose rotation block is not a rotation (within :data:`ROTATION_TOLERANCE`) or
    whose last row is not ``[0, 0, 0, 1]``: no configuration can reach it, and no residual means
    anything.

    Attributes:
        indices: batch indices (and tip) of the offending targets.
    """

    def __init__(self, indices, reason: str):
        self.indices = list(indices)
        shown = self.indices[:8]
        more = f" and {len(self.indices) - 8} more" if len(self.indices) > 8 else ""
        super().__init__(f"targets at {shown}{more} are not rigid transforms: {reason}")


#: Largest ``|R^T R - I|`` entry and ``|det R - 1|`` accepted in a target's rotation block.
ROTATION_TOLERANCE = 1e-6


def _check_rigid(T: Array) -> None:
    """Raise :class:`InvalidTargetError` unless every ``T (..., 4, 4)`` is a rigid transform."""
    R = T[..., :3, :3]
    orthogonality = np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)).max(axis=(-2, -1))
    determinant = np.linalg.det(R)
    bottom = np.abs(T[..., 3, :] - (0.0, 0.0, 0.0, 1.0)).max(axis=-1)
    bad = (orthogonality > ROTATION_TOLERANCE) | (np.abs(determinant - 1.0) > ROTATION_TOLERANCE) | (bottom > 0)
    if bad.any():
        where = [tuple(int(k) for k in i) for i in np.argwhere(bad)] if bad.ndim else [()]
        first = np.argwhere(bad)[0] if bad.ndim else ()
        first = tuple(int(k) for k in first)
        raise InvalidTargetError(where, f"the first has max |R^T R - I| = {float(orthogonality[first]):.3g}, "
                                        f"det R = {float(determinant[first]):.3g}, last row "
                                        f"{np.asarray(T[first][3]).tolist()} (tolerance {ROTATION_TOLERANCE:g})")


@dataclasses.dataclass(frozen=True)
class IKResult:
    """Outcome of :func:`solve_ik`, one entry per problem (batch shape ``...``).

    Attributes:
        q: ``(..., n_q)`` best configuration per problem: the converged solution closest to its
            seed, else the iterate with the smallest residual (the seed if nothing was better).
            Joints that may not move keep their seed values; continuous joints are reported
            within π of their seed value.
        success: ``(...)`` bool: every tip within its tolerances and ``q`` within the bounds.
        position_error: ``(...)`` [m] worst tip position error ``‖p_tip - p_target‖`` (raw,
            before per-axis tolerances are applied).
        rotation_error: ``(...)`` [rad] worst tip rotation angle ``|log(R_targetᵀ R_tip)|`` (raw).
        iterations: ``(...)`` int, iterations spent on the problem.
        status: ``(...)`` str: ``"converged"``, ``"max_iterations"`` (iteration budget spent),
            ``"timeout"`` (time budget spent), ``"no_free_joints"`` (no allowed joint moves a tip)
            or ``"in_collision"`` (``avoid_collisions``: the reported ``q`` meets the tolerances
            but is in self-collision).
    """

    q: Array
    success: np.ndarray
    position_error: Array
    rotation_error: Array
    iterations: np.ndarray
    status: np.ndarray


# ---------------------------------------------------------------------------------------------
# Configuration-space operations


def integrate(model: RobotModel, q, v) -> Array:
    """Move configurations ``q (..., n_q)`` by ``v (..., n_v)`` (one unit of time).

    Scalar and planar coordinates add; a floating joint moves its position by ``R v_linear``
    (the velocity is in the child frame) and its quaternion by ``exp(ω_local)`` on the right,
    renormalised. First order in ``v`` for floating joints, which is what IK steps need.

    Raises:
        ShapeError: ``q`` or ``v`` of the wrong length.
    """
    q = model.check_q(q)
    v = np.asarray(v, dtype=float)
    if v.ndim == 0 or v.shape[-1] != model.n_v:
        raise ShapeError("v", f"(..., {model.n_v})", v.shape)
    shape = np.broadcast_shapes(q.shape[:-1], v.shape[:-1])
    out = np.array(np.broadcast_to(q, shape + (model.n_q,)))
    v = np.broadcast_to(v, shape + (model.n_v,))
    for j in model.active_joints:
        i, k, nq = model.joint_q_index[j], model.joint_v_index[j], model.joint_nq[j]
        if model.joint_types[j] != JointType.FLOATING:
            out[..., i:i + nq] += v[..., k:k + nq]
            continue
        quat = out[..., i + 3:i + 7]
        out[..., i:i + 3] += (quat_xyzw_to_matrix(quat) @ v[..., k:k + 3, None])[..., 0]
        out[..., i + 3:i + 7] = _quat_multiply(quat, _quat_exp(v[..., k + 3:k + 6]))
    return out


def _quat_exp(w: Array) -> Array:
    """Quaternion ``(..., 4)`` xyzw of the rotation vector ``w (..., 3)``."""
    theta = np.linalg.norm(w, axis=-1, keepdims=True)
    half = 0.5 * theta
    scale = np.where(theta < 1e-8, 0.5 - theta**2 / 48.0, np.sin(half) / np.where(theta < 1e-8, 1.0, theta))
    return np.concatenate([w * scale, np.cos(half)], axis=-1)


def _quat_multiply(a: Array, b: Array) -> Array:
    """Hamilton product ``a ⊗ b`` of xyzw quaternions, normalised."""
    av, aw, bv, bw = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    out = np.concatenate([aw * bv + bw * av + np.cross(av, bv), aw * bw - np.sum(av * bv, -1, keepdims=True)], -1)
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


def _wrap(angle):
    """Angles wrapped into (-π, π] (floats or arrays)."""
    return math.pi - (math.pi - angle) % (2.0 * math.pi)


# ---------------------------------------------------------------------------------------------
# One row in Python floats: a straight-line function generated per solver (tips, tolerances,
# weights, free joints and bounds folded in as constants) reads the kernel's flat output
# (``fk_all``: per tip a block of 10 rows of ``width`` values, rows 0-2 ``[R | p]``, rows 4-9
# the LOCAL_WORLD_ALIGNED Jacobian, see :func:`robokin_ros.codegen.generate_frames_source`).


def _log_near_pi(*E: float) -> list:
    """Rotation vector of a rotation within 1e-3 rad of π given row-major (its antisymmetric
    part vanishes: :func:`log_so3` reads the axis from the symmetric part)."""
    return log_so3(np.array(E).reshape(3, 3)).tolist()


def _twist_lines(k: int, w: int, world: bool) -> list:
    """Lines computing tip ``k``'s error twist ``d{k}_0 .. d{k}_5`` from its pose in ``F`` and
    its target ``b{k}_ij`` (rotation), ``u{k}_i`` (position): world axes ``[p - p_t; log(R R_tᵀ)]``,
    else target axes ``[R_tᵀ (p - p_t); log(R_tᵀ R)]``."""
    o = 10 * w * k
    a = [[f"a{k}_{i}{j}" for j in range(3)] for i in range(3)]
    b = [[f"b{k}_{i}{j}" for j in range(3)] for i in range(3)]
    lines = [f"    {', '.join(a[i] + [f'p{k}_{i}'])} = F[{o + i * w}:{o + i * w + 4}]" for i in range(3)]
    lines += [f"    e{k}_{i} = p{k}_{i} - u{k}_{i}" for i in range(3)]
    if world:   # E = R R_tᵀ: E_ij = Σ_l a_il b_jl
        E = [[" + ".join(f"{a[i][m]} * {b[j][m]}" for m in range(3)) for j in range(3)] for i in range(3)]
        lines += [f"    d{k}_{i} = e{k}_{i}" for i in range(3)]
    else:       # E = R_tᵀ R: E_ij = Σ_l b_li a_lj
        E = [[" + ".join(f"{b[m][i]} * {a[m][j]}" for m in range(3)) for j in range(3)] for i in range(3)]
        lines += [f"    d{k}_{i} = " + " + ".join(f"{b[m][i]} * e{k}_{m}" for m in range(3)) for i in range(3)]
    trace = " + ".join(f"{a[i][j]} * {b[i][j]}" for i in range(3) for j in range(3))
    vee = [(E[2][1], E[1][2]), (E[0][2], E[2][0]), (E[1][0], E[0][1])]
    lines += [f"    c = 0.5 * ({trace} - 1.0)",
              f"    if c > {math.cos(math.pi - 1e-3)!r}:",
              "        theta = acos(c) if c < 1.0 else 0.0",
              "        f = 0.5 + theta * theta / 12.0 if theta < 1e-4 else theta / (2.0 * sqrt(1.0 - c * c))",
              *(f"        d{k}_{3 + i} = f * ({x} - ({y}))" for i, (x, y) in enumerate(vee)),
              "    else:",
              f"        d{k}_3, d{k}_4, d{k}_5 = _log_near_pi({', '.join(e for row in E for e in row)})"]
    return lines


def _cholesky_lines(size: int, entry, rhs: list, floats: bool) -> list:
    """Straight-line solve of ``G x = b`` (``G`` symmetric positive definite, entries
    ``entry(i, k)`` for ``k <= i``, right-hand side ``rhs``): Cholesky factor, then the two
    triangular solves, leaving ``x0, x1, ...``. Pivots are floored at 1e-300 (they are
    positive in exact arithmetic; rounding could break that for huge weights)."""
    terms = lambda items: " + ".join(items)  # noqa: E731
    minus = lambda expr, items: f"({expr} - ({terms(items)}))" if items else f"({expr})"  # noqa: E731
    lines = []
    for i in range(size):
        for k in range(i):
            lines.append(f"    l{i}_{k} = {minus(entry(i, k), [f'l{i}_{c} * l{k}_{c}' for c in range(k)])} * v{k}")
        lines.append(f"    s{i} = {minus(entry(i, i), [f'l{i}_{c} * l{i}_{c}' for c in range(i)])}")
        floor = f"s{i} if s{i} > 1e-300 else 1e-300" if floats else f"maximum(s{i}, 1e-300)"
        lines.append(f"    v{i} = 1.0 / sqrt({floor})")
    for i in range(size):
        lines.append(f"    y{i} = {minus(rhs[i], [f'l{i}_{c} * y{c}' for c in range(i)])} * v{i}")
    for i in reversed(range(size)):
        lines.append(f"    x{i} = {minus(f'y{i}', [f'l{c}_{i} * x{c}' for c in range(i + 1, size)])} * v{i}")
    return lines


def _damped_step_lines(m: int, n: int) -> list:
    """Lines solving ``(Jᵀ J + λ I) dx = -Jᵀ r`` for ``J`` given as ``j{a}_{c}`` (``m`` rows,
    ``n`` columns), ``r`` as ``rw{a}`` and ``λ`` as ``damping``, leaving ``dx0, dx1, ...``:
    through the smaller normal system (``(J Jᵀ + λ I) y = r, dx = -Jᵀ y`` when ``m <= n``)."""
    if m <= n:
        entry = lambda i, k: " + ".join(f"j{i}_{c} * j{k}_{c}" for c in range(n)) + (" + damping" if i == k else "")  # noqa: E731
        lines = _cholesky_lines(m, entry, [f"rw{i}" for i in range(m)], True)
        return lines + [f"    dx{c} = -(" + " + ".join(f"j{a}_{c} * x{a}" for a in range(m)) + ")" for c in range(n)]
    entry = lambda i, k: " + ".join(f"j{a}_{i} * j{a}_{k}" for a in range(m)) + (" + damping" if i == k else "")  # noqa: E731
    lines = _cholesky_lines(n, entry, [" + ".join(f"j{a}_{i} * rw{a}" for a in range(m)) for i in range(n)], True)
    return lines + [f"    dx{c} = -x{c}" for c in range(n)]


def _solve_source(size: int) -> str:
    """Straight-line Cholesky solve ``G x = b`` for ``G (size, size, B)``, ``b (size, B)``,
    component-first: every operation covers the batch."""
    lines = ["def solve(G, b):"] + _cholesky_lines(size, lambda i, k: f"G[{i}, {k}]", [f"b[{i}]" for i in range(size)], False)
    return "\n".join(lines + [f"    return [{', '.join(f'x{i}' for i in range(size))}]"]) + "\n"


_SOLVES: dict = {}


def _array_solve(size: int):
    """The generated :func:`_solve_source` of ``size``, cached."""
    if size not in _SOLVES:
        namespace: dict = {"sqrt": np.sqrt, "maximum": np.maximum}
        exec(compile(_solve_source(size), f"<robokin ik solve {size}>", "exec"), namespace)  # noqa: S102
        _SOLVES[size] = namespace["solve"]
    return _SOLVES[size]


def _float_source(s: "_Solver") -> str:
    """Source of ``iteration(q, t, mu)`` and ``report(q, t)`` for one problem of solver ``s`` in
    Python floats: ``q`` the configuration (list), ``t`` the targets' components (per tip its
    rotation row-major, then its position).

    ``iteration(q, t, mu)`` returns ``(cost, q_next)``: the weighted cost ``½‖r‖²`` at ``q`` and
    the configuration after one step damped by ``λ = mu · cost + DAMPING_FLOOR`` (a coordinate at
    a bound the gradient pushes outwards is held, the others are clamped into the bounds,
    unbounded continuous ones wrapped); when every tip is within tolerance, ``(None, (position
    error, rotation error))`` instead. ``report`` returns the worst tip position and rotation
    errors (raw) and whether every tip is within tolerance.
    """
    tol, w, nt, n_q = s.tol, s.width, s.n_tips, s.model.n_q
    names = [[f"b{k}_{i}{j}" for i in range(3) for j in range(3)] + [f"u{k}_{i}" for i in range(3)] for k in range(nt)]
    head = ["    F = flat(q)", f"    {''.join(x + ', ' for row in names for x in row)}= t"]
    for k in range(nt):
        head += _twist_lines(k, w, tol.world)
    checks = []
    for j, (k, i, _, box) in enumerate(tol.rows):  # residual: the part outside the dead band
        d = f"d{k}_{i}"
        head.append(f"    r{j} = {d}" if box == 0.0 else
                    f"    r{j} = {d} - {box!r} if {d} > {box!r} else {d} + {box!r} if {d} < {-box!r} else 0.0")
    for k in range(nt):
        for kind, limit in ((range(3), tol.position ** 2), (range(3, 6), tol.rotation ** 2)):
            rows = [j for j, row in enumerate(tol.rows) if row[0] == k and row[1] in kind]
            if rows:
                checks.append("(" + " + ".join(f"r{j} * r{j}" for j in rows) + f") <= {limit!r}")
    ok = " and ".join(checks) or "True"
    norm = lambda k, axes: "sqrt(" + " + ".join(f"d{k}_{i} * d{k}_{i}" for i in axes) + ")"  # noqa: E731
    errors = (f"max({', '.join(norm(k, range(3)) for k in range(nt))}, 0.0), "
              f"max({', '.join(norm(k, range(3, 6)) for k in range(nt))}, 0.0)")
    report = ["def report(q, t):"] + head + [f"    return {errors}, {ok}"]
    lines = ["def iteration(q, t, mu):"] + head + [f"    if {ok}:", f"        return None, ({errors})"]
    m, n = len(s.lm_rows), len(s.free)
    lines += [f"    rw{a} = " + (f"r{j}" if s.weights[a] == 1.0 else f"{s.weights[a]!r} * r{j}") for a, j in enumerate(s.lm_rows)]
    lines.append("    cost = 0.5 * (" + (" + ".join(f"rw{a} * rw{a}" for a in range(m)) or "0.0") + ")")
    if m == 0 or n == 0:  # every weight zero, or nothing moves
        return "\n".join(report + lines + ["    return cost, q"]) + "\n"
    lines.append(f"    {''.join(f'q{i}, ' for i in range(n_q))}= q")
    columns = s.plan.free_v.tolist()
    contiguous = columns == list(range(columns[0], columns[0] + n))
    for a, j in enumerate(s.lm_rows):  # Jacobian rows in the residual's axes, weighted
        k, i, _, _ = tol.rows[j]
        o, weight = 10 * w * k, s.weights[a]
        row = [f"j{a}_{c}" for c in range(n)]
        if tol.world and contiguous:  # one slice of the kernel's row
            start = o + (4 + i) * w + columns[0]
            lines.append(f"    {''.join(x + ', ' for x in row)}= F[{start}:{start + n}]")
            if weight != 1.0:
                lines += [f"    {x} *= {weight!r}" for x in row]
            continue
        scale = "" if weight == 1.0 else f"{weight!r} * "
        for c, v in enumerate(columns):
            if tol.world:
                lines.append(f"    j{a}_{c} = {scale}F[{o + (4 + i) * w + v}]")
            else:  # column i % 3 of R_t against the three world rows of its kind
                top = o + (4 + 3 * (i // 3)) * w + v
                terms = " + ".join(f"b{k}_{l}{i % 3} * F[{top + l * w}]" for l in range(3))
                lines.append(f"    j{a}_{c} = {scale}({terms})")
    for c, (_, (i, lo, hi)) in enumerate(s.free):  # hold a coordinate at a bound the gradient pushes outwards
        sides = [(at, push) for at, push, bound in ((f"q{i} <= {lo!r}", "g > 0.0", lo), (f"q{i} >= {hi!r}", "g < 0.0", hi))
                 if math.isfinite(bound)]
        if not sides:
            continue
        lines += [f"    if {' or '.join(at for at, _ in sides)}:",
                  "        g = " + " + ".join(f"j{a}_{c} * rw{a}" for a in range(m)),
                  "        if " + " or ".join(f"({at} and {push})" for at, push in sides) + ":",
                  "            " + " = ".join(f"j{a}_{c}" for a in range(m)) + " = 0.0"]
    lines.append(f"    damping = mu * cost + {DAMPING_FLOOR!r}")
    lines += _damped_step_lines(m, n)
    out = [f"q{i}" for i in range(n_q)]
    wrap = set(s.wrap.tolist())
    for c, (_, (i, lo, hi)) in enumerate(s.free):
        x = f"z{c}"
        lines.append(f"    {x} = q{i} + dx{c}")
        if math.isfinite(lo):  # (written so that a NaN step lands on the bound)
            lines.append(f"    if not {x} >= {lo!r}:\n        {x} = {lo!r}")
        if math.isfinite(hi):
            lines.append(f"    if {x} > {hi!r}:\n        {x} = {hi!r}")
        if c in wrap:
            lines.append(f"    {x} = {math.pi!r} - ({math.pi!r} - {x}) % {2 * math.pi!r}")
        out[i] = x
    lines.append(f"    return cost, [{', '.join(out)}]")
    return "\n".join(report + lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Many rows, stacked: the kernel output as ``(size, B)``, one operation per array over the batch.


def _errors_stacked(P: Array, target: Array, world: bool) -> Array:
    """The error twist (see :func:`_twist_lines`) of every tip and row: ``d (n_tips, 6, B)``
    from the tips' poses ``P (n_tips, 12, B)`` and targets ``(n_tips, 12, B)`` (rotation
    row-major, then position)."""
    nt, B = P.shape[0], P.shape[2]
    R, Rt = P[:, :9].reshape(nt, 3, 3, B), target[:, :9].reshape(nt, 3, 3, B)
    e = P[:, 9:] - target[:, 9:]
    if world:
        E = np.einsum("tikb,tjkb->tijb", R, Rt)                        # R R_tᵀ
    else:
        E = np.einsum("tkib,tkjb->tijb", Rt, R)                        # R_tᵀ R
        e = np.einsum("tkib,tkb->tib", Rt, e)
    c = np.clip(0.5 * (E[:, 0, 0] + E[:, 1, 1] + E[:, 2, 2] - 1.0), -1.0, 1.0)
    theta = np.arccos(c)
    f = np.where(theta < 1e-4, 0.5 + theta * theta / 12.0, theta / (2.0 * np.sqrt(np.maximum(1.0 - c * c, 1e-300))))
    w = f[:, None] * (E[:, [2, 0, 1], [1, 2, 0]] - E[:, [1, 2, 0], [2, 0, 1]])
    near_pi = theta > np.pi - 1e-3  # the antisymmetric part vanishes: read the axis elsewhere
    if near_pi.any():
        tip, row = np.nonzero(near_pi)
        w[tip, :, row] = log_so3(E[tip, :, :, row])
    return np.concatenate([e, w], axis=1)


def _lm_step_arrays(J: Array, r: Array, damping: Array) -> Array:
    """``dx (n, B)`` solving ``(Jᵀ J + λ I) dx = -Jᵀ r`` for ``J (m, n, B)``, ``r (m, B)``,
    ``λ = damping (B,)``, through the smaller normal system (see :func:`_damped_step_lines`)."""
    m, n = J.shape[:2]
    if m <= n:
        G = np.einsum("acs,bcs->abs", J, J)
        G[range(m), range(m)] += damping
        return -np.einsum("acs,as->cs", J, np.array(_array_solve(m)(G, r)))
    G = np.einsum("acs,ads->cds", J, J)
    G[range(n), range(n)] += damping
    return -np.array(_array_solve(n)(G, np.einsum("acs,as->cs", J, r)))


def _generic_frames(model: RobotModel, tips: Sequence[int], width: int, q: Array) -> Array:
    """The generated kernel's batched output ``(B, n_tips, 10, width)`` by the generic FK and
    Jacobians, for ``q (B, n_q)`` (models the generator does not handle: floating, planar joints)."""
    T = forward_kinematics(model, q)
    out = np.zeros((q.shape[0], len(tips), 10, width))
    for k, tip in enumerate(tips):
        out[:, k, :4, :4] = T[:, tip]
        out[:, k, 4:, :model.n_v] = jacobian(model, q, model.link_names[tip], LOCAL_WORLD_ALIGNED, poses=T)
    return out


class _Plan:
    """What one (model, tips, base, active joints) problem needs, built once and cached."""

    def __init__(self, model: RobotModel, tips: tuple[int, ...], base: int, active: tuple[int, ...]):
        self.tips, self.base = tips, base
        tip_support = model.support_mask[list(tips)].any(axis=0)
        base_support = model.support_mask[base]
        src = model.velocity_source_joints
        moving = np.zeros(model.n_joints, bool)  # independent joints that move a tip relative to the base
        for j in range(model.n_joints):
            if src[j] >= 0 and tip_support[j + 1] and not base_support[j + 1]:
                moving[src[j]] = True
        self.free_joints = [j for j in model.active_joints if moving[j] and j in active]
        self.free_q = np.array([model.joint_q_index[j] + k for j in self.free_joints
                                for k in range(model.joint_nq[j])], np.int64)
        self.free_v = np.array([model.joint_v_index[j] + k for j in self.free_joints
                                for k in range(model.joint_nv[j])], np.int64)
        on_tips = [j for j in range(model.n_joints) if tip_support[j + 1] and not model.is_fixed[j]]
        self.scalar = all(JointType(model.joint_types[j]) in SCALAR_TYPES for j in on_tips)
        # Free q coordinates that wrap (continuous, planar θ), that are revolute and that restarts
        # redraw (not floating).
        periodic, revolute, randomised = np.zeros(model.n_q, bool), np.zeros(model.n_q, bool), np.zeros(model.n_q, bool)
        for j in self.free_joints:
            t, i = JointType(model.joint_types[j]), model.joint_q_index[j]
            if t in (JointType.CONTINUOUS, JointType.PLANAR):
                periodic[i + (2 if t == JointType.PLANAR else 0)] = True
            revolute[i] = t == JointType.REVOLUTE
            randomised[i:i + model.joint_nq[j]] = t != JointType.FLOATING
        self.periodic = periodic[self.free_q]
        self.revolute = revolute[self.free_q]
        self.randomised = randomised[self.free_q]
        # Free columns with a q twin (all but floating joints' v): bounds that can hold a step.
        self.bounded_v, self.bounded_q = [], []
        for j in self.free_joints:
            if model.joint_types[j] != JointType.FLOATING:
                for k in range(model.joint_nv[j]):
                    self.bounded_v.append(int(np.flatnonzero(self.free_v == model.joint_v_index[j] + k)[0]))
                    self.bounded_q.append(int(model.joint_q_index[j] + k))
        self.base_moves = bool(np.any(~model.is_fixed[np.flatnonzero(base_support[1:])]))
        self.T_world_base = forward_kinematics(model, model.home_configuration())[base]
        self.solvers: dict = {}  # (options, kernel) -> _Solver, see _solver()


_PLANS: "weakref.WeakKeyDictionary[RobotModel, dict]" = weakref.WeakKeyDictionary()


def _plan(model: RobotModel, tips: tuple[int, ...], base: int, active: tuple[int, ...]) -> _Plan:
    cache = _PLANS.setdefault(model, {})
    key = (tips, base, active)
    if key not in cache:
        cache[key] = _Plan(model, tips, base, active)
    return cache[key]


# ---------------------------------------------------------------------------------------------
# Problems on a part of the robot: solved on the chain alone


class _Chain:
    """The links from a base to the tips of a problem as a model of their own (the base its root),
    when the robot has more: the problem's kernel then computes only those links and columns
    (a humanoid arm: 7 of 30-40 coordinates), and targets ``T_base_tip`` are world poses of
    the chain. Coordinates outside the chain keep their (clamped) seed values."""

    def __init__(self, model: RobotModel, chain: RobotModel, q_index: Array):
        self.model, self.chain, self.q_index = weakref.ref(model), chain, q_index
        self.joint_names = frozenset(chain.all_joint_names)

    def solve(self, targets, tips, seed, *, active_joints, lower, upper, **options) -> IKResult:
        model, index = self.model(), self.q_index
        if active_joints is not None:
            names = (active_joints,) if isinstance(active_joints, str) else tuple(active_joints)
            for name in names:
                model.joint_index(name)  # unknown names are errors of the whole robot's
            active_joints = [name for name in names if name in self.joint_names]
        if lower is not None or upper is not None:
            lo, hi = _bounds(model, lower, upper)
            lower, upper = lo[index], hi[index]
        else:
            lo, hi = model.q_lower, model.q_upper
        if seed is None:
            full = model.home_configuration()
        else:  # clamped and normalised as the solver treats seeds
            full = np.minimum(np.maximum(model.check_q(seed, "seed"), lo), hi)
            for s in model.quaternion_slices:
                full[..., s] /= np.linalg.norm(full[..., s], axis=-1, keepdims=True)
        result = solve_ik(self.chain, targets, tips, full[..., index], active_joints=active_joints, lower=lower,
                          upper=upper, **options)
        q = np.array(np.broadcast_to(full, result.q.shape[:-1] + (model.n_q,)))
        q[..., index] = result.q
        return dataclasses.replace(result, q=q)


_CHAINS: "weakref.WeakKeyDictionary[RobotModel, dict]" = weakref.WeakKeyDictionary()


def _chain(model: RobotModel, tips: tuple, base: str | None) -> _Chain | None:
    """The :class:`_Chain` of ``tips`` below ``base`` (cached), or None: the robot is that chain
    already, the base is not an ancestor of every tip, or a chain joint mimics one outside it."""
    per_model = _CHAINS.get(model)
    if per_model is None:
        per_model = _CHAINS[model] = {}
    key = (tips, base)
    if key in per_model:
        return per_model[key]
    if len(per_model) >= 64:
        per_model.clear()
    base_idx = 0 if base is None else model.link_index(base)
    tip_idx = [model.link_index(t) for t in tips]  # (unknown names: errors, never cached)
    keep, chain = {base_idx}, None
    for i in tip_idx:
        while i not in keep and i != 0:
            keep.add(i)
            i = int(model.link_parents[i])
        if i not in keep:  # reached the root without meeting the base
            keep = None
            break
    if keep is not None and len(keep) < model.n_links:
        joints = [i - 1 for i in sorted(keep) if i != base_idx]
        sources = {int(model.mimic_source[j]) for j in joints if model.mimic_source[j] >= 0}
        if sources <= set(joints):
            from .builder import _assemble, _decompose  # (builder imports nothing of ik)
            links, records = _decompose(model)
            names = {model.link_names[i] for i in keep}
            sub = _assemble(model.name, [link for link in links if link.name in names],
                            [records[j] for j in joints])
            index = np.zeros(sub.n_q, np.int64)  # chain q coordinate -> the robot's
            for j, name in enumerate(sub.all_joint_names):
                k, n = int(sub.joint_q_index[j]), int(sub.joint_nq[j])
                if n:
                    start = int(model.joint_q_index[model.joint_index(name)])
                    index[k:k + n] = np.arange(start, start + n)
            chain = _Chain(model, sub, index)
    per_model[key] = chain
    return chain


# ---------------------------------------------------------------------------------------------
# The solver


def solve_ik(model: RobotModel, targets, tips, seed=None, *, base: str | None = None,
             position_tolerance: float = 1e-5, rotation_tolerance: float = 1e-5,
             axis_tolerances=None, weights=None, active_joints: Sequence[str] | None = None,
             lower=None, upper=None, timeout: float | None = None, max_iterations: int = 500,
             restarts: int | None = None, rng=None, avoid_collisions=False) -> IKResult:
    """Joint configurations that put one or several tips at target poses.

    Damped least squares (Levenberg–Marquardt, position rows weighted by
    :data:`POSITION_WEIGHT`) from each seed; a row whose cost stops dropping restarts at another
    configuration (see ``restarts``); a problem stops as soon as one of its rows meets the
    tolerances (several rows at once: the one closest to the seed wins). Up to
    :data:`SCALAR_ROWS` problems iterate one by one in Python floats on the generated kernel; a
    larger batch iterates vectorised (stalled problems get :data:`EXTRA_ROWS` extra restarted
    rows once every problem is under way, so results of a batch and of single calls agree
    exactly only for problems that need no restart).

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
            target within 500 iterations, 99.98 % within 200; one iteration costs 15-30 µs).
        restarts: extra rows per problem started at other configurations alongside the seed
            (all iterated together, vectorised, even for one problem); None or 0: the seed row
            only. Independently of it, a row whose cost has not dropped by ``STALL_PROGRESS``
            (10 %) for ``STALL_ITERATIONS`` (3) iterations restarts elsewhere. Restart
            configurations are consecutive points of a low-discrepancy (R2) sequence within the
            bounds, from a point chosen by ``rng``.
        rng: integer seed, ``numpy.random.Generator`` or anything ``numpy.random.default_rng``
            takes, choosing where the restarts start (fixed: deterministic results).
        avoid_collisions: False; True (the model's default
            :func:`~robokin_ros.collision.collision_model`) or a
            :class:`~robokin_ros.collision.CollisionModel`: a configuration within tolerance that
            is in self-collision is not a solution (its row restarts elsewhere); a problem that
            finds no other ends ``success=False``, status ``"in_collision"`` if its best
            configuration meets the tolerances.

    Returns:
        :class:`IKResult` with batch shape ``...`` (the broadcast of the targets' and seed's).

    Raises:
        ShapeError: targets, seed, bounds, weights or tolerances of the wrong shape.
        NonFiniteError: NaN or inf in the targets or seed (NaN in the bounds).
        InvalidTargetError: a target that is not a rigid transform (see :data:`ROTATION_TOLERANCE`).
        UnknownLinkError: unknown tip or base. UnknownJointError: unknown active joint.
        JointLimitError: a bound override that leaves a joint no admissible value.
        IKOptionError: negative tolerance, weight or timeout; max_iterations < 1; restarts < 0.
        CollisionUnavailableError: ``avoid_collisions`` without coal installed.
    """
    single = isinstance(tips, str)
    if not single and not (isinstance(tips, (list, tuple)) and all(isinstance(t, str) for t in tips)):
        raise IKOptionError(f"tips must be a link name or a sequence of link names, got {str(tips)[:60]!r}")
    # (Collisions involve the whole robot: a collision-aware problem is solved on all of it.)
    chain = None if avoid_collisions else _chain(model, (tips,) if single else tuple(tips), base)
    if chain is not None:
        return chain.solve(targets, tips, seed, position_tolerance=position_tolerance,
                           rotation_tolerance=rotation_tolerance, axis_tolerances=axis_tolerances, weights=weights,
                           active_joints=active_joints, lower=lower, upper=upper, timeout=timeout,
                           max_iterations=max_iterations, restarts=restarts, rng=rng)
    if timeout is not None and (not _is_real(timeout) and timeout != math.inf or timeout <= 0):
        raise IKOptionError(f"timeout must be > 0 seconds or None, got {timeout!r}")
    active_names = None if active_joints is None else (active_joints,) if isinstance(active_joints, str) else tuple(active_joints)
    request = _request(model, (tips,) if single else tuple(tips), base, active_names, position_tolerance,
                       rotation_tolerance, axis_tolerances, weights, max_iterations, restarts)
    plan, tol, compiled, nt, base_idx = request.plan, request.tol, request.compiled, request.n_tips, request.base
    T = np.asarray(targets, dtype=float)
    tail = (4, 4) if single else (nt, 4, 4)
    if T.ndim < len(tail) or T.shape[T.ndim - len(tail):] != tail:
        raise ShapeError("targets", "(..., 4, 4)" if single else f"(..., {nt}, 4, 4)", T.shape)
    if timeout is not None and not timeout > 0:
        raise IKOptionError(f"timeout must be > 0 seconds or None, got {timeout!r}")
    if (T.ndim == len(tail) and (seed is None or np.ndim(seed) == 1) and compiled is not None
            and tol.restarts == 0):
        # One problem (the /compute_ik case): validated and solved on Python floats.
        flat = T.reshape(nt, 16).tolist()
        if not math.isfinite(sum(x for row in flat for x in row)) and not all(math.isfinite(x) for row in flat for x in row):
            raise NonFiniteError("targets", [()])  # (a finite sum proves finite entries; an overflow is checked)
        _check_rigid(T)
        seed_list = model.home_configuration().tolist() if seed is None else np.asarray(seed, float).tolist()
        if len(seed_list) != model.n_q or not math.isfinite(sum(seed_list)) and not all(map(math.isfinite, seed_list)):
            model.check_q(seed, "seed")  # raises the named error
        solver = (request.solver if lower is None and upper is None else
                  _solver(model, plan, *_bounds(model, lower, upper), tol, compiled))
        seed_list = [lo if x < lo else hi if x > hi else x for x, lo, hi in zip(seed_list, solver.q_lower, solver.q_upper)]
        if plan.base_moves:  # joints that move the base stay at the seed: its pose is the seed's
            T_world_base = compiled_frames(model, (model.link_names[base_idx],)).single(np.array(seed_list))[0, :4, :4]
            flat = (T_world_base @ T.reshape(nt, 4, 4)).reshape(nt, 16).tolist()
        elif base_idx:
            flat = (plan.T_world_base @ T.reshape(nt, 4, 4)).reshape(nt, 16).tolist()
        target = [x for row in flat for x in row[0:3] + row[4:7] + row[8:11] + row[3:12:4]]
        accept = _collision_test(model, avoid_collisions)
        return _refuse_collisions(solver.solve_one(seed_list, target, _Budget(timeout, 1, rng, accept)), accept)

    T = T.reshape(T.shape[:T.ndim - len(tail)] + (nt, 4, 4))
    finite = np.isfinite(T).all(axis=(-3, -2, -1))
    if not finite.all():
        raise NonFiniteError("targets", [tuple(int(k) for k in i) for i in np.argwhere(~finite)] if finite.ndim else [()])
    _check_rigid(T)
    batch = T.shape[:-3]
    seed_q = model.home_configuration() if seed is None else model.check_q(seed, "seed")
    try:
        batch = np.broadcast_shapes(batch, seed_q.shape[:-1])
    except ValueError:
        raise ShapeError("seed", f"(..., {model.n_q}) broadcastable to the targets' batch {batch}", seed_q.shape) from None
    lo, hi = _bounds(model, lower, upper)

    n = math.prod(batch)
    T = np.broadcast_to(T, batch + (nt, 4, 4)).reshape(n, nt, 4, 4)
    seeds = np.minimum(np.maximum(np.broadcast_to(seed_q, batch + (model.n_q,)).reshape(n, model.n_q), lo), hi)
    for s in model.quaternion_slices:
        seeds[:, s] /= np.linalg.norm(seeds[:, s], axis=-1, keepdims=True)
    if plan.base_moves:
        T = forward_kinematics(model, seeds)[:, None, base_idx] @ T
    elif base_idx:
        T = plan.T_world_base @ T
    # Target components (n, n_tips * 12): per tip its rotation row-major, then its position.
    targets_flat = np.concatenate([T[..., :3, :3].reshape(n, nt, 9), T[..., :3, 3]], axis=-1).reshape(n, nt * 12)
    solver = _solver(model, plan, lo, hi, tol, compiled)
    accept = _collision_test(model, avoid_collisions)
    result = solver.solve(targets_flat, seeds, _Outcome(seeds, _Budget(timeout, n, rng, accept)))
    return _refuse_collisions(IKResult(*(a.reshape(batch + a.shape[1:]) for a in result)), accept)


def _collision_test(model: RobotModel, avoid_collisions):
    """``accept(q)`` of ``avoid_collisions``: for ``q (B, n_q)`` a ``(B,)`` mask of configurations
    free of self-collision, for ``q (n_q,)`` (a list) one bool; None when not avoiding."""
    if avoid_collisions is False or avoid_collisions is None:
        return None
    from .collision import CollisionModel, in_collision

    cm = CollisionModel.build(model) if avoid_collisions is True else avoid_collisions
    if not isinstance(cm, CollisionModel):
        raise IKOptionError(f"avoid_collisions must be a bool or a CollisionModel, got {type(avoid_collisions).__name__}")
    if cm.model is not model:
        raise IKOptionError("avoid_collisions: the CollisionModel was built for another model")
    return lambda q: ~in_collision(cm, q) if np.ndim(q) == 2 else not in_collision(cm, q)[0]


def _rejected(budget: "_Budget", q: Array, ok: Array) -> Array:
    """``(B,)`` rows of ``q (n_q, B)`` within tolerance (``ok``) that ``budget.accept`` refuses."""
    out = np.zeros(ok.shape, bool)
    if budget.accept is not None and ok.any():
        rows = np.flatnonzero(ok)
        out[rows] = ~budget.accept(q[:, rows].T)
    return out


def _refuse_collisions(result: IKResult, accept) -> IKResult:
    """``result`` with ``success`` cleared (status :data:`IN_COLLISION`) where ``accept`` refuses
    ``q``: the solver checks the rows it declares converged, this the iterates it reports as
    they are (a seed within tolerance, a best iterate after a timeout)."""
    if accept is None or not result.success.any():
        return result
    success = np.array(result.success)
    bad = success & ~accept(np.atleast_2d(result.q).reshape(-1, result.q.shape[-1])).reshape(success.shape)
    if not bad.any():
        return result
    success[bad] = False
    status = np.array(result.status)
    status[bad] = IN_COLLISION
    return dataclasses.replace(result, success=success, status=status)


@dataclasses.dataclass(frozen=True)
class _Request:
    """What a call needs that depends only on its names and options."""

    plan: _Plan
    tol: "_Tolerances"
    compiled: object  # the generated kernel of the tips, or None
    n_tips: int
    base: int
    solver: "_Solver"  # for the model's own bounds


_REQUESTS: "weakref.WeakKeyDictionary[RobotModel, dict]" = weakref.WeakKeyDictionary()


def _request(model: RobotModel, tip_names: tuple, base, active_names: tuple | None, position_tolerance,
             rotation_tolerance, axis_tolerances, weights, max_iterations, restarts) -> _Request:
    """Validate a call's names and options into a :class:`_Request`; cached per model when the
    options are plain scalars (the /compute_ik case, where this would cost as much as a few
    iterations)."""
    key = None
    if axis_tolerances is None and weights is None:
        key = (tip_names, base, active_names, position_tolerance, rotation_tolerance, max_iterations, restarts,
               kinematics.use_generated_kernels)
        try:
            return _REQUESTS[model][key]
        except (KeyError, TypeError):  # not seen yet, or an unhashable option (validated below)
            pass
    if not tip_names:
        raise ShapeError("tips", "one name or a non-empty sequence of names", (0,))
    tip_idx = tuple(model.link_index(t) for t in tip_names)
    base_idx = 0 if base is None else model.link_index(base)
    if active_names is None:
        active = tuple(int(j) for j in model.active_joints)
    else:
        active = tuple(sorted({model.joint_index(name) for name in active_names}))
    tol = _options(len(tip_idx), position_tolerance, rotation_tolerance, axis_tolerances, weights, max_iterations, restarts)
    compiled = compiled_frames(model, tip_names) if kinematics.use_generated_kernels else None
    plan = _plan(model, tip_idx, base_idx, active)
    solver = _solver(model, plan, *_bounds(model, None, None), tol, compiled)
    request = _Request(plan, tol, compiled, len(tip_idx), base_idx, solver)
    if key is not None:
        cache = _REQUESTS.setdefault(model, {})
        if len(cache) >= 64:
            cache.clear()
        try:
            cache[key] = request
        except TypeError:
            pass
    return request


def _bounds(model: RobotModel, lower, upper) -> tuple[Array, Array]:
    """Effective ``(n_q,)`` bounds: the model's limits intersected with the overrides."""
    if lower is None and upper is None and not model.quaternion_slices:
        return model.q_lower, model.q_upper
    lo, hi = model.q_lower.copy(), model.q_upper.copy()
    for name, given, pick in (("lower", lower, np.maximum), ("upper", upper, np.minimum)):
        if given is None:
            continue
        given = np.asarray(given, dtype=float)
        if given.shape != (model.n_q,):
            raise ShapeError(name, f"({model.n_q},)", given.shape)
        if np.isnan(given).any():
            bad = np.flatnonzero(np.isnan(given))
            raise NonFiniteError(name, bad.tolist(), [model.q_names[i] for i in bad])
        if name == "lower":
            lo = pick(lo, given)
        else:
            hi = pick(hi, given)
    for s in model.quaternion_slices:
        lo[s], hi[s] = -1.0, 1.0
    empty = np.flatnonzero(lo > hi)
    if empty.size:
        i = empty[0]
        raise JointLimitError(model.q_names[i], float(hi[i] if upper is not None and hi[i] < model.q_upper[i] else lo[i]),
                              float(model.q_lower[i]), float(model.q_upper[i]))
    return lo, hi


@dataclasses.dataclass(frozen=True)
class _Tolerances:
    position: float
    rotation: float
    rows: tuple[tuple[int, int, float, float], ...]  # constrained axes: (tip, axis 0-5, √weight, dead band)
    world: bool                                      # no dead band, no free axis: step in world axes
    max_iterations: int
    restarts: int


#: Largest position [m] or rotation [rad] tolerance accepted (larger ones mean nothing and
#: would overflow squared residuals).
MAX_TOLERANCE = 1e6


def _is_real(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
        and math.isfinite(value)


def _is_whole(value) -> bool:
    return _is_real(value) and float(value).is_integer()


def _options(nt, position_tolerance, rotation_tolerance, axis_tolerances, weights, max_iterations,
             restarts) -> _Tolerances:
    """Validate the options (but the timeout)."""
    for name, value in (("position_tolerance", position_tolerance), ("rotation_tolerance", rotation_tolerance)):
        if not _is_real(value) or not 0 <= value <= MAX_TOLERANCE:
            raise IKOptionError(f"{name} must be a number in [0, {MAX_TOLERANCE:g}], got {value!r}")
    if not _is_whole(max_iterations) or max_iterations < 1:
        raise IKOptionError(f"max_iterations must be a whole number >= 1, got {max_iterations!r}")
    if restarts is not None and (not _is_whole(restarts) or restarts < 0):
        raise IKOptionError(f"restarts must be a whole number >= 0, got {restarts!r}")
    box = [[0.0] * 6] * nt
    if axis_tolerances is not None:
        given = np.asarray(axis_tolerances, dtype=float)
        if given.shape not in ((6,), (nt, 6)):
            raise ShapeError("axis_tolerances", f"(6,) or ({nt}, 6)", given.shape)
        if np.isnan(given).any() or (given < 0).any():
            raise IKOptionError(f"axis_tolerances must be >= 0 (inf frees an axis), got {given.tolist()}")
        box = np.broadcast_to(given, (nt, 6)).tolist()
    sqrt_w = [1.0] * nt
    if weights is not None:
        w = np.asarray(weights, dtype=float)
        if w.shape != (nt,):
            raise ShapeError("weights", f"({nt},)", w.shape)
        if not np.isfinite(w).all() or (w < 0).any():
            raise IKOptionError(f"weights must be finite and >= 0, got {w.tolist()}")
        sqrt_w = np.sqrt(w).tolist()
    rows = tuple((k, i, sqrt_w[k], box[k][i]) for k in range(nt) for i in range(6) if math.isfinite(box[k][i]))
    return _Tolerances(float(position_tolerance), float(rotation_tolerance), rows,
                       not any(any(b) for b in box), int(max_iterations), 0 if restarts is None else int(restarts))


class _Budget:
    """Per-call time budget, position in the sequence of restart configurations (drawn
    from ``rng`` on first use: most calls never restart) and the test a converged
    configuration must pass (``avoid_collisions``)."""

    def __init__(self, timeout: float | None, n: int, rng, accept=None):
        self.deadline = None if timeout is None else time.perf_counter() + timeout * n
        self._rng, self._next = rng, -1
        self.accept = accept  # None, or the avoid_collisions test (see _collision_test)

    def take(self, k: int) -> range:
        """Indices of the call's next ``k`` restarts in the R2 sequence (see :meth:`_Solver.starts`)."""
        if self._next < 0:
            if isinstance(self._rng, (int, np.integer)) and not isinstance(self._rng, bool):
                self._next = int(self._rng) * 2654435761 % RESTART_OFFSETS  # Knuth's multiplicative hash
            else:
                self._next = int(np.random.default_rng(self._rng).integers(RESTART_OFFSETS))
        self._next += k
        return range(self._next - k, self._next)

    def timed_out(self) -> bool:
        return self.deadline is not None and time.perf_counter() > self.deadline


class _Outcome:
    """Per-call results of a batch, filled as problems finish."""

    def __init__(self, seeds: Array, budget: _Budget):
        n = len(seeds)
        self.q, self.success = seeds.copy(), np.zeros(n, bool)
        self.position_error, self.rotation_error = np.zeros(n), np.zeros(n)
        self.iterations = np.zeros(n, np.int64)
        self.status = np.full(n, MAX_ITERATIONS, dtype="<U14")
        self.unfinished = np.ones(n, bool)  # errors still to evaluate at q
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

    def select(self, keep) -> "_Rows":
        return _Rows(*(getattr(self, f.name)[..., keep] for f in dataclasses.fields(self)))

    def extend(self, other: "_Rows") -> "_Rows":
        return _Rows(*(np.concatenate([getattr(self, f.name), getattr(other, f.name)], axis=-1)
                       for f in dataclasses.fields(self)))


def _solver(model: RobotModel, plan: _Plan, lo: Array, hi: Array, tol: _Tolerances, compiled) -> "_Solver":
    """The solver of a plan, options, bounds and kernel, cached on the plan (a few dozen)."""
    default = lo is model.q_lower and hi is model.q_upper
    key = (tol, id(compiled), None if default else (lo.tobytes(), hi.tobytes()))
    if key not in plan.solvers:
        if len(plan.solvers) >= 32:
            plan.solvers.clear()
        plan.solvers[key] = _Solver(model, plan, lo, hi, tol, compiled)
    return plan.solvers[key]


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


class _Solver:
    """The Levenberg–Marquardt iterations for one plan, options and bounds (no per-call state)."""

    @property
    def model(self) -> RobotModel:
        return self._model()

    def __init__(self, model: RobotModel, plan: _Plan, lo: Array, hi: Array, tol: _Tolerances, compiled):
        # Cached per model (in a WeakKeyDictionary keyed by the model): a strong reference here
        # would keep every model ever solved alive.
        self._model = weakref.ref(model)
        self.plan, self.tol, self.compiled = plan, tol, compiled
        fq = plan.free_q
        self.lo, self.hi = lo[fq], hi[fq]
        self.q_lower, self.q_upper = lo.tolist(), hi.tolist()
        finite = np.isfinite(self.lo) & np.isfinite(self.hi)
        periodic = plan.periodic & ~np.isfinite(self.lo) & ~np.isfinite(self.hi)
        self.wrap = np.flatnonzero(periodic)
        self.restarted = plan.randomised & (finite | periodic)
        # Restarts stay within the bounds, and within one turn around the middle of a revolute
        # joint's range when it is wider (every angle is there; measured on the UR5e's ±2π
        # joints: 15 % fewer iterations, the 99th percentile 99 -> 63).
        lo_, hi_ = np.where(finite, self.lo, -np.pi), np.where(finite, self.hi, np.pi)
        half = np.where(plan.revolute, np.minimum(0.5 * (hi_ - lo_), np.pi), 0.5 * (hi_ - lo_))
        self.restart_lo, self.restart_hi = np.maximum(0.5 * (lo_ + hi_) - half, lo_), np.minimum(0.5 * (lo_ + hi_) + half, hi_)
        self.r2_steps = _r2_steps(len(fq))
        self.bounded_v = np.array(plan.bounded_v, np.int64)
        self.bounded_q = np.array(plan.bounded_q, np.int64)
        self.bounded_lo, self.bounded_hi = lo[self.bounded_q][:, None], hi[self.bounded_q][:, None]
        nt, w = len(plan.tips), max(4, model.n_v)
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
        columns = plan.free_v.tolist()
        self.jacobian_array = np.array([[10 * w * k + (4 + i) * w + c for c in columns] for k, i, _, _ in
                                        (rows[j] for j in self.lm_rows)], np.int64).reshape(len(self.lm_rows), len(columns))
        self.pose_index = np.array([[10 * w * k + r * w + c for r in range(3) for c in range(3)] +
                                    [10 * w * k + r * w + 3 for r in range(3)] for k in range(nt)])
        self.tip_jacobian_index = np.array([[[10 * w * k + (4 + a) * w + c for c in columns] for a in range(6)]
                                            for k in range(nt)]).reshape(nt, 6, len(columns))
        self.row_index = np.array([6 * k + i for k, i, _, _ in rows], np.int64)
        self.box = np.array([b for _, _, _, b in rows])[:, None]
        self.sqrt_weight = np.array(self.weights)[:, None, None]
        self.linear = np.array([[row[0] == k and row[1] < 3 for row in rows] for k in range(nt)], float)
        self.angular = np.array([[row[0] == k and row[1] >= 3 for row in rows] for k in range(nt)], float)
        if compiled is not None:  # the float path's generated functions, see _float_source
            namespace = {"flat": compiled.flat, "acos": math.acos, "sqrt": math.sqrt, "_log_near_pi": _log_near_pi}
            exec(compile(_float_source(self), f"<robokin ik {model.name}>", "exec"), namespace)  # noqa: S102
            self.iteration, self.report = namespace["iteration"], namespace["report"]

    # ------------------------------------------------------------------ driver
    def solve(self, target: Array, seeds: Array, out: _Outcome):
        """Solve ``n`` problems: target components ``(n, n_tips * 12)`` from ``seeds (n, n_q)``."""
        n = len(seeds)
        if self.compiled is not None and self.tol.restarts == 0 and n <= SCALAR_ROWS:
            for p in range(n):
                (out.q[p], out.status[p], out.iterations[p], out.position_error[p], out.rotation_error[p],
                 out.success[p]) = self.scalar(seeds[p].tolist(), target[p].tolist(), out.budget)
            out.unfinished[:] = False
        elif len(self.plan.free_q) == 0:
            out.status[:] = NO_FREE_JOINTS
        else:
            self.vectorised(out, target, seeds)
        left = np.flatnonzero(out.unfinished)
        if left.size:
            d = self.errors(self.frames(out.q[left]), target[left].T)
            ok = self.residual(d)[1]
            self.record_errors(out, left, d)
            out.success[left] = ok
            out.status[left[ok & (out.status[left] == NO_FREE_JOINTS)]] = CONVERGED
        if self.wrap.size:  # continuous joints: the equivalent angle nearest the seed
            cols = self.plan.free_q[self.wrap]
            out.q[:, cols] = seeds[:, cols] + _wrap(out.q[:, cols] - seeds[:, cols])
        return out.q, out.success, out.position_error, out.rotation_error, out.iterations, out.status

    def solve_one(self, seed: list, target: list, budget: _Budget) -> IKResult:
        """:meth:`solve` for one problem (``seed``, ``target`` as lists), with few numpy calls."""
        q, status, it, position, rotation, success = self.scalar(seed[:], target, budget)
        for c in self.wrap.tolist():  # continuous joints: the equivalent angle nearest the seed
            i = self.free[c][1][0]
            q[i] = seed[i] + _wrap(q[i] - seed[i])
        return IKResult(np.array(q), np.array(success), np.array(position), np.array(rotation),
                        np.array(it, np.int64), np.array(status, "<U14"))

    # ------------------------------------------------------------------ one problem in floats
    def scalar(self, q: list, target: list, budget: _Budget, it: int = 0, stall: int = 0, best_cost: float = math.inf,
               reference: float = math.inf, best_q: list | None = None) -> tuple:
        """Solve one problem alone in Python floats on the generated :meth:`iteration` (every
        free coordinate is then a scalar joint with a q twin); stalled attempts restart in turn.
        A row of a vectorised pass continues from its state (``it`` ... ``best_q``).

        Returns:
            ``(q, status, iterations, position error, rotation error, success)``.
        """
        iteration, max_iterations, moves = self.iteration, self.tol.max_iterations, bool(self.free)
        best_q = q if best_q is None else best_q
        while True:
            cost, q_next = iteration(q, target, DAMPING_COST)
            if cost is None:
                if budget.accept is None or budget.accept(q):
                    return (q, CONVERGED, it) + q_next + (True,)
                cost, q_next, stall = math.inf, q, STALL_ITERATIONS  # in collision: restart elsewhere
            if not moves:
                status = NO_FREE_JOINTS
                break
            if cost < best_cost:
                best_cost, best_q = cost, q
            if cost < reference * (1.0 - STALL_PROGRESS):
                reference, stall = cost, 0
            else:
                stall += 1
            timed_out = budget.timed_out()
            if it >= max_iterations or timed_out:
                q, status = best_q, TIMEOUT if timed_out else MAX_ITERATIONS
                break
            q = q_next
            if stall >= STALL_ITERATIONS:
                k, q = budget.take(1)[0], q[:]
                for i, lo, width, step in self.restart_floats:  # the next configuration of the R2 sequence
                    q[i] = lo + (0.5 + k * step) % 1.0 * width
                stall, reference = 0, math.inf
            it += 1
        return (q, status, it) + self.report(q, target)

    # ------------------------------------------------------------------ many problems, stacked
    def frames(self, q: Array) -> Array:
        """Kernel output of configurations ``q (B, n_q)`` as ``(size, B)``."""
        B = q.shape[0]
        if self.compiled is None:
            return _generic_frames(self.model, self.plan.tips, self.width, q).reshape(B, -1).T
        return self.compiled.batch(q).reshape(B, -1).T

    def errors(self, F: Array, target: Array) -> Array:
        """Error twists ``(n_tips, 6, B)`` from the kernel output ``F (size, B)`` and target
        components ``(n_tips * 12, B)``."""
        return _errors_stacked(F[self.pose_index], target.reshape(self.n_tips, 12, -1), self.tol.world)

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
            J = np.concatenate([np.einsum("tkib,tkcb->ticb", Rt, Jw[:, :3]), np.einsum("tkib,tkcb->ticb", Rt, Jw[:, 3:])],
                               axis=1).reshape(6 * self.n_tips, Jw.shape[2], -1)[self.row_index[self.lm_rows]]
        return J if self.unit_weights else J * self.sqrt_weight

    @staticmethod
    def record_errors(out: _Outcome, problems, d: Array) -> None:
        """Worst raw position and rotation error over the tips of ``d (n_tips, 6, k)``."""
        out.position_error[problems] = np.sqrt((d[:, :3] ** 2).sum(axis=1)).max(axis=0)
        out.rotation_error[problems] = np.sqrt((d[:, 3:] ** 2).sum(axis=1)).max(axis=0)

    def restart(self, q: Array, budget: _Budget) -> Array:
        """Rows ``q (n_q, k)`` with their free coordinates moved to the call's next ``k``
        configurations of the R2 sequence within the bounds."""
        fq = self.plan.free_q
        fraction = (0.5 + np.outer(self.r2_steps, np.array(budget.take(q.shape[1]), float))) % 1.0
        draw = self.restart_lo[:, None] + fraction * (self.restart_hi - self.restart_lo)[:, None]
        q[fq] = np.where(self.restarted[:, None], draw, q[fq])
        return q

    def load(self, out: _Outcome, target: Array, seeds: Array, start: int, stop: int) -> _Rows:
        """Rows of problems ``start:stop``: each seed, then ``restarts`` restarted rows."""
        R = 1 + self.tol.restarts
        q = np.repeat(seeds[start:stop].T, R, axis=1)
        if R > 1:
            extra = np.arange(q.shape[1]) % R > 0
            q[:, extra] = self.restart(q[:, extra], out.budget)
        inf, zero = np.full(q.shape[1], np.inf), np.zeros(q.shape[1], np.int64)
        return _Rows(q, np.repeat(target[start:stop].T, R, axis=1), np.repeat(np.arange(start, stop), R),
                     zero, inf, q.copy(), zero.copy(), inf.copy())

    def vectorised(self, out: _Outcome, target: Array, seeds: Array) -> None:
        """Iterate the problems together, at most :data:`BATCH_ROWS` rows at a time: finished
        problems make room for waiting ones; once none wait, a problem whose only row stalls
        gets :data:`EXTRA_ROWS` more restarted rows (the capacity is idle then, and the slowest
        problems decide how long the call takes)."""
        tol, plan, n, R = self.tol, self.plan, len(seeds), 1 + self.tol.restarts
        loaded = min(n, max(1, BATCH_ROWS // R))
        rows = self.load(out, target, seeds, 0, loaded)
        several = R > 1  # some problem has several rows
        while rows.problem.size:
            if (loaded == n and R == 1 and self.compiled is not None  # (a problem has at most 1 + EXTRA_ROWS rows)
                    and rows.problem.size <= TAIL_PROBLEMS * (1 + EXTRA_ROWS) and len(np.unique(rows.problem)) <= TAIL_PROBLEMS):
                self.finish_in_floats(out, rows)
                return
            F = self.frames(rows.q.T)
            d = self.errors(F, rows.target)
            r, ok = self.residual(d)
            rejected = _rejected(out.budget, rows.q, ok)  # avoid_collisions: in collision, restart elsewhere
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
                    diff = rows.q[plan.free_q][:, ok_rows] - seeds[rows.problem[ok_rows]][:, plan.free_q].T
                    diff[self.wrap] = _wrap(diff[self.wrap])
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
            stuck = self.step(out, rows, F, rows.target, r, cost)
            rows.iteration += 1
            if loaded == n and stuck.size and rows.problem.size < BATCH_ROWS:  # idle capacity: company
                alone = stuck[np.bincount(rows.problem, minlength=n)[rows.problem[stuck]] == 1]
                alone = alone[:(BATCH_ROWS - rows.problem.size) // EXTRA_ROWS]
                if alone.size:
                    company = rows.select(np.repeat(alone, EXTRA_ROWS))
                    company.q = self.restart(company.q, out.budget)
                    company.best_cost[:] = np.inf
                    rows, several = rows.extend(company), True
            if finished:
                rows = rows.select(~np.isin(rows.problem, np.concatenate(finished)))
            if loaded < n and rows.problem.size <= BATCH_ROWS - R:
                more = min(n, loaded + (BATCH_ROWS - rows.problem.size) // R)
                rows, loaded = rows.extend(self.load(out, target, seeds, loaded, more)), more

    def finish_in_floats(self, out: _Outcome, rows: _Rows) -> None:
        """Finish the last problems one by one in floats (a vectorised iteration costs more than
        a few rows' float iterations), each from its row with the lowest cost so far."""
        for j in _pick(rows.problem, rows.best_cost, np.arange(rows.problem.size)).tolist():
            p = int(rows.problem[j])
            (out.q[p], out.status[p], out.iterations[p], out.position_error[p], out.rotation_error[p],
             out.success[p]) = self.scalar(rows.q[:, j].tolist(), rows.target[:, j].tolist(), out.budget,
                                           int(rows.iteration[j]), int(rows.stall[j]), float(rows.best_cost[j]),
                                           float(rows.reference[j]), rows.best_q[:, j].tolist())
            out.unfinished[p] = False

    def step(self, out: _Outcome, rows: _Rows, F: Array, target: Array, r: Array, cost: Array) -> Array:
        """One damped step of every row (in place), coordinates held at a bound the gradient
        pushes outwards (their column zeroed), clamped into the bounds; stalled rows restart.
        Returns the restarted rows."""
        plan = self.plan
        if self.lm_rows:  # else every weight is zero
            J = self.jacobian(F, target)
            rw = r if self.unit_weights else r[self.lm_rows] * self.sqrt_weight[:, 0]
            x = rows.q[self.bounded_q]
            at_lo, at_hi = x <= self.bounded_lo, x >= self.bounded_hi
            if at_lo.any() or at_hi.any():
                g = np.einsum("acb,ab->cb", J[:, self.bounded_v], rw)
                J[:, self.bounded_v] *= ~((at_lo & (g > 0)) | (at_hi & (g < 0)))
            dx = _lm_step_arrays(J, rw, DAMPING_COST * cost + DAMPING_FLOOR)
            fq = plan.free_q
            if plan.scalar:
                x = rows.q[fq] + dx
            else:
                dv = np.zeros((self.model.n_v, dx.shape[1]))
                dv[plan.free_v] = dx
                x = integrate(self.model, rows.q.T, dv.T).T[fq]
            x = np.minimum(np.maximum(x, self.lo[:, None]), self.hi[:, None])
            x[self.wrap] = _wrap(x[self.wrap])
            rows.q[fq] = x
        stuck = np.flatnonzero(rows.stall >= STALL_ITERATIONS)
        if stuck.size:
            rows.q[:, stuck] = self.restart(rows.q[:, stuck], out.budget)
            rows.stall[stuck], rows.reference[stuck] = 0, np.inf
        return stuck
