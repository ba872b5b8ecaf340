"""Collision-aware /compute_ik and /check_state_validity: MoveIt-style requests over DDS to node
processes (the bundled Panda with its SRDF, a corpus humanoid without one), verified by
Pinocchio + coal, and the handlers called directly for the other paths."""

import dataclasses
import pathlib
import re
import sys

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from geometry_msgs.msg import PoseStamped
from moveit_msgs.msg import (
    ContactInformation,
    JointConstraint,
    MoveItErrorCodes,
    PositionConstraint,
    VisibilityConstraint,
)
from moveit_msgs.srv import GetPositionIK, GetStateValidity
from node_harness import KinNode, Probe, assert_code, robot_state, robot_xml, solution_q

from robokin_ros import CollisionModel, RobotModel, frame_transform, self_collisions
from robokin_ros.model.srdf import IKGroup, parse_srdf
from robokin_ros.node import ik_service, requests, validity_service
from robokin_ros.node.conversions import matrix_to_pose
from robokin_ros.node.parameters import IKSettings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from peers import PinCollisions, strip_collision_meshes  # noqa: E402

pytest.importorskip('coal')

ROBOTS = pathlib.Path(__file__).resolve().parents[2] / 'robokin_ros' / 'robots'
CORPUS = pathlib.Path(__file__).resolve().parents[3] / 'shared' / 'urdf-corpus'
PANDA_XML, PANDA_SRDF = robot_xml('panda'), (ROBOTS / 'panda.srdf').read_text()
PANDA = RobotModel.from_urdf(PANDA_XML)
PANDA_CM = CollisionModel.build(PANDA, srdf=PANDA_SRDF)


def moveit_ik_request(model, group, link, T, seed, frame='', timeout=1.0, avoid_collisions=True):
    """A request as MoveIt's RViz plugin / MoveGroupInterface sends it: group, tip link, a pose
    stamped in the planning frame, the current state as seed, avoid_collisions set."""
    req = GetPositionIK.Request()
    ik = req.ik_request
    ik.group_name, ik.ik_link_name, ik.avoid_collisions = group, link, avoid_collisions
    ik.pose_stamped = PoseStamped(pose=matrix_to_pose(T))
    ik.pose_stamped.header.frame_id = frame
    ik.robot_state = robot_state(model, seed)
    ik.timeout = Duration(sec=int(timeout), nanosec=int((timeout % 1) * 1e9))
    return req


def free_targets(model, cm, tip, n, seed, joints=None, base=None):
    """Tip poses of ``n`` collision-free random configurations (only ``joints`` varied)."""
    q = np.tile(model.home_configuration(), (20 * n, 1))
    cols = slice(None) if joints is None else [model.q_names.index(j) for j in joints]
    q[:, cols] = model.random_configuration(20 * n, np.random.default_rng(seed))[:, cols]
    q = q[~self_collisions(cm, q).in_collision][:n]
    base = model.root_link if base is None else base
    return [frame_transform(model, qk, base, tip) for qk in q]


# ------------------------------------------------------------------ over DDS: the bundled Panda
@pytest.fixture(scope='module')
def panda_node(tmp_path_factory):
    proc = KinNode(tmp_path_factory.mktemp('collide_panda'), params={
        'robot_description': PANDA_XML, 'robot_description_semantic': PANDA_SRDF, 'frame_prefix': 'p/'})
    yield proc
    proc.stop()


@pytest.fixture(scope='module')
def panda_probe(ros_context, panda_node):
    p = Probe(ros_context, 'collide_probe')
    p.watch = (panda_node,)
    p.ik = p.client(GetPositionIK, '/compute_ik')
    p.validity = p.client(GetStateValidity, '/check_state_validity')
    yield p
    p.close()


