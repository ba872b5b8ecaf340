"""``robokin reach``: the reachability map of a tip, on this machine's cores or a Ray cluster.

A voxel grid over the chain's reach; at each voxel centre ORIENTATIONS orientations (uniform on
SO(3), or the tool z axis within a --cone); a batched IK per chunk of voxels; per voxel the
reachability index (fraction of orientations reached). Writes the map (--out, a documented
.npz: robokin_ros.reach.reach_map) and a picture (--picture: slices through the reach's centre
and a 3D scatter coloured by index). Interrupted (Ctrl-C, a lost worker)? It says how many
chunks it kept and the command that resumes: the same command, which reads the chunks kept in
OUT.chunks/ instead of solving them again.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import shlex
import sys
import warnings

import numpy as np

from ..errors import ArgumentError
from ..reach import MAX_ORIENTATIONS, ReachMap, ReachParameters, reachability_map
from ..reach.engines import check_ray_address
from ..reach.failures import KeptChunks, ReachInterrupted, ReachWorkerError
from ..reach.files import replace_file
from ..reach.reach_map import progress_bar
from . import common

#: Defaults of the map's options (what a resume command may leave out).
DEFAULTS = dict(resolution=0.05, orientations=50, seed=0, iterations=200, chunk_poses=2048)


def add_commands(commands) -> None:
    reach = commands.add_parser("reach", help="reachability map of a tip (voxels x orientations, batched IK)",
                                description=__doc__.split("\n\n")[1])
    common.add_file(reach)
    reach.add_argument("--tip", required=True, help="the link whose poses are mapped")
    reach.add_argument("--base", help="the link the grid is expressed in (default: the root link)")
    reach.add_argument("--resolution", type=float, default=DEFAULTS["resolution"], help="voxel edge [m] (default 0.05)")
    reach.add_argument("--orientations", type=int, default=DEFAULTS["orientations"],
                       help=f"orientations per voxel, 1..{MAX_ORIENTATIONS} (default 50)")
    reach.add_argument("--cone", type=float, nargs=4, metavar=("X", "Y", "Z", "DEG"),
                       help="tool z axis within DEG degrees of the direction X Y Z (base frame), rotation about it "
                            "free (default: orientations uniform on SO(3))")
    reach.add_argument("--seed", type=int, default=DEFAULTS["seed"], help="seed of the IK seeds (default 0)")
    reach.add_argument("--iterations", type=int, default=DEFAULTS["iterations"],
                       help="IK iterations per pose (default 200)")
    reach.add_argument("--collisions", action="store_true", help="poses reached only in self-collision do not count")
    reach.add_argument("--manipulability", action="store_true", help="also the mean manipulability per voxel")
    reach.add_argument("--chunk-poses", type=int, default=DEFAULTS["chunk_poses"],
                       help="poses per chunk of work (default 2048)")
    engine = reach.add_mutually_exclusive_group()
    engine.add_argument("--workers", type=int, help="local processes (default: every core)")
    engine.add_argument("--ray", metavar="auto|local|ADDRESS",
                        help="run the chunks as Ray tasks: 'auto' (this machine's cluster), 'local' (start one "
                             "here) or a cluster address (pip install -r tools/requirements-ray.txt)")
    reach.add_argument("--out", default="reach.npz", help="the map (default reach.npz)")
    reach.add_argument("--picture", help="also draw the map into this PNG (or SVG/PDF) file")
    reach.set_defaults(run=run_reach)


def _options(args) -> dict:
    """Keyword options of :func:`reachability_map` from the command line (ArgumentError if bad)."""
    if args.workers is not None and args.workers < 1:
        raise ArgumentError("workers", f"must be >= 1, got {args.workers}")
    cone = None
    if args.cone is not None:
        if not 0 <= args.cone[3] <= 180:
            raise ArgumentError("cone", f"DEG must be in [0, 180], got {args.cone[3]:g}")
        cone = (*args.cone[:3], math.radians(args.cone[3]))
    return dict(base=args.base, resolution=args.resolution, orientations=args.orientations, cone=cone,
                seed=args.seed, iterations=args.iterations, collisions=args.collisions,
                manipulability=args.manipulability, chunk_poses=args.chunk_poses)


def _check_outputs(args) -> None:
    """--out and --picture name files in folders that exist (checked before hours of work)."""
    for name in ("out", "picture"):
        path = getattr(args, name)
        if path is None:
            continue
        if os.path.isdir(path):
            raise ArgumentError(name, f"{path!r} is a directory")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise ArgumentError(name, f"the folder {folder!r} does not exist")


def _usage_error(error: ArgumentError) -> int:
    """Print a bad argument's one line (named as its option) and return the usage status, 2."""
    message = str(error)
    if error.argument in _FLAGS:
        message = "--" + error.argument.replace("_", "-") + message[len(error.argument):]
    print(f"robokin reach: {message}", file=sys.stderr)
    return 2


_FLAGS = ("tip", "base", "resolution", "orientations", "cone", "seed", "iterations", "chunk_poses", "workers", "ray",
          "out", "picture")


def resume_command(args) -> str:
    """The command that resumes the run of ``args`` (the same map parameters and --out, so
    the same chunk folder), quoted for a POSIX shell."""
    words = ["robokin", "reach", args.file, "--tip", args.tip]
    if args.base is not None:
        words += ["--base", args.base]
    for name, default in DEFAULTS.items():
        if getattr(args, name) != default:
            words += ["--" + name.replace("_", "-"), repr(getattr(args, name))]
    if args.cone is not None:
        words += ["--cone", *(repr(c) for c in args.cone)]
    words += [flag for flag, on in (("--collisions", args.collisions), ("--manipulability", args.manipulability)) if on]
    for flag, value in (("--workers", args.workers), ("--ray", args.ray), ("--out", args.out),
                        ("--picture", args.picture)):
        if value is not None:
            words += [flag, str(value)]
    return shlex.join(words)


