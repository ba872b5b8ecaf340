"""Mesh files of a description, for pictures: resolve ``package://``, ``file://`` and relative
paths, and read them with trimesh (optional: without it, or for a file it cannot read, the link
is drawn as its skeleton and a warning says why)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np


def package_roots() -> dict[str, Path]:
    """ROS package name -> directory: ``ROS_PACKAGE_PATH`` trees (a folder with a package.xml)
    and the ament index (``AMENT_PREFIX_PATH``: ``<prefix>/share/<package>``)."""
    roots: dict[str, Path] = {}
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        index = Path(prefix) / "share" / "ament_index" / "resource_index" / "packages"
        if index.is_dir():
            for marker in index.iterdir():
                roots.setdefault(marker.name, Path(prefix) / "share" / marker.name)
    for top in filter(None, os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep)):
        for package_xml in Path(top).glob("**/package.xml"):
            roots.setdefault(package_xml.parent.name, package_xml.parent)
    return roots


def resolve(filename: str, urdf_dir: Path | None, roots: dict[str, Path] | None = None) -> Path | None:
    """The file a URDF mesh ``filename`` names, or None if it cannot be found."""
    if filename.startswith("package://"):
        package, _, rest = filename[len("package://"):].partition("/")
        root = (package_roots() if roots is None else roots).get(package)
        path = None if root is None else root / rest
    elif filename.startswith("file://"):
        path = Path(filename[len("file://"):])
    else:
        path = Path(filename) if os.path.isabs(filename) or urdf_dir is None else urdf_dir / filename
    return path if path is not None and path.is_file() else None


def triangles(filename: str, scale: np.ndarray, urdf_dir: Path | None, max_faces: int = 3000,
              roots: dict[str, Path] | None = None) -> np.ndarray | None:
    """``(k, 3, 3)`` triangles of a mesh in its frame (scaled; at most ``max_faces``, evenly
    sampled), or None with a warning when it cannot be found or read."""
    path = resolve(filename, urdf_dir, roots)
    if path is None:
        warnings.warn(f"mesh {filename!r} not found (package:// needs the package on ROS_PACKAGE_PATH or the "
                      "ament index); its link is drawn as a skeleton", RuntimeWarning, stacklevel=2)
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
    if len(faces) > max_faces:
        faces = faces[np.linspace(0, len(faces) - 1, max_faces).astype(int)]
    return faces * scale
