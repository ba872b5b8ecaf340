"""An SRDF's virtual joint, as move_group reads requests (issue 20, cases 2-4): its parent frame is a
frame of /compute_fk, /compute_ik and /check_state_validity, its value comes from
``robot_state.multi_dof_joint_state`` (identity when absent), and a group containing it moves it.
Groups MoveIt builds with no movable joint exist (Baxter's hands). The handlers are called
directly; one DDS test checks the node hands the SRDF to them."""

import math

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped, Transform
from moveit_msgs.msg import RobotState
from moveit_msgs.srv import GetPositionFK, GetPositionIK, GetStateValidity
from node_harness import FIXTURES, KinNode, Probe, TFListener, assert_code, joint_state, robot_xml
from sensor_msgs.msg import JointState, MultiDOFJointState

from robokin_ros import RobotModel, frame_transform
from robokin_ros.model.srdf import parse_srdf
from robokin_ros.node import fk_service, ik_service, requests, validity_service
from robokin_ros.node.conversions import matrix_to_pose, pose_to_matrix, robot_state_to_q
from robokin_ros.node.parameters import IKSettings

TWIN = RobotModel.from_urdf(robot_xml('twin_arm_torso'))
MOBILE = parse_srdf((FIXTURES / 'srdf' / 'twin_arm_mobile.srdf').read_text(), TWIN)
SNAP = requests.RobotSnapshot(TWIN, TWIN.home_configuration(), groups=MOBILE.groups, default_group='left_arm',
                              collision=lambda: f'robot {TWIN.name!r} has no collision geometry', srdf=MOBILE)
SETTINGS = IKSettings(groups=MOBILE.groups, timeout=2.0)


def base_state(x, y, theta) -> RobotState:
    """A RobotState setting only the planar virtual joint, as MoveIt sends it (a transform)."""
    tf = Transform()
    tf.translation.x, tf.translation.y = x, y
    tf.rotation.z, tf.rotation.w = math.sin(theta / 2), math.cos(theta / 2)
    return RobotState(multi_dof_joint_state=MultiDOFJointState(joint_names=['world_joint'], transforms=[tf]))


def fk(frame, links, state=None, robot=SNAP):
    req = GetPositionFK.Request(fk_link_names=links)
    req.header.frame_id = frame
    if state is not None:
        req.robot_state = state
    return fk_service.compute_fk(req, GetPositionFK.Response(), robot, None)


def test_fk_in_the_virtual_joints_parent_frame_uses_the_requests_base_pose():
    """Was FRAME_TRANSFORM_FAILURE ("unknown link odom_combined")."""
    res = fk('odom_combined', ['base_link', 'left_tool0'], base_state(1.0, 2.0, 0.5))
    assert_code(res, 'SUCCESS')
    T_base = pose_to_matrix(res.pose_stamped[0].pose)
    expected = np.eye(4)
    expected[:2, 3] = 1.0, 2.0
    expected[:2, :2] = [[math.cos(0.5), -math.sin(0.5)], [math.sin(0.5), math.cos(0.5)]]
    np.testing.assert_allclose(T_base, expected, atol=1e-12)
    np.testing.assert_allclose(np.linalg.inv(T_base) @ pose_to_matrix(res.pose_stamped[1].pose),
                               frame_transform(TWIN, TWIN.home_configuration(), 'base_link', 'left_tool0'), atol=1e-9)
    # without a value the virtual joint is at the identity; an empty frame id is MoveIt's model frame
    res = fk('', ['base_link'])
    assert_code(res, 'SUCCESS')
    assert res.pose_stamped[0].header.frame_id == 'odom_combined'
    np.testing.assert_allclose(pose_to_matrix(res.pose_stamped[0].pose), np.eye(4), atol=1e-12)


