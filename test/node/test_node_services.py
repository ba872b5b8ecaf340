"""/compute_ik and /compute_fk: over DDS against a kin_node process (twin_arm_torso, two IK
groups), and the handlers called directly for the rarer error paths."""

import dataclasses
import re
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from geometry_msgs.msg import PoseStamped
from moveit_msgs.msg import JointConstraint, MoveItErrorCodes, PositionConstraint, VisibilityConstraint
from moveit_msgs.srv import GetPositionFK, GetPositionIK
from node_harness import (
    PANDA_UNREACHABLE_XYZ,
    KinNode,
    Probe,
    assert_code,
    joint_state,
    robot_state,
    robot_xml,
    solution_q,
)
from sensor_msgs.msg import JointState

from robokin_ros import RobotModel, forward_kinematics, frame_transform, ik
from robokin_ros.model.srdf import IKGroup
from robokin_ros.node import fk_service, ik_service, requests
from robokin_ros.node.conversions import matrix_to_pose, pose_to_matrix
from robokin_ros.node.parameters import IKSettings

MODEL = RobotModel.from_urdf(robot_xml('twin_arm_torso'))
LEFT = [n for n in MODEL.joint_names if n.startswith('left_') and 'finger' not in n]
RIGHT = [n for n in MODEL.joint_names if n.startswith('right_') and 'finger' not in n]
GROUPS = {'left_arm': {'base': 'base_link', 'tip': 'left_tool0'},
          'arms': {'base': 'torso_link', 'joints': LEFT + RIGHT}}


@pytest.fixture(scope='module')
def node(tmp_path_factory):
    proc = KinNode(tmp_path_factory.mktemp('services'), params={
        'robot_description': robot_xml('twin_arm_torso'), 'ik_group_names': list(GROUPS),
        'ik_groups': GROUPS, 'default_ik_group': 'left_arm', 'frame_prefix': 'tw/'})
    yield proc
    proc.stop()


@pytest.fixture(scope='module')
def probe(ros_context, node):
    p = Probe(ros_context, 'services_probe')
    p.watch = (node,)
    p.ik = p.client(GetPositionIK, '/compute_ik')
    p.fk = p.client(GetPositionFK, '/compute_fk')
    yield p
    p.close()


def q_of(names, values):
    return MODEL.q_from_dict(dict(zip(names, values)))


def pose_stamped(T, frame=''):
    ps = PoseStamped(pose=matrix_to_pose(T))
    ps.header.frame_id = frame
    return ps


def ik_request(group='', link='', target=None, seed=None, timeout=5.0, frame='', **fields):
    req = GetPositionIK.Request()
    ik = req.ik_request
    ik.group_name, ik.ik_link_name = group, link
    if target is not None:
        ik.pose_stamped = pose_stamped(target, frame)
    if seed is not None:
        ik.robot_state = robot_state(MODEL, seed)
    ik.timeout = Duration(sec=int(timeout), nanosec=int((timeout % 1) * 1e9))
    for k, v in fields.items():
        setattr(ik, k, v)
    return req


def near(q, rng, scale=0.05):
    return MODEL.clamp(q + scale * np.random.default_rng(rng).standard_normal(q.shape))


def test_ik_round_trip_in_the_default_group(probe):
    q_true = MODEL.random_configuration(rng=10)
    target = frame_transform(MODEL, q_true, 'base_link', 'left_tool0')
    seed = near(q_true, 11)
    res = probe.call(probe.ik, ik_request(target=target, seed=seed))
    assert_code(res, 'SUCCESS', r"group 'left_arm'")
    q = solution_q(MODEL, res)
    np.testing.assert_allclose(frame_transform(MODEL, q, 'base_link', 'left_tool0'), target, atol=1e-4)
    # joints outside the group keep the seed; the full state is returned (mimic fingers included)
    outside = [MODEL.q_names.index(n) for n in ['head_pan_joint'] + RIGHT]
    np.testing.assert_array_equal(q[outside], seed[outside])
    assert set(res.solution.joint_state.name) == set(MODEL.all_joint_values(q))
    assert MODEL.within_limits(q)


