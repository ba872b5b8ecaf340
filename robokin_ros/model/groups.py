"""IK groups (MoveIt's planning groups) and the groups derived from the tree when there is no SRDF."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from .robot_model import RobotModel
from .tree_roles import Limb, TreeRoles

#: Name of the group of every movable joint (root base, no default tip).
ALL_GROUP = "all"


@dataclasses.dataclass(frozen=True)
class IKGroup:
    """An IK group (MoveIt's planning group).

    Attributes:
        name: the group's name.
        base: link the targets are solved in ("" : the root link).
        tip: default IK link when a request names none ("" : the request must name one).
        joints: independent joints that may move (empty: those between base and tip, or every
            independent joint when there is no tip).
    """

    name: str
    base: str = ""
    tip: str = ""
    joints: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class DerivedGroups:
    """The IK groups of a robot without an SRDF (:func:`derive_groups`).

    Attributes:
        groups: name -> group: the default group first, then the same frame on the limbs ranked
            like its own (the other arm), then one group per leaf link that an independent joint
            moves (link order), then :data:`ALL_GROUP` (every joint, no default tip).
        default: name of the default group (:data:`ALL_GROUP` when no joint moves a link).
        reason: why the default group is the default, a phrase for a log ("the tool frame 'tool0'
            (fixed to its last link 'wrist_3_link') of the longest arm (6 joints from ...)").
    """

    groups: dict[str, IKGroup]
    default: str
    reason: str


def derive_groups(model: RobotModel) -> DerivedGroups:
    """IK groups a person would pick for ``model`` when there is no SRDF.

    Every group is solved in the root link with the independent joints between the root and
    its tip (a tool frame at a hand gets the arm's joints, a finger tip the arm's and its own).
    The default group ends at the frame of the main limb (:class:`~.tree_roles.TreeRoles`): the
    tool frame of the longest arm, else its hand; on a robot without arms the lowest link of
    the longest leg (a foot); else the end of the longest limb.
    """
    roles = TreeRoles(model)
    main = roles.main_limb
    tips = [] if main is None else [roles.end_frame(limb)[0] for limb in (main, *roles.twin_limbs)]
    tips += [i for i, kids in enumerate(model.link_children) if not kids and roles.driven[i]]
    groups: dict[str, IKGroup] = {}
    for tip in dict.fromkeys(tips):
        name = model.link_names[tip]
        while name == ALL_GROUP or (name != model.link_names[tip] and name in model.link_names):
            name += "_link"   # a link named like the group of every joint; no other link's name
        groups[name] = IKGroup(name, "", model.link_names[tip], ())
    groups[ALL_GROUP] = IKGroup(ALL_GROUP)
    default = next(iter(groups))
    return DerivedGroups(groups, default, _default_reason(roles, main, default))


def _default_reason(roles: TreeRoles, main: Limb | None, default: str) -> str:
    """Why ``default`` (the group of the main limb's end frame) is the default, a phrase."""
    if main is None:
        return f"no joint moves a link, so the default group {default!r} has no tip"
    names = roles.model.link_names
    tip, what = roles.end_frame(main)
    limb = "arm" if main.is_arm else "leg" if main.is_leg else "limb"
    equal = f", the first of {len(roles.twin_limbs) + 1} equal {limb}s" if roles.twin_limbs else ""
    chain = (f"the longest {limb} ({main.n_joints} joint{'s' * (main.n_joints != 1)} from "
             f"{names[main.start]!r} to {names[main.end]!r}{equal})")
    fingers = bool(roles.moving_children(main.end))
    if what == "foot":
        return f"the foot {names[tip]!r} (its lowest link) of {chain}; the robot has no arm"
    if what == "tool frame":
        at = f"the hand {names[main.hand]!r}" if fingers else f"its last link {names[main.end]!r}"
        return f"the tool frame {names[tip]!r} (fixed to {at}) of {chain}"
    if fingers:
        return f"the hand {names[tip]!r} (the fingers hang from it) of {chain}; it has no tool frame"
    return f"the last link {names[tip]!r} of {chain}; " + (
        "it has no tool frame" if main.is_arm else "the robot has neither arm nor leg")


def default_groups(model: RobotModel) -> dict[str, IKGroup]:
    """The groups of :func:`derive_groups`, the default one first (:func:`default_group_name`)."""
    return derive_groups(model).groups


def default_group_name(groups: Mapping[str, IKGroup]) -> str:
    """The group used when a request names none: the first group with a tip, else the first."""
    for name, group in groups.items():
        if group.tip:
            return name
    return next(iter(groups), "")
