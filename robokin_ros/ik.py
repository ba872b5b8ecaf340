"""Inverse kinematics: Levenberg–Marquardt on the SE(3) pose error, within the joint limits.

A few problems (the ``/compute_ik`` case) iterate one at a time in plain Python floats on the
robot's generated kernel (:mod:`robokin_ros.codegen`: ``fk_all`` on a list), where a numpy call
would cost more than the arithmetic it does; the damped step is straight-line code generated
per system size. Many problems iterate together, stacked: the kernel's batched output is a
``(size, B)`` array and every operation covers all rows (the small normal systems are solved
by a straight-line Cholesky factorisation whose entries are ``(B,)`` arrays). Finished problems
make room for waiting ones; the last few finish in floats. Models the generator does not handle
(floating, planar joints) use the generic FK and Jacobians, stacked.

Notation: a *problem* is one target set (a pose per tip) with one seed; a *row* is one iterate
of one problem (its seed, or a random restart). ``x`` are the problem's free coordinates (the
``v`` coordinates of the joints allowed to move). A tip's error twist [linear; angular] is
``d = [R_tᵀ (p - p_t); log(R_tᵀ R)]`` in the target's axes; when every axis counts alike (no
dead band, no free axis) the step is computed in the world axes instead, with
``[p - p_t; log(R R_tᵀ)]`` (the same vector rotated by ``R_t``, so the same least squares) and
the kernel's LOCAL_WORLD_ALIGNED Jacobian as it is.
"""

from __future__ import annotations

import dataclasses
import math
import time
import weakref
from operator import itemgetter, mul
from typing import Sequence

import numpy as np
from numpy.typing import NDArray

from . import kinematics
from .codegen import compiled_frames
from .errors import JointLimitError, NonFiniteError, RobokinError, ShapeError
from .jacobians import LOCAL_WORLD_ALIGNED, jacobian
from .kinematics import forward_kinematics
from .model import SCALAR_TYPES, JointType, RobotModel
from .spatial import log_so3, quat_xyzw_to_matrix

Array = NDArray[np.float64]

#: Values of :attr:`IKResult.status`.
CONVERGED, MAX_ITERATIONS, TIMEOUT, NO_FREE_JOINTS = "converged", "max_iterations", "timeout", "no_free_joints"

#: Levenberg–Marquardt damping ``λ = DAMPING_COST · ½‖r‖² + DAMPING_FLOOR`` (Sugihara 2011).
DAMPING_COST, DAMPING_FLOOR = 0.1, 1e-6
#: A row whose cost has not dropped by ``STALL_PROGRESS`` (relative) for ``STALL_ITERATIONS``
#: iterations restarts at random.
STALL_ITERATIONS, STALL_PROGRESS = 5, 0.1
#: Rows iterated together in a vectorised pass (finished problems make room for waiting ones).
BATCH_ROWS = 2048
#: Calls with this many problems or fewer (and no parallel restarts) solve them one by one in
#: Python floats: a vectorised iteration costs a fixed ~1 ms of numpy calls, a float iteration
#: 40-100 µs (measured: floats 2x faster for 10 problems, even at ~50).
SCALAR_ROWS = 16
#: A batch's last problems (this many) finish one by one in floats too.
TAIL_PROBLEMS = 4
#: Random rows added to a problem whose only row stalls once no problem waits for a row.
EXTRA_ROWS = 7


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


def _wrap(angle):
    """Angles wrapped into (-π, π] (floats or arrays)."""
    return math.pi - (math.pi - angle) % (2.0 * math.pi)


# ---------------------------------------------------------------------------------------------
# One row in Python floats. ``F`` is the generated kernel's flat output (``fk_all``): per tip a
# block of 10 rows of ``width`` values, rows 0-2 ``[R | p]``, rows 4-9 the LOCAL_WORLD_ALIGNED
# Jacobian (see :func:`robokin_ros.codegen.generate_frames_source`).


def _dot(u, v) -> float:
    return sum(map(mul, u, v))


def _tip_error(F: list, o: int, w: int, t: list, world: bool) -> list:
    """Error twist ``d`` (6 floats) of one tip.

    Args:
        F: flat kernel output; the tip's pose rows start at ``o``, ``w`` values apart.
        t: the target's 12 components in the world: rotation row-major, then position.
        world: world axes ``[p - p_t; log(R R_tᵀ)]``, else target axes ``[R_tᵀ (p - p_t); log(R_tᵀ R)]``.
    """
    a00, a01, a02, p0 = F[o:o + 4]
    a10, a11, a12, p1 = F[o + w:o + w + 4]
    a20, a21, a22, p2 = F[o + 2 * w:o + 2 * w + 4]
    b00, b01, b02, b10, b11, b12, b20, b21, b22, u0, u1, u2 = t
    e0, e1, e2 = p0 - u0, p1 - u1, p2 - u2
    trace = a00 * b00 + a01 * b01 + a02 * b02 + a10 * b10 + a11 * b11 + a12 * b12 + a20 * b20 + a21 * b21 + a22 * b22
    A, B = ((a00, a01, a02), (a10, a11, a12), (a20, a21, a22)), ((b00, b01, b02), (b10, b11, b12), (b20, b21, b22))
    if world:  # E = R R_tᵀ, E_ij = Σ_k a_ik b_jk
        vee = (a20 * b10 + a21 * b11 + a22 * b12 - a10 * b20 - a11 * b21 - a12 * b22,
               a00 * b20 + a01 * b21 + a02 * b22 - a20 * b00 - a21 * b01 - a22 * b02,
               a10 * b00 + a11 * b01 + a12 * b02 - a00 * b10 - a01 * b11 - a02 * b12)
        return [e0, e1, e2, *_rotation_vector(trace, vee, lambda: [[_dot(x, y) for y in B] for x in A])]
    # E = R_tᵀ R, E_ij = Σ_k b_ki a_kj
    vee = (b02 * a01 + b12 * a11 + b22 * a21 - b01 * a02 - b11 * a12 - b21 * a22,
           b00 * a02 + b10 * a12 + b20 * a22 - b02 * a00 - b12 * a10 - b22 * a20,
           b01 * a00 + b11 * a10 + b21 * a20 - b00 * a01 - b10 * a11 - b20 * a21)
    return [b00 * e0 + b10 * e1 + b20 * e2, b01 * e0 + b11 * e1 + b21 * e2, b02 * e0 + b12 * e1 + b22 * e2,
            *_rotation_vector(trace, vee, lambda: [[_dot(x, y) for y in zip(*A)] for x in zip(*B)])]


