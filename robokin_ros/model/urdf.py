"""URDF text -> the fields of a RobotModel: hardened parsing, validation that reports every problem.

Here the tree, the joints and the inertials; :mod:`.urdf_geometry` reads the visual and collision
geometry, :mod:`.urdf_report` collects the problems and warnings, :mod:`.urdf_writer` writes a
model back to URDF.

The reader accepts what urdfdom (robot_state_publisher's parser) accepts. It reads the elements
the model uses -- links, joints, inertials, the first visual mesh, the collision geometry --
straight from the hardened element tree (:mod:`robokin_ros.model.description`), in time linear
in the document's size. Kinematic and inertial problems (unknown links, cycles, non-finite or
overflowing numbers, zero axes, mimic cycles) reject the description with one
:class:`URDFError` listing every problem with its input line. Problems in parts the kinematics
do not use (visual and collision geometry, materials, textures, transmissions, ros2_control,
extension elements) never reject it: they become
:class:`LoadWarning` s on ``model.load_warnings``, each naming the element and its input line.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import numpy as np

from ..errors import URDFError, shorten
from ..spatial import rpy_to_matrix, transform
from .description import parse_document, read_description_file
from .elements import SCALAR_TYPES, JointType, first_overflowing_link
from .fields import ModelFields, has_control_characters
from .urdf_geometry import check_material, link_geometry
from .urdf_report import Report

__all__ = ["urdf_fields", "urdf_file_fields"]

_TYPES = {t.name.lower(): t for t in JointType}
_MOVING_AXIS_TYPES = ("revolute", "continuous", "prismatic", "planar")
#: URDF versions read (``<robot version=...>``; absent means 1.0): 1.2 (urdfdom 6) adds ``<capsule>``,
#: ``acceleration`` / ``deceleration`` / ``jerk`` limits and optional ``lower`` / ``upper``.
SUPPORTED_VERSIONS = ((1, 0), (1, 1), (1, 2))
#: The ``<limit>`` attributes URDF 1.2 adds (non-negative; absent = unlimited).
EXTENDED_LIMITS = ("acceleration", "deceleration", "jerk")
_MAX_REPORTED_CYCLES = 20


def _origin(report: Report, parent: ET.Element, what: str) -> list[float]:
    """``[x, y, z, roll, pitch, yaw]`` of ``parent``'s ``<origin>`` (zeros where absent or malformed)."""
    o = parent.find("origin")
    if o is None:
        return [0.0] * 6
    xyz = report.numbers(o, "xyz", 3, f"{what} origin xyz")
    rpy = report.numbers(o, "rpy", 3, f"{what} origin rpy")
    return (xyz or [0.0] * 3) + (rpy or [0.0] * 3)


def _poses(xyz_rpy: np.ndarray) -> np.ndarray:
    """``(n, 4, 4)`` poses of ``(n, 6)`` origins, in one vectorised step."""
    return transform(rpy_to_matrix(xyz_rpy[:, 3:]), xyz_rpy[:, :3])


def _check_joint_references(report: Report, root: ET.Element, joint_names: set[str]) -> None:
    """Warn about transmissions / ros2_control blocks naming joints the robot does not have."""
    for block in list(root.iter("transmission")) + list(root.iter("ros2_control")):
        for element in block.iter():
            if element is block or not (element.tag == "joint" or element.tag.endswith("Joint")):
                continue
            name = element.get("name")
            if name is not None and name not in joint_names:
                report.warn(element, f"in <{block.tag}> names joint {shorten(name)}, which the robot does not "
                                     "have; ignored")


# ---------------------------------------------------------------------------- tree
def _find_cycles(parent_of: dict[str, str], extra_edges: list[tuple[str, str]]) -> list[list[str]]:
    """Cycles of the parent map (each link one parent) and those closed by second-parent edges.

    Linear in the number of links (each link is walked once), plus the depth of each of at most
    :data:`_MAX_REPORTED_CYCLES` second-parent edges.
    """
    cycles = []
    state: dict[str, int] = {}   # 1 on the walk being made, 2 finished
    for start in parent_of:
        walk, cur = [], start
        while cur is not None and cur not in state:
            state[cur] = 1
            walk.append(cur)
            cur = parent_of.get(cur)
        if cur is not None and state[cur] == 1:       # came back onto this walk
            loop = walk[walk.index(cur):]
            cycles.append(list(reversed(loop)))
        for link in walk:
            state[link] = 2
    seen = {frozenset(c) for c in cycles}
    for parent, child in extra_edges[:_MAX_REPORTED_CYCLES]:
        walk, cur, steps = [parent], parent, 0
        while cur in parent_of and steps <= len(parent_of):
            cur = parent_of[cur]
            steps += 1
            if cur == child:
                loop = list(reversed(walk + [child]))
                if frozenset(loop) not in seen:
                    seen.add(frozenset(loop))
                    cycles.append(loop)
                break
            walk.append(cur)
    return cycles


