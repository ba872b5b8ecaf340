"""kin_node as a process: /tf_static, /tf against the core's FK, joint-state merging and bad
entries, publish_frequency, frame_prefix, Jacobian and gravity messages, parameter validation."""

import itertools
import re

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from node_harness import LATCHED_QOS, KinNode, Probe, TFListener, joint_state, robot_xml, transform_matrix
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from tf2_msgs.msg import TFMessage

from robokin_ros import RobotModel, frame_transform, jacobian
from robokin_ros.dynamics import gravity_torques
from robokin_ros.node.conversions import parse_jacobian_msg

PREFIX = 'r1/'
MODEL = RobotModel.from_urdf(robot_xml('panda'))
ARM = [n for n in MODEL.joint_names if n != 'panda_finger_joint1']


@pytest.fixture(scope='module')
def node(tmp_path_factory, ros_context):
    proc = KinNode(tmp_path_factory.mktemp('tf'), params={
        'robot_description': robot_xml('panda'), 'frame_prefix': PREFIX, 'warning_period': 60.0,
        'jacobian_frames': ['panda_hand_tcp', 'panda_link4']})
    yield proc
    proc.stop()


@pytest.fixture(scope='module')
def probe(ros_context, node):
    p = Probe(ros_context, 'tf_probe')
    p.watch = (node,)
    p.tf = TFListener(p)
    p.joint_states = p.publisher(JointState, '/joint_states', subscribers=1)
    yield p
    p.close()


_SECONDS = itertools.count(1)


def next_stamp(nanosec=0):
    """A stamp later than every stamp sent before (the node drops stamps older than the last)."""
    return Time(sec=next(_SECONDS), nanosec=nanosec)


def send(probe, names, positions, t=None, expect_joint=None):
    """Publish a joint state stamped ``t`` (default: a new stamp); with ``expect_joint``, wait for
    the /tf message with that stamp carrying the joint's child link and return it."""
    t = next_stamp() if t is None else t
    before = len(probe.tf.dynamic_messages)
    probe.joint_states.publish(joint_state(names, positions, t))
    if expect_joint is None:
        return None

    def arrived():
        for msg in probe.tf.dynamic_messages[before:]:
            for tr in msg.transforms:
                if tr.header.stamp == t and tr.child_frame_id == PREFIX + expect_joint:
                    return msg
        return None
    return probe.spin_until(arrived, f'/tf stamped {t} for {expect_joint}')


def stream_until(probe, q, received, what):
    """Publish ``q`` with new stamps until ``received`` (a recording list) has a message.

    The node publishes Jacobians and torques only once it has discovered a subscriber."""
    def step():
        if received:
            return True
        send(probe, MODEL.joint_names, q)
        return False
    probe.spin_until(step, what)
    return received[-1]


def check_tf_against_fk(msg, q):
    """Every transform of ``msg`` equals the core's parent -> child transform at ``q``."""
    assert msg.transforms
    for t in msg.transforms:
        parent, child = t.header.frame_id, t.child_frame_id
        assert parent.startswith(PREFIX) and child.startswith(PREFIX)
        expected = frame_transform(MODEL, q, parent[len(PREFIX):], child[len(PREFIX):])
        np.testing.assert_allclose(transform_matrix(t), expected, atol=1e-12)


def test_tf_static_has_every_fixed_joint_in_one_message(probe):
    messages = probe.record(TFMessage, '/tf_static', LATCHED_QOS)
    probe.spin_until(lambda: messages, '/tf_static')
    fixed = [j for j in range(MODEL.n_joints) if MODEL.is_fixed[j]]
    msg = messages[-1]
    assert len(msg.transforms) == len(fixed)
    for t in msg.transforms:
        j = MODEL.link_index(t.child_frame_id[len(PREFIX):]) - 1
        assert MODEL.is_fixed[j]
        assert t.header.frame_id == PREFIX + MODEL.link_names[MODEL.link_parents[j + 1]]
        np.testing.assert_allclose(transform_matrix(t), MODEL.joint_origins[j], atol=1e-12)


def test_robot_description_is_republished_latched(probe):
    messages = probe.record(String, '/robot_description', LATCHED_QOS)
    probe.spin_until(lambda: messages, '/robot_description')
    assert messages[-1].data == robot_xml('panda')


