"""The robot in a viser scene: one frame node per link, posed by one forward kinematics call.

Each link is a frame node ``/robot/<link>`` holding its ``<visual>`` geometry (its
``<collision>`` geometry when it has no visual) as child meshes at their fixed origins, so an
update only moves the link frames. Primitives are made with trimesh (boxes, cylinders and
capsules along z, as in URDF), meshes are read with trimesh after
:func:`~robokin_ros.collision.meshes.resolve_mesh_uri` (``package://``, ``file://``,
relative); a mesh that cannot be found or read is skipped with a note, and the skeleton (each
link's origin joined to its parent's) shows the link anyway.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from ..collision.meshes import resolve_mesh_uri
from ..kinematics import forward_kinematics
from ..model import RobotModel
from ..spatial import matrix_to_quat_xyzw, pose_from_xyz_rpy

ROBOT_COLOUR = (160, 182, 210)
COLLIDING_COLOUR = (230, 60, 50)
SKELETON_COLOUR = (40, 40, 40)


@dataclasses.dataclass(frozen=True)
class LinkMesh:
    """One piece of a link's geometry, ready for the scene.

    Attributes:
        link: index of its link.
        T_link_mesh: ``(4, 4)`` its pose in the link frame.
        vertices: ``(k, 3)`` [m] in its own frame (scale applied). faces: ``(m, 3)`` vertex indices.
        source: what it is, for notes (``"box"``, or the mesh URI).
    """

    link: int
    T_link_mesh: np.ndarray
    vertices: np.ndarray
    faces: np.ndarray
    source: str


def _primitive(shape: str, size: np.ndarray):
    import trimesh

    if shape == "box":
        return trimesh.creation.box(extents=size[:3])
    if shape == "sphere":
        return trimesh.creation.icosphere(subdivisions=2, radius=float(size[0]))
    if shape == "capsule":
        return trimesh.creation.capsule(height=float(size[1]), radius=float(size[0]), count=[16, 16])
    return trimesh.creation.cylinder(radius=float(size[0]), height=float(size[1]), sections=24)


def _mesh(filename: str, scale: np.ndarray, urdf_dir, package_paths, notes: list):
    import trimesh

    path = resolve_mesh_uri(filename, package_paths, urdf_dir)
    if path is None:
        notes.append(f"mesh {filename!r} not found (package:// needs its package on ROS_PACKAGE_PATH "
                     "or the ament index); its link shows as skeleton")
        return None
    try:
        mesh = trimesh.load(str(path), force="mesh")
    except Exception as error:  # noqa: BLE001 - any unreadable file: a note, the link shows as skeleton
        notes.append(f"mesh {str(path)!r} cannot be read ({type(error).__name__}: {error})")
        return None
    if not len(getattr(mesh, "faces", ())):
        notes.append(f"mesh {str(path)!r} has no triangles")
        return None
    mesh.apply_scale(scale if scale.size == 3 else np.full(3, scale[0]))
    return mesh


def link_meshes(model: RobotModel, urdf_dir=None, package_paths=None) -> tuple[list[LinkMesh], list[str]]:
    """Every link's visual geometry (collision geometry where a link has no visual) as meshes,
    and notes about what could not be shown (each once)."""
    meshes, notes = [], []
    visuals = model.link_visuals or ((),) * model.n_links
    for i, (seen, touched) in enumerate(zip(visuals, model.link_collisions)):
        for g in seen or touched:
            size = np.asarray(g.size, float)
            if g.shape == "mesh":
                mesh = _mesh(g.filename, size, urdf_dir, package_paths, notes)
            else:
                mesh = _primitive(g.shape, size)
            if mesh is not None:
                meshes.append(LinkMesh(i, pose_from_xyz_rpy(g.origin[:3], g.origin[3:]),
                                       np.asarray(mesh.vertices, np.float32), np.asarray(mesh.faces, np.uint32),
                                       g.filename or g.shape))
    return meshes, list(dict.fromkeys(notes))


def wxyz(R: np.ndarray) -> np.ndarray:
    """Quaternions ``(..., 4)`` in viser's (w, x, y, z) order of rotations ``(..., 3, 3)``."""
    return np.roll(matrix_to_quat_xyzw(R), 1, axis=-1)