def _check_names(report: Report, root: ET.Element) -> None:
    """A problem, with its line, for each robot, link or joint name holding a control character
    (NUL, newline, escape, ...: no frame id, log line or message can carry it)."""
    for el in (root, *root.findall("link"), *root.findall("joint")):
        name = el.get("name")
        if name and has_control_characters(name):
            report.problem(el, f"the {el.tag} name {shorten(name)} holds a control character")


def _read_tree(report: Report, root: ET.Element):
    """Links and joints of ``root`` checked; returns (link order, joint element per child link,
    link element per name). Problems go to ``report``."""
    link_elements: dict[str, ET.Element] = {}
    for el in root.findall("link"):
        n = el.get("name")
        if not n:
            report.problem(el, "a <link> has no name")
        elif n in link_elements:
            report.problem(el, f"duplicate link name {n!r}")
        else:
            link_elements[n] = el
    joint_names, joint_of_child, extra_edges = _read_edges(report, root, link_elements)
    _check_joint_references(report, root, joint_names)
    parent_of = {child: el.find("parent").get("link") for child, el in joint_of_child.items()}
    for cycle in _find_cycles(parent_of, extra_edges)[:_MAX_REPORTED_CYCLES]:
        report.problem(None, "joints form a cycle through links " + " -> ".join(cycle + [cycle[0]]))
    return _link_order(report, root, link_elements, parent_of), joint_of_child, link_elements


def _read_edges(report: Report, root: ET.Element, link_elements: dict[str, ET.Element]):
    """The joints' names, the joint element of each child link (document order), and the
    (parent, child) edges of joints that give a link a second parent."""
    joint_names: set[str] = set()
    joint_of_child: dict[str, ET.Element] = {}
    extra_edges: list[tuple[str, str]] = []
    for el in root.findall("joint"):
        n = el.get("name")
        if not n:
            report.problem(el, "a <joint> has no name")
            continue
        if n in joint_names:
            report.problem(el, f"duplicate joint name {n!r}")
            continue
        joint_names.add(n)
        t = el.get("type")
        if t not in _TYPES:
            report.problem(el, f"joint {n!r} has unknown type {shorten(t) if t else t!r} "
                               f"(expected one of {', '.join(_TYPES)})")
        parent, child = (_joint_end(report, el, role, link_elements) for role in ("parent", "child"))
        if parent is None or child is None:
            continue
        if child in joint_of_child:
            first = joint_of_child[child].get('name')
            report.problem(el, f"link {child!r} has two parents: joints {first!r} and {n!r}")
            extra_edges.append((parent, child))
            continue
        joint_of_child[child] = el
    return joint_names, joint_of_child, extra_edges


def _joint_end(report: Report, el: ET.Element, role: str, link_elements: dict[str, ET.Element]) -> str | None:
    """The link a joint names as its ``role`` (``"parent"`` or ``"child"``), None if absent or unknown."""
    e = el.find(role)
    link = None if e is None else e.get("link")
    if link is None:
        report.problem(el, f"joint {el.get('name')!r} has no {role} link")
    elif link not in link_elements:
        report.problem(e, f"joint {el.get('name')!r} names {role} link {shorten(link)}, which does not exist")
        return None
    return link


def _link_order(report: Report, root: ET.Element, link_elements: dict[str, ET.Element],
                parent_of: dict[str, str]) -> list[str]:
    """The links depth first from the one root, children in document order (the q order); a
    problem if there is not exactly one root or a link is not connected to it."""
    kids: dict[str, list[str]] = {n: [] for n in link_elements}
    for child, parent in parent_of.items():
        kids[parent].append(child)
    roots = [n for n in link_elements if n not in parent_of]
    order: list[str] = []
    if not link_elements:
        report.problem(root, "the robot has no links")
    elif not roots:
        report.problem(root, "the robot has no root link (every link is the child of a joint)")
    elif len(roots) > 1:
        shown = roots if len(roots) <= 10 else roots[:10] + [f"... {len(roots) - 10} more"]
        report.problem(root, f"the robot has {len(roots)} root links {shown}; a URDF must be one tree")
    else:
        stack = [roots[0]]
        while stack:
            n = stack.pop()
            order.append(n)
            stack.extend(reversed(kids[n]))
        if len(order) < len(link_elements):
            placed = set(order)
            lost = [n for n in link_elements if n not in placed]
            shown = lost if len(lost) <= 10 else lost[:10] + [f"... {len(lost) - 10} more"]
            report.problem(None, f"links {shown} are not connected to the root {roots[0]!r}")
    return order