def test_tf_equals_core_fk_with_joint_state_stamp_and_mimic(probe):
    q = MODEL.random_configuration(rng=1)
    t = next_stamp()
    msg = send(probe, MODEL.joint_names, q, t, expect_joint='panda_link7')
    check_tf_against_fk(msg, q)
    children = {tr.child_frame_id for tr in msg.transforms}
    # every movable joint, the mimic finger included; fixed joints are on /tf_static only
    assert children == {PREFIX + n for n in ['panda_link1', 'panda_link2', 'panda_link3', 'panda_link4', 'panda_link5',
                                             'panda_link6', 'panda_link7', 'panda_leftfinger', 'panda_rightfinger']}
    assert all(tr.header.stamp == t for tr in msg.transforms)


def test_subsets_from_several_publishers_are_merged(probe):
    q = MODEL.random_configuration(rng=2)
    arm = [MODEL.q_names.index(n) for n in ARM]
    send(probe, ARM, q[arm], expect_joint='panda_link7')
    msg = send(probe, ['panda_finger_joint1'], [q[-1]], expect_joint='panda_leftfinger')
    # only the fingers (the joint sent and its mimic) are in this message, stamped with its time
    assert {tr.child_frame_id for tr in msg.transforms} == {PREFIX + 'panda_leftfinger', PREFIX + 'panda_rightfinger'}
    check_tf_against_fk(msg, q)
    # the merged state (arm from one publisher, fingers from the other) drives the Jacobians
    jac = probe.record(Float64MultiArray, '/robokin/jacobian/panda_hand_tcp')

    def step():
        if not jac:
            send(probe, ['panda_finger_joint1'], [q[-1]])
        return jac
    probe.spin_until(step, 'a Jacobian message')
    decoded = parse_jacobian_msg(jac[-1])
    np.testing.assert_allclose(decoded.J, jacobian(MODEL, q, 'panda_hand_tcp'), atol=1e-12)


@pytest.mark.parametrize('frame', ['panda_hand_tcp', 'panda_link4'])
def test_jacobian_messages_equal_the_core_and_describe_themselves(probe, frame):
    jac = probe.record(Float64MultiArray, f'/robokin/jacobian/{frame}')
    q = MODEL.random_configuration(rng=8)
    decoded = parse_jacobian_msg(stream_until(probe, q, jac, f'a Jacobian of {frame}'))
    assert decoded.frame == PREFIX + frame
    assert decoded.reference == 'local_world_aligned'
    assert decoded.rows == ('linear_x', 'linear_y', 'linear_z', 'angular_x', 'angular_y', 'angular_z')
    assert decoded.columns == MODEL.v_names
    np.testing.assert_allclose(decoded.J, jacobian(MODEL, q, frame, 'local_world_aligned'), atol=1e-12)


def test_nan_entries_are_dropped_with_one_warning_and_tf_stays_right(probe, node):
    q = MODEL.random_configuration(rng=3)
    send(probe, MODEL.joint_names, q, expect_joint='panda_link7')
    bad = q.copy()
    bad[MODEL.q_names.index('panda_joint3')] = np.nan
    bad_q = bad.copy()
    bad_q[[MODEL.q_names.index('panda_joint3')]] = q[MODEL.q_names.index('panda_joint3')]
    bad_q[0] += 0.25  # the finite entries of the bad message are still used
    bad[0] = bad_q[0]
    for _k in range(5):
        msg = send(probe, MODEL.joint_names, bad, expect_joint='panda_link1')
    assert PREFIX + 'panda_link3' not in {tr.child_frame_id for tr in msg.transforms}
    check_tf_against_fk(msg, bad_q)
    probe.spin_until(lambda: node.count(r'non-finite .*panda_joint3'), 'the NaN warning')
    assert node.count(r'non-finite .*panda_joint3') == 1  # throttled: 5 bad messages, one warning


def test_unknown_names_and_length_mismatch_are_dropped_with_warnings(probe, node):
    q = MODEL.random_configuration(rng=4)
    msg = send(probe, list(MODEL.joint_names) + ['no_such_joint'], list(q) + [1.0], expect_joint='panda_link7')
    check_tf_against_fk(msg, q)
    probe.spin_until(lambda: node.count(r"not in robot 'panda': \['no_such_joint'\]"), 'the unknown-name warning')
    broken = joint_state(['panda_joint1', 'panda_joint2'], [0.1], next_stamp())
    probe.joint_states.publish(broken)
    probe.spin_until(lambda: node.count(r"2 names but 1 positions \(joints \['panda_joint1', 'panda_joint2'\]\)"),
                     'the length warning')
    # the broken message changed nothing: FK of the next complete state is still exact
    msg = send(probe, MODEL.joint_names, q, expect_joint='panda_link7')
    check_tf_against_fk(msg, q)


