"""/compute_ik with position and orientation constraints filled as moveit_msgs defines them, over
DDS against a kin_node process on the 5-DOF SO-101-class arm; every answer is checked by FK here.
The 4-DOF Open-Manipulator-X-class arm is asked through the handler directly."""

import dataclasses
import math
import pathlib
import re
import sys

import numpy as np
import pytest
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Pose, PoseStamped, Quaternion, Vector3
from moveit_msgs.msg import (
    BoundingVolume,
    MoveItErrorCodes,
    OrientationConstraint,
    PositionConstraint,
    RobotState,
    VisibilityConstraint,
)
from moveit_msgs.srv import GetPositionIK, GetStateValidity
from node_harness import KinNode, Probe, robot_xml
from scipy.spatial.transform import Rotation
from sensor_msgs.msg import JointState
from shape_msgs.msg import Mesh, SolidPrimitive

from robokin_ros import RobotModel, frame_transform
from robokin_ros.ik import reach_upper_bound
from robokin_ros.model.groups import IKGroup
from robokin_ros.node import ik_service, requests, validity_service
from robokin_ros.node.conversions import InvalidMessageError, constraints_from_msg, matrix_to_pose
from robokin_ros.node.parameters import IKSettings, LiveState, check_value
from robokin_ros.spatial import exp_so3

SO101 = RobotModel.from_urdf(robot_xml('so101_arm'))
OMX = RobotModel.from_urdf(robot_xml('open_manipulator_x'))
GROUPS = {'arm': {'base': 'base_link', 'tip': 'tool'}}


@pytest.fixture(scope='module')
def node(tmp_path_factory):
    proc = KinNode(tmp_path_factory.mktemp('ik_constraints'), params={
        'robot_description': robot_xml('so101_arm'), 'ik_group_names': list(GROUPS), 'ik_groups': GROUPS,
        'default_ik_group': 'arm'})
    yield proc
    proc.stop()


@pytest.fixture(scope='module')
def probe(ros_context, node):
    p = Probe(ros_context, 'ik_constraints_probe')
    p.watch = (node,)
    p.ik = p.client(GetPositionIK, '/compute_ik')
    yield p
    p.close()


def request(model, target, seed=None, timeout=1.0, orientation=None, position=None, frame='base_link'):
    req = GetPositionIK.Request()
    ik = req.ik_request
    ik.group_name = 'arm' if model is SO101 else ''
    ik.pose_stamped = PoseStamped(pose=matrix_to_pose(target))
    ik.pose_stamped.header.frame_id = frame
    if seed is not None:
        ik.robot_state = RobotState(joint_state=JointState(name=list(model.q_names), position=[float(v) for v in seed]))
    ik.timeout = Duration(sec=int(timeout), nanosec=int((timeout % 1) * 1e9))
    ik.constraints.orientation_constraints = [orientation] if orientation is not None else []
    ik.constraints.position_constraints = [position] if position is not None else []
    return req


def orientation_constraint(R, tolerances, parameterization=OrientationConstraint.XYZ_EULER_ANGLES, link='tool'):
    x, y, z, w = Rotation.from_matrix(R).as_quat()
    c = OrientationConstraint(link_name=link, orientation=Quaternion(x=x, y=y, z=z, w=w),
                              absolute_x_axis_tolerance=tolerances[0], absolute_y_axis_tolerance=tolerances[1],
                              absolute_z_axis_tolerance=tolerances[2], parameterization=parameterization, weight=1.0)
    c.header.frame_id = 'base_link'
    return c


def box_constraint(T_region, size, offset, link='tool'):
    c = PositionConstraint(link_name=link, target_point_offset=Vector3(x=offset[0], y=offset[1], z=offset[2]),
                           constraint_region=BoundingVolume(
                               primitives=[SolidPrimitive(type=SolidPrimitive.BOX, dimensions=list(size))],
                               primitive_poses=[matrix_to_pose(T_region)]), weight=1.0)
    c.header.frame_id = 'base_link'
    return c