def _check_version(report: Report, root: ET.Element) -> None:
    """A problem unless ``<robot version=...>`` is absent or one of :data:`SUPPORTED_VERSIONS`
    (urdfdom refuses versions it does not know, as they may change what elements mean)."""
    text = root.get("version")
    if text is None:
        return
    parts = text.strip().split(".")
    version = tuple(int(p) for p in parts) if len(parts) == 2 and all(p.isdigit() for p in parts) else None
    if version not in SUPPORTED_VERSIONS:
        known = ", ".join(f"{a}.{b}" for a, b in SUPPORTED_VERSIONS)
        report.problem(root, f"<robot> version = {shorten(text)} is not a URDF version robokin reads ({known})")


# ---------------------------------------------------------------------------- joints and links
def _read_joint(report: Report, el: ET.Element, jindex: dict[str, int]):
    """Type, origin, axis, limits and raw mimic (source index, multiplier, offset) of one joint."""
    what = f"joint {el.get('name')!r}"
    type_name = el.get("type")
    t = _TYPES.get(type_name, JointType.FIXED)
    origin = _origin(report, el, what)
    axis = (1.0, 0.0, 0.0)
    if type_name in _MOVING_AXIS_TYPES:
        axis = _read_axis(report, el.find("axis"), what) or axis
    elif t in (JointType.FIXED, JointType.FLOATING):
        axis = (0.0, 0.0, 1.0)
    return t, origin, axis, _read_limits(report, el, what, t), _read_mimic(report, el, what, t, jindex)


def _read_axis(report: Report, ax: ET.Element | None, what: str) -> tuple[float, float, float] | None:
    """The unit axis of a moving joint's ``<axis>``; None (the default x) if absent or rejected."""
    if ax is None:
        return None
    if ax.get("xyz") is None:
        report.problem(ax, f"{what} has an <axis> without xyz, which urdfdom reads as a zero axis")
        return None
    values = report.numbers(ax, "xyz", 3, f"{what} axis")
    if values is None:
        return None
    scale = max(map(abs, values))
    if scale == 0.0:
        report.problem(ax, f"{what} has a zero axis")
        return None
    unit = [v / scale for v in values]   # scaling first: no overflow for huge components
    norm = math.sqrt(sum(u * u for u in unit))
    return tuple(u / norm for u in unit)


def _read_limits(report: Report, el: ET.Element, what: str, t: JointType) -> tuple[float, ...]:
    """``(lower, upper, velocity, effort, acceleration, deceleration, jerk)`` of a joint's ``<limit>``
    (±inf where absent; position limits only for revolute and prismatic joints)."""
    lower, upper = -np.inf, np.inf
    lim = el.find("limit")
    lo = report.number(lim, "lower", f"{what} limit lower", 0.0)
    hi = report.number(lim, "upper", f"{what} limit upper", 0.0)
    magnitudes = []    # velocity, effort, then URDF 1.2's acceleration, deceleration, jerk: inf if absent
    for key in ("velocity", "effort") + EXTENDED_LIMITS:
        value = report.number(lim, key, f"{what} limit {key}", np.inf, allow_inf=True)
        if key in EXTENDED_LIMITS and value < 0:
            report.problem(lim, f"{what} limit {key} = {value:g} is negative")
        magnitudes.append(value)
    if t in (JointType.REVOLUTE, JointType.PRISMATIC):
        if lim is None:
            report.problem(el, f"{what} of type {el.get('type')} has no <limit>")
        else:
            lower, upper = lo, hi
            if lower > upper:
                report.warn(lim, f"lower {lower:g} > upper {upper:g} (urdfdom keeps them so, which no "
                                 f"configuration satisfies); swapped to [{upper:g}, {lower:g}]")
                lower, upper = upper, lower
    return (lower, upper, *magnitudes)


