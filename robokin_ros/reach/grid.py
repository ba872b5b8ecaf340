"""The voxel grid of a map: a cube of voxels around the chain's reach, and which of them lie
within it.

The grid is aligned with the base frame and has a voxel centre at the base origin (so slices
through the base are grid planes): centre of voxel ``(i, j, k)`` = ``origin + resolution * (i,
j, k)``. The reach is a sphere holding every position the tip can take, chosen from the chain:
its pivot is the origin of the first rotating joint (which that joint turns about, so no later
joint changes the tip's distance from it by more than the rest of the chain's length); prismatic
joints before it (a torso lift, a gantry) slide the pivot within a box of their travel, whose
middle is the sphere's centre (the shoulder at half lift on a mobile manipulator, not the floor
under the base). The radius is bounded by the box's half diagonal plus the chain's length from
the pivot: the sum of the distances between consecutive link origins from there to the tip
(constant for revolute joints; a prismatic joint adds its largest travel). That bound is loose
where link offsets are orthogonal (1.31 m for a UR5e that reaches 1.04 m), so the radius used is
the farthest tip distance from the centre found by sampling configurations and climbing the
distance's gradient within the limits from the farthest samples, plus a margin, capped by the
bound. Voxels whose cube cannot meet the sphere are not mapped.
"""

from __future__ import annotations

import dataclasses
import itertools
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
#: Most leading prismatic coordinates whose box corners are all tried (more: a looser sum).
MAX_CORNER_AXES = 12


def reach_sphere(model: RobotModel, tip: str, base: str | None = None) -> tuple[Array, float]:
    """Centre ``(3,)`` [m, base frame] and radius [m] of a sphere holding every tip position
    (see the module docstring).

    Raises:
        UnknownLinkError: unknown tip or base.
        ArgumentError: the base is not an ancestor of the tip.
        ModelError: a floating or planar joint on the chain, or a prismatic joint without
            finite limits.
    """
    tip_idx = model.link_index(tip)
    base_idx = 0 if base is None else model.link_index(base)
    path = [tip_idx]                       # tip, its parent, ... up to the base
    while path[-1] != base_idx:
        if path[-1] == 0:
            raise ArgumentError("base", f"{model.link_names[base_idx]!r} is not an ancestor of the tip {tip!r}")
        path.append(int(model.link_parents[path[-1]]))
    path.reverse()
    kinds = [JointType(int(model.joint_types[link - 1])) for link in path[1:]]   # kinds[k - 1] moves path[k]
    travel = []
    for k, kind in enumerate(kinds, 1):
        j = path[k] - 1
        if kind in (JointType.FLOATING, JointType.PLANAR):
            raise ModelError(f"{kind.name.lower()} joint {model.all_joint_names[j]!r} on the chain to {tip!r}: "
                             "the reach is unbounded")
        travel.append(max(abs(model.joint_lower[j]), abs(model.joint_upper[j])) if kind == JointType.PRISMATIC
                      else 0.0)
        if not math.isfinite(travel[-1]):
            raise ModelError(f"prismatic joint {model.all_joint_names[j]!r} on the chain to {tip!r} "
                             "has no finite limits")
    rotating = [k for k, kind in enumerate(kinds, 1) if kind in (JointType.REVOLUTE, JointType.CONTINUOUS)]
    pivot = rotating[0] if rotating else len(path) - 1   # (no rotating joint: the tip itself)
    T = forward_kinematics(model, model.home_configuration())
    origins = (np.linalg.inv(T[base_idx]) @ T[path])[:, :3, 3]
    length = float(np.linalg.norm(np.diff(origins[pivot:], axis=0), axis=1).sum()) + sum(travel[pivot:])
    chain, chain_base = _chain_model(model, tip, base_idx)
    centre, half_diagonal = _pivot_box(chain, chain_base, model.link_names[path[pivot]], tip)
    farthest = _farthest_tip(chain, tip, chain_base, centre)
    return centre, min(half_diagonal + length, farthest * (1 + REACH_MARGIN))


def _chain_model(model: RobotModel, tip: str, base_idx: int) -> tuple[RobotModel, int]:
    """The model of the chain base -> tip when it can be cut out (only its joints move the tip
    relative to the base), else the robot; and the base's index in it."""
    chain = chain_of(model, (tip,), model.link_names[base_idx] if base_idx else None)
    return (model, base_idx) if chain is None else (chain.chain, 0)