def test_a_fixed_virtual_joints_frame_is_the_root_at_the_identity():
    fixed = parse_srdf('<robot name="t"><virtual_joint name="fixed_base" type="fixed" parent_frame="world" '
                       'child_link="base_link"/></robot>', TWIN)
    robot = requests.RobotSnapshot(TWIN, TWIN.home_configuration(), srdf=fixed)
    world, root = fk('world', ['left_tool0'], robot=robot), fk('', ['left_tool0'], robot=robot)
    assert_code(world, 'SUCCESS')
    assert root.pose_stamped[0].header.frame_id == 'base_link'    # MoveIt's model frame for a fixed one
    np.testing.assert_allclose(pose_to_matrix(world.pose_stamped[0].pose), pose_to_matrix(root.pose_stamped[0].pose))


def ik_request(group, tip, T, frame, state=None):
    req = GetPositionIK.Request()
    req.ik_request.group_name = group
    req.ik_request.ik_link_name = tip
    req.ik_request.pose_stamped = PoseStamped(pose=matrix_to_pose(T))
    req.ik_request.pose_stamped.header.frame_id = frame
    if state is not None:
        req.ik_request.robot_state = state
    return req


def test_ik_of_a_group_with_the_virtual_joint_moves_the_base():
    """Was INVALID_GROUP_NAME: the group was dropped. A target 3 m away needs the base to move."""
    moveit = MOBILE.moveit_model
    q_goal = MOBILE.moveit_configuration(TWIN.home_configuration())
    q_goal[:3] = 3.0, -1.0, 0.7
    T = frame_transform(moveit, q_goal, 'odom_combined', 'left_tool0')
    res = ik_service.compute_ik(ik_request('whole_body', '', T, 'odom_combined'), GetPositionIK.Response(), SNAP,
                              SETTINGS)
    assert_code(res, 'SUCCESS', r"group 'whole_body'")
    q = robot_state_to_q(moveit, res.solution, moveit.home_configuration())
    np.testing.assert_allclose(frame_transform(moveit, q, 'odom_combined', 'left_tool0'), T, atol=1e-4)
    assert np.hypot(q[0], q[1]) > 2.0


def test_ik_of_an_arm_group_in_the_parent_frame_keeps_the_requests_base_pose():
    moveit = MOBILE.moveit_model
    rng = np.random.default_rng(5)
    q_goal = MOBILE.moveit_configuration(TWIN.random_configuration(rng=rng))
    q_goal[:3] = 1.0, 2.0, 0.5
    T = frame_transform(moveit, q_goal, 'odom_combined', 'left_tool0')
    state = base_state(1.0, 2.0, 0.5)    # and the torso, which the arm's chain does not move
    torso = float(q_goal[MOBILE.moveit_model.q_names.index('torso_lift_joint')])
    state.joint_state = JointState(name=['torso_lift_joint'], position=[torso])
    res = ik_service.compute_ik(ik_request('left_arm', '', T, 'odom_combined', state), GetPositionIK.Response(), SNAP,
                              SETTINGS)
    assert_code(res, 'SUCCESS', r"group 'left_arm'")
    assert not res.solution.multi_dof_joint_state.joint_names     # the URDF's joints only
    q = robot_state_to_q(TWIN, res.solution, TWIN.home_configuration())
    assert q[TWIN.q_names.index('torso_lift_joint')] == torso
    q_moveit = MOBILE.moveit_configuration(q)
    q_moveit[:3] = 1.0, 2.0, 0.5
    np.testing.assert_allclose(frame_transform(moveit, q_moveit, 'odom_combined', 'left_tool0'), T, atol=1e-4)


def test_a_group_with_no_movable_joint_exists_for_every_service():
    """Baxter's hand groups: /check_state_validity answered valid=false for every state (unknown
    group); MoveIt builds the group, so it is checkable. IK has nothing to move: NO_IK_SOLUTION."""
    problems = []
    req = GetStateValidity.Request(group_name='left_hand')
    res = validity_service.check_state_validity(req, GetStateValidity.Response(), SNAP, None, problems.append,
                                        policy='solve_unchecked')
    assert res.valid, problems
    T = frame_transform(TWIN, TWIN.home_configuration(), 'left_wrist_link', 'left_tool0')
    ik = ik_service.compute_ik(ik_request('left_hand', '', T, 'left_wrist_link'), GetPositionIK.Response(), SNAP,
                             SETTINGS)
    assert_code(ik, 'NO_IK_SOLUTION', r"group 'left_hand' has no movable joint")