def _read_mimic(report: Report, el: ET.Element, what: str, t: JointType, jindex: dict[str, int]):
    """``(source joint index, multiplier, offset)`` of a joint's ``<mimic>``, or None."""
    mim = el.find("mimic")
    if mim is None:
        return None
    mult = report.number(mim, "multiplier", f"{what} mimic multiplier", 1.0)
    offset = report.number(mim, "offset", f"{what} mimic offset", 0.0)
    target = mim.get("joint")
    if t == JointType.FIXED:
        return None   # urdfdom ignores <mimic> on a fixed joint (talos_reduced has such joints); so do we
    if target not in jindex:
        report.warn(mim, f"{what} mimics joint {shorten(target) if target else target!r}, which does not exist "
                         "(urdfdom and robot_state_publisher accept this); the joint is independent")
        return None
    if t not in SCALAR_TYPES:
        report.problem(mim, f"{what} of type {el.get('type')} cannot mimic (only 1-DOF joints can)")
        return None
    return jindex[target], mult, offset


def _resolve_mimics(report: Report, joint_elements, mimic, types):
    """Mimic chains resolved to independent sources: v = m1 (m2 s + o2) + o1. Linear time."""
    n_j = len(types)
    src = np.full(n_j, -1, np.int64)
    mult, offset = np.ones(n_j), np.zeros(n_j)
    state = np.zeros(n_j, np.int8)   # 0 not resolved, 1 resolving, 2 resolved
    names = [el.get("name") for el in joint_elements]
    for start in range(n_j):
        walk, k = [], start
        while k >= 0 and state[k] == 0 and mimic[k] is not None:
            state[k] = 1
            walk.append(k)
            k = mimic[k][0]
        if k >= 0 and state[k] == 1:
            loop = walk[walk.index(k):] + [k]
            report.problem(joint_elements[k], "mimic joints form a cycle: " + " -> ".join(names[i] for i in loop))
            for i in walk:
                state[i] = 2
            continue
        for i in reversed(walk):   # the tail of the walk is resolved (or independent) already
            s, m, o = mimic[i]
            if src[s] >= 0:
                with np.errstate(over="ignore", invalid="ignore"):
                    m, o, s = m * mult[s], m * offset[s] + o, src[s]
            src[i], mult[i], offset[i] = s, m, o
            state[i] = 2
            if not (math.isfinite(m) and math.isfinite(o)):
                report.problem(joint_elements[i], f"joint {names[i]!r}: mimic chain multiplier/offset overflow "
                                                  f"({m:g}, {o:g})")
        state[start] = 2
    for k in range(n_j):
        s = src[k]
        if s >= 0 and JointType(types[s]) not in SCALAR_TYPES:
            report.problem(joint_elements[k], f"joint {names[k]!r} mimics {names[s]!r} of type "
                                              f"{JointType(types[s]).name.lower()}; only 1-DOF joints can be mimicked")
    return src, mult, offset