def solution(model, response):
    js = response.solution.joint_state
    return model.q_from_dict({n: p for n, p in zip(js.name, js.position) if n in model.q_names})


def tool(model, q):
    return frame_transform(model, q, model.root_link, 'tool')


def code(response):
    return response.error_code.val, response.error_code.message


def test_yaw_free_suction_pick_on_the_5_dof_arm_solves(probe):
    """The suction axis (tool z) within 0.01 rad of straight down at the target, any yaw about
    it: SUCCESS, and FK of the answer holds the position and the two constrained axes."""
    rng = np.random.default_rng(40)
    for q_true in SO101.random_configuration(3, rng):
        target = tool(SO101, q_true)
        target[:3, :3] = target[:3, :3] @ exp_so3(np.array([0.0, 0.0, rng.uniform(-3.0, 3.0)]))
        res = probe.call(probe.ik, request(SO101, target, orientation=orientation_constraint(
            target[:3, :3], (0.01, 0.01, math.pi))))
        assert res.error_code.val == MoveItErrorCodes.SUCCESS, code(res)
        reached = tool(SO101, solution(SO101, res))
        assert np.linalg.norm(reached[:3, 3] - target[:3, 3]) < 1e-4
        a, b, _ = Rotation.from_matrix(target[:3, :3].T @ reached[:3, :3]).as_euler('XYZ')
        assert abs(a) <= 0.01 + 1e-9 and abs(b) <= 0.01 + 1e-9
        assert "orientation of 'tool' satisfied" in res.error_code.message


def test_full_pose_the_5_dof_arm_cannot_reach_never_answers_success(probe):
    rng = np.random.default_rng(41)
    for q_true in SO101.random_configuration(3, rng):
        target = tool(SO101, q_true)
        target[:3, :3] = target[:3, :3] @ exp_so3(np.array([0.35, 0.0, 0.0]))   # out of the arm's plane
        res = probe.call(probe.ik, request(SO101, target, timeout=0.3))
        assert res.error_code.val in (MoveItErrorCodes.NO_IK_SOLUTION, MoveItErrorCodes.TIMED_OUT), code(res)
        assert 'best position error' in res.error_code.message and 'rotation error' in res.error_code.message


def test_orientation_tolerance_as_rotation_vector_is_met_by_fk(probe):
    """A pose 0.1 rad off the arm's reach, with ±0.15 rad per axis (rotation vector): solved, and
    the answer's rotation vector from the desired orientation is within the band."""
    rng = np.random.default_rng(42)
    q_true = SO101.random_configuration(rng=rng)
    target = tool(SO101, q_true)
    target[:3, :3] = target[:3, :3] @ exp_so3(np.array([0.1, 0.0, 0.0]))
    c = orientation_constraint(target[:3, :3], (0.15, 0.15, 0.15), OrientationConstraint.ROTATION_VECTOR)
    res = probe.call(probe.ik, request(SO101, target, orientation=c))
    assert res.error_code.val == MoveItErrorCodes.SUCCESS, code(res)
    reached = tool(SO101, solution(SO101, res))
    rotvec = Rotation.from_matrix(target[:3, :3].T @ reached[:3, :3]).as_rotvec()
    assert (np.abs(rotvec) <= 0.15 + 1e-9).all()
    assert np.linalg.norm(reached[:3, 3] - target[:3, 3]) < 1e-4


def test_position_region_with_an_offset_point_is_met_by_fk(probe):
    """Position only (orientation free on every axis): the point 3 cm along the tool's z must lie
    in a turned 2 x 1 x 1 cm box; the answer's point is inside it (computed here)."""
    rng = np.random.default_rng(43)
    q_true = SO101.random_configuration(rng=rng)
    T = tool(SO101, q_true)
    box = np.eye(4)
    box[:3, :3] = Rotation.from_euler('xyz', [0.2, 0.5, -0.3]).as_matrix()
    box[:3, 3] = T[:3, :3] @ [0.0, 0.0, 0.03] + T[:3, 3] + [0.01, -0.01, 0.005]
    size = (0.02, 0.01, 0.01)
    res = probe.call(probe.ik, request(SO101, T, orientation=orientation_constraint(np.eye(3), (4.0, 4.0, 4.0)),
                                       position=box_constraint(box, size, (0.0, 0.0, 0.03))))
    assert res.error_code.val == MoveItErrorCodes.SUCCESS, code(res)
    reached = tool(SO101, solution(SO101, res))
    local = box[:3, :3].T @ (reached[:3, :3] @ [0.0, 0.0, 0.03] + reached[:3, 3] - box[:3, 3])
    assert (np.abs(local) <= 0.5 * np.array(size) + 1e-9).all(), local