def test_ik_multi_tip_with_a_target_in_a_moving_frame(probe):
    q_true = MODEL.random_configuration(rng=12)
    arms = [MODEL.q_names.index(n) for n in LEFT + RIGHT]
    seed = q_true.copy()
    seed[arms] = near(q_true, 13)[arms]  # torso and head (outside the group) as in q_true
    req = ik_request(group='arms', seed=seed)
    req.ik_request.ik_link_names = ['left_tool0', 'right_tool0']
    req.ik_request.pose_stamped_vector = [
        pose_stamped(frame_transform(MODEL, q_true, 'torso_link', 'left_tool0'), 'tw/torso_link'),
        pose_stamped(frame_transform(MODEL, q_true, 'head_link', 'right_tool0'), 'head_link')]
    res = probe.call(probe.ik, req)
    assert_code(res, 'SUCCESS')
    q = solution_q(MODEL, res)
    # head_link is resolved with the seed state, in which the head is where it was in q_true
    for tip, frame in (('left_tool0', 'torso_link'), ('right_tool0', 'head_link')):
        expected = frame_transform(MODEL, q_true, frame, tip)
        np.testing.assert_allclose(frame_transform(MODEL, q, frame, tip), expected, atol=1e-4)


def test_ik_honours_joint_constraints(probe):
    q_true = MODEL.random_configuration(rng=14)
    target = frame_transform(MODEL, q_true, 'base_link', 'left_tool0')
    i = MODEL.q_names.index('left_elbow_flex_joint')
    req = ik_request(target=target, seed=near(q_true, 15, 0.02))
    req.ik_request.constraints.joint_constraints = [JointConstraint(
        joint_name='left_elbow_flex_joint', position=float(q_true[i]), tolerance_above=0.01, tolerance_below=0.01)]
    res = probe.call(probe.ik, req)
    assert_code(res, 'SUCCESS')
    assert abs(solution_q(MODEL, res)[i] - q_true[i]) <= 0.01 + 1e-12


def test_ik_empty_robot_state_seeds_from_the_latest_joint_states(probe):
    pub = probe.publisher(JointState, '/joint_states')
    q_latest = MODEL.random_configuration(rng=16)
    target = frame_transform(MODEL, q_latest, 'base_link', 'left_tool0')

    def answered_from_latest():
        pub.publish(joint_state(MODEL.q_names, q_latest))
        res = probe.call(probe.ik, ik_request(target=target, timeout=0.5))
        return res if res.error_code.val == MoveItErrorCodes.SUCCESS and np.allclose(
            solution_q(MODEL, res)[MODEL.q_names.index('head_pan_joint')], q_latest[MODEL.q_names.index('head_pan_joint')]) else None
    res = probe.spin_until(answered_from_latest, 'an IK answer seeded by the published joint state')
    # the seed was the solution itself: it is returned as is
    np.testing.assert_allclose(solution_q(MODEL, res), q_latest, atol=1e-9)


@pytest.mark.parametrize('change, code, pattern', [
    (dict(group='legs'), 'INVALID_GROUP_NAME', r"unknown group 'legs'; groups: \['arms', 'left_arm'\]"),
    (dict(link='left_tool9'), 'INVALID_LINK_NAME', r"unknown link 'left_tool9'; did you mean 'left_tool0'"),
    (dict(frame='no_frame'), 'FRAME_TRANSFORM_FAILURE', r"header.frame_id: unknown link 'no_frame'"),
    (dict(avoid_collisions=True), 'COLLISION_CHECKING_UNAVAILABLE', r"robot 'twin_arm_torso' has no collision geometry"),
])
def test_ik_request_errors(probe, change, code, pattern):
    target = frame_transform(MODEL, MODEL.home_configuration(), 'base_link', 'left_tool0')
    res = probe.call(probe.ik, ik_request(target=target, **change))
    assert_code(res, code, pattern)
    assert not res.solution.joint_state.name


def test_ik_invalid_robot_states(probe):
    target = frame_transform(MODEL, MODEL.home_configuration(), 'base_link', 'left_tool0')
    req = ik_request(target=target)
    req.ik_request.robot_state.joint_state = JointState(name=['elbow'], position=[0.0])
    assert_code(probe.call(probe.ik, req), 'INVALID_ROBOT_STATE', r"unknown joint 'elbow'")
    req.ik_request.robot_state.joint_state = JointState(name=['left_elbow_flex_joint'], position=[float('nan')])
    assert_code(probe.call(probe.ik, req), 'INVALID_ROBOT_STATE', r'non-finite .*left_elbow_flex_joint')


def test_ik_timeout_is_honoured(probe):
    """No iteration budget (ik_max_iterations 0, the default): an unreachable target searches
    until the timeout, on a machine of any speed."""
    far = np.eye(4)
    far[:3, 3] = [2.0, 0.0, 0.0]  # out of reach (1.2 m away at best), within the reach bound (2.355 m)
    start = time.monotonic()
    res = probe.call(probe.ik, ik_request(target=far, timeout=0.3))
    assert_code(res, 'TIMED_OUT', r'within the 0.3 s timeout; best position error')
    assert time.monotonic() - start >= 0.3


