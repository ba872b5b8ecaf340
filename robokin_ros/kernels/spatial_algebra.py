"""Spatial algebra for the dynamics kernels, [linear; angular], component-first and batch-last.

Every quantity is expressed in world axes about the world origin. A 3-vector is an array
``(3, ...)`` (components first, any trailing shape, the batch last), a 3x3 rotation ``(3, 3, ...)``.

- Motion (twist, spatial velocity/acceleration) ``m = [v; ω]``: ``v`` is the velocity of the body
  point passing through the world origin, ``ω`` the angular velocity.
- Force (wrench) ``f = [f; n]``: ``n`` is the moment about the world origin.
- Motion cross product ``m1 × m2 = [ω1 × v2 + v1 × ω2; ω1 × ω2]``; force cross product
  ``m ×* f = [ω × f; v × f + ω × n]`` (Featherstone's operators with the blocks swapped).
- Spatial inertia of a body of mass ``m``, centre of mass ``c`` and rotational inertia ``I_c``
  about ``c``: ``I = [[m 1, -[h]×], [[h]×, I_o]]`` with first moment ``h = m c`` and rotational
  inertia about the origin ``I_o = I_c + m ([c]×)ᵀ [c]×``. It is stored as the 10 numbers
  ``(m, h (3), I_o (6))``, symmetric 3x3 matrices as ``(xx, yy, zz, xy, xz, yz)``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

#: Row / column of the six stored entries of a symmetric 3x3 matrix.
SYM_ROWS = np.array([0, 1, 2, 0, 0, 1])
SYM_COLS = np.array([0, 1, 2, 1, 2, 2])
#: ``SYM_INDEX[i, j]``: which stored entry holds element ``(i, j)``.
SYM_INDEX = np.array([[0, 3, 4], [3, 1, 5], [4, 5, 2]])


def cross(a: Array, b: Array) -> Array:
    """``a × b`` of 3-vectors ``(3, ...)``."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    for i, j, k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        np.multiply(a[j], b[k], out=out[i])
        out[i] -= a[k] * b[j]
    return out


def rotate(R: Array, x: Array) -> Array:
    """``R x`` for rotations ``(3, 3, ...)`` and vectors ``(3, ...)``."""
    return R[:, 0] * x[0] + R[:, 1] * x[1] + R[:, 2] * x[2]


def sym_apply(S: Array, x: Array) -> Array:
    """``S x`` for a symmetric matrix stored as ``(6, ...)`` and a vector ``(3, ...)``."""
    out = S[:3] * x
    out[0] += S[3] * x[1] + S[4] * x[2]
    out[1] += S[3] * x[0] + S[5] * x[2]
    out[2] += S[4] * x[0] + S[5] * x[1]
    return out


def motion_cross(m1: Array, m2: Array) -> Array:
    """``m1 × m2`` of motions ``(6, ...)``."""
    return np.concatenate([cross(m1[3:], m2[:3]) + cross(m1[:3], m2[3:]), cross(m1[3:], m2[3:])])


def force_cross(m: Array, f: Array) -> Array:
    """``m ×* f`` of a motion and a force ``(6, ...)``."""
    return np.concatenate([cross(m[3:], f[:3]), cross(m[:3], f[:3]) + cross(m[3:], f[3:])])


def apply_inertia(mass: Array, h: Array, I_o: Array, m: Array) -> Array:
    """Force ``I m`` of inertias ``(mass (...), h (3, ...), I_o (6, ...))`` and motions ``(6, ...)``."""
    out = np.empty((6,) + np.broadcast_shapes(h.shape[1:], m.shape[1:]))
    np.multiply(mass, m[:3], out=out[:3])
    out[:3] -= cross(h, m[3:])
    np.add(cross(h, m[:3]), sym_apply(I_o, m[3:]), out=out[3:])
    return out


def world_inertia(mass: Array, com: Array, I_com: Array, R: Array, p: Array) -> tuple[Array, Array]:
    """First moment and rotational inertia about the world origin of bodies placed at ``(R, p)``.

    Args:
        mass: ``(n, 1)`` [kg].
        com: ``(3, n, 1)`` [m], centre of mass in the body frame.
        I_com: ``(3, 3, n, 1)`` [kg m²], about the centre of mass, body axes.
        R: ``(3, 3, n, B)`` world rotations; p: ``(3, n, B)`` world positions [m].

    Returns:
        ``h (3, n, B)`` [kg m] and ``I_o (6, n, B)`` [kg m²].
    """
    c = rotate(R, com) + p
    RI = R[:, 0, None] * I_com[0]                                                        # (R I_c)[i, j]
    RI += R[:, 1, None] * I_com[1]
    RI += R[:, 2, None] * I_com[2]
    RIR = RI[:, 0, None] * R[None, :, 0]                                                 # R I_c Rᵀ
    RIR += RI[:, 1, None] * R[None, :, 1]
    RIR += RI[:, 2, None] * R[None, :, 2]
    I_o = RIR[SYM_ROWS, SYM_COLS]
    h = mass * c
    hc = h[SYM_ROWS] * c[SYM_COLS]                                                       # m c cᵀ
    trace = hc[0] + hc[1] + hc[2]
    I_o -= hc
    I_o[:3] += trace
    return h, I_o


def inertia_matrix(mass: Array, h: Array, I_o: Array) -> Array:
    """Full ``(6, 6, ...)`` spatial inertia of the 10-number form (``mass`` broadcast to ``h[0]``)."""
    out = np.zeros((6, 6) + h.shape[1:])
    for k in range(3):
        out[k, k] = mass
    out[0, 4], out[0, 5], out[1, 5] = h[2], -h[1], h[0]       # -[h]x (upper right)
    out[1, 3], out[2, 3], out[2, 4] = -h[2], h[1], -h[0]
    out[3:, :3] = np.swapaxes(out[:3, 3:], 0, 1)               # [h]x = (-[h]x)ᵀ
    out[3:, 3:] = I_o[SYM_INDEX]
    return out


def merge_inertials(masses: Array, coms: Array, inertias: Array) -> tuple[float, Array, Array]:
    """One rigid body from several expressed in a common frame.

    Args:
        masses: ``(k,)`` [kg]; coms: ``(k, 3)`` [m]; inertias: ``(k, 3, 3)`` about each COM [kg m²].

    Returns:
        total mass, centre of mass ``(3,)`` (the origin when massless) and inertia about it ``(3, 3)``.
    """
    m = float(masses.sum())
    c = (masses @ coms) / m if m > 0 else np.zeros(3)
    d = coms - c
    squared = np.einsum("ki,ki->k", d, d)[:, None, None]
    shift = masses[:, None, None] * (squared * np.eye(3) - d[:, :, None] * d[:, None, :])
    return m, c, (inertias + shift).sum(axis=0)
