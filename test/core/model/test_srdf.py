"""SRDF reading (MoveIt's own SRDFs of real robots and small fixtures) and IK groups derived from
the tree: groups, named configurations, end effectors, disabled collisions, skipped parts."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robokin_ros import RobotModel, frame_transform, solve_ik
from robokin_ros.model.groups import IKGroup
from robokin_ros.model.srdf import SRDFError, UnknownStateError, parse_srdf

ROOT = Path(__file__).resolve().parents[3]
SRDF = ROOT / "test" / "fixtures" / "srdf"
ROBOTS = ROOT / "robokin_ros" / "robots"
CORPUS = ROOT.parent / "shared" / "urdf-corpus"

PANDA = RobotModel.from_urdf_file(ROBOTS / "panda.urdf")
TWIN = RobotModel.from_urdf_file(ROBOTS / "twin_arm_torso.urdf")


def test_moveit_panda_srdf():
    semantic = parse_srdf((SRDF / "panda.srdf").read_text(), PANDA)
    assert list(semantic.groups) == ["panda_arm", "hand", "panda_arm_hand"]
    assert semantic.groups["panda_arm"] == IKGroup("panda_arm", "panda_link0", "panda_link8", ())
    # a link group brings each link's parent joint; the mimic finger joint is not independent
    assert semantic.groups["hand"].joints == ("panda_finger_joint1",)
    # subgroups: the arm chain and the hand's joint
    arm_hand = semantic.groups["panda_arm_hand"]
    assert arm_hand.joints == tuple(f"panda_joint{i}" for i in range(1, 8)) + ("panda_finger_joint1",)
    assert semantic.end_effectors["hand"].parent_link == "panda_link8"
    assert ("panda_link0", "panda_link1", "Adjacent") in semantic.disabled_collisions
    assert semantic.warnings == ()


def test_named_configuration_is_home_with_the_state_values():
    semantic = parse_srdf((SRDF / "panda.srdf").read_text(), PANDA)
    q = semantic.named_configuration("ready")
    expected = dict(zip([f"panda_joint{i}" for i in range(1, 8)], [0, -0.785, 0, -2.356, 0, 1.571, 0.785]))
    assert PANDA.q_to_dict(q) == {**PANDA.q_to_dict(PANDA.home_configuration()), **expected}
    assert PANDA.q_to_dict(semantic.named_configuration("open"))["panda_finger_joint1"] == 0.035
    with pytest.raises(UnknownStateError, match="unknown named configuration 'redy'; did you mean 'ready'"):
        semantic.named_configuration("redy")
    with pytest.raises(KeyError):
        semantic.named_configuration("ready", group="hand")


def test_ambiguous_state_needs_its_group():
    semantic = parse_srdf((SRDF / "twin_arm_mixed.srdf").read_text(), TWIN)
    with pytest.raises(UnknownStateError, match="in groups"):
        semantic.named_configuration("home")
    q = semantic.named_configuration("home", group="left_arm_joints")
    assert TWIN.q_to_dict(q)["left_elbow_flex_joint"] == -1.0


def test_joint_link_and_subgroup_members_and_end_effector_tip():
    semantic = parse_srdf((SRDF / "twin_arm_mixed.srdf").read_text(), TWIN)
    arm = semantic.groups["left_arm_joints"]
    # MoveIt's kinematics plugin loader: the tip is the group's last link, the base its first
    # link's parent (an end effector hanging from the group does not move the tip)
    assert (arm.base, arm.tip) == ("torso_link", "left_wrist_link")
    assert len(arm.joints) == 6
    assert semantic.groups["torso_and_left_arm"].joints == ("torso_lift_joint",) + arm.joints
    assert semantic.groups["left_gripper"].joints == ("left_gripper_finger_left_joint",)


def test_parts_naming_what_the_robot_lacks_are_skipped_with_warnings_on_their_lines():
    path = SRDF / "twin_arm_mixed.srdf"
    semantic = parse_srdf(path.read_text(), TWIN)
    marked = [i for i, line in enumerate(path.read_text().splitlines(), 1) if "<!-- SKIP-LINE -->" in line]
    assert sorted({w.line for w in semantic.warnings}) == marked
    assert "ghost_arm" not in semantic.groups and "bad_subgroup" not in semantic.groups
    text = [str(w) for w in semantic.warnings]
    for word in ("no_such_link", "nowhere", "no_such_joint"):   # each named once, where it is
        assert sum(word in t for t in text) == 1, text


@pytest.mark.parametrize("text, words", [
    ("<robot", ["invalid SRDF", "malformed XML"]),
    ("<sdf/>", ["invalid SRDF", "<sdf>"]),
    ("", ["empty"]),
])
def test_unreadable_srdf(text, words):
    with pytest.raises(SRDFError) as info:
        parse_srdf(text, PANDA)
    assert isinstance(info.value, ValueError)
    for word in words:
        assert word in str(info.value)


def test_srdf_group_solves_ik_to_its_tip():
    semantic = parse_srdf((SRDF / "panda.srdf").read_text(), PANDA)
    group = semantic.groups["panda_arm"]
    q_true = PANDA.random_configuration(rng=np.random.default_rng(1))
    target = frame_transform(PANDA, q_true, group.base, group.tip)
    result = solve_ik(PANDA, target, group.tip, seed=semantic.named_configuration("ready"), base=group.base,
                      timeout=1.0, max_iterations=10_000)
    assert bool(result.success)
    np.testing.assert_allclose(frame_transform(PANDA, result.q, group.base, group.tip), target, atol=1e-4)


TOOL_CHAIN = """<robot name="tool_chain">
  <link name="base"/><link name="l1"/><link name="l2"/><link name="tool"/><link name="finger"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="l1"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="j2" type="revolute"><parent link="l1"/><child link="l2"/><origin xyz="0.5 0 0"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
  <joint name="tool_joint" type="fixed"><parent link="l2"/><child link="tool"/><origin xyz="0.3 0 0" rpy="0 1.5708 0"/></joint>
  <joint name="finger_joint" type="prismatic"><parent link="tool"/><child link="finger"/><axis xyz="1 0 0"/>
    <limit lower="0" upper="0.04" effort="1" velocity="1"/></joint>
