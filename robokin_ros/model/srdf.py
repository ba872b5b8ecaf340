"""Semantic descriptions (MoveIt's SRDF), read as srdfdom reads them and MoveIt builds them.

An SRDF names groups of joints (``<chain>``, ``<joint>``, ``<link>``, ``<group>`` members),
named configurations (``<group_state>``), end effectors, a virtual joint between the robot's root
and a fixed frame, passive joints and link pairs never to check for collision. Here a group
becomes an :class:`IKGroup` (base link, default tip, movable joints), a group state a
configuration (:meth:`SemanticDescription.named_configuration`), the virtual joint the root joint
of :attr:`SemanticDescription.moveit_model` (the model MoveIt plans with). As srdfdom and MoveIt
do, a member naming what the robot lacks is left out with a warning (its group stays); a group
whose subgroups are missing or form a cycle, or with no joint at all, is left out with a warning
naming it; only unreadable XML is an :class:`SRDFError`.
"""

from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping

import numpy as np

from ..errors import LoadWarning, RobokinError, SRDFError, UnknownStateError, shorten
from .builder import add_root
from .description import XMLDocument, parse_document
from .elements import SCALAR_TYPES
from .groups import IKGroup
from .robot_model import RobotModel

#: ``<virtual_joint type=...>`` values (srdfdom reads any other as fixed).
VIRTUAL_JOINT_TYPES = ("fixed", "floating", "planar")


@dataclasses.dataclass(frozen=True)
class EndEffector:
    """An SRDF ``<end_effector>``: its own group, the link it hangs from, the arm group it ends."""

    name: str
    group: str
    parent_link: str
    parent_group: str = ""


@dataclasses.dataclass(frozen=True)
class VirtualJoint:
    """An SRDF ``<virtual_joint>``: how the robot's root link (``child_link``) moves in a frame
    outside the URDF (``parent_frame``, e.g. ``world`` or ``odom_combined``); ``type`` is one of
    :data:`VIRTUAL_JOINT_TYPES`."""

    name: str
    type: str
    parent_frame: str
    child_link: str


@dataclasses.dataclass(frozen=True)
class SemanticDescription:
    """What an SRDF says about a model.

    Attributes:
        model: the model it was read against (the URDF's).
        groups: name -> :class:`IKGroup`, in document order; names refer to ``moveit_model``.
        group_states: group -> state name -> joint -> value.
        end_effectors: name -> :class:`EndEffector`.
        disabled_collisions: ``(link1, link2, reason)`` pairs never checked for collision.
        warnings: what was skipped, each with its input line.
        virtual_joint: the virtual joint MoveIt makes the root joint, if any.
        passive_joints: joints marked ``<passive_joint>``. As in MoveIt they stay in their groups
            and IK moves them like any other (MoveIt only leaves them out of what it sends to
            controllers and out of RViz's editable joints).
        moveit_model: ``model`` under a new root link ``virtual_joint.parent_frame`` joined by the
            virtual joint (its coordinates first in ``q``); ``model`` itself without one.
    """

    model: RobotModel
    groups: Mapping[str, IKGroup]
    group_states: Mapping[str, Mapping[str, Mapping[str, float]]]
    end_effectors: Mapping[str, EndEffector]
    disabled_collisions: tuple[tuple[str, str, str], ...]
    warnings: tuple[LoadWarning, ...] = ()
    virtual_joint: VirtualJoint | None = None
    passive_joints: tuple[str, ...] = ()
    moveit_model: RobotModel | None = None

    def __post_init__(self):
        if self.moveit_model is None:
            object.__setattr__(self, "moveit_model", self.model)

    def moveit_configuration(self, q: np.ndarray) -> np.ndarray:
        """``(..., moveit_model.n_q)``: ``q (..., model.n_q)`` with the virtual joint at the
        identity (its home configuration)."""
        q = np.asarray(q, dtype=float)
        extra = self.moveit_model.n_q - self.model.n_q
        home = np.broadcast_to(self.moveit_model.home_configuration()[:extra], q.shape[:-1] + (extra,))
        return np.concatenate([home, q], axis=-1)

    def model_configuration(self, q: np.ndarray) -> np.ndarray:
        """``(..., model.n_q)``: the URDF's coordinates of ``q (..., moveit_model.n_q)``."""
        return np.asarray(q, dtype=float)[..., self.moveit_model.n_q - self.model.n_q:]

    def named_configuration(self, name: str, group: str | None = None) -> np.ndarray:
        """``(n_q,)``: the model's home configuration with the values of group state ``name``.

        Args:
            name: the ``group_state``'s name (e.g. ``"ready"``).
            group: its group; needed only when several groups have a state of that name.

        Raises:
            UnknownStateError: no such state (or not in ``group``); several groups have it and
                ``group`` is None (the message lists them).
        """
        owners = [g for g, states in self.group_states.items() if name in states and group in (None, g)]
        known = sorted({s for states in self.group_states.values() for s in states})
        if not owners:
            raise UnknownStateError(name, known)
        if len(owners) > 1:
            raise UnknownStateError(f"{name} (in groups {owners}: pass group=)", known)
        return self.model.q_from_dict(dict(self.group_states[owners[0]][name]),
                                      base=self.model.home_configuration())


