"""SRDF reading (MoveIt's own SRDFs of real robots and small fixtures) and IK groups derived from
the tree: groups, named configurations, end effectors, disabled collisions, skipped parts."""

from __future__ import annotations

import subprocess
import sys
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


# ------------------------------------------------------------------ virtual joints, chains, passive (issue 20)
MOBILE = SRDF / "twin_arm_mobile.srdf"
LEFT = ("left_shoulder_pan_joint", "left_shoulder_lift_joint", "left_upper_arm_roll_joint", "left_elbow_flex_joint",
        "left_forearm_roll_joint", "left_wrist_flex_joint")
RIGHT = tuple(j.replace("left", "right") for j in LEFT)


def test_a_planar_virtual_joint_is_the_root_joint_of_the_moveit_model_and_its_groups_are_built():
    """Issue 20, cases 2-4 (PR2's base, whole_body, arms_base): the groups using the virtual joint
    were dropped; MoveIt makes it the root joint and builds them."""
    semantic = parse_srdf(MOBILE.read_text(), TWIN)
    moveit = semantic.moveit_model
    assert semantic.virtual_joint.name == "world_joint" and semantic.virtual_joint.type == "planar"
    assert moveit.root_link == "odom_combined" and moveit.link_names[1] == TWIN.root_link
    assert moveit.q_names[:3] == ("world_joint/x", "world_joint/y", "world_joint/theta")
    assert moveit.n_q == TWIN.n_q + 3
    assert semantic.groups["base"] == IKGroup("base", "odom_combined", "base_link", ("world_joint",))
    body = semantic.groups["whole_body"]
    assert (body.base, body.tip) == ("odom_combined", "left_tool0")
    assert body.joints == ("world_joint", "torso_lift_joint") + LEFT
    assert semantic.groups["arms_base"].joints == ("world_joint",) + LEFT + RIGHT
    assert not semantic.warnings, semantic.warnings
    # the URDF's configuration and the moveit model's correspond
    q = TWIN.random_configuration(rng=np.random.default_rng(3))
    q_moveit = semantic.moveit_configuration(q)
    np.testing.assert_array_equal(semantic.model_configuration(q_moveit), q)
    np.testing.assert_allclose(frame_transform(moveit, q_moveit, "base_link", "left_tool0"),
                               frame_transform(TWIN, q, "base_link", "left_tool0"), atol=1e-12)
    np.testing.assert_allclose(frame_transform(moveit, q_moveit, "odom_combined", "base_link"), np.eye(4), atol=1e-12)


def test_ik_of_a_group_with_a_planar_virtual_joint_moves_the_base():
    """Issue 20, case 2: a target 3 m away is out of the arm's reach unless the base moves."""
    semantic = parse_srdf(MOBILE.read_text(), TWIN)
    moveit, body = semantic.moveit_model, semantic.groups["whole_body"]
    q_goal = semantic.moveit_configuration(TWIN.home_configuration())
    q_goal[:3] = [3.0, -1.0, 0.7]
    target = frame_transform(moveit, q_goal, body.base, body.tip)
    seed = semantic.moveit_configuration(TWIN.home_configuration())
    result = solve_ik(moveit, target, body.tip, seed=seed, base=body.base, active_joints=body.joints, timeout=2.0)
    assert bool(result.success)
    np.testing.assert_allclose(frame_transform(moveit, result.q, body.base, body.tip), target, atol=1e-4)
    assert np.hypot(*result.q[:2]) > 2.0


