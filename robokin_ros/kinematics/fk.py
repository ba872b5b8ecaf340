"""Batched forward kinematics: world pose of every link, transforms between any two frames.

The kernel works on a *plan* built once per model: fixed joints are folded into constant
placements, so a link is placed relative to its nearest movable ancestor (its *anchor*) and the
Python loop runs over levels of movable joints only, never over configurations. Internally poses
are kept component-first, batch-last (``R (3, 3, n_links, B)``, ``p (3, n_links, B)``) so every
arithmetic operation runs over contiguous batches.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ..checks import check_out, is_single_vector, numbers
from ..errors import ArgumentError, NonFiniteError, ShapeError
from ..kernels import parallel
from ..kernels.fk_codegen import LAYOUTS, built_fk, compiled_joint_poses, compiled_link_poses
from ..kernels.plan import compose, fk_plan, other_joint_motion, plane_frame
from ..kernels.single_lane import single_result
from ..model import JointType, RobotModel
from ..runtime import current_runtime
from ..spatial import matrix_to_quat_xyzw, rotation_about_axis

Array = NDArray[np.float64]

def _fk_components(model: RobotModel, qb: Array):
    """World rotations ``(3, 3, n_links, B)`` and positions ``(3, n_links, B)`` for ``qb (B, n_q)``."""
    plan = fk_plan(model)
    n, B = model.n_links, qb.shape[0]
    R = np.empty((3, 3, n, B))
    p = np.empty((3, n, B))
    R[:, :, 0] = np.eye(3)[..., None]
    p[:, 0] = 0.0
    Rl = np.empty((3, 3, n, B))
    pl = np.empty((3, n, B))
    if plan.scalar_links.size:
        value = qb[:, plan.scalar_q].T * plan.scalar_mult[:, None] + plan.scalar_offset[:, None]  # (ns, B)
        angle = np.where(plan.revolute[:, None], value, 0.0)
        shift = np.where(plan.revolute[:, None], 0.0, value)
        Rl[:, :, plan.scalar_links] = plan.Rc + plan.A1 * np.sin(angle) + plan.A2 * (1.0 - np.cos(angle))
        pl[:, plan.scalar_links] = plan.pc + plan.Rc_u * shift
    for link in plan.other_links:
        T = plan.C[link] @ other_joint_motion(model, link, qb)
        Rl[:, :, link] = np.moveaxis(T[:, :3, :3], 0, -1)
        pl[:, link] = T[:, :3, 3].T
    for level in plan.levels:
        a = plan.anchor[level]
        R[:, :, level], p[:, level] = compose(R[:, :, a], p[:, a], Rl[:, :, level], pl[:, level])
    if plan.fixed_links.size:
        f = plan.fixed_links
        Cf = plan.C[f]
        R[:, :, f], p[:, f] = compose(R[:, :, plan.anchor[f]], p[:, plan.anchor[f]],
                                       np.moveaxis(Cf[:, :3, :3], 0, -1)[..., None],
                                       np.moveaxis(Cf[:, :3, 3], 0, -1)[..., None])
    return R, p


def _batch(model: RobotModel, q) -> tuple[Array, tuple[int, ...]]:
    q = model.check_q(q)
    return q.reshape(math.prod(q.shape[:-1]), model.n_q), q.shape[:-1]


def forward_kinematics(model: RobotModel, q, *, frames=None, layout: str = "4x4", out: Array | None = None,
                       threads: int | None = None) -> Array:
    """World pose of every link (or of ``frames``).

    Uses the model's generated kernel when it has one (no floating / planar joint moves the
    links asked for), else the generic kernel; both agree to 1e-12. One configuration ``(n_q,)``
    (a C-contiguous float64 array) of every link goes to the kernel's compiled single entry once
    numba has loaded it (:func:`robokin_ros.prepare`, or a batch of
    :data:`robokin_ros.kernels.accel.MIN_BATCH` configurations); it checks ``q`` and ``out`` itself, and
    what it refuses takes the general path, which raises the typed errors. The options only shrink
    what is written: ``layout="3x4"`` and ``frames`` use kernels that compute and write just
    those entries, and ``out=`` reuses memory (no page faults of a fresh allocation).

    Args:
        model: the robot.
        q: configurations ``(..., n_q)``.
        frames: None (every link, in ``model.link_names`` order) or a sequence of link names
            and/or indices (negative ones count from the end, as in numpy), in output order.
        layout: ``"4x4"`` homogeneous matrices; ``"3x4"`` their top three rows ``[R | p]``
            (the constant ``[0, 0, 0, 1]`` row left out).
        out: optional array to write the result into, like numpy's ``out=``: float64,
            C-contiguous, writeable, of exactly the result's shape, not overlapping ``q``
            (the kernels write it while still reading ``q``).
        threads: most threads a batch runs on (None: ``ROBOKIN_THREADS``, else every core
            this process may use; see :mod:`robokin_ros.kernels.parallel`); results are
            bit-identical for every count.

    Returns:
        ``T_world_link (..., n, 4, 4)`` (``"3x4"``: ``(..., n, 3, 4)``), ``n = n_links`` or
        ``len(frames)``; ``out`` itself when given.

    Raises:
        ShapeError: ``q`` does not end in ``n_q``; ``out`` has the wrong shape.
        NonFiniteError: ``q`` has NaN or inf entries (named).
        UnknownLinkError: a name or index in ``frames`` the model does not have.
        ArgumentError: an unknown ``layout``; ``out`` not a writeable C-contiguous float64
            array; ``frames`` a str (pass a list).
    """
    if frames is None and layout == "4x4" and is_single_vector(q, model.n_q):
        # the single-configuration lane (robokin_ros.kernels.single_lane); None: the general path
        result = single_result(built_fk(model), out, q)
        if result is not None:
            return result
    if layout not in ("4x4", "3x4"):
        raise ArgumentError("layout", f"must be '4x4' or '3x4', got {layout!r} (positions: link_positions())")
    return _link_poses(model, q, model.link_indices(frames), layout, out, threads)


def link_positions(model: RobotModel, q, *, frames=None, out: Array | None = None,
                   threads: int | None = None) -> Array:
    """World position of every link's origin (or of ``frames``): the translations of
    :func:`forward_kinematics`, computed and written without the rotations.

    Args:
        q: configurations ``(..., n_q)``.
        frames: None (every link) or a sequence of link names and/or indices, in output order.
        out: optional float64, C-contiguous, writeable array of exactly the result's shape.
        threads: most threads a batch runs on (as :func:`forward_kinematics`).

    Returns:
        ``p_world_link (..., n, 3)`` [m], ``n = n_links`` or ``len(frames)``; ``out`` when given.

    Raises:
        ShapeError, NonFiniteError, UnknownLinkError, ArgumentError: as :func:`forward_kinematics`.
    """
    return _link_poses(model, q, model.link_indices(frames), "position", out, threads)


def _link_poses(model: RobotModel, q, links: tuple[int, ...] | None, layout: str, out, threads=None) -> Array:
    """:func:`forward_kinematics` / :func:`link_positions` of ``links`` (None: all) in ``layout``:
    the general, checked path: the generated kernel's compiled tier that runs now
    (:class:`~robokin_ros.kernels.fk_codegen.CompiledFK`), else the numpy recursion (the oracle)."""
    if threads is not None:
        parallel.check_threads(threads)   # a bad cap is refused on every path
    q = model.check_q(q)
    batch = q.shape[:-1]
    shape = batch + (model.n_links if links is None else len(links),) + LAYOUTS[layout]
    if out is not None:
        check_out(out, shape)
    if math.prod(shape) == 0:
        return np.empty(shape) if out is None else out
    compiled = compiled_link_poses(model, links, layout) if current_runtime().generated else None
    if compiled is not None:
        if q.ndim == 1:
            result = compiled.single(q, out=out)
        else:
            B = math.prod(batch)
            result = compiled.batch(q.reshape(B, model.n_q), None if out is None else out.reshape(B, -1), threads)
        if result is not None:
            return result.reshape(shape) if out is None else out
    T = forward_kinematics_generic(model, q)
    if links is not None:
        T = T[..., list(links), :, :]
    selected = T[..., :3, 3] if layout == "position" else T[..., :3, :] if layout == "3x4" else T
    if out is None:
        return np.ascontiguousarray(selected)
    out[...] = selected
    return out


def joint_poses(model: RobotModel, q) -> Array:
    """Pose of each 1-DOF joint's child link in its parent link — what robot_state_publisher
    sends on /tf — as rows ``[x, y, z, qx, qy, qz, qw]`` (the ROS order).

    Runs the model's generated kernel once numba has loaded it (in the background, after
    :data:`robokin_ros.kernels.accel.MIN_BATCH` configurations, or at once by
    :func:`robokin_ros.prepare`), else the numpy recursion (the oracle).

    Args:
        q: configurations ``(..., n_q)``.

    Returns:
        ``(..., n_scalar, 7)``, rows in the order of the model's revolute, continuous and
        prismatic joints (mimic joints included, computed from their source). Quaternion signs
        are not normalised.
    """
    q = model.check_q(q)
    if current_runtime().generated:
        compiled = compiled_joint_poses(model)
        result = compiled.single(q) if q.ndim == 1 else compiled.batch(q.reshape(math.prod(q.shape[:-1]), model.n_q))
        if result is not None:
            return result.reshape(q.shape[:-1] + compiled.shape)
    return _joint_poses_generic(model, q)


def _joint_poses_generic(model: RobotModel, q: Array) -> Array:
    """:func:`joint_poses` of checked ``q (..., n_q)`` from the joints' origins and motions (the
    generated kernel's oracle; quaternion signs may differ from it)."""
    joints = model.scalar_joint_indices
    src = np.where(model.is_mimic[joints], model.mimic_source[joints], joints)
    value = q[..., model.joint_q_index[src]] * model.mimic_multiplier[joints] + model.mimic_offset[joints]  # (..., ns)
    prismatic = model.joint_types[joints] == JointType.PRISMATIC
    axes = model.joint_axes[joints]                                                 # (ns, 3)
    M = np.zeros(value.shape + (4, 4))
    M[..., :3, :3] = rotation_about_axis(axes, np.where(prismatic, 0.0, value))
    M[..., :3, 3] = axes * np.where(prismatic, value, 0.0)[..., None]
    M[..., 3, 3] = 1.0
    T = model.joint_origins[joints] @ M
    return np.concatenate([T[..., :3, 3], matrix_to_quat_xyzw(T[..., :3, :3])], axis=-1)