def test_unmet_constraint_names_its_residual(probe):
    """A box the arm cannot reach (inside its reach bound, behind and below the base): no
    SUCCESS, and the message gives the constraint's residual."""
    box = np.eye(4)
    box[:3, 3] = [-0.05, 0.0, -0.2]
    res = probe.call(probe.ik, request(SO101, tool(SO101, SO101.home_configuration()), timeout=0.3,
                                       orientation=orientation_constraint(np.eye(3), (4.0, 4.0, 4.0)),
                                       position=box_constraint(box, (0.01, 0.01, 0.01), (0.0, 0.0, 0.0))))
    assert res.error_code.val in (MoveItErrorCodes.NO_IK_SOLUTION, MoveItErrorCodes.TIMED_OUT), code(res)
    assert "position of 'tool'" in res.error_code.message and 'm outside' in res.error_code.message


def test_far_target_with_a_huge_timeout_answers_at_once(probe):
    """Beyond the chain's reach (the sum of its link offsets) with timeout 2³¹ s: NO_IK_SOLUTION
    naming the distance and the reach (a search would run to the timeout: TIMED_OUT)."""
    far = np.eye(4)
    far[:3, 3] = [1.0, 0.5, 0.2]
    req = request(SO101, far)
    req.ik_request.timeout = Duration(sec=2 ** 31 - 1)
    res = probe.call(probe.ik, req)   # (a search would answer TIMED_OUT after 2³¹ s: the reach check answered)
    assert res.error_code.val == MoveItErrorCodes.NO_IK_SOLUTION, code(res)
    reach = reach_upper_bound(SO101, 'base_link', 'tool')
    assert f'{np.linalg.norm(far[:3, 3]):.4g} m' in res.error_code.message
    assert f'{reach:.4g} m' in res.error_code.message


def test_visibility_constraints_get_a_clear_error(probe):
    req = request(SO101, tool(SO101, SO101.home_configuration()))
    req.ik_request.constraints.visibility_constraints = [VisibilityConstraint()]
    res = probe.call(probe.ik, req)
    assert res.error_code.val == MoveItErrorCodes.INVALID_GOAL_CONSTRAINTS, code(res)
    assert 'visibility constraints are not supported' in res.error_code.message


def test_mesh_region_and_unknown_link_are_refused_by_name(probe):
    c = box_constraint(np.eye(4), (0.1, 0.1, 0.1), (0.0, 0.0, 0.0))
    c.constraint_region.primitives[0].type = SolidPrimitive.CONE
    c.constraint_region.primitives[0].dimensions = [0.1, 0.1]
    res = probe.call(probe.ik, request(SO101, tool(SO101, SO101.home_configuration()), position=c))
    assert res.error_code.val == MoveItErrorCodes.INVALID_GOAL_CONSTRAINTS, code(res)
    assert "position constraint on 'tool': primitive 0 has type 4" in res.error_code.message
    o = orientation_constraint(np.eye(3), (0.1, 0.1, 0.1), link='no_such_link')
    res = probe.call(probe.ik, request(SO101, tool(SO101, SO101.home_configuration()), orientation=o))
    assert res.error_code.val == MoveItErrorCodes.INVALID_LINK_NAME, code(res)
    assert "'no_such_link'" in res.error_code.message


