"""Rigid-body dynamics of kinematic trees, batched: RNEA, CRBA, ABA, gravity, centre of mass.

Featherstone's algorithms in their branched form (outward passes use the parent λ(i), inward
passes sum over the children μ(i), CRBA fills H only where one joint supports the other), written
in the world frame (Pinocchio's WORLD convention): every spatial quantity is expressed in world
axes about the world origin, so passes between links are plain sums. Spatial vectors are
[linear; angular]; the operators are defined in :mod:`robokin_ros.inertia`.

Modelling choices:
- Links joined by fixed joints form one rigid body; their inertials are merged into the nearest
  moving ancestor (links fixed to the root do not move and carry no dynamics). Links without an
  ``<inertial>`` are massless; a model with no inertial at all raises :class:`ModelError`.
- A mimic joint moves by ``multiplier × source velocity``; the torque on the source is its own
  plus ``multiplier ×`` the follower's, so ``tau = Jᵀ f`` with the columns of :mod:`.jacobians`.
- Floating joints: ``v = [linear; angular]`` in the child frame (Pinocchio's convention).
  Planar joints: ``v = [ẋ, ẏ, θ̇]`` in the joint frame, as ``q``.
- External wrenches ``f_ext (..., n_links, 6)`` are ``[force; torque]`` applied to each link,
  in world axes, torque about the world origin (Pinocchio takes them in each joint's frame).
- Joint friction and damping (URDF ``<dynamics>``) and rotor inertia are ignored.

Generated kernels: for models without floating or planar joints, :func:`rnea`,
:func:`gravity_torques`, :func:`nonlinear_effects`, :func:`coriolis_torques`, :func:`crba`,
:func:`aba` and :func:`center_of_mass` run per-robot straight-line code from
:mod:`robokin_ros.codegen_dynamics` (faster for one configuration and for batches);
``robokin_ros.kinematics.use_generated_kernels = False`` or external wrenches select the generic
kernels below, which are the generated code's oracle.
Once a kernel is compiled by numba (:mod:`robokin_ros.accel`, :func:`prepare`), a single
configuration given as 1-D float64 arrays with the default gravity goes straight to its compiled
single-configuration entry, which checks lengths and finiteness itself; anything else, or a
failed check, takes the full path below (which raises the typed errors naming the culprit).

Internally arrays are component-first and batch-last (a spatial vector per body is ``(6, n, B)``)
so every arithmetic operation runs over a contiguous batch; Python loops run over depth levels.
"""

from __future__ import annotations

import math
import weakref

import numpy as np
from numpy.typing import NDArray

from . import accel, kinematics
from .codegen_dynamics import compiled_center_of_mass, compiled_crba, compiled_forward_dynamics, compiled_rnea
from .errors import ModelError, NonFiniteError, ShapeError
from .inertia import (
    apply_inertia,
    cross,
    force_cross,
    inertia_matrix,
    merge_inertials,
    motion_cross,
    rotate,
    world_inertia,
)
from .kinematics import _compose, _other_joint_motion, _plan, plane_frame
from .model import JointType, RobotModel

Array = NDArray[np.float64]

#: Standard gravity along -z [m/s²].
GRAVITY = (0.0, 0.0, -9.81)
_STANDARD_GRAVITY = np.array(GRAVITY)
_NO_GRAVITY = (0.0, 0.0, 0.0)

_TREES: weakref.WeakKeyDictionary[RobotModel, _Tree] = weakref.WeakKeyDictionary()


def _unique_parent_groups(children: np.ndarray, parents: np.ndarray) -> list:
    """Split ``children`` into groups whose ``parents`` are distinct (for accumulating into parents)."""
    groups, rank = [], {}
    order = np.zeros(len(children), np.int64)
    for k, par in enumerate(parents):
        order[k] = rank.get(int(par), 0)
        rank[int(par)] = order[k] + 1
    for r in range(int(order.max(initial=-1)) + 1):
        sel = np.flatnonzero((order == r) & (parents > 0))   # the root never moves: skip it
        if sel.size:
            groups.append((sel, parents[sel]))
    return groups


