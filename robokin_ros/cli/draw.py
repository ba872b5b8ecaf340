"""``robokin show`` and ``robokin workspace``: pictures drawn with matplotlib (Agg, no display).

``show`` draws the robot at a configuration from three views: its visual geometry (boxes,
cylinders, spheres, and meshes read with trimesh where the file resolves: ``package://`` through
ROS_PACKAGE_PATH or the ament index, ``file://``, or relative to the URDF; collision geometry for
links without a visual) placed by forward kinematics, the skeleton (each link's origin joined to
its parent's) and the frames of the leaf links. Meshes that cannot be found or read are told in
one warning line (their count and first names, and what would resolve them: ``--package-path``,
``--mesh-dir``); their links show as skeleton.
"""

from __future__ import annotations

import sys

import numpy as np

from ..kinematics import forward_kinematics
from ..model import RobotModel
from ..spatial import pose_from_xyz_rpy
from . import common, meshes
from .arguments import MAX_WORKSPACE_SAMPLES, SIZE_RANGE, count, real

#: The oblique view: title, elevation, azimuth [deg] (a 3D axes).
ISO = ("iso", 25, -60)
#: The flat views: title and the two world axes they show (orthographic projections drawn as 2D
#: plots at one scale: the robot fills them, and no axis points at the viewer with its tick
#: labels collapsed onto one spot, as in 3D axes looking along one).
PLANES = (("front (x-z)", 0, 2), ("top (x-y)", 0, 1))
#: Resolution of the picture [dots per inch]; ``--size`` is inches per view.
DPI = 110
#: How much the oblique view's box is enlarged within its axes (matplotlib leaves a wide margin).
ZOOM = 1.0
FACE, EDGE = "#9ec3e6", "#4a6f94"

def add_commands(commands) -> None:
    show = commands.add_parser("show", help="a picture of the robot at a configuration",
                               description=__doc__.split("\n\n")[1])
    common.add_file(show)
    common.add_configuration(show)
    meshes.add_options(show)
    show.add_argument("-o", "--output", default="robot.png", help="PNG (or SVG/PDF) file (default robot.png)")
    show.add_argument("--size", type=real(*SIZE_RANGE), default=5.0,
                      help=f"inches per view in [{SIZE_RANGE[0]:g}, {SIZE_RANGE[1]:g}] (default 5)")
    show.set_defaults(run=run_show)
    ws = commands.add_parser("workspace", help="reachable positions of a frame (point cloud)",
                             description="Positions of --tip over -n random configurations, from three views.")
    common.add_file(ws)
    common.add_tip(ws)
    ws.add_argument("-n", type=count(1, MAX_WORKSPACE_SAMPLES), default=100_000,
                    help=f"configurations in [1, {MAX_WORKSPACE_SAMPLES:g}] (default 100000)")
    ws.add_argument("-o", "--output", default="workspace.png")
    ws.add_argument("--seed", type=count(0, 2**63 - 1), default=0, help="random seed >= 0 (default 0)")
    ws.set_defaults(run=run_workspace)


# ---------------------------------------------------------------------------- geometry
def shapes(model: RobotModel) -> list[tuple[int, str, np.ndarray, dict]]:
    """(link index, kind, T_link_shape (4, 4), sizes) of each visual shape of the model (its
    collision geometry where a link has no visual); ``sizes`` holds ``size`` (box), ``radius``
    and ``length`` (cylinder, capsule), ``radius`` (sphere), or ``filename`` and ``scale`` (mesh).
    The URDF reader already dropped malformed ones (with a load warning)."""
    out = []
    visuals = model.link_visuals or ((),) * model.n_links
    for i, (seen, touched) in enumerate(zip(visuals, model.link_collisions)):
        for g in seen or touched:
            size = np.asarray(g.size, float)
            if g.shape == "box":
                sizes = {"size": size}
            elif g.shape == "sphere":
                sizes = {"radius": size[:1]}
            elif g.shape == "mesh":
                sizes = {"filename": g.filename, "scale": size}
            else:
                sizes = {"radius": size[:1], "length": size[1:2]}
            out.append((i, g.shape, pose_from_xyz_rpy(g.origin[:3], g.origin[3:]), sizes))
    return out


