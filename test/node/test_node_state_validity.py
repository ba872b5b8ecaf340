"""/check_state_validity's joint constraints and /check_state_validity_multiple
(``moveit_msgs/srv/GetMultiStateValidity``), through their handlers (no DDS).

Issue 33 item 3: a joint constraint ``position = inf`` on a continuous joint raised ValueError
from ``math.remainder`` (a traceback in the log). Issue 32 "many states per call": N states in one
vectorised call, each verdict equal to a single /check_state_validity call on that state. Issue 33
"every request bounded before work starts": caps on the constraints and primitives of one request.
"""

import math

import pytest
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Pose
from moveit_msgs.msg import JointConstraint, PositionConstraint, RobotState
from moveit_msgs.srv import GetMultiStateValidity, GetStateValidity
from node_harness import robot_xml
from sensor_msgs.msg import JointState
from shape_msgs.msg import Mesh, SolidPrimitive

from robokin_ros import RobotModel, forward_kinematics
from robokin_ros.node import validity_service
from robokin_ros.node.descriptions import URDFDescription
from robokin_ros.node.live_robot import load_robot
from robokin_ros.node.multi_validity_service import check_multi_state_validity, evaluate_states
from robokin_ros.node.parameters import PARAMETERS, STRING_LIST, LiveState, ValidityCaps, check_value, read_settings

PANDA_XML, TWIN_XML = robot_xml('panda'), robot_xml('twin_arm_torso')
PANDA = RobotModel.from_urdf(PANDA_XML)
TWIN = RobotModel.from_urdf(TWIN_XML)


def defaults(name):
    spec = PARAMETERS[name]
    return [] if spec.default is STRING_LIST else spec.default


def snapshot(xml):
    """A snapshot of the live robot the node builds (groups derived from the tree)."""
    urdf = URDFDescription(RobotModel.from_urdf(xml), xml, 'test')
    return load_robot(urdf, read_settings(defaults), None).robot.snapshot()


def single(snap, q, constraints=(), group=''):
    """One /check_state_validity call on the full state ``q``: (response, problems, crashes)."""
    problems, crashes = [], []
    req = GetStateValidity.Request(group_name=group)
    req.robot_state = RobotState(joint_state=JointState(name=list(snap.model.q_names), position=q.tolist()))
    req.constraints.joint_constraints = list(constraints)
    res = validity_service.check_state_validity(req, GetStateValidity.Response(), snap, Time(), problems.append,
                                        crashes.append, policy='reject')
    return res, problems, crashes


# ------------------------------------------------------------------ joint constraint position = inf (issue 33 item 3)
@pytest.mark.parametrize('position', [math.inf, -math.inf, math.nan])
def test_a_non_finite_joint_constraint_position_is_a_clear_invalid_answer(position):
    snap = snapshot(TWIN_XML)
    c = JointConstraint(joint_name='head_pan_joint', position=position, tolerance_above=0.1, tolerance_below=0.1)
    res, problems, crashes = single(snap, TWIN.home_configuration(), [c])
    assert not crashes, crashes   # before: ValueError: math domain error (math.remainder), as a crash
    assert not res.valid and problems == [
        "/check_state_validity answered valid=false: joint constraint on 'head_pan_joint': position must be finite "
        f'and tolerances numbers, got position {position!r}, tolerances 0.1 below, 0.1 above']


def test_a_continuous_joint_constraint_is_wrapped_as_moveit_wraps_it():
    snap = snapshot(TWIN_XML)
    q = TWIN.home_configuration()
    q[TWIN.q_names.index('head_pan_joint')] = 0.05
    near = JointConstraint(joint_name='head_pan_joint', position=0.05 + 4 * math.pi, tolerance_above=0.01,
                           tolerance_below=0.01)
    res, problems, _ = single(snap, q, [near])
    assert res.valid and res.constraint_result[0].result, problems
    assert res.constraint_result[0].distance == pytest.approx(0.0, abs=1e-12)