class _Tree:
    """Constant data of the dynamics kernels for one model (built once, cached per model).

    Bodies are the moving links (body 0 is the root); a link attached by fixed joints belongs
    to the body of its nearest moving ancestor. Columns are the joints' motion directions, each
    with its v index and scale (mimic multiplier).
    """

    def __init__(self, model: RobotModel):
        plan = _plan(model)
        self.plan = plan
        moving = np.sort(np.concatenate([[0]] + [np.asarray(lv) for lv in plan.levels]).astype(np.int64))
        nb = len(moving)
        body_of_moving = {int(link): b for b, link in enumerate(moving)}
        link_body = np.array([body_of_moving[int(i) if i in body_of_moving else int(plan.anchor[i])]
                              for i in range(model.n_links)])
        self.n_bodies, self.body_links, self.link_body = nb, moving, link_body
        self.parent = np.array([-1] + [body_of_moving[int(plan.anchor[i])] for i in moving[1:]])
        self.levels = []   # per depth: bodies, their parents, groups with distinct parents
        for lv in plan.levels:
            b = np.array([body_of_moving[int(i)] for i in lv], np.int64)
            self.levels.append((b, self.parent[b], _unique_parent_groups(b, self.parent[b])))
        # merged inertials, in body frames
        self.mass, self.com, self.I_com = np.zeros(nb), np.zeros((nb, 3)), np.zeros((nb, 3, 3))
        for b in range(nb):
            links = np.flatnonzero(link_body == b)
            C = np.array([np.eye(4) if i == moving[b] else plan.C[i] for i in links])
            coms = np.einsum("kij,kj->ki", C[:, :3, :3], model.link_coms[links]) + C[:, :3, 3]
            inertias = C[:, :3, :3] @ model.link_inertias[links] @ np.swapaxes(C[:, :3, :3], 1, 2)
            self.mass[b], self.com[b], self.I_com[b] = merge_inertials(model.link_masses[links], coms, inertias)
        self.subtree_mass = self.mass.copy()
        self.subtree_inertia = self.mass + np.trace(self.I_com, axis1=1, axis2=2)
        for b in range(nb - 1, 0, -1):
            self.subtree_mass[self.parent[b]] += self.subtree_mass[b]
            self.subtree_inertia[self.parent[b]] += self.subtree_inertia[b]
        self.has_inertial = bool(model.link_has_inertial.any())
        self.fast: dict = {}   # accelerated single-configuration kernels by public call (see _fast)
        self._columns(model, body_of_moving)

    def _columns(self, model: RobotModel, body_of_moving: dict) -> None:
        plan = self.plan
        self.sc_body = np.array([body_of_moving[int(i)] for i in plan.scalar_links], np.int64)
        j = plan.scalar_links - 1
        src = model.velocity_source_joints[j]
        self.sc_axis = model.joint_axes[j].T[:, :, None]                            # (3, ns, 1)
        self.sc_rev = np.flatnonzero(plan.revolute)
        self.sc_pri = np.flatnonzero(~plan.revolute)
        self.Rc_A2 = plan.Rc + plan.A2      # R_c Rot(u, θ) = (R_c + R_c K²) + sin θ R_c K - cos θ R_c K²
        col_body, col_v, col_scale = list(self.sc_body), list(model.joint_v_index[src]), list(plan.scalar_mult)
        self.others = []   # (body, joint, type, first column, n columns)
        for link in plan.other_links:
            jt = int(link) - 1
            nv = int(model.joint_nv[jt])
            self.others.append((body_of_moving[int(link)], jt, JointType(model.joint_types[jt]), len(col_body), nv))
            col_body += [body_of_moving[int(link)]] * nv
            col_v += list(range(model.joint_v_index[jt], model.joint_v_index[jt] + nv))
            col_scale += [1.0] * nv
        self.col_body, self.col_v = np.array(col_body, np.int64), np.array(col_v, np.int64)
        self.col_scale = np.array(col_scale)
        self.n_cols = len(col_body)
        self.has_mimic = bool(np.any(model.is_mimic[~model.is_fixed]))
        self.col_of_body = {b: np.flatnonzero(self.col_body == b) for b in range(self.n_bodies)}
        # CRBA: pairs of columns (a, c) where a's body supports c's body (a <= c on one body),
        # reduced onto the lower triangle of M (mimic columns share v entries).
        support = np.zeros((self.n_bodies, self.n_bodies), bool)   # support[b, k]: k supports b
        for b in range(self.n_bodies):
            support[b, b] = True
            if b:
                support[b] |= support[self.parent[b]]
        a_idx, c_idx = np.nonzero(support[self.col_body][:, self.col_body].T)   # a supports c
        keep = (self.col_body[a_idx] != self.col_body[c_idx]) | (a_idx <= c_idx)
        a_idx, c_idx = a_idx[keep], c_idx[keep]
        va, vc = self.col_v[a_idx], self.col_v[c_idx]
        weight = self.col_scale[a_idx] * self.col_scale[c_idx] * np.where((va == vc) & (a_idx != c_idx), 2.0, 1.0)
        row, col = np.maximum(va, vc), np.minimum(va, vc)
        order = np.argsort(row * model.n_v + col, kind="stable")
        self.pair_a, self.pair_c, self.pair_w = a_idx[order], c_idx[order], weight[order]
        target = (row * model.n_v + col)[order]
        self.pair_start = np.flatnonzero(np.r_[True, target[1:] != target[:-1]]) if target.size \
            else np.zeros(0, np.int64)   # no movable joint: M is (0, 0)
        rows, cols = target[self.pair_start] // model.n_v, target[self.pair_start] % model.n_v
        self.M_lower, self.M_upper = rows * model.n_v + cols, cols * model.n_v + rows
        self.unit_weights = bool(np.all(self.pair_w == 1.0)) and len(self.pair_start) == len(target)
        # ABA: per level, groups of bodies with their columns (k, L): all scalar bodies, then each other body
        sc_pos = {int(b): k for k, b in enumerate(self.sc_body)}
        self.aba_levels = []
        for bodies, parents, groups in self.levels:
            scalar = np.array([k for k, b in enumerate(bodies) if int(b) in sc_pos], np.int64)
            parts = []
            if scalar.size:
                parts.append((scalar, np.array([[sc_pos[int(bodies[k])] for k in scalar]])))
            for k, b in enumerate(bodies):
                if int(b) not in sc_pos:
                    parts.append((np.array([k]), self.col_of_body[int(b)][:, None]))
            self.aba_levels.append((bodies, parents, groups, parts))
        moved = np.zeros(model.n_v)   # mass and inertia each v coordinate moves
        np.add.at(moved, self.col_v, self.subtree_inertia[self.col_body])
        self.massless_coordinates = tuple(model.v_names[i] for i in np.flatnonzero(moved <= 0.0))


