"""URDF text <-> the fields of a RobotModel: hardened parsing, validation that reports every problem, writing.

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

from ..errors import LoadWarning, URDFError, shorten
from ..spatial import matrix_to_rpy, rpy_to_matrix, transform
from .description import XMLDocument, parse_document, read_description_file
from .elements import SCALAR_TYPES, CollisionGeometry, JointType, first_overflowing_link
from .fields import ModelFields

__all__ = ["model_to_urdf", "urdf_fields", "urdf_file_fields"]

_TYPES = {t.name.lower(): t for t in JointType}
_MOVING_AXIS_TYPES = ("revolute", "continuous", "prismatic", "planar")
_SHAPES = ("box", "cylinder", "sphere", "mesh", "capsule")
#: URDF versions read (``<robot version=...>``; absent means 1.0): 1.2 (urdfdom 6) adds ``<capsule>``,
#: ``acceleration`` / ``deceleration`` / ``jerk`` limits and optional ``lower`` / ``upper``.
SUPPORTED_VERSIONS = ((1, 0), (1, 1), (1, 2))
#: The ``<limit>`` attributes URDF 1.2 adds (non-negative; absent = unlimited).
EXTENDED_LIMITS = ("acceleration", "deceleration", "jerk")
#: [m, or a mesh scale] Largest primitive dimension or mesh scale read; a larger geometry is a unit
#: or typing error (1e200 m spheres were seen) and is ignored with a warning.
MAX_PRIMITIVE_SIZE = 1e4
_MAX_REPORTED_CYCLES = 20


class _Report:
    """Problems (reject) and warnings (keep loading) found in one document, with input lines."""

    def __init__(self, doc: XMLDocument):
        self.doc = doc
        self.problems: list[str] = []
        self.warnings: list[LoadWarning] = []

    def problem(self, element: ET.Element | None, message: str) -> None:
        line = None if element is None else self.doc.line(element)
        self.problems.append(message if line is None else f"line {line}: {message}")

    def warn(self, element: ET.Element, message: str) -> None:
        name = element.get("name")
        label = f"<{element.tag}>" if name is None else f"<{element.tag} name={shorten(name)}>"
        self.warnings.append(LoadWarning(self.doc.line(element), label, message))

    def numbers(self, element: ET.Element | None, key: str, n: int, what: str, default=0.0,
                warn_only: bool = False) -> list[float] | None:
        """``n`` finite numbers from attribute ``key``; ``default`` filled if absent.

        Returns None (after a problem or warning) when the attribute is malformed.
        """
        text = None if element is None else element.get(key)
        if text is None:
            return [default] * n
        tokens = text.split()
        if len(tokens) != n:
            complaint = f"{what} = {shorten(text)} must have {n} number{'s' if n > 1 else ''}"
        else:
            try:
                values = [float(t) for t in tokens]
            except ValueError:
                complaint = f"{what} = {shorten(text)} is not {n} numbers" if n > 1 else \
                    f"{what} = {shorten(text)} is not a number"
            else:
                if all(map(math.isfinite, values)):
                    return values
                complaint = f"{what} = {shorten(text)} is not finite"
        if warn_only:
            self.warn(element, complaint)
        else:
            self.problem(element, complaint)
        return None

    def number(self, element: ET.Element | None, key: str, what: str, default=None, allow_inf=False):
        """One finite number from attribute ``key`` (``"inf"`` too if ``allow_inf``), else ``default``."""
        text = None if element is None else element.get(key)
        if text is None:
            return default
        try:   # the common case, fast
            value = float(text)
        except ValueError:
            pass
        else:
            if math.isfinite(value) or (allow_inf and value == math.inf):
                return value
        values = self.numbers(element, key, 1, what)
        return default if values is None else values[0]


def _origin(report: _Report, parent: ET.Element, what: str) -> list[float]:
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


# ---------------------------------------------------------------------------- parts the model ignores
def _check_geometry_holder(report: _Report, holder: ET.Element, owner: str) -> CollisionGeometry | None:
    """Warnings for a ``<visual>``/``<collision>``; returns its geometry (None if unusable)."""
    geometry = holder.find("geometry")
    if geometry is None:
        report.warn(holder, f"of {owner} has no <geometry>; ignored")
        return None
    shapes = [child for child in geometry if child.tag in _SHAPES]
    if not shapes:
        report.warn(geometry, f"of {owner} has no shape ({', '.join(_SHAPES)}); ignored")
        return None
    if len(shapes) > 1:
        report.warn(geometry, f"of {owner} has {len(shapes)} shapes; the first (<{shapes[0].tag}>) is used, "
                              "as urdfdom does")
    shape = shapes[0]
    required = {"box": ("size",), "cylinder": ("radius", "length"), "capsule": ("radius", "length"),
                "sphere": ("radius",), "mesh": ("filename",)}[shape.tag]
    missing = False
    for key in required:
        if shape.get(key) is None:
            report.warn(shape, f"of {owner} has no {key}")
            missing = True
    size = None
    if shape.tag == "box":
        size = report.numbers(shape, "size", 3, f"<box> size of {owner}", warn_only=True)
        if size is not None and any(v < 0 for v in size):
            report.warn(shape, f"of {owner} has a negative size {size}; ignored")
            return None
    elif shape.tag == "mesh":
        size = [1.0, 1.0, 1.0]
        if shape.get("scale") is not None:
            if len(shape.get("scale").split()) == 1:
                report.warn(shape, f"of {owner} has scale = {shorten(shape.get('scale'))}, one number; "
                                   "read as a uniform scale")
                size = report.numbers(shape, "scale", 1, f"<mesh> scale of {owner}", warn_only=True)
                size = None if size is None else size * 3
            else:
                size = report.numbers(shape, "scale", 3, f"<mesh> scale of {owner}", warn_only=True)
    elif not missing:
        size = []
        for key in required:
            value = report.numbers(shape, key, 1, f"<{shape.tag}> {key} of {owner}", warn_only=True)
            if value is None:
                return None
            size += value
        if any(v < 0 for v in size):
            report.warn(shape, f"of {owner} has a negative size {size}; ignored")
            return None
    if missing or size is None:
        return None
    largest = max((abs(v) for v in size), default=0.0)
    if largest > MAX_PRIMITIVE_SIZE:
        what = "a scale" if shape.tag == "mesh" else "a size"
        report.warn(shape, f"of {owner} has {what} of {largest:g}, above {MAX_PRIMITIVE_SIZE:g} "
                           "(no robot part is this large: a unit or typing error); ignored")
        return None
    o = holder.find("origin")
    origin = [0.0] * 6
    if o is not None:
        xyz = report.numbers(o, "xyz", 3, f"<{holder.tag}> origin xyz of {owner}", warn_only=True)
        rpy = report.numbers(o, "rpy", 3, f"<{holder.tag}> origin rpy of {owner}", warn_only=True)
        if xyz is None or rpy is None:
            return None
        origin = xyz + rpy
    return CollisionGeometry(shape.tag, tuple(size), tuple(origin), shape.get("filename") or "")


def _check_material(report: _Report, material: ET.Element, owner: str) -> None:
    if not material.get("name"):
        report.warn(material, f"of {owner} has no name (urdfdom skips such a visual); ignored")
    texture = material.find("texture")
    if texture is not None and not texture.get("filename"):
        report.warn(texture, f"of {owner} has no filename; ignored")
    color = material.find("color")
    if color is not None:
        report.numbers(color, "rgba", 4, f"<color> rgba of {owner}", warn_only=True)


def _check_joint_references(report: _Report, root: ET.Element, joint_names: set[str]) -> None:
    """Warn about transmissions / ros2_control blocks naming joints the robot does not have."""
    for block in list(root.iter("transmission")) + list(root.iter("ros2_control")):
        for element in block.iter():
            if element is block or not (element.tag == "joint" or element.tag.endswith("Joint")):
                continue
            name = element.get("name")
            if name is not None and name not in joint_names:
                report.warn(element, f"in <{block.tag}> names joint {shorten(name)}, which the robot does not "
                                     "have; ignored")


def _link_geometry_and_warnings(report: _Report, link_elements: dict[str, ET.Element]):
    """(first visual mesh per link, collision geometries per link, visual geometries per link),
    with warnings."""
    meshes, collisions, visuals = {}, {}, {}
    for name, link in link_elements.items():
        owner = f"link {name!r}"
        for holder in link:
            if holder.tag not in ("visual", "collision"):
                continue
            geometry = _check_geometry_holder(report, holder, owner)
            if holder.tag == "collision":
                if geometry is not None:
                    collisions.setdefault(name, []).append(geometry)
                continue
            if geometry is not None:
                visuals.setdefault(name, []).append(geometry)
                if geometry.shape == "mesh" and name not in meshes:
                    meshes[name] = geometry.filename
            material = holder.find("material")
            if material is not None:
                _check_material(report, material, owner)
    return meshes, collisions, visuals


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


def _read_tree(report: _Report, root: ET.Element):
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
    joint_names: set[str] = set()
    joint_of_child: dict[str, ET.Element] = {}
    parent_of: dict[str, str] = {}
    kids: dict[str, list[str]] = {n: [] for n in link_elements}
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
        ends = {}
        for role in ("parent", "child"):
            e = el.find(role)
            ends[role] = None if e is None else e.get("link")
            if ends[role] is None:
                report.problem(el, f"joint {n!r} has no {role} link")
            elif ends[role] not in link_elements:
                report.problem(e, f"joint {n!r} names {role} link {shorten(ends[role])}, which does not exist")
                ends[role] = None
        parent, child = ends["parent"], ends["child"]
        if parent is None or child is None:
            continue
        if child in joint_of_child:
            first = joint_of_child[child].get('name')
            report.problem(el, f"link {child!r} has two parents: joints {first!r} and {n!r}")
            extra_edges.append((parent, child))
            continue
        joint_of_child[child] = el
        parent_of[child] = parent
        kids[parent].append(child)
    _check_joint_references(report, root, joint_names)
    for cycle in _find_cycles(parent_of, extra_edges)[:_MAX_REPORTED_CYCLES]:
        report.problem(None, "joints form a cycle through links " + " -> ".join(cycle + [cycle[0]]))
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
        # Depth first, children in document order: the q order.
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
    return order, joint_of_child, link_elements


def _check_version(report: _Report, root: ET.Element) -> None:
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
def _read_joint(report: _Report, el: ET.Element, jindex: dict[str, int]):
    """Type, origin, axis, limits and raw mimic (source name, multiplier, offset) of one joint."""
    n = el.get("name")
    what = f"joint {n!r}"
    type_name = el.get("type")
    t = _TYPES.get(type_name, JointType.FIXED)
    origin = _origin(report, el, what)
    axis = (1.0, 0.0, 0.0)
    if type_name in _MOVING_AXIS_TYPES:
        ax = el.find("axis")
        if ax is not None:
            if ax.get("xyz") is None:
                report.problem(ax, f"{what} has an <axis> without xyz, which urdfdom reads as a zero axis")
            else:
                values = report.numbers(ax, "xyz", 3, f"{what} axis")
                if values is not None:
                    scale = max(map(abs, values))
                    if scale == 0.0:
                        report.problem(ax, f"{what} has a zero axis")
                    else:
                        unit = [v / scale for v in values]   # scaling first: no overflow for huge components
                        norm = math.sqrt(sum(u * u for u in unit))
                        axis = tuple(u / norm for u in unit)
    elif t in (JointType.FIXED, JointType.FLOATING):
        axis = (0.0, 0.0, 1.0)
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
            report.problem(el, f"{what} of type {type_name} has no <limit>")
        else:
            lower, upper = lo, hi
            if lower > upper:
                report.warn(lim, f"lower {lower:g} > upper {upper:g} (urdfdom keeps them so, which no "
                                 f"configuration satisfies); swapped to [{upper:g}, {lower:g}]")
                lower, upper = upper, lower
    mimic = None
    mim = el.find("mimic")
    if mim is not None:
        mult = report.number(mim, "multiplier", f"{what} mimic multiplier", 1.0)
        offset = report.number(mim, "offset", f"{what} mimic offset", 0.0)
        target = mim.get("joint")
        if t == JointType.FIXED:
            pass  # urdfdom ignores <mimic> on a fixed joint (talos_reduced has such joints); so do we
        elif target not in jindex:
            report.warn(mim, f"{what} mimics joint {shorten(target) if target else target!r}, which does not exist "
                             "(urdfdom and robot_state_publisher accept this); the joint is independent")
        elif t not in SCALAR_TYPES:
            report.problem(mim, f"{what} of type {type_name} cannot mimic (only 1-DOF joints can)")
        else:
            mimic = (jindex[target], mult, offset)
    return t, origin, axis, (lower, upper, *magnitudes), mimic


def _resolve_mimics(report: _Report, joint_elements, mimic, types):
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


def _read_inertial(report: _Report, link: ET.Element, name: str):
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


def _inertias(report: _Report, order, link_elements, moments: np.ndarray, rotations: np.ndarray) -> np.ndarray:
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


def _check_placements(report: _Report, order, parents, origins, joint_elements) -> None:
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
    report = _Report(doc)
    _check_version(report, root)
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
    meshes, collisions, visuals = _link_geometry_and_warnings(report, link_elements)
    for material in root.findall("material"):
        _check_material(report, material, f"robot {root.get('name')!r}")
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


def _fmt(values) -> str:
    return " ".join(repr(float(v)) for v in np.ravel(values))


def _write_geometry(holder: ET.Element, g) -> None:
    """``<origin>`` and ``<geometry>`` of a ``<visual>`` or ``<collision>`` from its record."""
    ET.SubElement(holder, "origin", xyz=_fmt(g.origin[:3]), rpy=_fmt(g.origin[3:]))
    geometry = ET.SubElement(holder, "geometry")
    if g.shape == "box":
        ET.SubElement(geometry, "box", size=_fmt(g.size))
    elif g.shape == "sphere":
        ET.SubElement(geometry, "sphere", radius=repr(float(g.size[0])))
    elif g.shape == "mesh":
        ET.SubElement(geometry, "mesh", filename=g.filename, scale=_fmt(g.size))
    else:
        ET.SubElement(geometry, g.shape, radius=repr(float(g.size[0])), length=repr(float(g.size[1])))


def model_to_urdf(model) -> str:
    """URDF text of ``model``; :meth:`RobotModel.from_urdf` of it gives an equal model.

    Mimic joints are written against their (resolved) independent source. The document says
    ``version="1.2"`` only when it uses what 1.2 adds (capsules, acceleration / deceleration / jerk
    limits), so parsers that know only 1.0 still read every other model.
    """
    root = ET.Element("robot", name=model.name)
    extended = np.isfinite(np.concatenate([model.joint_acceleration, model.joint_deceleration, model.joint_jerk]))
    capsules = any(g.shape == "capsule" for geometries in (*model.link_collisions, *model.link_visuals)
                   for g in geometries)
    if extended.any() or capsules:
        root.set("version", "1.2")
    for i, name in enumerate(model.link_names):
        link = ET.SubElement(root, "link", name=name)
        if model.link_has_inertial[i]:
            inertial = ET.SubElement(link, "inertial")
            ET.SubElement(inertial, "origin", xyz=_fmt(model.link_coms[i]), rpy="0.0 0.0 0.0")
            ET.SubElement(inertial, "mass", value=repr(float(model.link_masses[i])))
            I = model.link_inertias[i]
            ET.SubElement(inertial, "inertia", ixx=repr(float(I[0, 0])), ixy=repr(float(I[0, 1])),
                          ixz=repr(float(I[0, 2])), iyy=repr(float(I[1, 1])), iyz=repr(float(I[1, 2])),
                          izz=repr(float(I[2, 2])))
        for g in model.link_visuals[i]:
            _write_geometry(ET.SubElement(link, "visual"), g)
        for g in model.link_collisions[i]:
            _write_geometry(ET.SubElement(link, "collision"), g)
    for j, name in enumerate(model.all_joint_names):
        t = JointType(model.joint_types[j])
        joint = ET.SubElement(root, "joint", name=name, type=t.name.lower())
        T = model.joint_origins[j]
        ET.SubElement(joint, "origin", xyz=_fmt(T[:3, 3]), rpy=_fmt(matrix_to_rpy(T[:3, :3])))
        ET.SubElement(joint, "parent", link=model.link_names[model.link_parents[j + 1]])
        ET.SubElement(joint, "child", link=model.link_names[j + 1])
        if t != JointType.FIXED:
            ET.SubElement(joint, "axis", xyz=_fmt(model.joint_axes[j]))
        limit = {}
        if t in (JointType.REVOLUTE, JointType.PRISMATIC):
            limit.update(lower=repr(float(model.joint_lower[j])), upper=repr(float(model.joint_upper[j])))
        velocity, effort = model.joint_velocity[j], model.joint_effort[j]
        extended = {key: float(values[j]) for key, values in zip(EXTENDED_LIMITS, (
            model.joint_acceleration, model.joint_deceleration, model.joint_jerk)) if np.isfinite(values[j])}
        if limit or extended or np.isfinite(velocity) or np.isfinite(effort):  # URDF requires both; "inf" = none
            limit.update(velocity=repr(float(velocity)), effort=repr(float(effort)))
            limit.update({key: repr(value) for key, value in extended.items()})
            ET.SubElement(joint, "limit", **limit)
        if model.mimic_source[j] >= 0:
            ET.SubElement(joint, "mimic", joint=model.all_joint_names[model.mimic_source[j]],
                          multiplier=repr(float(model.mimic_multiplier[j])), offset=repr(float(model.mimic_offset[j])))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"
