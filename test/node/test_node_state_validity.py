"""/check_state_validity's joint constraints and /check_state_validity_multiple
(``moveit_msgs/srv/GetMultiStateValidity``), through their handlers (no DDS).

Issue 33 item 3: a joint constraint ``position = inf`` on a continuous joint raised ValueError
from ``math.remainder`` (a traceback in the log). Issue 32 "many states per call": N states in one
vectorised call, each verdict equal to a single /check_state_validity call on that state.
"""

import math

import pytest
from builtin_interfaces.msg import Time
from moveit_msgs.msg import JointConstraint, RobotState
from moveit_msgs.srv import GetMultiStateValidity, GetStateValidity
from node_harness import robot_xml
from sensor_msgs.msg import JointState

from robokin_ros import RobotModel
from robokin_ros.node import services
from robokin_ros.node.descriptions import URDFDescription
from robokin_ros.node.live_robot import load_robot
from robokin_ros.node.multi_state_validity import check_multi_state_validity, evaluate_states
from robokin_ros.node.parameters import PARAMETERS, STRING_LIST, read_settings

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
    res = services.check_state_validity(req, GetStateValidity.Response(), snap, Time(), problems.append,
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