def _tree(model: RobotModel) -> _Tree:
    tree = _TREES.get(model)
    if tree is None:
        tree = _TREES[model] = _Tree(model)
    return tree


def _dynamic_tree(model: RobotModel) -> _Tree:
    tree = _tree(model)
    if not tree.has_inertial:
        raise ModelError(f"model {model.name!r} has no <inertial> on any link: dynamics need masses and inertias")
    return tree


# ---------------------------------------------------------------------------------------- input checks
def _vector(value, name: str, size: int, labels) -> Array:
    value = np.asarray(value, dtype=float)
    if value.ndim == 0 or value.shape[-1] != size:
        raise ShapeError(name, f"(..., {size})", value.shape)
    finite = np.isfinite(value)
    if not finite.all():
        bad = sorted(set(np.nonzero(~finite)[-1].tolist()))
        raise NonFiniteError(name, bad, [labels[i] for i in bad])
    return value


def _inputs(model: RobotModel, q, vectors: dict, f_ext=None):
    """Check and flatten inputs: ``qb (B, n_q)``, vectors ``(B, n_v)``, f_ext ``(B, n_links, 6)``, batch shape."""
    q = model.check_q(q)
    arrays = {k: _vector(v, k, model.n_v, model.v_names) for k, v in vectors.items()}
    shapes = [q.shape[:-1]] + [a.shape[:-1] for a in arrays.values()]
    if f_ext is not None:
        f_ext = np.asarray(f_ext, dtype=float)
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


def _chunked(kernel, qb: Array, *arrays, axis: int = -1) -> Array:
    """``kernel(qb, *arrays)`` over chunks of the batch, arrays turned batch-last (``(B, k) -> (k, B)``,
    ``(B, n, 6) -> (6, n, B)``); results joined along ``axis``."""
    parts = []
    for start in range(0, max(len(qb), 1), CHUNK):
        chunk = slice(start, start + CHUNK)
        args = [None if a is None else np.ascontiguousarray(a[chunk].transpose()) for a in arrays]
        parts.append(kernel(qb[chunk], *args))
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=axis)


def _gravity(gravity) -> Array:
    if gravity is GRAVITY:
        return _STANDARD_GRAVITY
    g = np.asarray(gravity, dtype=float)
    if g.shape != (3,):
        raise ShapeError("gravity", "(3,)", g.shape)
    if not np.isfinite(g).all():
        raise NonFiniteError("gravity", np.flatnonzero(~np.isfinite(g)).tolist())
    return g


# ---------------------------------------------------------------------------------------- kernels
def _frames(model: RobotModel, tree: _Tree, qb: Array) -> tuple[Array, Array]:
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
        T = plan.C[link] @ _other_joint_motion(model, link, qb)
        Rl[:, :, body], pl[:, body] = np.moveaxis(T[:, :3, :3], 0, -1), T[:, :3, 3].T
    for bodies, parents, _ in tree.levels:
        R[:, :, bodies], p[:, bodies] = _compose(R[:, :, parents], p[:, parents], Rl[:, :, bodies], pl[:, bodies])
    return R, p


