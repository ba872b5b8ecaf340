"""The robot model and how it is made: URDF, SRDF, DH tables, builder operations, description files.

:mod:`.elements` (joint types, collision geometry) under the readers and editors (:mod:`.urdf`,
:mod:`.dh`, :mod:`.builder`), which produce a model's fields; :class:`RobotModel`
(:mod:`.robot_model`: frozen, flat arrays in topological order) makes itself of them in its
named constructors (``from_urdf``, ``from_dh``) and builder methods. :mod:`.description` reads
description files (size cap, hardened XML, xacro); :mod:`.srdf` reads MoveIt's semantic
description; :mod:`.groups` holds IK groups and derives them from the tree when there is no SRDF,
with :mod:`.tree_roles` telling arms, hands, tool frames and feet apart; :mod:`.configuration`
moves configurations.
"""

from .elements import NQ_OF_TYPE, NV_OF_TYPE, SCALAR_TYPES, CollisionGeometry, JointType, first_overflowing_link
from .robot_model import RobotModel

__all__ = ["NQ_OF_TYPE", "NV_OF_TYPE", "SCALAR_TYPES", "CollisionGeometry", "JointType", "RobotModel",
           "first_overflowing_link"]
