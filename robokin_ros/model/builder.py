"""Builder operations in the spirit of MATLAB's RigidBodyTree; each returns a NEW model.

``add_body``, ``add_root``, ``remove_subtree``, ``replace_joint``, ``set_fixed_transform`` and
``rename_base`` take the model apart into per-link / per-joint records, edit them, and reassemble a
model in the loader's order (depth-first from the root, children in joint order), so
``model.to_urdf()`` of the result loads back to an equal model. New joints and links are appended
after the existing ones (``add_root``'s come first: they are the new root).

These are the only implementation; :class:`~robokin_ros.model.RobotModel`'s methods of the same
names are a facade over them. They take any :class:`~robokin_ros.model.model_data.EditableModel`
(the data they read, and a ``create`` of a :class:`~robokin_ros.model.fields.ModelFields` record
on its class) and return a model of the class they were given, so this module sits below the
model class and never imports it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from ..checks import is_real, rigid_transform
from ..errors import ModelError, NonFiniteError, ShapeError
from ..spatial import matrix_to_rpy, pose_from_xyz_rpy
from .elements import SCALAR_TYPES, JointType, mesh_visual
from .fields import ModelFields
from .model_data import Model, ModelData

_TYPES = {t.name.lower(): t for t in JointType}


@dataclasses.dataclass(frozen=True)
class JointLimits:
    """The limits of a joint (the URDF ``<limit>``; MATLAB's ``rigidBodyJoint.PositionLimits`` and
    the rates): what :func:`add_body` and :func:`replace_joint` take as ``limits=`` when a joint has
    more than position limits (``limits=(lower, upper)`` is short for ``JointLimits(lower, upper)``).

    Attributes:
        lower, upper: position limits [rad or m]; required for revolute and prismatic joints,
            refused (None) for the others.
        velocity, effort, acceleration, deceleration, jerk: magnitudes [rad/s or m/s, N m or N,
            rad/s² or m/s² twice, rad/s³ or m/s³]; None for unlimited.
    """

    lower: float | None = None
    upper: float | None = None
    velocity: float | None = None
    effort: float | None = None
    acceleration: float | None = None
    deceleration: float | None = None
    jerk: float | None = None


@dataclasses.dataclass
class _Link:
    name: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    has_inertial: bool
    mesh: str | None
    collisions: tuple = ()
    visuals: tuple = ()


@dataclasses.dataclass
class _Joint:
    name: str
    parent: str
    child: str
    type: JointType
    axis: np.ndarray
    origin: np.ndarray
    limits: JointLimits    # every field a float (±inf where none)
    mimic: str | None = None    # name of the joint followed (resolved to an independent one on assembly)
    multiplier: float = 1.0
    offset: float = 0.0


def _moved(geometries: tuple, X_inv: np.ndarray) -> tuple:
    """Geometry records re-expressed in a link frame moved by ``X`` (``X_inv`` its inverse)."""
    moved = []
    for g in geometries:
        T = X_inv @ pose_from_xyz_rpy(g.origin[:3], g.origin[3:])
        moved.append(g._replace(origin=tuple(T[:3, 3].tolist()) + tuple(matrix_to_rpy(T[:3, :3]).tolist())))
    return tuple(moved)


def _decompose(model: ModelData) -> tuple[list[_Link], list[_Joint]]:
    links = [_Link(name=n, mass=float(model.link_masses[i]), com=model.link_coms[i].copy(),
                   inertia=model.link_inertias[i].copy(), has_inertial=bool(model.link_has_inertial[i]),
                   mesh=model.link_meshes[i], collisions=model.link_collisions[i],
                   visuals=model.link_visuals[i] if model.link_visuals else ())
             for i, n in enumerate(model.link_names)]
    names = model.all_joint_names
    joints = [_Joint(name=names[j], parent=model.link_names[model.link_parents[j + 1]],
                     child=model.link_names[j + 1], type=JointType(model.joint_types[j]),
                     axis=model.joint_axes[j].copy(), origin=model.joint_origins[j].copy(),
                     limits=JointLimits(*(float(values[j]) for values in (
                         model.joint_lower, model.joint_upper, model.joint_velocity, model.joint_effort,
                         model.joint_acceleration, model.joint_deceleration, model.joint_jerk))),
                     mimic=names[model.mimic_source[j]] if model.mimic_source[j] >= 0 else None,
                     multiplier=float(model.mimic_multiplier[j]), offset=float(model.mimic_offset[j]))
              for j in range(model.n_joints)]
    return links, joints


def _assemble(model: Model, name: str, links: list[_Link], joints: list[_Joint]) -> Model:
    """Model of the records, made by ``model``'s class (its ``create``, see
    :class:`~robokin_ros.model.model_data.EditableModel`): depth-first order from the (single)
    root, mimic chains resolved."""
    by_child = {j.child: j for j in joints}
    kids: dict[str, list[str]] = {link.name: [] for link in links}
    for j in joints:
        kids[j.parent].append(j.child)
    root = next(link.name for link in links if link.name not in by_child)
    order, stack = [], [root]
    while stack:
        n = stack.pop()
        order.append(n)
        stack.extend(reversed(kids[n]))
    ordered = [by_child[c] for c in order[1:]]
    jindex = {j.name: k for k, j in enumerate(ordered)}
    link_of = {link.name: link for link in links}
    src = np.full(len(ordered), -1, np.int64)
    mult, offset = np.ones(len(ordered)), np.zeros(len(ordered))
    for k, j in enumerate(ordered):
        mult[k], offset[k], s, seen = j.multiplier, j.offset, j.mimic, {j.name}
        while s is not None:  # follow the chain: value = m1 (m2 source + o2) + o1
            if s in seen:
                raise ModelError(f"mimic joints form a cycle through {j.name!r}")
            seen.add(s)
            source = ordered[jindex[s]]
            if source.mimic is None:
                break
            mult[k], offset[k], s = mult[k] * source.multiplier, mult[k] * source.offset + offset[k], source.mimic
        if s is not None:
            if ordered[jindex[s]].type not in SCALAR_TYPES:
                raise ModelError(f"joint {j.name!r} mimics {s!r} of type {ordered[jindex[s]].type.name.lower()}; "
                                 "only revolute, continuous and prismatic joints can be mimicked")
            src[k] = jindex[s]
        else:
            mult[k], offset[k] = 1.0, 0.0
    ol = [link_of[n] for n in order]
    return type(model).create(ModelFields(
        name=name, link_names=order, joint_names=[j.name for j in ordered],
        joint_parents=[order.index(j.parent) for j in ordered], joint_types=[j.type for j in ordered],
        joint_axes=[j.axis for j in ordered], joint_origins=[j.origin for j in ordered],
        joint_lower=[j.limits.lower for j in ordered], joint_upper=[j.limits.upper for j in ordered],
        joint_velocity=[j.limits.velocity for j in ordered], joint_effort=[j.limits.effort for j in ordered],
        joint_acceleration=[j.limits.acceleration for j in ordered],
        joint_deceleration=[j.limits.deceleration for j in ordered],
        joint_jerk=[j.limits.jerk for j in ordered], mimic_source=src, mimic_multiplier=mult,
        mimic_offset=offset, link_masses=[link.mass for link in ol], link_coms=[link.com for link in ol],
        link_inertias=[link.inertia for link in ol], link_has_inertial=[link.has_inertial for link in ol],
        link_meshes=[link.mesh for link in ol], link_collisions=[link.collisions for link in ol],
        link_visuals=[link.visuals for link in ol]))


def submodel(model: Model, links, name: str | None = None) -> Model:
    """The model of some of ``model``'s links, with the joints between them.

    Args:
        links: link names forming a connected part of the tree (every link but the topmost one
            has its parent among them); the topmost is the new root.
        name: the new model's name (default: the model's).

    Raises:
        ModelError: ``links`` is empty, not connected, or holds a mimic joint whose source
            joint is outside it.
        UnknownLinkError: a name the model does not have.
    """
    keep = sorted({model.link_index(n) for n in links})
    if not keep:
        raise ModelError("submodel: no links given")
    kept = set(keep)
    roots = [i for i in keep if i == 0 or int(model.link_parents[i]) not in kept]
    if len(roots) != 1:
        raise ModelError(f"submodel: the links are not one connected part of the tree (tops: "
                         f"{[model.link_names[i] for i in roots][:8]})")
    joints = [i - 1 for i in keep if i != roots[0]]
    outside = sorted({model.all_joint_names[model.mimic_source[j]] for j in joints if model.mimic_source[j] >= 0}
                     - {model.all_joint_names[j] for j in joints})
    if outside:
        raise ModelError(f"submodel: mimic joints follow joints outside the links: {outside[:8]}")
    records_links, records_joints = _decompose(model)
    return _assemble(model, model.name if name is None else name, [records_links[i] for i in keep],
                     [records_joints[j] for j in joints])


def _joint_type(joint_type) -> JointType:
    if isinstance(joint_type, JointType):
        return joint_type
    t = _TYPES.get(str(joint_type).lower())
    if t is None:
        raise ModelError(f"unknown joint type {joint_type!r}; expected one of {', '.join(_TYPES)}")
    return t


def _make_joint(model: ModelData, name: str, parent: str, child: str, joint_type, *, origin=None,
                axis: Sequence[float] = (0.0, 0.0, 1.0), limits=None, mimic=None) -> _Joint:
    """A validated joint record (see :func:`add_body` for the arguments)."""
    t = _joint_type(joint_type)
    origin = np.eye(4) if origin is None else rigid_transform(origin, "origin")
    if t == JointType.FIXED:
        axis = np.array([0.0, 0.0, 1.0])
    else:
        axis = np.asarray(axis, dtype=float)
        if axis.shape != (3,):
            raise ShapeError("axis", "(3,)", axis.shape)
        if not np.all(np.isfinite(axis)):
            raise NonFiniteError("axis", np.flatnonzero(~np.isfinite(axis)).tolist())
        if np.linalg.norm(axis) < 1e-12:
            raise ModelError(f"joint {name!r} has a zero axis")
        axis = axis / np.linalg.norm(axis)
    limits = _joint_limits(name, t, limits)
    source, multiplier, offset = None, 1.0, 0.0
    if mimic is not None:
        source, *rest = mimic if isinstance(mimic, (tuple, list)) else (mimic,)
        if len(rest) > 2:
            raise ModelError(f"joint {name!r}: mimic must be source or (source, multiplier, offset), got {mimic!r}")
        multiplier, offset = (_real(x, f"joint {name!r} mimic {what}")
                              for x, what in zip(list(rest) + [1.0, 0.0][len(rest):], ("multiplier", "offset")))
        if t not in SCALAR_TYPES:
            raise ModelError(f"joint {name!r} of type {t.name.lower()} cannot mimic (only 1-DOF joints can)")
        if source != name:
            model.joint_index(source)  # raises UnknownJointError for an unknown source
    return _Joint(name=name, parent=parent, child=child, type=t, axis=axis, origin=origin,
                  limits=limits, mimic=source, multiplier=multiplier, offset=offset)


def _joint_limits(name: str, t: JointType, limits) -> JointLimits:
    """``limits`` (None, ``(lower, upper)`` or a :class:`JointLimits`) checked for a joint of type
    ``t``, as floats (±inf where none)."""
    if limits is None:
        given = JointLimits()
    elif isinstance(limits, JointLimits):
        given = limits
    else:
        try:
            given = JointLimits(*limits)
        except TypeError:
            given = None
        if given is None or len(limits) != 2:
            raise ModelError(f"joint {name!r}: limits must be (lower, upper) or a JointLimits, got {limits!r}")
    lower, upper = -np.inf, np.inf
    positions = given.lower is not None or given.upper is not None
    if t in (JointType.REVOLUTE, JointType.PRISMATIC):
        if given.lower is None or given.upper is None:
            raise ModelError(f"joint {name!r} of type {t.name.lower()} needs limits=(lower, upper)")
        lower = _real(given.lower, f"joint {name!r} lower limit")
        upper = _real(given.upper, f"joint {name!r} upper limit")
        if not (np.isfinite(lower) and np.isfinite(upper)) or lower > upper:
            raise ModelError(f"joint {name!r} has invalid limits ({lower:g}, {upper:g}): "
                             "they must be finite with lower <= upper")
    elif positions:
        raise ModelError(f"joint {name!r} of type {t.name.lower()} takes no position limits "
                         "(only revolute and prismatic joints do)")
    rates = []
    for key in ("velocity", "effort", "acceleration", "deceleration", "jerk"):
        value = getattr(given, key)
        value = np.inf if value is None else _real(value, f"joint {name!r} {key} limit")
        if not value >= 0:   # NaN too
            raise ModelError(f"joint {name!r} {key} limit must be >= 0 (inf: none), got {value:g}")
        rates.append(value)
    return JointLimits(lower, upper, *rates)


def _real(value, what: str) -> float:
    """``value`` as a float, refusing what is not a real number (a str, None, a sequence) with a
    :class:`ModelError` naming ``what``; bools are refused too (``True`` is no limit)."""
    if not is_real(value, finite=False):
        raise ModelError(f"{what} must be a real number, got {value!r}")
    return float(value)


def _inertial(inertial) -> tuple[float, np.ndarray, np.ndarray, bool]:
    if inertial is None:
        return 0.0, np.zeros(3), np.zeros((3, 3)), False
    try:
        mass, com, inertia = inertial
        com, inertia = np.asarray(com, float), np.asarray(inertia, float)
    except (TypeError, ValueError):
        raise ModelError("inertial must be (mass, com (3,), inertia (3, 3)) of real numbers, "
                         f"got {inertial!r}") from None
    mass = _real(mass, "inertial mass")
    if com.shape != (3,):
        raise ShapeError("inertial com", "(3,)", com.shape)
    if inertia.shape != (3, 3):
        raise ShapeError("inertial inertia", "(3, 3)", inertia.shape)
    if not (np.isfinite(mass) and np.all(np.isfinite(com)) and np.all(np.isfinite(inertia))):
        raise ModelError("inertial has non-finite entries")
    if mass < 0 or not np.allclose(inertia, inertia.T):
        raise ModelError(f"inertial must have mass >= 0 and a symmetric inertia, got mass {mass:g}")
    return float(mass), com, inertia, True


def add_body(model: Model, parent: str, joint_name: str, joint_type, child_name: str, *, origin=None,
             axis: Sequence[float] = (0.0, 0.0, 1.0), limits=None, mimic=None, inertial=None,
             mesh: str | None = None) -> Model:
    """A new model with link ``child_name`` hung from ``parent`` by joint ``joint_name``.

    Args:
        model: the robot.
        parent: existing link to attach to.
        joint_name, child_name: names of the new joint and link (must be new).
        joint_type: :class:`JointType` or its URDF name ("revolute", "fixed", ...).
        origin: ``(4, 4)`` pose of the joint (= child link) frame in the parent at q = 0 (default I).
        axis: ``(3,)`` joint axis in the joint frame (normalised; default z; ignored for fixed).
        limits: ``(lower, upper)`` [rad or m], or a :class:`JointLimits` with velocity, effort,
            acceleration, deceleration or jerk limits too; position limits are required for
            revolute and prismatic joints and refused for the others.
        mimic: ``source`` or ``(source, multiplier, offset)``: the joint follows ``source``.
        inertial: ``(mass [kg], com (3,) [m], inertia (3, 3) [kg m²] about the COM)`` in link axes.
        mesh: visual mesh path.

    Raises:
        UnknownLinkError: unknown parent. UnknownJointError: unknown mimic source.
        ModelError: a name already in use, bad type, limits, axis, inertial or mimic.
        ShapeError, NonFiniteError: malformed ``origin`` / ``axis`` / ``inertial``.
    """
    model.link_index(parent)
    if child_name in model.link_names:
        raise ModelError(f"link {child_name!r} already exists")
    if joint_name in model.all_joint_names:
        raise ModelError(f"joint {joint_name!r} already exists")
    links, joints = _decompose(model)
    joints.append(_make_joint(model, joint_name, parent, child_name, joint_type, origin=origin, axis=axis,
                              limits=limits, mimic=mimic))
    mass, com, inertia, has_inertial = _inertial(inertial)
    links.append(_Link(name=child_name, mass=mass, com=com, inertia=inertia, has_inertial=has_inertial, mesh=mesh,
                       visuals=(mesh_visual(mesh),) if mesh else ()))
    return _assemble(model, model.name, links, joints)


def add_root(model: Model, link_name: str, joint_name: str, joint_type) -> Model:
    """A new model whose root is a new link ``link_name``, joined to the old root by joint
    ``joint_name`` at the identity (the root joint MoveIt makes of an SRDF's virtual joint).

    Args:
        joint_type: ``"fixed"``, ``"floating"`` or ``"planar"`` (planar: in the new root's x-y plane).

    Raises:
        ModelError: a name already in use, or a joint type other than those three.
    """
    t = _joint_type(joint_type)
    if t not in (JointType.FIXED, JointType.FLOATING, JointType.PLANAR):
        raise ModelError(f"a root joint is fixed, floating or planar, got {t.name.lower()}")
    if link_name in model.link_names:
        raise ModelError(f"link {link_name!r} already exists")
    if joint_name in model.all_joint_names:
        raise ModelError(f"joint {joint_name!r} already exists")
    links, joints = _decompose(model)
    joints.insert(0, _make_joint(model, joint_name, link_name, model.root_link, t))
    mass, com, inertia, has_inertial = _inertial(None)
    links.insert(0, _Link(name=link_name, mass=mass, com=com, inertia=inertia, has_inertial=has_inertial, mesh=None))
    return _assemble(model, model.name, links, joints)


def remove_subtree(model: Model, link: str) -> Model:
    """A new model without ``link``, its descendants and the joints leading to them.

    Raises:
        UnknownLinkError: unknown link. ModelError: ``link`` is the root, or a remaining joint
            mimics a removed one.
    """
    i = model.link_index(link)
    if i == 0:
        raise ModelError(f"cannot remove the root link {link!r}")
    gone = {model.link_names[k] for k in model.link_subtrees[i]}
    links, joints = _decompose(model)
    removed = {j.name for j in joints if j.child in gone}
    kept = [j for j in joints if j.child not in gone]
    orphans = [j.name for j in kept if j.mimic in removed]
    if orphans:
        raise ModelError(f"joints {orphans} mimic joints that would be removed with {link!r}")
    return _assemble(model, model.name, [k for k in links if k.name not in gone], kept)


def replace_joint(model: Model, joint_name: str, joint_type, *, origin=None,
                  axis: Sequence[float] = (0.0, 0.0, 1.0), limits=None, mimic=None) -> Model:
    """A new model where joint ``joint_name`` is replaced by a new joint between the same links.

    The new joint keeps the name, the parent and child links and, unless ``origin`` is given, the
    old joint's origin; every other property comes from the arguments (as in :func:`add_body`:
    ``limits`` is ``(lower, upper)`` or a :class:`JointLimits`).
    Joints that mimicked the old joint now follow the new one (through its own mimic, if any).

    Raises:
        UnknownJointError: unknown joint or mimic source. ModelError: as in :func:`add_body`, or
            other joints mimic this one and the new type is not 1-DOF.
    """
    k = model.joint_index(joint_name)
    links, joints = _decompose(model)
    old = joints[k]
    joints[k] = _make_joint(model, joint_name, old.parent, old.child, joint_type,
                            origin=old.origin if origin is None else origin, axis=axis, limits=limits, mimic=mimic)
    return _assemble(model, model.name, links, joints)


def set_fixed_transform(model: Model, joint_name: str, parent_to_joint=None, joint_to_child=None) -> Model:
    """A new model with a joint's constant placements changed.

    Args:
        model: the robot.
        joint_name: the joint.
        parent_to_joint: ``(4, 4)`` new pose of the joint frame in its parent link (the URDF
            ``<origin>``). The child link and everything below it move with the joint.
        joint_to_child: ``(4, 4)`` ``X``, the pose of the child link frame in the joint frame. Our
            child link frame IS the joint frame, so the joint frame moves with it: the joint's
            origin becomes ``origin · X`` and its axis is re-expressed in the moved frame
            (``R_Xᵀ axis``). The bodies stay where they are: the child's inertial and its children's
            joint origins are re-expressed in the moved frame (``X⁻¹ ·``). The joint's motion is
            unchanged (and the child frame's pose becomes ``T · X`` for every q) only if the moved
            frame still lies on the joint's line of action, so ``X``'s translation must be parallel
            to the axis for revolute and continuous joints; floating and planar joints are refused
            (their coordinates would change meaning). Collision geometry is re-expressed too; visual
            origins are not modelled.

    Raises:
        UnknownJointError: unknown joint. ShapeError, NonFiniteError, ModelError: a malformed
            transform, or a ``joint_to_child`` that would change the joint's motion.
    """
    k = model.joint_index(joint_name)
    links, joints = _decompose(model)
    joint = joints[k]
    if parent_to_joint is not None:
        joint.origin = rigid_transform(parent_to_joint, "parent_to_joint")
    if joint_to_child is not None:
        X = rigid_transform(joint_to_child, "joint_to_child")
        R, p = X[:3, :3], X[:3, 3]
        if joint.type in (JointType.FLOATING, JointType.PLANAR):
            raise ModelError(f"joint {joint_name!r} is {joint.type.name.lower()}: moving its child frame would "
                             "change the meaning of its coordinates")
        if joint.type in (JointType.REVOLUTE, JointType.CONTINUOUS):
            off_axis = np.linalg.norm(p - joint.axis * (joint.axis @ p))
            if off_axis > 1e-12:
                raise ModelError(f"joint_to_child would move the rotation axis of joint {joint_name!r} by "
                                 f"{off_axis:.6g} m; its translation must be along the axis")
        X_inv = np.linalg.inv(X)
        joint.origin = joint.origin @ X
        joint.axis = R.T @ joint.axis if joint.type != JointType.FIXED else joint.axis
        child = next(link for link in links if link.name == joint.child)
        if child.has_inertial:
            child.com = R.T @ (child.com - p)
            child.inertia = R.T @ child.inertia @ R
        child.collisions = _moved(child.collisions, X_inv)   # collision and visual geometry stay where they are
        child.visuals = _moved(child.visuals, X_inv)
        for other in joints:
            if other.parent == joint.child:
                other.origin = X_inv @ other.origin
    return _assemble(model, model.name, links, joints)


def rename_base(model: Model, new_name: str) -> Model:
    """A new model whose root link is called ``new_name``.

    Raises:
        ModelError: ``new_name`` is already another link's name.
    """
    old = model.root_link
    if new_name != old and new_name in model.link_names:
        raise ModelError(f"link {new_name!r} already exists")
    links, joints = _decompose(model)
    links[0].name = new_name
    for j in joints:
        if j.parent == old:
            j.parent = new_name
    return _assemble(model, model.name, links, joints)

