"""Semantic descriptions (MoveIt's SRDF) and IK groups derived from the tree when there is none.

An SRDF names groups of joints (``<chain>``, ``<joint>``, ``<link>``, ``<group>`` members),
named configurations (``<group_state>``), end effectors and link pairs never to check for
collision. Here a group becomes an :class:`IKGroup` (base link, default tip, movable joints), a
group state a configuration (:meth:`SemanticDescription.named_configuration`). As MoveIt does, a
group or state naming links or joints the robot does not have is skipped with a warning (the
rest of the description stays usable); only unreadable XML is an :class:`SRDFError`.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from collections.abc import Mapping

import numpy as np

from ..errors import LoadWarning, RobokinError, SRDFError, UnknownStateError
from .description import XMLDocument, parse_document, shorten
from .groups import IKGroup
from .robot_model import RobotModel


@dataclasses.dataclass(frozen=True)
class EndEffector:
    """An SRDF ``<end_effector>``: its own group, the link it hangs from, the arm group it ends."""

    name: str
    group: str
    parent_link: str
    parent_group: str = ""


@dataclasses.dataclass(frozen=True)
class SemanticDescription:
    """What an SRDF says about a model.

    Attributes:
        model: the model it was read against.
        groups: name -> :class:`IKGroup`, in document order.
        group_states: group -> state name -> joint -> value.
        end_effectors: name -> :class:`EndEffector`.
        disabled_collisions: ``(link1, link2, reason)`` pairs never checked for collision.
        warnings: what was skipped, each with its input line.
    """

    model: RobotModel
    groups: Mapping[str, IKGroup]
    group_states: Mapping[str, Mapping[str, Mapping[str, float]]]
    end_effectors: Mapping[str, EndEffector]
    disabled_collisions: tuple[tuple[str, str, str], ...]
    warnings: tuple[LoadWarning, ...] = ()

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


def _group_members(doc, warnings, model: RobotModel, el: ET.Element, elements: Mapping[str, ET.Element],
                   resolving: tuple[str, ...] = ()):
    """(joints in order, fixed and mimic ones included; chains [(base, tip)]) of a ``<group>``,
    subgroups included. As srdfdom does, a member naming something the robot lacks is left out
    with a warning (the rest of the group stays); a subgroup cycle or a missing subgroup too."""
    name = _name(el)
    joints: list[str] = []
    chains: list[tuple[str, str]] = []
    for member in el:
        if member.tag == "chain":
            base, tip = _name(member, "base_link"), _name(member, "tip_link")
            missing = [link for link in (base, tip) if link not in model.link_names]
            if missing:
                _warn(doc, warnings, el, f"chain names link {shorten(missing[0])}, which robot {model.name!r} "
                                         "does not have; chain left out")
                continue
            if model.link_index(base) not in model.link_supports[model.link_index(tip)]:
                _warn(doc, warnings, el, f"chain base {base!r} is not above tip {tip!r}; chain left out")
                continue
            chains.append((base, tip))
            joints += model.path_joints(base, tip, independent=False)
        elif member.tag in ("joint", "link"):
            member_name = _name(member)
            known = model.all_joint_names if member.tag == "joint" else model.link_names
            if member_name not in known:
                _warn(doc, warnings, el, f"names {member.tag} {shorten(member_name)}, which robot {model.name!r} "
                                         "does not have; member left out")
                continue
            if member.tag == "joint":
                joints.append(member_name)
            elif model.link_index(member_name) > 0:   # a link brings its parent joint (MoveIt's meaning)
                joints.append(model.all_joint_names[model.link_index(member_name) - 1])
        elif member.tag == "group":
            sub = _name(member)
            if sub in resolving + (name,) or sub not in elements:
                why = "a cycle of subgroups" if sub in resolving + (name,) else "no such group"
                _warn(doc, warnings, el, f"subgroup {shorten(sub)}: {why}; left out")
                continue
            inner = _group_members(doc, warnings, model, elements[sub], elements, resolving + (name,))
            joints += inner[0]
            chains += inner[1]
    return list(dict.fromkeys(joints)), chains


def _group_frames(model: RobotModel, joints: list[str]) -> tuple[str, str]:
    """(base, tip) of a group as MoveIt's kinematics plugin loader chooses them: the tip is the
    last of the group's links (the child links of its joints, fixed ones included, in the
    model's order), the base the parent of its first link."""
    links = sorted(model.joint_index(j) + 1 for j in joints)
    return model.link_names[int(model.link_parents[links[0]])], model.link_names[links[-1]]


