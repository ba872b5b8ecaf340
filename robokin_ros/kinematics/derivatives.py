"""First and second derivatives of a frame's pose, and the kinematic Hessian (derivative of the Jacobian).

Derivation (product rule on the chain of placements and joint motions). Every motion column ``c``
(one per joint coordinate; a mimic joint contributes its own column scaled by its multiplier ``m_c``
into its source's coordinate) has a spatial twist ``ξ_c = (v_c, ω_c)`` in world axes at the world
origin, and ``ξ̂ = [[ω×, v], [0, 0]]``. For a 1-DOF joint the world pose of any link ``k`` below it
is ``T_k = A · exp(Ŝ q) · B``; since ``Ŝ`` commutes with its exponential,
``∂T_k/∂q = A exp(Ŝq) Ŝ B = ξ̂_c T_k`` with ``ξ_c = Ad(A exp(Ŝq)) S``. (For the rotation alone this
is ``dR/dθ = K R`` and ``d²R/dθ² = K² R`` for ``R = I + sinθ K + (1 − cosθ) K²``; the closed form
for ``d²R/dθ²`` often quoted for the axis-angle matrix is wrong.) Differentiating again:

* ``∂ξ_d/∂q_c = [ξ_c, ξ_d]`` (Lie bracket, ``ad``) when column ``c`` comes before ``d`` on the
  chain (joint ``c`` is an ancestor of joint ``d``), and 0 when it comes after: a joint's motion
  does not move the axes of the joints above it;
* ``∂²T_k/∂q_c∂q_d = ξ̂_c ξ̂_d T_k`` with ``c`` the earlier column (``ξ̂_c² T_k`` when ``c = d``).

A planar joint is the chain (translation x, translation y, rotation θ), in that order. A floating
joint has no coordinates to differentiate along: its 6 velocity directions are local (child frame),
so we differentiate along the exponential chart ``ε ↦ T_child · exp(ε̂)`` at ``ε = 0`` (Pinocchio's
``integrate``). Its first derivatives are ``ξ̂_c T_k`` as above, its second derivatives between two of
its own directions are the symmetric ``½ (ξ̂_c ξ̂_d + ξ̂_d ξ̂_c) T_k`` (the Hessian of the chart), and
the derivative of one of its Jacobian columns along another of its directions is ``[ξ_c, ξ_d]``
(both orders). Finite differences must then step along ``q ⊕ ε``, not ``q + ε``.

Summing the columns of each coordinate with their multipliers gives derivatives with respect to
``v``. The kinematic Hessian in WORLD is the bracket sum above; LOCAL_WORLD_ALIGNED and LOCAL follow
from ``J_lwa = [v + ω × p; ω]`` and ``J_local = Rᵀ J_lwa`` by the product rule with
``∂p/∂q_i = J_lwa,lin[:, i]`` and ``∂R/∂q_i = ω_i× R``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .. import model_cache
from ..model import JointType, RobotModel
from .fk import resolve_poses
from .geometric_jacobians import LOCAL_WORLD_ALIGNED, Reference, motion_columns, world_columns

Array = NDArray[np.float64]

def _hat(xi: Array) -> Array:
    """``ξ̂ (..., 4, 4)`` of twists ``ξ = (v, ω) (..., 6)``."""
    out = np.zeros(xi.shape[:-1] + (4, 4))
    v, w = xi[..., :3], xi[..., 3:]
    out[..., 0, 1], out[..., 0, 2], out[..., 0, 3] = -w[..., 2], w[..., 1], v[..., 0]
    out[..., 1, 0], out[..., 1, 2], out[..., 1, 3] = w[..., 2], -w[..., 0], v[..., 1]
    out[..., 2, 0], out[..., 2, 1], out[..., 2, 3] = -w[..., 1], w[..., 0], v[..., 2]
    return out


def _cross(a: Array, b: Array) -> Array:
    """``a × b`` over the last axis, broadcast (``np.cross``'s per-call overhead is large for small arrays)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def _bracket(a: Array, b: Array) -> Array:
    """Lie bracket ``[a, b] = ad_a b`` of twists ``(..., 6)``: ``(ω_a × v_b − ω_b × v_a, ω_a × ω_b)``."""
    va, wa, vb, wb = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    return np.concatenate([_cross(wa, vb) - _cross(wb, va), _cross(wa, wb)], axis=-1)


def _to_v(X: Array, select: Array, axis: int) -> Array:
    """Column pairs ``(c, d)`` at axes ``axis, axis + 1`` of ``X`` summed into v pairs ``(i, j)``:
    ``Σ_cd select[c, i] X[.., c, d, ..] select[d, j]``."""
    Y = np.moveaxis(X, (axis, axis + 1), (-2, -1))
    return np.moveaxis(select.T @ Y @ select, (-2, -1), (axis, axis + 1))


#: The registry kind (:mod:`robokin_ros.model_cache`) of each frame's column constants.
DERIVATIVE_FRAMES = "derivative frames"


def _frame_constants(model: RobotModel, k: int):
    """Per frame ``k`` (kept in :mod:`robokin_ros.model_cache`): supporting column indices, their
    ``select (nk, n_v)``, masks ``first`` / ``chart``."""
    def build():
        cols = motion_columns(model)
        keep = np.flatnonzero(cols.support[k])
        joint = cols.joint[keep]
        order = np.arange(keep.size)
        floating = model.joint_types[joint] == JointType.FLOATING
        chart = (joint[:, None] == joint[None, :]) & floating[:, None] & (order[:, None] != order[None, :])
        first = (order[:, None] < order[None, :]) & ~chart
        return keep, cols.select[keep], first, chart

    return model_cache.cached(model, DERIVATIVE_FRAMES, k, build)


def _frame_columns(model: RobotModel, q, frame: str, poses):
    """The motion columns supporting ``frame``, batch-flattened.

    Returns:
        batch shape, ``T_k (B, 4, 4)``, world twists ``ξ (B, nk, 6)``, ``select (nk, n_v)``
        (column -> v, with mimic multipliers), and ``(nk, nk)`` masks ``first`` (row column acts
        before the other: strictly earlier on the chain) and ``chart`` (two directions of one
        floating joint).
    """
    k = model.link_index(frame)
    q = model.check_q(q)
    T = resolve_poses(model, q, poses)
    batch = q.shape[:-1]
    n = math.prod(batch)   # (not -1: ambiguous when n_q is 0)
    qb, Tb = q.reshape(n, model.n_q), T.reshape((n,) + T.shape[-3:])
    keep, select, first, chart = _frame_constants(model, k)
    lin, ang, pc = world_columns(model, qb, Tb)
    lin, ang, pc = lin[:, keep], ang[:, keep], pc[:, keep]
    xi = np.concatenate([lin - _cross(ang, pc), ang], axis=-1)
    return batch, Tb[:, k], xi, select, first, chart


def pose_derivatives(model: RobotModel, q, frame: str, poses=None) -> Array:
    """Derivative of a frame's world pose along every velocity coordinate.

    ``dT[..., i, :, :] = ∂T_world_frame/∂v_i = ξ̂_i T_world_frame`` with ``ξ_i`` the WORLD
    Jacobian column ``i``. For revolute, continuous, prismatic and planar coordinates this is
    ``∂T/∂q_i``; a mimic joint adds its multiplier times its own term into its source's slot; for a
    floating joint it is the derivative along the local (child-frame) velocity direction,
    ``d/dε T(q ⊕ ε e_i)`` at 0.

    Args:
        model: the robot.
        q: configurations ``(..., n_q)``.
        frame: link name.
        poses: optional ``forward_kinematics(model, q)`` to reuse.

    Returns:
        ``dT/dv (..., n_v, 4, 4)`` [m or 1 per rad or m]; the last row of each matrix is 0.

    Raises:
        UnknownLinkError: unknown frame. ShapeError, NonFiniteError: bad ``q`` or ``poses``.
    """
    batch, Tk, xi, select, _, _ = _frame_columns(model, q, frame, poses)
    dT = _hat(xi) @ Tk[:, None]                                       # (B, nk, 4, 4)
    out = np.moveaxis(select.T @ np.moveaxis(dT, 1, -2), -2, 1)
    return out.reshape(batch + (model.n_v, 4, 4))


def pose_second_derivatives(model: RobotModel, q, frame: str, poses=None) -> Array:
    """Second derivatives ``∂²T_world_frame/∂v_i ∂v_j``, symmetric in ``(i, j)``.

    For 1-DOF and planar joints these are the partial derivatives in ``q``
    (``ξ̂_i ξ̂_j T`` with ``i`` the joint nearer the root). For the 6 directions of a floating joint
    they are the Hessian of ``ε ↦ T(q ⊕ ε)`` at ``ε = 0``, where ``q ⊕ ε`` moves the joint's child
    frame by ``exp(ε̂)`` (Pinocchio's ``integrate``): ``½ (ξ̂_i ξ̂_j + ξ̂_j ξ̂_i) T`` within the
    joint. Mimic joints enter through their source with their multipliers (both factors).

    Args:
        model: the robot.
        q: configurations ``(..., n_q)``.
        frame: link name.
        poses: optional ``forward_kinematics(model, q)`` to reuse.

    Returns:
        ``(..., n_v, n_v, 4, 4)``.

    Raises:
        UnknownLinkError: unknown frame. ShapeError, NonFiniteError: bad ``q`` or ``poses``.
    """
    batch, Tk, xi, select, first, chart = _frame_columns(model, q, frame, poses)
    H = _hat(xi)
    P = H[:, :, None] @ H[:, None, :]                                 # (B, nk, nk, 4, 4): ξ̂_c ξ̂_d
    Pt = np.swapaxes(P, 1, 2)                                         # ξ̂_d ξ̂_c
    upper = first | np.eye(first.shape[0], dtype=bool)
    O = np.where(upper[..., None, None], P, Pt)
    O = np.where(chart[..., None, None], 0.5 * (P + Pt), O)
    d2 = _to_v(O @ Tk[:, None, None], select, 1)
    return d2.reshape(batch + (model.n_v, model.n_v, 4, 4))


def kinematic_hessian(model: RobotModel, q, frame: str, reference=LOCAL_WORLD_ALIGNED, poses=None) -> Array:
    """Derivative of a frame's geometric Jacobian: ``H[..., :, i, j] = ∂J[..., :, j]/∂v_i``.

    ``J`` is :func:`~robokin_ros.kinematics.geometric_jacobians.jacobian` in the same ``reference``. Derivatives along
    a floating joint's directions are taken along ``q ⊕ ε`` (its child frame moved by ``exp(ε̂)``);
    elsewhere they are partial derivatives in ``q``. In WORLD, ``H[:, i, j] = H[:, j, i]`` holds
    only between joints on different branches or along one coordinate; in general the Hessian
    is not symmetric.

    Args:
        model: the robot.
        q: configurations ``(..., n_q)``.
        frame: link name.
        reference: a :class:`~robokin_ros.kinematics.geometric_jacobians.Reference` (or its name).
        poses: optional ``forward_kinematics(model, q)`` to reuse.

    Returns:
        ``(..., 6, n_v, n_v)``, rows [linear; angular].

    Raises:
        UnknownLinkError: unknown frame. ShapeError, NonFiniteError: bad ``q`` or ``poses``.
        ArgumentError: unknown reference.
    """
    reference = Reference.parse(reference)
    batch, Tk, xi, select, first, chart = _frame_columns(model, q, frame, poses)
    # ∂ξ_d/∂q_c = [ξ_c, ξ_d] when column c acts first (or both are directions of one floating joint)
    brackets = _bracket(xi[:, :, None], xi[:, None, :])               # (B, nk, nk, 6)
    brackets = np.where((first | chart)[None, :, :, None], brackets, 0.0)
    Hw = np.moveaxis(_to_v(brackets, select, 1), -1, 1)             # (B, 6, n_v, n_v)
    Jw = np.swapaxes(xi, 1, 2) @ select                               # WORLD Jacobian (B, 6, n_v)
    if reference == Reference.WORLD:
        return Hw.reshape(batch + Hw.shape[1:])
    p = Tk[:, :3, 3]                                                  # (B, 3)
    w = np.swapaxes(Jw[:, 3:], 1, 2)                                  # ω of each column (B, n_v, 3)
    v = np.swapaxes(Jw[:, :3], 1, 2) + _cross(w, p[:, None])       # velocity of p, each column
    Hl = np.moveaxis(Hw, 1, -1)                                       # (B, i, j, 6)
    # ∂(v_j + ω_j × p)/∂q_i = ∂v_j + ∂ω_j × p + ω_j × (∂p/∂q_i = v_i)
    lin = Hl[..., :3] + _cross(Hl[..., 3:], p[:, None, None]) + _cross(w[:, None, :, :], v[:, :, None, :])
    H_lwa = np.concatenate([lin, Hl[..., 3:]], axis=-1)              # (B, i, j, 6)
    if reference == Reference.LOCAL_WORLD_ALIGNED:
        return np.moveaxis(H_lwa, -1, 1).reshape(batch + Hw.shape[1:])
    # ∂(Rᵀ J_j)/∂q_i = Rᵀ (∂J_j − ω_i × J_j), blockwise
    J_lwa = np.concatenate([v, w], axis=-1)[:, None, :, :]            # (B, 1, j, 6)
    w_i = w[:, :, None, :]                                            # (B, i, 1, 3)
    G = H_lwa - np.concatenate([_cross(w_i, J_lwa[..., :3]), _cross(w_i, J_lwa[..., 3:])], axis=-1)
    R = Tk[:, None, None, :3, :3]                                     # (B, 1, 1, 3, 3)
    H_local = np.concatenate([np.einsum("...ki,...k->...i", R, G[..., :3]),
                              np.einsum("...ki,...k->...i", R, G[..., 3:])], axis=-1)
    return np.moveaxis(H_local, -1, 1).reshape(batch + Hw.shape[1:])
