"""Inverse kinematics: batched Levenberg–Marquardt on the SE(3) pose error.

Joint limits hold coordinates at their bounds, random restarts run as extra rows, and every
operation is vectorised over problems × seeds.

Notation: a *problem* is one target set (a pose per tip) with one seed; a *row* is one
iterate of one problem (its seed, or a random restart). ``x`` are the problem's free
coordinates (the ``v`` coordinates of the joints allowed to move), ``e (6,)`` a tip's error
twist [linear; angular] in the target's axes: ``-[R_tᵀ (p_c - p_t); log(R_tᵀ R_c)]``, the motion
still to make, which pairs with the target-axes Jacobian ``blockdiag(R_tᵀ, R_tᵀ) J_LWA``.
"""

from __future__ import annotations

import dataclasses
import time
import weakref
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from .errors import JointLimitError, NonFiniteError, RobokinError, ShapeError
from .jacobians import LOCAL_WORLD_ALIGNED, jacobian
from .kinematics import forward_kinematics
from .model import SCALAR_TYPES, JointType, RobotModel
from .spatial import inverse_transform, log_so3, quat_xyzw_to_matrix, skew

Array = NDArray[np.float64]

#: Values of :attr:`IKResult.status`.
CONVERGED, MAX_ITERATIONS, TIMEOUT, NO_FREE_JOINTS = "converged", "max_iterations", "timeout", "no_free_joints"


class IKOptionError(RobokinError, ValueError):
    """An IK option with an invalid value (negative tolerance, weight or timeout, ...)."""


@dataclasses.dataclass(frozen=True)
class IKResult:
    """Outcome of :func:`solve_ik`, one entry per problem (batch shape ``...``).

    Attributes:
        q: ``(..., n_q)`` best configuration per problem: the converged solution closest to its
            seed, else the iterate with the smallest residual (the seed if nothing was better).
            Joints that may not move keep their seed values; continuous joints are reported
            within π of their seed value.
        success: ``(...)`` bool: every tip within its tolerances and ``q`` within the bounds.
        position_error: ``(...)`` [m] worst tip position error ``‖p_tip - p_target‖`` (raw,
            before per-axis tolerances are applied).
        rotation_error: ``(...)`` [rad] worst tip rotation angle ``|log(R_targetᵀ R_tip)|`` (raw).
        iterations: ``(...)`` int, iterations spent on the problem.
        status: ``(...)`` str: ``"converged"``, ``"max_iterations"`` (iteration budget spent),
            ``"timeout"`` (time budget spent) or ``"no_free_joints"`` (no allowed joint moves a tip).
    """

    q: Array
    success: np.ndarray
    position_error: Array
    rotation_error: Array
    iterations: np.ndarray
    status: np.ndarray


# ---------------------------------------------------------------------------------------------
# Configuration-space operations


def integrate(model: RobotModel, q, v) -> Array:
    """Move configurations ``q (..., n_q)`` by ``v (..., n_v)`` (one unit of time).

    Scalar and planar coordinates add; a floating joint moves its position by ``R v_linear``
    (the velocity is in the child frame) and its quaternion by ``exp(ω_local)`` on the right,
    renormalised. First order in ``v`` for floating joints, which is what IK steps need.

    Raises:
        ShapeError: ``q`` or ``v`` of the wrong length.
    """
    q = model.check_q(q)
    v = np.asarray(v, dtype=float)
    if v.ndim == 0 or v.shape[-1] != model.n_v:
        raise ShapeError("v", f"(..., {model.n_v})", v.shape)
    shape = np.broadcast_shapes(q.shape[:-1], v.shape[:-1])
    out = np.array(np.broadcast_to(q, shape + (model.n_q,)))
    v = np.broadcast_to(v, shape + (model.n_v,))
    for j in model.active_joints:
        i, k, nq = model.joint_q_index[j], model.joint_v_index[j], model.joint_nq[j]
        if model.joint_types[j] != JointType.FLOATING:
            out[..., i:i + nq] += v[..., k:k + nq]
            continue
        quat = out[..., i + 3:i + 7]
        out[..., i:i + 3] += (quat_xyzw_to_matrix(quat) @ v[..., k:k + 3, None])[..., 0]
        out[..., i + 3:i + 7] = _quat_multiply(quat, _quat_exp(v[..., k + 3:k + 6]))
    return out


def _quat_exp(w: Array) -> Array:
    """Quaternion ``(..., 4)`` xyzw of the rotation vector ``w (..., 3)``."""
    theta = np.linalg.norm(w, axis=-1, keepdims=True)
    half = 0.5 * theta
    scale = np.where(theta < 1e-8, 0.5 - theta**2 / 48.0, np.sin(half) / np.where(theta < 1e-8, 1.0, theta))
    return np.concatenate([w * scale, np.cos(half)], axis=-1)


def _quat_multiply(a: Array, b: Array) -> Array:
    """Hamilton product ``a ⊗ b`` of xyzw quaternions, normalised."""
    av, aw, bv, bw = a[..., :3], a[..., 3:], b[..., :3], b[..., 3:]
    out = np.concatenate([aw * bv + bw * av + np.cross(av, bv), aw * bw - np.sum(av * bv, -1, keepdims=True)], -1)
    return out / np.linalg.norm(out, axis=-1, keepdims=True)