def _stopped(what: str, chunks: KeptChunks | None, args) -> str:
    """One line: what stopped the run, what it kept, and how to resume."""
    if chunks is None:
        return f"robokin reach: {what} before the chunks were solved; rerun: {resume_command(args)}"
    if chunks.directory is None:
        return f"robokin reach: {what}; {chunks}: nothing to resume from"
    return f"robokin reach: {what}; {chunks}; resume with: {resume_command(args)}"


@contextlib.contextmanager
def _warnings_printed():
    """Warnings of the run printed as they come, one line each (``robokin reach: warning: ...``)."""
    with warnings.catch_warnings():
        warnings.showwarning = lambda message, *_: print(f"robokin reach: warning: {message}", file=sys.stderr)
        yield


def run_reach(args) -> int:
    try:
        options = _options(args)
        ReachParameters(args.tip, **options)   # every argument checked before the robot is read
        check_ray_address(args.ray)
        _check_outputs(args)
    except ArgumentError as error:
        return _usage_error(error)
    _, text = common.load(args.file)
    try:
        reach_map = _compute(args, text, options)
    except ArgumentError as error:   # too many voxels or poses for the robot's reach; Ray missing
        return _usage_error(error)
    except ReachInterrupted as stop:
        print(_stopped("interrupted", stop.chunks, args), file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        print(_stopped("interrupted", None, args), file=sys.stderr)
        return 130
    except ReachWorkerError as error:
        print(_stopped(error.cause, error.chunks, args), file=sys.stderr)
        return 1
    reach_map.save(args.out)
    run = reach_map.run
    print(f"{args.out}: {len(reach_map.voxels)} voxels x {len(reach_map.orientations)} orientations, "
          f"mean index {reach_map.reachability.mean():.3f}, {(reach_map.reachability > 0).sum()} voxels reached; "
          f"{run.poses_computed} poses solved in {run.seconds:.1f} s ({run.poses_per_second:.0f} poses/s)"
          + (f", {run.chunks_reused} chunks resumed" if run.chunks_reused else ""))
    try:
        os.rmdir(f"{args.out}.chunks")
    except OSError:
        pass   # other maps' chunks still there, or none made
    if args.picture:
        draw_reach_map(reach_map, args.picture, os.path.basename(args.file))
        print(args.picture)
    return 0


def _compute(args, text: str, options: dict) -> ReachMap:
    """The map, with a progress bar (closed before any message) and the run's warnings printed."""
    update, close = progress_bar(f"reach {args.tip}")
    try:
        with _warnings_printed():
            return reachability_map(text, args.tip, workers=args.workers, ray=args.ray,
                                    chunk_dir=f"{args.out}.chunks", progress=update, **options)
    finally:
        close()


def draw_reach_map(reach_map: ReachMap, path: str, title: str = "") -> None:
    """Slices through the reach's centre (:meth:`ReachMap.slice_voxel`: the chain's pivot, the
    shoulder at half lift on a mobile manipulator) coloured by the reachability index, and a 3D
    scatter of the reached voxels of the half y <= centre coloured by it; written atomically
    (never through a link at ``path``)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dense = reach_map.dense()
    cut_voxel = reach_map.slice_voxel()
    cut_at = reach_map.grid_origin + reach_map.resolution * cut_voxel
    axes_values = [reach_map.grid_origin[k] + reach_map.resolution * np.arange(reach_map.grid_shape[k])
                   for k in range(3)]
    fig = plt.figure(figsize=(16, 4.4), layout="constrained")
    image = None
    for n, (a, b, cut) in enumerate(((0, 1, 2), (0, 2, 1), (1, 2, 0))):
        ax = fig.add_subplot(1, 4, n + 1)
        plane = np.take(dense, int(cut_voxel[cut]), axis=cut)
        half = reach_map.resolution / 2
        extent = (axes_values[a][0] - half, axes_values[a][-1] + half,
                  axes_values[b][0] - half, axes_values[b][-1] + half)
        image = ax.imshow(plane.T, origin="lower", extent=extent, vmin=0, vmax=1, cmap="viridis")
        ax.set_title(f"{'xyz'[a]}-{'xyz'[b]} at {'xyz'[cut]} = {cut_at[cut]:.2f} m", fontsize=9)
        ax.set_xlabel("xyz"[a] + " [m]")
        ax.set_ylabel("xyz"[b] + " [m]")
    ax = fig.add_subplot(1, 4, 4, projection="3d")
    # The reached voxels of the half y <= the cut (a cut through the reach's centre shows the inside).
    shown = (reach_map.reachability > 0) & (reach_map.centres[:, 1] <= cut_at[1] + 1e-9)
    ax.scatter(*reach_map.centres[shown].T, c=reach_map.reachability[shown], cmap="viridis", vmin=0, vmax=1, s=3,
               alpha=0.5)
    ax.view_init(20, 60)   # looking at the cut
    ax.set_title(f"reached voxels, y <= {cut_at[1]:.2f} m", fontsize=9)
    fig.colorbar(image, ax=fig.axes[:3], shrink=0.8, label="reachability index")
    p = reach_map.parameters
    fig.suptitle(f"{title} {p.tip}: {p.resolution:g} m voxels x {p.orientations} orientations", fontsize=10)
    buffer = io.BytesIO()
    fig.savefig(buffer, dpi=70, format=os.path.splitext(path)[1][1:].lower() or "png")
    plt.close(fig)
    replace_file(path, buffer.getvalue())