def _rotation_vector(trace: float, vee, matrix) -> list:
    """Rotation vector of a rotation E given by its trace and ``(E21 - E12, E02 - E20, E10 - E01)``;
    ``matrix()`` gives E itself, needed near π only."""
    c = 0.5 * (trace - 1.0)
    theta = math.acos(min(1.0, max(-1.0, c)))
    if theta < 1e-4:
        f = 0.5 + theta * theta / 12.0
    elif theta > math.pi - 1e-3:  # the antisymmetric part vanishes: read the axis elsewhere
        return log_so3(np.array(matrix())).tolist()
    else:
        f = theta / (2.0 * math.sqrt(1.0 - c * c))
    return [f * vee[0], f * vee[1], f * vee[2]]


def _cholesky_lines(size: int, entry, rhs: list, floats: bool) -> list:
    """Straight-line solve of ``G x = b`` (``G`` symmetric positive definite, entries
    ``entry(i, k)`` for ``k <= i``, right-hand side ``rhs``): Cholesky factor, then the two
    triangular solves, leaving ``x0, x1, ...``. Pivots are floored at 1e-300 (they are
    positive in exact arithmetic; rounding could break that for huge weights)."""
    terms = lambda items: " + ".join(items)  # noqa: E731
    minus = lambda expr, items: f"({expr} - ({terms(items)}))" if items else f"({expr})"  # noqa: E731
    lines = []
    for i in range(size):
        for k in range(i):
            lines.append(f"    l{i}_{k} = {minus(entry(i, k), [f'l{i}_{c} * l{k}_{c}' for c in range(k)])} * v{k}")
        lines.append(f"    s{i} = {minus(entry(i, i), [f'l{i}_{c} * l{i}_{c}' for c in range(i)])}")
        floor = f"s{i} if s{i} > 1e-300 else 1e-300" if floats else f"maximum(s{i}, 1e-300)"
        lines.append(f"    v{i} = 1.0 / sqrt({floor})")
    for i in range(size):
        lines.append(f"    y{i} = {minus(rhs[i], [f'l{i}_{c} * y{c}' for c in range(i)])} * v{i}")
    for i in reversed(range(size)):
        lines.append(f"    x{i} = {minus(f'y{i}', [f'l{c}_{i} * x{c}' for c in range(i + 1, size)])} * v{i}")
    return lines


def _lm_source(m: int, n: int) -> str:
    """Straight-line float code of :func:`_lm_step` for ``m`` rows and ``n`` columns: the
    normal matrix of the smaller system, then its Cholesky solve."""
    lines = ["def lm(J, r, damping):"]
    lines += [f"    {''.join(f'j{a}_{c}, ' for c in range(n))}= J[{a}]" for a in range(m)]
    lines.append(f"    {''.join(f'r{a}, ' for a in range(m))}= r")
    if m <= n:  # (J Jᵀ + λ) y = r, dx = -Jᵀ y
        entry = lambda i, k: " + ".join(f"j{i}_{c} * j{k}_{c}" for c in range(n)) + (" + damping" if i == k else "")  # noqa: E731
        lines += _cholesky_lines(m, entry, [f"r{i}" for i in range(m)], True)
        lines.append(f"    return [{', '.join('-(' + ' + '.join(f'j{a}_{c} * x{a}' for a in range(m)) + ')' for c in range(n))}]")
    else:       # (Jᵀ J + λ) dx = -Jᵀ r
        entry = lambda i, k: " + ".join(f"j{a}_{i} * j{a}_{k}" for a in range(m)) + (" + damping" if i == k else "")  # noqa: E731
        lines += _cholesky_lines(n, entry, [" + ".join(f"j{a}_{i} * r{a}" for a in range(m)) for i in range(n)], True)
        lines.append(f"    return [{', '.join(f'-x{i}' for i in range(n))}]")
    return "\n".join(lines) + "\n"


def _solve_source(size: int) -> str:
    """Straight-line Cholesky solve ``G x = b`` for ``G (size, size, B)``, ``b (size, B)``,
    component-first: every operation covers the batch."""
    lines = ["def solve(G, b):"] + _cholesky_lines(size, lambda i, k: f"G[{i}, {k}]", [f"b[{i}]" for i in range(size)], False)
    return "\n".join(lines + [f"    return [{', '.join(f'x{i}' for i in range(size))}]"]) + "\n"


_GENERATED: dict = {}


def _generated(kind: str, *sizes: int):
    """Generated solver ``kind`` ("lm" on floats, "solve" on arrays) for ``sizes``, cached."""
    key = (kind,) + sizes
    if key not in _GENERATED:
        namespace: dict = {"sqrt": math.sqrt} if kind == "lm" else {"sqrt": np.sqrt, "maximum": np.maximum}
        source = _lm_source(*sizes) if kind == "lm" else _solve_source(*sizes)
        exec(compile(source, f"<robokin ik {key}>", "exec"), namespace)  # noqa: S102
        _GENERATED[key] = namespace[kind]
    return _GENERATED[key]


