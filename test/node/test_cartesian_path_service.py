"""/compute_cartesian_path (``moveit_msgs/srv/GetCartesianPath``) on an in-process KinematicsNode,
through its service callback (no DDS): a path followed whole, waypoints in the link's own frame,
the start state merged over the latest joint states, path constraints, and bad input answered
with a MoveIt error code and one line, the node serving the next request."""

import math

import numpy as np
import pytest
from geometry_msgs.msg import Pose
from moveit_msgs.msg import JointConstraint, MoveItErrorCodes, RobotState
from moveit_msgs.srv import GetCartesianPath
from node_harness import ROBOTS, robot_xml
from sensor_msgs.msg import JointState

from robokin_ros import RobotModel, forward_kinematics
from robokin_ros.spatial import matrix_to_quat_xyzw

UR5E = RobotModel.from_urdf(robot_xml('ur5e'))
START = [0.3, -1.5, 1.5, -1.5, -1.5, 0.2]
CODES = {v: k for k, v in vars(MoveItErrorCodes).items() if k.isupper() and isinstance(v, int)}


def pose_of(T):
    quat = matrix_to_quat_xyzw(T[:3, :3])
    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = T[:3, 3].tolist()
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = quat.tolist()
    return pose


def tool_pose(q):
    return forward_kinematics(UR5E, np.asarray(q, float), frames=['tool0'])[0]


def request(offset=(0.0, 0.0, 0.1), **fields):
    T = tool_pose(START)
    T[:3, 3] += offset
    req = GetCartesianPath.Request(waypoints=[pose_of(T)], max_step=0.005)
    req.start_state = RobotState(joint_state=JointState(name=list(UR5E.joint_names), position=START))
    for k, v in fields.items():
        setattr(req, k, v)
    return req


@pytest.fixture
def node(make_node):
    return make_node(robot_description=robot_xml('ur5e'))


def call(node, req):
    return node.service_calls.compute_cartesian_path(req, GetCartesianPath.Response())


def test_a_straight_path_is_followed_whole(node):
    res = call(node, request())
    assert CODES[res.error_code.val] == 'SUCCESS', res.error_code.message
    assert res.fraction == 1.0 and 'followed 100 %' in res.error_code.message
    traj = res.solution.joint_trajectory
    assert traj.joint_names == list(UR5E.joint_names)
    assert len(traj.points) in (21, 22)   # 1 + floor(d / max_step) + 1, d = 0.1 to rounding
    Q = np.array([p.positions for p in traj.points])
    assert np.allclose(Q[0], START)
    T_goal = tool_pose(START)
    T_goal[:3, 3] += [0.0, 0.0, 0.1]
    assert np.abs(tool_pose(Q[-1]) - T_goal).max() < 1e-6
    times = [p.time_from_start.sec + 1e-9 * p.time_from_start.nanosec for p in traj.points]
    assert times[0] == 0.0 and np.all(np.diff(times) > 0)
    v = np.abs([p.velocities for p in traj.points])
    assert np.all(v <= UR5E.joint_velocity[UR5E.active_joints] + 1e-9)
    assert list(res.start_state.joint_state.position) == pytest.approx(START)
    assert not res.solution.multi_dof_joint_trajectory.points


def test_waypoints_in_the_link_frame_are_relative_to_its_pose(node):
    pose = Pose()
    pose.position.z = 0.05
    pose.orientation.w = 1.0
    req = request(waypoints=[pose])
    req.header.frame_id = 'tool0'
    res = call(node, req)
    assert res.fraction == 1.0, res.error_code.message
    T_goal = tool_pose(START)
    T_goal[:3, 3] += T_goal[:3, 2] * 0.05
    last = res.solution.joint_trajectory.points[-1].positions
    assert np.abs(tool_pose(last) - T_goal).max() < 1e-6


def test_a_joint_path_constraint_stops_the_path(node):
    req = request(offset=(0.0, 0.15, 0.0))
    req.path_constraints.joint_constraints = [JointConstraint(joint_name='shoulder_pan_joint', position=START[0],
                                                              tolerance_above=0.02, tolerance_below=0.02, weight=1.0)]
    res = call(node, req)
    assert CODES[res.error_code.val] == 'SUCCESS' and res.fraction < 1.0
    Q = np.array([p.positions for p in res.solution.joint_trajectory.points])
    assert np.all(np.abs(Q[:, 0] - START[0]) <= 0.02 + 1e-9)
    assert 'stopped' in res.error_code.message


def test_empty_waypoints_answer_as_move_group(node):
    res = call(node, request(waypoints=[]))
    assert CODES[res.error_code.val] == 'SUCCESS' and res.fraction == 0.0 and 'no waypoints' in res.error_code.message


def _nan_quaternion(req):
    req.waypoints[0].orientation.x = math.nan


def _zero_quaternion(req):
    req.waypoints[0].orientation.x = req.waypoints[0].orientation.y = 0.0
    req.waypoints[0].orientation.z = req.waypoints[0].orientation.w = 0.0


