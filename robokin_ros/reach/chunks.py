"""One chunk of a map: a run of consecutive voxels, each with every orientation, solved by one
batched IK call. What a worker process or a Ray task runs, and the chunk files of resuming.

A chunk depends only on the robot's URDF text, the :class:`ReachParameters` and its index: its
IK seeds and restarts come from ``numpy.random.SeedSequence([seed, index])``, and the numba
kernels are loaded before the first solve (numpy and numba kernels may differ in the last
bits), so any engine on any machine computes the same chunk.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from ..errors import ArgumentError
from ..ik import IKResult, prepare_ik, solve_ik
from ..ik.chain import chain_of
from ..kernels import prepare
from ..kinematics import jacobian
from ..model import RobotModel
from .grid import VoxelGrid, reach_grid, reach_sphere, voxel_estimate
from .orientations import cone_orientations, uniform_orientations
from .parameters import MAX_POSES, ReachParameters

Array = NDArray[np.float64]


@dataclasses.dataclass(frozen=True)
class ReachJob:
    """What a worker needs to compute any chunk of a map: plain data that pickles small.

    Attributes:
        urdf: the robot's URDF text. parameters: the map's parameters.
    """

    urdf: str
    parameters: ReachParameters

    @cached_property
    def robot_sha256(self) -> str:
        """sha256 of the URDF text (hex)."""
        return hashlib.sha256(self.urdf.encode()).hexdigest()

    @cached_property
    def key(self) -> str:
        """Names this map (robot and parameters): its chunk directory."""
        return self.parameters.key(self.robot_sha256)


@dataclasses.dataclass(frozen=True)
class ChunkResult:
    """The outcome of one chunk.

    Attributes:
        solved: ``(n_voxels_in_chunk, n_orientations)`` bool, pose reached.
        manipulability: ``(n_voxels_in_chunk,)`` mean Yoshikawa manipulability of the solutions
            (NaN where none, or not asked for).
    """

    solved: NDArray[np.bool_]
    manipulability: Array


class PreparedMap:
    """A job made ready in one process: the model, the grid, the orientations, the IK setup
    (the chain below the base as a model of its own unless collisions involve the whole robot)
    and the loaded kernels.

    Attributes:
        job: the job. model: the robot. grid: the :class:`VoxelGrid`. reach_centre ``(3,)`` [m],
        reach_radius [m]: the reach sphere. rotations: ``(n_orientations, 3, 3)`` target rotations.
        voxels_per_chunk, n_chunks: the chunking.
    """

    def __init__(self, job: ReachJob):
        p = job.parameters
        self.job = job
        self.model = RobotModel.from_urdf(job.urdf)
        self.reach_centre, self.reach_radius = reach_sphere(self.model, p.tip, p.base)
        _check_poses(voxel_estimate(self.reach_centre, self.reach_radius, p.resolution), p, self.reach_radius)
        self.grid: VoxelGrid = reach_grid(self.reach_centre, self.reach_radius, p.resolution)
        _check_poses(len(self.grid.voxels), p, self.reach_radius)
        if p.cone is None:
            self.rotations = uniform_orientations(p.orientations)
            self._axis_tolerances = None
        else:
            self.rotations = cone_orientations(p.orientations, p.cone[:3], p.cone[3])
            self._axis_tolerances = [0.0] * 5 + [math.inf]   # any rotation about the tool axis
        self.voxels_per_chunk = max(1, p.chunk_poses // p.orientations)
        self.n_chunks = -(-len(self.grid.voxels) // self.voxels_per_chunk)
        # Without collisions the problem is solved on the chain base -> tip (what solve_ik does
        # inside too); collisions involve the whole robot.
        chain = None if p.collisions else chain_of(self.model, (p.tip,), p.base)
        self.solve_model = self.model if chain is None else chain.chain
        self.solve_base = p.base if chain is None else None
        base = self.solve_base or self.solve_model.root_link
        m = self.solve_model
        path = [m.joint_index(name) for name in m.path_joints(base, p.tip)]
        self._q_cols = np.array([m.joint_q_index[j] for j in path], dtype=np.int64)
        self._v_cols = np.array([m.joint_v_index[j] for j in path], dtype=np.int64)
        prepare(m, frames=[(p.tip,)], fk=p.collisions)   # (the collision test places links by FK)
        if not p.collisions:   # chunks run on the compiled IK loop in every process alike (the same answers)
            prepare_ik(m, p.tip, base=self.solve_base, position_tolerance=p.position_tolerance,
                       rotation_tolerance=p.rotation_tolerance, axis_tolerances=self._axis_tolerances,
                       max_iterations=p.iterations)

    def chunk_voxels(self, index: int) -> slice:
        """The voxels (rows of ``grid.voxels``) of chunk ``index``."""
        start = index * self.voxels_per_chunk
        return slice(start, min(start + self.voxels_per_chunk, len(self.grid.voxels)))

    def targets(self, index: int) -> Array:
        """``(n_voxels_in_chunk, n_orientations, 4, 4)`` target poses ``T_base_tip`` of chunk ``index``."""
        centres = self.grid.centres[self.chunk_voxels(index)]
        T = np.zeros((len(centres), len(self.rotations), 4, 4))
        T[..., :3, :3] = self.rotations
        T[..., :3, 3] = centres[:, None, :]
        T[..., 3, 3] = 1.0
        return T

    def solve(self, index: int) -> tuple[Array, IKResult]:
        """Targets (see :meth:`targets`) and the IK result (batch ``(n_voxels_in_chunk,
        n_orientations)``, configurations of :attr:`solve_model`) of chunk ``index``."""
        p = self.job.parameters
        T = self.targets(index)
        batch = T.shape[:2]
        rng = np.random.default_rng(np.random.SeedSequence([p.seed, index]))
        n = math.prod(batch)
        seeds = np.tile(self.solve_model.home_configuration(), (n, 1))
        seeds[:, self._q_cols] = self.solve_model.random_configuration(n, rng=rng)[:, self._q_cols]
        result = solve_ik(self.solve_model, T.reshape(n, 4, 4), p.tip, seeds, base=self.solve_base,
                          position_tolerance=p.position_tolerance, rotation_tolerance=p.rotation_tolerance,
                          axis_tolerances=self._axis_tolerances, max_iterations=p.iterations,
                          rng=int(rng.integers(2**63)), avoid_collisions=p.collisions)
        shaped = IKResult(*(np.reshape(getattr(result, f.name), batch + np.shape(getattr(result, f.name))[1:])
                            for f in dataclasses.fields(result)))
        return T, shaped

    def manipulability(self, q: Array) -> Array:
        """``(...)`` Yoshikawa manipulability ``sqrt(det(J Jᵀ))`` of the chain at ``q (..., n_q)``."""
        J = jacobian(self.solve_model, q, self.job.parameters.tip)[..., self._v_cols]
        return np.sqrt(np.clip(np.linalg.det(J @ np.swapaxes(J, -1, -2)), 0.0, None))

    def run(self, index: int) -> ChunkResult:
        """Chunk ``index`` solved."""
        _, result = self.solve(index)
        solved = np.asarray(result.success, dtype=bool)
        manip = np.full(solved.shape[0], np.nan)
        if self.job.parameters.manipulability and solved.any():
            w = np.where(solved, self.manipulability(result.q), 0.0)
            count = solved.sum(axis=1)
            manip[count > 0] = w.sum(axis=1)[count > 0] / count[count > 0]
        return ChunkResult(solved, manip)


def _check_poses(voxels: float, p: ReachParameters, radius: float) -> None:
    """Refuse a map of more than :data:`~robokin_ros.reach.parameters.MAX_POSES` poses (before
    its arrays are allocated)."""
    if voxels * p.orientations > MAX_POSES:
        raise ArgumentError("resolution", f"{p.resolution:g} m voxels x {p.orientations} orientations make about "
                                          f"{voxels * p.orientations:.3g} poses ({voxels:.3g} voxels in a reach of "
                                          f"radius {radius:.3g} m), more than the limit of {MAX_POSES:.3g} poses: "
                                          "use coarser voxels or fewer orientations")


#: The jobs this process has prepared, by key (a worker serves one map at a time; a few kept).
#: Not per-model state, so not in :mod:`robokin_ros.model_cache`: a job is keyed by its URDF text
#: and parameters, and its :class:`PreparedMap` makes and owns the model (registry entries hang
#: off a model someone else keeps alive, and must not hold it). Worker processes and Ray tasks
#: fill their own copy; what the model derives (IK problems, kernels) is in the registry.
_PREPARED: dict[str, PreparedMap] = {}
_KEEP = 4


def prepared(job: ReachJob) -> PreparedMap:
    """The :class:`PreparedMap` of ``job`` in this process (made on first use)."""
    found = _PREPARED.get(job.key)
    if found is None:
        found = PreparedMap(job)
        while len(_PREPARED) >= _KEEP:
            _PREPARED.pop(next(iter(_PREPARED)))
        _PREPARED[job.key] = found
    return found


def run_chunk(job: ReachJob, index: int) -> tuple[int, ChunkResult]:
    """``(index, result)`` of chunk ``index`` of ``job`` (what every engine runs)."""
    return index, prepared(job).run(index)