# ---------------------------------------------------------------------------- SRDF reading
def _warn(doc: XMLDocument, warnings: list, element: ET.Element, message: str) -> None:
    name = element.get("name")
    label = f"<{element.tag}>" if name is None else f"<{element.tag} name={shorten(name)}>"
    warnings.append(LoadWarning(doc.line(element), label, message))


def _name(element: ET.Element, key: str = "name") -> str | None:
    """An attribute with surrounding whitespace trimmed (srdfdom trims names)."""
    value = element.get(key)
    return None if value is None else value.strip()


def _virtual_joint(doc, warnings, root: ET.Element, model: RobotModel) -> VirtualJoint | None:
    """The virtual joint MoveIt makes the model's root joint: of the ``<virtual_joint>`` elements
    srdfdom accepts (name, a child link of the robot, parent frame and type; an unknown type read
    as fixed), the first whose child link is the URDF's root and whose parent frame is not empty."""
    chosen = None
    for el in root.findall("virtual_joint"):
        fields = {k: _name(el, k) for k in ("name", "child_link", "parent_frame", "type")}
        if None in fields.values() or fields["child_link"] not in model.link_names:
            _warn(doc, warnings, el, "virtual_joint needs name, type, parent_frame and a child_link of the robot; "
                                     "skipped")
            continue
        kind = fields["type"].lower()
        if kind not in VIRTUAL_JOINT_TYPES:
            _warn(doc, warnings, el, f"unknown virtual_joint type {shorten(kind)}; read as fixed (as srdfdom does)")
            kind = "fixed"
        joint = VirtualJoint(fields["name"], kind, fields["parent_frame"], fields["child_link"])
        if chosen is not None:
            _warn(doc, warnings, el, f"only the first virtual joint ({chosen.name!r}) is used; skipped")
        elif joint.child_link != model.root_link:
            _warn(doc, warnings, el, f"child link {shorten(joint.child_link)} is not the robot's root link "
                                     f"{model.root_link!r}; skipped (as MoveIt does)")
        elif not joint.parent_frame:
            _warn(doc, warnings, el, "empty parent_frame; skipped (as MoveIt does)")
        elif joint.parent_frame in model.link_names or joint.name in model.all_joint_names:
            _warn(doc, warnings, el, f"parent frame {shorten(joint.parent_frame)} or name is already a link or joint "
                                     f"of robot {model.name!r}; skipped")
        else:
            chosen = joint
    return chosen


@dataclasses.dataclass
class _GroupConfig:
    """One ``<group>`` as srdfdom reads it: its members that name parts of the robot."""

    element: ET.Element
    joints: list[int]                     # joint indices (the moveit model's): <joint>, <link> parents, chains
    chains: list[tuple[str, str]]
    subgroups: tuple[str, ...]