def _motion_columns(model: RobotModel, tree: _Tree, R: Array, p: Array) -> Array:
    """Every joint's motion direction in the world frame ``(6, n_cols, B)`` (mimic: unscaled)."""
    S = np.zeros((6, tree.n_cols) + p.shape[2:])
    if tree.sc_body.size:
        u = rotate(R[:, :, tree.sc_body], tree.sc_axis)                          # (3, ns, B)
        rev, pri = tree.sc_rev, tree.sc_pri
        S[:3, rev] = cross(p[:, tree.sc_body[rev]], u[:, rev])
        S[3:, rev] = u[:, rev]
        S[:3, pri] = u[:, pri]
    for body, joint, kind, c0, nv in tree.others:
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


def _joint_motion(tree: _Tree, S: Array, x: Array, B: int) -> Array:
    """Per body, ``Σ_columns S x`` ``(6, nb, B)`` for column rates ``x (n_cols, B)``."""
    out = np.zeros((6, tree.n_bodies, B))
    ns = tree.sc_body.size
    out[:, tree.sc_body] = S[:, :ns] * x[:ns]
    for body, _, _, c0, nv in tree.others:
        out[:, body] = np.einsum("ikb,kb->ib", S[:, c0:c0 + nv], x[c0:c0 + nv])
    return out


def _velocities(tree: _Tree, vJ: Array) -> Array:
    V = np.zeros_like(vJ)
    for bodies, parents, _ in tree.levels:
        V[:, bodies] = V[:, parents] + vJ[:, bodies]
    return V


def _bias(tree: _Tree, S: Array, V: Array, vJ: Array, xd: Array) -> Array:
    """Velocity-product acceleration of each body's joint ``(6, nb, B)``: ``Ṡ q̇``."""
    c = motion_cross(V, vJ)
    for body, _, kind, c0, _ in tree.others:
        if kind == JointType.PLANAR:   # the in-plane translations are fixed in the parent, not the child
            t = S[:3, c0] * xd[c0] + S[:3, c0 + 1] * xd[c0 + 1]
            c[:3, body] += cross(t, S[3:, c0 + 2] * xd[c0 + 2])
    return c


def _body_inertias(tree: _Tree, R: Array, p: Array) -> tuple[Array, Array, Array]:
    mass = tree.mass[:, None]
    h, I_o = world_inertia(mass, tree.com.T[:, :, None], np.moveaxis(tree.I_com, 0, -1)[..., None], R, p)
    return mass, h, I_o


def _inward(tree: _Tree, F: Array) -> Array:
    """Subtree sums over the last-but-one axis, in place (the root's entry is left partial)."""
    for bodies, _, groups in reversed(tree.levels):
        for sel, parents in groups:
            F[..., parents, :] += F[..., bodies[sel], :]
    return F


def _to_v(model: RobotModel, tree: _Tree, per_column: Array) -> Array:
    """Column values ``(n_cols, ...)`` summed into v coordinates ``(n_v, ...)`` with mimic scales."""
    out = np.zeros((model.n_v,) + per_column.shape[1:])
    if tree.has_mimic:
        np.add.at(out, tree.col_v, per_column * tree.col_scale.reshape((-1,) + (1,) * (per_column.ndim - 1)))
    else:
        out[tree.col_v] = per_column
    return out


def _rnea(model, tree, qb, v, a, f_ext, g) -> Array:
    """Joint forces ``(n_v, B)``."""
    B = qb.shape[0]
    R, p = _frames(model, tree, qb)
    S = _motion_columns(model, tree, R, p)
    xd = v[tree.col_v] * tree.col_scale[:, None]
    vJ = _joint_motion(tree, S, xd, B)
    V = _velocities(tree, vJ)
    aJ = _joint_motion(tree, S, a[tree.col_v] * tree.col_scale[:, None], B) + _bias(tree, S, V, vJ, xd)
    A = np.empty_like(aJ)
    A[:3, 0], A[3:, 0] = -g[:, None], 0.0
    for bodies, parents, _ in tree.levels:
        A[:, bodies] = A[:, parents] + aJ[:, bodies]
    mass, h, I_o = _body_inertias(tree, R, p)
    F = apply_inertia(mass, h, I_o, A) + force_cross(V, apply_inertia(mass, h, I_o, V))
    if f_ext is not None:
        F -= np.einsum("ilb,lk->ikb", f_ext, np.eye(tree.n_bodies)[tree.link_body])
    _inward(tree, F)
    tau = np.einsum("icb,icb->cb", S, F[:, tree.col_body])
    return _to_v(model, tree, tau)