def _surface(kind: str, sizes: dict) -> list[np.ndarray]:
    """Polygons ``(k, 3)`` of a primitive in its own frame."""
    if kind == "box":
        x, y, z = 0.5 * sizes.get("size", np.full(3, 0.05))
        c = np.array([[sx * x, sy * y, sz * z] for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)])
        faces = [(0, 1, 3, 2), (4, 5, 7, 6), (0, 1, 5, 4), (2, 3, 7, 6), (0, 2, 6, 4), (1, 3, 7, 5)]
        return [c[list(f)] for f in faces]
    r = float(sizes.get("radius", [0.05])[0])
    if kind == "sphere":
        u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 13), np.linspace(0, np.pi, 7))
        p = r * np.stack([np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v)], -1)
        return [np.array([p[i, j], p[i, j + 1], p[i + 1, j + 1], p[i + 1, j]]) for i in range(6) for j in range(12)]
    half = 0.5 * float(sizes.get("length", [0.1])[0])
    t = np.linspace(0, 2 * np.pi, 17)
    ring = np.stack([r * np.cos(t), r * np.sin(t)], -1)
    sides = [np.array([[*ring[k], -half], [*ring[k + 1], -half], [*ring[k + 1], half], [*ring[k], half]])
             for k in range(16)]
    caps = [np.column_stack([ring, np.full(17, z)]) for z in (-half, half)]
    return sides + caps


# ---------------------------------------------------------------------------- pictures
def _box(ax, points: np.ndarray) -> None:
    """The oblique view's limits: the box around ``points (k, 3)`` at one scale on every axis
    (each side at least a third of the longest: a flat robot keeps some depth)."""
    lo, hi = points.min(axis=0), points.max(axis=0)
    half = 0.525 * np.maximum(hi - lo, max(float(np.max(hi - lo)), 1e-3) / 3)
    centre = 0.5 * (lo + hi)
    ax.set_xlim(centre[0] - half[0], centre[0] + half[0])
    ax.set_ylim(centre[1] - half[1], centre[1] + half[1])
    ax.set_zlim(centre[2] - half[2], centre[2] + half[2])
    ax.set_box_aspect(tuple(half), zoom=ZOOM)
    from matplotlib.ticker import MaxNLocator
    for axis, side in zip((ax.xaxis, ax.yaxis, ax.zaxis), half):   # (few ticks on a short side: none overlap)
        axis.set_major_locator(MaxNLocator(max(2, min(6, round(6 * side / half.max())))))


def _plane(ax, drawing: dict, a: int, b: int) -> None:
    """The flat view of world axes ``a`` (right) and ``b`` (up) of ``drawing``: its polygons,
    skeleton and frames projected, at one scale, limits 4 % around the robot."""
    from matplotlib.collections import LineCollection, PolyCollection

    if drawing["polygons"]:
        ax.add_collection(PolyCollection([p[:, [a, b]] for p in drawing["polygons"]], facecolor=FACE, edgecolor=EDGE,
                                         linewidths=0.2, alpha=0.4))
    if len(drawing["skeleton"]):
        ax.add_collection(LineCollection(drawing["skeleton"][:, :, [a, b]], colors="0.2", linewidths=1.5))
    ax.scatter(drawing["origins"][:, a], drawing["origins"][:, b], s=6, color="k", zorder=3)
    for segment, colour in drawing["frames"]:
        ax.plot(segment[:, a], segment[:, b], color=colour, lw=1.2)
    lo, hi = drawing["points"].min(axis=0)[[a, b]], drawing["points"].max(axis=0)[[a, b]]
    margin = 0.04 * max(float(np.max(hi - lo)), 1e-3)
    ax.set_xlim(lo[0] - margin, hi[0] + margin)
    ax.set_ylim(lo[1] - margin, hi[1] + margin)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel(f"{'xyz'[a]} [m]", fontsize=8)
    ax.set_ylabel(f"{'xyz'[b]} [m]", fontsize=8)
    ax.grid(True, lw=0.3, alpha=0.5)


def _iso(ax, drawing: dict) -> None:
    """The oblique 3D view of ``drawing``."""
    from mpl_toolkits.mplot3d.art3d import Line3DCollection, Poly3DCollection

    if drawing["polygons"]:
        ax.add_collection3d(Poly3DCollection(drawing["polygons"], facecolor=FACE, edgecolor=EDGE, linewidths=0.2,
                                             alpha=0.55))
    if len(drawing["skeleton"]):   # (a robot of one link has none)
        ax.add_collection3d(Line3DCollection(drawing["skeleton"], colors="0.2", linewidths=1.5))
    ax.scatter(*drawing["origins"].T, s=6, color="k")
    for segment, colour in drawing["frames"]:
        ax.plot(*segment.T, color=colour, lw=1.2)
    _box(ax, drawing["points"])
    ax.view_init(ISO[1], ISO[2])


def draw_robot(model: RobotModel, q: np.ndarray, path: str, size: float = 5.0,
               files: meshes.MeshFiles | None = None) -> dict[str, int]:
    """Draw the robot at ``q (n_q,)`` into ``path``, its mesh files found by ``files`` (default:
    relative to the working directory), which records those it could not use; returns how many
    primitives and meshes were drawn."""
    import matplotlib.pyplot as plt

    fig, drawn = robot_figure(model, q, size, files)
    try:
        fig.savefig(path, dpi=DPI)
    finally:
        plt.close(fig)
    return drawn


