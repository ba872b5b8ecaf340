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

import contextlib
import dataclasses
import io
import math
import os
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from ..errors import ArgumentError
from ..model import RobotModel
from .chunk_files import ChunkFolder
from .chunks import ChunkResult, PreparedMap, ReachJob, prepared
from .engines import run_processes, run_ray
from .failures import KeptChunks, ReachInterrupted, ReachWorkerError
from .files import NpzReader, replace_file
from .parameters import MAX_ORIENTATIONS, MAX_POSES, MAX_VOXELS, ReachParameters

Array = NDArray[np.float64]

FORMAT = "robokin reach map 1"
#: Largest map file read [bytes]: a map at the limits (:data:`MAX_POSES` bits,
#: :data:`MAX_VOXELS` voxels of about 60 bytes, :data:`MAX_ORIENTATIONS` rotations) and 1 MiB.
MAX_MAP_FILE_BYTES = MAX_POSES // 8 + 64 * MAX_VOXELS + 80 * MAX_ORIENTATIONS + (1 << 20)
#: Largest text entry of a map file (the parameters' JSON, the format, the digest) [bytes].
MAX_TEXT_BYTES = 1 << 16


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


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class ReachMap:
    """A reachability map (see the module docstring for the shapes; ``n`` voxels, ``m``
    orientations). ``run`` says how it was made (None when loaded from a file). Its repr is one
    short line (sizes and the mean index, never the arrays)."""

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

    def __repr__(self) -> str:
        p = self.parameters
        reached = float(np.mean(self.reachability)) if len(self.reachability) else float("nan")
        run = "" if self.run is None else (f", run: {self.run.chunks_computed} chunks computed, "
                                           f"{self.run.chunks_reused} resumed, {self.run.seconds:.1f} s")
        return (f"ReachMap(tip={p.tip!r}, base={p.base!r}, {len(self.voxels)} voxels of {self.resolution:g} m "
                f"in a {'x'.join(map(str, self.grid_shape))} grid, {len(self.orientations)} orientations, "
                f"mean reachability {reached:.3f}, robot sha256 {self.robot_sha256[:12]}…{run})")

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

    def slice_voxel(self) -> NDArray[np.int64]:
        """``(3,)`` grid index of the voxel nearest the reach sphere's centre (the chain's pivot:
        its first rotating joint, at half the travel of the prismatic joints above it; the
        shoulder at half lift on a mobile manipulator, not the floor under its base), clipped
        to the grid: where slices through the map cut."""
        index = np.round((np.asarray(self.reach_centre) - self.grid_origin) / self.resolution).astype(np.int64)
        return np.clip(index, 0, np.asarray(self.grid_shape) - 1)

    def equals(self, other: ReachMap) -> bool:
        """Same robot, parameters, voxels and results (bit for bit; NaN equal to NaN)."""
        return (self.robot_sha256 == other.robot_sha256 and self.parameters == other.parameters
                and np.array_equal(self.voxels, other.voxels) and np.array_equal(self.solved, other.solved)
                and np.array_equal(self.reachability, other.reachability)
                and np.array_equal(self.manipulability, other.manipulability, equal_nan=True))

    def save(self, path: str) -> None:
        """Write the ``.npz`` file atomically (:func:`~robokin_ros.reach.files.replace_file`: a
        ``mkstemp`` file beside it, mode 0600, then ``os.replace``; never through a link planted
        at a predictable name).

        Raises:
            OSError: the folder is not writable, or ``path`` is a directory.
        """
        buffer = io.BytesIO()
        np.savez_compressed(
            buffer, format=np.array(FORMAT), robot_sha256=np.array(self.robot_sha256),
            parameters=np.array(self.parameters.to_json()), resolution=np.array(self.resolution),
            grid_origin=self.grid_origin, grid_shape=np.array(self.grid_shape), voxels=self.voxels,
            centres=self.centres, reachability=self.reachability, manipulability=self.manipulability,
            solved=np.packbits(self.solved, axis=1), orientations=self.orientations,
            reach_centre=self.reach_centre, reach_radius=np.array(self.reach_radius))
        replace_file(path, buffer.getvalue())


