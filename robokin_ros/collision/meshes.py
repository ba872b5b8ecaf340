"""Where a URDF's mesh files are: ``package://``, ``file://`` and relative URIs resolved to paths.

The one resolver of meshes, used by collision checking and by the pictures of the ``robokin``
command, so a mesh resolves to the same file in both.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path


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
    """File path of a URDF mesh URI, or None if no such file exists.

    ``package://name/rest`` is looked up with :func:`package_directories` (a folder ``name``
    inside a search folder, or the folder itself when its last component is ``name``);
    ``file://`` URIs are percent-decoded paths; anything else is a path, relative to
    ``base_dir`` (default: the working directory).
    """
    if uri.startswith("package://"):
        name, _, rest = uri[len("package://"):].partition("/")
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
        path = urllib.parse.unquote(urllib.parse.urlparse(uri).path)
    else:
        path = uri if os.path.isabs(uri) else os.path.join(base_dir or os.getcwd(), uri)
    return path if os.path.isfile(path) else None
