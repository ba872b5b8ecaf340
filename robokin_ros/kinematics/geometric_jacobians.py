"""Geometric Jacobians of one or every frame, in the three reference frames of Pinocchio.

Rows are [linear; angular]; columns follow v (``model.v_names``). A mimic joint adds its motion,
scaled by its multiplier, into its source's column.
"""

from __future__ import annotations

import enum
import math

import numpy as np
from numpy.typing import NDArray

from .. import model_cache
from ..checks import is_single_vector, real_array
from ..errors import ArgumentError
from ..kernels import parallel
from ..kernels.fk_codegen import compiled_frames, compiled_jacobian
from ..kernels.single_lane import single_result
from ..model import JointType, RobotModel
from ..runtime import current_runtime
from .fk import forward_kinematics, joint_motion_subspaces, resolve_poses

Array = NDArray[np.float64]


class Reference(enum.Enum):
    """Where a Jacobian's twist is expressed.

    WORLD: spatial twist, world axes, velocity of the body point at the world origin.
    LOCAL: the frame's own axes, velocity of the frame origin (body Jacobian).
    LOCAL_WORLD_ALIGNED: world axes, velocity of the frame origin (MoveIt's ``getJacobian``).
    """

    WORLD = "world"
    LOCAL = "local"
    LOCAL_WORLD_ALIGNED = "local_world_aligned"

    @classmethod
    def parse(cls, value) -> Reference:
        """A :class:`Reference` from itself or its name/value (case-insensitive)."""
        if isinstance(value, cls):
            return value
        text = str(value).strip().lower()
        for r in cls:
            if text in (r.value, r.name.lower()):
                return r
        raise ArgumentError("reference", f"unknown Jacobian reference {str(value)[:60]!r}; expected one of "
                                         f"{', '.join(r.name for r in cls)}")


WORLD, LOCAL, LOCAL_WORLD_ALIGNED = Reference.WORLD, Reference.LOCAL, Reference.LOCAL_WORLD_ALIGNED

class MotionColumns:
    """Every joint's motion columns: child link, v index, scale (mimic multiplier)."""

    def __init__(self, model: RobotModel):
        link, v, scale, sub, joint = [], [], [], [], []
        src = model.velocity_source_joints
        for j in range(model.n_joints):
            s = src[j]
            if s < 0:
                continue
            nv = model.joint_nv[s]
            for k in range(nv):
                link.append(j + 1)
                v.append(model.joint_v_index[s] + k)
                scale.append(model.mimic_multiplier[j] if model.is_mimic[j] else 1.0)
                sub.append(k)
                joint.append(j)
        self.link = np.array(link, np.int64)
        self.v = np.array(v, np.int64)
        self.scale = np.array(scale)
        self.sub = np.array(sub, np.int64)
        self.joint = np.array(joint, np.int64)
        self.varying = bool(np.any(model.joint_types[self.joint] == JointType.PLANAR)) if len(joint) else False
        self.select = np.zeros((len(link), model.n_v))            # (nc, n_v): column -> v, scaled
        self.select[np.arange(len(link)), self.v] = self.scale
        self.support = model.support_mask[:, self.link]          # (n_links, nc)
        if not self.varying:
            S = joint_motion_subspaces(model, model.home_configuration())
            self.S = np.array([S[j][:, k] for j, k in zip(self.joint, self.sub)]).reshape(-1, 6)

    def subspaces(self, model: RobotModel, q: Array) -> Array:
        """Motion columns in child-link axes ``(..., nc, 6)``."""
        if not self.varying:
            return self.S
        S = joint_motion_subspaces(model, q)
        return np.stack([S[j][..., :, k] for j, k in zip(self.joint, self.sub)], axis=-2)


#: The registry kind (:mod:`robokin_ros.model_cache`) of :func:`motion_columns`.
JACOBIAN_COLUMNS = "jacobian columns"


def motion_columns(model: RobotModel) -> MotionColumns:
    """The model's :class:`MotionColumns` (built on first use)."""
    return model_cache.cached(model, JACOBIAN_COLUMNS, None, MotionColumns, (model,))