def _lm_step(J: list, r: list, damping: float) -> list:
    """``dx`` solving ``(Jᵀ J + λ I) dx = -Jᵀ r`` for ``J`` given as ``m`` rows of ``n``
    floats, through the smaller normal system (``(J Jᵀ + λ I) y = r, dx = -Jᵀ y`` when ``m <= n``)."""
    return _generated("lm", len(J), len(J[0]))(J, r, damping)


# ---------------------------------------------------------------------------------------------
# Many rows, stacked: the kernel output as ``(size, B)``, one operation per array over the batch.


def _errors_stacked(P: Array, target: Array, world: bool) -> Array:
    """:func:`_tip_error` of every tip and row: ``d (n_tips, 6, B)`` from the tips' poses
    ``P (n_tips, 12, B)`` and targets ``(n_tips, 12, B)`` (rotation row-major, then position)."""
    nt, B = P.shape[0], P.shape[2]
    R, Rt = P[:, :9].reshape(nt, 3, 3, B), target[:, :9].reshape(nt, 3, 3, B)
    e = P[:, 9:] - target[:, 9:]
    if world:
        E = np.einsum("tikb,tjkb->tijb", R, Rt)                        # R R_tᵀ
    else:
        E = np.einsum("tkib,tkjb->tijb", Rt, R)                        # R_tᵀ R
        e = np.einsum("tkib,tkb->tib", Rt, e)
    c = np.clip(0.5 * (E[:, 0, 0] + E[:, 1, 1] + E[:, 2, 2] - 1.0), -1.0, 1.0)
    theta = np.arccos(c)
    f = np.where(theta < 1e-4, 0.5 + theta * theta / 12.0, theta / (2.0 * np.sqrt(np.maximum(1.0 - c * c, 1e-300))))
    w = f[:, None] * (E[:, [2, 0, 1], [1, 2, 0]] - E[:, [1, 2, 0], [2, 0, 1]])
    near_pi = theta > np.pi - 1e-3  # the antisymmetric part vanishes: read the axis elsewhere
    if near_pi.any():
        tip, row = np.nonzero(near_pi)
        w[tip, :, row] = log_so3(E[tip, :, :, row])
    return np.concatenate([e, w], axis=1)


def _lm_step_arrays(J: Array, r: Array, damping: Array) -> Array:
    """:func:`_lm_step` for ``J (m, n, B)``, ``r (m, B)``, ``damping (B,)``: ``dx (n, B)``."""
    m, n = J.shape[:2]
    if m <= n:
        G = np.einsum("acs,bcs->abs", J, J)
        G[range(m), range(m)] += damping
        return -np.einsum("acs,as->cs", J, np.array(_generated("solve", m)(G, r)))
    G = np.einsum("acs,ads->cds", J, J)
    G[range(n), range(n)] += damping
    return -np.array(_generated("solve", n)(G, np.einsum("acs,as->cs", J, r)))


def _generic_frames(model: RobotModel, tips: Sequence[int], width: int, q: Array) -> Array:
    """The generated kernel's batched output ``(B, n_tips, 10, width)`` by the generic FK and
    Jacobians, for ``q (B, n_q)`` (models the generator does not handle: floating, planar joints)."""
    T = forward_kinematics(model, q)
    out = np.zeros((q.shape[0], len(tips), 10, width))
    for k, tip in enumerate(tips):
        out[:, k, :4, :4] = T[:, tip]
        out[:, k, 4:, :model.n_v] = jacobian(model, q, model.link_names[tip], LOCAL_WORLD_ALIGNED, poses=T)
    return out


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
        # Free q coordinates that wrap (continuous, planar θ) and that restarts redraw (not floating).
        periodic, randomised = np.zeros(model.n_q, bool), np.zeros(model.n_q, bool)
        for j in self.free_joints:
            t, i = JointType(model.joint_types[j]), model.joint_q_index[j]
            if t in (JointType.CONTINUOUS, JointType.PLANAR):
                periodic[i + (2 if t == JointType.PLANAR else 0)] = True
            randomised[i:i + model.joint_nq[j]] = t != JointType.FLOATING
        self.periodic = periodic[self.free_q]
        self.randomised = randomised[self.free_q]
        # Free columns with a q twin (all but floating joints' v): bounds that can hold a step.
        self.bounded_v, self.bounded_q = [], []
        for j in self.free_joints:
            if model.joint_types[j] != JointType.FLOATING:
                for k in range(model.joint_nv[j]):
                    self.bounded_v.append(int(np.flatnonzero(self.free_v == model.joint_v_index[j] + k)[0]))
                    self.bounded_q.append(int(model.joint_q_index[j] + k))
        self.base_moves = bool(np.any(~model.is_fixed[np.flatnonzero(base_support[1:])]))
        self.T_world_base = forward_kinematics(model, model.home_configuration())[base]
        self.solvers: dict = {}  # (options, kernel) -> _Solver, see _solver()


_PLANS: "weakref.WeakKeyDictionary[RobotModel, dict]" = weakref.WeakKeyDictionary()


def _plan(model: RobotModel, tips: tuple[int, ...], base: int, active: tuple[int, ...]) -> _Plan:
    cache = _PLANS.setdefault(model, {})
    key = (tips, base, active)
    if key not in cache:
        cache[key] = _Plan(model, tips, base, active)
    return cache[key]


# ---------------------------------------------------------------------------------------------
# The solver