def node_names(model: RobotModel, root: str) -> list[str]:
    """Scene node name of each link (``/`` in a link name would nest nodes: replaced)."""
    names, seen = [], set()
    for name in model.link_names:
        node = f"{root}/{name.replace('/', '_') or '_'}"
        while node in seen:
            node += "_"
        seen.add(node)
        names.append(node)
    return names


class RobotScene:
    """A model's links, geometry and skeleton in a viser scene.

    Attributes:
        model: the robot. meshes: the geometry shown. notes: what could not be shown.
        frames: one viser frame handle per link (model link order); their poses are the view's
            state, as the browser receives it.
        q: ``(n_q,)`` the configuration shown.
    """

    def __init__(self, server, model: RobotModel, urdf_dir: str | Path | None = None, package_paths=None,
                 root: str = "/robot"):
        self.server, self.model, self.root = server, model, root
        self.meshes, self.notes = link_meshes(model, urdf_dir, package_paths)
        scene = server.scene
        self.frames = [scene.add_frame(name, show_axes=False, axes_length=0.08, axes_radius=0.004)
                       for name in node_names(model, root)]
        self.pieces = []
        for k, piece in enumerate(self.meshes):
            T = piece.T_link_mesh
            handle = scene.add_mesh_simple(f"{self.frames[piece.link].name}/geometry_{k}", piece.vertices,
                                           piece.faces, color=ROBOT_COLOUR, flat_shading=False,
                                           wxyz=wxyz(T[:3, :3]), position=T[:3, 3])
            self.pieces.append(handle)
        self.edges = np.flatnonzero(model.link_parents >= 0)   # links with a parent
        self.skeleton = scene.add_line_segments(f"{root}_skeleton", np.zeros((max(len(self.edges), 1), 2, 3)),
                                                colors=SKELETON_COLOUR, thickness=3.0,
                                                thickness_units="screen")
        self.q = model.home_configuration()
        self.update(self.q)

    def update(self, q) -> np.ndarray:
        """Show configuration ``q (n_q,)``: one FK call, then every link frame moved at once.
        Returns the link poses ``(n_links, 4, 4)``."""
        q = self.model.check_q(q)
        poses = forward_kinematics(self.model, q)
        quats = wxyz(poses[:, :3, :3])
        with self.server.atomic():
            for frame, T, quat in zip(self.frames, poses, quats):
                frame.wxyz = quat
                frame.position = T[:3, 3]
            if len(self.edges):
                self.skeleton.points = np.stack([poses[self.model.link_parents[self.edges], :3, 3],
                                                 poses[self.edges, :3, 3]], axis=1)
        self.q = q
        return poses

    def link_poses(self) -> np.ndarray:
        """``(n_links, 4, 4)`` the link poses the scene holds (read back from viser's handles)."""
        from ..spatial import quat_xyzw_to_matrix

        out = np.tile(np.eye(4), (len(self.frames), 1, 1))
        quats = np.array([frame.wxyz for frame in self.frames], float)
        out[:, :3, :3] = quat_xyzw_to_matrix(np.roll(quats, -1, axis=-1))
        out[:, :3, 3] = [frame.position for frame in self.frames]
        return out

    def show_frames(self, show: bool) -> None:
        """Show or hide every link's axes."""
        with self.server.atomic():
            for frame in self.frames:
                frame.show_axes = show

    def colour_links(self, links) -> None:
        """Colour the geometry of the links at indices ``links`` as colliding, the rest normally."""
        links = set(int(i) for i in links)
        with self.server.atomic():
            for piece, handle in zip(self.meshes, self.pieces):
                colour = COLLIDING_COLOUR if piece.link in links else ROBOT_COLOUR
                if tuple(handle.color) != colour:
                    handle.color = colour

    def link_colours(self) -> dict[int, tuple]:
        """Link index -> colour of its geometry in the scene (links with geometry only)."""
        return {piece.link: tuple(int(c) for c in handle.color) for piece, handle in zip(self.meshes, self.pieces)}

    def remove(self) -> None:
        """Take the robot out of the scene (before showing a new description)."""
        for handle in [*self.pieces, *self.frames, self.skeleton]:
            handle.remove()