def _chain_joints(model: RobotModel, base: str, tip: str) -> list[int]:
    """Joint indices of a ``<chain>`` as MoveIt's ``RobotModel::addJointModelGroup`` walks it: from
    the tip up to the base; when the base is not above the tip, from the tip up to their common
    ancestor (its parent joint included, as MoveIt's walk includes it) and from the base up to it."""
    parents = model.link_parents
    b = model.link_index(base)
    lm, cj = model.link_index(tip), []
    while lm != b and lm != 0:        # link 0 has no parent joint here (MoveIt: the root joint)
        cj.append(lm - 1)
        lm = int(parents[lm])
    if lm == b:
        return cj
    position = {j: k for k, j in enumerate(cj)}
    lm, cj2 = b, []
    while lm != 0 and lm - 1 not in position:
        cj2.append(lm - 1)
        lm = int(parents[lm])
    index = len(cj) if lm == 0 else position[lm - 1] + 1
    return cj[:index] + cj2


def _read_group(doc, warnings, urdf: RobotModel, moveit: RobotModel, virtual: str, el) -> _GroupConfig:
    """srdfdom's reading of one ``<group>``: members naming what the robot lacks are left out with
    a warning (the rest of the group stays). Chains and links must be the URDF's, joints the
    URDF's or the virtual joint."""
    joints: list[int] = []
    chains: list[tuple[str, str]] = []
    subgroups: list[str] = []
    for member in el:
        if member.tag == "chain":
            base, tip = _name(member, "base_link"), _name(member, "tip_link")
            missing = [link for link in (base, tip) if link not in urdf.link_names]
            if missing:
                _warn(doc, warnings, el, f"chain names link {shorten(missing[0])}, which robot {urdf.name!r} "
                                         "does not have; chain left out")
                continue
            chains.append((base, tip))
            joints += _chain_joints(moveit, base, tip)
        elif member.tag in ("joint", "link"):
            name = _name(member)
            known = name in urdf.link_names if member.tag == "link" else \
                (name in urdf.all_joint_names or (name == virtual and bool(virtual)))
            if not known:
                _warn(doc, warnings, el, f"names {member.tag} {shorten(name)}, which robot {urdf.name!r} "
                                         "does not have; member left out")
                continue
            if member.tag == "joint":
                joints.append(moveit.joint_index(name))
            elif moveit.link_index(name) > 0:   # a link brings its parent joint (MoveIt's meaning)
                joints.append(moveit.link_index(name) - 1)
        elif member.tag == "group":
            name = _name(member)
            if name is None:
                _warn(doc, warnings, el, "a subgroup without a name; left out")
            else:
                subgroups.append(name)
    return _GroupConfig(el, joints, chains, tuple(dict.fromkeys(subgroups)))


def _build_order(configs: Mapping[str, _GroupConfig]) -> tuple[list[str], set[str]]:
    """(groups whose subgroups all exist, each after its subgroups; the others): srdfdom keeps
    only groups whose subgroups are satisfied, without recursion (Kahn's order; a subgroup cycle,
    however deep, leaves its groups unsatisfied)."""
    pending = {name: len(c.subgroups) for name, c in configs.items()}
    users: dict[str, list[str]] = {name: [] for name in configs}
    for name, config in configs.items():
        for sub in config.subgroups:
            if sub in users:
                users[sub].append(name)
    ready = [name for name, n in pending.items() if n == 0]
    order = []
    while ready:
        name = ready.pop()
        order.append(name)
        for user in users[name]:
            pending[user] -= 1
            if pending[user] == 0:
                ready.append(user)
    return order, set(configs) - set(order)


def _group_frames(model: RobotModel, joints) -> tuple[str, str]:
    """(base, tip) of a group as MoveIt's kinematics plugin loader chooses them: the tip is the
    last of the group's links (the child links of its joints, fixed ones included, in the
    model's order), the base the parent of its first link."""
    links = sorted(j + 1 for j in joints)
    return model.link_names[int(model.link_parents[links[0]])], model.link_names[links[-1]]


