"""Inverse dynamics (RNEA and its gravity / nonlinear-effects cases), the joint-space inertia
matrix (CRBA) and forward dynamics of any robot, the robot given as arrays: compiled once per
installation, they serve a robot new to the machine from its first call.

The per-robot generated kernels (:mod:`robokin_ros.kernels.dynamics_source`) fold a robot's
constants into straight-line code, which numba compiles once per robot and machine (seconds for
an arm, minutes for a humanoid). These take the robot as the arrays of its dynamics tree
(:func:`robokin_ros.kernels.plan.dynamics_tree`, laid out by
:class:`robokin_ros.kernels.generic_dynamics_tier.DynamicsArrays`) and run the generated code's
algorithms in its order: Featherstone's recursions in body coordinates (every body's inertia and
motion subspace constant, only the joint transforms depend on ``q``), the composite inertias as
``(m, h = m c, I_o)`` shifted to the parent, forward dynamics as ``M a = tau - h`` by the
``Lᵀ D L`` factorisation that eliminates the last coordinate first (dense here: zero entries are
skipped). They compile with the generic FK kernels, by the one loader of
:mod:`robokin_ros.kernels.generic_tier` (numba's cache beside this file).

Models with a floating or planar joint have no generic dynamics kernel (their numpy recursions run).

``fdata (n_bodies, 63)`` per body: ``C_Rᵀ`` (9, row-major), ``K C_Rᵀ`` (9), ``K² C_Rᵀ`` (9)
(``K = [u]×``: the joint rotation ``E = Rot(u, θ)ᵀ C_Rᵀ = C_Rᵀ - sin θ K C_Rᵀ + (1 - cos θ) K² C_Rᵀ``),
``p_c`` (3), ``C_R u`` (3), ``u`` (3), mimic multiplier, offset, mass, centre of mass (3),
``I_c`` (9), ``h = m c`` (3), ``I_o`` (9, about the body origin); ``idata (n_bodies, 4)``:
parent body, kind (1 revolute or continuous, 2 prismatic), q index, v column; the root's row
holds ``n_v`` and ``n_q`` in its last two. ``g (3,)``: gravity, world (root) frame.
"""

from __future__ import annotations

import math

import numba
import numpy as np

# (an absolute import: the compiling process runs this file's text as a module of its own)
from robokin_ros.kernels.claims import fetch_add

#: Entries per body of ``fdata``.
FLOATS = 63
#: ``rnea_row`` modes: which of ``v`` and ``a`` are inputs (the others are zero).
WITH_V, WITH_A = 1, 2
_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}


def _inline(function):
    return numba.njit(inline="always", **_JIT)(function)


@_inline
def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@_inline
def _add(a, b):
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2])


@_inline
def _times(a, s):
    return (a[0] * s, a[1] * s, a[2] * s)


