"""The compiled IK loop: the one Levenberg–Marquardt outer loop in numba, and its step for any
serial chain given as data.

:func:`loop` is the outer loop (iterations, best-so-far, stall detection, restarts along the
problem's stretch of the R2 sequence) of one problem; :func:`loop_rows` runs it over a batch's
rows. It is written once and calls its step, a compiled function passed in and inlined:

- here, :func:`iteration` and :func:`restart` on the chain as arrays
  (:func:`robokin_ros.ik.chain_arrays.chain_data`): :func:`run` and :func:`run_many` compile once
  per installation (numba's cache beside this file; ``make venv`` compiles them) and serve every
  robot from its first request while its own step compiles (loaded by :mod:`robokin_ros.ik.generic_loop_loading`);
- a robot's generated step (:mod:`robokin_ros.ik.compiled_loop`: its pose+Jacobian kernel and
  iteration in straight lines, constants folded in), whose generated module imports :func:`loop`
  and :func:`loop_rows` and passes its own ``iteration`` and ``restart``.

The chain's step computes what the generated one does (the same error twist through the one
SO(3) log, :func:`log_so3`; tolerance test, weights, bound holding, damped step through the
smaller normal system, clamping and wrapping) in another order (a loop over the chain's joints,
not a straight line), so their iterates agree to rounding (~1e-12), not bit for bit.
:meth:`CompiledLoop.run_problem <robokin_ros.ik.compiled_loop.CompiledLoop.run_problem>` and
:meth:`~robokin_ros.ik.compiled_loop.CompiledLoop.run_problems` drive both.

What the chain's step covers (:func:`~robokin_ros.ik.chain_arrays.chain_data` gives None
otherwise, and the numpy path serves until the generated step is loaded): one tip, no per-axis
tolerances (the step in world axes), every joint between the root and the tip fixed, revolute,
continuous or prismatic (mimic joints included), ``n_q == n_v``.
"""

from __future__ import annotations

import math
from math import atan2, cos, pi, sin, sqrt

import numpy as np

# (absolute imports: the compiling process runs this file's text as a module of its own)
from robokin_ros.ik import loop_layout
from robokin_ros.ik.lm import DAMPING_COST, DAMPING_FLOOR, STALL_ITERATIONS, STALL_PROGRESS
from robokin_ros.ik.loop_layout import (
    BEST_COST,
    CONVERGED,
    ITERATIONS,
    NEEDS_RESTART_INDEX,
    PAUSED,
    POSITION_ERROR,
    REFERENCE,
    RESTART,
    ROTATION_ERROR,
    SPENT,
    STALL,
)

try:
    import numba
except ImportError:   # (numba is optional: the loop never loads)
    numba = None


def _jit(function):
    return function if numba is None else numba.njit(cache=True, nogil=True, error_model="numpy")(function)


def _inline(function):
    """A helper of :func:`iteration`, inlined into it (passed arrays cost a reference count each
    call otherwise: measured, 2.5 against 0.4 µs an iteration of the generated loop)."""
    if numba is None:
        return function
    return numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")(function)


@_inline
def log_so3(r):
    """The rotation vector of one rotation matrix given as the tuple of its 9 entries row-major:
    :func:`robokin_ros.spatial.log_so3` in numba (the same formula: ``atan2`` of the sine and
    cosine, the axis read from the symmetric part near π), the one SO(3) log of the compiled
    loops (every generated step imports this very function,
    :func:`robokin_ros.ik.compiled_loop.shared_imports`)."""
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = r
    v0, v1, v2 = r21 - r12, r02 - r20, r10 - r01
    theta = atan2(0.5 * sqrt(v0 * v0 + v1 * v1 + v2 * v2), 0.5 * (r00 + r11 + r22 - 1.0))
    f = 0.5 + theta * theta / 12.0 if theta < 1e-6 else theta / (2.0 * sin(theta))
    if not theta > pi - 1e-3:
        return f * v0, f * v1, f * v2
    c = cos(theta)
    d = 1.0 - c
    b00, b11, b22 = (r00 - c) / d, (r11 - c) / d, (r22 - c) / d
    b01, b02, b12 = 0.5 * (r01 + r10) / d, 0.5 * (r02 + r20) / d, 0.5 * (r12 + r21) / d
    if b00 >= b11 and b00 >= b22:
        a0, a1, a2 = b00, b01, b02
    elif b11 >= b22:
        a0, a1, a2 = b01, b11, b12
    else:
        a0, a1, a2 = b02, b12, b22
    norm = sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    scale = (-theta if a0 * v0 + a1 * v1 + a2 * v2 < 0.0 else theta) / norm
    return a0 * scale, a1 * scale, a2 * scale