def test_warnings_are_per_kind_and_bounded_in_size(probe, node):
    """Distinct long lists of unknown names: at most one warning per kind and period, naming a
    few and counting the rest (the log and the node's memory stay bounded)."""
    pattern = r"not in robot 'panda'"
    before = node.count(pattern)
    q = MODEL.random_configuration(rng=6)
    for k in range(10):
        names = list(MODEL.joint_names) + [f'ghost_{k}_{i}' for i in range(5000)]
        probe.joint_states.publish(joint_state(names, list(q) + [0.0] * 5000, next_stamp()))
    send(probe, MODEL.joint_names, q, expect_joint='panda_link7')   # all ten were handled before this one
    assert node.count(pattern) - before <= 1
    lines = [line for line in node.output().splitlines() if 'ghost_' in line]
    assert all(len(line) < 1000 for line in lines), max(map(len, lines))
    assert all('more]' in line for line in lines)


def test_publish_frequency_limits_tf_by_stamp(probe):
    """Default 20 Hz: stamps 1 ms apart after a published one are not published; 60 ms apart are."""
    q = MODEL.random_configuration(rng=5)
    t = next_stamp()
    send(probe, MODEL.joint_names, q, t, expect_joint='panda_link7')
    before = len(probe.tf.dynamic_messages)
    for k in range(1, 6):
        probe.joint_states.publish(joint_state(MODEL.joint_names, q, Time(sec=t.sec, nanosec=k * 1_000_000)))
    last = send(probe, MODEL.joint_names, q, Time(sec=t.sec, nanosec=60_000_000), expect_joint='panda_link7')
    stamps = [m.transforms[0].header.stamp for m in probe.tf.dynamic_messages[before:]]
    assert stamps == [last.transforms[0].header.stamp]


def set_parameter(probe, name, value):
    client = probe.client(SetParameters, '/robokin/set_parameters')
    kind = {float: ParameterType.PARAMETER_DOUBLE, str: ParameterType.PARAMETER_STRING,
            bool: ParameterType.PARAMETER_BOOL}[type(value)]
    field = {float: 'double_value', str: 'string_value', bool: 'bool_value'}[type(value)]
    p = ParameterMsg(name=name, value=ParameterValue(type=kind, **{field: value}))
    return probe.call(client, SetParameters.Request(parameters=[p])).results[0]


@pytest.mark.parametrize('name, value, reason', [
    ('publish_frequency', 0.0, r'publish_frequency must be a finite number > 0, got 0.0'),
    ('publish_frequency', -5.0, r'publish_frequency must be a finite number > 0, got -5.0'),
    ('jacobian_reference', 'body', r"unknown Jacobian reference 'body'"),
    ('avoid_collisions_policy', 'maybe', r"avoid_collisions_policy must be 'reject' or 'solve_unchecked'"),
    ('robot_description', '<robot name="x"><link name="a"/><joint name="j" type="revolute"/></robot>',
     r'invalid robot description: invalid URDF'),
])
def test_bad_parameters_are_rejected_with_a_reason(probe, name, value, reason):
    result = set_parameter(probe, name, value)
    assert not result.successful
    assert re.search(reason, result.reason), result.reason


def test_good_parameter_is_applied_at_run_time(probe):
    assert set_parameter(probe, 'ignore_timestamp', True).successful
    q = MODEL.random_configuration(rng=6)
    t = next_stamp()
    send(probe, MODEL.joint_names, q, t, expect_joint='panda_link7')
    # 1 ms apart: published anyway now
    msg = send(probe, MODEL.joint_names, q, Time(sec=t.sec, nanosec=1_000_000), expect_joint='panda_link7')
    check_tf_against_fk(msg, q)
    assert set_parameter(probe, 'ignore_timestamp', False).successful


def test_gravity_torques_equal_the_core(probe):
    torques = probe.record(JointState, '/robokin/gravity_torques')
    q = MODEL.random_configuration(rng=7)
    msg = stream_until(probe, q, torques, 'gravity torques')
    assert list(msg.name) == list(MODEL.v_names)
    np.testing.assert_allclose(np.array(msg.effort), gravity_torques(MODEL, q), atol=1e-9)