# ------------------------------------------------------------------ many states per call (issue 32)
def multi_request(base_q, states, names, constraints=(), group=''):
    req = GetMultiStateValidity.Request(group_name=group)
    req.robot_state = RobotState(joint_state=JointState(name=list(names), position=base_q.tolist()))
    req.joint_states = [JointState(name=list(names), position=q.tolist()) for q in states]
    req.constraints.joint_constraints = list(constraints)
    return req


PANDA_CONSTRAINTS = [JointConstraint(joint_name='panda_joint1', position=0.0, tolerance_above=1.5, tolerance_below=1.5),
                     JointConstraint(joint_name='panda_joint4', position=-1.5, tolerance_above=1.0,
                                     tolerance_below=1.0)]


@pytest.mark.parametrize('group', ['', 'panda_hand_tcp'])
def test_each_state_verdict_equals_a_single_call(group):
    """200 random Panda states (some in self-collision, some outside the joint constraints)."""
    snap = snapshot(PANDA_XML)
    Q = PANDA.random_configuration(200, rng=7)
    req = multi_request(PANDA.home_configuration(), Q, PANDA.q_names, PANDA_CONSTRAINTS, group)
    verdicts = evaluate_states(snap, req, 'reject')
    expected, results = [], []
    for q in Q:
        res, problems, crashes = single(snap, q, PANDA_CONSTRAINTS, group)
        assert not crashes and not problems, (problems, crashes)
        expected.append(res.valid)
        results.append([(r.result, r.distance) for r in res.constraint_result])
    assert verdicts.valid.tolist() == expected
    assert 20 < sum(expected) < 180, sum(expected)   # both kinds of answer are exercised
    assert [[(r.result, pytest.approx(r.distance, abs=1e-12)) for r in verdicts.constraint_results(i)]
            for i in range(len(Q))] == results
    colliding = [i for i, q in enumerate(Q) if not single(snap, q, (), group)[0].valid]
    assert colliding   # self-collision is exercised too
    for i in colliding[:5]:
        assert [(k.link_a, k.link_b) for k in verdicts.contacts(i)] == \
            [(k.contact_body_1, k.contact_body_2) for k in single(snap, Q[i], (), group)[0].contacts]


def test_the_answer_is_movegroups_all_valid_and_the_first_invalid_states_details():
    snap = snapshot(PANDA_XML)
    Q = PANDA.random_configuration(60, rng=11)
    singles = [single(snap, q, PANDA_CONSTRAINTS)[0] for q in Q]
    first = next(i for i, r in enumerate(singles) if not r.valid)
    res = check_multi_state_validity(multi_request(PANDA.home_configuration(), Q, PANDA.q_names, PANDA_CONSTRAINTS),
                                     GetMultiStateValidity.Response(), snap, Time())
    assert not res.valid
    assert [(r.result, r.distance) for r in res.constraint_result] == \
        [(r.result, pytest.approx(r.distance, abs=1e-12)) for r in singles[first].constraint_result]
    assert [(k.contact_body_1, k.contact_body_2) for k in res.contacts] == \
        [(k.contact_body_1, k.contact_body_2) for k in singles[first].contacts]
    valid = [q for q, r in zip(Q, singles) if r.valid]
    res = check_multi_state_validity(multi_request(PANDA.home_configuration(), valid, PANDA.q_names,
                                                   PANDA_CONSTRAINTS), GetMultiStateValidity.Response(), snap, Time())
    assert res.valid and not res.contacts and len(res.constraint_result) == 2


def test_each_joint_state_is_laid_over_the_state_before_it():
    """MoveIt's ``setVariableValues`` on one state: names a message leaves out keep the previous value."""
    snap = snapshot(PANDA_XML)
    home = PANDA.home_configuration()
    req = GetMultiStateValidity.Request()
    req.robot_state = RobotState(joint_state=JointState(name=list(PANDA.q_names), position=home.tolist()))
    req.joint_states = [JointState(name=['panda_joint1'], position=[2.5]), JointState(name=['panda_joint2'],
                                                                                       position=[0.3])]
    c = JointConstraint(joint_name='panda_joint1', position=2.5, tolerance_above=0.01, tolerance_below=0.01)
    req.constraints.joint_constraints = [c]
    verdicts = evaluate_states(snap, req, 'reject')
    assert verdicts.valid.tolist() == [True, True]   # the second state still has panda_joint1 = 2.5


