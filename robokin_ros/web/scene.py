"""The robot in a viser scene: one frame node per link, posed by one forward kinematics call.

Each link is a frame node ``/robot/<link>`` holding its ``<visual>`` geometry (its
``<collision>`` geometry when it has no visual) as child meshes at their fixed origins, so an
update only moves the link frames. Primitives are made with trimesh (boxes, cylinders and
capsules along z, as in URDF), meshes are read with trimesh after
:class:`~robokin_ros.collision.mesh_files.MeshFiles` (``package://``, ``file://``, relative, then
a ``mesh_dir``); a mesh that cannot be found or read is skipped, told in one summary line with the
others of its kind, and the skeleton (each link's origin joined to its parent's) shows the link
anyway.
"""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import numpy as np

from ..collision.mesh_files import MeshFiles
from ..collision.meshes import mesh_file_problem
from ..errors import NonFiniteError
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


def _sphere(radius: float, stretch: float = 0.0, rings: int = 12, sections: int = 24):
    """UV sphere ``(vertices (k, 3), faces (m, 3))``; ``stretch`` [m] pulls the hemispheres apart
    along z (a capsule of that cylinder length)."""
    theta = np.linspace(0.0, np.pi, rings + 1)[:, None]          # from +z to -z; rings even: an equator
    phi = np.linspace(0.0, 2 * np.pi, sections, endpoint=False)[None, :]
    v = radius * np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi),
                           np.cos(theta) * np.ones_like(phi)], -1).reshape(-1, 3)
    v[:, 2] += 0.5 * stretch * np.sign(np.round(v[:, 2], 12))
    return v, _grid_faces(rings, sections)


def _grid_faces(rows: int, sections: int) -> np.ndarray:
    """Triangles joining ``rows + 1`` rings of ``sections`` vertices (ring after ring)."""
    r, c = np.meshgrid(np.arange(rows), np.arange(sections), indexing="ij")
    a, b = r * sections + c, r * sections + (c + 1) % sections
    return np.concatenate([np.stack([a, a + sections, b], -1), np.stack([b, a + sections, b + sections], -1)]
                          ).reshape(-1, 3)


def _cylinder(radius: float, length: float, sections: int = 24):
    """Closed cylinder along z ``(vertices, faces)``."""
    phi = np.linspace(0.0, 2 * np.pi, sections, endpoint=False)
    ring = np.stack([radius * np.cos(phi), radius * np.sin(phi)], -1)
    v = np.concatenate([np.column_stack([ring, np.full(sections, z)]) for z in (0.5 * length, -0.5 * length)]
                       + [[[0.0, 0.0, 0.5 * length], [0.0, 0.0, -0.5 * length]]])
    c = np.arange(sections)
    caps = [np.stack([np.full(sections, 2 * sections), c, (c + 1) % sections], -1),
            np.stack([np.full(sections, 2 * sections + 1), sections + (c + 1) % sections, sections + c], -1)]
    return v, np.concatenate([_grid_faces(1, sections)] + caps)


def _box(size: np.ndarray):
    """Box centred at the origin ``(vertices, faces)``."""
    v = 0.5 * size[:3] * np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    quads = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    return v, np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))])


def _primitive(shape: str, size: np.ndarray):
    """``(vertices, faces)`` of a URDF primitive (cylinders and capsules along z, as in URDF)."""
    if shape == "box":
        return _box(size)
    if shape == "sphere":
        return _sphere(float(size[0]))
    if shape == "capsule":
        return _sphere(float(size[0]), stretch=float(size[1]))
    return _cylinder(float(size[0]), float(size[1]))


def _mesh(filename: str, scale: np.ndarray, files: MeshFiles):
    import trimesh

    path = files.find(filename)
    if path is None:   # (told once for all, in the summary)
        return None
    problem = mesh_file_problem(str(path))   # the size cap of collision checking: never read whole
    if problem is not None:
        files.note(f"mesh {str(path)!r} {problem}: not shown")
        return None
    try:
        mesh = trimesh.load(str(path), force="mesh")
    except Exception as error:  # noqa: BLE001 - any unreadable file: a note, the link shows as skeleton
        files.note(f"mesh {str(path)!r} cannot be read ({type(error).__name__}: {error})")
        return None
    if not len(getattr(mesh, "faces", ())):
        files.note(f"mesh {str(path)!r} has no triangles")
        return None
    mesh.apply_scale(scale if scale.size == 3 else np.full(3, scale[0]))
    return mesh


#: How the summary of the meshes not shown ends (:meth:`MeshFiles.summary`).
NOT_SHOWN = "their links show as skeletons (and their collision primitives, if any)"


