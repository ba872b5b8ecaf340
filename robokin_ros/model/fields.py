"""The fields record a :class:`~robokin_ros.model.RobotModel` is made of.

The readers and editors (:func:`~robokin_ros.model.urdf.urdf_fields`,
:func:`~robokin_ros.model.dh.dh_fields`, the :mod:`~robokin_ros.model.builder` operations)
produce a :class:`ModelFields`; :meth:`RobotModel.create <robokin_ros.model.RobotModel.create>`
checks it and makes the model of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np


@dataclasses.dataclass(frozen=True, eq=False)
class ModelFields:
    """Per-link / per-joint data of a robot, already in topological order: joint ``j`` joins
    parent link ``joint_parents[j]`` (``<= j``) to child link ``j + 1``.

    Array-like fields may be lists or arrays; :meth:`RobotModel.create` copies them into
    read-only arrays. ``None`` takes the default named.

    Attributes:
        name: the robot's name.
        link_names: ``n_links`` names, the root first.
        joint_names: ``n_joints = n_links - 1`` names (every joint, fixed and mimic included).
        joint_parents: ``(n_joints,)`` parent link of each joint.
        joint_types: ``(n_joints,)`` :class:`~robokin_ros.model.JointType` values.
        joint_axes: ``(n_joints, 3)`` unit axes in the joint frames.
        joint_origins: ``(n_joints, 4, 4)`` pose of each joint frame in its parent link at q = 0.
        joint_lower, joint_upper: ``(n_joints,)`` position limits [rad or m] (None: unbounded).
        joint_velocity, joint_effort, joint_acceleration, joint_deceleration, joint_jerk:
            ``(n_joints,)`` limits (None: inf).
        mimic_source: ``(n_joints,)`` the independent joint each joint follows, -1 for none
            (None: no mimic joints). Sources must already be resolved to independent joints.
        mimic_multiplier, mimic_offset: ``(n_joints,)`` value = multiplier * source + offset
            (None: 1 and 0).
        link_masses ``(n_links,)`` [kg], link_coms ``(n_links, 3)`` [m], link_inertias
            ``(n_links, 3, 3)`` [kg m²] about the COM in link axes, link_has_inertial
            ``(n_links,)`` bool (None: massless links).
        link_meshes: per link a visual mesh path or None (None: no meshes).
        link_collisions: per link a sequence of :class:`~robokin_ros.model.CollisionGeometry`
            (or tuples of its fields) (None: none).
        load_warnings: the :class:`~robokin_ros.errors.LoadWarning` s of the document read.
        link_visuals: per link its visual geometries (None: each link's mesh, if any, at its origin).
    """

    name: str
    link_names: Sequence[str]
    joint_names: Sequence[str]
    joint_parents: Sequence[int]
    joint_types: Sequence[int]
    joint_axes: np.ndarray | Sequence
    joint_origins: np.ndarray | Sequence
    joint_lower: np.ndarray | Sequence | None = None
    joint_upper: np.ndarray | Sequence | None = None
    joint_velocity: np.ndarray | Sequence | None = None
    joint_effort: np.ndarray | Sequence | None = None
    joint_acceleration: np.ndarray | Sequence | None = None
    joint_deceleration: np.ndarray | Sequence | None = None
    joint_jerk: np.ndarray | Sequence | None = None
    mimic_source: np.ndarray | Sequence | None = None
    mimic_multiplier: np.ndarray | Sequence | None = None
    mimic_offset: np.ndarray | Sequence | None = None
    link_masses: np.ndarray | Sequence | None = None
    link_coms: np.ndarray | Sequence | None = None
    link_inertias: np.ndarray | Sequence | None = None
    link_has_inertial: np.ndarray | Sequence | None = None
    link_meshes: Sequence | None = None
    link_collisions: Sequence | None = None
    load_warnings: tuple = ()
    link_visuals: Sequence | None = None