def solve_ik(model: RobotModel, targets, tips, seed=None, *, base: str | None = None,
             position_tolerance: float = 1e-5, rotation_tolerance: float = 1e-5,
             axis_tolerances=None, weights=None, active_joints: Sequence[str] | None = None,
             lower=None, upper=None, timeout: float | None = None, max_iterations: int = 200,
             restarts: int | None = None, rng=None) -> IKResult:
    """Joint configurations that put one or several tips at target poses.

    Damped least squares (Levenberg–Marquardt) from each seed; a row whose cost stops dropping
    restarts at a random configuration; a problem stops as soon as one of its rows meets the
    tolerances (several rows at once: the one closest to the seed wins). Up to
    :data:`SCALAR_ROWS` problems iterate one by one in Python floats on the generated kernel; a
    larger batch iterates vectorised (stalled problems get :data:`EXTRA_ROWS` extra random rows
    once every problem is under way, so results of a batch and of single calls agree exactly
    only for problems that need no restart).

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
        restarts: extra rows per problem started at random configurations alongside the seed
            (all iterated together, vectorised, even for one problem); None or 0: the seed row
            only. Independently of it, a row whose cost has not dropped by ``STALL_PROGRESS``
            (10 %) for ``STALL_ITERATIONS`` (5) iterations restarts at random.
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
    tol = _options(nt, position_tolerance, rotation_tolerance, axis_tolerances, weights, max_iterations, restarts)
    if timeout is not None and not timeout > 0:
        raise IKOptionError(f"timeout must be > 0 seconds or None, got {timeout!r}")
    compiled = compiled_frames(model, tip_names) if kinematics.use_generated_kernels else None
    if (T.ndim == len(tail) and (seed is None or np.ndim(seed) == 1) and compiled is not None
            and tol.restarts == 0 and not plan.base_moves):
        # One problem (the /compute_ik case): validated and solved on Python floats.
        flat = T.reshape(nt, 16).tolist()
        if not all(map(math.isfinite, (x for row in flat for x in row))):
            raise NonFiniteError("targets", [()])
        seed_list = model.home_configuration().tolist() if seed is None else np.asarray(seed, float).tolist()
        if len(seed_list) != model.n_q or not all(map(math.isfinite, seed_list)):
            model.check_q(seed, "seed")  # raises the named error
        solver = _solver(model, plan, *_bounds(model, lower, upper), tol, compiled)
        seed_list = [min(h, max(lo, x)) for x, lo, h in zip(seed_list, solver.q_lower, solver.q_upper)]
        if base_idx:
            flat = (plan.T_world_base @ T.reshape(nt, 4, 4)).reshape(nt, 16).tolist()
        target = [x for row in flat for x in row[0:3] + row[4:7] + row[8:11] + row[3:12:4]]
        return solver.solve_one(seed_list, target, _Budget(timeout, 1, rng))

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

    n = math.prod(batch)
    T = np.broadcast_to(T, batch + (nt, 4, 4)).reshape(n, nt, 4, 4)
    seeds = np.minimum(np.maximum(np.broadcast_to(seed_q, batch + (model.n_q,)).reshape(n, model.n_q), lo), hi)
    for s in model.quaternion_slices:
        seeds[:, s] /= np.linalg.norm(seeds[:, s], axis=-1, keepdims=True)
    if plan.base_moves:
        T = forward_kinematics(model, seeds)[:, None, base_idx] @ T
    elif base_idx:
        T = plan.T_world_base @ T
    # Target components (n, n_tips * 12): per tip its rotation row-major, then its position.
    targets_flat = np.concatenate([T[..., :3, :3].reshape(n, nt, 9), T[..., :3, 3]], axis=-1).reshape(n, nt * 12)
    solver = _solver(model, plan, lo, hi, tol, compiled)
    result = solver.solve(targets_flat, seeds, _Outcome(seeds, _Budget(timeout, n, rng)))
    return IKResult(*(a.reshape(batch + a.shape[1:]) for a in result))


def _bounds(model: RobotModel, lower, upper) -> tuple[Array, Array]:
    """Effective ``(n_q,)`` bounds: the model's limits intersected with the overrides."""
    if lower is None and upper is None and not model.quaternion_slices:
        return model.q_lower, model.q_upper
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
    rows: tuple[tuple[int, int, float, float], ...]  # constrained axes: (tip, axis 0-5, √weight, dead band)
    world: bool                                      # no dead band, no free axis: step in world axes
    max_iterations: int
    restarts: int


def _options(nt, position_tolerance, rotation_tolerance, axis_tolerances, weights, max_iterations,
             restarts) -> _Tolerances:
    """Validate the options (but the timeout)."""
    for name, value in (("position_tolerance", position_tolerance), ("rotation_tolerance", rotation_tolerance)):
        if not math.isfinite(value) or value < 0:
            raise IKOptionError(f"{name} must be finite and >= 0, got {value!r}")
    if int(max_iterations) != max_iterations or max_iterations < 1:
        raise IKOptionError(f"max_iterations must be an integer >= 1, got {max_iterations!r}")
    if restarts is not None and (int(restarts) != restarts or restarts < 0):
        raise IKOptionError(f"restarts must be an integer >= 0, got {restarts!r}")
    box = [[0.0] * 6] * nt
    if axis_tolerances is not None:
        given = np.asarray(axis_tolerances, dtype=float)
        if given.shape not in ((6,), (nt, 6)):
            raise ShapeError("axis_tolerances", f"(6,) or ({nt}, 6)", given.shape)
        if np.isnan(given).any() or (given < 0).any():
            raise IKOptionError(f"axis_tolerances must be >= 0 (inf frees an axis), got {given.tolist()}")
        box = np.broadcast_to(given, (nt, 6)).tolist()
    sqrt_w = [1.0] * nt
    if weights is not None:
        w = np.asarray(weights, dtype=float)
        if w.shape != (nt,):
            raise ShapeError("weights", f"({nt},)", w.shape)
        if not np.isfinite(w).all() or (w < 0).any():
            raise IKOptionError(f"weights must be finite and >= 0, got {w.tolist()}")
        sqrt_w = np.sqrt(w).tolist()
    rows = tuple((k, i, sqrt_w[k], box[k][i]) for k in range(nt) for i in range(6) if math.isfinite(box[k][i]))
    return _Tolerances(float(position_tolerance), float(rotation_tolerance), rows,
                       not any(any(b) for b in box), int(max_iterations), 0 if restarts is None else int(restarts))