def link_meshes(model: RobotModel, urdf_dir=None, package_paths=None, files: bool = False, mesh_dir=None
                ) -> tuple[list[LinkMesh], list[str]]:
    """Every link's visual geometry (collision geometry where a link has no visual): the
    primitives, or with ``files`` the mesh files (read with trimesh, which takes a second to
    import; looked for as :class:`~robokin_ros.collision.mesh_files.MeshFiles` does, ``mesh_dir``
    last), plus the collision primitives of links none of whose visual meshes could be read;
    and notes about what could not be shown: at most one line for the meshes not found (a count,
    the first names, the hint for their kind of path) and one for those not read."""
    meshes = []
    mesh_files = MeshFiles(Path(urdf_dir) if urdf_dir is not None else None, tuple(package_paths or ()),
                           Path(mesh_dir) if mesh_dir is not None else None)
    visuals = model.link_visuals or ((),) * model.n_links
    for i, (seen, touched) in enumerate(zip(visuals, model.link_collisions)):
        pieces = []
        for g in seen or touched:
            if (g.shape == "mesh") != files:
                continue
            size = np.asarray(g.size, float)
            if g.shape == "mesh":
                mesh = _mesh(g.filename, size, mesh_files)
                if mesh is not None:
                    pieces.append((g, mesh.vertices, mesh.faces))
            else:
                pieces.append((g, *_primitive(g.shape, size)))
        if files and seen and not pieces and all(g.shape == "mesh" for g in seen):
            pieces = [(g, *_primitive(g.shape, np.asarray(g.size, float))) for g in touched if g.shape != "mesh"]
        meshes += [LinkMesh(i, pose_from_xyz_rpy(g.origin[:3], g.origin[3:]), np.asarray(vertices, np.float32),
                            np.asarray(faces, np.uint32), g.filename or g.shape) for g, vertices, faces in pieces]
    return meshes, mesh_files.summary(NOT_SHOWN)


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
                 root: str = "/robot", mesh_dir: str | Path | None = None):
        self.server, self.model, self.root = server, model, root
        self.urdf_dir, self.package_paths, self.mesh_dir = urdf_dir, package_paths, mesh_dir
        self.meshes, self.notes, self.pieces = [], [], []
        self.removed = False
        self.colliding: set = set()
        self.lock = threading.Lock()
        scene = server.scene
        self.frames = [scene.add_frame(name, show_axes=False, axes_length=0.08, axes_radius=0.004)
                       for name in node_names(model, root)]
        self._add_pieces(link_meshes(model)[0])
        self.edges = np.flatnonzero(model.link_parents >= 0)   # links with a parent
        self.skeleton = scene.add_line_segments(f"{root}_skeleton", np.zeros((max(len(self.edges), 1), 2, 3)),
                                                colors=SKELETON_COLOUR, thickness=3.0,
                                                thickness_units="screen")
        self.q = model.home_configuration()
        self.update(self.q)

    def _add_pieces(self, meshes: list[LinkMesh]) -> None:
        with self.lock:
            if self.removed:   # meshes read after the view was removed are dropped
                return
            for piece in meshes:
                T = piece.T_link_mesh
                handle = self.server.scene.add_mesh_simple(
                    f"{self.frames[piece.link].name}/geometry_{len(self.pieces)}", piece.vertices, piece.faces,
                    color=COLLIDING_COLOUR if piece.link in self.colliding else ROBOT_COLOUR, side="double",
                    wxyz=wxyz(T[:3, :3]), position=T[:3, 3])
                self.meshes.append(piece)
                self.pieces.append(handle)

    def load_meshes(self) -> list[str]:
        """Read the mesh files and add them (slow: trimesh's import takes a second, so the view
        starts with the primitives and calls this in the background). Returns the notes."""
        visuals = self.model.link_visuals or ((),) * self.model.n_links
        used = [g for seen, touched in zip(visuals, self.model.link_collisions) for g in seen or touched]
        if any(g.shape == "mesh" for g in used):
            meshes, notes = link_meshes(self.model, self.urdf_dir, self.package_paths, files=True,
                                        mesh_dir=self.mesh_dir)
            self._add_pieces(meshes)
            self.notes += notes
        return self.notes

    def update(self, q) -> np.ndarray:
        """Show configuration ``q (n_q,)``: one FK call, then every link frame moved at once.
        Returns the link poses ``(n_links, 4, 4)``.

        Raises:
            NonFiniteError: ``q`` or the link poses it gives are not finite (a mimic joint or a
                chain of slides driven past the float range): nothing is moved.
        """
        q = self.model.check_q(q)
        poses = forward_kinematics(self.model, q)
        if not np.isfinite(poses).all():
            bad = np.flatnonzero(~np.isfinite(poses).all(axis=(1, 2)))
            raise NonFiniteError("link poses", bad.tolist(), [self.model.link_names[i] for i in bad])
        quats = wxyz(poses[:, :3, :3])
        with self.lock, self.server.atomic():
            if self.removed:
                return poses
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
        with self.lock, self.server.atomic():
            self.colliding = links
            for piece, handle in zip(self.meshes, self.pieces):
                colour = COLLIDING_COLOUR if piece.link in links else ROBOT_COLOUR
                if tuple(handle.color) != colour:
                    handle.color = colour

    def link_colours(self) -> dict[int, tuple]:
        """Link index -> colour of its geometry in the scene (links with geometry only)."""
        return {piece.link: tuple(int(c) for c in handle.color) for piece, handle in zip(self.meshes, self.pieces)}

    def remove(self) -> None:
        """Take the robot out of the scene (before showing a new description); meshes still
        being read are dropped when they arrive."""
        with self.lock:
            self.removed = True
            for handle in [*self.pieces, *self.frames, self.skeleton]:
                handle.remove()
