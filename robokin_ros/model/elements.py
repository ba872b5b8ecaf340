"""The element types of a robot model: joint types and their coordinates, collision geometry.

Shared by :class:`~robokin_ros.model.RobotModel` and the readers and editors that produce its
fields (:mod:`.urdf`, :mod:`.dh`, :mod:`.builder`), which never need the model class itself.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np


class JointType(enum.IntEnum):
    """URDF joint types, as stored in ``RobotModel.joint_types``."""

    FIXED = 0
    REVOLUTE = 1
    CONTINUOUS = 2
    PRISMATIC = 3
    FLOATING = 4
    PLANAR = 5


#: Position / velocity coordinates of one (non-mimic) joint of each type.
NQ_OF_TYPE = {JointType.FIXED: 0, JointType.REVOLUTE: 1, JointType.CONTINUOUS: 1,
              JointType.PRISMATIC: 1, JointType.FLOATING: 7, JointType.PLANAR: 3}
NV_OF_TYPE = {JointType.FIXED: 0, JointType.REVOLUTE: 1, JointType.CONTINUOUS: 1,
              JointType.PRISMATIC: 1, JointType.FLOATING: 6, JointType.PLANAR: 3}
SCALAR_TYPES = (JointType.REVOLUTE, JointType.CONTINUOUS, JointType.PRISMATIC)


class CollisionGeometry(NamedTuple):
    """The geometry of one URDF ``<collision>`` (see :mod:`robokin_ros.collision`) or ``<visual>``
    element of a link.

    Attributes:
        shape: ``"box"``, ``"cylinder"``, ``"sphere"``, ``"capsule"`` or ``"mesh"``.
        size: box ``(x, y, z)`` side lengths, cylinder / capsule ``(radius, length)``, sphere
            ``(radius,)``, mesh ``(sx, sy, sz)`` scale [m].
        origin: ``(x, y, z, roll, pitch, yaw)`` of the geometry in the link frame [m, rad].
        filename: the mesh's URI (``package://``, ``file://`` or a path); "" for primitives.
    """

    shape: str
    size: tuple
    origin: tuple = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    filename: str = ""


def mesh_visual(filename: str) -> CollisionGeometry:
    """The record of a ``<visual>`` that is just a mesh at the link origin, unscaled."""
    return CollisionGeometry("mesh", (1.0, 1.0, 1.0), (0.0,) * 6, filename)


def first_overflowing_link(parents: Sequence[int], origins: np.ndarray) -> int | None:
    """Index of the first link (topological order) whose world pose at q = 0 is not finite:
    finite joint origins whose composition overflows (e.g. two at 1e308 m in series); None if
    every pose is finite.

    Args:
        parents: ``(n_links - 1,)`` parent link of each joint (joint j's child is link j + 1).
        origins: ``(n_links - 1, 4, 4)`` joint origins.
    """
    world = np.empty((len(origins) + 1, 4, 4))
    world[0] = np.eye(4)
    with np.errstate(over="ignore", invalid="ignore"):
        for i in range(1, len(world)):
            np.matmul(world[parents[i - 1]], origins[i - 1], out=world[i])
    bad = np.flatnonzero(~np.all(np.isfinite(world), axis=(1, 2)))
    return int(bad[0]) if bad.size else None
