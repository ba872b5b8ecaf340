"""A reachability map: the data (:class:`ReachMap`), its ``.npz`` file, and how it is made
(:func:`reachability_map`).

The ``.npz`` file (``numpy.load``; every entry an array) holds:

==================  ==========================  =================================================
``format``          str                         ``"robokin reach map 1"``
``robot_sha256``    str                         sha256 (hex) of the robot's URDF text
``parameters``      str                         JSON of :class:`ReachParameters` (tip, base, ...)
``resolution``      float [m]                   voxel edge
``grid_origin``     ``(3,)`` [m]                centre of voxel ``(0, 0, 0)``, base frame
``grid_shape``      ``(3,)`` int                voxels along x, y, z
``voxels``          ``(n, 3)`` int32            grid indices of the mapped voxels
``centres``         ``(n, 3)`` [m]              their centres (``grid_origin + resolution * voxels``)
``reachability``    ``(n,)`` float in [0, 1]    reachability index: fraction of orientations reached
``manipulability``  ``(n,)`` float              mean manipulability of the solutions (NaN: none / not asked)
``solved``          ``(n, ceil(m / 8))`` uint8  reached orientations, bit-packed (``numpy.unpackbits``, ``count=m``)
``orientations``    ``(m, 3, 3)``               the target rotations tried at every voxel
``reach_centre``    ``(3,)`` [m]                centre of the sphere bounding the tip's positions
``reach_radius``    float [m]                   its radius (voxels beyond it are not mapped: index 0)
==================  ==========================  =================================================
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import sys
import time
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ..errors import ArgumentError
from ..model import RobotModel
from .chunks import ChunkResult, ReachJob, prepared, read_chunk, write_chunk
from .engines import run_processes, run_ray
from .parameters import ReachParameters

Array = NDArray[np.float64]

FORMAT = "robokin reach map 1"


@dataclasses.dataclass(frozen=True)
class RunStats:
    """How a map was made (not saved): chunks computed and read back, poses, wall time [s]."""

    chunks_computed: int
    chunks_reused: int
    poses_computed: int
    seconds: float

    @property
    def poses_per_second(self) -> float:
        return self.poses_computed / self.seconds if self.seconds > 0 else float("nan")


@dataclasses.dataclass(frozen=True, eq=False)
class ReachMap:
    """A reachability map (see the module docstring for the shapes; ``n`` voxels, ``m``
    orientations). ``run`` says how it was made (None when loaded from a file)."""

    parameters: ReachParameters
    robot_sha256: str
    resolution: float
    grid_origin: Array
    grid_shape: tuple[int, int, int]
    voxels: NDArray[np.int32]
    reachability: Array
    manipulability: Array
    solved: NDArray[np.bool_]
    orientations: Array
    reach_centre: Array
    reach_radius: float
    run: RunStats | None = None

    @property
    def centres(self) -> Array:
        """``(n, 3)`` [m] voxel centres in the base frame."""
        return self.grid_origin + self.resolution * self.voxels

    def dense(self, values: Array | None = None) -> Array:
        """``grid_shape`` array of ``values (n,)`` (default: the reachability index) at the
        mapped voxels, 0 elsewhere (beyond the reach)."""
        out = np.zeros(self.grid_shape)
        out[tuple(self.voxels.T)] = self.reachability if values is None else values
        return out

    def equals(self, other: ReachMap) -> bool:
        """Same robot, parameters, voxels and results (bit for bit; NaN equal to NaN)."""
        return (self.robot_sha256 == other.robot_sha256 and self.parameters == other.parameters
                and np.array_equal(self.voxels, other.voxels) and np.array_equal(self.solved, other.solved)
                and np.array_equal(self.reachability, other.reachability)
                and np.array_equal(self.manipulability, other.manipulability, equal_nan=True))

    def save(self, path: str) -> None:
        """Write the ``.npz`` file (atomically: a temporary file, then ``os.replace``)."""
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "wb") as f:
            np.savez_compressed(
                f, format=np.array(FORMAT), robot_sha256=np.array(self.robot_sha256),
                parameters=np.array(self.parameters.to_json()), resolution=np.array(self.resolution),
                grid_origin=self.grid_origin, grid_shape=np.array(self.grid_shape), voxels=self.voxels,
                centres=self.centres, reachability=self.reachability, manipulability=self.manipulability,
                solved=np.packbits(self.solved, axis=1), orientations=self.orientations,
                reach_centre=self.reach_centre, reach_radius=np.array(self.reach_radius))
        os.replace(temporary, path)


def load_reach_map(path: str) -> ReachMap:
    """Read a map written by :meth:`ReachMap.save`.

    Raises:
        ArgumentError: not a reach map file (or another format version).
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            fmt = str(data["format"]) if "format" in data.files else None
            if fmt != FORMAT:
                raise ArgumentError("map", f"{path} is not a {FORMAT!r} file (format {fmt!r})")
            orientations = data["orientations"]
            return ReachMap(
                parameters=ReachParameters.from_json(str(data["parameters"])),
                robot_sha256=str(data["robot_sha256"]), resolution=float(data["resolution"]),
                grid_origin=data["grid_origin"], grid_shape=tuple(int(n) for n in data["grid_shape"]),
                voxels=data["voxels"], reachability=data["reachability"], manipulability=data["manipulability"],
                solved=np.unpackbits(data["solved"], axis=1, count=len(orientations)).astype(bool),
                orientations=orientations, reach_centre=data["reach_centre"],
                reach_radius=float(data["reach_radius"]))
    except (KeyError, TypeError, ValueError) as error:   # (a missing entry, a bad parameters record)
        if isinstance(error, ArgumentError):
            raise
        raise ArgumentError("map", f"{path} is not a readable reach map ({error})") from None


