"""Mesh files of a description, for pictures: ``--package-path`` and ``--mesh-dir`` (the same
options for ``check``, ``show`` and ``view``), found by
:class:`~robokin_ros.collision.mesh_files.MeshFiles` and read with trimesh (optional: without it,
or for a file it cannot read, the link is drawn as its skeleton). What could not be drawn is told
once per robot (:meth:`~robokin_ros.collision.mesh_files.MeshFiles.summary`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ..collision.mesh_files import MeshFiles
from ..collision.meshes import mesh_file_problem

__all__ = ["MeshFiles", "add_options", "from_args", "triangles"]


def add_options(parser: argparse.ArgumentParser) -> None:
    """``--package-path DIR`` (repeatable) and ``--mesh-dir DIR``."""
    parser.add_argument("--package-path", action="append", default=[], metavar="DIR",
                        help="where package:// URIs look first: a folder holding packages, or a package's own "
                             "folder (repeatable; then ROS_PACKAGE_PATH and the ament index)")
    parser.add_argument("--mesh-dir", metavar="DIR",
                        help="a folder of mesh files: relative paths resolve from it when not beside the URDF, "
                             "and a package:// or relative URI not found elsewhere is looked up in it by its path "
                             "inside the package, then by its file name")


def from_args(args) -> MeshFiles:
    """The :class:`~robokin_ros.collision.mesh_files.MeshFiles` of ``FILE``, ``--package-path``
    and ``--mesh-dir``."""
    mesh_dir = getattr(args, "mesh_dir", None)
    return MeshFiles(Path(args.file).resolve().parent, tuple(getattr(args, "package_path", ()) or ()),
                     Path(mesh_dir).resolve() if mesh_dir else None)


def triangles(filename: str, scale: np.ndarray, files: MeshFiles, max_faces: int = 3000) -> np.ndarray | None:
    """``(k, 3, 3)`` triangles of a mesh in its frame (scaled; at most ``max_faces``, evenly
    sampled), or None when it cannot be found or read (recorded in ``files``)."""
    path = files.find(filename)
    if path is None:
        return None
    problem = mesh_file_problem(str(path))
    if problem is not None:
        files.note(f"mesh {str(path)!r} {problem}")
        return None
    try:
        import trimesh
        mesh = trimesh.load(str(path), force="mesh")
        faces = np.asarray(mesh.vertices)[np.asarray(mesh.faces)]
    except ImportError:
        files.note("trimesh is not installed: meshes are not read (pip install trimesh)")
        return None
    except Exception as error:  # noqa: BLE001 - any unreadable file: note it and go on
        files.note(f"mesh {str(path)!r} cannot be read ({type(error).__name__}: {error})")
        return None
    if faces.ndim != 3 or not len(faces):
        return None
    if not np.isfinite(faces).all():
        files.note(f"mesh {str(path)!r} has non-finite vertices")
        return None
    if len(faces) > max_faces:
        faces = faces[np.linspace(0, len(faces) - 1, max_faces).astype(int)]
    return faces * scale
