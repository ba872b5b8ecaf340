"""Poses along a Cartesian path: straight lines in position, slerp in orientation.

MoveIt's ``CartesianInterpolator`` splits the move from the current pose to each waypoint into
``max(floor(d / max_step), floor(θ / max_rotation_step)) + 1`` equal steps (``d``: distance,
``θ``: rotation angle; at least :data:`MIN_STEPS_FOR_JUMP_THRESH` when a relative jump threshold
is given); :func:`step_count` is that rule and :func:`interpolate` the poses at path parameters
``s`` in [0, 1] of one segment.
"""

from __future__ import annotations

import math

import numpy as np

from ..spatial import log_so3, matrix_to_quat_xyzw, quat_xyzw_to_matrix

Array = np.ndarray

#: MoveIt's ``MIN_STEPS_FOR_JUMP_THRESH``: a segment has at least this many steps when a relative
#: jump threshold is tested (and a trajectory shorter than it is not tested).
MIN_STEPS_FOR_JUMP_THRESH = 10


def rotation_angle(R_a: Array, R_b: Array) -> float:
    """The angle [rad] of the rotation from ``R_a (3, 3)`` to ``R_b``."""
    return float(np.linalg.norm(log_so3(R_a.T @ R_b)))


def step_count(T_a: Array, T_b: Array, max_step: float, max_rotation_step: float, relative_jumps: bool) -> int:
    """The number of steps of the segment from ``T_a (4, 4)`` to ``T_b`` (MoveIt's rule; a
    ``max_rotation_step`` of 0 leaves the rotation out, as MoveIt's ``MaxEEFStep(max_step)``)."""
    translation = float(np.linalg.norm(T_b[:3, 3] - T_a[:3, 3]))
    steps = math.floor(translation / max_step)
    if max_rotation_step > 0.0:
        steps = max(steps, math.floor(rotation_angle(T_a[:3, :3], T_b[:3, :3]) / max_rotation_step))
    steps += 1
    if relative_jumps and steps < MIN_STEPS_FOR_JUMP_THRESH:
        steps = MIN_STEPS_FOR_JUMP_THRESH
    return steps


def slerp(q_a: Array, q_b: Array, s: Array) -> Array:
    """Quaternions ``(k, 4)`` xyzw at ``s (k,)`` from ``q_a (4,)`` to ``q_b`` along the shorter arc
    (Eigen's ``Quaternion::slerp``, which MoveIt uses)."""
    d = float(q_a @ q_b)
    if d < 0.0:
        q_b, d = -q_b, -d
    s = np.asarray(s, float)[:, None]
    if d > 1.0 - 1e-12:
        out = (1.0 - s) * q_a + s * q_b
    else:
        theta = math.acos(min(d, 1.0))
        out = (np.sin((1.0 - s) * theta) * q_a + np.sin(s * theta) * q_b) / math.sin(theta)
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


def interpolate(T_a: Array, T_b: Array, s) -> Array:
    """Poses ``(k, 4, 4)`` at path parameters ``s (k,)`` from ``T_a (4, 4)`` (s = 0) to ``T_b``
    (s = 1): position ``(1 - s) p_a + s p_b``, orientation slerped."""
    s = np.atleast_1d(np.asarray(s, float))
    out = np.zeros((s.size, 4, 4))
    out[:, 3, 3] = 1.0
    out[:, :3, 3] = (1.0 - s)[:, None] * T_a[:3, 3] + s[:, None] * T_b[:3, 3]
    quats = slerp(matrix_to_quat_xyzw(T_a[:3, :3]), matrix_to_quat_xyzw(T_b[:3, :3]), s)
    out[:, :3, :3] = quat_xyzw_to_matrix(quats)
    out[s == 0.0, :3, :3] = T_a[:3, :3]
    out[s == 1.0, :3, :3] = T_b[:3, :3]
    return out


def line_deviation(p: Array, a: Array, b: Array) -> Array:
    """Distance [m] ``(k,)`` of points ``p (k, 3)`` from the segments ``a (k, 3)`` – ``b (k, 3)``."""
    ab = b - a
    length2 = np.einsum('ij,ij->i', ab, ab)
    t = np.einsum('ij,ij->i', p - a, ab) / np.where(length2 > 0.0, length2, 1.0)
    t = np.clip(t, 0.0, 1.0)
    return np.linalg.norm(p - (a + t[:, None] * ab), axis=-1)