def test_a_planar_multi_dof_value_is_read_and_a_bad_one_refused():
    res = fk('odom_combined', ['base_link'], base_state(float('nan'), 0.0, 0.0))
    assert_code(res, 'INVALID_ROBOT_STATE', r"world_joint")
    state = RobotState(joint_state=JointState(name=['world_joint/x'], position=[0.25]))
    res = fk('odom_combined', ['base_link'], state)      # the labelled coordinate works as well
    assert_code(res, 'SUCCESS')
    assert res.pose_stamped[0].pose.position.x == pytest.approx(0.25)


def test_the_node_reads_requests_against_the_srdfs_virtual_joint(tmp_path, ros_context):
    """Over DDS: the node started with semantic_file hands the SRDF to the services; /tf and
    /tf_static stay robot_state_publisher's (no virtual joint, no parent frame)."""
    urdf = tmp_path / 'twin.urdf'
    urdf.write_text(robot_xml('twin_arm_torso'))
    proc = KinNode(tmp_path, params={'description_file': str(urdf),
                                     'semantic_file': str(FIXTURES / 'srdf' / 'twin_arm_mobile.srdf')})
    probe = Probe(ros_context, 'virtual_joint_probe')
    probe.watch = (proc,)
    tf = TFListener(probe)
    try:
        client = probe.client(GetPositionFK, '/compute_fk')
        req = GetPositionFK.Request(fk_link_names=['base_link'], robot_state=base_state(1.0, 0.0, 0.0))
        req.header.frame_id = 'odom_combined'
        res = probe.call(client, req)
        assert_code(res, 'SUCCESS')
        assert res.pose_stamped[0].pose.position.x == pytest.approx(1.0)
        states = probe.publisher(JointState, '/joint_states')
        home = joint_state(TWIN.joint_names, TWIN.home_configuration())
        # (published until /tf comes: one message sent before the node's subscription is matched is lost)
        probe.spin_until(lambda: states.publish(home) or (tf.latest and tf.static), '/tf and /tf_static')
        frames = {frame for pair in list(tf.latest) + list(tf.static) for frame in pair}
        assert 'base_link' in frames and 'odom_combined' not in frames
    finally:
        probe.close()
        proc.stop()


def test_read_ik_request_solves_on_the_moveit_model_only_for_groups_with_the_virtual_joint():
    moveit = MOBILE.moveit_model
    state = base_state(1.0, 2.0, 0.5)
    q_view = robot_state_to_q(moveit, state, MOBILE.moveit_configuration(TWIN.home_configuration()))
    T = frame_transform(moveit, q_view, 'odom_combined', 'left_tool0')
    whole = ik_service.read_ik_request(SNAP, ik_request('whole_body', '', T, 'odom_combined', state).ik_request,
                                       SETTINGS)
    assert whole.model is moveit and whole.semantic is MOBILE and 'world_joint' in whole.joints
    np.testing.assert_array_equal(whole.seed, q_view)
    np.testing.assert_allclose(whole.targets[0], frame_transform(moveit, q_view, whole.base, 'left_tool0'), atol=1e-12)
    arm = ik_service.read_ik_request(SNAP, ik_request('left_arm', '', T, 'odom_combined', state).ik_request, SETTINGS)
    assert arm.model is TWIN and arm.semantic is None and arm.base == 'torso_link'
    np.testing.assert_array_equal(arm.seed, MOBILE.model_configuration(q_view))
    np.testing.assert_allclose(arm.targets[0], frame_transform(TWIN, arm.seed, 'torso_link', 'left_tool0'), atol=1e-12)