def test_a_floating_virtual_joint_gives_seven_coordinates_and_a_fixed_one_an_identity_frame():
    """Issue 20, case 3 (Atlas: floating ``world_joint``) and the fixed ``world`` frame."""
    floating = parse_srdf('<robot name="t"><virtual_joint name="world_joint" type="Floating" parent_frame=" world " '
                          'child_link="base_link"/><group name="base"><joint name="world_joint"/></group>'
                          '<group name="legs_base"><group name="base"/><joint name="torso_lift_joint"/></group>'
                          '</robot>', TWIN)
    moveit = floating.moveit_model
    assert moveit.n_q == TWIN.n_q + 7 and moveit.root_link == "world"
    assert floating.groups["base"].joints == ("world_joint",)
    assert floating.groups["legs_base"].joints == ("world_joint", "torso_lift_joint")
    fixed = parse_srdf('<robot name="t"><virtual_joint name="fixed_base" type="fixed" parent_frame="world" '
                       'child_link="base_link"/></robot>', TWIN)
    assert fixed.moveit_model.n_q == TWIN.n_q and fixed.moveit_model.root_link == "world"
    q = fixed.moveit_configuration(TWIN.home_configuration())
    np.testing.assert_allclose(frame_transform(fixed.moveit_model, q, "world", "base_link"), np.eye(4))


def test_a_virtual_joint_not_on_the_root_or_of_unknown_type_is_read_as_moveit_does():
    """MoveIt skips a virtual joint whose child is not the URDF's root; srdfdom reads an unknown
    type as fixed."""
    semantic = parse_srdf('<robot name="t"><virtual_joint name="vj" type="planar" parent_frame="odom" '
                          'child_link="torso_link"/><virtual_joint name="vj2" type="wheeled" parent_frame="odom" '
                          'child_link="base_link"/></robot>', TWIN)
    assert semantic.virtual_joint.name == "vj2" and semantic.virtual_joint.type == "fixed"
    text = " ".join(str(w) for w in semantic.warnings)
    assert "torso_link" in text and "wheeled" in text


def test_chains_through_a_common_ancestor_or_reversed_are_built_as_moveit_walks_them():
    """Issue 20, case 5: srdfdom accepts any two links of the tree as a chain, and MoveIt's
    addJointModelGroup walks from the tip up to the base, else from the base up to the tip's
    path; the parent joint of their common ancestor (torso_lift_joint) is in the group too."""
    semantic = parse_srdf(MOBILE.read_text(), TWIN)
    span = semantic.groups["hand_to_hand"]
    assert set(span.joints) == {"torso_lift_joint"} | set(LEFT) | set(RIGHT)
    assert (span.base, span.tip) == ("base_link", "right_tool0")
    reverse = semantic.groups["hand_to_torso"]
    assert set(reverse.joints) == {"torso_lift_joint"} | set(LEFT)


def test_a_group_of_fixed_joints_only_is_built_as_moveit_builds_it():
    """Issue 20, case 4 (Baxter's hand groups): MoveIt builds a group with no active joint."""
    semantic = parse_srdf(MOBILE.read_text(), TWIN)
    assert semantic.groups["left_hand"] == IKGroup("left_hand", "left_wrist_link", "left_tool0", ())
    assert semantic.end_effectors["left_eef"].group == "left_hand"
    # the end effector's parent link is mid-chain of left_arm: it does not become the tip
    assert semantic.groups["left_arm"] == IKGroup("left_arm", "torso_link", "left_tool0", ())


def test_passive_joints_are_read_and_stay_in_their_groups():
    """Issue 20, case 7: MoveIt marks a passive joint (JointModel::setPassive) and keeps it an
    active joint of its groups; its kinematics plugins move it like any other."""
    semantic = parse_srdf(MOBILE.read_text(), TWIN)
    assert semantic.passive_joints == ("head_pan_joint",)
    assert semantic.groups["head"].joints == ("head_pan_joint",)
    ghost = parse_srdf('<robot name="t"><passive_joint name="no_joint"/></robot>', TWIN)
    assert ghost.passive_joints == () and "no_joint" in str(ghost.warnings[0])