def test_spent_iteration_budget_is_no_ik_solution():
    """ik_max_iterations > 0: the budget ends the search first whatever the machine's speed
    (50 iterations take milliseconds; the timeout is 60 s)."""
    far = np.eye(4)
    far[:3, 3] = [1.0, 0.0, 0.0]  # out of reach (0.26 m away at best), within the reach bound (1.32 m)
    settings = dataclasses.replace(ARM, max_iterations=50, timeout=60.0)
    res = call_ik(panda_request(far), settings=settings)
    assert_code(res, 'NO_IK_SOLUTION', r'\(max_iterations\); best position error .* after 50 iterations')


def test_fk_poses_in_a_frame_for_a_given_state(probe):
    q = MODEL.random_configuration(rng=17)
    req = GetPositionFK.Request(fk_link_names=['left_tool0', 'tw/camera_optical_frame'], robot_state=robot_state(MODEL, q))
    req.header.frame_id = 'tw/torso_link'
    res = probe.call(probe.fk, req)
    assert_code(res, 'SUCCESS')
    assert list(res.fk_link_names) == ['left_tool0', 'tw/camera_optical_frame']
    for ps, link in zip(res.pose_stamped, ['left_tool0', 'camera_optical_frame']):
        assert ps.header.frame_id == 'tw/torso_link'
        np.testing.assert_allclose(pose_to_matrix(ps.pose), frame_transform(MODEL, q, 'torso_link', link), atol=1e-12)


def test_fk_empty_frame_is_the_root_with_prefix(probe):
    q = MODEL.random_configuration(rng=18)
    res = probe.call(probe.fk, GetPositionFK.Request(fk_link_names=['right_tool0'], robot_state=robot_state(MODEL, q)))
    assert_code(res, 'SUCCESS')
    assert res.pose_stamped[0].header.frame_id == 'tw/base_link'
    T = forward_kinematics(MODEL, q)[MODEL.link_index('right_tool0')]
    np.testing.assert_allclose(pose_to_matrix(res.pose_stamped[0].pose), T, atol=1e-12)


@pytest.mark.parametrize('frame, links, code, pattern', [
    ('', ['nowhere'], 'INVALID_LINK_NAME', r"fk_link_names: unknown link 'nowhere'"),
    ('elsewhere', ['left_tool0'], 'FRAME_TRANSFORM_FAILURE', r"header.frame_id: unknown link 'elsewhere'"),
])
def test_fk_errors(probe, frame, links, code, pattern):
    req = GetPositionFK.Request(fk_link_names=links)
    req.header.frame_id = frame
    res = probe.call(probe.fk, req)
    assert_code(res, code, pattern)
    assert not res.pose_stamped


# ------------------------------------------------------------------ handlers without DDS
PANDA = RobotModel.from_urdf(robot_xml('panda'))
ARM_GROUPS = {'arm': IKGroup('arm', 'panda_link0', 'panda_hand_tcp')}
SNAP = requests.RobotSnapshot(PANDA, PANDA.home_configuration(), groups=ARM_GROUPS, default_group='arm')
ARM = IKSettings(groups=ARM_GROUPS)


def panda_request(T, **fields):
    req = GetPositionIK.Request()
    req.ik_request.pose_stamped = pose_stamped(T)
    for k, v in fields.items():
        setattr(req.ik_request, k, v)
    return req


def call_ik(req, robot=SNAP, settings=ARM, **kw):
    return ik_service.compute_ik(req, GetPositionIK.Response(), robot, settings, **kw)


def test_a_cancelled_token_ends_the_node_solve_in_progress_and_only_it():
    """/compute_ik of a pose no Panda reaches, with no time or iteration budget left to end it:
    cancelling the node's token (what shutdown does) ends it with TIMED_OUT and the best iterate's
    errors; a request handled with another token, running at the same time, is not touched."""
    settings = dataclasses.replace(ARM, max_iterations=0, max_timeout=1e9)   # 0: no iteration budget
    T = np.eye(4)
    T[:3, 3] = PANDA_UNREACHABLE_XYZ
    node_token, other_token = ik.CancelToken(), ik.CancelToken()
    replies = {}

    def solve(name, token):
        req = panda_request(T, timeout=Duration(sec=10 ** 6))
        replies[name] = call_ik(req, settings=settings, handling=ik_service.Handling(cancel=token))

    threads = {name: threading.Thread(target=solve, args=(name, token))
               for name, token in (('node', node_token), ('other', other_token))}
    for thread in threads.values():
        thread.start()
    try:
        threads['node'].join(0.3)
        assert threads['node'].is_alive() and threads['other'].is_alive()
        node_token.cancel()
        threads['node'].join(30.0)
        assert not threads['node'].is_alive() and threads['other'].is_alive()
        assert_code(replies['node'], 'TIMED_OUT', r'best position error')
    finally:
        node_token.cancel()
        other_token.cancel()
        for thread in threads.values():
            thread.join(60.0)
    assert_code(replies['other'], 'TIMED_OUT')