def test_moveit_style_avoid_collisions_request_on_the_panda_is_collision_free(panda_probe, panda_node):
    peer = PinCollisions(PANDA_XML)
    checked = set(PANDA_CM.link_pairs)
    mid = 0.5 * (PANDA.q_lower + PANDA.q_upper)
    solved = 0
    for _k, T in enumerate(free_targets(PANDA, PANDA_CM, 'panda_link8', 12, 30)):
        res = panda_probe.call(panda_probe.ik, moveit_ik_request(PANDA, 'panda_arm', 'panda_link8', T, mid,
                                                                frame='p/panda_link0'))
        if res.error_code.val != MoveItErrorCodes.SUCCESS:
            assert_code(res, 'TIMED_OUT')
            continue
        assert 'checked for self-collision' in res.error_code.message
        q = solution_q(PANDA, res)
        np.testing.assert_allclose(frame_transform(PANDA, q, 'panda_link0', 'panda_link8'), T, atol=1e-4)
        assert peer.pairs(PANDA, q, checked) == set()
        solved += 1
    assert solved >= 10
    assert panda_node.count(r'collision model: \d+ geometries, \d+ link pairs checked \(SRDF disabled pairs\)') == 1


def test_check_state_validity_lists_contacts_of_a_state_in_collision(panda_probe):
    q = PANDA.random_configuration(400, np.random.default_rng(31))
    result = self_collisions(PANDA_CM, q)
    bad, good = q[result.in_collision][0], q[~result.in_collision][0]
    req = GetStateValidity.Request(robot_state=robot_state(PANDA, bad))
    res = panda_probe.call(panda_probe.validity, req)
    assert not res.valid and res.contacts
    pairs = {(c.contact_body_1, c.contact_body_2) for c in res.contacts}
    assert pairs == set(result.pairs[int(np.flatnonzero(result.in_collision)[0])])
    for c in res.contacts:
        assert c.header.frame_id == 'p/panda_link0'
        assert c.body_type_1 == c.body_type_2 == ContactInformation.ROBOT_LINK and c.depth > 0
    res = panda_probe.call(panda_probe.validity, GetStateValidity.Request(robot_state=robot_state(PANDA, good)))
    assert res.valid and not res.contacts


# ------------------------------------------------------------------ over DDS: a corpus humanoid
HUMANOID = CORPUS / 'g1_29dof_hand.urdf'


@pytest.fixture(scope='module')
def humanoid_node(tmp_path_factory):
    if not HUMANOID.is_file():
        pytest.skip(f'{HUMANOID} is absent (../shared is not beside this checkout)')
    directory = tmp_path_factory.mktemp('collide_humanoid')
    # its own namespace: the Panda node of this module serves /compute_ik on the same domain
    proc = KinNode(directory, ros_args=['-r', '__ns:=/humanoid', '-p', f'description_file:={HUMANOID}'])
    yield proc
    proc.stop()


def test_moveit_style_avoid_collisions_request_on_a_corpus_humanoid(ros_context, humanoid_node):
    """g1 (Unitree): its collision meshes are absent (skipped with a warning), its primitives are
    checked; no SRDF, so the pairs come from sampling (deterministic: the same here and in the node)."""
    model = RobotModel.from_urdf_file(HUMANOID)
    cm = CollisionModel.build(model)
    assert cm.n_geometries > 0 and cm.link_pairs
    peer = PinCollisions(strip_collision_meshes(HUMANOID.read_text()))
    order = lambda a, b: (a, b) if model.link_index(a) < model.link_index(b) else (b, a)  # noqa: E731
    checked = set(cm.link_pairs) & {order(a, b) for a, b in peer.links}
    tip = 'left_hand_thumb_1_link'
    joints = [j for j in model.joint_names if j.startswith('left_shoulder') or j.startswith('left_elbow')
              or j.startswith('left_wrist') or j.startswith('waist')]
    p = Probe(ros_context, 'collide_humanoid_probe')
    try:
        p.watch = (humanoid_node,)
        ik = p.client(GetPositionIK, '/humanoid/compute_ik')
        home = model.home_configuration()
        solved = 0
        for T in free_targets(model, cm, tip, 8, 40, joints=joints):
            res = p.call(ik, moveit_ik_request(model, 'left_hand_thumb_2_link', tip, T, home, timeout=2.0))
            if res.error_code.val != MoveItErrorCodes.SUCCESS:
                assert_code(res, 'TIMED_OUT')
                continue
            assert 'checked for self-collision' in res.error_code.message
            q = solution_q(model, res)
            np.testing.assert_allclose(frame_transform(model, q, model.root_link, tip), T, atol=1e-4)
            assert peer.pairs(model, q, checked) == set()
            assert not self_collisions(cm, q).in_collision
            solved += 1
        assert solved >= 6
    finally:
        p.close()
    assert humanoid_node.count(r'collision model: link .*mesh .* not found') > 0


