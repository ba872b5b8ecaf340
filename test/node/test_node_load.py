"""kin_node under load: a 5 kHz joint-state flood does not crash it, and a long IK call does not
stop /tf (services run on their own threads) — with both values of parameter ``executor``."""

import time

import numpy as np
import pytest
from builtin_interfaces.msg import Duration, Time
from moveit_msgs.msg import MoveItErrorCodes
from moveit_msgs.srv import GetPositionIK
from node_harness import PANDA_UNREACHABLE_XYZ, KinNode, Probe, TFListener, joint_state, robot_xml, transform_matrix
from sensor_msgs.msg import JointState

from robokin_ros import RobotModel, frame_transform

PANDA = RobotModel.from_urdf(robot_xml('panda'))


@pytest.fixture(scope='module', params=['events', 'threads'])
def node(tmp_path_factory, request):
    proc = KinNode(tmp_path_factory.mktemp('load'), params={
        'robot_description': robot_xml('panda'), 'ignore_timestamp': True, 'executor': request.param,
        'ik_max_iterations': 1_000_000_000})  # the long IK call below must end on its timeout
    proc.executor = request.param
    yield proc
    proc.stop()


@pytest.fixture(scope='module')
def probe(ros_context, node):
    p = Probe(ros_context, 'load_probe')
    p.watch = (node,)
    p.tf = TFListener(p)
    p.joint_states = p.publisher(JointState, '/joint_states')
    yield p
    p.close()


def wait_for_tf_of(probe, q, sec):
    """Publish ``q`` stamped ``sec`` until /tf shows it; check it against the core."""
    msg = joint_state(PANDA.joint_names, q, Time(sec=sec))

    def step():
        probe.joint_states.publish(msg)
        t = probe.tf.latest.get(('panda_link6', 'panda_link7'))
        return t if t is not None and t.header.stamp.sec == sec else None
    t = probe.spin_until(step, f'/tf stamped {sec}')
    np.testing.assert_allclose(transform_matrix(t), frame_transform(PANDA, q, 'panda_link6', 'panda_link7'), atol=1e-12)


def test_a_5_khz_flood_does_not_crash_the_node(probe, node):
    rng = np.random.default_rng(40)
    messages = [joint_state(PANDA.joint_names, PANDA.random_configuration(rng=rng), Time(sec=1, nanosec=k))
                for k in range(200)]
    start = time.perf_counter()
    sent = 0
    while sent < 10_000:  # 2 s at 5 kHz, paced
        due = start + sent / 5000.0
        while time.perf_counter() < due:
            pass
        probe.joint_states.publish(messages[sent % len(messages)])
        sent += 1
        if sent % 500 == 0:
            probe.executor.spin_once(timeout_sec=0)
    node.assert_running()
    wait_for_tf_of(probe, PANDA.random_configuration(rng=41), 2)  # still answering, and right


def test_a_long_ik_call_does_not_stop_tf(probe, node):
    client = probe.client(GetPositionIK, '/compute_ik')
    req = GetPositionIK.Request()
    target = req.ik_request.pose_stamped   # out of reach: runs to the timeout
    (target.pose.position.x, target.pose.position.y, target.pose.position.z), target.pose.orientation.w = \
        PANDA_UNREACHABLE_XYZ, 1.0
    req.ik_request.ik_link_name = 'panda_hand_tcp'
    req.ik_request.timeout = Duration(sec=2)
    future = client.call_async(req)
    q = PANDA.home_configuration()
    stamps_seen = set()
    sec = 100
    while not future.done():
        sec += 1
        probe.joint_states.publish(joint_state(PANDA.joint_names, q, Time(sec=sec)))
        probe.spin_for(0.02)
        stamps_seen |= {m.transforms[0].header.stamp.sec for m in probe.tf.dynamic_messages if m.transforms}
        if sec > 100 + 2000:
            pytest.fail('no IK answer')
    assert future.result().error_code.val == MoveItErrorCodes.TIMED_OUT
    during = {s for s in stamps_seen if 100 < s <= sec}
    # /tf kept following the joint states while the 2 s IK call ran on a service thread
    assert len(during) >= 10, (len(during), sec - 100)


def test_fk_does_not_queue_behind_ik_calls(probe, node):
    """Four 2 s IK calls hold both worker threads; /compute_fk is still answered before any of them."""
    from moveit_msgs.srv import GetPositionFK
    ik = probe.client(GetPositionIK, '/compute_ik')
    fk = probe.client(GetPositionFK, '/compute_fk')
    req = GetPositionIK.Request()
    pose = req.ik_request.pose_stamped.pose
    (pose.position.x, pose.position.y, pose.position.z), pose.orientation.w = PANDA_UNREACHABLE_XYZ, 1.0
    req.ik_request.ik_link_name = 'panda_hand_tcp'
    req.ik_request.timeout = Duration(sec=2)
    calls = [ik.call_async(req) for _ in range(4)]
    probe.spin_for(0.3)   # the IK calls reach the node and occupy its workers
    answer = fk.call_async(GetPositionFK.Request(fk_link_names=['panda_hand_tcp']))
    probe.spin_until(answer.done, 'the FK answer')
    assert not any(c.done() for c in calls), 'an IK call ended before FK was answered'
    assert answer.result().error_code.val == MoveItErrorCodes.SUCCESS
    probe.spin_until(lambda: all(c.done() for c in calls), 'the IK answers', timeout=30)


def test_services_are_served_by_the_companion_node_only_with_the_events_executor(probe, node):
    probe.client(GetPositionIK, '/compute_ik')  # waits until the service is there
    by_node = {name: {service for service, _ in probe.node.get_service_names_and_types_by_node(name, '/')}
               for name in ('robokin', 'robokin_services') if name in probe.node.get_node_names()}
    host = 'robokin_services' if node.executor == 'events' else 'robokin'
    assert {'/compute_ik', '/compute_fk', '/check_state_validity'} <= by_node[host], by_node
    assert ('robokin_services' in by_node) == (node.executor == 'events'), by_node
    assert '/robokin/set_parameters' in by_node['robokin']   # parameters stay on the node itself
