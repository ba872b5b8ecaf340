"""Batched SO(3)/SE(3) helpers: skew, exponentials and logarithms, quaternions, inverses.

Every function accepts any number of leading batch dimensions ``...``. Rotations are
``(..., 3, 3)``, homogeneous transforms ``(..., 4, 4)``, quaternions ``quat_xyzw (..., 4)``
(scalar last, the ROS order). Twists are [linear; angular].
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


def skew(w: Array) -> Array:
    """Cross-product matrix: ``skew(w) @ x == cross(w, x)``. ``(..., 3) -> (..., 3, 3)``."""
    w = np.asarray(w, dtype=float)
    out = np.zeros(w.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -w[..., 2], w[..., 1]
    out[..., 1, 0], out[..., 1, 2] = w[..., 2], -w[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -w[..., 1], w[..., 0]
    return out


def rotation_about_axis(axis: Array, angle: Array) -> Array:
    """Rodrigues' formula for unit ``axis (..., 3)`` and ``angle (...)`` [rad] -> ``(..., 3, 3)``."""
    axis = np.asarray(axis, dtype=float)
    angle = np.asarray(angle, dtype=float)[..., None, None]
    K = skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def exp_so3(rotvec: Array) -> Array:
    """Rotation matrix of a rotation vector ``(..., 3)`` [rad] -> ``(..., 3, 3)``."""
    rotvec = np.asarray(rotvec, dtype=float)
    theta = np.linalg.norm(rotvec, axis=-1)
    small = theta < 1e-8
    safe = np.where(small, 1.0, theta)
    a = np.where(small, 1.0 - theta**2 / 6.0, np.sin(theta) / safe)
    b = np.where(small, 0.5 - theta**2 / 24.0, (1.0 - np.cos(theta)) / safe**2)
    K = skew(rotvec)
    return np.eye(3) + a[..., None, None] * K + b[..., None, None] * (K @ K)


def log_so3(R: Array) -> Array:
    """Rotation vector [rad] of rotation matrices ``(..., 3, 3) -> (..., 3)``; angle in [0, pi].

    Stable near 0 and near pi (where the axis is read from the symmetric part).
    """
    R = np.asarray(R, dtype=float)
    vee = np.stack([R[..., 2, 1] - R[..., 1, 2], R[..., 0, 2] - R[..., 2, 0], R[..., 1, 0] - R[..., 0, 1]], -1)
    # atan2 of (sin, cos) stays accurate near 0 and pi, where arccos of the trace loses digits
    theta = np.arctan2(0.5 * np.linalg.norm(vee, axis=-1), 0.5 * (np.trace(R, axis1=-2, axis2=-1) - 1.0))
    sin = np.sin(theta)
    small = theta < 1e-6
    factor = np.where(small, 0.5 + theta**2 / 12.0, theta / (2.0 * np.where(small, 1.0, sin)))
    out = factor[..., None] * vee
    near_pi = theta > np.pi - 1e-3
    if np.any(near_pi):
        Rp = R[near_pi]
        th = theta[near_pi]
        # R + R^T = 2 cos I + 2 (1 - cos) a a^T  =>  a a^T from the symmetric part
        B = (Rp + np.swapaxes(Rp, -1, -2)) * 0.5 - np.cos(th)[..., None, None] * np.eye(3)
        B = B / (1.0 - np.cos(th))[..., None, None]
        col = np.argmax(np.diagonal(B, axis1=-2, axis2=-1), axis=-1)
        axis = np.take_along_axis(B, col[..., None, None].repeat(3, -1), axis=-2)[..., 0, :]
        axis = axis / np.linalg.norm(axis, axis=-1, keepdims=True)
        vee_p = vee[near_pi]
        sign = np.where(np.sum(axis * vee_p, axis=-1) < 0, -1.0, 1.0)
        out[near_pi] = axis * (sign * th)[..., None]
    return out


def inverse_transform(T: Array) -> Array:
    """Inverse of rigid transforms ``(..., 4, 4)``."""
    T = np.asarray(T, dtype=float)
    out = np.zeros_like(T)
    Rt = np.swapaxes(T[..., :3, :3], -1, -2)
    out[..., :3, :3] = Rt
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", Rt, T[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def transform(R: Array | None = None, p: Array | None = None) -> Array:
    """Homogeneous transform from rotation ``(..., 3, 3)`` and translation ``(..., 3)``."""
    R = np.eye(3) if R is None else np.asarray(R, dtype=float)
    p = np.zeros(3) if p is None else np.asarray(p, dtype=float)
    shape = np.broadcast_shapes(R.shape[:-2], p.shape[:-1])
    out = np.zeros(shape + (4, 4))
    out[..., :3, :3] = R
    out[..., :3, 3] = p
    out[..., 3, 3] = 1.0
    return out


def rpy_to_matrix(rpy: Array) -> Array:
    """URDF roll-pitch-yaw (fixed axes X, then Y, then Z) ``(..., 3)`` -> ``(..., 3, 3)``."""
    r, p, y = np.moveaxis(np.asarray(rpy, dtype=float), -1, 0)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    out = np.empty(np.shape(r) + (3, 3))
    out[..., 0, 0], out[..., 0, 1], out[..., 0, 2] = cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr
    out[..., 1, 0], out[..., 1, 1], out[..., 1, 2] = sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr
    out[..., 2, 0], out[..., 2, 1], out[..., 2, 2] = -sp, cp * sr, cp * cr
    return out