def load_reach_map(path: str) -> ReachMap:
    """Read a map written by :meth:`ReachMap.save`, trusting nothing in it: a regular file of at
    most :data:`MAX_MAP_FILE_BYTES`, every array's shape and type checked against the map's own
    sizes before it is inflated (a zip bomb or a header claiming a huge array is refused), the
    numbers checked (finite, indices within the grid, indices in [0, 1]).

    Raises:
        ArgumentError: unreadable, not a reach map file (or another format version), or a map
            whose entries do not fit together (the message names the file and the reason).
    """
    try:
        reader = NpzReader(path, MAX_MAP_FILE_BYTES)
        fmt = str(reader.array("format", (), "U", MAX_TEXT_BYTES)) if "format" in reader.names else None
    except OSError as error:
        raise ArgumentError("map", f"{path} cannot be read ({error.strerror or error})") from None
    except ValueError as error:
        raise ArgumentError("map", f"{path} is not a readable reach map ({error})") from None
    if fmt != FORMAT:
        raise ArgumentError("map", f"{path} is not a {FORMAT!r} file (format {fmt!r})")
    try:
        return _read_map(reader)
    except (ValueError, TypeError, KeyError) as error:   # (ArgumentError: a bad parameters record)
        raise ArgumentError("map", f"{path} is not a readable reach map ({error})") from None


