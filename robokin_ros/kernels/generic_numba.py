"""Forward kinematics and frame Jacobians of any robot, the robot given as arrays: compiled once
per installation, they serve a robot new to the machine from its first call.

The per-robot generated kernels (:mod:`robokin_ros.kernels.fk_codegen`) fold a robot's constants
into straight-line code, so numba compiles them once per robot and machine (seconds for an arm,
a minute or more for a humanoid, in a separate process). The kernels here take the robot as the
arrays of its FK plan (:func:`robokin_ros.kernels.plan.fk_plan`: anchors, constant placements,
joint kinds, mimic multipliers and offsets; :class:`robokin_ros.kernels.generic_tier.RobotArrays`)
instead, so they compile once per installation (numba's cache beside this file; ``make venv``
compiles them, ``tools/bootstrap_ros_env.sh`` step 4c) and load in a fraction of a second
(:func:`robokin_ros.kernels.generic_tier.generic_kernels`, which also compiles them in a separate
process in the background where numba's cache lacks them; nothing compiles on a caller's thread).

They run the arithmetic of the numpy kernel (:func:`robokin_ros.kinematics.fk`'s
``_fk_components``) in its order: local rotation ``R_c + sin θ (R_c K) + (1 - cos θ) (R_c K²)``,
composed with the anchor's pose row by row; results agree with it to rounding of ``sin``/``cos``
(bit-identical on the bundled arms, measured). Jacobians are LOCAL_WORLD_ALIGNED (world axes, frame origin), columns in
``v`` order, a mimic joint's scaled into its source's column. Models whose links asked for are
moved by a floating or planar joint have no generic kernel (``RobotArrays.chain`` gives None for
them; the numpy recursions run until their generated kernel, if any, is loaded).

``fdata (n_links, 36)`` per link: ``R_c`` (9, row-major), ``R_c K`` (9), ``R_c K²`` (9),
``p_c`` (3), ``R_c u`` (3), mimic multiplier, offset, Jacobian scale; ``idata (n_links, 4)``:
anchor, kind (0 fixed or root, 1 revolute or continuous, 2 prismatic, 3 floating or planar),
q index, v column (-1: none); the root's row holds ``n_v`` and ``n_q`` in its last two.
Layouts: 0 ``4x4``, 1 ``3x4``, 2 ``position``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

# (an absolute import: the compiling process runs this file's text as a module of its own)
from robokin_ros.kernels.claims import fetch_add

#: Entries per link of ``fdata``.
FLOATS = 36
_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}


def _inline(function):
    return numba.njit(inline="always", **_JIT)(function)


@_inline
def _poses(fdata, idata, chain, q, W):
    """World poses ``W[i] = [R (9, row-major), p (3)]`` of the links ``chain`` (ascending, closed
    under anchors) at ``q``; W[0] is the root's (identity). Returns False when a joint value
    is not finite."""
    for k in range(12):
        W[0, k] = 0.0
    W[0, 0] = W[0, 4] = W[0, 8] = 1.0
    finite = True
    for i in chain:
        f, a, kind = fdata[i], idata[i, 0], idata[i, 1]
        Rl0, Rl1, Rl2, Rl3, Rl4, Rl5, Rl6, Rl7, Rl8 = f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]
        p0, p1, p2 = f[27], f[28], f[29]
        if kind == 1 or kind == 2:
            value = q[idata[i, 2]] * f[33] + f[34]
            finite = finite and math.isfinite(value)
            if kind == 1:
                s, c1 = math.sin(value), 1.0 - math.cos(value)
                Rl0, Rl1, Rl2 = Rl0 + f[9] * s + f[18] * c1, Rl1 + f[10] * s + f[19] * c1, Rl2 + f[11] * s + f[20] * c1
                Rl3, Rl4, Rl5 = Rl3 + f[12] * s + f[21] * c1, Rl4 + f[13] * s + f[22] * c1, Rl5 + f[14] * s + f[23] * c1
                Rl6, Rl7, Rl8 = Rl6 + f[15] * s + f[24] * c1, Rl7 + f[16] * s + f[25] * c1, Rl8 + f[17] * s + f[26] * c1
            else:
                p0, p1, p2 = p0 + f[30] * value, p1 + f[31] * value, p2 + f[32] * value
        A, w = W[a], W[i]
        for r in range(3):
            a0, a1, a2 = A[3 * r], A[3 * r + 1], A[3 * r + 2]
            w[3 * r] = a0 * Rl0 + a1 * Rl3 + a2 * Rl6
            w[3 * r + 1] = a0 * Rl1 + a1 * Rl4 + a2 * Rl7
            w[3 * r + 2] = a0 * Rl2 + a1 * Rl5 + a2 * Rl8
            w[9 + r] = a0 * p0 + a1 * p1 + a2 * p2 + A[9 + r]
    return finite


@_inline
def _emit(W, links, layout, o):
    """Write the poses ``W`` of ``links`` (output order) into the flat row ``o`` in ``layout``."""
    size = 16 if layout == 0 else 12 if layout == 1 else 3
    for n in range(links.shape[0]):
        w, base = W[links[n]], n * size
        if layout == 2:
            o[base], o[base + 1], o[base + 2] = w[9], w[10], w[11]
            continue
        for r in range(3):
            o[base + 4 * r], o[base + 4 * r + 1], o[base + 4 * r + 2] = w[3 * r], w[3 * r + 1], w[3 * r + 2]
            o[base + 4 * r + 3] = w[9 + r]
        if layout == 0:
            o[base + 12], o[base + 13], o[base + 14], o[base + 15] = 0.0, 0.0, 0.0, 1.0


@_inline
def _jacobian(fdata, idata, W, k, J):
    """LOCAL_WORLD_ALIGNED Jacobian ``J (6, n_v)`` of link ``k`` from the poses ``W`` of its
    anchor chain: per moving joint, its axis in world ``w = R_anchor R_c u`` and ``w × (p_k -
    p_joint)`` (revolute) or ``w`` (prismatic), scaled, added into its column."""
    for r in range(6):
        for c in range(J.shape[1]):
            J[r, c] = 0.0
    pk0, pk1, pk2 = W[k, 9], W[k, 10], W[k, 11]
    link = k
    while link > 0:
        kind, col, a = idata[link, 1], idata[link, 3], idata[link, 0]
        if (kind == 1 or kind == 2) and col >= 0:
            f, A, s = fdata[link], W[a], fdata[link, 35]
            u0, u1, u2 = f[30], f[31], f[32]
            w0 = (A[0] * u0 + A[1] * u1 + A[2] * u2) * s
            w1 = (A[3] * u0 + A[4] * u1 + A[5] * u2) * s
            w2 = (A[6] * u0 + A[7] * u1 + A[8] * u2) * s
            if kind == 2:
                J[0, col] += w0
                J[1, col] += w1
                J[2, col] += w2
            else:
                d0, d1, d2 = pk0 - W[link, 9], pk1 - W[link, 10], pk2 - W[link, 11]
                J[0, col] += w1 * d2 - w2 * d1
                J[1, col] += w2 * d0 - w0 * d2
                J[2, col] += w0 * d1 - w1 * d0
                J[3, col] += w0
                J[4, col] += w1
                J[5, col] += w2
        link = a


@_inline
def _frames_row(fdata, idata, W, frames, J, o):
    """The rows ``(n_frames, 10, width)`` of the poses + Jacobians kernel, flat in ``o``: per
    frame its pose in rows 0-3 / columns 0-3, its Jacobian in rows 4-9 / columns 0..n_v-1."""
    n_v = J.shape[1]
    width = max(4, n_v)
    for n in range(frames.shape[0]):
        k, base = frames[n], n * 10 * width
        for x in range(10 * width):
            o[base + x] = 0.0
        w = W[k]
        for r in range(3):
            o[base + r * width], o[base + r * width + 1], o[base + r * width + 2] = w[3 * r], w[3 * r + 1], w[3 * r + 2]
            o[base + r * width + 3] = w[9 + r]
        o[base + 3 * width + 3] = 1.0
        _jacobian(fdata, idata, W, k, J)
        for r in range(6):
            for c in range(n_v):
                o[base + (4 + r) * width + c] = J[r, c]


@_inline
def _finite(q):
    for x in q:
        if not math.isfinite(x):
            return False
    return True


@numba.njit(**_JIT)
def poses_single(fdata, idata, chain, links, layout, q, out):
    """Poses of ``links`` in ``layout`` at one configuration ``q (n_q,)`` into ``out`` (``(n, 4,
    4)``, ``(n, 3, 4)`` or ``(n, 3)``). Returns 0 (written), 1 (a non-finite input or
    joint value), 2 (a wrong size), as the generated single entries."""
    n = links.shape[0]
    if out.shape[0] != n or out.shape[-1] != (3 if layout == 2 else 4) or \
            out.size != n * (16 if layout == 0 else 12 if layout == 1 else 3):   # (n, 4, 4), (n, 3, 4), (n, 3)
        return 2
    o = out.reshape(out.size)
    if q.shape[0] != _coordinates(idata):
        return 2
    if not _finite(q):
        return 1
    W = np.empty((fdata.shape[0], 12))
    if not _poses(fdata, idata, chain, q, W):
        return 1
    _emit(W, links, layout, o)
    return 0


@numba.njit(**_JIT)
def poses_batch(fdata, idata, chain, links, layout, qb, out, claims):
    """:func:`poses_single` of the rows of ``qb (B, n_q)`` into ``out (B, size)``, every thread
    of the call at once, claiming rows by ``claims`` (:mod:`robokin_ros.kernels.claims`)."""
    B = out.shape[0]
    size = links.shape[0] * (16 if layout == 0 else 12 if layout == 1 else 3)
    if qb.shape[0] != B or qb.shape[1] != _coordinates(idata) or out.shape[1] != size:
        raise ValueError("poses_batch: bad shapes")
    W = np.empty((fdata.shape[0], 12))
    step, done = max(claims[1], 1), 0
    while True:
        start = fetch_add(claims, 0, step)
        if start >= B:
            break
        stop = min(start + step, B)
        for b in range(start, stop):
            _poses(fdata, idata, chain, qb[b], W)
            _emit(W, links, layout, out[b])
        done += stop - start
    fetch_add(claims, 2, done)
    while fetch_add(claims, 2, 0) < B:   # (the other threads' last rows)
        pass


@numba.njit(**_JIT)
def jacobian_single(fdata, idata, chain, k, q, out):
    """LOCAL_WORLD_ALIGNED Jacobian ``out (6, n_v)`` of link ``k`` at ``q``; status as
    :func:`poses_single`."""
    if out.shape[0] != 6 or out.shape[1] != _columns(idata):
        return 2
    if q.shape[0] != _coordinates(idata):
        return 2
    if not _finite(q):
        return 1
    W = np.empty((fdata.shape[0], 12))
    if not _poses(fdata, idata, chain, q, W):
        return 1
    _jacobian(fdata, idata, W, k, out)
    return 0


@numba.njit(**_JIT)
def frames_single(fdata, idata, chain, frames, q, out):
    """Poses + Jacobians of ``frames`` (see :func:`_frames_row`) at ``q`` into ``out (n_frames,
    10, max(4, n_v))``; status as :func:`poses_single`."""
    n_v = _columns(idata)
    width = max(4, n_v)
    if out.shape[0] != frames.shape[0] or out.shape[-1] != width or out.size != frames.shape[0] * 10 * width:
        return 2
    o = out.reshape(out.size)
    if q.shape[0] != _coordinates(idata):
        return 2
    if not _finite(q):
        return 1
    W = np.empty((fdata.shape[0], 12))
    if not _poses(fdata, idata, chain, q, W):
        return 1
    _frames_row(fdata, idata, W, frames, np.empty((6, n_v)), o)
    return 0


@numba.njit(**_JIT)
def frames_batch(fdata, idata, chain, frames, qb, out, claims):
    """:func:`frames_single` of the rows of ``qb (B, n_q)`` into ``out (B, size)``, claiming
    rows as :func:`poses_batch`."""
    B, n_v = out.shape[0], _columns(idata)
    if qb.shape[0] != B or qb.shape[1] != _coordinates(idata) or out.shape[1] != frames.shape[0] * 10 * max(4, n_v):
        raise ValueError("frames_batch: bad shapes")
    W, J = np.empty((fdata.shape[0], 12)), np.empty((6, n_v))
    step, done = max(claims[1], 1), 0
    while True:
        start = fetch_add(claims, 0, step)
        if start >= B:
            break
        stop = min(start + step, B)
        for b in range(start, stop):
            _poses(fdata, idata, chain, qb[b], W)
            _frames_row(fdata, idata, W, frames, J, out[b])
        done += stop - start
    fetch_add(claims, 2, done)
    while fetch_add(claims, 2, 0) < B:   # (the other threads' last rows)
        pass


@_inline
def _columns(idata):
    """``n_v``, kept in the root's row of ``idata`` (``idata[0, 2]``)."""
    return idata[0, 2]