@pytest.mark.parametrize('change, message', [
    (lambda r: r.joint_states.append(JointState(name=['ghost'], position=[0.0])), 'joint_states[3]: '),
    (lambda r: r.joint_states.append(JointState(name=['panda_joint1'], position=[math.nan])),
     "joint_states[3]: non-finite positions of ['panda_joint1']"),
    (lambda r: r.joint_states.append(JointState(name=['panda_joint1'], position=[])),
     'joint_states[3] has 1 names but 0 positions'),
    (lambda r: r.constraints.joint_constraints.append(JointConstraint(joint_name='panda_joint1', position=math.inf)),
     "joint constraint on 'panda_joint1': position must be finite"),
])
def test_a_bad_request_is_invalid_with_the_reason(change, message):
    snap = snapshot(PANDA_XML)
    req = multi_request(PANDA.home_configuration(), PANDA.random_configuration(3, rng=1), PANDA.q_names)
    change(req)
    problems, crashes = [], []
    res = check_multi_state_validity(req, GetMultiStateValidity.Response(), snap, Time(), problems.append,
                                     crashes.append)
    assert not res.valid and not crashes
    assert len(problems) == 1 and message in problems[0], problems


def test_more_states_than_max_validity_states_are_refused_before_any_work():
    snap = snapshot(PANDA_XML)
    req = multi_request(PANDA.home_configuration(), PANDA.random_configuration(5, rng=1), PANDA.q_names)
    problems = []
    res = check_multi_state_validity(req, GetMultiStateValidity.Response(), snap, Time(), problems.append,
                                     max_states=4)
    assert not res.valid
    assert problems == ['/check_state_validity_multiple answered valid=false: 5 joint_states, more than '
                        'max_validity_states = 4']


def test_no_states_is_valid_as_in_movegroup():
    res = check_multi_state_validity(GetMultiStateValidity.Request(), GetMultiStateValidity.Response(),
                                     snapshot(PANDA_XML), Time())
    assert res.valid and not res.constraint_result


# ------------------------------------------------------------------ every request bounded before work starts (issue 33)
def box_constraint(link, boxes, meshes=0):
    """A position constraint on ``link`` with ``boxes`` box primitives and ``meshes`` mesh regions."""
    c = PositionConstraint(link_name=link)
    c.constraint_region.primitives = [SolidPrimitive(type=SolidPrimitive.BOX, dimensions=[0.1, 0.1, 0.1])
                                      for _ in range(boxes)]
    c.constraint_region.primitive_poses = [Pose() for _ in range(boxes)]
    c.constraint_region.meshes = [Mesh() for _ in range(meshes)]
    c.constraint_region.mesh_poses = [Pose() for _ in range(meshes)]
    return c


#: Constraints that cannot be evaluated (a joint and a link the robot lacks): a request that gets
#: the cap's refusal was refused before any of them was read.
OVER_CAPS = {
    'constraints': (lambda c: c.joint_constraints.extend(JointConstraint(joint_name='ghost', position=0.0)
                                                         for _ in range(65)),
                    '65 constraints in one request: at most 64 (parameter validity_max_constraints)'),
    'primitives': (lambda c: c.position_constraints.append(box_constraint('ghost', 65)),
                   '65 region primitives and meshes in one request: at most 64 (parameter validity_max_primitives)'),
    'primitives and meshes': (lambda c: c.position_constraints.extend([box_constraint('ghost', 40),
                                                                       box_constraint('ghost', 20, meshes=5)]),
                              '65 region primitives and meshes in one request: at most 64 (parameter '
                              'validity_max_primitives)'),
}


@pytest.mark.parametrize('cap', sorted(OVER_CAPS))
def test_a_state_validity_request_over_a_cap_is_refused_before_any_work(cap):
    """Issue 33: caps on constraints and primitives per /check_state_validity request (/compute_ik has
    its own). Before: the request was read constraint by constraint (no bound at all)."""
    add, reason = OVER_CAPS[cap]
    req = GetStateValidity.Request()
    add(req.constraints)
    problems, crashes = [], []
    res = validity_service.check_state_validity(req, GetStateValidity.Response(), snapshot(PANDA_XML), Time(),
                                        problems.append, crashes.append)
    assert not res.valid and not crashes and not res.constraint_result
    assert problems == [f'/check_state_validity answered valid=false: {reason}']