# ------------------------------------------------------------------ the 4-DOF arm, handler only
OMX_ROBOT = requests.RobotSnapshot(OMX, OMX.home_configuration())
OMX_SETTINGS = IKSettings(groups={}, timeout=0.5)


def call_omx(req):
    req.ik_request.group_name = ''
    req.ik_request.ik_link_name = 'tool'
    return ik_service.compute_ik(req, GetPositionIK.Response(), OMX_ROBOT, OMX_SETTINGS)


def test_4_dof_arm_yaw_free_pick_solves_and_full_pose_does_not():
    rng = np.random.default_rng(44)
    for q_true in OMX.random_configuration(3, rng):
        target = tool(OMX, q_true)
        target[:3, :3] = target[:3, :3] @ exp_so3(np.array([0.0, 0.0, rng.uniform(0.3, 3.0)]))
        full = call_omx(request(OMX, target, timeout=0.2, frame='link1'))
        assert full.error_code.val in (MoveItErrorCodes.NO_IK_SOLUTION, MoveItErrorCodes.TIMED_OUT), code(full)
        c = orientation_constraint(target[:3, :3], (0.01, 0.01, math.pi))
        c.header.frame_id = 'link1'
        res = call_omx(request(OMX, target, frame='link1', orientation=c))
        assert res.error_code.val == MoveItErrorCodes.SUCCESS, code(res)
        reached = tool(OMX, solution(OMX, res))
        assert np.linalg.norm(reached[:3, 3] - target[:3, 3]) < 1e-4
        a, b, _ = Rotation.from_matrix(target[:3, :3].T @ reached[:3, :3]).as_euler('XYZ')
        assert abs(a) <= 0.01 + 1e-9 and abs(b) <= 0.01 + 1e-9


# ------------------------------------------------------------------ the per-group objective
PANDA = RobotModel.from_urdf(robot_xml('panda'))
PANDA_ARM = [f'panda_joint{i}' for i in range(1, 8)]


def test_group_objective_parameter_is_checked_by_name():
    assert check_value('ik_groups.arm.objective', 'center', LiveState()) == ''
    assert check_value('ik_groups.arm.objective', '', LiveState()) == ''
    reason = check_value('ik_groups.arm.objective', 'nearest', LiveState())
    assert "ik_groups.arm.objective must be empty or one of ['closest', 'center', 'manipulability']" in reason
    assert "'nearest'" in reason


def test_group_objective_center_moves_the_answer_away_from_the_limits():
    """The same requests with ik_groups.arm.objective 'center' and without: every target still
    solved, FK the same pose, and the joint-limit centering cost never higher (lower on most).
    Seeds near the goal, so the primary solve needs no restart and is the same in both."""
    groups = {'arm': IKGroup('arm', 'panda_link0', 'panda_hand', tuple(PANDA_ARM))}
    robot = requests.RobotSnapshot(PANDA, PANDA.home_configuration(), groups=groups)
    index = [PANDA.q_names.index(j) for j in PANDA_ARM]
    lo, hi = PANDA.q_lower[index], PANDA.q_upper[index]

    def cost(q):
        return float(np.sum(((q[index] - 0.5 * (lo + hi)) / (hi - lo)) ** 2))

    lower = 0
    for q_true in PANDA.random_configuration(4, np.random.default_rng(45)):
        target = frame_transform(PANDA, q_true, 'panda_link0', 'panda_hand')
        answers = []
        for objectives in ({}, {'arm': 'center'}):
            seed = PANDA.clamp(q_true + 0.05 * np.random.default_rng(47).standard_normal(PANDA.n_q))
            req = request(PANDA, target, seed=seed, frame='panda_link0')
            req.ik_request.group_name = 'arm'
            settings = IKSettings(groups=groups, timeout=0.5, objectives=objectives)
            res = ik_service.compute_ik(req, GetPositionIK.Response(), robot, settings)
            assert res.error_code.val == MoveItErrorCodes.SUCCESS, code(res)
            q = solution(PANDA, res)
            reached = frame_transform(PANDA, q, 'panda_link0', 'panda_hand')
            np.testing.assert_allclose(reached, target, atol=1e-4)
            answers.append(cost(q))
        assert answers[1] <= answers[0] + 1e-9
        lower += answers[1] < answers[0] - 1e-6
    assert lower >= 2