class _Budget:
    """Per-call time budget and random generator (made on first use: most calls never restart)."""

    def __init__(self, timeout: float | None, n: int, rng):
        self.deadline = None if timeout is None else time.perf_counter() + timeout * n
        self._rng = rng

    @property
    def rng(self) -> np.random.Generator:
        if not isinstance(self._rng, np.random.Generator):
            self._rng = np.random.default_rng(self._rng)
        return self._rng

    def timed_out(self) -> bool:
        return self.deadline is not None and time.perf_counter() > self.deadline


class _Outcome:
    """Per-call results of a batch, filled as problems finish."""

    def __init__(self, seeds: Array, budget: _Budget):
        n = len(seeds)
        self.q, self.success = seeds.copy(), np.zeros(n, bool)
        self.position_error, self.rotation_error = np.zeros(n), np.zeros(n)
        self.iterations = np.zeros(n, np.int64)
        self.status = np.full(n, MAX_ITERATIONS, dtype="<U14")
        self.unfinished = np.ones(n, bool)  # errors still to evaluate at q
        self.budget = budget


@dataclasses.dataclass
class _Rows:
    """State of the rows of a vectorised pass, one column (last axis) per row."""

    q: Array          # (n_q, B)
    target: Array     # (n_tips * 12, B)
    problem: Array    # (B,) index of the row's problem
    iteration: Array  # (B,) iterations of the row's problem
    best_cost: Array  # (B,)
    best_q: Array     # (n_q, B)
    stall: Array      # (B,) iterations since the last progress
    reference: Array  # (B,) cost at the last progress

    def select(self, keep) -> "_Rows":
        return _Rows(*(getattr(self, f.name)[..., keep] for f in dataclasses.fields(self)))

    def extend(self, other: "_Rows") -> "_Rows":
        return _Rows(*(np.concatenate([getattr(self, f.name), getattr(other, f.name)], axis=-1)
                       for f in dataclasses.fields(self)))


def _solver(model: RobotModel, plan: _Plan, lo: Array, hi: Array, tol: _Tolerances, compiled) -> "_Solver":
    """The solver of a plan, options, bounds and kernel, cached on the plan (a few dozen)."""
    default = lo is model.q_lower and hi is model.q_upper
    key = (tol, id(compiled), None if default else (lo.tobytes(), hi.tobytes()))
    if key not in plan.solvers:
        if len(plan.solvers) >= 32:
            plan.solvers.clear()
        plan.solvers[key] = _Solver(model, plan, lo, hi, tol, compiled)
    return plan.solvers[key]


def _pick(problem: Array, key: Array, rows: Array) -> Array:
    """Among ``rows``, the one with the smallest ``key`` for each problem they belong to."""
    if rows.size == 0:
        return rows
    order = rows[np.lexsort((key[rows], problem[rows]))]
    p = problem[order]
    return order[np.concatenate([[True], p[1:] != p[:-1]])]


