"""The generic dynamics kernels: Featherstone's recursions on a :class:`DynamicsTree`, batched.

The oracles of the generated kernels (:mod:`robokin_ros.kernels.dynamics_codegen`), and what runs
for models with floating or planar joints and for external wrenches. World frame, spatial vectors
[linear; angular], component-first and batch-last arrays (a spatial vector per body is
``(6, n_bodies, B)``); Python loops run over depth levels. The conventions are those of
:mod:`robokin_ros.dynamics`, which checks inputs with :func:`check_inputs` and calls these.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..checks import numbers, real_array
from ..errors import ModelError, NonFiniteError, ShapeError
from ..kernels.plan import DynamicsTree, compose, other_joint_motion, plane_frame
from ..kernels.spatial_algebra import (
    apply_inertia,
    cross,
    force_cross,
    inertia_matrix,
    motion_cross,
    rotate,
    world_inertia,
)
from ..model import JointType, RobotModel

Array = NDArray[np.float64]

#: Standard gravity along -z [m/s²].
GRAVITY = (0.0, 0.0, -9.81)
_STANDARD_GRAVITY = np.array(GRAVITY)


def check_vector(value, name: str, size: int, labels) -> Array:
    """A velocity, acceleration or torque vector ``(..., size)`` (see :func:`robokin_ros.checks.real_array`)."""
    return real_array(value, name, (size,), labels=labels)


def check_inputs(model: RobotModel, q, vectors: dict, f_ext=None):
    """Check and flatten inputs: ``qb (B, n_q)``, vectors ``(B, n_v)``, f_ext ``(B, n_links, 6)``, batch shape."""
    q = model.check_q(q)
    arrays = {k: check_vector(v, k, model.n_v, model.v_names) for k, v in vectors.items()}
    shapes = [q.shape[:-1]] + [a.shape[:-1] for a in arrays.values()]
    if f_ext is not None:
        f_ext = numbers(f_ext, "f_ext")
        if f_ext.ndim < 2 or f_ext.shape[-2:] != (model.n_links, 6):
            raise ShapeError("f_ext", f"(..., {model.n_links}, 6)", f_ext.shape)
        if not np.isfinite(f_ext).all():
            bad = sorted(set(np.nonzero(~np.isfinite(f_ext))[-2].tolist()))
            raise NonFiniteError("f_ext", bad, [model.link_names[i] for i in bad])
        shapes.append(f_ext.shape[:-2])
    try:
        batch = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ShapeError(", ".join(["q", *arrays]), "batch dimensions that broadcast together",
                         tuple(shapes)) from None
    n = math.prod(batch)   # (not -1: ambiguous when n_q or n_v is 0)
    qb = np.broadcast_to(q, batch + q.shape[-1:]).reshape(n, model.n_q)
    flat = {k: np.broadcast_to(a, batch + a.shape[-1:]).reshape(n, model.n_v) for k, a in arrays.items()}
    if f_ext is not None:
        f_ext = np.broadcast_to(f_ext, batch + f_ext.shape[-2:]).reshape(n, model.n_links, 6)
    return qb, flat, f_ext, batch


#: Configurations per kernel call: enough to amortise the Python overhead, few enough for the
#: working set to stay in cache (measured on Panda and Talos).
CHUNK = 1024


def chunked(kernel, qb: Array, *arrays, axis: int = -1) -> Array:
    """``kernel(qb, *arrays)`` over chunks of the batch, arrays turned batch-last (``(B, k) -> (k, B)``,
    ``(B, n, 6) -> (6, n, B)``); results joined along ``axis``."""
    parts = []
    for start in range(0, max(len(qb), 1), CHUNK):
        chunk = slice(start, start + CHUNK)
        args = [None if a is None else np.ascontiguousarray(a[chunk].transpose()) for a in arrays]
        parts.append(kernel(qb[chunk], *args))
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=axis)


def check_gravity(gravity) -> Array:
    if gravity is GRAVITY:
        return _STANDARD_GRAVITY
    return real_array(gravity, "gravity", (3,), batch=False)


def body_frames(model: RobotModel, tree: DynamicsTree, qb: Array) -> tuple[Array, Array]:
    """World rotations ``(3, 3, nb, B)`` and positions ``(3, nb, B)`` of the bodies."""
    plan, nb, B = tree.plan, tree.n_bodies, qb.shape[0]
    R, p = np.empty((3, 3, nb, B)), np.empty((3, nb, B))
    R[:, :, 0], p[:, 0] = np.eye(3)[..., None], 0.0
    Rl, pl = np.empty((3, 3, nb, B)), np.empty((3, nb, B))
    if tree.sc_body.size:
        value = qb[:, plan.scalar_q].T * plan.scalar_mult[:, None] + plan.scalar_offset[:, None]
        angle = value if tree.sc_pri.size == 0 else np.where(plan.revolute[:, None], value, 0.0)
        Rl[:, :, tree.sc_body] = tree.Rc_A2 + plan.A1 * np.sin(angle) - plan.A2 * np.cos(angle)
        pl[:, tree.sc_body] = plan.pc
        if tree.sc_pri.size:
            pl[:, tree.sc_body[tree.sc_pri]] += plan.Rc_u[:, tree.sc_pri] * value[tree.sc_pri]
    for body, _, _, _, _ in tree.others:
        link = int(tree.body_links[body])
        T = plan.C[link] @ other_joint_motion(model, link, qb)
        Rl[:, :, body], pl[:, body] = np.moveaxis(T[:, :3, :3], 0, -1), T[:, :3, 3].T
    for bodies, parents, _ in tree.levels:
        R[:, :, bodies], p[:, bodies] = compose(R[:, :, parents], p[:, parents], Rl[:, :, bodies], pl[:, bodies])
    return R, p


def body_motion_columns(model: RobotModel, tree: DynamicsTree, R: Array, p: Array) -> Array:
    """Every joint's motion direction in the world frame ``(6, n_cols, B)`` (mimic: unscaled)."""
    S = np.zeros((6, tree.n_cols) + p.shape[2:])
    if tree.sc_body.size:
        u = rotate(R[:, :, tree.sc_body], tree.sc_axis)                          # (3, ns, B)
        rev, pri = tree.sc_rev, tree.sc_pri
        S[:3, rev] = cross(p[:, tree.sc_body[rev]], u[:, rev])
        S[3:, rev] = u[:, rev]
        S[:3, pri] = u[:, pri]
    for body, joint, kind, c0, _nv in tree.others:
        Rb, pb = R[:, :, body], p[:, body]
        if kind == JointType.FLOATING:                                           # child-frame basis
            S[:3, c0:c0 + 3] = Rb
            S[:3, c0 + 3:c0 + 6] = np.stack([cross(pb, Rb[:, k]) for k in range(3)], axis=1)
            S[3:, c0 + 3:c0 + 6] = Rb
        else:                                                                    # planar, joint-frame axes
            link = int(tree.body_links[body])
            in_parent = tree.plan.C[link][:3, :3] @ plane_frame(model.joint_axes[joint])
            Rpar = R[:, :, tree.parent[body]]
            S[:3, c0] = rotate(Rpar, in_parent[:, 0, None])
            S[:3, c0 + 1] = rotate(Rpar, in_parent[:, 1, None])
            u = rotate(Rb, model.joint_axes[joint][:, None])
            S[:3, c0 + 2], S[3:, c0 + 2] = cross(pb, u), u
    return S