BAD = [
    ({'max_step': 0.0}, None, 'FAILURE', 'max_step'),
    ({'max_step': -0.01}, None, 'FAILURE', 'max_step'),
    ({'max_step': math.nan}, None, 'FAILURE', 'max_step'),
    ({'jump_threshold': -1.0}, None, 'FAILURE', 'jump_threshold'),
    ({'revolute_jump_threshold': -0.1}, None, 'FAILURE', 'revolute_jump_threshold'),
    ({'prismatic_jump_threshold': math.nan}, None, 'FAILURE', 'prismatic_jump_threshold'),
    ({}, _nan_quaternion, 'INVALID_GOAL_CONSTRAINTS', 'non-finite'),
    ({}, _zero_quaternion, 'INVALID_GOAL_CONSTRAINTS', 'zero orientation'),
    ({'group_name': 'nope'}, None, 'INVALID_GROUP_NAME', 'nope'),
    ({'link_name': 'nope'}, None, 'INVALID_LINK_NAME', 'nope'),
    ({'max_step': 1e-7}, None, 'FAILURE', 'cartesian_max_points'),
]


@pytest.mark.parametrize('fields,edit,code,words', BAD, ids=[f'{c}-{w}' for _, _, c, w in BAD])
def test_bad_input_gets_a_moveit_code_and_the_node_serves_on(node, fields, edit, code, words):
    req = request(**fields)
    if edit:
        edit(req)
    res = call(node, req)
    assert CODES[res.error_code.val] == code and words in res.error_code.message, res.error_code.message
    assert '\n' not in res.error_code.message
    assert call(node, request()).fraction == 1.0


def test_unknown_frame_and_start_joint(node):
    req = request()
    req.header.frame_id = 'nowhere'
    res = call(node, req)
    assert CODES[res.error_code.val] == 'FRAME_TRANSFORM_FAILURE' and 'nowhere' in res.error_code.message
    req = request()
    req.start_state.joint_state.name[0] = 'ghost'
    res = call(node, req)
    assert CODES[res.error_code.val] == 'INVALID_ROBOT_STATE'


def test_too_many_waypoints_are_refused_before_any_work(make_node):
    node = make_node(robot_description=robot_xml('ur5e'), cartesian_max_points=3)
    res = call(node, request(waypoints=[Pose()] * 4))
    assert CODES[res.error_code.val] == 'FAILURE' and 'cartesian_max_points' in res.error_code.message


def test_panda_with_its_srdf_group(make_node):
    node = make_node(robot_description=robot_xml('panda'), semantic_file=str(ROBOTS / 'panda.srdf'))
    panda = node.robot.model
    q = panda.home_configuration()
    q[:7] = [0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8]
    T = forward_kinematics(panda, q, frames=['panda_hand_tcp'])[0]
    T[:3, 3] += [0.1, 0.0, 0.0]
    req = GetCartesianPath.Request(group_name='panda_arm', link_name='panda_hand_tcp', waypoints=[pose_of(T)],
                                   max_step=0.01, avoid_collisions=True)
    req.start_state = RobotState(joint_state=JointState(name=list(panda.joint_names), position=q.tolist()))
    res = call(node, req)
    assert CODES[res.error_code.val] == 'SUCCESS' and res.fraction == 1.0, res.error_code.message
    assert len(res.solution.joint_trajectory.joint_names) == 7


def test_a_position_path_constraint_stops_the_path_at_its_box(node):
    """A box around the first third of the line: the path stops before leaving it, every point inside."""
    from moveit_msgs.msg import PositionConstraint
    from shape_msgs.msg import SolidPrimitive
    req = request(offset=(0.0, 0.0, 0.15))
    T0 = tool_pose(START)
    box = PositionConstraint(link_name='tool0', weight=1.0)
    box.constraint_region.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[0.1, 0.1, 0.1])]
    center = Pose()
    center.position.x, center.position.y, center.position.z = T0[:3, 3].tolist()
    center.orientation.w = 1.0
    box.constraint_region.primitive_poses = [center]
    req.path_constraints.position_constraints = [box]
    res = call(node, req)
    assert CODES[res.error_code.val] == 'SUCCESS' and 0.2 < res.fraction < 0.4, res.error_code.message
    assert 'path_constraints' in res.error_code.message
    z = [tool_pose(p.positions)[2, 3] for p in res.solution.joint_trajectory.points]
    assert max(z) <= T0[2, 3] + 0.05 + 1e-6


def test_before_any_description_the_answer_is_failure(make_node):
    node = make_node()
    res = call(node, request())
    assert CODES[res.error_code.val] == 'FAILURE' and 'no robot description' in res.error_code.message


def test_an_unexpected_exception_becomes_crash_and_the_node_serves_on(node, monkeypatch):
    from robokin_ros.node import cartesian_path_service

    def boom(*args, **kwargs):
        raise RuntimeError('boom')
    monkeypatch.setattr(cartesian_path_service, 'cartesian_path', boom)
    res = call(node, request())
    assert CODES[res.error_code.val] == 'CRASH' and 'boom' in res.error_code.message
    monkeypatch.undo()
    assert call(node, request()).fraction == 1.0