def _crba(model, tree, qb) -> Array:
    """Mass matrices ``(B, n_v, n_v)``."""
    B = qb.shape[0]
    R, p = _frames(model, tree, qb)
    S = _motion_columns(model, tree, R, p)
    _, h, I_o = _body_inertias(tree, R, p)
    hI = _inward(tree, np.concatenate([h, I_o]))                 # composite inertias
    cb = tree.col_body
    F = apply_inertia(tree.subtree_mass[cb, None], hI[:3, cb], hI[3:, cb], S)
    vals = np.einsum("ipb,ipb->pb", S[:, tree.pair_a], F[:, tree.pair_c])
    if not tree.unit_weights:
        vals = np.add.reduceat(vals * tree.pair_w[:, None], tree.pair_start, axis=0)
    M = np.zeros((B, model.n_v * model.n_v))
    M[:, tree.M_lower] = vals.T
    M[:, tree.M_upper] = vals.T
    return M.reshape(B, model.n_v, model.n_v)


def _aba(model, tree, qb, v, tau, f_ext, g) -> Array:
    """Joint accelerations ``(n_v, B)`` of a model without mimic joints."""
    B = qb.shape[0]
    R, p = _frames(model, tree, qb)
    S = _motion_columns(model, tree, R, p)
    xd = v[tree.col_v]
    vJ = _joint_motion(tree, S, xd, B)
    V = _velocities(tree, vJ)
    c = _bias(tree, S, V, vJ, xd)
    mass, h, I_o = _body_inertias(tree, R, p)
    IA = inertia_matrix(np.broadcast_to(mass, h.shape[1:]), h, I_o)       # (6, 6, nb, B)
    pA = force_cross(V, apply_inertia(mass, h, I_o, V))
    if f_ext is not None:
        pA -= np.einsum("ilb,lk->ikb", f_ext, np.eye(tree.n_bodies)[tree.link_body])
    u_all = tau[tree.col_v]                                                 # (n_cols, B)
    saved = []
    for bodies, parents, groups, parts in reversed(tree.aba_levels):
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
                Dinv = np.moveaxis(np.linalg.inv(np.moveaxis(D, (0, 1), (-2, -1))), (-2, -1), (0, 1))
            UD = np.einsum("iklb,kmlb->imlb", U, Dinv)
            Ia[:, :, pos] = IA[:, :, b] - np.einsum("iklb,jklb->ijlb", UD, U)
            pa[:, pos] = pA[:, b] + np.einsum("ijlb,jlb->ilb", Ia[:, :, pos], c[:, b]) + np.einsum("iklb,klb->ilb", UD, u)
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


def _aba_by_solve(model, tree, qb, v, tau, f_ext, g) -> Array:
    """Joint accelerations ``(n_v, B)`` from ``M a = tau - h`` (models with mimic joints)."""
    rhs = tau - _rnea(model, tree, qb, v, np.zeros_like(v), f_ext, g)
    return np.linalg.solve(_crba(model, tree, qb), rhs.T[..., None])[..., 0].T


# ---------------------------------------------------------------------------------------- generated kernels
def _generated(kernel, model: RobotModel, q, vectors: dict, g: Array) -> Array | None:
    """``kernel`` (a :mod:`.codegen_dynamics` kernel) on checked inputs, shaped ``batch + output``;
    None when there is no kernel or generated kernels are switched off
    (``kinematics.use_generated_kernels``)."""
    if kernel is None:
        return None
    flat = _single_flat(model, q, vectors)
    if flat is not None:
        return kernel.single_flat(flat + g.tolist() if kernel.gravity_input else flat)
    qb, x, _, batch = _inputs(model, q, vectors)
    inputs = [qb, *x.values()]
    if kernel.gravity_input:
        inputs.append(np.broadcast_to(g, (len(qb), 3)))
    if not batch:
        return kernel.single(*(a[0] for a in inputs))
    return kernel.batch(*inputs).reshape(batch + kernel.shape)


def _single_flat(model: RobotModel, q, vectors: dict) -> list | None:
    """The fast path of one configuration: ``q`` and the vectors as one list of floats when each
    is a 1-D float64 array of its size and their sum is finite; else None (full checks follow)."""
    flat = []
    for x, n in zip((q, *vectors.values()), (model.n_q,) + (model.n_v,) * len(vectors)):
        if type(x) is not np.ndarray or x.shape != (n,) or x.dtype != np.float64:
            return None
        flat += x.tolist()
    return flat if math.isfinite(sum(flat)) else None