def joint_motion(tree: DynamicsTree, S: Array, x: Array, B: int) -> Array:
    """Per body, ``Σ_columns S x`` ``(6, nb, B)`` for column rates ``x (n_cols, B)``."""
    out = np.zeros((6, tree.n_bodies, B))
    ns = tree.sc_body.size
    out[:, tree.sc_body] = S[:, :ns] * x[:ns]
    for body, _, _, c0, nv in tree.others:
        out[:, body] = np.einsum("ikb,kb->ib", S[:, c0:c0 + nv], x[c0:c0 + nv])
    return out


def body_velocities(tree: DynamicsTree, vJ: Array) -> Array:
    V = np.zeros_like(vJ)
    for bodies, parents, _ in tree.levels:
        V[:, bodies] = V[:, parents] + vJ[:, bodies]
    return V


def velocity_product_accelerations(tree: DynamicsTree, S: Array, V: Array, vJ: Array, xd: Array) -> Array:
    """Velocity-product acceleration of each body's joint ``(6, nb, B)``: ``Ṡ q̇``."""
    c = motion_cross(V, vJ)
    for body, _, kind, c0, _ in tree.others:
        if kind == JointType.PLANAR:   # the in-plane translations are fixed in the parent, not the child
            t = S[:3, c0] * xd[c0] + S[:3, c0 + 1] * xd[c0 + 1]
            c[:3, body] += cross(t, S[3:, c0 + 2] * xd[c0 + 2])
    return c


