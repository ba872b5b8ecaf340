"""Time stamps, velocities and accelerations of a joint path within the robot's limits.

The path ``q(s)`` is read as a curve of its joint-space arc length ``s``; ``q'`` and ``q''`` are
its finite differences (non-uniform central differences). The speed ``ṡ`` along it is the
largest that a forward pass (accelerating as fast as every joint allows) and a backward pass
(decelerating into the end, at rest) leave under the velocity bound ``|q' ṡ| <= v_max``, the
bound ``|q'' ṡ²| <= a_max`` and the tip's ``max_cartesian_speed`` (the numerical-integration
method of time-optimal path parameterisation, on the points given). Each step then takes
``2 Δs / (ṡ_i + ṡ_{i+1})``; the reported velocities are ``q' ṡ`` and accelerations ``q' s̈ + q'' ṡ²``
(``s̈`` of the step leaving the point; of the last step at the end), and all step times are
stretched by one factor when rounding or the one-step lag of ``s̈`` left any of them above its
limit, so every reported value (and every step's mean tip speed) is within its limit. Close to
time-optimal on the points given;
MoveIt's TOTG blends between them.

Limits: the URDF's ``velocity`` (a joint without one, or 0, gets :data:`DEFAULT_VELOCITY`) and
URDF 1.2's ``acceleration`` where given, else :data:`DEFAULT_ACCELERATION` (MoveIt reads
acceleration limits from ``joint_limits.yaml``, which a URDF does not carry).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..model import RobotModel

Array = np.ndarray

#: [rad/s or m/s] the velocity limit of a joint whose URDF gives none (or 0).
DEFAULT_VELOCITY = 1.0
#: [rad/s² or m/s²] the acceleration limit of a joint whose URDF gives none.
DEFAULT_ACCELERATION = 1.0
#: [s] the duration of a step between two equal points.
MIN_STEP_TIME = 1e-6


@dataclasses.dataclass(frozen=True)
class Timing:
    """A time-parameterised path: ``times (N,)`` [s] from 0, ``velocities`` and
    ``accelerations (N, n_q)``."""

    times: Array
    velocities: Array
    accelerations: Array


def scaling(factor: float) -> float:
    """A MoveIt scaling factor: outside (0, 1] (or NaN) means 1.0."""
    return float(factor) if 0.0 < factor <= 1.0 else 1.0


def coordinate_limits(model: RobotModel, joints: Array) -> tuple[Array, Array]:
    """``(n_q,)`` velocity and acceleration limits of each coordinate of the 1-DOF ``joints``
    (inf elsewhere: those coordinates do not move along a path of these joints)."""
    velocity = np.full(model.n_q, np.inf)
    acceleration = np.full(model.n_q, np.inf)
    for j in joints.tolist():
        i = model.joint_q_index[j]
        v, a = float(model.joint_velocity[j]), float(model.joint_acceleration[j])
        velocity[i] = v if np.isfinite(v) and v > 0.0 else DEFAULT_VELOCITY
        acceleration[i] = a if np.isfinite(a) and a > 0.0 else DEFAULT_ACCELERATION
    return velocity, acceleration


def time_parameterize(Q: Array, velocity: Array, acceleration: Array,
                      tip_positions: Array | None = None, max_cartesian_speed: float = 0.0) -> Timing:
    """The :class:`Timing` of the path ``Q (N, n_q)`` within ``velocity`` / ``acceleration``
    ``(n_q,)`` (already scaled; inf: unlimited), and ``max_cartesian_speed`` [m/s] of
    ``tip_positions (N, 3)`` when both are given (0: no Cartesian limit)."""
    n = len(Q)
    if n < 2:
        return Timing(np.zeros(n), np.zeros_like(Q), np.zeros_like(Q))
    ds = np.maximum(np.linalg.norm(np.diff(Q, axis=0), axis=1), 1e-12)
    d1, d2 = _derivatives(Q, ds)
    cap = _speed_cap(d1, d2, velocity, acceleration)
    if tip_positions is not None and max_cartesian_speed > 0.0:
        p1, _ = _derivatives(tip_positions, ds)
        cap = np.minimum(cap, (max_cartesian_speed / np.maximum(np.linalg.norm(p1, axis=1), 1e-300)) ** 2)
    x = _passes(d1, d2, ds, cap, acceleration)
    rate = np.sqrt(x)
    sdd = (x[1:] - x[:-1]) / (2.0 * ds)
    sdd = np.append(sdd, sdd[-1])
    dt = np.maximum(2.0 * ds / np.maximum(rate[:-1] + rate[1:], 1e-300), MIN_STEP_TIME)
    V = d1 * rate[:, None]
    A = d1 * sdd[:, None] + d2 * x[:, None]
    over = max(1.0, float(np.max(np.abs(V) / velocity)), float(np.sqrt(np.max(np.abs(A) / acceleration))))
    if tip_positions is not None and max_cartesian_speed > 0.0:   # each step's mean tip speed
        chord = np.linalg.norm(np.diff(tip_positions, axis=0), axis=1) / dt
        over = max(over, float(chord.max()) / max_cartesian_speed)
    if over > 1.0:   # rounding or the lag of s̈: stretch every step alike (v / c, a / c²)
        over *= 1.0 + 1e-9
        dt, V, A = dt * over, V / over, A / over ** 2
    return Timing(np.concatenate([[0.0], np.cumsum(dt)]), V, A)


def _derivatives(Q: Array, ds: Array) -> tuple[Array, Array]:
    """``q'`` and ``q''`` ``(N, m)`` of the points ``Q (N, m)`` spaced ``ds (N - 1,)`` apart."""
    d = np.diff(Q, axis=0) / ds[:, None]
    d1 = np.empty_like(Q)
    d2 = np.zeros_like(Q)
    d1[0], d1[-1] = d[0], d[-1]
    if len(Q) > 2:
        w0, w1 = ds[:-1, None], ds[1:, None]
        d1[1:-1] = (d[:-1] * w1 + d[1:] * w0) / (w0 + w1)
        d2[1:-1] = 2.0 * (d[1:] - d[:-1]) / (w0 + w1)
        d2[0], d2[-1] = d2[1], d2[-2]
    return d1, d2