@_inline
def _chain_pose(q, data, T, W, O, A):
    """The tip's pose ``T (4, 4)`` at ``q``; per moving joint its axis ``W`` and origin ``O``
    ``(n_path, 3)`` in world axes (``A (3, 4)``: scratch)."""
    origins, kinds, axes, source, multiplier, offset = data[0], data[1], data[2], data[3], data[4], data[5]
    for r in range(4):
        for c in range(4):
            T[r, c] = 1.0 if r == c else 0.0
    for j in range(origins.shape[0]):
        X = origins[j]
        for r in range(3):
            t0, t1, t2 = T[r, 0], T[r, 1], T[r, 2]
            for c in range(4):
                A[r, c] = t0 * X[0, c] + t1 * X[1, c] + t2 * X[2, c]
            A[r, 3] += T[r, 3]
        for r in range(3):
            for c in range(4):
                T[r, c] = A[r, c]
        if kinds[j] == 0:
            continue
        x, y, z = axes[j, 0], axes[j, 1], axes[j, 2]
        for r in range(3):
            W[j, r] = T[r, 0] * x + T[r, 1] * y + T[r, 2] * z
            O[j, r] = T[r, 3]
        value = multiplier[j] * q[source[j]] + offset[j]
        if kinds[j] == 3:   # prismatic: along the axis
            for r in range(3):
                T[r, 3] += W[j, r] * value
            continue
        c, s = math.cos(value), math.sin(value)
        C = 1.0 - c
        R00, R01, R02 = c + x * x * C, x * y * C - z * s, x * z * C + y * s
        R10, R11, R12 = y * x * C + z * s, c + y * y * C, y * z * C - x * s
        R20, R21, R22 = z * x * C - y * s, z * y * C + x * s, c + z * z * C
        for r in range(3):
            t0, t1, t2 = T[r, 0], T[r, 1], T[r, 2]
            T[r, 0] = t0 * R00 + t1 * R10 + t2 * R20
            T[r, 1] = t0 * R01 + t1 * R11 + t2 * R21
            T[r, 2] = t0 * R02 + t1 * R12 + t2 * R22


@_inline
def _jacobian(data, T, W, O, J):
    """The tip's Jacobian ``J (6, n)`` (world axes, at the tip's origin; columns of the free
    coordinates) from :func:`_chain_pose`'s ``T, W, O``."""
    kinds, source, multiplier, column = data[1], data[3], data[4], data[6]
    for a in range(6):
        for col in range(J.shape[1]):
            J[a, col] = 0.0
    for j in range(kinds.shape[0]):
        if kinds[j] == 0 or column[source[j]] < 0:
            continue
        col, m = column[source[j]], multiplier[j]
        w0, w1, w2 = W[j, 0] * m, W[j, 1] * m, W[j, 2] * m
        if kinds[j] == 3:
            J[0, col] += w0
            J[1, col] += w1
            J[2, col] += w2
            continue
        d0, d1, d2 = T[0, 3] - O[j, 0], T[1, 3] - O[j, 1], T[2, 3] - O[j, 2]
        J[0, col] += w1 * d2 - w2 * d1
        J[1, col] += w2 * d0 - w0 * d2
        J[2, col] += w0 * d1 - w1 * d0
        J[3, col] += w0
        J[4, col] += w1
        J[5, col] += w2


@_inline
def _error_twist(T, t, d, E):
    """The error twist ``d (6,)`` in world axes, ``[p - p_t; log(R R_tᵀ)]`` (as the generated
    loop's; ``E (3, 3)``: scratch)."""
    for i in range(3):
        d[i] = T[i, 3] - t[9 + i]
        for j in range(3):
            E[i, j] = T[i, 0] * t[3 * j] + T[i, 1] * t[3 * j + 1] + T[i, 2] * t[3 * j + 2]
    d[3], d[4], d[5] = log_so3((E[0, 0], E[0, 1], E[0, 2], E[1, 0], E[1, 1], E[1, 2], E[2, 0], E[2, 1], E[2, 2]))