def forward_kinematics_generic(model: RobotModel, q) -> Array:
    """:func:`forward_kinematics` by the generic kernel (the oracle of the generated one)."""
    qb, batch = _batch(model, q)
    R, p = _fk_components(model, qb)
    B, n = qb.shape[0], model.n_links
    T = np.zeros((B, n, 4, 4))
    T[:, :, :3, :3] = R.transpose(3, 2, 0, 1)
    T[:, :, :3, 3] = p.transpose(2, 1, 0)
    T[:, :, 3, 3] = 1.0
    return T.reshape(batch + (n, 4, 4))


def resolve_poses(model: RobotModel, q, poses) -> Array:
    """Link poses ``(..., n_links, 4, 4)``: ``poses`` if given (shape-checked), else FK of ``q``."""
    if poses is None:
        return forward_kinematics(model, q)
    poses = numbers(poses, "poses")
    q = model.check_q(q)
    expected = q.shape[:-1] + (model.n_links, 4, 4)
    if poses.shape != expected:
        raise ShapeError("poses", str(expected), poses.shape)
    if not np.isfinite(poses).all():
        bad = sorted(set(np.nonzero(~np.isfinite(poses))[-3].tolist()))
        raise NonFiniteError("poses", bad, [model.link_names[i] for i in bad])
    return poses


