"""Per-model constant data of the kernels: the FK plan and the dynamics tree.

Both are built once per model and kept in :mod:`robokin_ros.model_cache`. The *FK plan* folds
fixed joints into constant placements: a link is placed relative to its nearest movable ancestor
(its *anchor*), each scalar joint's local rotation is ``R_c + sinθ (R_c K) + (1 - cosθ) (R_c K²)``
from precomputed constants, and the movable joints are grouped by depth *levels* (the Python
loops of the generic kernels run over levels, never over configurations). The *dynamics tree*
takes the plan's moving links as bodies, merges the inertials of links fixed to them, and lays
out the motion columns, CRBA pairs and ABA levels of :mod:`robokin_ros.dynamics`. Arrays are
component-first, batch-last (``(3, 3, n, 1)`` constants broadcast over a batch axis).
"""

from __future__ import annotations

import weakref

import numpy as np
from numpy.typing import NDArray

from .. import model_cache
from ..errors import ModelError
from ..model import SCALAR_TYPES, JointType, RobotModel
from ..spatial import quat_xyzw_to_matrix, rotation_about_axis, skew
from .spatial_algebra import merge_inertials

Array = NDArray[np.float64]


class FKPlan:
    """Constant data of the FK kernel for one model (built once, cached per model)."""

    def __init__(self, model: RobotModel):
        n = model.n_links
        parents = model.link_parents
        movable = np.zeros(n, bool)
        movable[1:] = ~model.is_fixed
        anchor = np.full(n, -1)
        C = np.tile(np.eye(4), (n, 1, 1))  # pose of link i's joint frame (fixed: the link) in its anchor
        for i in range(1, n):
            p = parents[i]
            if p == 0 or movable[p]:
                anchor[i], C[i] = p, model.joint_origins[i - 1]
            else:
                anchor[i], C[i] = anchor[p], C[p] @ model.joint_origins[i - 1]
        mdepth = np.zeros(n, np.int64)
        for i in range(1, n):
            if movable[i]:
                mdepth[i] = mdepth[anchor[i]] + 1
        self.levels = [np.flatnonzero(movable & (mdepth == d)) for d in range(1, int(mdepth.max(initial=0)) + 1)]
        self.anchor = anchor
        self.fixed_links = np.flatnonzero(~movable[1:]) + 1
        self.C = C
        types = np.concatenate([[JointType.FIXED], model.joint_types])
        scalar = movable & np.isin(types, SCALAR_TYPES)
        self.scalar_links = np.flatnonzero(scalar)
        self.other_links = np.flatnonzero(movable & ~scalar)  # floating and planar
        j = self.scalar_links - 1
        src = np.where(model.mimic_source[j] >= 0, model.mimic_source[j], j)
        self.scalar_q = model.joint_q_index[src]
        self.scalar_mult = model.mimic_multiplier[j]
        self.scalar_offset = model.mimic_offset[j]
        revolute = types[self.scalar_links] != JointType.PRISMATIC
        self.revolute = revolute
        axes = model.joint_axes[j]
        Rc = C[self.scalar_links, :3, :3]
        K = skew(axes)
        # R_c Rot(u, θ) = R_c + sinθ (R_c K) + (1 - cosθ) (R_c K²)
        self.Rc = np.moveaxis(Rc, 0, -1)[..., None]                     # (3, 3, ns, 1)
        self.A1 = np.moveaxis(Rc @ K, 0, -1)[..., None]
        self.A2 = np.moveaxis(Rc @ K @ K, 0, -1)[..., None]
        self.pc = np.moveaxis(C[self.scalar_links, :3, 3], 0, -1)[..., None]  # (3, ns, 1)
        self.Rc_u = np.moveaxis(np.einsum("kij,kj->ki", Rc, axes), 0, -1)[..., None]  # (3, ns, 1)
        self.model_ref = weakref.ref(model)


def other_joint_motion(model: RobotModel, link: int, q: Array) -> Array:
    """Motion transform ``(B, 4, 4)`` of a floating or planar joint (child link ``link``)."""
    j = link - 1
    i = model.joint_q_index[j]
    B = q.shape[0]
    M = np.tile(np.eye(4), (B, 1, 1))
    if model.joint_types[j] == JointType.FLOATING:
        M[:, :3, 3] = q[:, i:i + 3]
        M[:, :3, :3] = quat_xyzw_to_matrix(q[:, i + 3:i + 7])
        return M
    # Planar: translate (x, y) and rotate θ in the plane normal to the axis (a frame A with z = axis).
    A = plane_frame(model.joint_axes[j])
    M[:, :3, 3] = q[:, i:i + 2] @ A[:, :2].T
    M[:, :3, :3] = A @ rotation_about_axis(np.array([0.0, 0.0, 1.0]), q[:, i + 2]) @ A.T
    return M


def plane_frame(axis: Array) -> Array:
    """Rotation ``(3, 3)`` whose z column is ``axis`` (x, y span the plane of a planar joint).

    For the URDF default ``(0, 0, 1)`` it is the identity.
    """
    z = np.asarray(axis, float) / np.linalg.norm(axis)
    helper = np.array([1.0, 0.0, 0.0]) if abs(z[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    x = helper - z * (helper @ z)
    x /= np.linalg.norm(x)
    return np.stack([x, np.cross(z, x), z], axis=1)


def compose(Ra, pa, Rl, pl):
    """World pose of children from anchor poses and local poses, component-first batch-last."""
    R = Ra[:, 0, None] * Rl[0, None]
    R += Ra[:, 1, None] * Rl[1, None]
    R += Ra[:, 2, None] * Rl[2, None]
    p = Ra[:, 0] * pl[0] + Ra[:, 1] * pl[1] + Ra[:, 2] * pl[2] + pa
    return R, p


def unique_parent_groups(children: np.ndarray, parents: np.ndarray) -> list:
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


class DynamicsTree:
    """Constant data of the dynamics kernels for one model (built once, cached per model).

    Bodies are the moving links (body 0 is the root); a link attached by fixed joints belongs
    to the body of its nearest moving ancestor. Columns are the joints' motion directions, each
    with its v index and scale (mimic multiplier).
    """

    def __init__(self, model: RobotModel):
        plan = fk_plan(model)
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
            self.levels.append((b, self.parent[b], unique_parent_groups(b, self.parent[b])))
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


#: The registry kinds (:mod:`robokin_ros.model_cache`) of :func:`fk_plan` and :func:`dynamics_tree`.
FK_PLAN = "fk plan"
DYNAMICS_TREE = "dynamics tree"


def fk_plan(model: RobotModel) -> FKPlan:
    """The model's :class:`FKPlan` (built on first use)."""
    return model_cache.cached(model, FK_PLAN, None, FKPlan, (model,))


def dynamics_tree(model: RobotModel) -> DynamicsTree:
    """The model's :class:`DynamicsTree` (built on first use)."""
    return model_cache.cached(model, DYNAMICS_TREE, None, DynamicsTree, (model,))


def dynamics_tree_with_inertia(model: RobotModel) -> DynamicsTree:
    """:func:`dynamics_tree`, for the calls that need masses.

    Raises:
        ModelError: no link of the model has an ``<inertial>``.
    """
    tree = dynamics_tree(model)
    if not tree.has_inertial:
        raise ModelError(f"model {model.name!r} has no <inertial> on any link: dynamics need masses and inertias")
    return tree