@_inline
def _hold(q, J, rw, data):
    """Zero the column of a coordinate at a bound the gradient ``Jᵀ r`` pushes outwards."""
    free_q, lower, upper = data[7], data[8], data[9]
    for col in range(free_q.shape[0]):
        x = q[free_q[col]]
        if x <= lower[col] or x >= upper[col]:
            g = 0.0
            for a in range(6):
                g += J[a, col] * rw[a]
            if (x <= lower[col] and g > 0.0) or (x >= upper[col] and g < 0.0):
                for a in range(6):
                    J[a, col] = 0.0


@_inline
def _cholesky_solve(G, b, x, v, n):
    """``x[:n]`` solving ``G[:n, :n] x = b[:n]`` (``G`` symmetric positive definite, its lower
    triangle given and overwritten by the factor; pivots floored at 1e-300 as the generated
    solve's; ``v``: scratch). (Indices, no slices: a view costs two atomic reference counts.)"""
    for i in range(n):
        for k in range(i):
            s = G[i, k]
            for c in range(k):
                s -= G[i, c] * G[k, c]
            G[i, k] = s * v[k]
        s = G[i, i]
        for c in range(i):
            s -= G[i, c] * G[i, c]
        v[i] = 1.0 / math.sqrt(s if s > 1e-300 else 1e-300)
    for i in range(n):
        s = b[i]
        for c in range(i):
            s -= G[i, c] * x[c]
        x[i] = s * v[i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for c in range(i + 1, n):
            s -= G[c, i] * x[c]
        x[i] = s * v[i]


@_inline
def _normal_matrix(J, damping, rows, G):
    """``G``: the lower triangle of ``J Jᵀ + λ I`` (``rows``) or ``Jᵀ J + λ I``."""
    m, n = J.shape
    size = m if rows else n
    for i in range(size):
        for k in range(i + 1):
            s = 0.0
            if rows:
                for c in range(n):
                    s += J[i, c] * J[k, c]
            else:
                for a in range(m):
                    s += J[a, i] * J[a, k]
            G[i, k] = s + damping if i == k else s


@_inline
def _damped_step(J, rw, damping, dx, scratch):
    """``dx`` solving ``(Jᵀ J + λ I) dx = -Jᵀ r`` through the smaller normal system (``G
    (size, size)`` for the larger of 6 and n, ``y, v`` of that size: of ``scratch``)."""
    G, y, v = scratch[9], scratch[10], scratch[11]
    n = J.shape[1]
    if 6 <= n:   # (J Jᵀ + λ I) y = r, dx = -Jᵀ y
        _normal_matrix(J, damping, True, G)
        _cholesky_solve(G, rw, y, v, 6)
        for col in range(n):
            s = 0.0
            for a in range(6):
                s += J[a, col] * y[a]
            dx[col] = -s
        return
    for i in range(n):
        s = 0.0
        for a in range(6):
            s += J[a, i] * rw[a]
        y[i] = s
    _normal_matrix(J, damping, False, G)
    _cholesky_solve(G, y, dx, v, n)
    for col in range(n):
        dx[col] = -dx[col]


@_inline
def _step(q, dx, qn, data):
    """``qn``: ``q`` moved by ``dx`` on the free coordinates, clamped into the bounds, wrapped."""
    free_q, lower, upper, wrap = data[7], data[8], data[9], data[10]
    for i in range(q.shape[0]):
        qn[i] = q[i]
    for col in range(free_q.shape[0]):
        z = q[free_q[col]] + dx[col]
        if not z >= lower[col] and lower[col] > -math.inf:   # (a NaN step lands on a finite bound)
            z = lower[col]
        if z > upper[col] and upper[col] < math.inf:
            z = upper[col]
        if wrap[col]:
            z = math.pi - (math.pi - z) % (2.0 * math.pi)
        qn[free_q[col]] = z


@_inline
def iteration(q, t, mu, qn, err, context):
    """One Levenberg–Marquardt iteration of the chain (``context``: its ``(data, scratch)``,
    :func:`unpack` and :func:`_scratch`), the step :func:`loop` calls: the cost with the next
    configuration in ``qn``, or -1.0 with the position and rotation errors in ``err`` when within
    tolerance."""
    data, scratch = context
    weights, tolerances = data[15], data[16]
    T, W, O, J, A, E, d, rw, dx = scratch[0], scratch[1], scratch[2], scratch[3], scratch[4], scratch[5], \
        scratch[6], scratch[7], scratch[8]
    _chain_pose(q, data, T, W, O, A)
    _error_twist(T, t, d, E)
    position, rotation = d[0] * d[0] + d[1] * d[1] + d[2] * d[2], d[3] * d[3] + d[4] * d[4] + d[5] * d[5]
    if position <= tolerances[0] and rotation <= tolerances[1]:
        err[0], err[1] = math.sqrt(position), math.sqrt(rotation)
        return -1.0
    _jacobian(data, T, W, O, J)
    cost = 0.0
    for a in range(6):
        rw[a] = weights[a] * d[a]
        cost += rw[a] * rw[a]
        for col in range(J.shape[1]):
            J[a, col] *= weights[a]
    cost *= 0.5
    _hold(q, J, rw, data)
    _damped_step(J, rw, mu * cost + DAMPING_FLOOR, dx, scratch)
    _step(q, dx, qn, data)
    return cost


@_inline
def restart(q, k, context):
    """``q`` moved to configuration ``k`` of the problem's R2 sequence (the restarted
    coordinates of the chain in ``context``), the restart :func:`loop` calls."""
    data = context[0]
    restart_q, restart_lo, restart_width, restart_step = data[11], data[12], data[13], data[14]
    for r in range(restart_q.shape[0]):
        q[restart_q[r]] = restart_lo[r] + (0.5 + k * restart_step[r]) % 1.0 * restart_width[r]


@_jit
def _scratch(n_path, n, n_q):
    """The arrays :func:`iteration` works in, for a chain of ``n_path`` joints, ``n`` free
    coordinates and ``n_q`` coordinates: ``T, W, O, J, A, E, d, rw, dx, G, y, v, qn, err``."""
    size = max(6, n)
    return (np.empty((4, 4)), np.empty((n_path, 3)), np.empty((n_path, 3)), np.empty((6, n)), np.empty((3, 4)),
            np.empty((3, 3)), np.empty(6), np.empty(6), np.empty(n), np.empty((size, size)), np.empty(size),
            np.empty(size), np.empty(n_q), np.empty(2))


@_inline
def unpack(fdata, idata):
    """The chain's arrays (:mod:`robokin_ros.ik.chain_arrays`'s ``data``) as views of the two
    arrays :func:`~robokin_ros.ik.chain_arrays.chain_data` packs them into (two arguments:
    numba's dispatch of a call costs ~1 µs per argument array)."""
    n_path, n, r, n_q = idata[0], idata[1], idata[2], idata[3]
    o = 4
    kinds, source = idata[o:o + n_path], idata[o + n_path:o + 2 * n_path]
    o += 2 * n_path
    column, free_q, wrap, restart_q = idata[o:o + n_q], idata[o + n_q:o + n_q + n], \
        idata[o + n_q + n:o + n_q + 2 * n], idata[o + n_q + 2 * n:o + n_q + 2 * n + r]
    origins = fdata[0:16 * n_path].reshape((n_path, 4, 4))
    f = 16 * n_path
    axes = fdata[f:f + 3 * n_path].reshape((n_path, 3))
    f += 3 * n_path
    multiplier, offset = fdata[f:f + n_path], fdata[f + n_path:f + 2 * n_path]
    f += 2 * n_path
    lower, upper = fdata[f:f + n], fdata[f + n:f + 2 * n]
    f += 2 * n
    restart_lo, restart_width, restart_step = fdata[f:f + r], fdata[f + r:f + 2 * r], fdata[f + 2 * r:f + 3 * r]
    f += 3 * r
    return (origins, kinds, axes, source, multiplier, offset, column, free_q, lower, upper, wrap, restart_q,
            restart_lo, restart_width, restart_step, fdata[f:f + 6], fdata[f + 6:f + 8])


@_inline
def loop(x, qn, chunk, max_iterations, iteration, restart, context):
    """The Levenberg–Marquardt outer loop of one problem, the only one compiled: iterations,
    best-so-far, stall detection and the restarts along the problem's stretch of the R2 sequence,
    for up to ``chunk`` iterations on the state ``x`` (:mod:`~robokin_ros.ik.loop_layout`; ``qn
    (n_q,)``: scratch for the next configuration). The step is a compiled function passed in
    (inlined, no call through a pointer): ``iteration(q, t, mu, qn, err, context)`` (the cost, or
    -1.0 within tolerance) and ``restart(q, k, context)`` — this module's :func:`iteration` and
    :func:`restart` on the chain as data, or a robot's generated ones
    (:mod:`robokin_ros.ik.compiled_loop`). Returns one of ``loop_layout``'s return values:
    to Python when the problem converges, spends its iterations, needs its first restart index,
    or after ``chunk`` iterations (Python checks the time budget: numba has no clock)."""
    n_q = qn.shape[0]
    n_t = x.shape[0] - 7 - 2 * n_q
    q, t = x[0:n_q], x[n_q:n_q + n_t]
    best_q, state = x[n_q + n_t:2 * n_q + n_t], x[2 * n_q + n_t:]
    err = state[POSITION_ERROR:ROTATION_ERROR + 1]
    it, stall, best_cost, reference, k = state[ITERATIONS], state[STALL], state[BEST_COST], state[REFERENCE], \
        state[RESTART]
    status = PAUSED
    for _ in range(chunk):
        if stall >= STALL_ITERATIONS:   # the next configuration of the R2 sequence
            if k < 0.0:
                status = NEEDS_RESTART_INDEX
                break
            restart(q, k, context)
            k += 1.0
            stall, reference = 0.0, math.inf
        cost = iteration(q, t, DAMPING_COST, qn, err, context)
        if cost < 0.0:
            status = CONVERGED
            break
        if cost < best_cost:
            best_cost = cost
            best_q[:] = q
        if cost < reference * (1.0 - STALL_PROGRESS):
            reference, stall = cost, 0.0
        else:
            stall += 1.0
        if it >= max_iterations:
            q[:] = best_q
            status = SPENT
            break
        q[:] = qn
        it += 1.0
    state[ITERATIONS], state[STALL], state[BEST_COST], state[REFERENCE], state[RESTART] = \
        it, stall, best_cost, reference, k
    return status


@_inline
def loop_rows(X, status, max_iterations, quota, qn, iteration, restart, context):
    """:func:`loop` over the rows of a batch's states ``X`` (statuses into ``status``), each row
    to its end, until ``quota`` iterations are spent (the batch's next time-budget check);
    returns the rows done. A row still iterating when the quota is spent is paused (``PAUSED``,
    its state kept in ``X``) and not counted: the next call goes on with it (a row with a huge
    iteration budget never holds the budget check off)."""
    spent = 0.0
    at = X.shape[1] - 7 + ITERATIONS
    for p in range(X.shape[0]):
        start = X[p, at]
        left = max(1, int(quota - spent))
        status[p] = loop(X[p], qn, left, max_iterations, iteration=iteration, restart=restart, context=context)
        spent += X[p, at] - start + 1.0
        if status[p] == PAUSED:
            return p
        if spent >= quota:
            return p + 1
    return X.shape[0]


@_jit
def run(x, chunk, max_iterations, fdata, idata):
    """:func:`loop` for the chain packed in ``fdata, idata``
    (:func:`~robokin_ros.ik.chain_arrays.chain_data`)."""
    data = unpack(fdata, idata)
    scratch = _scratch(data[0].shape[0], data[7].shape[0], data[6].shape[0])
    return loop(x, scratch[12], chunk, max_iterations, iteration=iteration, restart=restart,
                context=(data, scratch))


@_jit
def run_many(X, status, max_iterations, quota, fdata, idata):
    """:func:`loop_rows` for the chain packed in ``fdata, idata``."""
    data = unpack(fdata, idata)
    scratch = _scratch(data[0].shape[0], data[7].shape[0], data[6].shape[0])
    return loop_rows(X, status, max_iterations, quota, scratch[12], iteration=iteration, restart=restart,
                     context=(data, scratch))


#: The set-up and read-back of a batch's rows (:mod:`robokin_ros.ik.loop_layout`), compiled here too.
start_rows, finish_rows = _jit(loop_layout.start_rows), _jit(loop_layout.finish_rows)
