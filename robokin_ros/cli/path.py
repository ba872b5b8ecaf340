"""``robokin path``: a Cartesian path of a tip from a configuration through straight lines
(:func:`robokin_ros.cartesian.cartesian_path`), its fraction printed and, with ``-o``, a picture
of the joint positions and velocities over time (matplotlib, Agg)."""

from __future__ import annotations

import numpy as np

from ..cartesian import CartesianPathResult, PathTiming, cartesian_path
from ..errors import ArgumentError
from ..kinematics import frame_transform
from ..spatial import quat_xyzw_to_matrix
from . import common
from .arguments import finite, real


def add_commands(commands) -> None:
    path = commands.add_parser(
        "path", help="a straight-line Cartesian path of a tip (fraction, plot)",
        description="Follow straight lines of --tip (position lerped, orientation slerped) from --from-q through "
                    "each --to pose (in --base, default root) at most --step apart, as /compute_cartesian_path "
                    "does; prints the fraction followed and why it stopped; -o draws the joint positions and "
                    "velocities over time.")
    common.add_file(path)
    common.add_tip(path)
    path.add_argument("--base", help="link the --to poses are in (default: root)")
    path.add_argument("--from-q", nargs="+", metavar="NAME=VALUE", default=(),
                      help="start joint values (default: home)")
    path.add_argument("--to", nargs="+", type=finite, action="append", required=True,
                      metavar=("X Y Z", "QX QY QZ QW"),
                      help="a waypoint: position [m] and optionally a quaternion (default: the start "
                           "orientation); repeat for a polyline")
    path.add_argument("--step", type=real(0.0, 10.0, low_open=True), default=0.005,
                      help="[m] largest step between points, in (0, 10] (default 0.005)")
    path.add_argument("--velocity-scaling", type=real(0.0, 1.0, low_open=True), default=1.0,
                      help="fraction of the velocity limits, in (0, 1] (default 1)")
    path.add_argument("--acceleration-scaling", type=real(0.0, 1.0, low_open=True), default=1.0,
                      help="fraction of the acceleration limits, in (0, 1] (default 1)")
    path.add_argument("--avoid-collisions", action="store_true", help="every point free of self-collision")
    path.add_argument("-o", "--output", metavar="PNG", help="draw joint positions and velocities over time")
    path.set_defaults(run=run_path)


def waypoints(args, T_start: np.ndarray) -> np.ndarray:
    """``(k, 4, 4)`` the --to poses (a position alone keeps the start orientation)."""
    out = []
    for values in args.to:
        if len(values) not in (3, 7):
            raise ArgumentError("--to", f"takes X Y Z [QX QY QZ QW] (3 or 7 values), got {len(values)}")
        T = np.eye(4)
        T[:3, 3] = values[:3]
        if len(values) == 7:
            quat = np.asarray(values[3:])
            if not np.abs(quat).max() > 0:
                raise ArgumentError("--to", "the quaternion is zero")
            T[:3, :3] = quat_xyzw_to_matrix(quat / np.abs(quat).max())
        else:
            T[:3, :3] = T_start[:3, :3]
        out.append(T)
    return np.array(out)


def run_path(args) -> int:
    model, _ = common.load(args.file)
    tip = common.tip_of(model, args.tip)
    base = args.base or model.root_link
    values = common.parse_values(model, args.from_q, "--from-q")
    q0 = model.q_from_dict(values, strict=True)
    for message in common.outside_limits(model, values):
        common.warn(args.command, message)
    targets = waypoints(args, frame_transform(model, q0, base, tip))
    result = cartesian_path(model, targets, tip, q0, base=base, max_step=args.step,
                            avoid_collisions=args.avoid_collisions,
                            timing=PathTiming(args.velocity_scaling, args.acceleration_scaling))
    print(f"fraction {result.fraction:.6g} ({result.status}): {len(result.q)} points, "
          f"{result.times[-1]:.4g} s")
    if result.message:
        print(result.message)
    if args.output:
        plot(model, tip, result, args.output)
        print(args.output)
    return 0


def plot(model, tip: str, result: CartesianPathResult, path: str) -> None:
    """Joint positions (top) and velocities (bottom) of the moving joints over time, as a PNG."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    moving = [i for i in range(model.n_q) if np.ptp(result.q[:, i]) > 0.0] or list(range(model.n_q))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for i in moving:
        top.plot(result.times, result.q[:, i], label=model.q_names[i])
        bottom.plot(result.times, result.velocities[:, i])
    top.set_ylabel("position [rad or m]")
    bottom.set_ylabel("velocity [rad/s or m/s]")
    bottom.set_xlabel("time [s]")
    top.legend(fontsize=7, ncol=2)
    fig.suptitle(f"{model.name}: {tip}, fraction {result.fraction:.4g} ({result.status})", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