def _read_map(reader: NpzReader) -> ReachMap:
    """The map of an opened file whose format is checked (ValueError: entries that do not fit)."""
    parameters = ReachParameters.from_json(str(reader.array("parameters", (), "U", MAX_TEXT_BYTES)))
    m = parameters.orientations
    shape, _ = reader.header("voxels")
    if len(shape) != 2 or shape[1] != 3:
        raise ValueError(f"'voxels' has shape {shape}, expected (n, 3)")
    n = shape[0]
    if n > MAX_VOXELS or n * m > MAX_POSES:
        raise ValueError(f"{n} voxels x {m} orientations: more than {MAX_VOXELS:g} voxels or {MAX_POSES:g} poses")
    voxels = reader.array("voxels", (n, 3), "iu", 24 * n)
    reachability = reader.array("reachability", (n,), "f", 8 * n)
    solved_bits = reader.array("solved", (n, -(-m // 8)), "u", n * -(-m // 8))
    grid_shape = tuple(int(k) for k in reader.array("grid_shape", (3,), "iu"))
    numbers = {name: reader.array(name, shape, "f", 8 * math.prod(shape)) for name, shape in (
        ("grid_origin", (3,)), ("reach_centre", (3,)), ("resolution", ()), ("reach_radius", ()),
        ("orientations", (m, 3, 3)))}
    if not all(np.isfinite(value).all() for value in numbers.values()) or not numbers["resolution"] > 0:
        raise ValueError("non-finite numbers, or a resolution <= 0")
    if min(grid_shape) < 1 or math.prod(grid_shape) > MAX_VOXELS * 6 / math.pi + 1:
        raise ValueError(f"grid_shape {grid_shape} is not a grid of at most {MAX_VOXELS:g} mapped voxels")
    if n and ((voxels < 0).any() or (voxels >= np.array(grid_shape)).any()):
        raise ValueError(f"voxel indices outside the grid {grid_shape}")
    if not ((reachability >= 0) & (reachability <= 1)).all():
        raise ValueError("reachability indices outside [0, 1]")
    if solved_bits.dtype != np.uint8:
        raise ValueError(f"'solved' has dtype {solved_bits.dtype}, expected uint8")
    return ReachMap(
        parameters=parameters, robot_sha256=str(reader.array("robot_sha256", (), "U", MAX_TEXT_BYTES)),
        resolution=float(numbers["resolution"]), grid_origin=numbers["grid_origin"].astype(float),
        grid_shape=grid_shape, voxels=voxels.astype(np.int32), reachability=reachability.astype(float),
        manipulability=reader.array("manipulability", (n,), "f", 8 * n).astype(float),
        solved=np.unpackbits(solved_bits, axis=1, count=m).astype(bool),
        orientations=numbers["orientations"].astype(float), reach_centre=numbers["reach_centre"].astype(float),
        reach_radius=float(numbers["reach_radius"]))


def reachability_map(robot: str | RobotModel, tip: str, *, base: str | None = None, workers: int | None = None,
                     ray: str | None = None, chunk_dir: str | None = None,
                     progress: Callable[[int, int], None] | None = None, **options) -> ReachMap:
    """The reachability map of ``tip`` relative to ``base``: a voxel grid over the chain's reach,
    at each voxel centre the orientations of the parameters, a batched IK per chunk of voxels,
    and per voxel the reachability index (the fraction of orientations reached, as in
    Zacharias' capability maps and reuleaux).

    With worker processes (``workers`` > 1, or the default), which start by ``spawn`` and import
    the caller's main module, a script must make this call under ``if __name__ == "__main__":``.

    Args:
        robot: URDF text, or a model (its :meth:`~RobotModel.to_urdf` text is what travels).
        tip, base: the chain's tip and base links (base None: the root link).
        workers: local processes (default: every core this process may use); 1 runs in this process.
        ray: None: local processes; else run the chunks as Ray tasks (see
            :func:`~robokin_ros.reach.engines.run_ray`: ``"auto"``, ``"local"`` or an address).
        chunk_dir: folder for chunk files (resuming): the chunks go into a sub-folder named by
            the robot's and the parameters' hash; chunks found there are read instead of
            solved, when they are to be trusted (:mod:`~robokin_ros.reach.chunk_files`: private
            folders, verified digests; anything else is solved again with a warning); it is
            removed once the map is gathered. None: no files.
        progress: called as ``progress(poses_done, poses_total)``: once before any chunk is
            computed (the poses of the chunks resumed from ``chunk_dir``; 0 when none), then after
            every chunk computed.
        **options: the other fields of :class:`ReachParameters` (resolution, orientations, cone,
            seed, iterations, position_tolerance, rotation_tolerance, collisions,
            manipulability, chunk_poses).

    Returns:
        The :class:`ReachMap` (with ``run`` set); identical for every engine and worker count.

    Raises:
        ArgumentError: an invalid parameter, too many voxels or poses, Ray missing or its
            cluster unreachable.
        UnknownLinkError: unknown tip or base. URDFError: unreadable URDF text.
        ReachInterrupted: Ctrl-C (a ``KeyboardInterrupt`` saying how many chunks were kept).
        ReachWorkerError: a worker process or Ray task lost (saying how many chunks were kept).
    """
    unknown = sorted(set(options) - {f.name for f in dataclasses.fields(ReachParameters)})
    if unknown:
        raise ArgumentError(unknown[0], "is not a reachability map option")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ArgumentError("workers", f"must be a whole number >= 1, got {workers!r}")
    urdf = robot.to_urdf() if isinstance(robot, RobotModel) else robot
    job = ReachJob(urdf, ReachParameters(tip, base, **options))
    here = prepared(job)   # checks names and sizes before any worker starts
    folder = None if chunk_dir is None else ChunkFolder.open(chunk_dir, job.key)
    gathered = _Gathered(here, None)
    todo = _resume(folder, here, gathered)
    reused_poses, kept = gathered.done, here.n_chunks - len(todo)
    if progress is not None:   # the resumed poses in one call, apart from those computed (a rate excludes them)
        progress(reused_poses, gathered.total)
        gathered.progress = progress
    start = time.perf_counter()
    engine = run_ray(job, todo, ray) if ray is not None else run_processes(job, todo, workers or _cores())
    writing = None
    try:
        with contextlib.closing(engine):
            for index, result in engine:
                if folder is not None:
                    writing = index
                    folder.write(index, result)
                    kept, writing = kept + 1, None
                gathered.store(index, result)
    except (KeyboardInterrupt, ReachWorkerError) as error:
        if writing is not None and os.path.lexists(folder.path(writing)):
            kept += 1   # (stopped between the file's rename and the count)
        chunks = KeptChunks(kept, here.n_chunks, folder and folder.directory)
        if isinstance(error, ReachWorkerError):
            raise ReachWorkerError(error.cause, chunks) from None
        raise ReachInterrupted(chunks) from None
    seconds = time.perf_counter() - start
    if folder is not None:
        folder.remove()
    return ReachMap(parameters=job.parameters, robot_sha256=job.robot_sha256, resolution=here.grid.resolution,
                    grid_origin=here.grid.origin, grid_shape=here.grid.shape,
                    voxels=here.grid.voxels.astype(np.int32), reachability=gathered.solved.mean(axis=1),
                    manipulability=gathered.manipulability, solved=gathered.solved, orientations=here.rotations,
                    reach_centre=np.asarray(here.reach_centre, float), reach_radius=here.reach_radius,
                    run=RunStats(len(todo), here.n_chunks - len(todo), gathered.done - reused_poses, seconds))


class _Gathered:
    """The results of a run so far: ``solved (n_voxels, n_orientations)``, ``manipulability
    (n_voxels,)``, ``done`` poses of ``total``."""

    def __init__(self, here: PreparedMap, progress: Callable[[int, int], None] | None):
        self.here, self.progress = here, progress
        self.solved = np.zeros((len(here.grid.voxels), len(here.rotations)), dtype=bool)
        self.manipulability = np.full(len(here.grid.voxels), np.nan)
        self.done, self.total = 0, self.solved.size

    def store(self, index: int, result: ChunkResult) -> None:
        rows = self.here.chunk_voxels(index)
        self.solved[rows], self.manipulability[rows] = result.solved, result.manipulability
        self.done += result.solved.size
        if self.progress is not None:
            self.progress(self.done, self.total)


def _resume(folder: ChunkFolder | None, here: PreparedMap, gathered: _Gathered) -> list[int]:
    """Store the chunks ``folder`` holds and trusts; the indices of the others, to be solved.
    Files that are not to be trusted are named in one ``RuntimeWarning``."""
    todo, untrusted = [], []
    for index in range(here.n_chunks):
        rows = here.chunk_voxels(index)
        found = None
        if folder is not None:
            try:
                found = folder.read(index, rows.stop - rows.start, len(here.rotations))
            except ValueError as error:
                untrusted.append(str(error))
        if found is None:
            todo.append(index)
        else:
            gathered.store(index, found)
    if untrusted:
        more = f" (and {len(untrusted) - 1} more)" if len(untrusted) > 1 else ""
        warnings.warn(f"robokin_ros.reach: {len(untrusted)} chunk file(s) in {folder.directory} not trusted, "
                      f"solved again: {untrusted[0]}{more}", RuntimeWarning, stacklevel=3)
    return todo


def _cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def progress_bar(description: str):
    """A tqdm bar on stderr counting poses (its rate in poses/s) as a ``progress`` callback of
    :func:`reachability_map`; returns ``(callback, close)``. The first call's poses (those resumed
    from chunk files) are where the bar starts, not counted in its rate (issue 41: a resumed run
    showed the resumed chunks as computed in no time)."""
    from tqdm import tqdm

    bar = tqdm(total=0, desc=description, unit="pose", unit_scale=True, file=sys.stderr, disable=None)
    started = []

    def update(done: int, total: int) -> None:
        if not started:
            started.append(done)
            bar.reset(total)
            bar.initial = bar.n = bar.last_print_n = done   # (tqdm's rate counts from initial)
            bar.refresh()
            return
        bar.total = total
        bar.update(done - bar.n)

    return update, bar.close