@_inline
def _coordinates(idata):
    """``n_q``, kept in the root's row of ``idata`` (``idata[0, 3]``)."""
    return idata[0, 3]


def warm_up() -> None:
    """Call every kernel with each type its callers pass (:mod:`robokin_ros.kernels.generic_tier`;
    a two-link robot's arrays, ``q`` writeable or read-only): compiles them into numba's cache
    (in the compiling process), or loads them from it."""
    fdata, idata = np.zeros((2, FLOATS)), np.zeros((2, 4), np.int64)
    fdata[:, 0] = fdata[:, 4] = fdata[:, 8] = 1.0
    idata[0, 2:], idata[1] = (1, 1), (0, 1, 0, 0)
    chain, links = np.array([1], np.int64), np.array([0, 1], np.int64)
    q = np.zeros(1)
    frozen = q.view()
    frozen.flags.writeable = False
    qb = np.zeros((1, 1))
    qb.flags.writeable = False
    robot = (fdata, idata, chain)
    for x in (q, frozen):
        poses_single(*robot, links, 0, x, np.empty((2, 4, 4)))
        poses_single(*robot, links, 2, x, np.empty((2, 3)))
        jacobian_single(*robot, 1, x, np.empty((6, 1)))
        frames_single(*robot, links[1:], x, np.empty((1, 10, 4)))
    poses_batch(*robot, links, 0, qb, np.empty((1, 32)), np.array([0, 1, 0], np.int64))
    frames_batch(*robot, links[1:], qb, np.empty((1, 40)), np.array([0, 1, 0], np.int64))
