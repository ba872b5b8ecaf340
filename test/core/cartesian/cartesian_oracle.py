"""Independent reference for the Cartesian path tests: a dense Newton continuation of a straight
line in numpy (Jacobian pseudo-inverse steps of 0.5 mm, each corrected to 1e-10), which certifies
that a continuous, in-limit, well-conditioned joint path of the line exists from the start."""

from __future__ import annotations

import numpy as np

import robokin_ros as rk
from robokin_ros.spatial import log_so3

#: Steps [m] of the reference continuation; its margins to the limits and to singularities.
STEP = 5e-4
LIMIT_MARGIN = 0.02
MIN_SINGULAR = 0.02


def pose(model, q, tip):
    return rk.forward_kinematics(model, q, frames=[tip])[0]


def error(T, T_goal):
    return np.concatenate([T_goal[:3, 3] - T[:3, 3], T[:3, :3] @ log_so3(T[:3, :3].T @ T_goal[:3, :3])])


def track_line(model, tip, q0, T_goal, lower=None, upper=None):
    """The joint path of the straight line (lerp + slerp) from the tip's pose at ``q0`` to
    ``T_goal``, or None when it leaves the limits (with a margin), meets a near-singularity, or
    a correction does not converge."""
    lower = model.q_lower if lower is None else lower
    upper = model.q_upper if upper is None else upper
    from robokin_ros.cartesian.interpolation import interpolate  # the poses only (lerp + slerp)
    T0 = pose(model, q0, tip)
    n = max(int(np.ceil(np.linalg.norm(T_goal[:3, 3] - T0[:3, 3]) / STEP)), 4)
    targets = interpolate(T0, T_goal, np.arange(1, n + 1) / n)
    margin = np.minimum(LIMIT_MARGIN, 0.25 * (upper - lower))
    q = q0.copy()
    path = [q.copy()]
    for T in targets:
        for _ in range(30):
            e = error(pose(model, q, tip), T)
            if np.linalg.norm(e) < 1e-10:
                break
            J = rk.jacobian(model, q, tip)
            if np.linalg.svd(J, compute_uv=False)[-1] < MIN_SINGULAR:
                return None
            q = q + np.linalg.pinv(J) @ e
        else:
            return None
        if np.any(q < lower + margin) or np.any(q > upper - margin):
            return None
        path.append(q.copy())
    return np.array(path)


def random_feasible_line(model, tip, rng, length=(0.05, 0.3), rotation=0.0, tries=200):
    """(q0, T_goal, oracle path) of a random straight line certified by :func:`track_line`."""
    for _ in range(tries):
        q0 = model.random_configuration(rng=rng)
        margin = np.minimum(0.2, 0.25 * (model.q_upper - model.q_lower))
        q0 = np.clip(q0, model.q_lower + margin, model.q_upper - margin)
        T0 = pose(model, q0, tip)
        d = rng.normal(size=3)
        T_goal = T0.copy()
        T_goal[:3, 3] += d / np.linalg.norm(d) * rng.uniform(*length)
        if rotation:
            w = rng.normal(size=3)
            from robokin_ros.spatial import exp_so3
            T_goal[:3, :3] = T0[:3, :3] @ exp_so3(w / np.linalg.norm(w) * rng.uniform(0, rotation))
        path = track_line(model, tip, q0, T_goal)
        if path is not None:
            return q0, T_goal, path
    raise AssertionError('no certified line found')