@_inline
def _dot(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@_inline
def _mv(M, o, x):
    """``M x`` for the 3x3 matrix at ``M[o:o + 9]`` (row-major)."""
    return (M[o] * x[0] + M[o + 1] * x[1] + M[o + 2] * x[2],
            M[o + 3] * x[0] + M[o + 4] * x[1] + M[o + 5] * x[2],
            M[o + 6] * x[0] + M[o + 7] * x[1] + M[o + 8] * x[2])


@_inline
def _mtv(M, o, x):
    """``Mᵀ x`` for the 3x3 matrix at ``M[o:o + 9]``."""
    return (M[o] * x[0] + M[o + 3] * x[1] + M[o + 6] * x[2],
            M[o + 1] * x[0] + M[o + 4] * x[1] + M[o + 7] * x[2],
            M[o + 2] * x[0] + M[o + 5] * x[1] + M[o + 8] * x[2])


@_inline
def _vec(A, o):
    return (A[o], A[o + 1], A[o + 2])


@_inline
def _put(A, o, x):
    A[o], A[o + 1], A[o + 2] = x[0], x[1], x[2]


@_inline
def _transforms(fdata, idata, q, X):
    """Per body ``X[b] = [E (9), r (3)]``: ``E`` rotates parent coordinates into the body's,
    ``r`` is the body origin in the parent's frame. False when a joint value is not finite."""
    finite = True
    for b in range(1, fdata.shape[0]):
        f, x = fdata[b], X[b]
        value = q[idata[b, 2]] * f[36] + f[37]
        finite = finite and math.isfinite(value)
        if idata[b, 1] == 1:
            s, c1 = math.sin(value), 1.0 - math.cos(value)
            for k in range(9):
                x[k] = f[k] - s * f[9 + k] + c1 * f[18 + k]
            for k in range(3):
                x[9 + k] = f[27 + k]
        else:
            for k in range(9):
                x[k] = f[k]
            for k in range(3):
                x[9 + k] = f[27 + k] + f[30 + k] * value
    return finite


@_inline
def _to_parent(X, b, f, n):
    """A force ``[f; n]`` of body ``b`` in its parent's coordinates."""
    fp = _mtv(X[b], 0, f)
    return fp, _add(_mtv(X[b], 0, n), _cross(_vec(X[b], 9), fp))


@_inline
def _rnea_row(fdata, idata, X, S, tau, g, v, a, mode):
    """RNEA at the transforms ``X`` into ``tau (n_v,)``, for velocities ``v`` and accelerations
    ``a`` (read when ``mode`` has :data:`WITH_V` / :data:`WITH_A`, else zero) under gravity
    ``g``. ``S (n_bodies, 18)``: scratch, per body its velocity, acceleration and force
    ``[linear; angular]``."""
    nb = fdata.shape[0]
    for k in range(18):
        S[0, k] = 0.0
    S[0, 6], S[0, 7], S[0, 8] = -g[0], -g[1], -g[2]
    for b in range(1, nb):
        f, x, s, P = fdata[b], X[b], S[b], S[idata[b, 0]]
        col, scale = idata[b, 3], f[36]
        qd = scale * v[col] if mode & WITH_V else 0.0
        qdd = scale * a[col] if mode & WITH_A else 0.0
        r, u = _vec(x, 9), _vec(f, 33)
        wp, awp = _vec(P, 3), _vec(P, 9)
        vl = _mv(x, 0, _add(_vec(P, 0), _cross(wp, r)))
        w = _mv(x, 0, wp)
        al = _mv(x, 0, _add(_vec(P, 6), _cross(awp, r)))
        aw = _mv(x, 0, awp)
        uqd, uqdd = _times(u, qd), _times(u, qdd)
        if idata[b, 1] == 1:                                  # S = [0; u]
            w = _add(w, uqd)
            al = _add(al, _cross(vl, uqd))
            aw = _add(_add(aw, uqdd), _cross(w, uqd))
        else:                                                 # S = [u; 0]
            vl = _add(vl, uqd)
            al = _add(_add(al, uqdd), _cross(w, uqd))
        c, m = _vec(f, 39), f[38]                             # I a + v ×* I v about the body origin
        v_com = _add(vl, _cross(w, c))
        force = _times(_add(_add(al, _cross(aw, c)), _cross(w, v_com)), m)
        moment = _add(_add(_cross(c, force), _mv(f, 42, aw)), _cross(w, _mv(f, 42, w)))
        _put(s, 0, vl)
        _put(s, 3, w)
        _put(s, 6, al)
        _put(s, 9, aw)
        _put(s, 12, force)
        _put(s, 15, moment)
    for k in range(tau.shape[0]):
        tau[k] = 0.0
    for b in range(nb - 1, 0, -1):
        f, s, p = fdata[b], S[b], idata[b, 0]
        force, moment = _vec(s, 12), _vec(s, 15)
        tau[idata[b, 3]] += f[36] * _dot(_vec(f, 33), moment if idata[b, 1] == 1 else force)
        if p > 0:
            fp, n_p = _to_parent(X, b, force, moment)
            _put(S[p], 12, _add(_vec(S[p], 12), fp))
            _put(S[p], 15, _add(_vec(S[p], 15), n_p))


@_inline
def _composites(fdata, idata, X, IC):
    """Composite inertias ``IC[b] = [m, h (3), I_o (9)]`` of every body's subtree, body frame."""
    nb = fdata.shape[0]
    for b in range(1, nb):
        IC[b, 0] = fdata[b, 38]
        for k in range(3):
            IC[b, 1 + k] = fdata[b, 51 + k]
        for k in range(9):
            IC[b, 4 + k] = fdata[b, 54 + k]
    for b in range(nb - 1, 0, -1):
        p = idata[b, 0]
        if p == 0:
            continue
        x, c, P = X[b], IC[b], IC[p]
        m, r = c[0], _vec(x, 9)
        hh = _mtv(x, 0, _vec(c, 1))
        two = 2.0 * _dot(hh, r) + m * _dot(r, r)
        for i in range(3):
            RI = _mtv(c, 4, (x[i], x[3 + i], x[6 + i]))        # row i of R I (R = Eᵀ; I symmetric)
            for k in range(3):
                value = RI[0] * x[k] + RI[1] * x[3 + k] + RI[2] * x[6 + k]   # (R I Rᵀ)[i, k]
                if i == k:
                    value += two
                P[4 + 3 * i + k] += value - (hh[i] * r[k] + r[i] * hh[k] + m * r[i] * r[k])
        P[0] += m
        for k in range(3):
            P[1 + k] += hh[k] + m * r[k]


@_inline
def _crba_row(fdata, idata, X, IC, M):
    """CRBA at the transforms ``X`` into ``M (n_v, n_v)`` (both triangles)."""
    n = M.shape[0]
    for i in range(n):
        for j in range(n):
            M[i, j] = 0.0
    _composites(fdata, idata, X, IC)
    for i in range(1, fdata.shape[0]):
        c, u, m = IC[i], _vec(fdata[i], 33), IC[i, 0]
        h = _vec(c, 1)
        if idata[i, 1] == 1:                                  # I [0; u] = [-h × u; I_o u]
            f, moment = _times(_cross(h, u), -1.0), _mv(c, 4, u)
        else:                                                 # I [u; 0] = [m u; h × u]
            f, moment = _times(u, m), _cross(h, u)
        ci, j = idata[i, 3], i
        while True:
            cj = idata[j, 3]
            value = fdata[i, 36] * fdata[j, 36] * _dot(_vec(fdata[j], 33), moment if idata[j, 1] == 1 else f)
            if j != i and ci == cj:                           # two mimic columns of one coordinate
                value *= 2.0
            M[max(ci, cj), min(ci, cj)] += value
            if idata[j, 0] == 0:
                break
            f, moment = _to_parent(X, j, f, moment)
            j = idata[j, 0]
    for i in range(n):
        for j in range(i):
            M[j, i] = M[i, j]


@_inline
def _solve(M, b, inv_d, x):
    """``x`` solving ``M x = b`` by ``M = Lᵀ D L``, the last coordinate eliminated first (L
    overwrites M's lower triangle); a zero pivot gives inf, as numpy's division."""
    n = b.shape[0]
    for k in range(n - 1, -1, -1):
        inv_d[k] = 1.0 / M[k, k]
        for i in range(k - 1, -1, -1):
            if M[k, i] == 0.0:
                continue
            a = M[k, i] * inv_d[k]
            for j in range(i + 1):
                M[i, j] -= a * M[k, j]
            M[k, i] = a
    for i in range(n):
        x[i] = b[i]
    for i in range(n - 1, -1, -1):                            # Lᵀ y = b
        for j in range(i):
            x[j] -= M[i, j] * x[i]
    for i in range(n):                                        # D z = y
        x[i] *= inv_d[i]
    for i in range(n):                                        # L x = z
        for j in range(i):
            x[i] -= M[i, j] * x[j]


@_inline
def _finite(x):
    for value in x:
        if not math.isfinite(value):
            return False
    return True


@_inline
def _sizes_ok(idata, q, out, out_size):
    """Whether ``q`` has ``n_q`` entries and ``out`` ``out_size``."""
    return q.shape[0] == idata[0, 3] and out.size == out_size


@numba.njit(**_JIT)
def rnea_single(fdata, idata, g, q, v, a, out):
    """``tau = rnea(q, v, a)`` into ``out (n_v,)``. Returns 0 (written), 1 (a non-finite input
    or joint value), 2 (a wrong size), as the generated single entries."""
    n_v = idata[0, 2]
    if not (_sizes_ok(idata, q, out, n_v) and v.shape[0] == n_v and a.shape[0] == n_v):
        return 2
    if not (_finite(q) and _finite(v) and _finite(a)):
        return 1
    X = np.empty((fdata.shape[0], 12))
    if not _transforms(fdata, idata, q, X):
        return 1
    _rnea_row(fdata, idata, X, np.empty((fdata.shape[0], 18)), out.reshape(n_v), g=g, v=v, a=a, mode=WITH_V | WITH_A)
    return 0


@numba.njit(**_JIT)
def nonlinear_single(fdata, idata, g, q, v, out):
    """``h = rnea(q, v, 0)`` into ``out (n_v,)``; status as :func:`rnea_single`."""
    n_v = idata[0, 2]
    if not (_sizes_ok(idata, q, out, n_v) and v.shape[0] == n_v):
        return 2
    if not (_finite(q) and _finite(v)):
        return 1
    X = np.empty((fdata.shape[0], 12))
    if not _transforms(fdata, idata, q, X):
        return 1
    _rnea_row(fdata, idata, X, np.empty((fdata.shape[0], 18)), out.reshape(n_v), g=g, v=v, a=v, mode=WITH_V)
    return 0


@numba.njit(**_JIT)
def gravity_single(fdata, idata, g, q, out):
    """``g(q) = rnea(q, 0, 0)`` into ``out (n_v,)``; status as :func:`rnea_single`."""
    n_v = idata[0, 2]
    if not _sizes_ok(idata, q, out, n_v):
        return 2
    if not _finite(q):
        return 1
    X = np.empty((fdata.shape[0], 12))
    if not _transforms(fdata, idata, q, X):
        return 1
    _rnea_row(fdata, idata, X, np.empty((fdata.shape[0], 18)), out.reshape(n_v), g=g, v=q, a=q, mode=0)
    return 0


@numba.njit(**_JIT)
def crba_single(fdata, idata, q, out):
    """``M(q)`` into ``out (n_v, n_v)``; status as :func:`rnea_single`."""
    n_v = idata[0, 2]
    if not _sizes_ok(idata, q, out, n_v * n_v):
        return 2
    if not _finite(q):
        return 1
    X = np.empty((fdata.shape[0], 12))
    if not _transforms(fdata, idata, q, X):
        return 1
    _crba_row(fdata, idata, X, np.empty((fdata.shape[0], 13)), out.reshape((n_v, n_v)))
    return 0


@_inline
def _aba_row(fdata, idata, X, S, work, out, g, v, tau):
    """Forward dynamics ``a`` solving ``M a = tau - h`` into ``out (n_v,)``. ``S (n_bodies,
    18)`` and ``work (n_v + 3, max(n_v, 1))`` (rows: M, h, inverse pivots, bias): scratch."""
    n_v = out.shape[0]
    M, h, inv_d, bias = work[:n_v, :n_v], work[n_v, :n_v], work[n_v + 1, :n_v], work[n_v + 2, :n_v]
    _rnea_row(fdata, idata, X, S, h, g=g, v=v, a=v, mode=WITH_V)
    _crba_row(fdata, idata, X, S, M)
    for k in range(n_v):
        bias[k] = tau[k] - h[k]
    _solve(M, bias, inv_d, out)


@numba.njit(**_JIT)
def aba_single(fdata, idata, g, q, v, tau, out):
    """Accelerations ``a`` solving ``M(q) a = tau - h(q, v)`` into ``out (n_v,)``; status as
    :func:`rnea_single`."""
    n_v = idata[0, 2]
    if not (_sizes_ok(idata, q, out, n_v) and v.shape[0] == n_v and tau.shape[0] == n_v):
        return 2
    if not (_finite(q) and _finite(v) and _finite(tau)):
        return 1
    X = np.empty((fdata.shape[0], 12))
    if not _transforms(fdata, idata, q, X):
        return 1
    _aba_row(fdata, idata, X, np.empty((fdata.shape[0], 18)), np.empty((n_v + 3, max(n_v, 1))), out.reshape(n_v),
             g=g, v=v, tau=tau)
    return 0


@_inline
def _claimed_rows(claims, B, step):
    """The next ``(start, stop)`` rows this thread claims (``start >= B``: none left)."""
    start = fetch_add(claims, 0, step)
    return start, min(start + step, B)


@_inline
def _finish(claims, B, done):
    fetch_add(claims, 2, done)
    while fetch_add(claims, 2, 0) < B:   # (the other threads' last rows)
        pass


@numba.njit(**_JIT)
def rnea_batch(fdata, idata, g, qb, vb, ab, out, claims):
    """:func:`rnea_single` of the rows of ``qb (B, n_q)``, ``vb``, ``ab (B, n_v)`` into ``out
    (B, n_v)``, every thread of the call at once, claiming rows by ``claims``
    (:mod:`robokin_ros.kernels.claims`); the caller checked the inputs."""
    B, nb = out.shape[0], fdata.shape[0]
    X, S = np.empty((nb, 12)), np.empty((nb, 18))
    step, done = max(claims[1], 1), 0
    while True:
        start, stop = _claimed_rows(claims, B, step)
        if start >= B:
            break
        for b in range(start, stop):
            _transforms(fdata, idata, qb[b], X)
            _rnea_row(fdata, idata, X, S, out[b], g=g, v=vb[b], a=ab[b], mode=WITH_V | WITH_A)
        done += stop - start
    _finish(claims, B, done)


@numba.njit(**_JIT)
def nonlinear_batch(fdata, idata, g, qb, vb, out, claims):
    """:func:`nonlinear_single` of rows, as :func:`rnea_batch`."""
    B, nb = out.shape[0], fdata.shape[0]
    X, S = np.empty((nb, 12)), np.empty((nb, 18))
    step, done = max(claims[1], 1), 0
    while True:
        start, stop = _claimed_rows(claims, B, step)
        if start >= B:
            break
        for b in range(start, stop):
            _transforms(fdata, idata, qb[b], X)
            _rnea_row(fdata, idata, X, S, out[b], g=g, v=vb[b], a=vb[b], mode=WITH_V)
        done += stop - start
    _finish(claims, B, done)


@numba.njit(**_JIT)
def gravity_batch(fdata, idata, g, qb, out, claims):
    """:func:`gravity_single` of rows, as :func:`rnea_batch`."""
    B, nb = out.shape[0], fdata.shape[0]
    X, S = np.empty((nb, 12)), np.empty((nb, 18))
    step, done = max(claims[1], 1), 0
    while True:
        start, stop = _claimed_rows(claims, B, step)
        if start >= B:
            break
        for b in range(start, stop):
            _transforms(fdata, idata, qb[b], X)
            _rnea_row(fdata, idata, X, S, out[b], g=g, v=qb[b], a=qb[b], mode=0)
        done += stop - start
    _finish(claims, B, done)


@numba.njit(**_JIT)
def crba_batch(fdata, idata, qb, out, claims):
    """:func:`crba_single` of rows into ``out (B, n_v * n_v)``, as :func:`rnea_batch`."""
    B, nb, n_v = out.shape[0], fdata.shape[0], idata[0, 2]
    X, IC = np.empty((nb, 12)), np.empty((nb, 13))
    step, done = max(claims[1], 1), 0
    while True:
        start, stop = _claimed_rows(claims, B, step)
        if start >= B:
            break
        for b in range(start, stop):
            _transforms(fdata, idata, qb[b], X)
            _crba_row(fdata, idata, X, IC, out[b].reshape((n_v, n_v)))
        done += stop - start
    _finish(claims, B, done)


@numba.njit(**_JIT)
def aba_batch(fdata, idata, g, qb, vb, taub, out, claims):
    """:func:`aba_single` of rows, as :func:`rnea_batch`."""
    B, nb, n_v = out.shape[0], fdata.shape[0], idata[0, 2]
    X, S, work = np.empty((nb, 12)), np.empty((nb, 18)), np.empty((n_v + 3, max(n_v, 1)))
    step, done = max(claims[1], 1), 0
    while True:
        start, stop = _claimed_rows(claims, B, step)
        if start >= B:
            break
        for b in range(start, stop):
            _transforms(fdata, idata, qb[b], X)
            _aba_row(fdata, idata, X, S, work, out[b], g=g, v=vb[b], tau=taub[b])
        done += stop - start
    _finish(claims, B, done)


def warm_up() -> None:
    """Call every kernel with each type its callers pass (a one-joint robot's arrays; single
    entries' inputs writeable or read-only, batch inputs read-only): compiles them into numba's
    cache (in the compiling process), or loads them from it."""
    fdata, idata = np.zeros((2, FLOATS)), np.zeros((2, 4), np.int64)
    fdata[1, 0] = fdata[1, 4] = fdata[1, 8] = fdata[1, 35] = fdata[1, 36] = fdata[1, 38] = 1.0
    fdata[1, 42] = fdata[1, 46] = fdata[1, 50] = fdata[1, 54] = fdata[1, 58] = fdata[1, 62] = 1.0
    idata[0, 2:], idata[1] = (1, 1), (0, 1, 0, 0)
    g = np.array([0.0, 0.0, -9.81])
    robot = (fdata, idata)
    for frozen in (False, True):
        x = np.zeros(1)
        if frozen:
            x = x.view()
            x.flags.writeable = False
        rnea_single(*robot, g, x, x, x, np.empty(1))
        nonlinear_single(*robot, g, x, x, np.empty(1))
        gravity_single(*robot, g, x, np.empty(1))
        crba_single(*robot, x, np.empty((1, 1)))
        aba_single(*robot, g, x, x, x, np.empty(1))
    qb = np.zeros((1, 1))
    qb.flags.writeable = False

    def claims():
        return np.array([0, 1, 0], np.int64)

    rnea_batch(*robot, g, qb, qb, qb, np.empty((1, 1)), claims())
    nonlinear_batch(*robot, g, qb, qb, np.empty((1, 1)), claims())
    gravity_batch(*robot, g, qb, np.empty((1, 1)), claims())
    crba_batch(*robot, qb, np.empty((1, 1)), claims())
    aba_batch(*robot, g, qb, qb, qb, np.empty((1, 1)), claims())