def robot_figure(model: RobotModel, q: np.ndarray, size: float = 5.0, files: meshes.MeshFiles | None = None):
    """The figure of :func:`draw_robot` (``size`` inches per view) and how many primitives and
    meshes it shows; the caller closes it."""
    files = files if files is not None else meshes.MeshFiles()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    poses = forward_kinematics(model, q)
    origins = poses[:, :3, 3]
    prims = shapes(model)
    polygons = []
    drawn = {"primitives": 0, "meshes": 0}
    for i, kind, T, sizes in prims:
        W = poses[i] @ T   # the shape's pose in the world
        if kind == "mesh":
            scale = sizes.get("scale", np.ones(3))
            faces = meshes.triangles(sizes["filename"], scale if scale.size == 3 else np.full(3, scale[0]), files)
            if faces is None:
                continue
            polygons += list(faces @ W[:3, :3].T + W[:3, 3])
            drawn["meshes"] += 1
        else:
            polygons += [np.asarray(poly) @ W[:3, :3].T + W[:3, 3] for poly in _surface(kind, sizes)]
            drawn["primitives"] += 1
    points = np.vstack([origins] + polygons) if polygons else origins
    extent = float(np.max(points.max(axis=0) - points.min(axis=0))) or 0.1
    frames = [(np.stack([T[:3, 3], T[:3, 3] + 0.08 * extent * T[:3, axis]]), colour)
              for T in (poses[model.link_index(leaf)] for leaf in model.leaf_links + (model.root_link,))
              for axis, colour in zip(range(3), ("r", "g", "b"))]
    parents = [(model.link_parents[i], i) for i in range(1, model.n_links)]
    skeleton = np.array([[origins[p], origins[i]] for p, i in parents]).reshape(-1, 2, 3)
    drawing = {"polygons": polygons, "skeleton": skeleton, "origins": origins, "frames": frames, "points": points}
    fig = plt.figure(figsize=(size * (1 + len(PLANES)), size + 0.4))
    ax = fig.add_subplot(1, 1 + len(PLANES), 1, projection="3d")
    _iso(ax, drawing)
    ax.set_title(ISO[0], fontsize=10)
    ax.tick_params(labelsize=7)
    for k, (title, a, b) in enumerate(PLANES):
        ax = fig.add_subplot(1, 1 + len(PLANES), k + 2)
        _plane(ax, drawing, a, b)
        ax.set_title(title, fontsize=10)
        ax.tick_params(labelsize=7)
    fig.suptitle(f"{model.name} ({model.n_q} DOF; {drawn['primitives']} primitives, {drawn['meshes']} meshes)",
                 fontsize=11)
    fig.tight_layout()
    return fig, drawn


def run_show(args) -> int:
    model, _ = common.load(args.file)
    q = common.configuration(model, args)
    files = meshes.from_args(args)
    drawn = draw_robot(model, q, args.output, args.size, files)
    for line in files.summary():
        common.warn(args.command, line)
    print(f"{args.output} ({drawn['primitives']} primitives, {drawn['meshes']} meshes)")
    return 0


def workspace_points(model: RobotModel, tip: str, n: int, seed: int = 0, chunk: int = 10_000) -> np.ndarray:
    """``(n, 3)`` positions of ``tip`` at ``n`` random configurations (a progress bar on a terminal)."""
    from tqdm import tqdm

    k = model.link_index(tip)
    rng = np.random.default_rng(seed)
    out = np.empty((n, 3))
    with tqdm(total=n, desc=f"workspace of {tip}", unit="config", disable=not sys.stderr.isatty() or n < chunk,
              file=sys.stderr) as bar:
        for start in range(0, n, chunk):
            stop = min(n, start + chunk)
            out[start:stop] = forward_kinematics(model, model.random_configuration(stop - start, rng=rng))[:, k, :3, 3]
            bar.update(stop - start)
    return out


def run_workspace(args) -> int:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    model, _ = common.load(args.file)
    tip = common.tip_of(model, args.tip)
    points = workspace_points(model, tip, args.n, args.seed)
    fig, axes = plt.subplots(1, 3, figsize=(12, 4.2))
    for ax, (a, b), label in zip(axes, ((0, 1), (0, 2), (1, 2)), ("top (x-y)", "front (x-z)", "side (y-z)")):
        ax.scatter(points[:, a], points[:, b], s=0.2, alpha=0.15, color="tab:blue", rasterized=True)
        ax.set_aspect("equal")
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("xyz"[a] + " [m]")
        ax.set_ylabel("xyz"[b] + " [m]")
    fig.suptitle(f"{model.name}: {tip} at {args.n} random configurations", fontsize=10)
    fig.tight_layout()
    fig.savefig(args.output, dpi=60)
    plt.close(fig)
    print(args.output)
    return 0