def test_each_group_lost_to_a_missing_subgroup_is_named_once():
    """Issue 20, case 2: the warnings named one group over and over and never the larger groups
    lost; now one warning per group left out, naming it."""
    srdf = ('<robot name="t"><group name="a"><joint name="torso_lift_joint"/><group name="ghost"/></group>'
            '<group name="b"><group name="a"/><joint name="head_pan_joint"/></group>'
            '<group name="c"><group name="b"/></group><group name="ok"><joint name="head_pan_joint"/></group></robot>')
    semantic = parse_srdf(srdf, TWIN)
    assert list(semantic.groups) == ["ok"]
    assert sorted(w.element for w in semantic.warnings) == ["<group name='a'>", "<group name='b'>",
                                                            "<group name='c'>"]
    assert "ghost" in str(next(w for w in semantic.warnings if w.element == "<group name='a'>"))


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e309", "abc", "0.1 0.2", ""])
def test_group_state_values_that_are_not_one_finite_number_are_skipped_and_named(value):
    """Issue 24, case 13: NaN, inf, 1e309, text: the joint's value is skipped with a warning
    naming group, state and joint; the state keeps its other values."""
    srdf = ('<robot name="panda"><group name="arm"><chain base_link="panda_link0" tip_link="panda_link8"/></group>'
            f'<group_state name="pose" group="arm"><joint name="panda_joint1" value="{value}"/>'
            '<joint name="panda_joint2" value="0.25"/></group_state></robot>')
    semantic = parse_srdf(srdf, PANDA)
    q = PANDA.q_to_dict(semantic.named_configuration("pose"))
    assert np.isfinite(list(q.values())).all() and q["panda_joint2"] == 0.25
    assert q["panda_joint1"] == PANDA.q_to_dict(PANDA.home_configuration())["panda_joint1"]
    (warning,) = semantic.warnings
    assert all(word in str(warning) for word in ("arm", "pose", "panda_joint1")), warning


def _subgroup_chain(depth: int) -> str:
    groups = ['<group name="g0"><joint name="panda_joint1"/></group>']
    groups += [f'<group name="g{i}"><group name="g{i - 1}"/></group>' for i in range(1, depth)]
    return '<robot name="panda">' + "\n".join(groups) + "</robot>"


def _subgroup_dag(levels: int, pairs: bool = False) -> str:
    """Each level names the previous one twice (``pairs``: groups d<i> and e<i> each name both
    d<i-1> and e<i-1>): a naive recursion visits the first group 2^levels times."""
    names = ("d", "e") if pairs else ("d",)
    groups = [f'<group name="{n}0"><joint name="panda_joint1"/></group>' for n in names]
    for i in range(1, levels):
        subs = "".join(f'<group name="{n}{i - 1}"/>' for n in (names if pairs else names * 2))
        groups += [f'<group name="{n}{i}">{subs}</group>' for n in names]
    return '<robot name="panda">' + "\n".join(groups) + "</robot>"


def test_deep_and_shared_subgroups_are_resolved_once_without_recursion():
    """Issue 24, case 2: a 1,100-deep subgroup chain (44 kB) raised RecursionError (and took the
    node down); a 40-level DAG naming each level twice (2.6 kB) took exponential time. Run in a
    subprocess with a generous timeout so a regression fails instead of hanging the suite."""
    chain, dag = _subgroup_chain(1100), _subgroup_dag(40)
    assert 40_000 < len(chain) < 60_000 and 2_000 < len(dag) < 3_000
    script = f"""
import sys
sys.path[:0] = [{str(ROOT)!r}, {str(Path(__file__).parent)!r}]
sys.setrecursionlimit(1000)
from test_srdf import PANDA, _subgroup_chain, _subgroup_dag
from robokin_ros.model.srdf import parse_srdf
chain = parse_srdf(_subgroup_chain(1100), PANDA)
dag = parse_srdf(_subgroup_dag(40), PANDA)
pairs = parse_srdf(_subgroup_dag(40, pairs=True), PANDA)
print(len(chain.groups), chain.groups["g1099"].joints, len(dag.groups), dag.groups["d39"].joints,
      len(pairs.groups), pairs.groups["e39"].joints, len(chain.warnings + dag.warnings + pairs.warnings))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[0] == "1100 ('panda_joint1',) 40 ('panda_joint1',) 80 ('panda_joint1',) 0"


def corpus_model(name: str) -> RobotModel:
    path = CORPUS / name
    if not path.is_file():
        pytest.skip(f"{path} is absent (../shared is not beside this checkout)")
    return RobotModel.from_urdf_file(path)


def test_moveit_pr2_srdf_builds_every_group_its_planar_base_included():
    """Issue 20, case 2 on MoveIt's own PR2 SRDF: ``base`` and ``whole_body`` were dropped."""
    pr2 = corpus_model("pr2.urdf")
    semantic = parse_srdf((SRDF / "pr2_groups.srdf").read_text(), pr2)
    assert semantic.warnings == ()
    assert list(semantic.groups) == ["base", "left_arm", "left_arm_and_torso", "right_arm", "right_arm_and_torso",
                                     "arms", "head", "torso", "arms_and_torso", "whole_body", "right_gripper",
                                     "left_gripper"]
    assert semantic.moveit_model.root_link == "odom_combined"
    arms = semantic.groups["arms"].joints
    assert semantic.groups["whole_body"].joints == ("world_joint", "torso_lift_joint") + arms and len(arms) == 14
    assert semantic.passive_joints == ("world_joint",)