@pytest.mark.parametrize('cap', sorted(OVER_CAPS))
def test_a_multi_state_request_over_a_cap_is_refused_before_any_work(cap):
    add, reason = OVER_CAPS[cap]
    req = multi_request(PANDA.home_configuration(), PANDA.random_configuration(3, rng=1), PANDA.q_names)
    add(req.constraints)
    problems, crashes = [], []
    res = check_multi_state_validity(req, GetMultiStateValidity.Response(), snapshot(PANDA_XML), Time(),
                                     problems.append, crashes.append)
    assert not res.valid and not crashes
    assert problems == [f'/check_state_validity_multiple answered valid=false: {reason}']


def test_the_caps_come_from_their_parameters_and_are_inclusive():
    """``validity_max_constraints`` / ``validity_max_primitives`` set the caps: a request at a cap is
    evaluated, one over it refused."""
    values = {'validity_max_constraints': 2, 'validity_max_primitives': 3}
    caps = read_settings(lambda name: values.get(name, defaults(name))).validity_caps
    assert caps == ValidityCaps(max_constraints=2, max_primitives=3)
    snap = snapshot(PANDA_XML)
    q = PANDA.home_configuration()
    T = forward_kinematics(PANDA, q)[PANDA.link_index('panda_hand_tcp')]

    def answer(joint_constraints, boxes):
        req = GetStateValidity.Request()
        req.robot_state = RobotState(joint_state=JointState(name=list(PANDA.q_names), position=q.tolist()))
        req.constraints.joint_constraints = PANDA_CONSTRAINTS[:joint_constraints]
        if boxes:
            c = box_constraint('panda_hand_tcp', boxes)
            c.header.frame_id = PANDA.root_link
            for pose in c.constraint_region.primitive_poses:
                pose.position.x, pose.position.y, pose.position.z = T[:3, 3].tolist()
            req.constraints.position_constraints = [c]
        problems = []
        res = validity_service.check_state_validity(req, GetStateValidity.Response(), snap, Time(), problems.append,
                                            caps=caps)
        return len(res.constraint_result), problems

    assert answer(2, 0) == (2, [])   # evaluated: a result per constraint
    assert answer(1, 3) == (2, [])   # two constraints, three primitives
    assert answer(2, 1)[1] == ['/check_state_validity answered valid=false: 3 constraints in one request: '
                               'at most 2 (parameter validity_max_constraints)']
    assert answer(1, 4)[1] == ['/check_state_validity answered valid=false: 4 region primitives and meshes in '
                               'one request: at most 3 (parameter validity_max_primitives)']


@pytest.mark.parametrize('name', ['validity_max_constraints', 'validity_max_primitives'])
def test_a_cap_parameter_must_be_positive(name):
    assert check_value(name, 64, LiveState()) == ''
    assert check_value(name, 0, LiveState()) != ''
    assert check_value(name, -3, LiveState()) != ''


def test_the_node_passes_its_cap_parameters_to_both_services(make_node):
    node = make_node(robot_description=PANDA_XML, validity_max_constraints=1)
    problems = []
    node.service_calls.problem = problems.append
    req = GetStateValidity.Request()
    req.constraints.joint_constraints = PANDA_CONSTRAINTS
    assert not node.service_calls.check_state_validity(req, GetStateValidity.Response()).valid
    multi = multi_request(PANDA.home_configuration(), PANDA.random_configuration(2, rng=1), PANDA.q_names,
                          PANDA_CONSTRAINTS)
    assert not node.service_calls.check_multi_state_validity(multi, GetMultiStateValidity.Response()).valid
    assert [p.split(': ', 1)[1] for p in problems] == \
        ['2 constraints in one request: at most 1 (parameter validity_max_constraints)'] * 2
