"""The live web view node (robokin_ros.node.web_view) against a real kin_node process.

The view node runs in the test process (its viser server is the state checked: the link poses it
holds are what browsers receive) next to a kin_node process that publishes the description and
serves /compute_ik; the probe publishes joint states. Skipped where viser is not installed.
"""

import threading
import time

import numpy as np
import pytest
from node_harness import LATCHED_QOS, KinNode, Probe, robot_xml
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from robokin_ros import RobotModel, forward_kinematics

viser = pytest.importorskip('viser', reason='the web view needs viser (tools/requirements-web.txt)')
from robokin_ros.node.web_view import WebViewNode  # noqa: E402

PANDA = RobotModel.from_urdf(robot_xml('panda'))
UR5E = RobotModel.from_urdf(robot_xml('ur5e'))
PREFIX = 'r1/'


@pytest.fixture(scope='module')
def kin_node(tmp_path_factory):
    proc = KinNode(tmp_path_factory.mktemp('web_view'), params={
        'robot_description': robot_xml('panda'), 'frame_prefix': PREFIX})
    yield proc
    proc.stop()


@pytest.fixture(scope='module')
def probe(ros_context, kin_node):
    p = Probe(ros_context, 'web_view_probe')
    p.watch = (kin_node,)
    p.view = WebViewNode(viser, context=ros_context, parameter_overrides=[
        Parameter('port', value=0), Parameter('frame_prefix', value=PREFIX), Parameter('update_rate', value=50.0)])
    p.executor.add_node(p.view)
    p.joints = p.node.create_publisher(JointState, '/joint_states', 10)
    p.description = p.node.create_publisher(String, '/robot_description', LATCHED_QOS)
    yield p
    p.executor.remove_node(p.view)
    p.view.destroy_node()
    p.close()


def shown_model(probe, name):
    probe.spin_until(lambda: probe.view.view is not None and probe.view.view.model.name == name,
                     f'the web view to show {name!r}')
    return probe.view.view


def publish(probe, model, q):
    probe.joints.publish(JointState(name=list(model.joint_names), position=[float(v) for v in q]))


def test_joint_states_move_the_scene_to_the_cores_fk(probe):
    view = shown_model(probe, 'panda')
    q = PANDA.random_configuration(rng=3)
    expected = forward_kinematics(PANDA, q)
    publish(probe, PANDA, q)
    probe.spin_until(lambda: np.allclose(view.scene.link_poses(), expected, atol=1e-6),
                     'the scene link poses to equal FK of the published joint state')
    assert not np.allclose(expected, forward_kinematics(PANDA, PANDA.home_configuration()), atol=1e-3)


def test_updates_follow_a_50_hz_joint_stream_at_20_hz_or_more(probe):
    shown_model(probe, 'panda')
    rng = np.random.default_rng(0)
    start_updates, start = probe.view.updates, time.monotonic()
    while time.monotonic() - start < 1.0:
        publish(probe, PANDA, PANDA.random_configuration(rng=rng))
        probe.spin_for(0.02)
    rate = (probe.view.updates - start_updates) / (time.monotonic() - start)
    assert rate >= 20.0, f'{rate:.1f} view updates per second'


def call_in_thread(probe, function, *args):
    """``function(*args)`` in a thread while the test thread spins (it waits on a service reply)."""
    out = {}
    worker = threading.Thread(target=lambda: out.setdefault('value', function(*args)))
    worker.start()
    probe.spin_until(lambda: not worker.is_alive(), 'the IK call to return', timeout=20.0)
    return out['value']


def test_gizmo_ik_calls_the_nodes_compute_ik_with_the_frame_prefix(probe):
    view = shown_model(probe, 'panda')
    probe.spin_until(lambda: probe.view.ik_client.service_is_ready(), '/compute_ik')
    goal = PANDA.random_configuration(rng=5)
    target = forward_kinematics(PANDA, goal)[PANDA.link_index(view.tip)]
    outcome = call_in_thread(probe, view.solve, view.tip, target, view.scene.q.copy())
    assert outcome.success, outcome
    reached = forward_kinematics(PANDA, outcome.q)[PANDA.link_index(view.tip)]
    np.testing.assert_allclose(reached, target, atol=1e-4)
    assert outcome.position_error < 1e-4
    np.testing.assert_allclose(view.solution_marker.position, target[:3, 3], atol=1e-4)
    assert 'reached' in view.ik_status.content


def test_unknown_tip_is_reported_with_the_nodes_error_code(probe):
    view = shown_model(probe, 'panda')
    probe.spin_until(lambda: probe.view.ik_client.service_is_ready(), '/compute_ik')
    outcome = call_in_thread(probe, probe.view._compute_ik, 'no_such_link', np.eye(4), view.scene.q)
    assert outcome.q is None and not outcome.success
    assert 'INVALID_LINK_NAME' in outcome.message


def test_new_description_replaces_the_view_and_a_bad_one_keeps_it(probe):
    probe.description.publish(String(data=robot_xml('ur5e')))
    view = shown_model(probe, UR5E.name)
    assert len(view.scene.frames) == UR5E.n_links
    probe.description.publish(String(data='<robot name="broken"><link name="a"/>'))
    probe.spin_for(0.5)
    assert probe.view.view is view
    q = UR5E.random_configuration(rng=1)
    publish(probe, UR5E, q)
    probe.spin_until(lambda: np.allclose(view.scene.link_poses(), forward_kinematics(UR5E, q), atol=1e-6),
                     'the ur5e scene to follow joint states')
