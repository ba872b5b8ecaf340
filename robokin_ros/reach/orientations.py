"""The target orientations tried at every voxel: uniform on SO(3), or a tool axis within a cone.

Both sets are deterministic (no random numbers): the same ``n`` gives the same rotations on
every machine, so a map's orientations are fixed by its parameters.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..spatial import quat_xyzw_to_matrix

Array = NDArray[np.float64]

# Super-Fibonacci spirals (Alexa, CVPR 2022): sqrt(2) and the root of x^4 = x + 4.
_PHI = math.sqrt(2.0)
_PSI = 1.533751168755204288118041


def uniform_orientations(n: int) -> Array:
    """``(n, 3, 3)`` rotations spread uniformly over SO(3) (a Super-Fibonacci spiral: every
    region of SO(3) gets about its share of the Haar measure, deterministically)."""
    s = np.arange(n) + 0.5
    r, big_r = np.sqrt(s / n), np.sqrt(1.0 - s / n)
    alpha, beta = 2.0 * np.pi * s / _PHI, 2.0 * np.pi * s / _PSI
    quat_xyzw = np.stack([r * np.sin(alpha), r * np.cos(alpha), big_r * np.sin(beta), big_r * np.cos(beta)], -1)
    return quat_xyzw_to_matrix(quat_xyzw)


def cone_orientations(n: int, axis, half_angle: float) -> Array:
    """``(n, 3, 3)`` rotations whose z axis (the tool axis) points within ``half_angle`` [rad] of
    ``axis (3,)``, spread uniformly over that spherical cap (a Fibonacci spiral on the cap; the
    first points along ``axis``). The rotation about the tool axis is arbitrary (the map frees
    it in the IK)."""
    axis = np.asarray(axis, dtype=float)
    axis = axis / np.linalg.norm(axis)
    k = np.arange(n)
    cos_t = 1.0 - (1.0 - math.cos(half_angle)) * (k + 0.5) / n if n > 1 else np.ones(1)
    sin_t = np.sqrt(np.clip(1.0 - cos_t * cos_t, 0.0, None))
    phi = k * math.pi * (3.0 - math.sqrt(5.0))   # the golden angle
    # An orthonormal frame (u, v, axis).
    helper = np.array([1.0, 0.0, 0.0]) if abs(axis[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = np.cross(axis, helper)
    u /= np.linalg.norm(u)
    v = np.cross(axis, u)
    z = (sin_t * np.cos(phi))[:, None] * u + (sin_t * np.sin(phi))[:, None] * v + cos_t[:, None] * axis
    # Complete each z to a right-handed frame: x perpendicular to z, in the plane of z and u.
    x = u - (z @ u)[:, None] * z
    along_u = np.linalg.norm(x, axis=1) < 1e-6   # z along u: use v instead
    x[along_u] = v - (z[along_u] @ v)[:, None] * z[along_u]
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y = np.cross(z, x)
    return np.stack([x, y, z], axis=-1)
