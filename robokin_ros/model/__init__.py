"""The robot model and how it is made: URDF, SRDF, DH tables, builder operations, description files.

:mod:`.elements` (joint types, collision geometry) under the readers and editors (:mod:`.urdf`
and :mod:`.urdf_writer`, :mod:`.dh`, :mod:`.builder`), which produce a model's fields, one
:class:`ModelFields` record (:mod:`.fields`); :class:`RobotModel` (:mod:`.robot_model`: frozen,
flat arrays in topological order, indices) makes itself of them in :meth:`RobotModel.create`, its
named constructors (``from_urdf``, ``from_dh``) and builder methods. :mod:`.description` reads
description files (size cap, hardened XML, xacro); :mod:`.srdf` reads MoveIt's semantic
description; :mod:`.groups` holds IK groups and derives them from the tree when there is no SRDF,
with :mod:`.tree_roles` telling arms, hands, tool frames and feet apart; :mod:`.configuration`
holds the configuration-space operations (``check_q``, ``clamp``, ``random_configuration``, ...,
``integrate``: free functions of the model, Pinocchio-style). :mod:`.configuration`,
:mod:`.builder` and :mod:`.urdf_writer` read a model through the protocols of
:mod:`.model_data`, below :class:`RobotModel`, whose methods of the same names are a facade over
them.
"""

from .builder import JointLimits
from .configuration import (
    all_joint_values,
    check_q,
    clamp,
    home_configuration,
    integrate,
    q_from_dict,
    q_to_dict,
    random_configuration,
    within_limits,
    wrap_angle,
)
from .elements import NQ_OF_TYPE, NV_OF_TYPE, SCALAR_TYPES, CollisionGeometry, JointType, first_overflowing_link
from .fields import ModelFields
from .robot_model import RobotModel

__all__ = ["NQ_OF_TYPE", "NV_OF_TYPE", "SCALAR_TYPES", "CollisionGeometry", "JointLimits", "JointType", "ModelFields",
           "RobotModel", "all_joint_values", "check_q", "clamp", "first_overflowing_link", "home_configuration",
           "integrate", "q_from_dict", "q_to_dict", "random_configuration", "within_limits", "wrap_angle"]
