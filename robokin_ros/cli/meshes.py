"""Mesh files of a description, for pictures: found by the core's resolver
(:func:`robokin_ros.collision.meshes.resolve_mesh_uri`, as collision checking finds them), then
in ``--mesh-dir``, and read with trimesh (optional: without it, or for a file it cannot read, the
link is drawn as its skeleton). What could not be drawn is told once per robot
(:meth:`MeshFiles.summary`): a line with the count and the first few names, and the hint that
fits the kind of path (``package://``, relative, ``file://``).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path

import numpy as np

from ..collision.meshes import mesh_file_problem, resolve_mesh_uri

#: Names a summary line lists before "and K more".
SUMMARY_NAMES = 3


def add_options(parser: argparse.ArgumentParser) -> None:
    """``--package-path DIR`` (repeatable) and ``--mesh-dir DIR``."""
    parser.add_argument("--package-path", action="append", default=[], metavar="DIR",
                        help="where package:// URIs look first: a folder holding packages, or a package's own "
                             "folder (repeatable; then ROS_PACKAGE_PATH and the ament index)")
    parser.add_argument("--mesh-dir", metavar="DIR",
                        help="a folder of mesh files: relative paths resolve from it when not beside the URDF, "
                             "and a package:// or relative URI not found elsewhere is looked up in it by its path "
                             "inside the package, then by its file name")


@dataclasses.dataclass
class MeshFiles:
    """Where the mesh files of one description are looked for, and what could not be used.

    Attributes:
        urdf_dir: the URDF's folder (relative paths resolve from it).
        package_paths: folders searched first for ``package://`` URIs.
        mesh_dir: a folder searched last, by the path inside the package and by file name.
        tried: URIs looked for.
        missing: URIs not found (in order, once each).
        problems: files found and not read, with why (one phrase each, once).
    """

    urdf_dir: Path | None = None
    package_paths: tuple[str, ...] = ()
    mesh_dir: Path | None = None
    tried: list[str] = dataclasses.field(default_factory=list)
    missing: list[str] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)

    @classmethod
    def from_args(cls, args) -> MeshFiles:
        """From ``FILE``, ``--package-path`` and ``--mesh-dir``."""
        mesh_dir = getattr(args, "mesh_dir", None)
        return cls(Path(args.file).resolve().parent, tuple(getattr(args, "package_path", ()) or ()),
                   Path(mesh_dir).resolve() if mesh_dir else None)

    def find(self, uri: str) -> str | None:
        """The file of ``uri``, or None (recorded in :attr:`missing`)."""
        self.tried.append(uri)
        path = resolve_mesh_uri(uri, list(self.package_paths) or None, self.urdf_dir)
        if path is None and self.mesh_dir is not None and not uri.startswith("file://"):
            inside = uri[len("package://"):].split("/", 1)[-1] if uri.startswith("package://") else uri
            for candidate in dict.fromkeys((inside, os.path.basename(inside))):
                path = path or resolve_mesh_uri(candidate, None, self.mesh_dir)
        if path is None and uri not in self.missing:
            self.missing.append(uri)
        return path

    def note(self, problem: str) -> None:
        """Record a file that could not be used (once)."""
        if problem not in self.problems:
            self.problems.append(problem)

    def summary(self, then: str = "their links are drawn as skeletons") -> list[str]:
        """At most one line for the meshes not found and one for those not read (empty when all
        were used): a count, the first :data:`SUMMARY_NAMES` names and a hint, ending with ``then``."""
        lines = []
        if self.missing:
            lines.append(f"{_listed('mesh', self.missing, len(dict.fromkeys(self.tried)))} not found; "
                         f"{_hint(self.missing, self.urdf_dir)}; {then}")
        if self.problems:
            more = f" (and {len(self.problems) - 1} more meshes not read)" if len(self.problems) > 1 else ""
            lines.append(f"{self.problems[0]}{more}; {then}")
        return lines


def _listed(what: str, names: list[str], total: int) -> str:
    """``mesh 'a'``, or ``20 of 24 meshes ('a', 'b', 'c' and 17 more)``."""
    if len(names) == 1:
        return f"{what} {names[0]!r}"
    shown = ", ".join(repr(n) for n in names[:SUMMARY_NAMES])
    more = f" and {len(names) - SUMMARY_NAMES} more" if len(names) > SUMMARY_NAMES else ""
    return f"{len(names)} of {total} {what}es ({shown}{more})"


def _hint(missing: list[str], urdf_dir: Path | None) -> str:
    """What would resolve the URIs ``missing``, by their kinds."""
    packages = sorted({u[len("package://"):].split("/", 1)[0] for u in missing if u.startswith("package://")})
    relative = [u for u in missing if "://" not in u]
    hints = []
    if packages:
        names = ", ".join(packages[:SUMMARY_NAMES]) + (" ..." if len(packages) > SUMMARY_NAMES else "")
        hints.append(f"package:// needs its package ({names}) on ROS_PACKAGE_PATH or the ament index, or "
                     "--package-path DIR (a folder holding it)")
    if relative:
        hints.append(f"relative paths resolve from the URDF's folder ({urdf_dir or os.getcwd()})")
    if any(u.startswith("file://") for u in missing):
        hints.append("file:// paths are absolute")
    return "; ".join(hints + ["--mesh-dir DIR looks in a folder of the files"])


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