def _fast(model: RobotModel, key: str, *vectors) -> Array | None:
    """One configuration through the numba-compiled single entry registered as ``key`` (see
    :func:`_register`), or None: no such entry, kernels switched off, or inputs that are not
    1-D C-contiguous float64 arrays of the right lengths with finite entries (the caller then
    takes the full path, which raises the typed errors)."""
    tree = _TREES.get(model)
    if tree is None:
        return None
    kernel = tree.fast.get(key)
    if kernel is None or not kinematics.use_generated_kernels or not accel.enabled:
        return None
    for x in vectors:
        if type(x) is not np.ndarray or x.ndim != 1:
            return None
    out = np.empty(kernel.shape)
    try:
        status = kernel.accelerated_single(*vectors, out)
    except TypeError:   # another dtype, non-contiguous or read-only: numba has no such signature
        return None
    return None if status else out


def _register(model: RobotModel, key: str, kernel) -> None:
    """Make ``kernel``'s compiled single entry the fast path ``key`` of ``model`` once it is
    loaded (called after a checked call, so the model-level checks have passed)."""
    if kernel is not None and kernel.accelerated_single is not None:
        _tree(model).fast[key] = kernel


def _rnea_kernel(model: RobotModel, with_v: bool, with_a: bool, g: Array):
    return compiled_rnea(model, with_v, with_a, g) if kinematics.use_generated_kernels else None


def _crba_kernel(model: RobotModel):
    return compiled_crba(model) if kinematics.use_generated_kernels else None


# ---------------------------------------------------------------------------------------- public API
def _out(x: Array, batch: tuple) -> Array:
    """``(k, B)`` internal result as ``(..., k)``."""
    return np.ascontiguousarray(x.T).reshape(batch + x.shape[:1])


def rnea(model: RobotModel, q, v, a, gravity=GRAVITY, f_ext=None) -> Array:
    """Inverse dynamics by the recursive Newton–Euler algorithm: ``tau = M(q) a + h(q, v) - Jᵀ f_ext``.

    Args:
        model: the robot (needs inertials).
        q: configurations ``(..., n_q)``; v: velocities ``(..., n_v)``; a: accelerations
            ``(..., n_v)`` [rad/s², m/s²]. Batch dimensions broadcast together.
        gravity: ``(3,)`` [m/s²] in the world (root) frame.
        f_ext: optional external wrenches ``(..., n_links, 6)`` [N, N m] on each link:
            [force; torque], world axes, torque about the world origin.

    Returns:
        Joint forces ``tau (..., n_v)`` [N m, N].

    Raises:
        ModelError: the model has no inertial. ShapeError, NonFiniteError: bad inputs.
    """
    if f_ext is None and gravity is GRAVITY:
        tau = _fast(model, "rnea", q, v, a)
        if tau is not None:
            return tau
    tree = _dynamic_tree(model)
    g = _gravity(gravity)
    if f_ext is None:
        kernel = _rnea_kernel(model, True, True, g)
        tau = _generated(kernel, model, q, {"v": v, "a": a}, g)
        if tau is not None:
            if gravity is GRAVITY:
                _register(model, "rnea", kernel)
            return tau
    qb, x, f, batch = _inputs(model, q, {"v": v, "a": a}, f_ext)
    return _out(_chunked(lambda *args: _rnea(model, tree, *args, g), qb, x["v"], x["a"], f), batch)


def gravity_torques(model: RobotModel, q, gravity=GRAVITY) -> Array:
    """Joint forces holding the robot still against gravity, ``g(q) (..., n_v)`` [N m, N].

    Raises:
        ModelError: the model has no inertial. ShapeError, NonFiniteError: bad ``q``.
    """
    if gravity is GRAVITY:
        tau = _fast(model, "gravity", q)
        if tau is not None:
            return tau
    tree = _dynamic_tree(model)
    g = _gravity(gravity)
    kernel = _rnea_kernel(model, False, False, g)
    tau = _generated(kernel, model, q, {}, g)
    if tau is not None:
        if gravity is GRAVITY:
            _register(model, "gravity", kernel)
        return tau
    qb, _, _, batch = _inputs(model, q, {})
    zero = np.zeros((1, model.n_v))
    return _out(_chunked(lambda qc: _rnea(model, tree, qc, zero.T, zero.T, None, g), qb), batch)


def nonlinear_effects(model: RobotModel, q, v, gravity=GRAVITY) -> Array:
    """Coriolis, centrifugal and gravity forces ``h(q, v) = C(q, v) v + g(q)`` ``(..., n_v)``.

    Raises:
        ModelError: the model has no inertial. ShapeError, NonFiniteError: bad inputs.
    """
    key = "nle" if gravity is GRAVITY else "coriolis" if gravity is _NO_GRAVITY else None
    if key is not None:
        h = _fast(model, key, q, v)
        if h is not None:
            return h
    tree = _dynamic_tree(model)
    g = _gravity(gravity)
    kernel = _rnea_kernel(model, True, False, g)
    h = _generated(kernel, model, q, {"v": v}, g)
    if h is not None:
        if key is not None:
            _register(model, key, kernel)
        return h
    qb, x, _, batch = _inputs(model, q, {"v": v})
    zero = np.zeros((model.n_v, 1))
    return _out(_chunked(lambda qc, vc: _rnea(model, tree, qc, vc, zero, None, g), qb, x["v"]), batch)