# ------------------------------------------------------------------ /check_state_validity
def test_state_validity_evaluates_position_and_orientation_constraints():
    """At a state: a box around the tool point and the tool's own orientation hold; the same box
    moved 5 cm away and an orientation turned 0.2 rad about x (tolerance 0.1) do not, with their
    distance outside."""
    q = SO101.random_configuration(rng=46)
    T = tool(SO101, q)
    robot = requests.RobotSnapshot(SO101, q)
    problems = []

    def ask(box_shift, turn):
        box = np.eye(4)
        box[:3, 3] = T[:3, 3] + box_shift
        R = T[:3, :3] @ exp_so3(np.array([turn, 0.0, 0.0]))
        req = GetStateValidity.Request()
        req.robot_state = RobotState(joint_state=JointState(name=list(SO101.q_names), position=[float(v) for v in q]))
        req.constraints.position_constraints = [box_constraint(box, (0.02, 0.02, 0.02), (0.0, 0.0, 0.0))]
        req.constraints.orientation_constraints = [orientation_constraint(R, (0.1, 0.1, 0.1))]
        return validity_service.check_state_validity(req, GetStateValidity.Response(), robot, Time(), problems.append,
                                             policy='solve_unchecked')

    res = ask(np.zeros(3), 0.0)
    assert res.valid and [r.result for r in res.constraint_result] == [True, True], problems
    res = ask(np.array([0.05, 0.0, 0.0]), 0.2)
    assert not res.valid
    assert [r.result for r in res.constraint_result] == [False, False]
    assert res.constraint_result[0].distance == pytest.approx(0.04, abs=1e-9)
    assert res.constraint_result[1].distance == pytest.approx(0.1, abs=1e-6)


# ------------------------------------------------------------------ message conversion
def _identity_frame(frame_id, what):
    return np.eye(4)


def _bad_position(change):
    c = box_constraint(np.eye(4), (0.1, 0.1, 0.1), (0.0, 0.0, 0.0))
    change(c)
    return [c], []


def _bad_orientation(change):
    c = orientation_constraint(np.eye(3), (0.1, 0.1, 0.1))
    change(c)
    return [], [c]


@pytest.mark.parametrize('make, pattern', [
    (lambda: _bad_position(lambda c: c.constraint_region.meshes.append(Mesh())), 'mesh regions are not supported'),
    (lambda: _bad_position(lambda c: c.constraint_region.primitive_poses.append(Pose())),
     '1 primitives but 2 primitive_poses'),
    (lambda: _bad_position(lambda c: setattr(c.constraint_region.primitives[0], 'dimensions', [0.1, 0.1])),
     r'a box needs 3 finite dimensions >= 0, got \[0.1, 0.1\]'),
    (lambda: _bad_position(lambda c: setattr(c.target_point_offset, 'x', math.nan)), 'target_point_offset is not finite'),
    (lambda: _bad_orientation(lambda c: setattr(c, 'absolute_y_axis_tolerance', -0.1)),
     r'axis tolerances must be >= 0, got \[0.1, -0.1, 0.1\]'),
    (lambda: _bad_orientation(lambda c: setattr(c, 'parameterization', 3)),
     'parameterization 3 is neither XYZ_EULER_ANGLES'),
    (lambda: _bad_orientation(lambda c: setattr(c, 'orientation', Quaternion(x=0.0, y=0.0, z=0.0, w=0.0))),
     'orientation'),
])
def test_bad_constraint_messages_are_named(make, pattern):
    positions, orientations = make()
    with pytest.raises(InvalidMessageError, match=pattern):
        constraints_from_msg(positions, orientations, _identity_frame)