def _ik_group(model: RobotModel, name: str, config: _GroupConfig, joints: list[int]) -> IKGroup | None:
    """The IK group of a group MoveIt builds with ``joints`` (sorted indices); None when its
    links are not one piece a base and tip can describe (a group with no movable joint whose
    base is not above its tip, or whose path between them has movable joints)."""
    names = [model.all_joint_names[j] for j in joints]
    independent = set(model.joint_names)
    movable = tuple(n for n in names if n in independent)
    base, tip = _group_frames(model, joints)
    if len(config.chains) == 1 and set(names) == set(model.path_joints(*config.chains[0], independent=False)):
        return IKGroup(name, *config.chains[0], ())     # one chain: MoveIt's chain group
    if movable:
        return IKGroup(name, base, tip, movable)
    above = model.link_index(base) in model.link_supports[model.link_index(tip)]
    return IKGroup(name, base, tip, ()) if above and not model.path_joints(base, tip) else None


def _read_groups(doc, warnings, urdf: RobotModel, moveit: RobotModel, virtual: str,
                 elements: Mapping[str, ET.Element]) -> tuple[dict[str, IKGroup], dict[str, frozenset[int]]]:
    """(IK groups, joint indices of each group MoveIt builds) in document order. Each group's joint
    set is resolved once, subgroups first (no recursion: any depth, any sharing)."""
    configs = {name: _read_group(doc, warnings, urdf, moveit, virtual, el) for name, el in elements.items()}
    order, unsatisfied = _build_order(configs)
    built: dict[str, frozenset[int]] = {}
    for name in order:
        config = configs[name]
        lost = [sub for sub in config.subgroups if sub not in built]
        if lost:
            _warn(doc, warnings, config.element, f"subgroup {shorten(lost[0])} was not built; group left out "
                                                 "(MoveIt: unmet subgroup dependencies)")
            continue
        joints = set(config.joints).union(*(built[sub] for sub in config.subgroups))
        if not joints:
            _warn(doc, warnings, config.element, "has no joint of the robot; group left out (MoveIt: a group "
                                                 "must have at least one valid joint)")
            continue
        built[name] = frozenset(joints)
    for name in (n for n in configs if n in unsatisfied):     # in document order
        config = configs[name]
        missing = [sub for sub in config.subgroups if sub not in configs]
        why = f"subgroup {shorten(missing[0])} is not a group of the SRDF" if missing else \
            "its subgroups form a cycle or need a group left out"
        _warn(doc, warnings, config.element, f"{why}; group left out (srdfdom: unsatisfied subgroups)")
    groups = {}
    for name in elements:
        if name not in built:
            continue
        group = _ik_group(moveit, name, configs[name], sorted(built[name]))
        if group is None:
            _warn(doc, warnings, configs[name].element, "has no movable joint and its links do not hang from one "
                                                        "base; no IK group made")
            continue
        groups[name] = group
    return groups, built


def _state_values(doc, warnings, moveit: RobotModel, el: ET.Element, *, name: str, group: str,
                  members: frozenset[int]) -> dict[str, float]:
    """The values of a ``<group_state>`` for the URDF's independent 1-DOF joints of its group;
    anything else is left out with a warning naming group, state and joint."""
    values = {}
    independent = set(moveit.joint_names)
    where = f"in group_state {shorten(name)} of group {shorten(group)}"
    for joint in el.findall("joint"):
        joint_name = _name(joint)
        text = (joint.get("value") or "").split()
        try:
            numbers = [float(t) for t in text]
        except ValueError:
            numbers = []
        if joint_name not in moveit.all_joint_names:
            _warn(doc, warnings, joint, f"{where}: not a joint of robot {moveit.name!r}; ignored")
        elif moveit.joint_index(joint_name) not in members:
            _warn(doc, warnings, joint, f"{where}: joint {shorten(joint_name)} is not in group {shorten(group)}; "
                                        "ignored (as MoveIt does)")
        elif moveit.is_fixed[moveit.joint_index(joint_name)]:
            _warn(doc, warnings, joint, f"{where}: joint {shorten(joint_name)} is fixed; ignored")
        elif moveit.joint_types[moveit.joint_index(joint_name)] not in SCALAR_TYPES:
            _warn(doc, warnings, joint, f"{where}: joint {shorten(joint_name)} has several coordinates; its "
                                        "values are not used (named configurations are the URDF's joints)")
        elif len(numbers) != 1 or not math.isfinite(numbers[0]):
            _warn(doc, warnings, joint, f"{where}: joint {shorten(joint_name)} needs one finite number, got "
                                        f"{shorten(joint.get('value') or '')!s}; ignored")
        elif joint_name in independent:   # a mimic or fixed joint: its value follows from the others
            values[joint_name] = numbers[0]
    return values


