"""Mesh files of a description, for pictures: found by the core's resolver
(:func:`robokin_ros.collision.meshes.resolve_mesh_uri`, as collision checking finds them) and
read with trimesh (optional: without it, or for a file it cannot read, the link is drawn as its
skeleton and a warning says why)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from ..collision.meshes import mesh_file_problem, resolve_mesh_uri


def triangles(filename: str, scale: np.ndarray, urdf_dir: Path | None, max_faces: int = 3000,
              package_paths=None) -> np.ndarray | None:
    """``(k, 3, 3)`` triangles of a mesh in its frame (scaled; at most ``max_faces``, evenly
    sampled), or None with a warning when it cannot be found or read."""
    path = resolve_mesh_uri(filename, package_paths, urdf_dir)
    if path is None:
        warnings.warn(f"mesh {filename!r} not found (package:// needs the package on ROS_PACKAGE_PATH or the "
                      "ament index); its link is drawn as a skeleton", RuntimeWarning, stacklevel=2)
        return None
    problem = mesh_file_problem(str(path))
    if problem is not None:
        warnings.warn(f"mesh {str(path)!r} {problem}; its link is drawn as a skeleton", RuntimeWarning, stacklevel=2)
        return None
    try:
        import trimesh
        mesh = trimesh.load(str(path), force="mesh")
        faces = np.asarray(mesh.vertices)[np.asarray(mesh.faces)]
    except ImportError:
        warnings.warn("trimesh is not installed: meshes are drawn as skeletons (pip install trimesh)",
                      RuntimeWarning, stacklevel=2)
        return None
    except Exception as error:  # noqa: BLE001 - any unreadable file: warn and go on
        warnings.warn(f"mesh {str(path)!r} cannot be read ({type(error).__name__}: {error}); drawn as a skeleton",
                      RuntimeWarning, stacklevel=2)
        return None
    if faces.ndim != 3 or not len(faces):
        return None
    if not np.isfinite(faces).all():
        warnings.warn(f"mesh {str(path)!r} has non-finite vertices; its link is drawn as a skeleton",
                      RuntimeWarning, stacklevel=2)
        return None
    if len(faces) > max_faces:
        faces = faces[np.linspace(0, len(faces) - 1, max_faces).astype(int)]
    return faces * scale