def test_constraint_poses_are_mapped_into_the_base_frame():
    """A region and an orientation given in a frame 1 m up and turned 90° about z land there."""
    T_base_frame = np.eye(4)
    T_base_frame[:3, :3] = exp_so3(np.array([0.0, 0.0, math.pi / 2]))
    T_base_frame[2, 3] = 1.0
    region = np.eye(4)
    region[:3, 3] = [0.1, 0.0, 0.0]
    position, orientation = constraints_from_msg(
        [box_constraint(region, (0.1, 0.2, 0.3), (0.0, 0.0, 0.01))], [orientation_constraint(np.eye(3), (0.1, 0.2, 4.0))],
        lambda frame_id, what: T_base_frame)
    np.testing.assert_allclose(position.regions[0].T_base_region, T_base_frame @ region, atol=1e-12)
    assert position.regions[0].shape == 'box' and position.regions[0].dimensions == (0.1, 0.2, 0.3)
    assert position.offset == (0.0, 0.0, 0.01)
    np.testing.assert_allclose(orientation.R_base_desired, T_base_frame[:3, :3], atol=1e-12)
    assert orientation.tolerances == (0.1, 0.2, 4.0)


# ------------------------------------------------------------------ bounded requests, every error path (issue 33)
def _many_positions(n, primitives=1):
    c = box_constraint(np.eye(4), (0.1, 0.1, 0.1), (0.0, 0.0, 0.0))
    c.constraint_region.primitives = [SolidPrimitive(type=SolidPrimitive.SPHERE, dimensions=[0.05])] * primitives
    c.constraint_region.primitive_poses = [Pose()] * primitives
    return [c] * n


def _no_work(monkeypatch):
    """Fail the test if the request reaches a solve or a constraint conversion."""
    for name in ('solve_constrained', 'solve_ik'):
        monkeypatch.setattr(ik_service.ik, name, lambda *a, **k: pytest.fail('a refused request was solved'))
    monkeypatch.setattr(requests, 'constraints_from_msg', lambda *a, **k: pytest.fail('constraints were read'))


@pytest.mark.parametrize('n', [300, 3000])
def test_thousands_of_position_constraints_are_refused_at_once(monkeypatch, n):
    """Issue 33, item 1: 3,000 position constraints were a CRASH (RecursionError) after 209 s,
    +1.5 GB; refused by ik_max_constraints before any work."""
    _no_work(monkeypatch)
    req = request(OMX, tool(OMX, OMX.home_configuration()))
    req.ik_request.constraints.position_constraints = _many_positions(n)
    res = call_omx(req)
    assert res.error_code.val == MoveItErrorCodes.INVALID_GOAL_CONSTRAINTS, code(res)
    assert f'{n} constraints in one request: at most 64 (parameter ik_max_constraints)' in res.error_code.message


def test_too_many_primitives_and_ik_links_are_refused_at_once(monkeypatch):
    _no_work(monkeypatch)
    req = request(OMX, tool(OMX, OMX.home_configuration()))
    req.ik_request.constraints.position_constraints = _many_positions(2, primitives=40)
    res = call_omx(req)
    assert res.error_code.val == MoveItErrorCodes.INVALID_GOAL_CONSTRAINTS, code(res)
    assert '80 region primitives and meshes in one request: at most 64 (parameter ik_max_primitives)' \
        in res.error_code.message
    req = request(OMX, tool(OMX, OMX.home_configuration()))
    req.ik_request.ik_link_names = ['tool'] * 17
    req.ik_request.pose_stamped_vector = [req.ik_request.pose_stamped] * 17
    res = ik_service.compute_ik(req, GetPositionIK.Response(), OMX_ROBOT, OMX_SETTINGS)
    assert res.error_code.val == MoveItErrorCodes.INVALID_LINK_NAME, code(res)
    assert '17 IK links in one request: at most 16 (parameter ik_max_links)' in res.error_code.message