def world_columns(model: RobotModel, q, T: Array):
    """World-aligned motion columns at each joint's child origin: ``(..., nc, 6)`` and points ``(..., nc, 3)``."""
    cols = motion_columns(model)
    Tc = T[..., cols.link, :, :]                                    # (..., nc, 4, 4)
    R = Tc[..., :3, :3]
    S = cols.subspaces(model, q)
    lin = np.einsum("...cij,...cj->...ci", R, np.broadcast_to(S[..., :3], R.shape[:-1]))
    ang = np.einsum("...cij,...cj->...ci", R, np.broadcast_to(S[..., 3:], R.shape[:-1]))
    return lin, ang, Tc[..., :3, 3]


def _express(J_lwa: Array, R: Array, p: Array, reference: Reference) -> Array:
    """Re-express Jacobians ``(..., 6, n)`` given at frame origin ``p (..., 3)`` with world axes."""
    if reference == Reference.LOCAL_WORLD_ALIGNED:
        return J_lwa
    lin, ang = J_lwa[..., :3, :], J_lwa[..., 3:, :]
    if reference == Reference.WORLD:  # velocity of the body point at the world origin: v - ω × p
        shift = np.cross(ang, p[..., :, None], axisa=-2, axisb=-2, axisc=-2)
        return np.concatenate([lin - shift, ang], axis=-2)
    Rt = np.swapaxes(R, -1, -2)
    return np.concatenate([Rt @ lin, Rt @ ang], axis=-2)


