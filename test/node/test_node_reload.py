"""kin_node with description_from_topic: waiting state, latched description -> /tf_static, hot
reload to another robot, a bad description keeps the old model; time going backwards (sim time)
resets warning throttling."""

import re

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from moveit_msgs.msg import MoveItErrorCodes
from moveit_msgs.srv import GetPositionFK
from node_harness import LATCHED_QOS, KinNode, Probe, TFListener, joint_state, robot_xml, transform_matrix
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from robokin_ros import RobotModel, frame_transform
from robokin_ros.node.conversions import pose_to_matrix

PANDA = RobotModel.from_urdf(robot_xml('panda'))
TWIN = RobotModel.from_urdf(robot_xml('twin_arm_torso'))


@pytest.fixture(scope='module')
def node(tmp_path_factory):
    proc = KinNode(tmp_path_factory.mktemp('reload'), params={
        'description_from_topic': True, 'use_sim_time': True, 'warning_period': 60.0})
    yield proc
    proc.stop()


@pytest.fixture(scope='module')
def probe(ros_context, node):
    p = Probe(ros_context, 'reload_probe')
    p.watch = (node,)
    p.tf = TFListener(p)
    p.fk = p.client(GetPositionFK, '/compute_fk')
    p.description = p.node.create_publisher(String, '/robot_description', LATCHED_QOS)
    p.clock = p.node.create_publisher(Clock, '/clock', 10)
    yield p
    p.close()


def fk(probe, link):
    res = probe.call(probe.fk, GetPositionFK.Request(fk_link_names=[link]))
    return res


def static_children(probe):
    return {child for (_, child) in probe.tf.static}


def test_waiting_node_says_so_and_services_fail_clearly(probe, node):
    probe.spin_until(lambda: node.count(r'waiting for the robot description on topic /robot_description'),
                     'the waiting message')
    res = fk(probe, 'panda_hand')
    assert res.error_code.val == MoveItErrorCodes.FAILURE
    assert 'no robot description received yet' in res.error_code.message


def test_latched_description_gives_tf_static(probe):
    probe.description.publish(String(data=robot_xml('panda')))
    probe.spin_until(lambda: 'panda_hand_tcp' in static_children(probe), '/tf_static of the panda')
    t = probe.tf.static[('panda_hand', 'panda_hand_tcp')]
    j = PANDA.joint_index('panda_hand_tcp_joint')
    np.testing.assert_allclose(transform_matrix(t), PANDA.joint_origins[j], atol=1e-12)
    assert fk(probe, 'panda_hand').error_code.val == MoveItErrorCodes.SUCCESS


def test_hot_reload_to_another_robot(probe, node):
    probe.description.publish(String(data=robot_xml('twin_arm_torso')))
    probe.spin_until(lambda: 'camera_optical_frame' in static_children(probe), '/tf_static of twin_arm_torso')
    probe.spin_until(lambda: node.count(r"robot 'twin_arm_torso' from topic /robot_description"), 'the reload log')
    res = fk(probe, 'panda_hand')
    assert res.error_code.val == MoveItErrorCodes.INVALID_LINK_NAME
    pub = probe.publisher(JointState, '/joint_states')
    q = TWIN.random_configuration(rng=30)

    def tf_of_q():
        pub.publish(joint_state(TWIN.joint_names, q, Time(sec=1)))
        t = probe.tf.latest.get(('torso_link', 'left_shoulder_link'))
        return t if t is not None and np.allclose(
            transform_matrix(t), frame_transform(TWIN, q, 'torso_link', 'left_shoulder_link'), atol=1e-12) else None
    probe.spin_until(tf_of_q, '/tf of the new robot')
    res = fk(probe, 'left_tool0')
    np.testing.assert_allclose(pose_to_matrix(res.pose_stamped[0].pose),
                               frame_transform(TWIN, q, 'base_link', 'left_tool0'), atol=1e-12)


def test_bad_description_keeps_the_old_model(probe, node):
    bad = '<robot name="broken"><link name="a"/><joint name="j" type="revolute"><parent link="a"/></joint></robot>'
    probe.description.publish(String(data=bad))
    pattern = r"rejected the robot description from topic /robot_description \(keeping robot 'twin_arm_torso'\): invalid URDF"
    probe.spin_until(lambda: node.count(pattern), 'the rejection message')
    line = [ln for ln in node.output().splitlines() if re.search(pattern, ln)][0]
    assert "'j'" in node.output()[node.output().index(line):]  # the reason names the bad joint
    res = fk(probe, 'left_tool0')
    assert res.error_code.val == MoveItErrorCodes.SUCCESS


def test_robot_description_parameter_is_refused_when_reading_the_topic(probe):
    client = probe.client(SetParameters, '/robokin/set_parameters')
    p = ParameterMsg(name='robot_description', value=ParameterValue(
        type=ParameterType.PARAMETER_STRING, string_value=robot_xml('panda')))
    result = probe.call(client, SetParameters.Request(parameters=[p])).results[0]
    assert not result.successful
    assert 'description_from_topic is true' in result.reason


def test_time_going_backwards_resets_warning_throttling(probe, node):
    """With sim time: a bad entry warns once, repeats are throttled, and a /clock jump back
    (bag replay loop) makes the next one warn again."""
    pub = probe.publisher(JointState, '/joint_states')
    pattern = r'non-finite .*left_elbow_flex_joint'
    stamps = iter(range(1000, 2000))

    def processed(clock_sec):
        """Publish a half-bad joint state at sim time ``clock_sec``; wait for the TF of its good half."""
        sec = next(stamps)
        msg = joint_state(['torso_lift_joint', 'left_elbow_flex_joint'], [0.1, float('nan')], Time(sec=sec))

        def step():
            probe.clock.publish(Clock(clock=Time(sec=clock_sec)))
            pub.publish(msg)
            t = probe.tf.latest.get(('base_link', 'torso_link'))
            return t is not None and t.header.stamp.sec == sec
        probe.spin_until(step, f'a joint state processed at sim time {clock_sec}')
        return True

    for _ in range(6):
        processed(100)
    assert node.count(pattern) == 1          # at least six bad entries, one warning
    assert node.count(r'time moved backwards') == 0
    probe.spin_until(lambda: processed(50) and node.count(pattern) == 2, 'a second warning after the clock went back')
    assert node.count(r'time moved backwards \(bag replay\?\): rate limits and warning throttling reset') == 1
