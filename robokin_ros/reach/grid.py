"""The voxel grid of a map: a cube of voxels around the chain's reach, and which of them lie
within it.

The grid is aligned with the base frame and has a voxel centre at the base origin (so slices
through the base are grid planes): centre of voxel ``(i, j, k)`` = ``origin + resolution * (i,
j, k)``. The reach is a sphere holding every position the tip can take, centred at the first
moving joint's origin (which no chain joint moves). Its radius is bounded by the chain's
length: the sum of the distances between consecutive link origins from there to the tip
(constant for revolute joints; a prismatic joint adds its largest travel). That bound is loose
where link offsets are orthogonal (1.31 m for a UR5e that reaches 1.04 m), so the radius used is
the farthest tip distance found by sampling configurations and climbing the distance's gradient
within the limits from the farthest samples, plus a margin, capped by the chain's length.
Voxels whose cube cannot meet the sphere are not mapped.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numpy.typing import NDArray

from ..errors import ArgumentError, ModelError
from ..ik.chain import chain_of
from ..kinematics import forward_kinematics, jacobian
from ..model import JointType, RobotModel
from .parameters import MAX_VOXELS

Array = NDArray[np.float64]


#: Configurations sampled, farthest ones climbed, gradient steps and relative margin of :func:`reach_sphere`.
REACH_SAMPLES, REACH_CLIMBS, REACH_STEPS, REACH_MARGIN = 20_000, 16, 200, 0.01


def reach_sphere(model: RobotModel, tip: str, base: str | None = None) -> tuple[Array, float]:
    """Centre ``(3,)`` [m, base frame] and radius [m] of a sphere holding every tip position
    (see the module docstring).

    Raises:
        UnknownLinkError: unknown tip or base.
        ArgumentError: the base is not an ancestor of the tip.
        ModelError: a prismatic joint on the chain without finite limits.
    """
    tip_idx = model.link_index(tip)
    base_idx = 0 if base is None else model.link_index(base)
    path = [tip_idx]                       # tip, its parent, ... up to the base
    while path[-1] != base_idx:
        if path[-1] == 0:
            raise ArgumentError("base", f"{model.link_names[base_idx]!r} is not an ancestor of the tip {tip!r}")
        path.append(int(model.link_parents[path[-1]]))
    path.reverse()
    T = forward_kinematics(model, model.home_configuration())
    T_base = np.linalg.inv(T[base_idx])
    origins = (T_base @ T[path])[:, :3, 3]
    joints = [path[k] - 1 for k in range(1, len(path))]   # joint j moves link j + 1
    moving = [k for k, j in enumerate(joints, 1) if model.joint_types[j] != JointType.FIXED]
    # The first moving joint's origin (its child link's) stays put, unless it slides: then its parent's.
    first = len(path) - 1 if not moving else \
        moving[0] - (model.joint_types[joints[moving[0] - 1]] == JointType.PRISMATIC)
    radius = float(np.linalg.norm(np.diff(origins[first:], axis=0), axis=1).sum())
    for k in moving:
        j = joints[k - 1]
        kind = JointType(int(model.joint_types[j]))
        if kind in (JointType.FLOATING, JointType.PLANAR):
            raise ModelError(f"{kind.name.lower()} joint {model.all_joint_names[j]!r} on the chain to {tip!r}: "
                             "the reach is unbounded")
        if kind == JointType.PRISMATIC:
            travel = max(abs(model.joint_lower[j]), abs(model.joint_upper[j]))
            if not math.isfinite(travel):
                raise ModelError(f"prismatic joint {model.all_joint_names[j]!r} on the chain to {tip!r} "
                                 "has no finite limits")
            radius += float(travel)
    centre = origins[first]
    farthest = _farthest_tip(model, tip, base_idx, centre)
    return centre, min(radius, farthest * (1 + REACH_MARGIN))


def _farthest_tip(model: RobotModel, tip: str, base_idx: int, centre: Array) -> float:
    """The largest tip distance [m] from ``centre`` (base frame) found by sampling, then by
    projected gradient ascent from the farthest samples (deterministic: a fixed seed)."""
    chain = chain_of(model, (tip,), model.link_names[base_idx] if base_idx else None)
    if chain is not None:   # only the chain's joints move the tip relative to the base
        model, base_idx = chain.chain, 0
    tip_idx = model.link_index(tip)
    rng = np.random.default_rng(0)
    q = model.random_configuration(REACH_SAMPLES, rng=rng)

    def offsets(q):
        T = forward_kinematics(model, q)
        return (np.linalg.inv(T[..., base_idx, :, :]) @ T[..., tip_idx, :, :])[..., :3, 3] - centre

    distance = np.linalg.norm(offsets(q), axis=-1)
    q = q[np.argsort(distance)[-REACH_CLIMBS:]]
    best = float(distance.max())
    if model.n_q != model.n_v:   # (quaternion coordinates: no gradient steps in q)
        return best
    lo, hi = model.q_lower, model.q_upper
    step = 0.05
    for _ in range(REACH_STEPS):
        d = offsets(q)
        # d (climbs, 3) in the base frame; the Jacobian's linear rows in the world axes.
        T = forward_kinematics(model, q)
        R_world_base = T[:, base_idx, :3, :3]
        J = jacobian(model, q, tip)[:, :3, :]
        gradient = np.einsum("bi,bij->bj", np.einsum("bij,bj->bi", R_world_base, d), J)   # d|d|²/2 per q
        # (v = q coordinates here: chains of revolute, continuous and prismatic joints.)
        q = np.clip(q + step * gradient / np.maximum(np.linalg.norm(gradient, axis=1, keepdims=True), 1e-12), lo, hi)
        best = max(best, float(np.linalg.norm(offsets(q), axis=-1).max()))
        step *= 0.98
    return best


@dataclasses.dataclass(frozen=True)
class VoxelGrid:
    """The voxels of a map.

    Attributes:
        resolution: [m] voxel edge.
        origin: ``(3,)`` [m] centre of voxel ``(0, 0, 0)`` in the base frame.
        shape: ``(3,)`` voxels along x, y, z.
        voxels: ``(n, 3)`` int grid indices of the mapped voxels (within the reach), in
            lexicographic order.
    """

    resolution: float
    origin: Array
    shape: tuple[int, int, int]
    voxels: NDArray[np.int64]

    @property
    def centres(self) -> Array:
        """``(n, 3)`` [m] voxel centres in the base frame."""
        return self.origin + self.resolution * self.voxels


def reach_grid(centre, radius: float, resolution: float) -> VoxelGrid:
    """The grid of the voxels whose cube may meet the sphere (``centre (3,)``, ``radius``).

    Raises:
        ArgumentError: more than :data:`~robokin_ros.reach.parameters.MAX_VOXELS` voxels.
    """
    centre = np.asarray(centre, dtype=float)
    low = np.floor((centre - radius) / resolution).astype(np.int64)
    high = np.ceil((centre + radius) / resolution).astype(np.int64)
    shape = tuple(int(n) for n in high - low + 1)
    # The sphere holds about pi/6 of its bounding cube; refuse before allocating the cube.
    if math.pi / 6 * math.prod(shape) > MAX_VOXELS:
        raise ArgumentError("resolution", f"{resolution:g} m makes about {math.pi / 6 * math.prod(shape):.3g} voxels "
                                          f"in a reach of radius {radius:.3g} m (at most {MAX_VOXELS:g})")
    axes = [np.arange(n) for n in shape]
    index = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    centres = (low + index) * resolution
    # A voxel is kept when its cube can meet the sphere: centre within radius + half diagonal.
    keep = np.linalg.norm(centres - centre, axis=1) <= radius + resolution * math.sqrt(3) / 2
    return VoxelGrid(float(resolution), low * float(resolution), shape, index[keep])
