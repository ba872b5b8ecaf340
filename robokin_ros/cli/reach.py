"""``robokin reach``: the reachability map of a tip, on this machine's cores or a Ray cluster.

A voxel grid over the chain's reach; at each voxel centre ORIENTATIONS orientations (uniform on
SO(3), or the tool z axis within a --cone); a batched IK per chunk of voxels; per voxel the
reachability index (fraction of orientations reached). Writes the map (--out, a documented
.npz: robokin_ros.reach.reach_map) and a picture (--picture: slices through the base and a 3D
scatter coloured by index). Interrupted? Run the same command again: the chunks already in
OUT.chunks/ are read, not solved again.
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

from ..errors import ArgumentError
from ..reach import MAX_ORIENTATIONS, ReachMap, ReachParameters, reachability_map
from ..reach.reach_map import progress_bar
from . import common


def add_commands(commands) -> None:
    reach = commands.add_parser("reach", help="reachability map of a tip (voxels x orientations, batched IK)",
                                description=__doc__.split("\n\n")[1])
    common.add_file(reach)
    reach.add_argument("--tip", required=True, help="the link whose poses are mapped")
    reach.add_argument("--base", help="the link the grid is expressed in (default: the root link)")
    reach.add_argument("--resolution", type=float, default=0.05, help="voxel edge [m] (default 0.05)")
    reach.add_argument("--orientations", type=int, default=50,
                       help=f"orientations per voxel, 1..{MAX_ORIENTATIONS} (default 50)")
    reach.add_argument("--cone", type=float, nargs=4, metavar=("X", "Y", "Z", "DEG"),
                       help="tool z axis within DEG degrees of the direction X Y Z (base frame), rotation about it "
                            "free (default: orientations uniform on SO(3))")
    reach.add_argument("--seed", type=int, default=0, help="seed of the IK seeds (default 0)")
    reach.add_argument("--iterations", type=int, default=200, help="IK iterations per pose (default 200)")
    reach.add_argument("--collisions", action="store_true", help="poses reached only in self-collision do not count")
    reach.add_argument("--manipulability", action="store_true", help="also the mean manipulability per voxel")
    reach.add_argument("--chunk-poses", type=int, default=2048, help="poses per chunk of work (default 2048)")
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


def _usage_error(error: ArgumentError) -> int:
    """Print a bad argument's one line (named as its option) and return the usage status, 2."""
    message = str(error)
    if error.argument in _FLAGS:
        message = "--" + error.argument.replace("_", "-") + message[len(error.argument):]
    print(f"robokin reach: {message}", file=sys.stderr)
    return 2


_FLAGS = ("tip", "base", "resolution", "orientations", "cone", "seed", "iterations", "chunk_poses", "workers", "ray")


def run_reach(args) -> int:
    try:
        options = _options(args)
        ReachParameters(args.tip, **options)   # every argument checked before the robot is read
    except ArgumentError as error:
        return _usage_error(error)
    _, text = common.load(args.file)
    update, close = progress_bar(f"reach {args.tip}")
    try:
        reach_map = reachability_map(text, args.tip, workers=args.workers, ray=args.ray,
                                     chunk_dir=f"{args.out}.chunks", progress=update, **options)
    except ArgumentError as error:   # too many voxels for the robot's reach; Ray missing
        return _usage_error(error)
    finally:
        close()
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


def draw_reach_map(reach_map: ReachMap, path: str, title: str = "") -> None:
    """Slices through the base (x-y at z = 0, x-z at y = 0, y-z at x = 0) coloured by the
    reachability index, and a 3D scatter of the reached voxels of the half y <= 0 coloured by it."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dense = reach_map.dense()
    base_index = np.round(-reach_map.grid_origin / reach_map.resolution).astype(int)   # the base's voxel
    axes_values = [reach_map.grid_origin[k] + reach_map.resolution * np.arange(reach_map.grid_shape[k])
                   for k in range(3)]
    fig = plt.figure(figsize=(16, 4.4), layout="constrained")
    image = None
    for n, (a, b, cut, label) in enumerate(((0, 1, 2, "x-y at z = 0"), (0, 2, 1, "x-z at y = 0"),
                                            (1, 2, 0, "y-z at x = 0"))):
        ax = fig.add_subplot(1, 4, n + 1)
        plane = np.take(dense, int(np.clip(base_index[cut], 0, reach_map.grid_shape[cut] - 1)), axis=cut)
        half = reach_map.resolution / 2
        extent = (axes_values[a][0] - half, axes_values[a][-1] + half,
                  axes_values[b][0] - half, axes_values[b][-1] + half)
        image = ax.imshow(plane.T, origin="lower", extent=extent, vmin=0, vmax=1, cmap="viridis")
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("xyz"[a] + " [m]")
        ax.set_ylabel("xyz"[b] + " [m]")
    ax = fig.add_subplot(1, 4, 4, projection="3d")
    # The reached voxels of the half y <= 0 (a cut through the base shows the inside).
    shown = (reach_map.reachability > 0) & (reach_map.centres[:, 1] <= 1e-9)
    ax.scatter(*reach_map.centres[shown].T, c=reach_map.reachability[shown], cmap="viridis", vmin=0, vmax=1, s=3,
               alpha=0.5)
    ax.view_init(20, 60)   # looking at the cut
    ax.set_title("reached voxels, y <= 0", fontsize=9)
    fig.colorbar(image, ax=fig.axes[:3], shrink=0.8, label="reachability index")
    p = reach_map.parameters
    fig.suptitle(f"{title} {p.tip}: {p.resolution:g} m voxels x {p.orientations} orientations", fontsize=10)
    fig.savefig(path, dpi=70)
    plt.close(fig)