def test_moveit_baxter_srdf_builds_its_hand_groups_and_skips_its_virtual_joint_as_moveit_does():
    """Issue 20, case 4 on MoveIt's Baxter SRDF: the hand groups (fixed joints only) were dropped,
    so /check_state_validity answered valid=false for them. The virtual joint's child 'torso' is
    not this URDF's root 'base': MoveIt skips it with a warning, and so do we."""
    baxter = corpus_model("baxter.urdf")
    semantic = parse_srdf((SRDF / "baxter_groups.srdf").read_text(), baxter)
    assert semantic.groups["left_hand"] == IKGroup("left_hand", "left_wrist", "left_gripper", ())
    assert semantic.groups["right_hand"] == IKGroup("right_hand", "right_wrist", "right_gripper", ())
    assert len(semantic.groups["both_arms"].joints) == 14
    assert semantic.virtual_joint is None and semantic.moveit_model is baxter
    (warning,) = semantic.warnings
    assert "'torso' is not the robot's root link 'base'" in str(warning)


def test_group_state_values_of_the_virtual_joint_or_a_fixed_joint_are_not_used_and_said_so():
    """A named configuration is the URDF's: a multi-coordinate virtual joint's values (MoveIt
    takes them as its variables) and a fixed joint's are left out with a warning each."""
    srdf = MOBILE.read_text().replace("</robot>", '<group_state name="away" group="whole_body">'
                                      '<joint name="world_joint" value="1 2 0.3"/>'
                                      '<joint name="left_gripper_joint" value="0"/>'
                                      '<joint name="torso_lift_joint" value="0.2"/></group_state></robot>')
    semantic = parse_srdf(srdf, TWIN)
    assert TWIN.q_to_dict(semantic.named_configuration("away"))["torso_lift_joint"] == 0.2
    text = [str(w) for w in semantic.warnings]
    assert len(text) == 2
    assert "world_joint" in text[0] and "several coordinates" in text[0]
    assert "left_gripper_joint" in text[1] and "is fixed" in text[1]


def test_add_root_refuses_a_used_name_or_a_joint_type_a_virtual_joint_cannot_have():
    from robokin_ros.errors import ModelError
    from robokin_ros.model.builder import add_root

    with pytest.raises(ModelError, match="link 'torso_link' already exists"):
        add_root(TWIN, "torso_link", "vj", "fixed")
    with pytest.raises(ModelError, match="joint 'head_pan_joint' already exists"):
        add_root(TWIN, "odom", "head_pan_joint", "planar")
    with pytest.raises(ModelError, match="fixed, floating or planar, got revolute"):
        add_root(TWIN, "odom", "vj", "revolute")
    moved = add_root(TWIN, "odom", "vj", "floating")
    assert moved.to_urdf() and RobotModel.from_urdf(moved.to_urdf()).equals(moved)