def coriolis_torques(model: RobotModel, q, v) -> Array:
    """Coriolis and centrifugal forces ``C(q, v) v (..., n_v)`` (no gravity).

    Raises:
        ModelError: the model has no inertial. ShapeError, NonFiniteError: bad inputs.
    """
    return nonlinear_effects(model, q, v, gravity=_NO_GRAVITY)


def crba(model: RobotModel, q) -> Array:
    """Joint-space inertia matrix by the composite-rigid-body algorithm.

    Args:
        q: configurations ``(..., n_q)``.

    Returns:
        ``M (..., n_v, n_v)`` [kg m², kg], symmetric positive (semi-)definite, both triangles filled.

    Raises:
        ModelError: the model has no inertial. ShapeError, NonFiniteError: bad ``q``.
    """
    M = _fast(model, "crba", q)
    if M is not None:
        return M
    tree = _dynamic_tree(model)
    kernel = _crba_kernel(model)
    M = _generated(kernel, model, q, {}, None)
    if M is not None:
        _register(model, "crba", kernel)
        return M
    qb, _, _, batch = _inputs(model, q, {})
    return _chunked(lambda qc: _crba(model, tree, qc), qb, axis=0).reshape(batch + (model.n_v, model.n_v))


def aba(model: RobotModel, q, v, tau, gravity=GRAVITY, f_ext=None) -> Array:
    """Forward dynamics by the articulated-body algorithm: ``a = M⁻¹ (tau + Jᵀ f_ext - h)``.

    Models with mimic joints (a constraint ABA cannot express) solve ``M a = tau - h`` with
    :func:`crba` and :func:`rnea` instead; so does the generated kernel (generated CRBA and RNEA
    and a sparse ``Lᵀ D L`` factorisation of ``M``, in one function), used when the model has
    one and ``f_ext`` is None.

    Args:
        q: ``(..., n_q)``; v: ``(..., n_v)``; tau: joint forces ``(..., n_v)`` [N m, N].
        gravity, f_ext: as in :func:`rnea`.

    Returns:
        Accelerations ``a (..., n_v)``.

    Raises:
        ModelError: no inertial, or a joint that moves no mass (M singular).
        ShapeError, NonFiniteError: bad inputs.
    """
    if f_ext is None and gravity is GRAVITY:
        acc = _fast(model, "aba", q, v, tau)
        if acc is not None:
            return acc
    tree = _dynamic_tree(model)
    if tree.massless_coordinates:
        raise ModelError(f"coordinates {list(tree.massless_coordinates)} move no mass: the mass matrix is singular")
    g = _gravity(gravity)
    if f_ext is None and kinematics.use_generated_kernels:
        kernel = compiled_forward_dynamics(model, g)
        acc = _generated(kernel, model, q, {"v": v, "tau": tau}, g)
        if acc is not None:
            if gravity is GRAVITY:
                _register(model, "aba", kernel)
            return acc
    qb, x, f, batch = _inputs(model, q, {"v": v, "tau": tau}, f_ext)
    kernel = _aba_by_solve if tree.has_mimic else _aba
    return _out(_chunked(lambda *args: kernel(model, tree, *args, g), qb, x["v"], x["tau"], f), batch)


#: The calls :func:`prepare` can accelerate, with their single-call keys and kernel factories.
_PREPARABLE = {
    "rnea": ("rnea", lambda model: compiled_rnea(model, True, True, _STANDARD_GRAVITY)),
    "gravity_torques": ("gravity", lambda model: compiled_rnea(model, False, False, _STANDARD_GRAVITY)),
    "nonlinear_effects": ("nle", lambda model: compiled_rnea(model, True, False, _STANDARD_GRAVITY)),
    "coriolis_torques": ("coriolis", lambda model: compiled_rnea(model, True, False, np.zeros(3))),
    "crba": ("crba", compiled_crba),
    "aba": ("aba", lambda model: compiled_forward_dynamics(model, _STANDARD_GRAVITY)),
    "center_of_mass": ("com", compiled_center_of_mass),
}