def jacobians(model: RobotModel, q, reference=LOCAL_WORLD_ALIGNED, poses=None) -> Array:
    """Geometric Jacobians of every link.

    Args:
        q: configurations ``(..., n_q)``.
        reference: a :class:`Reference` (or its name).
        poses: optional ``forward_kinematics(model, q)`` to reuse.

    Returns:
        ``(..., n_links, 6, n_v)``, rows [linear; angular] [m/s, rad/s per unit v].
    """
    reference = Reference.parse(reference)
    q = model.check_q(q)
    cols = motion_columns(model)
    batch = q.shape[:-1]
    n = math.prod(batch)
    qb = q.reshape(n, model.n_q)
    # Given poses are reused; else each chunk computes its own (no batch-sized pose array).
    Tb = None if poses is None else resolve_poses(model, q, poses).reshape((n, model.n_links, 4, 4))
    out = np.empty((n, model.n_links, 6, model.n_v))
    # Chunks keep the temporaries (several times the output per configuration) cache-sized:
    # peak memory stays near the output's.
    per_configuration = model.n_links * max(cols.select.shape[0], 1) * 6 * 8 * 4
    chunk = max(1, _CHUNK_BYTES // per_configuration)
    for start in range(0, n, chunk):
        stop = min(n, start + chunk)
        T = forward_kinematics(model, qb[start:stop]) if Tb is None else Tb[start:stop]
        out[start:stop] = _all_jacobians(model, cols, qb[start:stop], T, reference)
    return out.reshape(batch + (model.n_links, 6, model.n_v))


#: Temporaries per chunk of :func:`jacobians` [bytes].
_CHUNK_BYTES = 8 << 20


def _all_jacobians(model: RobotModel, cols, q: Array, T: Array, reference: Reference) -> Array:
    """:func:`jacobians` of ``q (B, n_q)`` with poses ``T (B, n_links, 4, 4)``."""
    lin, ang, pc = world_columns(model, q, T)                      # (B, nc, 3)
    p = T[..., :, :3, 3]                                            # (B, n_links, 3)
    r = p[..., :, None, :] - pc[..., None, :, :]                    # (B, n_links, nc, 3)
    Jl = lin[..., None, :, :] + np.cross(ang[..., None, :, :], r)
    Ja = np.broadcast_to(ang[..., None, :, :], Jl.shape)
    mask = cols.support[..., None]                                  # (n_links, nc, 1)
    Jc = np.concatenate([Jl * mask, Ja * mask], axis=-1)            # (B, n_links, nc, 6)
    J = np.swapaxes(Jc, -1, -2) @ cols.select                       # (B, n_links, 6, n_v)
    return _express(J, T[..., :, :3, :3], p, reference)


def jacobian(model: RobotModel, q, frame: str, reference=LOCAL_WORLD_ALIGNED, point=None, poses=None, *,
             threads: int | None = None) -> Array:
    """Geometric Jacobian of one frame.

    Args:
        q: configurations ``(..., n_q)``.
        frame: link name.
        reference: a :class:`Reference` (or its name).
        point: optional offset ``(3,)`` [m] in the frame's axes: the Jacobian of that point
            (of a frame translated there, for LOCAL). WORLD ignores it (it describes the
            body's spatial twist, which has no point).
        poses: optional ``forward_kinematics(model, q)`` to reuse.
        threads: most threads a batch runs on (None: ``ROBOKIN_THREADS``, else every core
            this process may use; see :mod:`robokin_ros.kernels.parallel`); results are
            bit-identical for every count.

    Returns:
        ``(..., 6, n_v)``, rows [linear; angular].

    One configuration ``(n_q,)`` (a C-contiguous float64 array) LOCAL_WORLD_ALIGNED, without
    ``point`` or ``poses``, goes to the frame's generated Jacobian kernel's compiled single entry
    once numba has loaded it (:func:`robokin_ros.prepare`, or after
    :data:`robokin_ros.kernels.accel.MIN_BATCH` such calls); it checks ``q`` itself, and what it refuses
    takes the general path, which raises the typed errors.

    Raises:
        UnknownLinkError: unknown frame. ShapeError: bad ``q``, ``point`` or ``poses``.
    """
    if (reference is LOCAL_WORLD_ALIGNED and point is None and poses is None and type(frame) is str
            and is_single_vector(q, model.n_q)):
        # the single-configuration lane (robokin_ros.kernels.single_lane); None: the general path
        J = single_result(compiled_jacobian(model, frame), None, q)
        if J is not None:
            return J
    return frame_pose_and_jacobian(model, q, frame, reference, point, poses, threads=threads)[1]


def _compiled_frame(model: RobotModel, q: Array, frame: str, threads: int | None) -> Array | None:
    """The frame's generated poses + Jacobian kernel (:func:`compiled_frames`) on checked ``q``,
    ``(..., 10, width)``, or None when no compiled tier runs (the caller runs the oracle)."""
    compiled = compiled_frames(model, (frame,))
    if compiled is None:
        return None
    if q.ndim == 1:
        out = compiled.single(q)
        return None if out is None else out[0]
    out = compiled.batch(q.reshape(math.prod(q.shape[:-1]), model.n_q), threads=threads)
    return None if out is None else out[:, 0].reshape(q.shape[:-1] + out.shape[-2:])


def frame_pose_and_jacobian(model: RobotModel, q, frame: str, reference=LOCAL_WORLD_ALIGNED,
                            point=None, poses=None, *, threads: int | None = None) -> tuple[Array, Array]:
    """World pose and geometric Jacobian of one frame, sharing the work (IK's inner loop).

    Args: as :func:`jacobian`.

    Returns:
        ``T_world_frame (..., 4, 4)`` (of the frame itself, without ``point``) and
        ``J (..., 6, n_v)`` in ``reference``.
    """
    reference = Reference.parse(reference)
    if threads is not None:
        parallel.check_threads(threads)   # a bad cap is refused on every path
    k = model.link_index(frame)
    if point is not None:
        point = real_array(point, "point", (3,), batch=False)
    q = model.check_q(q)
    out = _compiled_frame(model, q, frame, threads) if poses is None and current_runtime().generated else None
    if out is not None:
        Tk, J = out[..., :4, :4], out[..., 4:, :model.n_v]
        Rk, pk = Tk[..., :3, :3], Tk[..., :3, 3]
        if point is not None:
            r = Rk @ point
            J = np.concatenate([J[..., :3, :] + np.cross(J[..., 3:, :], r[..., :, None], axisa=-2, axisb=-2, axisc=-2),
                                J[..., 3:, :]], axis=-2)
            pk = pk + r
        return Tk, _express(J, Rk, pk, reference)
    T = resolve_poses(model, q, poses)
    cols = motion_columns(model)
    keep = np.flatnonzero(cols.support[k])
    Rk, pk = T[..., k, :3, :3], T[..., k, :3, 3]
    if point is not None:
        pk = pk + Rk @ point
    lin, ang, pc = world_columns(model, q, T)
    lin, ang, pc = lin[..., keep, :], ang[..., keep, :], pc[..., keep, :]
    Jl = lin + np.cross(ang, pk[..., None, :] - pc)
    Jc = np.concatenate([Jl, ang], axis=-1)                          # (..., nk, 6)
    J = np.swapaxes(Jc, -1, -2) @ cols.select[keep]                  # (..., 6, n_v)
    return T[..., k, :, :], _express(J, Rk, pk, reference)
