"""The immutable robot model: a kinematic tree in topological order, as flat arrays.

It is the one implementation of :class:`~robokin_ros.model.model_data.EditableModel`, the data
that the functions of a model (:mod:`.configuration`, :mod:`.builder`, :mod:`.urdf_writer`) read:
they sit below this module, which imports them and keeps methods of the same names as a facade.

Notation (Featherstone): link 0 is the root; every other link ``i`` hangs from its parent
``λ(i) = link_parents[i]`` through joint ``i - 1`` (joint ``j`` has child link ``j + 1``).
``μ(i)`` are the children of ``i``, ``ν(i)`` its subtree (``i`` and every descendant), and the
support of ``i`` is ``i`` and every ancestor.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from ..errors import ArgumentError, UnknownJointError, UnknownLinkError, URDFError
from . import builder, configuration
from .dh import dh_fields
from .elements import NQ_OF_TYPE, NV_OF_TYPE, SCALAR_TYPES, JointType
from .fields import ModelFields, frozen, model_arrays
from .urdf import urdf_fields, urdf_file_fields
from .urdf_writer import model_to_urdf

Array = NDArray[np.float64]


@dataclasses.dataclass(frozen=True, eq=False)
class RobotModel:
    """A robot's kinematic tree with limits and inertials: data, indices and constructors. Build it
    with :meth:`from_urdf`, :meth:`from_dh`, the builder operations or :meth:`create` (of a
    :class:`~robokin_ros.model.fields.ModelFields` record); never mutate it (its arrays are
    read-only). The configuration-space operations (``check_q``, ``clamp``, ...) are functions of
    :mod:`robokin_ros.model.configuration` and the builder operations functions of
    :mod:`robokin_ros.model.builder`; the methods of the same names are a facade over them.

    Per link (``n_links``, parents before children):
        link_names, link_parents ``(n_links,)`` (-1 for the root),
        link_masses ``(n_links,)`` [kg], link_coms ``(n_links, 3)`` [m] in the link frame,
        link_inertias ``(n_links, 3, 3)`` [kg m²] about the COM in link-frame axes,
        link_has_inertial ``(n_links,)`` bool, link_meshes (visual mesh path or None),
        link_collisions: per link a tuple of :class:`CollisionGeometry` (its ``<collision>``
        elements, document order; ``()`` for none).
        link_visuals: per link a tuple of :class:`CollisionGeometry` records of its ``<visual>``
        elements (document order; what the pictures draw).

    load_warnings: :class:`~robokin_ros.errors.LoadWarning` s of the URDF it was read from (parts
    the model does not use that urdfdom would accept or skip), each with its input line; ``()``
    for models built otherwise.

    Per joint (``n_joints = n_links - 1``; joint ``j`` has parent link ``joint_parents[j]``
    and child link ``j + 1``):

        all_joint_names, joint_types ``(n_joints,)`` (:class:`JointType`),
        joint_axes ``(n_joints, 3)`` unit, in the joint frame,
        joint_origins ``(n_joints, 4, 4)``: pose of the joint frame in the parent link
        (URDF ``<origin>``; the child link frame coincides with the joint frame at q = 0),
        joint_lower/upper/velocity/effort ``(n_joints,)`` (±inf where none),
        joint_acceleration/deceleration/jerk ``(n_joints,)``: URDF 1.2's limits (inf where none),
        mimic_source ``(n_joints,)``: independent joint whose value this joint follows (-1: none),
        mimic_multiplier, mimic_offset ``(n_joints,)``: value = multiplier * source + offset,
        joint_q_index, joint_v_index ``(n_joints,)``: first coordinate in q / v (-1: none).
    """

    name: str
    link_names: tuple[str, ...]
    link_parents: np.ndarray
    all_joint_names: tuple[str, ...]
    joint_types: np.ndarray
    joint_axes: np.ndarray
    joint_origins: np.ndarray
    joint_lower: np.ndarray
    joint_upper: np.ndarray
    joint_velocity: np.ndarray
    joint_effort: np.ndarray
    joint_acceleration: np.ndarray
    joint_deceleration: np.ndarray
    joint_jerk: np.ndarray
    mimic_source: np.ndarray
    mimic_multiplier: np.ndarray
    mimic_offset: np.ndarray
    link_masses: np.ndarray
    link_coms: np.ndarray
    link_inertias: np.ndarray
    link_has_inertial: np.ndarray
    link_meshes: tuple
    link_collisions: tuple = ()
    load_warnings: tuple = ()
    link_visuals: tuple = ()

    # ------------------------------------------------------------------ construction
    @classmethod
    def create(cls, fields: ModelFields) -> RobotModel:
        """Make a model of its fields (per-link / per-joint data already in topological order;
        see :class:`~robokin_ros.model.fields.ModelFields` for each one and its default), checked
        by :func:`~robokin_ros.model.fields.check_numbers`.

        Raises:
            ArgumentError: ``fields`` is not a :class:`ModelFields`.
            ModelError: not a tree in topological order (``joint_parents[j] <= j``), names that are
                not non-empty strings, non-finite numbers (NaN limits; inf is allowed for limits),
                or joint origins whose composition overflows.
        """
        if not isinstance(fields, ModelFields):
            raise ArgumentError("fields", f"must be a ModelFields record, got {type(fields).__name__}")
        return cls(**model_arrays(fields))

    @classmethod
    def from_urdf(cls, xml: str, max_bytes: int | None = None) -> RobotModel:
        """Model of a URDF document (str or UTF-8 bytes) of at most ``max_bytes`` (default 64 MiB or
        ``ROBOKIN_MAX_DESCRIPTION_BYTES``). Raises :class:`~robokin_ros.errors.URDFError` listing
        every problem found with its input line; see ``load_warnings`` for what was tolerated
        (a file name instead of the text is refused, pointing at :meth:`from_urdf_file`)."""
        if isinstance(xml, os.PathLike) or (isinstance(xml, str) and _looks_like_a_path(xml)):
            raise URDFError(f"from_urdf takes the URDF text, got the file name {str(xml)[:200]!r}: "
                            "use RobotModel.from_urdf_file(path)")
        return cls.create(urdf_fields(xml, max_bytes))

    @classmethod
    def from_urdf_file(cls, path, max_bytes: int | None = None) -> RobotModel:
        """Model of a URDF file; see :meth:`from_urdf`."""
        return cls.create(urdf_file_fields(path, max_bytes))

    @classmethod
    def from_dh(cls, table, convention: str = "standard", **kwargs) -> RobotModel:
        """Model of a Denavit–Hartenberg table; see :func:`robokin_ros.model.dh.dh_fields`."""
        return cls.create(dh_fields(table, convention=convention, **kwargs))

    # ------------------------------------------------------------------ builder operations
    def add_body(self, parent: str, joint_name: str, joint_type, child_name: str, **kwargs) -> RobotModel:
        """New model with a body hung from ``parent``; see :func:`robokin_ros.model.builder.add_body`."""
        return builder.add_body(self, parent, joint_name, joint_type, child_name, **kwargs)

    def remove_subtree(self, link: str) -> RobotModel:
        """New model without ``link`` and its descendants; see :func:`robokin_ros.model.builder.remove_subtree`."""
        return builder.remove_subtree(self, link)

    def replace_joint(self, joint_name: str, joint_type, **kwargs) -> RobotModel:
        """New model with another joint between the same links; see :func:`robokin_ros.model.builder.replace_joint`."""
        return builder.replace_joint(self, joint_name, joint_type, **kwargs)

    def set_fixed_transform(self, joint_name: str, parent_to_joint=None, joint_to_child=None) -> RobotModel:
        """New model with a joint's placement changed; see :func:`robokin_ros.model.builder.set_fixed_transform`."""
        return builder.set_fixed_transform(self, joint_name, parent_to_joint=parent_to_joint,
                                           joint_to_child=joint_to_child)

    def rename_base(self, new_name: str) -> RobotModel:
        """New model whose root link is called ``new_name``; see :func:`robokin_ros.model.builder.rename_base`."""
        return builder.rename_base(self, new_name)

    def to_urdf(self) -> str:
        """URDF text that loads back to an equal model."""
        return model_to_urdf(self)

    # ------------------------------------------------------------------ sizes and indices
    @property
    def n_links(self) -> int:
        return len(self.link_names)

    @property
    def n_joints(self) -> int:
        return len(self.all_joint_names)

    @property
    def frame_names(self) -> tuple[str, ...]:
        """Frames are the URDF links; the world frame is the root link."""
        return self.link_names

    @property
    def root_link(self) -> str:
        return self.link_names[0]

    @cached_property
    def joint_parents(self) -> np.ndarray:
        """Parent link of each joint ``(n_joints,)``."""
        return frozen(self.link_parents[1:])

    @cached_property
    def joint_children(self) -> np.ndarray:
        """Child link of each joint ``(n_joints,)``: ``j + 1``."""
        return frozen(np.arange(1, self.n_links))

    @cached_property
    def is_mimic(self) -> np.ndarray:
        """``(n_joints,)`` bool: joint follows another joint (adds no coordinate)."""
        return frozen(self.mimic_source >= 0)

    @cached_property
    def is_fixed(self) -> np.ndarray:
        """``(n_joints,)`` bool: fixed joint (no motion, no actuator)."""
        return frozen(self.joint_types == JointType.FIXED)

    @cached_property
    def _coordinates(self):
        nq = np.array([0 if m else NQ_OF_TYPE[JointType(t)] for t, m in zip(self.joint_types, self.is_mimic)])
        nv = np.array([0 if m else NV_OF_TYPE[JointType(t)] for t, m in zip(self.joint_types, self.is_mimic)])
        q_idx = np.where(nq > 0, np.cumsum(nq) - nq, -1)
        v_idx = np.where(nv > 0, np.cumsum(nv) - nv, -1)
        return frozen(nq), frozen(nv), frozen(q_idx), frozen(v_idx)

    @property
    def joint_nq(self) -> np.ndarray:
        """Position coordinates per joint ``(n_joints,)`` (0 for fixed and mimic)."""
        return self._coordinates[0]

    @property
    def joint_nv(self) -> np.ndarray:
        """Velocity coordinates per joint ``(n_joints,)`` (0 for fixed and mimic)."""
        return self._coordinates[1]

    @property
    def joint_q_index(self) -> np.ndarray:
        """First index in q of each joint's coordinates ``(n_joints,)`` (-1: none)."""
        return self._coordinates[2]

    @property
    def joint_v_index(self) -> np.ndarray:
        """First index in v of each joint's coordinates ``(n_joints,)`` (-1: none)."""
        return self._coordinates[3]

    @cached_property
    def n_q(self) -> int:
        """Number of position coordinates."""
        return int(self.joint_nq.sum())

    @cached_property
    def n_v(self) -> int:
        """Number of velocity coordinates."""
        return int(self.joint_nv.sum())

    @cached_property
    def active_joints(self) -> np.ndarray:
        """Indices of the independent joints (non-fixed, non-mimic), in q order."""
        return frozen(np.flatnonzero(self.joint_nq > 0))

    @cached_property
    def joint_names(self) -> tuple[str, ...]:
        """Names of the independent joints in q order (what a JointState needs)."""
        return tuple(self.all_joint_names[j] for j in self.active_joints)

    @cached_property
    def q_names(self) -> tuple[str, ...]:
        """One label per q coordinate (the joint name, suffixed for multi-coordinate joints)."""
        out = []
        for j in self.active_joints:
            n, t = self.all_joint_names[j], JointType(self.joint_types[j])
            if t == JointType.FLOATING:
                out += [f"{n}/{s}" for s in ("x", "y", "z", "qx", "qy", "qz", "qw")]
            elif t == JointType.PLANAR:
                out += [f"{n}/{s}" for s in ("x", "y", "theta")]
            else:
                out.append(n)
        return tuple(out)

    @cached_property
    def v_names(self) -> tuple[str, ...]:
        """One label per v coordinate (columns of Jacobians, entries of torques)."""
        out = []
        for j in self.active_joints:
            n, t = self.all_joint_names[j], JointType(self.joint_types[j])
            if t == JointType.FLOATING:
                out += [f"{n}/{s}" for s in ("vx", "vy", "vz", "wx", "wy", "wz")]
            elif t == JointType.PLANAR:
                out += [f"{n}/{s}" for s in ("x", "y", "theta")]
            else:
                out.append(n)
        return tuple(out)

    @cached_property
    def _link_index(self) -> dict[str, int]:
        return {n: i for i, n in enumerate(self.link_names)}

    @cached_property
    def _joint_index(self) -> dict[str, int]:
        return {n: j for j, n in enumerate(self.all_joint_names)}

    def link_index(self, name: str) -> int:
        """Index of a link (frame) by name. Raises :class:`UnknownLinkError` with close matches."""
        try:
            return self._link_index[name]
        except KeyError:
            raise UnknownLinkError(name, self.link_names) from None
        except TypeError:   # unhashable: a list of names where one name belongs
            raise ArgumentError("frame", f"must be one link name (str), got {type(name).__name__} "
                                         f"{str(name)[:60]}") from None

    frame_index = link_index

    def link_indices(self, frames) -> tuple[int, ...] | None:
        """Link indices of ``frames`` (names and/or indices, negative ones counting from the
        end as in numpy; in order; None stays None).

        Raises:
            UnknownLinkError: a name the model does not have, or an index outside
                ``[-n_links, n_links)``.
            ArgumentError: ``frames`` is a str (one name: pass ``[name]``).
        """
        if frames is None:
            return None
        if isinstance(frames, str):
            raise ArgumentError("frames", f"must be a sequence of link names or indices, got the str {frames!r} "
                                          f"(one frame: [{frames!r}])")
        try:
            frames = list(frames)
        except TypeError:
            raise ArgumentError("frames", "must be a sequence of link names or indices, got "
                                          f"{type(frames).__name__}") from None
        n = self.n_links
        out = []
        for f in frames:
            if isinstance(f, (int, np.integer)) and not isinstance(f, (bool, np.bool_)):
                if not -n <= f < n:
                    raise UnknownLinkError(int(f), self.link_names)
                out.append(int(f) % n)
            else:
                out.append(self.link_index(f))
        return tuple(out)

    @cached_property
    def scalar_joint_indices(self) -> np.ndarray:
        """Indices of the revolute, continuous and prismatic joints, mimic ones included (the
        joints whose child poses go on /tf)."""
        return frozen(np.flatnonzero(np.isin(self.joint_types, SCALAR_TYPES)))

    def joint_index(self, name: str) -> int:
        """Index of a joint (any type) by name. Raises :class:`UnknownJointError`."""
        try:
            return self._joint_index[name]
        except (KeyError, TypeError):
            raise UnknownJointError(name, self.all_joint_names) from None

    # ------------------------------------------------------------------ topology
    @cached_property
    def link_children(self) -> tuple[tuple[int, ...], ...]:
        """Children of each link, μ(i)."""
        kids: list[list[int]] = [[] for _ in range(self.n_links)]
        for i in range(1, self.n_links):
            kids[self.link_parents[i]].append(i)
        return tuple(tuple(k) for k in kids)

    @cached_property
    def link_depths(self) -> np.ndarray:
        """Number of joints between the root and each link ``(n_links,)``."""
        d = np.zeros(self.n_links, np.int64)
        for i in range(1, self.n_links):
            d[i] = d[self.link_parents[i]] + 1
        return frozen(d)

    @cached_property
    def depth_levels(self) -> tuple[np.ndarray, ...]:
        """Links grouped by depth; ``depth_levels[k]`` are the links ``k`` joints from the root."""
        return tuple(frozen(np.flatnonzero(self.link_depths == k)) for k in range(int(self.link_depths.max()) + 1))

    @cached_property
    def support_mask(self) -> np.ndarray:
        """``support_mask[i, k]``: link ``k`` is ``i`` or an ancestor of ``i``. ``(n_links, n_links)``."""
        m = np.zeros((self.n_links, self.n_links), bool)
        for i in range(self.n_links):
            m[i, i] = True
            p = self.link_parents[i]
            if p >= 0:
                m[i] |= m[p]
        return frozen(m)

    @cached_property
    def link_subtrees(self) -> tuple[np.ndarray, ...]:
        """Link ``i`` and all its descendants, per link (ν(i))."""
        return tuple(frozen(np.flatnonzero(self.support_mask[:, i])) for i in range(self.n_links))

    @cached_property
    def link_supports(self) -> tuple[np.ndarray, ...]:
        """Link ``i`` and all its ancestors, root first, per link."""
        return tuple(frozen(np.flatnonzero(self.support_mask[i])) for i in range(self.n_links))

    @cached_property
    def velocity_support(self) -> np.ndarray:
        """``(n_links, n_v)`` bool: v coordinate moves link (mimic joints count for their source)."""
        m = np.zeros((self.n_links, self.n_v), bool)
        src = self.velocity_source_joints
        for j in range(self.n_joints):
            s = src[j]
            if s < 0:
                continue
            vi, nv = self.joint_v_index[s], self.joint_nv[s]
            m[self.link_subtrees[j + 1], vi:vi + nv] = True
        return frozen(m)

    @cached_property
    def velocity_source_joints(self) -> np.ndarray:
        """Per joint, the independent joint whose v coordinates drive it (-1 for fixed)."""
        src = np.where(self.is_mimic, self.mimic_source, np.arange(self.n_joints))
        return frozen(np.where(self.is_fixed, -1, src))

    def path_joints(self, base: str, tip: str, independent: bool = True) -> tuple[str, ...]:
        """Joints on the path from ``base`` down to ``tip``, root first: the independent ones
        (mimic and fixed joints left out: those moving ``tip`` relative to ``base``), or with
        ``independent=False`` every one (as an SRDF ``<chain>`` lists them). ``base`` not above
        ``tip``: the joints below their common ancestor.

        Raises:
            UnknownLinkError: a name the model does not have.
        """
        tip_i, base_i = self.link_index(tip), self.link_index(base)
        on_path = self.support_mask[tip_i] & ~self.support_mask[base_i]
        joints = self.active_joints.tolist() if independent else range(self.n_joints)
        return tuple(self.all_joint_names[j] for j in joints if on_path[j + 1])

    @cached_property
    def leaf_links(self) -> tuple[str, ...]:
        """Links with no children."""
        return tuple(n for n, k in zip(self.link_names, self.link_children) if not k)

    # ------------------------------------------------------------------ configurations
    @cached_property
    def q_lower(self) -> np.ndarray:
        """Lower bound of every q coordinate ``(n_q,)`` (-inf where unbounded)."""
        return self._q_bounds[0]

    @cached_property
    def q_upper(self) -> np.ndarray:
        """Upper bound of every q coordinate ``(n_q,)`` (+inf where unbounded)."""
        return self._q_bounds[1]

    @cached_property
    def _q_bounds(self):
        lo, hi = np.full(self.n_q, -np.inf), np.full(self.n_q, np.inf)
        for j in self.active_joints:
            t, i = JointType(self.joint_types[j]), self.joint_q_index[j]
            if t in (JointType.REVOLUTE, JointType.PRISMATIC):
                lo[i], hi[i] = self.joint_lower[j], self.joint_upper[j]
            elif t == JointType.FLOATING:
                lo[i + 3:i + 7], hi[i + 3:i + 7] = -1.0, 1.0
        return frozen(lo), frozen(hi)

    @cached_property
    def quaternion_slices(self) -> tuple[slice, ...]:
        """q slices holding the (x, y, z, w) quaternions of floating joints."""
        return tuple(slice(self.joint_q_index[j] + 3, self.joint_q_index[j] + 7)
                     for j in self.active_joints if self.joint_types[j] == JointType.FLOATING)

    @cached_property
    def mimic_terms(self) -> tuple[tuple[int, int, float, float], ...]:
        """Per mimic joint ``(joint, q index of its source, multiplier, offset)``: its value is
        ``multiplier * q[index] + offset``."""
        return tuple((int(j), int(self.joint_q_index[self.mimic_source[j]]), float(self.mimic_multiplier[j]),
                      float(self.mimic_offset[j])) for j in np.flatnonzero(self.is_mimic))

    def check_q(self, q, argument: str = "q", single: bool = False) -> np.ndarray:
        """See :func:`robokin_ros.model.configuration.check_q`."""
        return configuration.check_q(self, q, argument, single)

    def home_configuration(self) -> np.ndarray:
        """See :func:`robokin_ros.model.configuration.home_configuration`."""
        return configuration.home_configuration(self)

    def random_configuration(self, n: int | None = None, rng=None) -> np.ndarray:
        """See :func:`robokin_ros.model.configuration.random_configuration`."""
        return configuration.random_configuration(self, n, rng)

    def clamp(self, q) -> np.ndarray:
        """See :func:`robokin_ros.model.configuration.clamp`."""
        return configuration.clamp(self, q)

    def within_limits(self, q, tolerance: float = 0.0) -> np.ndarray:
        """See :func:`robokin_ros.model.configuration.within_limits`."""
        return configuration.within_limits(self, q, tolerance)

    def q_from_dict(self, values: Mapping[str, float], base=None, strict: bool = False) -> np.ndarray:
        """See :func:`robokin_ros.model.configuration.q_from_dict`."""
        return configuration.q_from_dict(self, values, base, strict)

    def q_to_dict(self, q) -> dict[str, float]:
        """See :func:`robokin_ros.model.configuration.q_to_dict`."""
        return configuration.q_to_dict(self, q)

    def all_joint_values(self, q) -> dict[str, float]:
        """See :func:`robokin_ros.model.configuration.all_joint_values`."""
        return configuration.all_joint_values(self, q)

    # ------------------------------------------------------------------ equality
    def equals(self, other: RobotModel, atol: float = 1e-12) -> bool:
        """Same names, topology, joints, limits and inertials (floats to ``atol``); the robot's
        name and the load warnings of its document do not count."""
        if not isinstance(other, RobotModel):
            return False
        for f in dataclasses.fields(self):
            a, b = getattr(self, f.name), getattr(other, f.name)
            if f.name in ("name", "load_warnings"):
                continue
            if isinstance(a, np.ndarray):
                if a.shape != b.shape:
                    return False
                if a.dtype.kind == "f":
                    if not np.allclose(a, b, atol=atol, rtol=0, equal_nan=True):
                        return False
                elif not np.array_equal(a, b):
                    return False
            elif a != b:
                return False
        return True

    def __repr__(self) -> str:
        return (f"RobotModel({self.name!r}: {self.n_links} links, {self.n_joints} joints, "
                f"n_q={self.n_q}, n_v={self.n_v})")


def _looks_like_a_path(text: str) -> bool:
    """True for a one-line str that is not markup and names a file ending in ``.urdf`` / ``.xml``
    or one that exists (what a user means when passing a path to ``from_urdf``)."""
    short = text.strip()
    if not short or short.startswith("<") or "\n" in short or len(short) > 4096:
        return False
    return short.lower().endswith((".urdf", ".xml", ".xacro")) or os.path.isfile(short)