def parse_srdf(xml, model: RobotModel) -> SemanticDescription:
    """Read an SRDF against ``model``.

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
    group_elements: dict[str, ET.Element] = {}
    for el in root.findall("group"):
        name = _name(el)
        if not name or name in group_elements:
            _warn(doc, warnings, el, "group without a name, or a repeated name; skipped")
            continue
        group_elements[name] = el
    end_effectors = {}
    for el in root.findall("end_effector"):
        fields = {k: _name(el, k) for k in ("name", "group", "parent_link")}
        if not all(fields.values()) or fields["parent_link"] not in model.link_names:
            _warn(doc, warnings, el, "end_effector needs name, group and a parent_link of the robot; skipped")
            continue
        if fields["group"] not in group_elements:
            _warn(doc, warnings, el, f"end_effector names group {shorten(fields['group'])}, which the SRDF does "
                                     "not define; skipped")
            continue
        end_effectors[fields["name"]] = EndEffector(fields["name"], fields["group"], fields["parent_link"],
                                                    _name(el, "parent_group") or "")
    groups = {}
    group_joints: dict[str, set[str]] = {}
    independent = set(model.joint_names)
    for name, el in group_elements.items():
        joints, chains = _group_members(doc, warnings, model, el, group_elements)
        group_joints[name] = set(joints)
        movable = tuple(j for j in joints if j in independent)
        if not movable:
            _warn(doc, warnings, el, "has no movable joint of the robot; no IK group made")
            continue
        base, tip = _group_frames(model, joints)
        if len(chains) == 1 and set(joints) == set(model.path_joints(*chains[0], independent=False)):
            groups[name] = IKGroup(name, *chains[0], ())     # one chain: MoveIt's chain group
        else:
            groups[name] = IKGroup(name, base, tip, movable)
    states: dict[str, dict[str, dict[str, float]]] = {}
    for el in root.findall("group_state"):
        name, group = _name(el), _name(el, "group")
        if not name or group not in group_elements:
            _warn(doc, warnings, el,
                  f"group_state needs a name and one of the groups {sorted(group_elements)}; skipped")
            continue
        values = {}
        for joint in el.findall("joint"):
            joint_name = _name(joint)
            try:
                value = float(joint.get("value", "").split()[0])
            except (ValueError, IndexError):
                value = None
            if joint_name not in model.all_joint_names or value is None:
                _warn(doc, warnings, joint, f"in group_state {shorten(name)}: not a joint of robot "
                                            f"{model.name!r} with a number value; ignored")
                continue
            if joint_name not in group_joints.get(group, ()):
                _warn(doc, warnings, joint, f"in group_state {shorten(name)}: joint {shorten(joint_name)} is not "
                                            f"in group {shorten(group)}; ignored (as MoveIt does)")
                continue
            if joint_name in independent:   # a mimic or fixed joint: its value follows from the others
                values[joint_name] = value
        states.setdefault(group, {})[name] = values
    disabled = []
    for el in root.findall("disable_collisions"):
        pair = (el.get("link1"), el.get("link2"))
        if all(link in model.link_names for link in pair):
            disabled.append((pair[0], pair[1], el.get("reason") or ""))
        else:
            _warn(doc, warnings, el, "disable_collisions names a link the robot does not have; skipped")
    return SemanticDescription(model=model, groups=groups, group_states=states, end_effectors=end_effectors,
                               disabled_collisions=tuple(disabled), warnings=tuple(warnings))