# ------------------------------------------------------------------ handlers without DDS
ARM_GROUPS = {'arm': IKGroup('arm', 'panda_link0', 'panda_hand_tcp'),
              'hand': IKGroup('hand', 'panda_hand', '', ('panda_finger_joint1',))}
SNAP = requests.RobotSnapshot(PANDA, PANDA.home_configuration(), 'p/', ARM_GROUPS, 'arm', lambda: PANDA_CM)
ARM = IKSettings(groups=ARM_GROUPS, timeout=0.2)


def call_validity(req, robot=SNAP):
    problems = []
    res = validity_service.check_state_validity(req, GetStateValidity.Response(), robot, None, problems.append)
    return res, problems


def colliding_state(pairs_wanted=None):
    q = PANDA.random_configuration(2000, np.random.default_rng(33))
    result = self_collisions(PANDA_CM, q)
    for k in np.flatnonzero(result.in_collision):
        if pairs_wanted is None or pairs_wanted(result.pairs[k]):
            return q[k], result.pairs[k]
    raise AssertionError('no such configuration in the sample')


def test_validity_group_filter_checks_only_pairs_with_a_link_of_the_group():
    # a state whose only contacts are between links the hand group does not move
    q, pairs = colliding_state(lambda ps: all('finger' not in a and 'finger' not in b and 'hand' not in a + b
                                              for a, b in ps))
    res, _ = call_validity(GetStateValidity.Request(robot_state=robot_state(PANDA, q), group_name='arm'))
    assert not res.valid and {(c.contact_body_1, c.contact_body_2) for c in res.contacts} == set(pairs)
    res, _ = call_validity(GetStateValidity.Request(robot_state=robot_state(PANDA, q), group_name='hand'))
    assert res.valid and not res.contacts


def test_validity_evaluates_joint_constraints():
    q = PANDA.home_configuration()
    assert not self_collisions(PANDA_CM, q).in_collision
    inside = JointConstraint(joint_name='panda_joint1', position=0.1, tolerance_above=0.2, tolerance_below=0.2, weight=1.0)
    outside = JointConstraint(joint_name='panda_joint2', position=0.5, tolerance_above=0.1, tolerance_below=0.1, weight=1.0)
    req = GetStateValidity.Request(robot_state=robot_state(PANDA, q))
    req.constraints.joint_constraints = [inside]
    res, _ = call_validity(req)
    assert res.valid and [(r.result, round(r.distance, 9)) for r in res.constraint_result] == [(True, 0.1)]
    req.constraints.joint_constraints = [inside, outside]
    res, _ = call_validity(req)
    assert not res.valid and [(r.result, round(r.distance, 9)) for r in res.constraint_result] == [(True, 0.1), (False, 0.5)]


@pytest.mark.parametrize('change, pattern', [
    (lambda r: setattr(r.constraints, 'position_constraints', [PositionConstraint(link_name='panda_hand')]),
     r"position constraint on 'panda_hand': constraint_region has no primitive"),
    (lambda r: setattr(r.constraints, 'visibility_constraints', [VisibilityConstraint()]),
     r'visibility constraints are not evaluated'),
    (lambda r: setattr(r, 'group_name', 'legs'), r"unknown group 'legs'"),
    (lambda r: setattr(r.constraints, 'joint_constraints', [JointConstraint(joint_name='nope')]),
     r"joint constraint on 'nope'"),
    (lambda r: setattr(r.robot_state.joint_state, 'name', ['nope']), r'robot_state'),
])
def test_validity_requests_it_cannot_evaluate_are_invalid_and_logged(change, pattern):
    req = GetStateValidity.Request(robot_state=robot_state(PANDA, PANDA.home_configuration()))
    change(req)
    res, problems = call_validity(req)
    assert not res.valid and len(problems) == 1 and re.search(pattern, problems[0]), problems