def _read_inertial(report: Report, link: ET.Element, name: str):
    """``(mass, [x, y, z, roll, pitch, yaw] of the inertial frame, [ixx, ixy, ixz, iyy, iyz, izz])``,
    or None without ``<inertial>``."""
    inertial = link.find("inertial")
    if inertial is None:
        return None
    what = f"link {name!r} inertial"
    origin = _origin(report, inertial, what)
    m = inertial.find("mass")
    if m is None or m.get("value") is None:
        report.problem(inertial, f"{what} has no mass")
        mass = 0.0
    else:
        mass = report.number(m, "value", f"{what} mass", 0.0)
        if mass < 0:
            report.problem(m, f"{what} mass {mass:g} is negative")
    ie = inertial.find("inertia")
    moments = [report.number(ie, key, f"{what} {key}", 0.0) for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")]
    return mass, origin, moments


def _inertias(report: Report, order, link_elements, moments: np.ndarray, rotations: np.ndarray) -> np.ndarray:
    """Inertia tensors ``(n, 3, 3)`` about the COM in link axes: R I R^T of each inertial frame."""
    ixx, ixy, ixz, iyy, iyz, izz = moments.T
    I = np.stack([np.stack([ixx, ixy, ixz], -1), np.stack([ixy, iyy, iyz], -1), np.stack([ixz, iyz, izz], -1)], -2)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.einsum("nij,njk,nlk->nil", rotations, I, rotations)
    for i in np.flatnonzero(~np.all(np.isfinite(out), axis=(1, 2))):
        name = order[i]
        report.problem(link_elements[name].find("inertial"),
                       f"link {name!r} inertial inertia overflows when rotated into the link frame")
    return out


def _check_placements(report: Report, order, parents, origins, joint_elements) -> None:
    """Reject finite numbers whose composition overflows: world poses at q = 0 must be finite."""
    i = first_overflowing_link(parents, origins)
    if i is not None:   # the first in topological order is where the overflow starts
        report.problem(joint_elements[i - 1], f"the placement of link {order[i]!r} overflows: the "
                       f"origins from the root to joint {joint_elements[i - 1].get('name')!r} "
                       "compose to a non-finite pose")


def urdf_fields(xml, max_bytes: int | None = None) -> ModelFields:
    """The fields of the model of a URDF document (:meth:`RobotModel.from_urdf` makes the model
    of them with :meth:`RobotModel.create`).

    Args:
        xml: URDF text (str, or UTF-8 bytes).
        max_bytes: size cap in bytes (default 64 MiB, or ``ROBOKIN_MAX_DESCRIPTION_BYTES``).

    Raises:
        URDFError: listing every problem found, each with its input line where known.
    """
    doc = parse_document(xml, max_bytes)
    root = doc.root
    if root.tag != "robot":
        raise URDFError(f"the root element is <{root.tag[:60]}>, expected <robot>")
    report = Report(doc)
    _check_version(report, root)
    _check_names(report, root)
    order, joint_of_child, link_elements = _read_tree(report, root)
    joint_elements = [joint_of_child[child] for child in order[1:]]
    jindex = {el.get("name"): k for k, el in enumerate(joint_elements)}
    n_j = len(joint_elements)
    types, origins, axes, limits, mimic = [], [], [], [], []
    for el in joint_elements:
        t, origin, axis, limit, mim = _read_joint(report, el, jindex)
        types.append(t), origins.append(origin), axes.append(axis), limits.append(limit), mimic.append(mim)
    types = np.array(types, np.int64)
    origins = _poses(np.array(origins, float).reshape(n_j, 6))
    axes, limits = np.array(axes, float).reshape(n_j, 3), np.array(limits, float).reshape(n_j, 7)
    if report.problems:   # unknown joint types and bad numbers make the rest meaningless
        raise URDFError(report.problems)
    src, mult, offset = _resolve_mimics(report, joint_elements, mimic, types)
    index = {n: i for i, n in enumerate(order)}
    parents = [index[joint_of_child[child].find("parent").get("link")] for child in order[1:]]
    _check_placements(report, order, parents, origins, joint_elements)
    n_l = len(order)
    masses, frames, moments = np.zeros(n_l), np.zeros((n_l, 6)), np.zeros((n_l, 6))
    has_inertial = np.zeros(n_l, bool)
    for i, name in enumerate(order):
        inertial = _read_inertial(report, link_elements[name], name)
        if inertial is not None:
            masses[i], frames[i], moments[i] = inertial
            has_inertial[i] = True
    coms = frames[:, :3].copy()
    inertias = _inertias(report, order, link_elements, moments, rpy_to_matrix(frames[:, 3:]))
    meshes, collisions, visuals = link_geometry(report, link_elements)
    for material in root.findall("material"):
        check_material(report, material, f"robot {root.get('name')!r}")
    if report.problems:
        raise URDFError(report.problems)
    return ModelFields(
        name=root.get("name") or "robot", link_names=order,
        joint_names=[el.get("name") for el in joint_elements],
        joint_parents=parents, joint_types=types, joint_axes=axes,
        joint_origins=origins, joint_lower=limits[:, 0], joint_upper=limits[:, 1], joint_velocity=limits[:, 2],
        joint_effort=limits[:, 3], joint_acceleration=limits[:, 4], joint_deceleration=limits[:, 5],
        joint_jerk=limits[:, 6], mimic_source=src, mimic_multiplier=mult, mimic_offset=offset,
        link_masses=masses, link_coms=coms, link_inertias=inertias, link_has_inertial=has_inertial,
        link_meshes=[meshes.get(name) for name in order],
        link_collisions=[tuple(collisions.get(name, ())) for name in order], load_warnings=tuple(report.warnings),
        link_visuals=[tuple(visuals.get(name, ())) for name in order])


def urdf_file_fields(path, max_bytes: int | None = None) -> ModelFields:
    """:func:`urdf_fields` of a URDF file, read with the size cap. Raises :class:`URDFError`
    (also for an unreadable, oversized or non-UTF-8 file)."""
    return urdf_fields(read_description_file(path, max_bytes), max_bytes)