def frame_transform(model: RobotModel, q, frame_a: str, frame_b: str, poses=None) -> Array:
    """``T_a_b``: pose of frame b expressed in frame a, ``(..., 4, 4)``.

    Args:
        q: configurations ``(..., n_q)``.
        frame_a, frame_b: link names.
        poses: optional ``forward_kinematics(model, q)`` to reuse.

    Raises:
        UnknownLinkError: a frame name the model does not have.
    """
    a, b = model.link_index(frame_a), model.link_index(frame_b)
    T = resolve_poses(model, q, poses)
    Ta, Tb = T[..., a, :, :], T[..., b, :, :]
    Rt = np.swapaxes(Ta[..., :3, :3], -1, -2)
    out = np.zeros(Tb.shape)
    out[..., :3, :3] = Rt @ Tb[..., :3, :3]
    out[..., :3, 3] = np.einsum("...ij,...j->...i", Rt, Tb[..., :3, 3] - Ta[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def joint_motion_subspaces(model: RobotModel, q) -> list:
    """Per joint, its motion subspace ``S (..., 6, nv_j)`` in the child link frame, [linear; angular].

    The child twist (relative to the parent, in child axes) is ``S @ v_j``. Fixed joints give
    ``(..., 6, 0)``; mimic joints give their own axis (scale by the multiplier to map the source's v).
    Floating joints: identity (velocity in the child frame, Pinocchio's convention).
    Planar joints: the in-plane translations and the rotation, expressed in the child frame.
    """
    q = model.check_q(q)
    batch = q.shape[:-1]
    out = []
    for j in range(model.n_joints):
        t = JointType(model.joint_types[j])
        if t == JointType.FIXED:
            S = np.zeros(batch + (6, 0))
        elif t in (JointType.REVOLUTE, JointType.CONTINUOUS):
            S = np.broadcast_to(np.concatenate([np.zeros(3), model.joint_axes[j]])[:, None], batch + (6, 1))
        elif t == JointType.PRISMATIC:
            S = np.broadcast_to(np.concatenate([model.joint_axes[j], np.zeros(3)])[:, None], batch + (6, 1))
        elif t == JointType.FLOATING:
            S = np.broadcast_to(np.eye(6), batch + (6, 6))
        else:  # planar: child-frame axes are A Rz(θ); translations along A's x, y; rotation about z
            A = plane_frame(model.joint_axes[j])
            theta = q[..., model.joint_q_index[j] + 2]
            Rz = rotation_about_axis(np.array([0.0, 0.0, 1.0]), theta)
            R_child = A @ Rz @ A.T  # child axes in the joint frame
            S = np.zeros(batch + (6, 3))
            S[..., :3, 0:2] = np.swapaxes(R_child, -1, -2) @ A[:, :2]
            S[..., 3:, 2] = model.joint_axes[j]
        out.append(S)
    return out