</robot>"""


def test_a_joint_group_ending_in_a_fixed_joint_has_its_last_link_as_tip():
    """Issue 20, case 1: group {j1, j2, tool_joint} -> tip 'tool' (MoveIt's), not 'l2'."""
    model = RobotModel.from_urdf(TOOL_CHAIN)
    srdf = ('<robot name="tool_chain"><group name="arm"><joint name="j1"/><joint name="j2"/>'
            '<joint name="tool_joint"/></group></robot>')
    arm = parse_srdf(srdf, model).groups["arm"]
    assert (arm.base, arm.tip, arm.joints) == ("base", "tool", ("j1", "j2"))


def test_an_end_effector_does_not_choose_the_tip_and_one_naming_a_missing_group_is_skipped():
    """Issue 20, case 5: an end effector hanging mid-chain is not the tip (MoveIt solves for the
    group's last link); one naming a group the SRDF lacks is left out with a warning."""
    model = RobotModel.from_urdf(TOOL_CHAIN)
    srdf = ('<robot name="tool_chain"><group name="arm"><chain base_link="base" tip_link="tool"/></group>'
            '<group name="hand"><joint name="finger_joint"/></group>'
            '<end_effector name="ee" group="hand" parent_link="l1" parent_group="arm"/>'
            '<end_effector name="ghost" group="no_group" parent_link="tool"/></robot>')
    semantic = parse_srdf(srdf, model)
    assert semantic.groups["arm"] == IKGroup("arm", "base", "tool", ())
    assert list(semantic.end_effectors) == ["ee"]
    assert any("no_group" in str(w) for w in semantic.warnings)


def test_a_missing_member_drops_only_the_member_and_names_are_trimmed():
    """Issue 20, case 5, as srdfdom reads it: the group keeps its other members; names with
    surrounding whitespace are trimmed."""
    model = RobotModel.from_urdf(TOOL_CHAIN)
    srdf = ('<robot name="tool_chain"><group name=" arm "><joint name=" j1 "/><joint name="no_such_joint"/>'
            '<joint name="j2"/></group></robot>')
    semantic = parse_srdf(srdf, model)
    assert semantic.groups["arm"].joints == ("j1", "j2")
    assert len(semantic.warnings) == 1
    assert "no_such_joint" in str(semantic.warnings[0])


def test_a_group_state_value_for_a_joint_outside_its_group_is_ignored():
    """Issue 20, case 5: MoveIt applies a state's values to its group's joints only."""
    model = RobotModel.from_urdf(TOOL_CHAIN)
    srdf = ('<robot name="tool_chain"><group name="arm"><joint name="j1"/><joint name="j2"/></group>'
            '<group_state name="up" group="arm"><joint name="j1" value="0.5"/><joint name="finger_joint" value="0.02"/>'
            '</group_state></robot>')
    semantic = parse_srdf(srdf, model)
    q = model.q_to_dict(semantic.named_configuration("up"))
    assert q["j1"] == 0.5 and q["finger_joint"] == model.q_to_dict(model.home_configuration())["finger_joint"]
    assert any("finger_joint" in str(w) and "not in group" in str(w) for w in semantic.warnings)


def test_a_group_naming_itself_is_left_out_with_a_warning_not_a_recursion():
    """Issue 20, case 6 (review F1), as srdfdom's loadGroups reads it: a group whose subgroups are
    not all satisfied (here itself) is removed ("has unsatisfied subgroups"), with a warning
    naming it; no recursion."""
    srdf = ('<robot name="panda"><group name="arm"><joint name="panda_joint1"/><group name="arm"/></group>'
            '<group name="hand"><joint name="panda_finger_joint1"/></group></robot>')
    semantic = parse_srdf(srdf, PANDA)
    assert list(semantic.groups) == ["hand"]
    assert [w.element for w in semantic.warnings] == ["<group name='arm'>"]
    assert "cycle" in semantic.warnings[0].message
