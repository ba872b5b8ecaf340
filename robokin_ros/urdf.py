"""URDF text <-> RobotModel: hardened parsing, validation that reports every problem, writing.

The description may come from the network (``/robot_description``), so the XML is parsed with
DTDs refused outright: no entity expansion (entity bombs) and no external entities. The element
tree is validated by us, collecting every problem, before urdf_parser_py reads the elements.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.parsers import expat

import numpy as np

from .errors import URDFError
from .model import SCALAR_TYPES, JointType, RobotModel
from .spatial import matrix_to_rpy, rpy_to_matrix, transform

_TYPES = {t.name.lower(): t for t in JointType}


class _DTDRefused(Exception):
    pass


def parse_xml_hardened(xml: str) -> ET.Element:
    """Element tree of ``xml``; refuses any DTD (so no entity can be declared or expanded).

    Raises:
        URDFError: malformed XML (with line and column) or a DTD.
    """
    if isinstance(xml, bytes):
        xml = xml.decode("utf-8", errors="replace")
    if not isinstance(xml, str):
        raise URDFError(f"a URDF must be text, got {type(xml).__name__}")
    if not xml.strip():
        raise URDFError("the description is empty")
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate()

    def refuse(*_):
        raise _DTDRefused()

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(xml, True)
    except _DTDRefused:
        raise URDFError("a <!DOCTYPE> or entity declaration is not allowed in a robot description "
                        "(entity expansion and external entities are refused)") from None
    except expat.ExpatError as e:
        raise URDFError(f"malformed XML at line {e.lineno}, column {e.offset}: {expat.errors.messages[e.code]}") from None
    return builder.close()


def _floats(text: str | None, n: int, what: str, problems: list[str], default=0.0) -> np.ndarray:
    if text is None:
        return np.full(n, default, float)
    try:
        vals = np.array([float(x) for x in text.split()], float)
    except ValueError:
        problems.append(f"{what} = {text!r} is not {n} numbers")
        return np.full(n, default, float)
    if vals.size != n:
        problems.append(f"{what} = {text!r} must have {n} numbers")
        return np.full(n, default, float)
    if not np.all(np.isfinite(vals)):
        problems.append(f"{what} = {text!r} is not finite")
        return np.nan_to_num(vals, nan=default, posinf=default, neginf=default)
    return vals


def _attr_float(el: ET.Element | None, key: str, what: str, problems: list[str], default=None):
    if el is None or el.get(key) is None:
        return default
    text = el.get(key)
    try:
        v = float(text)
    except ValueError:
        problems.append(f"{what} = {text!r} is not a number")
        return default
    if not math.isfinite(v):
        problems.append(f"{what} = {text!r} is not finite")
        return default
    return v


def _origin(el: ET.Element | None, what: str, problems: list[str]) -> np.ndarray:
    o = None if el is None else el.find("origin")
    xyz = _floats(None if o is None else o.get("xyz"), 3, f"{what} origin xyz", problems)
    rpy = _floats(None if o is None else o.get("rpy"), 3, f"{what} origin rpy", problems)
    return transform(rpy_to_matrix(rpy), xyz)


def _validate_and_order(root: ET.Element):
    """Check the tree and every number; return links in topological (DFS) order + joint data.

    Raises URDFError with every problem found.
    """
    problems: list[str] = []
    if root.tag != "robot":
        raise URDFError(f"the root element is <{root.tag}>, expected <robot>")
    links = root.findall("link")
    joints = root.findall("joint")
    link_names: list[str] = []
    for el in links:
        n = el.get("name")
        if not n:
            problems.append("a <link> has no name")
        elif n in link_names:
            problems.append(f"duplicate link name {n!r}")
        else:
            link_names.append(n)
    seen_joints: set[str] = set()
    child_of: dict[str, str] = {}
    parent_of: dict[str, str] = {}
    extra_edges: list[tuple[str, str]] = []   # (parent, child) of joints giving a link a second parent
    joint_order: list[str] = []               # child links in URDF joint order
    joint_by_child: dict[str, ET.Element] = {}
    kids: dict[str, list[str]] = {n: [] for n in link_names}
    for el in joints:
        n = el.get("name")
        if not n:
            problems.append("a <joint> has no name")
            continue
        if n in seen_joints:
            problems.append(f"duplicate joint name {n!r}")
            continue
        seen_joints.add(n)
        t = el.get("type")
        if t not in _TYPES:
            problems.append(f"joint {n!r} has unknown type {t!r} (expected one of {', '.join(_TYPES)})")
        pe, ce = el.find("parent"), el.find("child")
        parent = None if pe is None else pe.get("link")
        child = None if ce is None else ce.get("link")
        ok = True
        for role, name in (("parent", parent), ("child", child)):
            if name is None:
                problems.append(f"joint {n!r} has no {role} link")
                ok = False
            elif name not in kids:
                problems.append(f"joint {n!r} names {role} link {name!r}, which does not exist")
                ok = False
        if not ok:
            continue
        if child in child_of:
            problems.append(f"link {child!r} has two parents: joints {child_of[child]!r} and {n!r}")
            extra_edges.append((parent, child))
            continue
        child_of[child] = n
        parent_of[child] = parent
        joint_by_child[child] = el
        joint_order.append(child)
        kids[parent].append(child)
        what = f"joint {n!r}"
        _origin(el, what, problems)
        if t in ("revolute", "continuous", "prismatic", "planar"):
            ax = el.find("axis")
            axis = _floats(None if ax is None else ax.get("xyz"), 3, f"{what} axis", problems, default=np.nan)
            if ax is None:
                axis = np.array([1.0, 0.0, 0.0])  # the URDF default
            if np.all(np.isfinite(axis)) and np.linalg.norm(axis) < 1e-12:
                problems.append(f"{what} has a zero axis")
        lim = el.find("limit")
        lo = _attr_float(lim, "lower", f"{what} limit lower", problems, 0.0)
        hi = _attr_float(lim, "upper", f"{what} limit upper", problems, 0.0)
        for key in ("velocity", "effort"):  # "inf" = no limit (what to_urdf writes for none)
            text = None if lim is None else lim.get(key)
            if text is not None and text.strip().lower() not in ("inf", "+inf"):
                _attr_float(lim, key, f"{what} limit {key}", problems)
        if t in ("revolute", "prismatic"):
            if lim is None:
                problems.append(f"{what} of type {t} has no <limit>")
            elif lo > hi:
                problems.append(f"{what} has lower limit {lo:g} > upper limit {hi:g}")
        mim = el.find("mimic")
        if mim is not None:
            _attr_float(mim, "multiplier", f"{what} mimic multiplier", problems)
            _attr_float(mim, "offset", f"{what} mimic offset", problems)
    for el in links:
        n = el.get("name")
        inertial = el.find("inertial")
        if inertial is None:
            continue
        what = f"link {n!r} inertial"
        _origin(inertial, what, problems)
        m = inertial.find("mass")
        mass = _attr_float(m, "value", f"{what} mass", problems)
        if m is None or m.get("value") is None:
            problems.append(f"{what} has no mass")
        elif mass is not None and mass < 0:
            problems.append(f"{what} mass {mass:g} is negative")
        ie = inertial.find("inertia")
        for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"):
            _attr_float(ie, key, f"{what} {key}", problems)
    # Mimic references and cycles.
    mimic_of = {}
    for el in joints:
        mim = el.find("mimic")
        if mim is not None and el.get("name"):
            target = mim.get("joint")
            if target not in seen_joints:
                problems.append(f"joint {el.get('name')!r} mimics joint {target!r}, which does not exist")
            else:
                mimic_of[el.get("name")] = target
    for start in mimic_of:
        path, cur = [start], start
        while cur in mimic_of:
            cur = mimic_of[cur]
            if cur in path:
                cycle = path[path.index(cur):] + [cur]
                if start == min(cycle):
                    problems.append(f"mimic joints form a cycle: {' -> '.join(cycle)}")
                break
            path.append(cur)
    # Cycles: walk up the first-parent map from every link, and from the parent of every joint
    # that gave a link a second parent (a cycle hanging off a valid root shows up that way).
    reported: set[frozenset] = set()
    for start, extra_child in [(n, None) for n in link_names] + [(p, c) for p, c in extra_edges]:
        path, cur = [start], start
        while cur in parent_of or (extra_child is not None and cur == start):
            cur = parent_of[cur] if cur in parent_of else None
            if cur is None:
                break
            if cur in path or cur == extra_child:
                cycle = path[path.index(cur):] if cur in path else path + [cur]
                key = frozenset(cycle)
                if key not in reported:
                    reported.add(key)
                    loop = list(reversed(cycle))
                    problems.append("joints form a cycle through links " + " -> ".join(loop + [loop[0]]))
                break
            path.append(cur)
    roots = [n for n in link_names if n not in child_of]
    if not link_names:
        problems.append("the robot has no links")
    elif not roots:
        problems.append("the robot has no root link (every link is the child of a joint)")
    elif len(roots) > 1:
        problems.append(f"the robot has {len(roots)} root links {roots}; a URDF must be one tree")
    order: list[str] = []
    if len(roots) == 1:
        placed = {roots[0]}
        if all(parent_of[c] in placed or placed.add(c) for c in joint_order) and len(placed) == len(link_names):
            # Joints listed parents-first (the usual case): keep the URDF joint order, so q
            # follows the document and to_urdf round-trips any model order.
            order = [roots[0]] + joint_order
        else:
            order, stack = [], [roots[0]]
            while stack:
                n = stack.pop()
                order.append(n)
                stack.extend(reversed(kids[n]))
        unreachable = [n for n in link_names if n not in set(order)]
        if unreachable:
            problems.append(f"links {unreachable} are not connected to the root {roots[0]!r}")
    if problems:
        raise URDFError(problems)
    return order, joint_by_child


def model_from_urdf(xml: str) -> RobotModel:
    """Model of a URDF document; see :meth:`RobotModel.from_urdf`.

    Raises:
        URDFError: listing every problem found.
    """
    from urdf_parser_py import urdf as urdf_py
    from urdf_parser_py.xml_reflection import core as urdf_core

    root = parse_xml_hardened(xml)
    order, joint_by_child = _validate_and_order(root)
    urdf_core.on_error = lambda message: None  # we validated; do not print to stderr
    try:
        robot = urdf_py.URDF.from_xml_string(ET.tostring(root, encoding="unicode"))
    except Exception as e:  # urdf_parser_py raises assorted types; report its text
        raise URDFError(f"urdf_parser_py rejected the description: {e}") from None
    link_by_name = {link.name: link for link in robot.links}
    joint_by_name = {j.name: j for j in robot.joints}
    index = {n: i for i, n in enumerate(order)}
    joints = [joint_by_name[joint_by_child[child].get("name")] for child in order[1:]]
    jindex = {j.name: k for k, j in enumerate(joints)}
    n_j = len(joints)
    types = np.zeros(n_j, np.int64)
    axes = np.zeros((n_j, 3))
    origins = np.zeros((n_j, 4, 4))
    lower, upper = np.full(n_j, -np.inf), np.full(n_j, np.inf)
    velocity, effort = np.full(n_j, np.inf), np.full(n_j, np.inf)
    mimic_src = np.full(n_j, -1, np.int64)
    mult, offset = np.ones(n_j), np.zeros(n_j)
    problems = []
    for k, j in enumerate(joints):
        t = _TYPES[j.type]
        types[k] = t
        o = j.origin
        xyz = np.zeros(3) if o is None or o.xyz is None else np.array(o.xyz, float)
        rpy = np.zeros(3) if o is None or o.rpy is None else np.array(o.rpy, float)
        origins[k] = transform(rpy_to_matrix(rpy), xyz)
        axis = np.array([1.0, 0.0, 0.0]) if j.axis is None else np.array(j.axis, float)
        axes[k] = axis / np.linalg.norm(axis) if t != JointType.FIXED and np.linalg.norm(axis) > 0 else (0, 0, 1)
        if t == JointType.FLOATING or t == JointType.FIXED:
            axes[k] = (0.0, 0.0, 1.0) if t == JointType.FIXED else axes[k]
        if j.limit is not None:
            if t in (JointType.REVOLUTE, JointType.PRISMATIC):
                lower[k], upper[k] = float(j.limit.lower or 0.0), float(j.limit.upper or 0.0)
            if j.limit.velocity is not None:
                velocity[k] = float(j.limit.velocity)
            if j.limit.effort is not None:
                effort[k] = float(j.limit.effort)
        if j.mimic is not None and t == JointType.FIXED:
            pass  # urdfdom ignores <mimic> on a fixed joint (talos_reduced has such joints); so do we
        elif j.mimic is not None:
            if t not in SCALAR_TYPES:
                problems.append(f"joint {j.name!r} of type {j.type} cannot mimic (only 1-DOF joints can)")
            mimic_src[k] = jindex[j.mimic.joint]
            mult[k] = 1.0 if j.mimic.multiplier is None else float(j.mimic.multiplier)
            offset[k] = 0.0 if j.mimic.offset is None else float(j.mimic.offset)
    # Resolve chains of mimics to independent sources: v = m1 (m2 s + o2) + o1.
    for k in range(n_j):
        seen = 0
        while mimic_src[k] >= 0 and mimic_src[mimic_src[k]] >= 0 and seen <= n_j:
            s = mimic_src[k]
            mult[k], offset[k] = mult[k] * mult[s], mult[k] * offset[s] + offset[k]
            mimic_src[k] = mimic_src[s]
            seen += 1
        s = mimic_src[k]
        if s >= 0 and JointType(types[s]) not in SCALAR_TYPES:
            problems.append(f"joint {joints[k].name!r} mimics {joints[s].name!r} of type "
                            f"{JointType(types[s]).name.lower()}; only 1-DOF joints can be mimicked")
    if problems:
        raise URDFError(problems)
    n_l = len(order)
    masses, coms = np.zeros(n_l), np.zeros((n_l, 3))
    inertias, has_inertial = np.zeros((n_l, 3, 3)), np.zeros(n_l, bool)
    meshes: list = [None] * n_l
    for i, name in enumerate(order):
        link = link_by_name[name]
        inertial = link.inertial
        if inertial is not None and inertial.mass is not None:
            o = inertial.origin
            xyz = np.zeros(3) if o is None or o.xyz is None else np.array(o.xyz, float)
            rpy = np.zeros(3) if o is None or o.rpy is None else np.array(o.rpy, float)
            m = inertial.inertia
            I = np.zeros((3, 3)) if m is None else np.array(
                [[m.ixx, m.ixy, m.ixz], [m.ixy, m.iyy, m.iyz], [m.ixz, m.iyz, m.izz]], float)
            R = rpy_to_matrix(rpy)
            masses[i], coms[i], inertias[i], has_inertial[i] = float(inertial.mass), xyz, R @ I @ R.T, True
        for visual in getattr(link, "visuals", []) or []:
            geom = getattr(visual, "geometry", None)
            if geom is not None and getattr(geom, "filename", None):
                meshes[i] = geom.filename
                break
    return RobotModel.create(
        name=robot.name or "robot", link_names=order,
        joint_names=[j.name for j in joints],
        joint_parents=[index[j.parent] for j in joints], joint_types=types, joint_axes=axes,
        joint_origins=origins, joint_lower=lower, joint_upper=upper, joint_velocity=velocity,
        joint_effort=effort, mimic_source=mimic_src, mimic_multiplier=mult, mimic_offset=offset,
        link_masses=masses, link_coms=coms, link_inertias=inertias, link_has_inertial=has_inertial,
        link_meshes=meshes)


def model_from_urdf_file(path) -> RobotModel:
    """Model of a URDF file. Raises :class:`URDFError` (also for an unreadable file)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise URDFError(f"cannot read {str(path)!r}: {e.strerror}") from None
    return model_from_urdf(text)


def _fmt(values) -> str:
    return " ".join(repr(float(v)) for v in np.ravel(values))


def model_to_urdf(model: RobotModel) -> str:
    """URDF text of ``model``; :func:`model_from_urdf` of it gives an equal model.

    Mimic joints are written against their (resolved) independent source.
    """
    root = ET.Element("robot", name=model.name)
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
        if model.link_meshes[i]:
            visual = ET.SubElement(link, "visual")
            geometry = ET.SubElement(visual, "geometry")
            ET.SubElement(geometry, "mesh", filename=model.link_meshes[i])
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
        if limit or np.isfinite(velocity) or np.isfinite(effort):  # URDF requires both; "inf" = none
            limit.update(velocity=repr(float(velocity)), effort=repr(float(effort)))
            ET.SubElement(joint, "limit", **limit)
        if model.mimic_source[j] >= 0:
            ET.SubElement(joint, "mimic", joint=model.all_joint_names[model.mimic_source[j]],
                          multiplier=repr(float(model.mimic_multiplier[j])), offset=repr(float(model.mimic_offset[j])))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode") + "\n"