def reachability_map(robot: str | RobotModel, tip: str, *, base: str | None = None, workers: int | None = None,
                     ray: str | None = None, chunk_dir: str | None = None,
                     progress: Callable[[int, int], None] | None = None, **options) -> ReachMap:
    """The reachability map of ``tip`` relative to ``base``: a voxel grid over the chain's reach,
    at each voxel centre the orientations of the parameters, a batched IK per chunk of voxels,
    and per voxel the reachability index (the fraction of orientations reached, as in
    Zacharias' capability maps and reuleaux).

    Args:
        robot: URDF text, or a model (its :meth:`~RobotModel.to_urdf` text is what travels).
        tip, base: the chain's tip and base links (base None: the root link).
        workers: local processes (default: every core this process may use); 1 runs in this process.
        ray: None: local processes; else run the chunks as Ray tasks (see
            :func:`~robokin_ros.reach.engines.run_ray`: ``"auto"``, ``"local"`` or an address).
        chunk_dir: folder for chunk files (resuming): the chunks go into a sub-folder named by
            the robot's and the parameters' hash; chunks found there are read instead of
            solved; it is removed once the map is gathered. None: no files.
        progress: called as ``progress(poses_done, poses_total)`` after every chunk.
        **options: the other fields of :class:`ReachParameters` (resolution, orientations, cone,
            seed, iterations, position_tolerance, rotation_tolerance, collisions,
            manipulability, chunk_poses).

    Returns:
        The :class:`ReachMap` (with ``run`` set); identical for every engine and worker count.

    Raises:
        ArgumentError: an invalid parameter, too many voxels, or Ray missing.
        UnknownLinkError: unknown tip or base. URDFError: unreadable URDF text.
    """
    unknown = sorted(set(options) - {f.name for f in dataclasses.fields(ReachParameters)})
    if unknown:
        raise ArgumentError(unknown[0], "is not a reachability map option")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ArgumentError("workers", f"must be a whole number >= 1, got {workers!r}")
    urdf = robot.to_urdf() if isinstance(robot, RobotModel) else robot
    job = ReachJob(urdf, ReachParameters(tip, base, **options))
    here = prepared(job)   # checks names and sizes before any worker starts
    n_vox, n_ori = len(here.grid.voxels), len(here.rotations)
    directory = None if chunk_dir is None else os.path.join(chunk_dir, job.key)
    if directory is not None:
        os.makedirs(directory, exist_ok=True)
    solved = np.zeros((n_vox, n_ori), dtype=bool)
    manip = np.full(n_vox, np.nan)
    done, total = 0, n_vox * n_ori

    def store(index: int, result: ChunkResult) -> None:
        nonlocal done
        rows = here.chunk_voxels(index)
        solved[rows], manip[rows] = result.solved, result.manipulability
        done += result.solved.size
        if progress is not None:
            progress(done, total)

    todo = []
    for index in range(here.n_chunks):
        rows = here.chunk_voxels(index)
        found = None if directory is None else read_chunk(directory, index, rows.stop - rows.start, n_ori)
        if found is None:
            todo.append(index)
        else:
            store(index, found)
    reused_poses = done
    start = time.perf_counter()
    engine = run_ray(job, todo, ray) if ray is not None else run_processes(job, todo, workers or _cores())
    for index, result in engine:
        if directory is not None:
            write_chunk(directory, index, result)
        store(index, result)
    seconds = time.perf_counter() - start
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)
    return ReachMap(parameters=job.parameters, robot_sha256=job.robot_sha256, resolution=here.grid.resolution,
                    grid_origin=here.grid.origin, grid_shape=here.grid.shape,
                    voxels=here.grid.voxels.astype(np.int32), reachability=solved.mean(axis=1),
                    manipulability=manip, solved=solved, orientations=here.rotations,
                    reach_centre=np.asarray(here.reach_centre, float), reach_radius=here.reach_radius,
                    run=RunStats(len(todo), here.n_chunks - len(todo), done - reused_poses, seconds))


def _cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def progress_bar(description: str):
    """A tqdm bar on stderr counting poses (its rate in poses/s) as a ``progress`` callback;
    returns ``(callback, close)``."""
    from tqdm import tqdm

    bar = tqdm(total=0, desc=description, unit="pose", unit_scale=True, file=sys.stderr, disable=None)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.update(done - bar.n)

    return update, bar.close
