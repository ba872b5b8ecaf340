"""The robot descriptions bundled with robokin_ros, found from any folder.

Example:
    >>> import robokin_ros as rk
    >>> from robokin_ros import robots
    >>> rk.RobotModel.from_urdf_file(robots.path("panda.urdf")).name
    'panda'
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["names", "path"]

_HERE = Path(__file__).resolve().parent


def names() -> list[str]:
    """Return the file names of the bundled descriptions (``.urdf`` and ``.srdf``), sorted."""
    return sorted(p.name for p in _HERE.iterdir() if p.suffix in (".urdf", ".srdf"))


def path(name: str) -> Path:
    """Return the absolute path of a bundled description.

    Args:
        name: A file name from :func:`names`, such as ``"panda.urdf"`` or ``"panda.srdf"``.

    Returns:
        The file's absolute path, valid from any working folder.

    Raises:
        FileNotFoundError: ``name`` is not a bundled description; the message lists those that are.
    """
    known = names()
    if name not in known:
        raise FileNotFoundError(f"no bundled robot description {name!r}; bundled: {', '.join(known)}")
    return _HERE / name