def body_inertias(tree: DynamicsTree, R: Array, p: Array) -> tuple[Array, Array, Array]:
    mass = tree.mass[:, None]
    h, I_o = world_inertia(mass, tree.com.T[:, :, None], np.moveaxis(tree.I_com, 0, -1)[..., None], R, p)
    return mass, h, I_o


def inward_sums(tree: DynamicsTree, F: Array) -> Array:
    """Subtree sums over the last-but-one axis, in place (the root's entry is left partial)."""
    for bodies, _, groups in reversed(tree.levels):
        for sel, parents in groups:
            F[..., parents, :] += F[..., bodies[sel], :]
    return F


def columns_to_v(model: RobotModel, tree: DynamicsTree, per_column: Array) -> Array:
    """Column values ``(n_cols, ...)`` summed into v coordinates ``(n_v, ...)`` with mimic scales."""
    out = np.zeros((model.n_v,) + per_column.shape[1:])
    if tree.has_mimic:
        np.add.at(out, tree.col_v, per_column * tree.col_scale.reshape((-1,) + (1,) * (per_column.ndim - 1)))
    else:
        out[tree.col_v] = per_column
    return out


def rnea_generic(model, tree, qb, v, a, *, f_ext=None, gravity) -> Array:
    """Joint forces ``(n_v, B)`` for ``qb (B, n_q)``, ``v``, ``a (n_v, B)``, wrenches ``f_ext``
    ``(6, n_links, B)`` or None and ``gravity (3,)``."""
    B = qb.shape[0]
    R, p = body_frames(model, tree, qb)
    S = body_motion_columns(model, tree, R, p)
    xd = v[tree.col_v] * tree.col_scale[:, None]
    vJ = joint_motion(tree, S, xd, B)
    V = body_velocities(tree, vJ)
    aJ = joint_motion(tree, S, a[tree.col_v] * tree.col_scale[:, None], B) \
        + velocity_product_accelerations(tree, S, V, vJ, xd)
    A = np.empty_like(aJ)
    A[:3, 0], A[3:, 0] = -gravity[:, None], 0.0
    for bodies, parents, _ in tree.levels:
        A[:, bodies] = A[:, parents] + aJ[:, bodies]
    mass, h, I_o = body_inertias(tree, R, p)
    F = apply_inertia(mass, h, I_o, A) + force_cross(V, apply_inertia(mass, h, I_o, V))
    if f_ext is not None:
        F -= np.einsum("ilb,lk->ikb", f_ext, np.eye(tree.n_bodies)[tree.link_body])
    inward_sums(tree, F)
    tau = np.einsum("icb,icb->cb", S, F[:, tree.col_body])
    return columns_to_v(model, tree, tau)


def crba_generic(model, tree, qb) -> Array:
    """Mass matrices ``(B, n_v, n_v)``."""
    B = qb.shape[0]
    R, p = body_frames(model, tree, qb)
    S = body_motion_columns(model, tree, R, p)
    _, h, I_o = body_inertias(tree, R, p)
    hI = inward_sums(tree, np.concatenate([h, I_o]))                 # composite inertias
    cb = tree.col_body
    F = apply_inertia(tree.subtree_mass[cb, None], hI[:3, cb], hI[3:, cb], S)
    vals = np.einsum("ipb,ipb->pb", S[:, tree.pair_a], F[:, tree.pair_c])
    if not tree.unit_weights:
        vals = np.add.reduceat(vals * tree.pair_w[:, None], tree.pair_start, axis=0)
    M = np.zeros((B, model.n_v * model.n_v))
    M[:, tree.M_lower] = vals.T
    M[:, tree.M_upper] = vals.T
    return M.reshape(B, model.n_v, model.n_v)