def matrix_to_rpy(R: Array) -> Array:
    """Inverse of :func:`rpy_to_matrix` ``(..., 3, 3) -> (..., 3)``; pitch in [-pi/2, pi/2]."""
    R = np.asarray(R, dtype=float)
    cos_pitch = np.hypot(R[..., 0, 0], R[..., 1, 0])
    pitch = np.arctan2(-R[..., 2, 0], cos_pitch)
    gimbal = cos_pitch < 1e-15
    roll = np.where(gimbal, 0.0, np.arctan2(R[..., 2, 1], R[..., 2, 2]))
    yaw = np.where(gimbal, np.arctan2(-R[..., 0, 1], R[..., 1, 1]), np.arctan2(R[..., 1, 0], R[..., 0, 0]))
    return np.stack([roll, pitch, yaw], -1)


def quat_xyzw_to_matrix(quat_xyzw: Array) -> Array:
    """Unit quaternion (x, y, z, w) ``(..., 4)`` -> rotation ``(..., 3, 3)``; normalises its input."""
    q = np.asarray(quat_xyzw, dtype=float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    x, y, z, w = np.moveaxis(q, -1, 0)
    out = np.empty(q.shape[:-1] + (3, 3))
    out[..., 0, 0], out[..., 0, 1], out[..., 0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)
    out[..., 1, 0], out[..., 1, 1], out[..., 1, 2] = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
    out[..., 2, 0], out[..., 2, 1], out[..., 2, 2] = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)
    return out


# Rows of ``_QUAT_MIX @ R.reshape(9) + _QUAT_BIAS``: 4x², 4y², 4z², 4w², then 4xy, 4xz, 4yz
# (sums of symmetric entries) and 4wx, 4wy, 4wz (differences of antisymmetric ones).
_QUAT_MIX = np.array([
    [1, 0, 0, 0, -1, 0, 0, 0, -1], [-1, 0, 0, 0, 1, 0, 0, 0, -1], [-1, 0, 0, 0, -1, 0, 0, 0, 1],
    [1, 0, 0, 0, 1, 0, 0, 0, 1],
    [0, 1, 0, 1, 0, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0, 1, 0, 0], [0, 0, 0, 0, 0, 1, 0, 1, 0],
    [0, 0, 0, 0, 0, -1, 0, 1, 0], [0, 0, 1, 0, 0, 0, -1, 0, 0], [0, -1, 0, 1, 0, 0, 0, 0, 0]], float)
_QUAT_BIAS = np.array([1.0, 1.0, 1.0, 1.0, 0, 0, 0, 0, 0, 0])[:, None]
# 4 q qᵀ in (x, y, z, w) order, as indices into those rows.
_QUAT_OUTER = np.array([[0, 4, 5, 7], [4, 1, 6, 8], [5, 6, 2, 9], [7, 8, 9, 3]])


def matrix_to_quat_xyzw(R: Array) -> Array:
    """Rotation ``(..., 3, 3)`` -> unit quaternion (x, y, z, w) ``(..., 4)`` with w >= 0.

    Shepperd's method: the largest of 4x², 4y², 4z², 4w² picks the column of ``4 q qᵀ`` that is
    divided by its square root, so no branch loses precision.
    """
    R = np.asarray(R, dtype=float)
    batch = R.shape[:-2]
    rows = _QUAT_MIX @ R.reshape(-1, 9).T + _QUAT_BIAS          # (10, n)
    k = rows[:4].argmax(axis=0)
    n = np.arange(k.size)
    q = rows[_QUAT_OUTER[:, k], n] / (2.0 * np.sqrt(rows[k, n]))  # (4, n)
    q /= np.linalg.norm(q, axis=0)
    q *= np.where(q[3] < 0.0, -1.0, 1.0)
    return q.T.reshape(batch + (4,))


def log_se3_error(T_current: Array, T_target: Array) -> Array:
    """Pose error ``(..., 6)`` [m, rad] of ``T_target`` relative to ``T_current``, world-aligned.

    Linear part ``p_target - p_current``; angular part ``log(R_target R_current^T)``
    (the rotation still to apply, in world axes). Zero iff the poses are equal.
    """
    dp = T_target[..., :3, 3] - T_current[..., :3, 3]
    dR = T_target[..., :3, :3] @ np.swapaxes(T_current[..., :3, :3], -1, -2)
    return np.concatenate([dp, log_so3(dR)], axis=-1)


def pose_from_xyz_rpy(xyz, rpy) -> Array:
    """Homogeneous transform ``(4, 4)`` of a URDF ``<origin xyz rpy>``: translation ``xyz (3,)``
    [m], rotation from fixed-axis roll, pitch, yaw ``rpy (3,)`` [rad]."""
    T = np.eye(4)
    T[:3, :3] = rpy_to_matrix(np.asarray(rpy, float))
    T[:3, 3] = xyz
    return T


def quat_exp(w: Array) -> Array:
    """Quaternion ``(..., 4)`` xyzw of the rotation vector ``w (..., 3)`` [rad]."""
    theta = np.linalg.norm(w, axis=-1, keepdims=True)
    half = 0.5 * theta
    scale = np.where(theta < 1e-8, 0.5 - theta**2 / 48.0, np.sin(half) / np.where(theta < 1e-8, 1.0, theta))
    return np.concatenate([w * scale, np.cos(half)], axis=-1)


def quat_multiply(a: Array, b: Array) -> Array:
    """Hamilton product ``a ⊗ b`` of xyzw quaternions ``(..., 4)``, normalised."""
    av, aw, bv, bw = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    out = np.concatenate([aw * bv + bw * av + np.cross(av, bv), aw * bw - np.sum(av * bv, -1, keepdims=True)], -1)
    return out / np.linalg.norm(out, axis=-1, keepdims=True)