def prepare(model: RobotModel, calls=("rnea", "gravity_torques", "crba", "aba")) -> bool:
    """Compile (or load from the disk cache) the numba kernels of ``calls`` now (default
    gravity), so that even their first single calls use them (e.g. at a controller's start-up).

    Without it a kernel is loaded in a background thread once
    :data:`robokin_ros.accel.MIN_BATCH` configurations have gone through it. Compiling takes
    1-6 s per kernel for an arm and up to ~90 s for Talos's forward dynamics, once per machine
    (then < 0.1 s per process).

    Args:
        calls: names among ``rnea``, ``gravity_torques``, ``nonlinear_effects``,
            ``coriolis_torques``, ``crba``, ``aba``, ``center_of_mass``.

    Returns:
        True when every kernel is accelerated; False when the accelerator is not active
        (:func:`robokin_ros.accel.active`) or the model has no generated kernel (floating or
        planar joints).

    Raises:
        ModelError: the model has no inertial. ValueError: an unknown name in ``calls``.
    """
    unknown = [c for c in calls if c not in _PREPARABLE]
    if unknown:
        raise ValueError(f"prepare: unknown calls {unknown}; choose among {sorted(_PREPARABLE)}")
    tree = _dynamic_tree(model)
    ready = True
    for call in calls:
        key, factory = _PREPARABLE[call]
        kernel = factory(model)
        if kernel is None or not kernel.accelerate():
            ready = False
        elif key != "aba" or not tree.massless_coordinates:   # aba of a singular M must raise
            _register(model, key, kernel)
    return ready


def total_mass(model: RobotModel) -> float:
    """Mass of every link, the root included [kg]."""
    return float(model.link_masses.sum())


def _com_parts(model: RobotModel, q):
    tree = _tree(model)
    if total_mass(model) <= 0.0:
        raise ModelError(f"model {model.name!r} has no mass: its centre of mass is undefined")
    qb, _, _, batch = _inputs(model, q, {})
    R, p = _frames(model, tree, qb)
    h = tree.mass[:, None] * (rotate(R, tree.com.T[:, :, None]) + p)      # (3, nb, B)
    return tree, R, p, h, batch


def center_of_mass(model: RobotModel, q) -> Array:
    """Centre of mass of the whole robot (every link, the root included) in the world frame.

    Args:
        q: configurations ``(..., n_q)``.

    Returns:
        ``(..., 3)`` [m].

    Raises:
        ModelError: the model has no mass. ShapeError, NonFiniteError: bad ``q``.
    """
    c = _fast(model, "com", q)
    if c is not None:
        return c
    if kinematics.use_generated_kernels:
        if total_mass(model) <= 0.0:
            raise ModelError(f"model {model.name!r} has no mass: its centre of mass is undefined")
        kernel = compiled_center_of_mass(model)
        c = _generated(kernel, model, q, {}, None)
        if c is not None:
            _register(model, "com", kernel)
            return c
    _, _, _, h, batch = _com_parts(model, q)
    return _out(h.sum(axis=1) / total_mass(model), batch)


def center_of_mass_jacobian(model: RobotModel, q) -> Array:
    """Jacobian of :func:`center_of_mass`: ``ċ = J v``.

    Returns:
        ``(..., 3, n_v)`` [m per unit v], world axes.

    Raises:
        ModelError: the model has no mass. ShapeError, NonFiniteError: bad ``q``.
    """
    tree, R, p, h, batch = _com_parts(model, q)
    S = _motion_columns(model, tree, R, p)
    hs = _inward(tree, h)                                                   # subtree first moments
    cb = tree.col_body
    J = (tree.subtree_mass[cb, None] * S[:3] + cross(S[3:], hs[:, cb])) / total_mass(model)   # (3, nc, B)
    J = _to_v(model, tree, np.moveaxis(J, 0, -1))                           # (n_v, B, 3)
    return np.ascontiguousarray(J.transpose(1, 2, 0)).reshape(batch + (3, model.n_v))


def kinetic_energy(model: RobotModel, q, v) -> Array:
    """Kinetic energy ``½ vᵀ M(q) v`` ``(...)`` [J].

    Raises:
        ModelError: the model has no inertial. ShapeError, NonFiniteError: bad inputs.
    """
    tree = _dynamic_tree(model)
    qb, x, _, batch = _inputs(model, q, {"v": v})
    R, p = _frames(model, tree, qb)
    S = _motion_columns(model, tree, R, p)
    V = _velocities(tree, _joint_motion(tree, S, x["v"].T[tree.col_v] * tree.col_scale[:, None], qb.shape[0]))
    mass, h, I_o = _body_inertias(tree, R, p)
    return 0.5 * np.einsum("inb,inb->b", V, apply_inertia(mass, h, I_o, V)).reshape(batch)