def _wrap(angle: Array) -> Array:
    """Angles wrapped into (-π, π]."""
    return np.pi - np.mod(np.pi - angle, 2.0 * np.pi)


# ---------------------------------------------------------------------------------------------
# Kernels: tip poses and Jacobians in the target frames. Component-first, batch-last layout
# (rotations ``(3, 3, k, B)``, vectors ``(3, k, B)``) so each operation runs over whole batches.

#: Below this many rows, world poses are composed by pointer jumping (ceil(log2 depth) batched
#: steps, fewest numpy calls); from it on, level by level (fewest operations).
JUMP_ROWS = 48


def _compose(Ra: Array, pa: Array, Rb: Array, pb: Array) -> tuple[Array, Array]:
    """``T_a ∘ T_b`` component-first: ``R (3, 3, ...)``, ``p (3, ...)`` (broadcasting)."""
    R = Ra[:, 0, None] * Rb[0, None]
    R += Ra[:, 1, None] * Rb[1, None]
    R += Ra[:, 2, None] * Rb[2, None]
    p = Ra[:, 0] * pb[0]
    p += Ra[:, 1] * pb[1]
    p += Ra[:, 2] * pb[2]
    p += pa
    return R, p


def _cross(a: Array, b: Array) -> Array:
    """Cross products ``a × b`` over the first axis."""
    return np.stack([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


class _ChainKernel:
    """Fast kernel for trees whose moving joints (on the tips' supports) are all scalar.

    Nodes: 0 an identity sentinel, 1 the root link (placed at the target frame for one tip, at
    the world for several), then the movable links supporting a tip and the tips. A node's pose in its anchor (nearest
    movable ancestor) is ``R = Rc + A1 sin v + A2 (1 - cos v)``, ``p = pc + (Rc u) v_prismatic``.
    """

    def __init__(self, model: RobotModel, tips: Sequence[int], free_v: Array):
        n = model.n_links
        movable = np.zeros(n, bool)
        movable[1:] = ~model.is_fixed
        anchor, C = np.zeros(n, np.int64), np.tile(np.eye(4), (n, 1, 1))
        for i in range(1, n):  # placement of each link's joint frame in its anchor link
            p = model.link_parents[i]
            anchor[i], C[i] = (p, model.joint_origins[i - 1]) if p == 0 or movable[p] else \
                (anchor[p], C[p] @ model.joint_origins[i - 1])
        links = np.union1d(np.flatnonzero(model.support_mask[list(tips)].any(axis=0) & movable), tips)
        links = np.union1d(links, [0])
        # Node 0 is an identity sentinel, node 1 the root link (placed in the target frame for one
        # tip), nodes 2... the links; a finished pointer rests on the sentinel.
        node = {int(link): k + 1 for k, link in enumerate(links)}
        m = len(links) + 1
        self.tip_nodes = np.array([node[t] for t in tips])
        anc = np.array([0, 0] + [node[int(anchor[link])] for link in links[1:]])
        depth = np.zeros(m, np.int64)
        for k in range(1, m):
            depth[k] = depth[anc[k]] + 1
        self.anchor = anc
        self.levels = [np.flatnonzero(depth == d) for d in range(2, depth.max() + 1)]
        self.jumps = []  # pointer jumping: pose in ptr(k) <- pose of ptr(k) in ptr(ptr(k)) ∘ pose in ptr(k)
        for _ in range(int(np.ceil(np.log2(max(depth.max(), 1))))):
            self.jumps.append(anc)
            anc = anc[anc]
        Cn = np.concatenate([np.eye(4)[None], C[links]])  # the root link's C is the identity
        self.q_index = np.zeros(m, np.int64)
        self.mult, self.offset = np.zeros((m, 1)), np.zeros((m, 1))
        axes, revolute, prismatic = np.zeros((m, 3)), np.zeros(m, bool), np.zeros(m, bool)
        columns = []  # (node, free coordinate, scale)
        free_index = {int(k): c for c, k in enumerate(free_v)}
        for k, link in enumerate(links, start=1):
            j = link - 1
            if link == 0 or model.is_fixed[j]:
                continue
            src = model.mimic_source[j] if model.is_mimic[j] else j
            self.q_index[k] = model.joint_q_index[src]
            self.mult[k], self.offset[k] = model.mimic_multiplier[j], model.mimic_offset[j]
            axes[k] = model.joint_axes[j]
            prismatic[k] = model.joint_types[j] == JointType.PRISMATIC
            revolute[k] = not prismatic[k]
            if model.joint_v_index[src] in free_index:
                columns.append((k, free_index[model.joint_v_index[src]], model.mimic_multiplier[j] if model.is_mimic[j] else 1.0))
        K = skew(axes) * revolute[:, None, None]
        Rc = Cn[:, :3, :3]
        batch_last = lambda a: np.moveaxis(a, 0, -1)[..., None]  # noqa: E731  (m, ...) -> (..., m, 1)
        self.Rc, self.A1, self.A2 = batch_last(Rc), batch_last(Rc @ K), batch_last(Rc @ K @ K)
        self.pc = batch_last(Cn[:, :3, 3])
        self.Rc_u = batch_last(np.einsum("kij,kj->ki", Rc, axes) * prismatic[:, None])
        self.has_prismatic = bool(prismatic.any())
        # The same local poses as homogeneous (m, 4, 4) terms, for the few-row path.
        K4, E4 = np.zeros((m, 4, 4)), np.zeros((m, 4, 4))
        K4[:, :3, :3], E4[:, :3, 3] = K, axes * prismatic[:, None]
        self.H0, self.H1, self.H2, self.H3 = Cn, Cn @ K4, Cn @ K4 @ K4, Cn @ E4
        self.col_node = np.array([c[0] for c in columns], np.int64)
        self.col_axis = axes[self.col_node].T[:, :, None]                             # (3, nc, 1)
        self.col_revolute = revolute[self.col_node]
        # (n_tips, nc, 1) masks: column moves the tip, and is revolute / prismatic.
        sup = model.support_mask[np.ix_(list(tips), links[self.col_node - 1])] if columns else np.zeros((len(tips), 0), bool)
        self.rev_mask = (sup & self.col_revolute)[..., None].astype(float)
        self.pris_mask = (sup & ~self.col_revolute)[..., None].astype(float)
        select = np.zeros((len(columns), len(free_v)))
        select[np.arange(len(columns)), [c[1] for c in columns]] = [c[2] for c in columns]
        self.select = None if len(columns) == len(free_v) and np.array_equal(select, np.eye(len(free_v))) else select

    def evaluate(self, q: Array, Tinv: tuple[Array, Array]) -> tuple[Array, Array, Array]:
        """Tip poses in their target frames and the target-axes Jacobians.

        Args:
            q: ``(B, n_q)`` configurations.
            Tinv: target poses inverted, ``R (3, 3, n_tips, B)``, ``p (3, n_tips, B)`` (in the world).

        Returns:
            ``E_R (3, 3, n_tips, B)``, ``E_p (3, n_tips, B)`` (pose of each tip in its target frame)
            and ``J (6, n_tips, n_free, B)`` ([linear; angular], target axes, at the tip).
        """
        B = q.shape[0]
        single = Tinv[0].shape[2] == 1  # then the root is placed in the target frame
        if B < JUMP_ROWS:  # homogeneous (B, m, 4, 4) poses, pointer jumping: fewest numpy calls
            v = (q[:, self.q_index] * self.mult[:, 0] + self.offset[:, 0])[..., None, None]   # (B, m, 1, 1)
            P = self.H0 + self.H1 * np.sin(v) + self.H2 * (1.0 - np.cos(v))
            if self.has_prismatic:
                P += self.H3 * v
            if single:
                P[:, 1, :3, :3], P[:, 1, :3, 3] = Tinv[0][:, :, 0].transpose(2, 0, 1), Tinv[1][:, 0].T
            for anc in self.jumps:
                P = P[:, anc] @ P
            R, p = P[..., :3, :3].transpose(2, 3, 1, 0), P[..., :3, 3].transpose(2, 1, 0)
        else:  # component-first, level by level: fewest operations
            v = q[:, self.q_index].T * self.mult + self.offset                     # (m, B)
            R = self.Rc + self.A1 * np.sin(v) + self.A2 * (1.0 - np.cos(v))        # (3, 3, m, B)
            p = self.pc + self.Rc_u * v if self.has_prismatic else np.repeat(self.pc, B, axis=-1)
            if single:
                R[:, :, 1], p[:, 1] = Tinv[0][:, :, 0], Tinv[1][:, 0]
            for level in self.levels:
                a = self.anchor[level]
                R[:, :, level], p[:, level] = _compose(R[:, :, a], p[:, a], R[:, :, level], p[:, level])
        ER, Ep = R[:, :, self.tip_nodes], p[:, self.tip_nodes]                   # (3, 3, nt, B), (3, nt, B)
        Rc, o = R[:, :, self.col_node], p[:, self.col_node]
        w = (Rc * self.col_axis).sum(axis=1)                                       # (3, nc, B)
        if single:
            w, r = w[:, None], Ep[:, :, None] - o[:, None]                         # (3, 1, nc, B)
        else:  # tips and columns from the world into each target frame
            ER, Ep = _compose(Tinv[0], Tinv[1], ER, Ep)
            TR = Tinv[0][:, :, :, None]
            w = TR[:, 0] * w[0, None] + TR[:, 1] * w[1, None] + TR[:, 2] * w[2, None]
            r = Ep[:, :, None] - (TR[:, 0] * o[0, None] + TR[:, 1] * o[1, None] + TR[:, 2] * o[2, None] + Tinv[1][:, :, None])
        lin = _cross(w, r) * self.rev_mask
        if self.has_prismatic:
            lin += w * self.pris_mask
        J = np.concatenate([lin, np.broadcast_to(w * self.rev_mask, lin.shape)])  # (6, nt, nc, B)
        if self.select is not None:
            J = np.einsum("atcb,cf->atfb", J, self.select)
        return ER, Ep, J


class _GenericKernel:
    """Any joint type (floating, planar): the public FK and Jacobian functions."""

    def __init__(self, model: RobotModel, tips: Sequence[int], free_v: Array):
        self.model, self.tips, self.free_v = model, list(tips), free_v

    def evaluate(self, q: Array, Tinv: tuple[Array, Array]) -> tuple[Array, Array, Array]:
        """See :meth:`_ChainKernel.evaluate`."""
        T = forward_kinematics(self.model, q)
        J = np.stack([jacobian(self.model, q, self.model.link_names[t], LOCAL_WORLD_ALIGNED, poses=T)[..., self.free_v]
                      for t in self.tips])                                           # (nt, B, 6, nf)
        J = J.transpose(2, 0, 3, 1)                                                   # (6, nt, nf, B)
        W = T[:, self.tips]                                                           # (B, nt, 4, 4)
        ER, Ep = _compose(Tinv[0], Tinv[1], W[..., :3, :3].transpose(2, 3, 1, 0), W[..., :3, 3].transpose(2, 1, 0))
        TR = Tinv[0][:, :, :, None]
        lin, ang = J[:3], J[3:]
        J = np.concatenate([TR[:, 0] * lin[0, None] + TR[:, 1] * lin[1, None] + TR[:, 2] * lin[2, None],
                            TR[:, 0] * ang[0, None] + TR[:, 1] * ang[1, None] + TR[:, 2] * ang[2, None]])
        return ER, Ep, J


class _Plan:
    """What one (model, tips, base, active joints) problem needs, built once and cached."""

    def __init__(self, model: RobotModel, tips: tuple[int, ...], base: int, active: tuple[int, ...]):
        self.tips, self.base = tips, base
        tip_support = model.support_mask[list(tips)].any(axis=0)
        base_support = model.support_mask[base]
        src = model.velocity_source_joints
        moving = np.zeros(model.n_joints, bool)  # independent joints that move a tip relative to the base
        for j in range(model.n_joints):
            if src[j] >= 0 and tip_support[j + 1] and not base_support[j + 1]:
                moving[src[j]] = True
        self.free_joints = [j for j in model.active_joints if moving[j] and j in active]
        self.free_q = np.array([model.joint_q_index[j] + k for j in self.free_joints
                                for k in range(model.joint_nq[j])], np.int64)
        self.free_v = np.array([model.joint_v_index[j] + k for j in self.free_joints
                                for k in range(model.joint_nv[j])], np.int64)
        on_tips = [j for j in range(model.n_joints) if tip_support[j + 1] and not model.is_fixed[j]]
        self.scalar = all(JointType(model.joint_types[j]) in SCALAR_TYPES for j in on_tips)
        kernel = _ChainKernel if self.scalar else _GenericKernel
        self.kernel = kernel(model, tips, self.free_v)
        # Free q coordinates that wrap (continuous, planar θ) and that restarts redraw (not floating).
        periodic, randomised = np.zeros(model.n_q, bool), np.zeros(model.n_q, bool)
        for j in self.free_joints:
            t, i = JointType(model.joint_types[j]), model.joint_q_index[j]
            if t in (JointType.CONTINUOUS, JointType.PLANAR):
                periodic[i + (2 if t == JointType.PLANAR else 0)] = True
            randomised[i:i + model.joint_nq[j]] = t != JointType.FLOATING
        self.periodic = periodic[self.free_q]
        self.randomised = randomised[self.free_q]
        self.base_moves = bool(np.any(~model.is_fixed[np.flatnonzero(base_support[1:])]))
        self.T_world_base = forward_kinematics(model, model.home_configuration())[base]


_PLANS: "weakref.WeakKeyDictionary[RobotModel, dict]" = weakref.WeakKeyDictionary()


def _plan(model: RobotModel, tips: tuple[int, ...], base: int, active: tuple[int, ...]) -> _Plan:
    cache = _PLANS.setdefault(model, {})
    key = (tips, base, active)
    if key not in cache:
        cache[key] = _Plan(model, tips, base, active)
    return cache[key]


# ---------------------------------------------------------------------------------------------
# The solver

#: Levenberg–Marquardt damping ``λ = DAMPING_COST · ½‖r‖² + DAMPING_FLOOR`` (Sugihara 2011).
DAMPING_COST, DAMPING_FLOOR = 0.1, 1e-6
#: A row whose cost has not dropped by 0.1 % for this many iterations restarts at random.
STALL_ITERATIONS = 10


def solve_ik(model: RobotModel, targets, tips, seed=None, *, base: str | None = None,
             position_tolerance: float = 1e-5, rotation_tolerance: float = 1e-5,
             axis_tolerances=None, weights=None, active_joints: Sequence[str] | None = None,
             lower=None, upper=None, timeout: float | None = None, max_iterations: int = 200,
             restarts: int | None = None, rng=None) -> IKResult:
    """Joint configurations that put one or several tips at target poses.

    Every problem (target set, seed) of the batch is solved together with its random restarts
    in one vectorised Levenberg–Marquardt loop; a problem stops as soon as one of its rows meets
    the tolerances (several rows at once: the one closest to the seed wins).

    Args:
        model: the robot.
        targets: ``T_base_tip`` ``(..., 4, 4)`` for one tip, ``(..., n_tips, 4, 4)`` for a
            sequence of tips [m]; the rotation part must be a rotation matrix.
        tips: a frame (link) name, or a sequence of names solved together (tips of a tree).
        seed: ``(..., n_q)`` start configurations, broadcast against the targets' batch
            (clamped into the bounds); None: the home configuration. Joints that may not move
            stay at the seed.
        base: frame the targets are expressed in (default: the root link). Joints supporting
            the base do not move (they would not change the tip pose relative to a base that is
            an ancestor of the tips).
        position_tolerance: [m] largest accepted position error per tip.
        rotation_tolerance: [rad] largest accepted rotation angle per tip.
        axis_tolerances: ``(6,)`` or per tip ``(n_tips, 6)``: TRAC-IK style ± bounds on the error
            twist ``[x y z rx ry rz]`` expressed in the target frame's axes [m, rad]; an error
            within the box counts as zero, ``np.inf`` frees an axis (position only:
            ``[0, 0, 0, inf, inf, inf]``; any rotation about the tool z: ``[0]*5 + [inf]``).
            The position / rotation tolerances then apply to the excess outside the box.
        weights: ``(n_tips,)`` non-negative weight of each tip's error in the least squares.
        active_joints: names of the joints allowed to move (default: all). Fixed and mimic
            joints may be listed and are ignored (a mimic joint follows its source).
        lower, upper: ``(n_q,)`` bounds overriding the model's limits (their intersection is
            used; ±inf for none), e.g. from MoveIt joint constraints.
        timeout: [s] time budget per problem, pooled over the batch (the call stops iterating
            after ``timeout × number of problems``); None: no time limit.
        max_iterations: iterations per problem (restarts included).
        restarts: extra rows per problem started at random configurations alongside the seed;
            None: 3 when the call has at most ``JUMP_ROWS // 4`` problems (extra rows are almost
            free there and cut the mean time), else 0. Independently of it, a row whose cost has
            not dropped for ``STALL_ITERATIONS`` iterations restarts at random.
        rng: seed or ``numpy.random.Generator`` for the restarts (fixed: deterministic results).

    Returns:
        :class:`IKResult` with batch shape ``...`` (the broadcast of the targets' and seed's).

    Raises:
        ShapeError: targets, seed, bounds, weights or tolerances of the wrong shape.
        NonFiniteError: NaN or inf in the targets or seed (NaN in the bounds).
        UnknownLinkError: unknown tip or base. UnknownJointError: unknown active joint.
        JointLimitError: a bound override that leaves a joint no admissible value.
        IKOptionError: negative tolerance, weight or timeout; max_iterations < 1; restarts < 0.
    """
    single = isinstance(tips, str)
    tip_names = (tips,) if single else tuple(tips)
    if not tip_names:
        raise ShapeError("tips", "one name or a non-empty sequence of names", (0,))
    tip_idx = tuple(model.link_index(t) for t in tip_names)
    base_idx = 0 if base is None else model.link_index(base)
    nt = len(tip_idx)
    if active_joints is None:
        active = tuple(int(j) for j in model.active_joints)
    else:
        names = [active_joints] if isinstance(active_joints, str) else active_joints
        active = tuple(sorted({model.joint_index(name) for name in names}))
    plan = _plan(model, tip_idx, base_idx, active)

    T = np.asarray(targets, dtype=float)
    tail = (4, 4) if single else (nt, 4, 4)
    if T.ndim < len(tail) or T.shape[T.ndim - len(tail):] != tail:
        raise ShapeError("targets", "(..., 4, 4)" if single else f"(..., {nt}, 4, 4)", T.shape)
    T = T.reshape(T.shape[:T.ndim - len(tail)] + (nt, 4, 4))
    finite = np.isfinite(T).all(axis=(-3, -2, -1))
    if not finite.all():
        raise NonFiniteError("targets", [tuple(int(k) for k in i) for i in np.argwhere(~finite)] if finite.ndim else [()])
    batch = T.shape[:-3]
    seed_q = model.home_configuration() if seed is None else model.check_q(seed, "seed")
    try:
        batch = np.broadcast_shapes(batch, seed_q.shape[:-1])
    except ValueError:
        raise ShapeError("seed", f"(..., {model.n_q}) broadcastable to the targets' batch {batch}", seed_q.shape) from None
    lo, hi = _bounds(model, lower, upper)
    tol = _options(nt, position_tolerance, rotation_tolerance, axis_tolerances, weights, timeout, max_iterations, restarts)

    n = int(np.prod(batch))
    T = np.broadcast_to(T, batch + (nt, 4, 4)).reshape(n, nt, 4, 4)
    seeds = np.clip(np.broadcast_to(seed_q, batch + (model.n_q,)).reshape(n, model.n_q), lo, hi)
    for s in model.quaternion_slices:
        seeds[:, s] /= np.linalg.norm(seeds[:, s], axis=-1, keepdims=True)
    if plan.base_moves:
        T = forward_kinematics(model, seeds)[:, None, base_idx] @ T
    elif base_idx:
        T = plan.T_world_base @ T
    result = _Solver(model, plan, lo, hi, tol, np.random.default_rng(rng)).run(T, seeds)
    return IKResult(*(a.reshape(batch + a.shape[1:]) for a in result))


def _bounds(model: RobotModel, lower, upper) -> tuple[Array, Array]:
    """Effective ``(n_q,)`` bounds: the model's limits intersected with the overrides."""
    lo, hi = model.q_lower.copy(), model.q_upper.copy()
    for name, given, pick in (("lower", lower, np.maximum), ("upper", upper, np.minimum)):
        if given is None:
            continue
        given = np.asarray(given, dtype=float)
        if given.shape != (model.n_q,):
            raise ShapeError(name, f"({model.n_q},)", given.shape)
        if np.isnan(given).any():
            bad = np.flatnonzero(np.isnan(given))
            raise NonFiniteError(name, bad.tolist(), [model.q_names[i] for i in bad])
        if name == "lower":
            lo = pick(lo, given)
        else:
            hi = pick(hi, given)
    for s in model.quaternion_slices:
        lo[s], hi[s] = -1.0, 1.0
    empty = np.flatnonzero(lo > hi)
    if empty.size:
        i = empty[0]
        raise JointLimitError(model.q_names[i], float(hi[i] if upper is not None and hi[i] < model.q_upper[i] else lo[i]),
                              float(model.q_lower[i]), float(model.q_upper[i]))
    return lo, hi


@dataclasses.dataclass(frozen=True)
class _Tolerances:
    position: float
    rotation: float
    box: Array | None          # (6, n_tips, 1) dead band of the error twist; None: none
    mask: Array | None         # (6, n_tips, 1) 1 on constrained axes, 0 on free ones; None: all constrained
    sqrt_weight: Array | None  # (6 * n_tips, 1) √weight (0 on free axes); None: all ones
    timeout: float | None
    max_iterations: int
    restarts: int | None


def _options(nt, position_tolerance, rotation_tolerance, axis_tolerances, weights, timeout, max_iterations,
             restarts) -> _Tolerances:
    """Validate the options."""
    for name, value in (("position_tolerance", position_tolerance), ("rotation_tolerance", rotation_tolerance)):
        if not np.isfinite(value) or value < 0:
            raise IKOptionError(f"{name} must be finite and >= 0, got {value!r}")
    if timeout is not None and not timeout > 0:
        raise IKOptionError(f"timeout must be > 0 seconds or None, got {timeout!r}")
    if int(max_iterations) != max_iterations or max_iterations < 1:
        raise IKOptionError(f"max_iterations must be an integer >= 1, got {max_iterations!r}")
    if restarts is not None and (int(restarts) != restarts or restarts < 0):
        raise IKOptionError(f"restarts must be an integer >= 0, got {restarts!r}")
    box = mask = sqrt_w = None
    if axis_tolerances is not None:
        box = np.asarray(axis_tolerances, dtype=float)
        if box.shape not in ((6,), (nt, 6)):
            raise ShapeError("axis_tolerances", f"(6,) or ({nt}, 6)", box.shape)
        if np.isnan(box).any() or (box < 0).any():
            raise IKOptionError(f"axis_tolerances must be >= 0 (inf frees an axis), got {box.tolist()}")
        box = np.broadcast_to(box, (nt, 6))
        mask = np.isfinite(box).astype(float)
        box = np.where(np.isfinite(box), box, 0.0) if box[np.isfinite(box)].any() else None
        if mask.all():
            mask = None
    if weights is not None:
        w = np.asarray(weights, dtype=float)
        if w.shape != (nt,):
            raise ShapeError("weights", f"({nt},)", w.shape)
        if not np.isfinite(w).all() or (w < 0).any():
            raise IKOptionError(f"weights must be finite and >= 0, got {w.tolist()}")
        sqrt_w = np.sqrt(w)[:, None] * np.ones((nt, 6))
    if mask is not None:
        sqrt_w = mask if sqrt_w is None else sqrt_w * mask
    col = lambda a: None if a is None else np.ascontiguousarray(a.T)[..., None]  # noqa: E731  (nt, 6) -> (6, nt, 1)
    return _Tolerances(float(position_tolerance), float(rotation_tolerance), col(box), col(mask),
                       None if sqrt_w is None else col(sqrt_w).reshape(-1, 1), timeout, int(max_iterations),
                       None if restarts is None else int(restarts))


def _log_rotation(R: Array) -> Array:
    """Rotation vectors ``(3, ...)`` of rotations ``R (3, 3, ...)`` (component-first ``log_so3``)."""
    cos = np.clip((R[0, 0] + R[1, 1] + R[2, 2] - 1.0) * 0.5, -1.0, 1.0)
    theta = np.arccos(cos)
    sin = np.sqrt(1.0 - cos * cos)
    factor = np.where(theta < 1e-4, 0.5 + theta * theta / 12.0, theta / (2.0 * np.maximum(sin, 1e-300)))
    out = factor * np.stack([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    near_pi = theta > np.pi - 1e-3  # the antisymmetric part vanishes: read the axis elsewhere
    if near_pi.any():
        out[:, near_pi] = log_so3(np.moveaxis(R[:, :, near_pi], -1, 0)).T
    return out


class _Solver:
    """The Levenberg–Marquardt loop over the rows (problems × seeds) of one call."""

    def __init__(self, model: RobotModel, plan: _Plan, lo: Array, hi: Array, tol: _Tolerances, rng):
        self.model, self.plan, self.tol, self.rng = model, plan, tol, rng
        fq = plan.free_q
        self.lo, self.hi = lo[fq], hi[fq]
        finite = np.isfinite(self.lo) & np.isfinite(self.hi)
        periodic = plan.periodic & ~np.isfinite(self.lo) & ~np.isfinite(self.hi)
        self.wrap = np.flatnonzero(periodic)
        self.random = plan.randomised & (finite | periodic)
        self.random_lo = np.where(finite, self.lo, -np.pi)
        self.random_hi = np.where(finite, self.hi, np.pi)
        # Coordinates with a q twin (all but floating joints' v): bounds that can hold a step.
        bounded_v, bounded_q = [], []
        for j in plan.free_joints:
            if model.joint_types[j] != JointType.FLOATING:
                for k in range(model.joint_nv[j]):
                    bounded_v.append(int(np.flatnonzero(plan.free_v == model.joint_v_index[j] + k)[0]))
                    bounded_q.append(model.joint_q_index[j] + k)
        self.bounded_v, self.bounded_q = np.array(bounded_v, np.int64), np.array(bounded_q, np.int64)
        self.bounded_lo, self.bounded_hi = lo[self.bounded_q][:, None], hi[self.bounded_q][:, None]

    def restart(self, q: Array) -> Array:
        """Rows ``q (k, n_q)`` with their free coordinates redrawn uniformly within the bounds."""
        x = q[:, self.plan.free_q]
        draw = self.rng.uniform(self.random_lo, self.random_hi, size=x.shape)
        q[:, self.plan.free_q] = np.where(self.random, draw, x)
        return q

    def step(self, q: Array, dx: Array) -> Array:
        """``q (B, n_q)`` moved by ``dx (B, n_free)``, clamped into the bounds, angles wrapped."""
        fq = self.plan.free_q
        if self.plan.scalar:
            x = q[:, fq] + dx
        else:
            dv = np.zeros((q.shape[0], self.model.n_v))
            dv[:, self.plan.free_v] = dx
            x = integrate(self.model, q, dv)[:, fq]
        x = np.clip(x, self.lo, self.hi)
        if self.wrap.size:
            x[:, self.wrap] = _wrap(x[:, self.wrap])
        q[:, fq] = x
        return q

    def residual(self, ER: Array, Ep: Array) -> tuple[Array, Array, Array]:
        """Pose error ``d = [R_tᵀ (p_c - p_t); log(R_tᵀ R_c)]`` ``(6, n_tips, B)``, its part outside
        the tolerance box ``r`` (same shape) and whether every tip is within tolerance ``(B,)``."""
        d = np.concatenate([Ep, _log_rotation(ER)])
        tol = self.tol
        r = d if tol.box is None else d - np.clip(d, -tol.box, tol.box)
        if tol.mask is not None:
            r = r * tol.mask
        sq = r * r
        ok = ((sq[0] + sq[1] + sq[2] <= tol.position ** 2) & (sq[3] + sq[4] + sq[5] <= tol.rotation ** 2)).all(axis=0)
        return d, r, ok

    def lm_step(self, q: Array, J: Array, r: Array) -> tuple[Array, Array]:
        """Damped Gauss–Newton step ``dx (B, n_free)`` at ``q (B, n_q)`` for ``J (6, nt, n_free, B)``,
        ``r (6, nt, B)``; also the cost ``½‖W r‖² (B,)``. A coordinate at a bound that the
        gradient pushes outwards is held (its column dropped), so the others still make progress."""
        n_rows, nf, B = 6 * J.shape[1], J.shape[2], J.shape[3]
        J, r = J.reshape(n_rows, nf, B), r.reshape(n_rows, B)
        if self.tol.sqrt_weight is not None:
            J, r = J * self.tol.sqrt_weight[..., None], r * self.tol.sqrt_weight
        x = q[:, self.bounded_q].T
        g = (J * r[:, None]).sum(axis=0)                                             # Jᵀ r (nf, B)
        gb = g[self.bounded_v]
        held = ((x <= self.bounded_lo) & (gb > 0)) | ((x >= self.bounded_hi) & (gb < 0))
        if held.any():
            if len(self.bounded_v) < nf:
                held = np.zeros((nf, B), bool)
                held[self.bounded_v] = ((x <= self.bounded_lo) & (gb > 0)) | ((x >= self.bounded_hi) & (gb < 0))
            J = J * ~held
            g = g * ~held
        cost = 0.5 * (r * r).sum(axis=0)
        damping = DAMPING_COST * cost + DAMPING_FLOOR
        if n_rows <= nf:  # (J Jᵀ + λ) y = r, dx = Jᵀ y: the smaller system
            G = (J[:, None] * J[None]).sum(axis=2)
            G[np.arange(n_rows), np.arange(n_rows)] += damping
            y = np.linalg.solve(G.transpose(2, 0, 1), r.T[..., None])[..., 0].T
            dx = (J * y[:, None]).sum(axis=0)
        else:             # (Jᵀ J + λ) dx = Jᵀ r
            G = (J[:, :, None] * J[:, None]).sum(axis=0)
            G[np.arange(nf), np.arange(nf)] += damping
            dx = np.linalg.solve(G.transpose(2, 0, 1), g.T[..., None])[..., 0].T
        return -dx.T, cost

    def run(self, T: Array, seeds: Array):
        """Solve ``n`` problems: world targets ``T (n, nt, 4, 4)`` from ``seeds (n, n_q)``."""
        plan, tol = self.plan, self.tol
        n, nf = T.shape[0], len(plan.free_q)
        R = 1 + (tol.restarts if tol.restarts is not None else 3 if 4 * n <= JUMP_ROWS else 0)
        q_out, success = seeds.copy(), np.zeros(n, bool)
        pos_err, rot_err = np.zeros(n), np.zeros(n)
        iterations = np.zeros(n, np.int64)
        status = np.full(n, MAX_ITERATIONS if nf else NO_FREE_JOINTS, dtype="<U14")
        Ti = inverse_transform(T)                                                   # (n, nt, 4, 4)
        Tinv_all = (Ti[..., :3, :3].transpose(2, 3, 1, 0), Ti[..., :3, 3].transpose(2, 1, 0))
        Tinv = tuple(np.repeat(a, R, axis=-1) for a in Tinv_all) if R > 1 else Tinv_all
        q = np.repeat(seeds, R, axis=0)
        if R > 1:
            restart_rows = np.arange(n * R) % R > 0
            q[restart_rows] = self.restart(q[restart_rows])
        seed_x = np.repeat(seeds[:, plan.free_q], R, axis=0)
        best_cost, best_q, stall = np.full(n * R, np.inf), q.copy(), np.zeros(n * R, np.int64)
        reference = best_cost.copy()  # cost at the last real progress of each row
        problem = np.arange(n)
        deadline = None if tol.timeout is None else time.perf_counter() + tol.timeout * n
        it = 0
        while True:
            ER, Ep, J = plan.kernel.evaluate(q, Tinv)
            d, r, ok = self.residual(ER, Ep)
            if ok.any():
                ok = ok.reshape(-1, R)
                done = ok.any(axis=1)
                pick = 0
                if R > 1:
                    diff = q[:, plan.free_q] - seed_x
                    diff[:, self.wrap] = _wrap(diff[:, self.wrap])
                    pick = np.where(ok, (diff * diff).sum(axis=1).reshape(-1, R), np.inf).argmin(axis=1)[done]
                rows, pid = np.flatnonzero(done) * R + pick, problem[done]
                q_out[pid], iterations[pid], status[pid], success[pid] = q[rows], it, CONVERGED, True
                pos_err[pid] = np.sqrt((d[:3, :, rows] ** 2).sum(axis=0)).max(axis=0)
                rot_err[pid] = np.sqrt((d[3:, :, rows] ** 2).sum(axis=0)).max(axis=0)
                if done.all():
                    break
                keep = np.repeat(~done, R)
                problem = problem[~done]
                q, seed_x, best_cost, best_q, stall, reference = (
                    a[keep] for a in (q, seed_x, best_cost, best_q, stall, reference))
                Tinv, J, r = (Tinv[0][..., keep], Tinv[1][..., keep]), J[..., keep], r[..., keep]
            if nf == 0:
                break
            dx, cost = self.lm_step(q, J, r)
            improved = cost < best_cost
            best_cost = np.where(improved, cost, best_cost)
            best_q[improved] = q[improved]
            progress = cost < reference * (1.0 - 1e-3)
            reference = np.where(progress, cost, reference)
            stall = np.where(progress, 0, stall + 1)
            if it >= tol.max_iterations or (deadline is not None and time.perf_counter() > deadline):
                break
            q = self.step(q, dx)
            stuck = stall >= STALL_ITERATIONS
            if stuck.any():
                q[stuck] = self.restart(q[stuck])
                stall[stuck], reference[stuck] = 0, np.inf
            it += 1
        left = status != CONVERGED
        if left.any() and nf:
            best = best_cost.reshape(-1, R).argmin(axis=1) + np.arange(len(problem)) * R
            q_out[problem] = best_q[best]
            iterations[problem] = it
            status[problem] = MAX_ITERATIONS if it >= tol.max_iterations else TIMEOUT
        if left.any():
            d, r, ok = self.residual(*plan.kernel.evaluate(q_out[left], (Tinv_all[0][..., left], Tinv_all[1][..., left]))[:2])
            pos_err[left] = np.sqrt((d[:3] ** 2).sum(axis=0)).max(axis=0)
            rot_err[left] = np.sqrt((d[3:] ** 2).sum(axis=0)).max(axis=0)
            success[left] = ok
        if self.wrap.size:  # continuous joints: the equivalent angle nearest the seed
            cols = plan.free_q[self.wrap]
            q_out[:, cols] = seeds[:, cols] + _wrap(q_out[:, cols] - seeds[:, cols])
        return q_out, success, pos_err, rot_err, iterations, status
