"""Where a URDF's mesh files are: ``package://``, ``file://`` and relative URIs resolved to paths.

The one resolver of meshes, used by collision checking and by the pictures of the ``robokin``
command, so a mesh resolves to the same file in both. A ``package://`` URI is normalised and
refused when it leaves its package (``package://pkg/../../etc/passwd``); a ``file://`` URI naming
another host is refused. :func:`mesh_file_problem` says why a resolved file is not to be read
(not a regular file, or larger than :func:`max_mesh_bytes`).
"""

from __future__ import annotations

import os
import posixpath
import stat
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path

#: Default cap on a mesh file's size in bytes; ``ROBOKIN_MAX_MESH_BYTES`` overrides it. A larger
#: file is skipped like a missing mesh, never read.
DEFAULT_MAX_MESH_BYTES = 256 * 1024 * 1024


def max_mesh_bytes() -> int:
    """The mesh size cap in force: ``ROBOKIN_MAX_MESH_BYTES`` if it is a whole number, else 256 MiB."""
    text = os.environ.get("ROBOKIN_MAX_MESH_BYTES", "").strip()
    return int(text) if text.isdigit() else DEFAULT_MAX_MESH_BYTES


def mesh_file_problem(path: str) -> str | None:
    """Why the mesh file ``path`` must not be read (not a regular file, or over :func:`max_mesh_bytes`), or None."""
    try:
        info = os.stat(path)
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file"
    cap = max_mesh_bytes()
    if info.st_size > cap:
        return f"is {info.st_size} bytes, more than the limit of {cap} bytes (ROBOKIN_MAX_MESH_BYTES)"
    return None


def _package_parts(uri: str) -> tuple[str, str] | None:
    """``(package, path inside it)`` of a ``package://`` URI, the path normalised; None when the
    package name is not a plain name or the path leaves the package."""
    name, _, rest = uri[len("package://"):].partition("/")
    inside = posixpath.normpath(rest) if rest else ""
    if name in ("", ".", "..") or "\\" in name or not inside or inside == "." or inside.startswith("/") \
            or inside == ".." or inside.startswith("../"):
        return None
    return name, inside


def mesh_uri_problem(uri: str) -> str | None:
    """Why a mesh URI is refused before any lookup, or None: a ``package://`` URI whose path
    leaves its package (or names no package), a ``file://`` URI of another host."""
    if uri.startswith("package://") and _package_parts(uri) is None:
        return "leaves its package (or names none): refused"
    if uri.startswith("file://") and urllib.parse.urlparse(uri).netloc not in ("", "localhost"):
        return "names another host: refused"
    return None


def package_directories(package_paths: Mapping[str, str] | Sequence[str] | None = None) -> list:
    """Where ``package://name/...`` may live, in search order: ``(name or None, directory)``.

    ``package_paths`` first (a mapping name -> package directory, or folders holding packages),
    then every folder of ``ROS_PACKAGE_PATH``, then ``share/`` of every ament prefix in
    ``AMENT_PREFIX_PATH`` (the ament index), then the packages found below ``ROS_PACKAGE_PATH``
    by their ``package.xml`` (a workspace's ``src/`` holding repositories of packages).
    """
    out = []
    if isinstance(package_paths, Mapping):
        out += [(name, str(folder)) for name, folder in package_paths.items()]
    elif package_paths is not None:
        out += [(None, str(folder)) for folder in package_paths]
    ros_paths = [folder for folder in os.environ.get("ROS_PACKAGE_PATH", "").split(os.pathsep) if folder]
    out += [(None, folder) for folder in ros_paths]
    prefixes = os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)
    out += [(None, os.path.join(prefix, "share")) for prefix in prefixes if prefix]
    for top in ros_paths:
        out += [(xml.parent.name, str(xml.parent)) for xml in sorted(Path(top).glob("*/*/package.xml"))]
    return out


def resolve_mesh_uri(uri: str, package_paths=None, base_dir: str | os.PathLike | None = None) -> str | None:
    """File path of a URDF mesh URI, or None if no such file exists or the URI is refused
    (:func:`mesh_uri_problem`).

    ``package://name/rest`` is looked up with :func:`package_directories` (a folder ``name``
    inside a search folder, or the folder itself when its last component is ``name``), ``rest``
    normalised and kept inside it; ``file://`` URIs are percent-decoded local paths; anything
    else is a path, relative to ``base_dir`` (default: the working directory).
    """
    if mesh_uri_problem(uri) is not None:
        return None
    if uri.startswith("package://"):
        name, rest = _package_parts(uri)
        for known, folder in package_directories(package_paths):
            if known is not None:
                candidates = [os.path.join(folder, rest)] if known == name else []
            else:
                candidates = [os.path.join(folder, name, rest)]
                if os.path.basename(os.path.normpath(folder)) == name:
                    candidates.append(os.path.join(folder, rest))
            for path in candidates:
                if os.path.isfile(path):
                    return path
        return None
    if uri.startswith("file://"):
        path = os.path.normpath(urllib.parse.unquote(urllib.parse.urlparse(uri).path))
    else:
        path = uri if os.path.isabs(uri) else os.path.join(base_dir or os.getcwd(), uri)
    return path if os.path.isfile(path) else None