def test_validity_without_a_robot_or_without_geometry():
    res, problems = call_validity(GetStateValidity.Request(), robot=None)
    assert not res.valid and 'no robot description' in problems[0]
    bare_model = RobotModel.from_urdf(re.sub(r'<collision\b.*?</collision>', '', PANDA_XML, flags=re.S))
    bare = requests.RobotSnapshot(bare_model, bare_model.home_configuration(), groups=ARM_GROUPS, default_group='arm',
                                  collision=lambda: "robot 'panda' has no collision geometry")
    q, _ = colliding_state()
    res, problems = call_validity(GetStateValidity.Request(robot_state=robot_state(PANDA, q)), robot=bare)
    assert res.valid and not res.contacts and not problems   # nothing to collide
    # the Panda has geometry: one that cannot be checked is reported (test_node_validity_without_coal.py)
    unchecked = dataclasses.replace(SNAP, collision=lambda: 'collision checking needs coal (pip install coal)')
    res, problems = call_validity(GetStateValidity.Request(robot_state=robot_state(PANDA, q)), robot=unchecked)
    assert not res.valid and len(problems) == 1 and 'cannot be checked' in problems[0]


def test_ik_in_collision_only_is_no_solution_with_a_reason():
    """Two boxes on a slide: the target is reachable only where they overlap."""
    xml = """<robot name="slide">
  <link name="base"><collision><origin xyz="0 0 -5"/><geometry><sphere radius="0.01"/></geometry></collision></link>
  <link name="a"><collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision></link>
  <link name="b"><collision><geometry><box size="0.2 0.2 0.2"/></geometry></collision></link>
  <joint name="fix" type="fixed"><parent link="base"/><child link="a"/></joint>
  <joint name="x" type="prismatic"><parent link="base"/><child link="b"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""
    model = RobotModel.from_urdf(xml)
    srdf = parse_srdf('<robot name="slide"/>', model)
    cm = CollisionModel.build(model, srdf=srdf)
    groups = {'slide': IKGroup('slide', 'base', 'b')}
    snap = requests.RobotSnapshot(model, model.home_configuration(), groups=groups, default_group='slide',
                                  collision=lambda: cm)
    settings = IKSettings(groups=groups, timeout=0.05)
    T = np.eye(4)
    T[0, 3] = 0.1
    req = moveit_ik_request(model, 'slide', 'b', T, [0.5], timeout=0.05)
    res = ik_service.compute_ik(req, GetPositionIK.Response(), snap, settings)
    assert res.error_code.val in (MoveItErrorCodes.NO_IK_SOLUTION, MoveItErrorCodes.TIMED_OUT)
    assert 'self-collision' in res.error_code.message and not res.solution.joint_state.name
    req.ik_request.avoid_collisions = False
    assert_code(ik_service.compute_ik(req, GetPositionIK.Response(), snap, settings), 'SUCCESS')


def test_ik_policy_applies_only_without_collision_geometry():
    T = frame_transform(PANDA, PANDA.random_configuration(rng=3), 'panda_link0', 'panda_hand_tcp')
    bare = requests.RobotSnapshot(PANDA, PANDA.home_configuration(), groups=ARM_GROUPS, default_group='arm',
                                  collision=lambda: "robot 'panda' has no collision geometry")
    req = moveit_ik_request(PANDA, 'arm', '', T, PANDA.home_configuration(), timeout=0.2)
    res = ik_service.compute_ik(req, GetPositionIK.Response(), bare, ARM)
    assert_code(res, 'COLLISION_CHECKING_UNAVAILABLE', r"robot 'panda' has no collision geometry")
    import dataclasses
    unchecked = dataclasses.replace(ARM, avoid_collisions_policy='solve_unchecked')
    res = ik_service.compute_ik(req, GetPositionIK.Response(), SNAP, unchecked)   # geometry: checked anyway
    if res.error_code.val == MoveItErrorCodes.SUCCESS:
        assert 'checked for self-collision' in res.error_code.message and 'WITHOUT' not in res.error_code.message
        assert not self_collisions(PANDA_CM, solution_q(PANDA, res)).in_collision