def _pivot_box(model: RobotModel, base_idx: int, pivot: str, tip: str) -> tuple[Array, float]:
    """Centre ``(3,)`` [m, base frame] and half diagonal [m] of the positions the ``pivot``
    link's origin takes: the prismatic joints above it (no joint above it rotates) move it
    affinely in the q coordinates, within the limits' box."""
    pivot_idx = model.link_index(pivot)
    q0 = model.home_configuration()
    if model.n_q != model.n_v:
        return _positions(model, q0[None], base_idx, pivot_idx)[0], 0.0
    steps = q0 + np.vstack([np.zeros(model.n_q), np.eye(model.n_q)])   # home, then one coordinate + 1 each
    p = _positions(model, steps, base_idx, pivot_idx)
    A = (p[1:] - p[0]).T                                                # (3, n_q) d pivot / d q
    moves = np.flatnonzero(np.linalg.norm(A, axis=0) > 1e-12)
    lo, hi = model.q_lower[moves], model.q_upper[moves]
    if not np.isfinite(lo).all() or not np.isfinite(hi).all():
        raise ModelError(f"a prismatic joint above {pivot!r} on the chain to {tip!r} has no finite limits")
    A, half = A[:, moves], (hi - lo) / 2
    centre = p[0] + A @ ((lo + hi) / 2 - q0[moves])
    if len(moves) == 0:
        return centre, 0.0
    if len(moves) <= MAX_CORNER_AXES:
        signs = np.array(list(itertools.product((-1.0, 1.0), repeat=len(moves)))).reshape(-1, len(moves))
        return centre, float(np.linalg.norm((signs * half) @ A.T, axis=1).max())
    return centre, float((np.linalg.norm(A, axis=0) * half).sum())


def _positions(model: RobotModel, q: Array, base_idx: int, link_idx: int) -> Array:
    """``(n, 3)`` [m] origins of link ``link_idx`` in the base frame at configurations ``q (n, n_q)``."""
    T = forward_kinematics(model, q)
    return (np.linalg.inv(T[:, base_idx]) @ T[:, link_idx])[:, :3, 3]


def _farthest_tip(model: RobotModel, tip: str, base_idx: int, centre: Array) -> float:
    """The largest tip distance [m] from ``centre`` (base frame) found by sampling, then by
    projected gradient ascent from the farthest samples (deterministic: a fixed seed)."""
    tip_idx = model.link_index(tip)
    rng = np.random.default_rng(0)
    q = model.random_configuration(REACH_SAMPLES, rng=rng)

    def offsets(q):
        return _positions(model, q, base_idx, tip_idx) - centre

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


def _cube(centre: Array, radius: float, resolution: float) -> tuple[NDArray[np.int64], tuple[int, int, int]]:
    """Grid index of the lowest corner voxel and the shape of the cube of voxels around the sphere."""
    low = np.floor((centre - radius) / resolution).astype(np.int64)
    high = np.ceil((centre + radius) / resolution).astype(np.int64)
    return low, tuple(int(n) for n in high - low + 1)


def voxel_estimate(centre, radius: float, resolution: float) -> float:
    """About how many voxels :func:`reach_grid` maps (the sphere holds about pi/6 of the cube
    around it), computed without allocating them.

    Raises:
        ArgumentError: more than :data:`~robokin_ros.reach.parameters.MAX_VOXELS`.
    """
    estimate = math.pi / 6 * math.prod(_cube(np.asarray(centre, dtype=float), radius, resolution)[1])
    if estimate > MAX_VOXELS:
        raise ArgumentError("resolution", f"{resolution:g} m makes about {estimate:.3g} voxels in a reach of radius "
                                          f"{radius:.3g} m (at most {MAX_VOXELS:g})")
    return estimate


def reach_grid(centre, radius: float, resolution: float) -> VoxelGrid:
    """The grid of the voxels whose cube may meet the sphere (``centre (3,)``, ``radius``).

    Raises:
        ArgumentError: more than :data:`~robokin_ros.reach.parameters.MAX_VOXELS` voxels.
    """
    centre = np.asarray(centre, dtype=float)
    low, shape = _cube(centre, radius, resolution)
    voxel_estimate(centre, radius, resolution)   # (refused before the cube is allocated)
    axes = [np.arange(n) for n in shape]
    index = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    centres = (low + index) * resolution
    # A voxel is kept when its cube can meet the sphere: centre within radius + half diagonal.
    keep = np.linalg.norm(centres - centre, axis=1) <= radius + resolution * math.sqrt(3) / 2
    return VoxelGrid(float(resolution), low * float(resolution), shape, index[keep])