def test_two_orientation_constraints_on_one_link_are_refused_not_crashed():
    """Issue 32, item 3 / issue 33, item 3: was CRASH ('internal error: IKOptionError')."""
    target = tool(OMX, OMX.home_configuration())
    req = request(OMX, target, frame='link1')
    c = orientation_constraint(target[:3, :3], (0.1, 0.1, math.pi))
    c.header.frame_id = 'link1'
    req.ik_request.constraints.orientation_constraints = [c, c]
    res = call_omx(req)
    assert res.error_code.val == MoveItErrorCodes.INVALID_GOAL_CONSTRAINTS, code(res)
    assert "two orientation constraints on 'tool': give one per link" in res.error_code.message


def _raised_option_names():
    """Every option name an IKOptionError of robokin_ros.ik can carry: the fields of IKOptions,
    the default 'options', and each literal second argument in robokin_ros.ik's source."""
    names = {'options'} | {f.name for f in dataclasses.fields(ik_service.ik.IKOptions)}
    for path in (pathlib.Path(ik_service.ik.__file__).parent).glob('*.py'):
        for call in re.findall(r'IKOptionError\((.*?)\)\n', path.read_text(), re.S):
            last = re.findall(r',\s*"([a-z_]+)"\s*$', call)
            names.update(last)
    return sorted(names)


@pytest.mark.parametrize('argument', _raised_option_names())
def test_every_ik_option_error_reaches_an_error_code_with_its_message(monkeypatch, argument):
    """No IKOptionError raises past the handler: each option an IKOptionError can name (read from
    robokin_ros.ik's source) answers its code from OPTION_ERROR_CODES (FAILURE: a setting of the
    node's own), with the solver's sentence, never CRASH."""
    def refuse(*args, **kwargs):
        raise ik_service.ik.IKOptionError(f'the solver refuses {argument}', argument)

    monkeypatch.setattr(ik_service.ik, 'solve_ik', refuse)
    monkeypatch.setattr(ik_service.ik, 'solve_constrained', refuse)
    crashes = []
    target = tool(OMX, OMX.home_configuration())
    for orientation in (None, orientation_constraint(target[:3, :3], (0.1, 0.1, math.pi))):
        if orientation is not None:
            orientation.header.frame_id = 'link1'
        req = request(OMX, target, frame='link1', orientation=orientation)
        req.ik_request.group_name, req.ik_request.ik_link_name = '', 'tool'
        res = ik_service.compute_ik(req, GetPositionIK.Response(), OMX_ROBOT, OMX_SETTINGS,
                                    ik_service.Handling(on_crash=crashes.append))
        expected = ik_service.OPTION_ERROR_CODES.get(argument, 'FAILURE')
        assert res.error_code.val == getattr(MoveItErrorCodes, expected), code(res)
        assert f'the solver refuses {argument}' in res.error_code.message
        assert not crashes


def test_real_ik_option_errors_of_the_solver_reach_their_codes():
    """The core's own bound (ik.constrained.MAX_TIPS) behind a node allowing more, and a node
    setting the solver refuses, answered with codes and sentences."""
    target = tool(OMX, OMX.home_configuration())
    req = request(OMX, target, frame='link1')
    req.ik_request.constraints.position_constraints = _many_positions(40)
    for c in req.ik_request.constraints.position_constraints:
        c.header.frame_id = 'link1'
    roomy = IKSettings(groups={}, timeout=0.5, max_constraints=1000, max_primitives=1000)
    res = call_omx_with(req, roomy)
    assert res.error_code.val == MoveItErrorCodes.INVALID_GOAL_CONSTRAINTS, code(res)
    assert '40 constraints and 1 pose targets: at most 32 in one call' in res.error_code.message
    res = call_omx_with(request(OMX, target, frame='link1'), IKSettings(groups={}, position_tolerance=1e7))
    assert res.error_code.val == MoveItErrorCodes.FAILURE, code(res)
    assert 'position_tolerance must be a number in [0, 1e+06]' in res.error_code.message
    assert "(IK option 'position_tolerance', from the node's ik_* parameters)" in res.error_code.message


def call_omx_with(req, settings):
    req.ik_request.group_name, req.ik_request.ik_link_name = '', 'tool'
    crashes = []
    res = ik_service.compute_ik(req, GetPositionIK.Response(), OMX_ROBOT, settings,
                                ik_service.Handling(on_crash=crashes.append))
    assert not crashes
    return res