def parse_srdf(xml, model: RobotModel) -> SemanticDescription:
    """Read an SRDF against ``model``, as srdfdom reads it and MoveIt's ``RobotModel`` builds it.

    Args:
        xml: the SRDF text (str or UTF-8 bytes; same hardened parser and size cap as URDFs).
        model: the robot it describes.

    Raises:
        SRDFError: unreadable XML or a root element other than ``<robot>``.
    """
    try:
        doc = parse_document(xml)
    except RobokinError as e:
        raise SRDFError(str(e).replace("invalid URDF", "invalid SRDF")) from None
    root = doc.root
    if root.tag != "robot":
        raise SRDFError(f"invalid SRDF: the root element is <{root.tag[:60]}>, expected <robot>")
    warnings: list[LoadWarning] = []
    virtual = _virtual_joint(doc, warnings, root, model)
    moveit = model if virtual is None else add_root(model, virtual.parent_frame, virtual.name, virtual.type)
    group_elements: dict[str, ET.Element] = {}
    for el in root.findall("group"):
        name = _name(el)
        if not name or name in group_elements:
            _warn(doc, warnings, el, "group without a name, or a repeated name; skipped")
            continue
        group_elements[name] = el
    groups, members = _read_groups(doc, warnings, model, moveit, virtual.name if virtual else "", group_elements)
    end_effectors = {}
    for el in root.findall("end_effector"):
        fields = {k: _name(el, k) for k in ("name", "group", "parent_link")}
        if not all(fields.values()) or fields["parent_link"] not in model.link_names:
            _warn(doc, warnings, el, "end_effector needs name, group and a parent_link of the robot; skipped")
            continue
        if fields["group"] not in members:
            _warn(doc, warnings, el, f"end_effector names group {shorten(fields['group'])}, which is not a group "
                                     "built from the SRDF; skipped")
            continue
        end_effectors[fields["name"]] = EndEffector(fields["name"], fields["group"], fields["parent_link"],
                                                    _name(el, "parent_group") or "")
    states: dict[str, dict[str, dict[str, float]]] = {}
    for el in root.findall("group_state"):
        name, group = _name(el), _name(el, "group")
        if not name or group not in members:
            _warn(doc, warnings, el, "group_state needs a name and one of the groups built from the SRDF "
                                     f"{sorted(members)[:10]}; skipped")
            continue
        states.setdefault(group, {})[name] = _state_values(doc, warnings, moveit, el, name=name, group=group,
                                                           members=members[group])
    passive = []
    for el in root.findall("passive_joint"):
        name = _name(el)
        if name not in model.all_joint_names and not (virtual and name == virtual.name):
            _warn(doc, warnings, el, f"passive_joint names no joint of robot {model.name!r}; ignored")
            continue
        passive.append(name)
    disabled = []
    for el in root.findall("disable_collisions"):
        pair = (el.get("link1"), el.get("link2"))
        if all(link in model.link_names for link in pair):
            disabled.append((pair[0], pair[1], el.get("reason") or ""))
        else:
            _warn(doc, warnings, el, "disable_collisions names a link the robot does not have; skipped")
    return SemanticDescription(model=model, groups=groups, group_states=states, end_effectors=end_effectors,
                               disabled_collisions=tuple(disabled), warnings=tuple(warnings),
                               virtual_joint=virtual, passive_joints=tuple(dict.fromkeys(passive)),
                               moveit_model=moveit)