def _speed_cap(d1: Array, d2: Array, velocity: Array, acceleration: Array) -> Array:
    """``(N,)`` the largest ``ṡ²`` at each point: joint velocities, and ``|q'' ṡ²| <= a_max``."""
    with np.errstate(divide='ignore', invalid='ignore'):
        by_velocity = np.min(np.where(np.abs(d1) > 0.0, (velocity / np.abs(d1)) ** 2, np.inf), axis=1)
        by_curvature = np.min(np.where(np.abs(d2) > 0.0, acceleration / np.abs(d2), np.inf), axis=1)
    return np.minimum(by_velocity, by_curvature)


def _passes(d1: Array, d2: Array, ds: Array, cap: Array, acceleration: Array) -> Array:
    """``(N,)`` ``ṡ²`` at each point: the forward and backward passes, at rest at both ends.

    A joint ``j`` at point ``i`` allows ``s̈ <= (a_j - sgn(q'_j) q''_j ṡ²) / |q'_j|`` and a
    deceleration ``-s̈ <= (a_j + sgn(q'_j) q''_j ṡ²) / |q'_j|``; over a step ``Δs`` these are affine
    maps of ``ṡ²``, so each pass is a running minimum of affine maps."""
    with np.errstate(divide='ignore', invalid='ignore'):
        moving = (np.abs(d1) > 0.0) & np.isfinite(acceleration)
        alpha = np.where(moving, acceleration / np.abs(d1), np.inf)
        beta = np.where(moving, np.sign(d1) * d2 / np.abs(d1), 0.0)
    x = cap.copy()
    x[0] = x[-1] = 0.0
    limits = x.tolist()
    two_ds = 2.0 * np.concatenate([ds, ds[-1:]])[:, None]
    up = (np.where(moving, two_ds * alpha, np.inf).tolist(), (1.0 - two_ds * beta).tolist())
    two_ds = 2.0 * np.concatenate([ds[:1], ds])[:, None]
    down = (np.where(moving, two_ds * alpha, np.inf).tolist(), (1.0 + two_ds * beta).tolist())
    n = len(limits)
    for i in range(n - 1):           # accelerate as fast as every joint allows
        xi = limits[i]
        limits[i + 1] = min(limits[i + 1], min([a + b * xi for a, b in zip(up[0][i], up[1][i])], default=math.inf))
    for i in range(n - 1, 0, -1):    # decelerate into every later bound
        xi = limits[i]
        limits[i - 1] = min(limits[i - 1], min([a + b * xi for a, b in zip(down[0][i], down[1][i])],
                                               default=math.inf))
    return np.maximum(np.array(limits), 0.0)
