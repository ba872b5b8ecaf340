"""The mesh files of one description, looked for as pictures and views need them, and what could
not be used told once: :class:`MeshFiles`.

A URI is found by the one resolver (:func:`~robokin_ros.collision.meshes.resolve_mesh_uri`, as
collision checking finds it), then in a ``mesh_dir`` (by its path inside its package, then by its
file name). What was not found, or found and not read, is summarised in at most two lines
(:meth:`MeshFiles.summary`): a count, the first few names and the hint that fits the kind of path
(``package://``, relative, ``file://``), used by ``robokin check``, ``show`` and ``view``.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from .meshes import resolve_mesh_uri

__all__ = ["SUMMARY_NAMES", "MeshFiles"]

#: Names a summary line lists before "and K more".
SUMMARY_NAMES = 3


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