class _Solver:
    """The Levenberg–Marquardt iterations for one plan, options and bounds (no per-call state)."""

    def __init__(self, model: RobotModel, plan: _Plan, lo: Array, hi: Array, tol: _Tolerances, compiled):
        self.model, self.plan, self.tol, self.compiled = model, plan, tol, compiled
        fq = plan.free_q
        self.lo, self.hi = lo[fq], hi[fq]
        self.q_lower, self.q_upper = lo.tolist(), hi.tolist()
        finite = np.isfinite(self.lo) & np.isfinite(self.hi)
        periodic = plan.periodic & ~np.isfinite(self.lo) & ~np.isfinite(self.hi)
        self.wrap = np.flatnonzero(periodic)
        self.random = plan.randomised & (finite | periodic)
        self.random_lo = np.where(finite, self.lo, -np.pi)
        self.random_hi = np.where(finite, self.hi, np.pi)
        self.bounded_v = np.array(plan.bounded_v, np.int64)
        self.bounded_q = np.array(plan.bounded_q, np.int64)
        self.bounded_lo, self.bounded_hi = lo[self.bounded_q][:, None], hi[self.bounded_q][:, None]
        nt, w = len(plan.tips), max(4, model.n_v)
        self.n_tips, self.width = nt, w
        rows = tol.rows
        self.lm_rows = [k for k, row in enumerate(rows) if row[2] > 0.0]  # rows in the least squares
        self.weights = [rows[k][2] for k in self.lm_rows]
        self.unit_weights = len(self.lm_rows) == len(rows) and all(s == 1.0 for s in self.weights)
        self.free = list(enumerate(zip(fq.tolist(), self.lo.tolist(), self.hi.tolist())))
        # Indices into the flat kernel output: the tips' poses, the Jacobian rows (world axes)
        # of the weighted constrained axes, and every Jacobian row of every tip.
        columns = plan.free_v.tolist()
        self.jacobian_index = [[10 * w * k + (4 + i) * w + c for c in columns] for k, i, _, _ in (rows[j] for j in self.lm_rows)]
        self.jacobian_array = np.array(self.jacobian_index, np.int64).reshape(len(self.lm_rows), len(columns))
        self.pose_index = np.array([[10 * w * k + r * w + c for r in range(3) for c in range(3)] +
                                    [10 * w * k + r * w + 3 for r in range(3)] for k in range(nt)])
        self.tip_jacobian_index = np.array([[[10 * w * k + (4 + a) * w + c for c in columns] for a in range(6)]
                                            for k in range(nt)]).reshape(nt, 6, len(columns))
        self.row_index = np.array([6 * k + i for k, i, _, _ in rows], np.int64)
        self.box = np.array([b for _, _, _, b in rows])[:, None]
        self.sqrt_weight = np.array(self.weights)[:, None, None]
        self.linear = np.array([[row[0] == k and row[1] < 3 for row in rows] for k in range(nt)], float)
        self.angular = np.array([[row[0] == k and row[1] >= 3 for row in rows] for k in range(nt)], float)

    # ------------------------------------------------------------------ driver
    def solve(self, target: Array, seeds: Array, out: _Outcome):
        """Solve ``n`` problems: target components ``(n, n_tips * 12)`` from ``seeds (n, n_q)``."""
        n = len(seeds)
        if self.compiled is not None and self.tol.restarts == 0 and n <= SCALAR_ROWS:
            for p in range(n):
                (out.q[p], out.status[p], out.iterations[p], out.position_error[p], out.rotation_error[p],
                 out.success[p]) = self.scalar(seeds[p].tolist(), target[p].tolist(), out.budget)
            out.unfinished[:] = False
        elif len(self.plan.free_q) == 0:
            out.status[:] = NO_FREE_JOINTS
        else:
            self.vectorised(out, target, seeds)
        left = np.flatnonzero(out.unfinished)
        if left.size:
            d = self.errors(self.frames(out.q[left]), target[left].T)
            ok = self.residual(d)[1]
            self.record_errors(out, left, d)
            out.success[left] = ok
            out.status[left[ok & (out.status[left] == NO_FREE_JOINTS)]] = CONVERGED
        if self.wrap.size:  # continuous joints: the equivalent angle nearest the seed
            cols = self.plan.free_q[self.wrap]
            out.q[:, cols] = seeds[:, cols] + _wrap(out.q[:, cols] - seeds[:, cols])
        return out.q, out.success, out.position_error, out.rotation_error, out.iterations, out.status

    def solve_one(self, seed: list, target: list, budget: _Budget) -> IKResult:
        """:meth:`solve` for one problem (``seed``, ``target`` as lists), with few numpy calls."""
        q, status, it, position, rotation, success = self.scalar(seed[:], target, budget)
        for c in self.wrap.tolist():  # continuous joints: the equivalent angle nearest the seed
            i = self.free[c][1][0]
            q[i] = seed[i] + _wrap(q[i] - seed[i])
        return IKResult(np.array(q), np.array(success), np.array(position), np.array(rotation),
                        np.array(it, np.int64), np.array(status, "<U14"))

    # ------------------------------------------------------------------ one problem in floats
    def residual_floats(self, F: list, target: list) -> tuple[list, list, bool]:
        """Error twists ``d`` (per tip, 6 floats), the residual of each constrained row (its part
        outside the dead band) and whether every tip is within tolerance."""
        tol, w = self.tol, self.width
        d = [_tip_error(F, 10 * w * k, w, target[12 * k:12 * k + 12], tol.world) for k in range(self.n_tips)]
        p2, r2 = tol.position ** 2, tol.rotation ** 2
        if tol.world:  # every axis constrained, no dead band
            return d, [x for dk in d for x in dk], all(
                d0 * d0 + d1 * d1 + d2 * d2 <= p2 and d3 * d3 + d4 * d4 + d5 * d5 <= r2 for d0, d1, d2, d3, d4, d5 in d)
        r = [d[k][i] - min(b, max(-b, d[k][i])) for k, i, _, b in tol.rows]
        lin, ang = [0.0] * self.n_tips, [0.0] * self.n_tips
        for (k, i, _, _), x in zip(tol.rows, r):
            if i < 3:
                lin[k] += x * x
            else:
                ang[k] += x * x
        return d, r, max(lin) <= p2 and max(ang) <= r2

    def jacobian_floats(self, F: list, target: list) -> list:
        """Weighted Jacobian rows (in the axes of the residual) over the free columns."""
        out = []
        for j, s, index in zip(self.lm_rows, self.weights, self.jacobian_index):
            k, i = self.tol.rows[j][:2]
            if self.tol.world:
                row = list(itemgetter(*index)(F)) if len(index) > 1 else [F[index[0]]]
            else:  # target axes: column i % 3 of R_t against the three world rows of its kind
                a, b, c = target[12 * k + i % 3], target[12 * k + 3 + i % 3], target[12 * k + 6 + i % 3]
                w = self.width * (i % 3)
                row = [a * F[e - w] + b * F[e - w + self.width] + c * F[e - w + 2 * self.width] for e in index]
            out.append(row if s == 1.0 else [s * x for x in row])
        return out

    def scalar(self, q: list, target: list, budget: _Budget, it: int = 0, stall: int = 0, best_cost: float = math.inf,
               reference: float = math.inf, best_q: list | None = None) -> tuple:
        """Solve one problem alone in Python floats on the generated kernel (every free
        coordinate is then a scalar joint with a q twin); stalled attempts restart in turn.
        A row of a vectorised pass continues from its state (``it`` ... ``best_q``).

        Returns:
            ``(q, status, iterations, position error, rotation error, success)``.
        """
        tol, fk, free = self.tol, self.compiled.flat, self.free
        best_q = q[:] if best_q is None else best_q
        wrap = bool(self.wrap.size)
        while True:
            F = fk(q)
            d, r, ok = self.residual_floats(F, target)
            if ok or not free:
                status = CONVERGED if ok else NO_FREE_JOINTS
                break
            rw = r if self.unit_weights else [r[k] * s for k, s in zip(self.lm_rows, self.weights)]
            cost = 0.5 * _dot(rw, rw)
            if cost < best_cost:
                best_cost, best_q = cost, q[:]
            if cost < reference * (1.0 - STALL_PROGRESS):
                reference, stall = cost, 0
            else:
                stall += 1
            timed_out = budget.timed_out()
            if it >= tol.max_iterations or timed_out:
                q, status = best_q, TIMEOUT if timed_out else MAX_ITERATIONS
                d, _, ok = self.residual_floats(fk(q), target)
                break
            J = self.jacobian_floats(F, target)
            if J:  # else every weight is zero
                for c, (i, lo, hi) in free:  # hold a coordinate at a bound the gradient pushes outwards
                    x = q[i]
                    if x <= lo or x >= hi:
                        g = sum(row[c] * v for row, v in zip(J, rw))
                        if (x <= lo and g > 0) or (x >= hi and g < 0):
                            for row in J:
                                row[c] = 0.0
                dx = _lm_step(J, rw, DAMPING_COST * cost + DAMPING_FLOOR)
                for (_, (i, lo, hi)), v in zip(free, dx):
                    x = q[i] + v
                    q[i] = lo if x < lo else hi if x > hi else x
                if wrap:
                    for c in self.wrap.tolist():
                        q[free[c][1][0]] = _wrap(q[free[c][1][0]])
            if stall >= STALL_ITERATIONS:
                draw = budget.rng.uniform(self.random_lo, self.random_hi).tolist()
                for c in np.flatnonzero(self.random).tolist():
                    q[free[c][1][0]] = draw[c]
                stall, reference = 0, math.inf
            it += 1
        return (q, status, it, max(math.sqrt(dk[0] ** 2 + dk[1] ** 2 + dk[2] ** 2) for dk in d),
                max(math.sqrt(dk[3] ** 2 + dk[4] ** 2 + dk[5] ** 2) for dk in d), ok)

    # ------------------------------------------------------------------ many problems, stacked
    def frames(self, q: Array) -> Array:
        """Kernel output of configurations ``q (B, n_q)`` as ``(size, B)``."""
        B = q.shape[0]
        if self.compiled is None:
            return _generic_frames(self.model, self.plan.tips, self.width, q).reshape(B, -1).T
        return self.compiled.batch(q).reshape(B, -1).T

    def errors(self, F: Array, target: Array) -> Array:
        """Error twists ``(n_tips, 6, B)`` from the kernel output ``F (size, B)`` and target
        components ``(n_tips * 12, B)``."""
        return _errors_stacked(F[self.pose_index], target.reshape(self.n_tips, 12, -1), self.tol.world)

    def residual(self, d: Array) -> tuple[Array, Array]:
        """Residual rows ``(n_rows, B)`` of the error twists and whether every tip is within tolerance."""
        r = d.reshape(-1, d.shape[-1])
        if not self.tol.world:
            r = r[self.row_index]
            r = r - np.clip(r, -self.box, self.box)
        sq = r * r
        ok = ((self.linear @ sq <= self.tol.position ** 2) & (self.angular @ sq <= self.tol.rotation ** 2)).all(axis=0)
        return r, ok

    def jacobian(self, F: Array, target: Array) -> Array:
        """Weighted Jacobian rows ``(n_lm_rows, n_free, B)`` in the axes of the residual."""
        if self.tol.world:
            J = F[self.jacobian_array]
        else:
            Jw = F[self.tip_jacobian_index]                                          # (n_tips, 6, n_free, B)
            Rt = target.reshape(self.n_tips, 12, -1)[:, :9].reshape(self.n_tips, 3, 3, -1)
            J = np.concatenate([np.einsum("tkib,tkcb->ticb", Rt, Jw[:, :3]), np.einsum("tkib,tkcb->ticb", Rt, Jw[:, 3:])],
                               axis=1).reshape(6 * self.n_tips, Jw.shape[2], -1)[self.row_index[self.lm_rows]]
        return J if self.unit_weights else J * self.sqrt_weight

    @staticmethod
    def record_errors(out: _Outcome, problems, d: Array) -> None:
        """Worst raw position and rotation error over the tips of ``d (n_tips, 6, k)``."""
        out.position_error[problems] = np.sqrt((d[:, :3] ** 2).sum(axis=1)).max(axis=0)
        out.rotation_error[problems] = np.sqrt((d[:, 3:] ** 2).sum(axis=1)).max(axis=0)

    def restart(self, q: Array, rng) -> Array:
        """Rows ``q (n_q, k)`` with their free coordinates redrawn uniformly within the bounds."""
        fq = self.plan.free_q
        draw = rng.uniform(self.random_lo, self.random_hi, size=(q.shape[1], len(fq))).T
        q[fq] = np.where(self.random[:, None], draw, q[fq])
        return q

    def load(self, out: _Outcome, target: Array, seeds: Array, start: int, stop: int) -> _Rows:
        """Rows of problems ``start:stop``: each seed, then ``restarts`` random rows."""
        R = 1 + self.tol.restarts
        q = np.repeat(seeds[start:stop].T, R, axis=1)
        if R > 1:
            extra = np.arange(q.shape[1]) % R > 0
            q[:, extra] = self.restart(q[:, extra], out.budget.rng)
        inf, zero = np.full(q.shape[1], np.inf), np.zeros(q.shape[1], np.int64)
        return _Rows(q, np.repeat(target[start:stop].T, R, axis=1), np.repeat(np.arange(start, stop), R),
                     zero, inf, q.copy(), zero.copy(), inf.copy())

    def vectorised(self, out: _Outcome, target: Array, seeds: Array) -> None:
        """Iterate the problems together, at most :data:`BATCH_ROWS` rows at a time: finished
        problems make room for waiting ones; once none wait, a problem whose only row stalls
        gets :data:`EXTRA_ROWS` more random rows (the capacity is idle then, and the slowest
        problems decide how long the call takes)."""
        tol, plan, n, R = self.tol, self.plan, len(seeds), 1 + self.tol.restarts
        loaded = min(n, max(1, BATCH_ROWS // R))
        rows = self.load(out, target, seeds, 0, loaded)
        several = R > 1  # some problem has several rows
        while rows.problem.size:
            if loaded == n and R == 1 and self.compiled is not None and len(np.unique(rows.problem)) <= TAIL_PROBLEMS:
                self.finish_in_floats(out, rows)
                return
            F = self.frames(rows.q.T)
            d = self.errors(F, rows.target)
            r, ok = self.residual(d)
            rw = r if self.unit_weights else r[self.lm_rows] * self.sqrt_weight[:, 0]
            cost = 0.5 * (rw * rw).sum(axis=0)
            improved = cost < rows.best_cost
            rows.best_cost = np.where(improved, cost, rows.best_cost)
            rows.best_q[:, improved] = rows.q[:, improved]
            progress = cost < rows.reference * (1.0 - STALL_PROGRESS)
            rows.reference = np.where(progress, cost, rows.reference)
            rows.stall = np.where(progress, 0, rows.stall + 1)
            finished = []
            if ok.any():  # converged: per problem, the converged row closest to its seed
                ok_rows = np.flatnonzero(ok)
                if several:
                    diff = rows.q[plan.free_q][:, ok_rows] - seeds[rows.problem[ok_rows]][:, plan.free_q].T
                    diff[self.wrap] = _wrap(diff[self.wrap])
                    distance = np.zeros(ok.shape)
                    distance[ok_rows] = (diff * diff).sum(axis=0)
                    ok_rows = _pick(rows.problem, distance, ok_rows)
                problems = rows.problem[ok_rows]
                out.q[problems], out.status[problems] = rows.q[:, ok_rows].T, CONVERGED
                out.iterations[problems] = rows.iteration[ok_rows]
                self.record_errors(out, problems, d[..., ok_rows])
                out.success[problems], out.unfinished[problems] = True, False
                finished.append(problems)
            timed_out = out.budget.timed_out()
            spent = rows.iteration >= tol.max_iterations
            if timed_out or spent.any():  # not converged: per problem, its best iterate
                candidates = (timed_out | spent) & ~np.isin(rows.problem, finished[0] if finished else [])
                best = _pick(rows.problem, rows.best_cost, np.flatnonzero(candidates))
                problems = rows.problem[best]
                out.q[problems], out.iterations[problems] = rows.best_q[:, best].T, rows.iteration[best]
                out.status[problems] = TIMEOUT if timed_out else MAX_ITERATIONS
                finished.append(problems)
            if timed_out:
                out.status[loaded:], out.iterations[loaded:] = TIMEOUT, 0
                return
            stuck = self.step(out, rows, F, rows.target, r, cost)
            rows.iteration += 1
            if loaded == n and stuck.size and rows.problem.size < BATCH_ROWS:  # idle capacity: company
                alone = stuck[np.bincount(rows.problem, minlength=n)[rows.problem[stuck]] == 1]
                alone = alone[:(BATCH_ROWS - rows.problem.size) // EXTRA_ROWS]
                if alone.size:
                    company = rows.select(np.repeat(alone, EXTRA_ROWS))
                    company.q = self.restart(company.q, out.budget.rng)
                    company.best_cost[:] = np.inf
                    rows, several = rows.extend(company), True
            if finished:
                rows = rows.select(~np.isin(rows.problem, np.concatenate(finished)))
            if loaded < n and rows.problem.size <= BATCH_ROWS - R:
                more = min(n, loaded + (BATCH_ROWS - rows.problem.size) // R)
                rows, loaded = rows.extend(self.load(out, target, seeds, loaded, more)), more

    def finish_in_floats(self, out: _Outcome, rows: _Rows) -> None:
        """Finish the last problems one by one in floats (a vectorised iteration costs more than
        a few rows' float iterations), each from its row with the lowest cost so far."""
        for j in _pick(rows.problem, rows.best_cost, np.arange(rows.problem.size)).tolist():
            p = int(rows.problem[j])
            (out.q[p], out.status[p], out.iterations[p], out.position_error[p], out.rotation_error[p],
             out.success[p]) = self.scalar(rows.q[:, j].tolist(), rows.target[:, j].tolist(), out.budget,
                                           int(rows.iteration[j]), int(rows.stall[j]), float(rows.best_cost[j]),
                                           float(rows.reference[j]), rows.best_q[:, j].tolist())
            out.unfinished[p] = False

    def step(self, out: _Outcome, rows: _Rows, F: Array, target: Array, r: Array, cost: Array) -> Array:
        """One damped step of every row (in place), coordinates held at a bound the gradient
        pushes outwards (their column zeroed), clamped into the bounds; stalled rows restart.
        Returns the restarted rows."""
        plan = self.plan
        if self.lm_rows:  # else every weight is zero
            J = self.jacobian(F, target)
            rw = r if self.unit_weights else r[self.lm_rows] * self.sqrt_weight[:, 0]
            x = rows.q[self.bounded_q]
            at_lo, at_hi = x <= self.bounded_lo, x >= self.bounded_hi
            if at_lo.any() or at_hi.any():
                g = np.einsum("acb,ab->cb", J[:, self.bounded_v], rw)
                J[:, self.bounded_v] *= ~((at_lo & (g > 0)) | (at_hi & (g < 0)))
            dx = _lm_step_arrays(J, rw, DAMPING_COST * cost + DAMPING_FLOOR)
            fq = plan.free_q
            if plan.scalar:
                x = rows.q[fq] + dx
            else:
                dv = np.zeros((self.model.n_v, dx.shape[1]))
                dv[plan.free_v] = dx
                x = integrate(self.model, rows.q.T, dv.T).T[fq]
            x = np.minimum(np.maximum(x, self.lo[:, None]), self.hi[:, None])
            x[self.wrap] = _wrap(x[self.wrap])
            rows.q[fq] = x
        stuck = np.flatnonzero(rows.stall >= STALL_ITERATIONS)
        if stuck.size:
            rows.q[:, stuck] = self.restart(rows.q[:, stuck], out.budget.rng)
            rows.stall[stuck], rows.reference[stuck] = 0, np.inf
        return stuck
