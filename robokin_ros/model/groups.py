"""IK groups (MoveIt's planning groups) and the groups derived from the tree when there is no SRDF."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from .robot_model import JointType, RobotModel

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


def default_groups(model: RobotModel) -> dict[str, IKGroup]:
    """IK groups of a robot without an SRDF: one per leaf chain from the root, named after its
    tip (leaves whose path has no movable joint, or the same joints as an earlier leaf, are
    left out), then :data:`ALL_GROUP` (every joint, no default tip).

    The first group is the default one (:func:`default_group_name`).
    """
    chains = []
    seen = set()
    for leaf in model.leaf_links:
        joints = model.path_joints(model.root_link, leaf)
        if joints and joints not in seen:
            seen.add(joints)
            chains.append(IKGroup(leaf, "", leaf, ()))
    order = {name: i for i, name in enumerate(model.link_names)}
    chains.sort(key=lambda g: _chain_rank(model, g, order))
    groups = {g.name: g for g in chains}
    groups.setdefault(ALL_GROUP, IKGroup(ALL_GROUP))
    return groups


def _chain_rank(model: RobotModel, group: IKGroup, order: Mapping[str, int]):
    """Sort key: most rotational joints first (an arm before a gripper finger hanging off it),
    then fewest joints (the tool frame before a finger), then document order."""
    joints = model.path_joints(model.root_link, group.tip)
    rotational = sum(model.joint_types[model.joint_index(j)] in (JointType.REVOLUTE, JointType.CONTINUOUS)
                     for j in joints)
    return (-rotational, len(joints), order[group.tip])


def default_group_name(groups: Mapping[str, IKGroup]) -> str:
    """The group used when a request names none: the first group with a tip, else the first."""
    for name, group in groups.items():
        if group.tip:
            return name
    return next(iter(groups), "")