# ------------------------------------------------------------------ freed axes and unions through the handler (issue 32)
def _piper():
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'core' / 'ik'))
    from freed_axes import piper
    return piper()


def test_piper_freed_pitch_of_the_issue_answers_success():
    """PiPER, group arm (base_link -> link6), the issue's pose and XYZ Euler tolerances (0.049898,
    π, 0.314015) on link6: was NO_IK_SOLUTION ('2.83 rad outside'); each answer is held to
    MoveIt's rule here. An iteration budget, so the outcome does not depend on the machine."""
    model, base, tip = _piper()
    groups = {'arm': IKGroup('arm', base, tip)}
    T = np.eye(4)
    T[:3, 3] = (-0.006959, 0.001727, 0.419625)
    T[:3, :3] = Rotation.from_quat((-0.167734, 0.273425, -0.561001, 0.763140)).as_matrix()
    check = ik_service.ik.OrientationConstraint(tip, T[:3, :3], (0.049898, math.pi, 0.314015))
    settings = IKSettings(groups=groups, max_iterations=20000)
    for seed in [np.zeros(6)] + list(model.random_configuration(8, np.random.default_rng(2))):
        req = request(model, T, seed=seed, timeout=5.0,
                      orientation=orientation_constraint(T[:3, :3], (0.049898, math.pi, 0.314015), link=tip))
        req.ik_request.group_name = 'arm'
        res = ik_service.compute_ik(req, GetPositionIK.Response(), requests.RobotSnapshot(model, seed, groups=groups),
                                    settings)
        assert res.error_code.val == MoveItErrorCodes.SUCCESS, code(res)
        reached = frame_transform(model, solution(model, res), base, tip)
        assert check.excess(reached) == 0.0 and np.linalg.norm(reached[:3, 3] - T[:3, 3]) <= 1e-4


def test_union_with_its_reachable_region_third_answers_success():
    """A position constraint of three regions (cylinder, box, rotated box), only the third
    reachable, the node's default budget (no iteration budget) and a 1 s timeout: was TIMED_OUT
    (the first region took the whole timeout). The regions share the budget in rounds: the
    answer reports the iterations of all the call's solves, at most one first round for each
    unreachable region more than the reachable one needs (here within one round)."""
    q_goal = OMX.random_configuration(rng=13)
    T = tool(OMX, q_goal)
    behind, below, turned = np.eye(4), np.eye(4), T.copy()
    behind[:3, 3] = [-0.1, 0.0, -0.2]
    below[:3, 3] = [-0.05, 0.05, -0.25]
    turned[:3, :3] = Rotation.from_euler('xyz', [0.2, 0.4, 0.1]).as_matrix()
    c = box_constraint(turned, (0.004, 0.006, 0.005), (0.0, 0.0, 0.0))
    c.header.frame_id = 'link1'
    region = c.constraint_region
    region.primitives = [SolidPrimitive(type=SolidPrimitive.CYLINDER, dimensions=[0.01, 0.005]),
                         SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[0.01, 0.01, 0.01])] + list(region.primitives)
    region.primitive_poses = [matrix_to_pose(behind), matrix_to_pose(below)] + list(region.primitive_poses)
    seed = OMX.home_configuration()
    seed[0] = 0.9 * math.pi
    req = request(OMX, T, seed=seed, frame='link1', position=c, timeout=1.0)
    res = call_omx_with(req, IKSettings(groups={}))
    assert res.error_code.val == MoveItErrorCodes.SUCCESS, code(res)
    iterations = int(re.search(r'after (\d+) iterations', res.error_code.message).group(1))
    assert iterations <= 3 * ik_service.ik.constrained.FIRST_ROUND
    local = turned[:3, :3].T @ (tool(OMX, solution(OMX, res))[:3, 3] - turned[:3, 3])
    assert (np.abs(local) <= 0.5 * np.array([0.004, 0.006, 0.005]) + 1e-9).all()
