"""Configuration-space operations: moving a configuration by a velocity, wrapping angles."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..checks import real_array
from ..errors import ShapeError
from ..spatial import quat_exp, quat_multiply, quat_xyzw_to_matrix
from .robot_model import JointType, RobotModel

Array = NDArray[np.float64]


def integrate(model: RobotModel, q, v) -> Array:
    """Move configurations ``q (..., n_q)`` by ``v (..., n_v)`` (one unit of time).

    Scalar and planar coordinates add; a floating joint moves its position by ``R v_linear``
    (the velocity is in the child frame) and its quaternion by ``exp(ω_local)`` on the right,
    renormalised. First order in ``v`` for floating joints, which is what IK steps need.

    Raises:
        ShapeError: ``q`` or ``v`` of the wrong length, or batches that do not broadcast.
        NonFiniteError: NaN or inf in ``q`` or ``v``. ArgumentError: not real numbers.
    """
    q = model.check_q(q)
    v = real_array(v, "v", (model.n_v,), labels=model.v_names)
    try:
        shape = np.broadcast_shapes(q.shape[:-1], v.shape[:-1])
    except ValueError:
        raise ShapeError("q, v", "batch dimensions that broadcast together", (q.shape, v.shape)) from None
    out = np.array(np.broadcast_to(q, shape + (model.n_q,)))
    v = np.broadcast_to(v, shape + (model.n_v,))
    for j in model.active_joints:
        i, k, nq = model.joint_q_index[j], model.joint_v_index[j], model.joint_nq[j]
        if model.joint_types[j] != JointType.FLOATING:
            out[..., i:i + nq] += v[..., k:k + nq]
            continue
        quat = out[..., i + 3:i + 7]
        out[..., i:i + 3] += (quat_xyzw_to_matrix(quat) @ v[..., k:k + 3, None])[..., 0]
        out[..., i + 3:i + 7] = quat_multiply(quat, quat_exp(v[..., k + 3:k + 6]))
    return out


def wrap_angle(angle):
    """Angles wrapped into (-π, π] (floats or arrays)."""
    return math.pi - (math.pi - angle) % (2.0 * math.pi)