def aba_articulated(model, tree, qb, v, tau, f_ext, g) -> Array:
    """Joint accelerations ``(n_v, B)`` of a model without mimic joints."""
    B = qb.shape[0]
    R, p = body_frames(model, tree, qb)
    S = body_motion_columns(model, tree, R, p)
    xd = v[tree.col_v]
    vJ = joint_motion(tree, S, xd, B)
    V = body_velocities(tree, vJ)
    c = velocity_product_accelerations(tree, S, V, vJ, xd)
    mass, h, I_o = body_inertias(tree, R, p)
    IA = inertia_matrix(np.broadcast_to(mass, h.shape[1:]), h, I_o)       # (6, 6, nb, B)
    pA = force_cross(V, apply_inertia(mass, h, I_o, V))
    if f_ext is not None:
        pA -= np.einsum("ilb,lk->ikb", f_ext, np.eye(tree.n_bodies)[tree.link_body])
    u_all = tau[tree.col_v]                                                 # (n_cols, B)
    saved = []
    for bodies, _, groups, parts in reversed(tree.aba_levels):
        Ia, pa, level = np.empty((6, 6, len(bodies), B)), np.empty((6, len(bodies), B)), []
        for pos, cols in parts:
            b = bodies[pos]
            Sg = S[:, cols]                                                  # (6, k, L, B)
            U = np.einsum("ijlb,jklb->iklb", IA[:, :, b], Sg)
            D = np.einsum("iklb,imlb->kmlb", Sg, U)
            u = u_all[cols] - np.einsum("iklb,ilb->klb", Sg, pA[:, b])
            if cols.shape[0] == 1:
                Dinv = 1.0 / D
            else:
                Dinv = _joint_inertia_inverse(model, tree, D, cols)
            UD = np.einsum("iklb,kmlb->imlb", U, Dinv)
            Ia[:, :, pos] = IA[:, :, b] - np.einsum("iklb,jklb->ijlb", UD, U)
            pa[:, pos] = pA[:, b] + np.einsum("ijlb,jlb->ilb", Ia[:, :, pos], c[:, b]) \
                + np.einsum("iklb,klb->ilb", UD, u)
            level.append((pos, Sg, U, Dinv, u))
        for sel, par in groups:
            IA[:, :, par] += Ia[:, :, sel]
            pA[:, par] += pa[:, sel]
        saved.append(level)
    A = np.empty((6, tree.n_bodies, B))
    A[:3, 0], A[3:, 0] = -g[:, None], 0.0
    qdd = np.empty((tree.n_cols, B))
    for (bodies, parents, _, parts), level in zip(tree.aba_levels, reversed(saved)):
        Ap = A[:, parents] + c[:, bodies]
        for (pos, cols), (_, Sg, U, Dinv, u) in zip(parts, level):
            x = np.einsum("kmlb,mlb->klb", Dinv, u - np.einsum("iklb,ilb->klb", U, Ap[:, pos]))
            qdd[cols] = x
            Ap[:, pos] += np.einsum("iklb,klb->ilb", Sg, x)
        A[:, bodies] = Ap
    out = np.empty((model.n_v, B))
    out[tree.col_v] = qdd
    return out


def _joint_inertia_inverse(model, tree, D: Array, cols: Array) -> Array:
    """Inverses of the articulated inertias ``D (k, k, L, B)`` seen by multi-coordinate joints
    (floating, planar; columns ``cols (k, L)``).

    Raises:
        ModelError: a singular one (the joint moves no mass or no inertia in some direction),
            naming the joint.
    """
    Dm = np.moveaxis(D, (0, 1), (-2, -1))                                   # (L, B, k, k)
    try:
        return np.moveaxis(np.linalg.inv(Dm), (-2, -1), (0, 1))
    except np.linalg.LinAlgError:
        with np.errstate(all="ignore"):
            singular = ~(np.abs(np.linalg.det(Dm)) > 0).all(axis=-1)       # (L,)
        links = np.flatnonzero(singular) if singular.any() else range(cols.shape[1])
        raise ModelError(f"{_joints_of(model, tree.col_v[cols[:, links].ravel()])} moves no mass or inertia in "
                         "some direction: its articulated inertia is singular, so accelerations are undefined"
                         ) from None


def _joints_of(model, v_index) -> str:
    """``joint 'a'`` / ``joints ['a', 'b']``: the joints owning the v coordinates ``v_index``."""
    names = list(dict.fromkeys(model.v_names[int(i)].split("/")[0] for i in v_index))
    return f"joint {names[0]!r}" if len(names) == 1 else f"joints {names}"


def aba_by_solve(model, tree, qb, v, tau, f_ext, g) -> Array:
    """Joint accelerations ``(n_v, B)`` from ``M a = tau - h`` (models with mimic joints).

    Raises:
        ModelError: ``M`` singular at some configuration (naming the joints whose rows vanish).
    """
    rhs = tau - rnea_generic(model, tree, qb, v, np.zeros_like(v), f_ext=f_ext, gravity=g)
    M = crba_generic(model, tree, qb)
    try:
        return np.linalg.solve(M, rhs.T[..., None])[..., 0].T
    except np.linalg.LinAlgError:
        empty = np.flatnonzero((np.diagonal(M, axis1=-2, axis2=-1) == 0).any(axis=0))
        culprit = _joints_of(model, empty) if empty.size else "a combination of joints"
        raise ModelError(f"the mass matrix is singular: {culprit} moves no mass or inertia in some direction"
                         ) from None
