"""The Levenberg–Marquardt step of IK: its constants, the tips' error twists and the damped
steps on stacked arrays (the numpy path), and the straight-line sources of the generated step
(:mod:`robokin_ros.ik.step_source`).

Notation as in :mod:`robokin_ros.ik.solve`: a tip's error twist [linear; angular] is
``d = [R_tᵀ (p - p_t); log(R_tᵀ R)]`` in the target's axes, or ``[p - p_t; log(R R_tᵀ)]`` in the
world's when every axis counts alike. Stacked arrays are component-first, batch-last
(``(n_tips, 12, B)`` poses: rotation row-major, then position).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..spatial import log_so3

Array = NDArray[np.float64]

#: Levenberg–Marquardt damping ``λ = DAMPING_COST · ½‖r‖² + DAMPING_FLOOR`` (Sugihara 2011).
DAMPING_COST, DAMPING_FLOOR = 0.1, 1e-6

#: Factor on the position rows [m] against the rotation rows [rad] in the least squares (a 1 cm
#: error weighs as 0.03 rad). Tolerances are unaffected. Measured on the benchmark arms: 3 needs
#: ~10 % fewer iterations and restarts than 1; 0.5 needs more.
POSITION_WEIGHT = 3.0

#: A row whose cost has not dropped by ``STALL_PROGRESS`` (relative) for ``STALL_ITERATIONS``
#: iterations restarts elsewhere (measured on the benchmark arms: 3 needs fewer iterations in
#: all than 5 or 7; a stalled row rarely recovers).
STALL_ITERATIONS, STALL_PROGRESS = 3, 0.1


def twist_lines(k: int, w: int, world: bool) -> list:
    """Lines computing tip ``k``'s error twist ``d{k}_0 .. d{k}_5`` from its pose in ``F`` and
    its target ``b{k}_ij`` (rotation), ``u{k}_i`` (position): world axes ``[p - p_t; log(R R_tᵀ)]``,
    else target axes ``[R_tᵀ (p - p_t); log(R_tᵀ R)]``; the log is the compiled
    :func:`robokin_ros.ik.generic_loop.log_so3` (imported by the generated module)."""
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
    lines.append(f"    d{k}_3, d{k}_4, d{k}_5 = log_so3(({', '.join(e for row in E for e in row)}))")
    return lines


def cholesky_lines(size: int, entry, rhs: list, floats: bool) -> list:
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


def damped_step_lines(m: int, n: int) -> list:
    """Lines solving ``(Jᵀ J + λ I) dx = -Jᵀ r`` for ``J`` given as ``j{a}_{c}`` (``m`` rows,
    ``n`` columns), ``r`` as ``rw{a}`` and ``λ`` as ``damping``, leaving ``dx0, dx1, ...``:
    through the smaller normal system (``(J Jᵀ + λ I) y = r, dx = -Jᵀ y`` when ``m <= n``)."""
    if m <= n:
        entry = lambda i, k: " + ".join(f"j{i}_{c} * j{k}_{c}" for c in range(n)) + (" + damping" if i == k else "")  # noqa: E731
        lines = cholesky_lines(m, entry, [f"rw{i}" for i in range(m)], True)
        return lines + [f"    dx{c} = -(" + " + ".join(f"j{a}_{c} * x{a}" for a in range(m)) + ")" for c in range(n)]
    entry = lambda i, k: " + ".join(f"j{a}_{i} * j{a}_{k}" for a in range(m)) + (" + damping" if i == k else "")  # noqa: E731
    lines = cholesky_lines(n, entry, [" + ".join(f"j{a}_{i} * rw{a}" for a in range(m)) for i in range(n)], True)
    return lines + [f"    dx{c} = -x{c}" for c in range(n)]


def solve_source(size: int) -> str:
    """Straight-line Cholesky solve ``G x = b`` for ``G (size, size, B)``, ``b (size, B)``,
    component-first: every operation covers the batch."""
    entry = lambda i, k: f"G[{i}, {k}]"  # noqa: E731
    lines = ["def cholesky(G, b):"] + cholesky_lines(size, entry, [f"b[{i}]" for i in range(size)], False)
    return "\n".join(lines + [f"    return [{', '.join(f'x{i}' for i in range(size))}]"]) + "\n"


def normal_solve(size: int):
    """The generated :func:`solve_source` of ``size`` (each solver holds the one of its normal
    system's size: :func:`lm_step_arrays` takes it)."""
    namespace: dict = {"sqrt": np.sqrt, "maximum": np.maximum}
    exec(compile(solve_source(size), f"<robokin ik solve {size}>", "exec"), namespace)  # noqa: S102
    return namespace["cholesky"]


def errors_stacked(P: Array, target: Array, world: bool) -> Array:
    """The error twist (see :func:`twist_lines`) of every tip and row: ``d (n_tips, 6, B)``
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
    w = np.moveaxis(log_so3(np.moveaxis(E, -1, 1)), 1, -1)     # (n_tips, 3, B)
    return np.concatenate([e, w], axis=1)


def lm_step_arrays(J: Array, r: Array, damping: Array, solve) -> Array:
    """``dx (n, B)`` solving ``(Jᵀ J + λ I) dx = -Jᵀ r`` for ``J (m, n, B)``, ``r (m, B)``,
    ``λ = damping (B,)``, through the smaller normal system (see :func:`damped_step_lines`),
    solved by ``solve``, the :func:`normal_solve` of ``min(m, n)``."""
    m, n = J.shape[:2]
    if m <= n:
        G = np.einsum("acs,bcs->abs", J, J)
        G[range(m), range(m)] += damping
        return -np.einsum("acs,as->cs", J, _solved(G, r, solve))
    G = np.einsum("acs,ads->cds", J, J)
    G[range(n), range(n)] += damping
    return -_solved(G, np.einsum("acs,as->cs", J, r), solve)


#: Rows up to which a damped step's normal system is solved by LAPACK (one call) rather than by
#: the straight-line solve over ``(B,)`` arrays (~30 numpy calls; measured for one row: 110 µs
#: against 15 µs).
FEW_ROWS = 8


def _solved(G: Array, b: Array, solve) -> Array:
    """``x (size, B)`` solving ``G x = b`` for ``G (size, size, B)`` (symmetric positive definite
    but for rounding or overflow), ``b (size, B)``: by LAPACK for a few rows, else by ``solve``
    (the straight-line Cholesky solve, which also takes what LAPACK refuses)."""
    if G.shape[-1] <= FEW_ROWS and np.isfinite(G).all():
        try:
            return np.linalg.solve(np.moveaxis(G, -1, 0), np.moveaxis(b, -1, 0)[..., None])[..., 0].T
        except np.linalg.LinAlgError:
            pass
    return np.array(solve(G, b))