def test_solve_unchecked_policy_solves_and_says_so():
    q = PANDA.random_configuration(rng=20)
    T = frame_transform(PANDA, q, 'panda_link0', 'panda_hand_tcp')
    seed = requests.RobotSnapshot(PANDA, q + 0.02, groups=ARM_GROUPS, default_group='arm')
    settings = dataclasses.replace(ARM, avoid_collisions_policy='solve_unchecked', timeout=5.0)
    res = call_ik(panda_request(T, avoid_collisions=True), robot=seed, settings=settings)
    assert_code(res, 'SUCCESS', r'^solved WITHOUT collision checking')


def test_before_any_description_services_answer_failure():
    res = call_ik(panda_request(np.eye(4)), robot=None)
    assert_code(res, 'FAILURE', r'no robot description received yet')
    fk = fk_service.compute_fk(GetPositionFK.Request(), GetPositionFK.Response(), None, None)
    assert_code(fk, 'FAILURE', r'no robot description received yet')


@pytest.mark.parametrize('fields, code, pattern', [
    (dict(ik_link_names=['panda_hand_tcp', 'panda_link4'], pose_stamped_vector=[PoseStamped()]),
     'INVALID_LINK_NAME', r'2 ik_link_names but 1 poses'),
    (dict(ik_link_names=['panda_hand_tcp', 'panda_hand_tcp'], pose_stamped_vector=[PoseStamped(), PoseStamped()]),
     'INVALID_LINK_NAME', r'IK links repeat'),
    (dict(group_name='all'), 'INVALID_GROUP_NAME', r"unknown group 'all'; groups: \['arm'\]"),
])
def test_request_shape_errors(fields, code, pattern):
    assert_code(call_ik(panda_request(np.eye(4), **fields)), code, pattern)


def test_unsupported_constraints_and_bad_joint_constraints_are_refused():
    T = frame_transform(PANDA, PANDA.home_configuration(), 'panda_link0', 'panda_hand_tcp')
    req = panda_request(T)
    req.ik_request.constraints.visibility_constraints = [VisibilityConstraint()]
    assert_code(call_ik(req), 'INVALID_GOAL_CONSTRAINTS', r'visibility constraints are not supported')
    req = panda_request(T)
    req.ik_request.constraints.position_constraints = [PositionConstraint()]
    assert_code(call_ik(req), 'INVALID_GOAL_CONSTRAINTS', r'constraint_region has no primitive')
    req = panda_request(T)
    req.ik_request.constraints.joint_constraints = [JointConstraint(joint_name='panda_joint4', position=1.0,
                                                                    tolerance_above=0.1, tolerance_below=0.1)]
    assert_code(call_ik(req), 'INVALID_GOAL_CONSTRAINTS', r"joint constraint on 'panda_joint4' leaves no value")
    req.ik_request.constraints.joint_constraints = [JointConstraint(joint_name='panda_finger_joint2')]
    assert_code(call_ik(req), 'INVALID_GOAL_CONSTRAINTS', r"unknown joint 'panda_finger_joint2'")


def test_zero_quaternion_target_is_invalid():
    req = panda_request(np.eye(4))
    req.ik_request.pose_stamped.pose.orientation.w = 0.0
    assert_code(call_ik(req), 'INVALID_GOAL_CONSTRAINTS', r'zero orientation quaternion')


def test_no_default_tip_needs_an_ik_link():
    robot = requests.RobotSnapshot(PANDA, PANDA.home_configuration())   # only group 'all'
    assert_code(call_ik(panda_request(np.eye(4)), robot=robot), 'INVALID_LINK_NAME',
                r"no IK link named and group 'all' has no tip")


def test_group_that_does_not_fit_the_robot():
    robot = requests.RobotSnapshot(PANDA, PANDA.home_configuration(),
                                   groups={'arm': IKGroup('arm', 'base_link', 'tool0')})
    assert_code(call_ik(panda_request(np.eye(4)), robot=robot), 'INVALID_GROUP_NAME',
                r"group 'arm' does not fit robot 'panda': unknown link 'base_link'")


