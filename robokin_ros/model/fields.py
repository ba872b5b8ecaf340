"""The fields record a :class:`~robokin_ros.model.RobotModel` is made of, its defaults and the
checks of its numbers.

The readers and editors (:func:`~robokin_ros.model.urdf.urdf_fields`,
:func:`~robokin_ros.model.dh.dh_fields`, the :mod:`~robokin_ros.model.builder` operations)
produce a :class:`ModelFields`; :meth:`RobotModel.create <robokin_ros.model.RobotModel.create>`
makes the model of its :func:`model_arrays`, which refuses the record (:func:`check_numbers`)
before any model exists. Nothing here names the model class: the fields sit below it.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import ModelError, shorten
from .elements import CollisionGeometry, first_overflowing_link, mesh_visual


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
        link_masses, link_coms, link_inertias, link_has_inertial: ``(n_links,)`` [kg],
            ``(n_links, 3)`` [m], ``(n_links, 3, 3)`` [kg m²] about the COM in link axes, and
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


def frozen(a) -> np.ndarray:
    """A read-only array copy of ``a``."""
    a = np.array(a)
    a.setflags(write=False)
    return a


def model_arrays(f: ModelFields) -> dict:
    """The keyword arguments of the :class:`RobotModel` dataclass: ``f``'s fields as read-only
    arrays and tuples of the model's shapes, defaults filled in, checked by :func:`check_numbers`.

    Raises:
        ModelError: not ``n_links - 1`` joints, links not in topological order, or names and
            numbers no kernel can use (see :func:`check_numbers`).
    """
    n_links = len(f.link_names)
    n_j = n_links - 1
    if len(f.joint_names) != n_j or len(f.joint_parents) != n_j:
        raise ModelError("a tree of n links has n - 1 joints")
    parents = np.concatenate([[-1], np.asarray(f.joint_parents, dtype=np.int64)]).astype(np.int64)
    if np.any(parents[1:] >= np.arange(1, n_links)) or np.any(parents[1:] < 0):
        raise ModelError("links are not in topological order (parent after child)")

    def per_joint(values, default) -> np.ndarray:
        return frozen(np.full(n_j, default, float) if values is None else np.asarray(values, float).reshape(n_j))

    def per_link(values, default, dtype=float) -> np.ndarray:
        return frozen(default if values is None else np.asarray(values, dtype))

    arrays = dict(
        name=f.name, link_names=tuple(f.link_names), link_parents=frozen(parents),
        all_joint_names=tuple(f.joint_names), joint_types=frozen(np.asarray(f.joint_types, np.int64).reshape(n_j)),
        joint_axes=frozen(np.asarray(f.joint_axes, float).reshape(n_j, 3)),
        joint_origins=frozen(np.asarray(f.joint_origins, float).reshape(n_j, 4, 4)),
        joint_lower=frozen(per_joint(f.joint_lower, -np.inf) + 0.0),   # + 0.0: no -0.0 bounds
        joint_upper=frozen(per_joint(f.joint_upper, np.inf) + 0.0),
        joint_velocity=per_joint(f.joint_velocity, np.inf), joint_effort=per_joint(f.joint_effort, np.inf),
        joint_acceleration=per_joint(f.joint_acceleration, np.inf),
        joint_deceleration=per_joint(f.joint_deceleration, np.inf), joint_jerk=per_joint(f.joint_jerk, np.inf),
        mimic_source=frozen(np.full(n_j, -1, np.int64) if f.mimic_source is None
                            else np.asarray(f.mimic_source, np.int64).reshape(n_j)),
        mimic_multiplier=per_joint(f.mimic_multiplier, 1.0), mimic_offset=per_joint(f.mimic_offset, 0.0),
        link_masses=per_link(f.link_masses, np.zeros(n_links)),
        link_coms=per_link(f.link_coms, np.zeros((n_links, 3))),
        link_inertias=per_link(f.link_inertias, np.zeros((n_links, 3, 3))),
        link_has_inertial=per_link(f.link_has_inertial, np.zeros(n_links, bool), bool),
        link_meshes=tuple([None] * n_links if f.link_meshes is None else f.link_meshes),
        link_collisions=tuple([()] * n_links if f.link_collisions is None
                              else (tuple(CollisionGeometry(*g) for g in c) for c in f.link_collisions)),
        load_warnings=tuple(f.load_warnings),
        link_visuals=tuple(_mesh_visuals(f.link_meshes, n_links) if f.link_visuals is None
                           else (tuple(CollisionGeometry(*g) for g in v) for v in f.link_visuals)),
    )
    check_numbers(arrays)
    return arrays


def _mesh_visuals(meshes, n_links: int) -> list:
    """Visual records of models made without them: each link's mesh (if any) at its origin, unscaled."""
    return [(mesh_visual(m),) if m else () for m in (meshes or [None] * n_links)]


def check_numbers(arrays: Mapping) -> None:
    """Raise :class:`ModelError` naming every joint or link with a name or a number no kernel can
    use: names that are not non-empty strings or hold control characters, non-finite numbers (NaN
    limits; inf is allowed for limits), joint origins whose composition overflows.

    Args:
        arrays: a model's arrays before it is made, as :func:`model_arrays` shapes them (the
            keyword arguments of the :class:`RobotModel` dataclass).
    """
    a = arrays
    link_names, joint_names = a["link_names"], a["all_joint_names"]
    n_links, n_joints = len(link_names), len(joint_names)
    problems = []
    if not isinstance(a["name"], str) or has_control_characters(a["name"]):
        problems.append(f"the robot's name must be a string without control characters, got {shorten(a['name'])}")
    for name in [*link_names, *joint_names]:
        if not isinstance(name, str) or not name:
            problems.append(f"names must be non-empty strings, got {name!r}")
        elif has_control_characters(name):
            problems.append(f"names must not contain control characters, got {shorten(name)}")
    for what, key in {"origin": "joint_origins", "axis": "joint_axes", "mimic multiplier": "mimic_multiplier",
                      "mimic offset": "mimic_offset"}.items():
        bad = ~np.isfinite(a[key].reshape(n_joints, -1 if n_joints else 0)).all(axis=1)
        problems += [f"joint {joint_names[j]!r}: {what} is not finite" for j in np.flatnonzero(bad)]
    for what in ("lower", "upper", "velocity", "effort", "acceleration", "deceleration", "jerk"):
        bad = np.isnan(a[f"joint_{what}"])
        problems += [f"joint {joint_names[j]!r}: {what} limit is NaN" for j in np.flatnonzero(bad)]
    for what, key in {"mass": "link_masses", "centre of mass": "link_coms", "inertia": "link_inertias"}.items():
        bad = ~np.isfinite(a[key].reshape(n_links, -1 if n_links else 0)).all(axis=1)
        problems += [f"link {link_names[i]!r}: {what} is not finite" for i in np.flatnonzero(bad)]
    if not problems and n_joints:
        i = first_overflowing_link(a["link_parents"][1:], a["joint_origins"])
        if i is not None:
            problems.append(f"link {link_names[i]!r}: its placement overflows (the origins from the root to "
                            f"joint {joint_names[i - 1]!r} compose to a non-finite pose)")
    if problems:
        raise ModelError("; ".join(problems[:10]) + (f"; and {len(problems) - 10} more" if len(problems) > 10 else ""))


def has_control_characters(text: str) -> bool:
    """True when ``text`` holds a control character (NUL, newline, escape, DEL, ...: Unicode Cc)."""
    return not text.isprintable() and any(unicodedata.category(c) == "Cc" for c in text)