def test_an_unexpected_exception_becomes_crash(monkeypatch):
    crashes = []
    monkeypatch.setattr(ik_service.ik, 'solve_ik', lambda *a, **k: 1 / 0)
    T = frame_transform(PANDA, PANDA.home_configuration(), 'panda_link0', 'panda_hand_tcp')
    res = call_ik(panda_request(T), handling=ik_service.Handling(on_crash=crashes.append))
    assert_code(res, 'CRASH', r'internal error: ZeroDivisionError')
    assert isinstance(crashes[0], ZeroDivisionError)


# ---------------------------------------------------------------------------- the /compute_ik steps
def test_the_collision_policy_step():
    robot = requests.RobotSnapshot(PANDA, PANDA.home_configuration(), collision=lambda: 'coal is not installed')
    assert ik_service.collision_policy(robot, False, 'reject') == (None, '')
    assert ik_service.collision_policy(robot, True, 'solve_unchecked') == (
        None, 'solved WITHOUT collision checking (coal is not installed)')
    with pytest.raises(requests.RequestError) as error:
        ik_service.collision_policy(robot, True, 'reject')
    assert error.value.code == 'COLLISION_CHECKING_UNAVAILABLE' and 'coal is not installed' in error.value.message


def test_read_ik_request_gives_the_targets_in_the_groups_base():
    q = PANDA.random_configuration(rng=30)
    T_hand = frame_transform(PANDA, q, 'panda_link3', 'panda_hand_tcp')   # a target in a moving frame
    seed = PANDA.random_configuration(rng=31)
    req = panda_request(T_hand, robot_state=robot_state(PANDA, seed)).ik_request
    req.pose_stamped.header.frame_id = 'panda_link3'
    parsed = ik_service.read_ik_request(requests.RobotSnapshot(PANDA, PANDA.home_configuration(),
                                                               groups=ARM_GROUPS, default_group='arm'), req, ARM)
    assert (parsed.group.name, parsed.base, parsed.tips) == ('arm', 'panda_link0', ['panda_hand_tcp'])
    assert parsed.model is PANDA and parsed.semantic is None
    np.testing.assert_array_equal(parsed.seed, seed)
    # the target frame is placed at the seed's configuration (MoveIt reads frames in the request's state)
    np.testing.assert_allclose(parsed.targets[0], frame_transform(PANDA, seed, 'panda_link0', 'panda_link3') @ T_hand,
                               atol=1e-12)
    assert parsed.timeout == ARM.timeout   # the request's timeout is 0: the node's ik_timeout
    assert parsed.constraints == [] and parsed.collision is None and parsed.unchecked == ''
    np.testing.assert_array_equal(parsed.lower, PANDA.q_lower)


@pytest.mark.parametrize('status, code, pattern', [
    ('timeout', 'TIMED_OUT', r"no IK solution for \['panda_hand_tcp'\] within the 0.25 s timeout; best"),
    ('in_collision', 'NO_IK_SOLUTION', r'the best configuration is in self-collision; best'),
    ('max_iterations', 'NO_IK_SOLUTION', r"no IK solution for \['panda_hand_tcp'\] \(max_iterations\); best"),
    ('converged', 'NO_IK_SOLUTION', r'\(constraints not satisfied\); best'),
])
def test_each_solver_status_has_its_error_code(status, code, pattern):
    parsed = ik_service.IKRequest(group=ARM_GROUPS['arm'], model=PANDA, seed=PANDA.home_configuration(),
                                  base='panda_link0', tips=['panda_hand_tcp'], targets=[np.eye(4)], joints=None,
                                  timeout=0.25)
    error = ik_service.failure(parsed, SimpleNamespace(status=status), 'best position error 1 m')
    assert error.code == code and re.search(pattern, error.message), error.message


def test_a_success_reply_states_the_answers_own_errors_not_a_best():
    """Issue 32 item 6: a SUCCESS quotes the errors of the configuration it returns."""
    parsed = ik_service.IKRequest(group=ARM_GROUPS['arm'], model=PANDA, seed=PANDA.home_configuration(),
                                  base='panda_link0', tips=['panda_hand_tcp'], targets=[np.eye(4)], joints=None,
                                  timeout=0.25)
    q = PANDA.home_configuration()
    result = SimpleNamespace(success=True, q=q, position_error=2e-6, rotation_error=3e-7, iterations=7,
                             status='converged')
    response = GetPositionIK.Response()
    text = ik_service.ik_reply(parsed, SimpleNamespace(result=result, residuals=[]), response)
    assert 'best' not in text
    assert re.search(r"solved \['panda_hand_tcp'\] in group 'arm': position error 2e-06 m, rotation error 3e-07 "
                     r"rad after 7 iterations", text), text
    assert list(response.solution.joint_state.position)[:7] == pytest.approx(list(q[:7]))
