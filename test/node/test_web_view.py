"""The live web view node (robokin_ros.node.web_view) against a real kin_node process.

The view node runs in the test process (its viser server is the state checked: the link poses it
holds are what browsers receive) next to a kin_node process that publishes the description and
serves /compute_ik; the probe publishes joint states. Skipped where viser is not installed.
"""

import os
import re
import threading
import time
import urllib.request

import numpy as np
import pytest
from node_harness import LATCHED_QOS, ROOT, KinNode, Probe, robot_xml
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from robokin_ros import RobotModel, forward_kinematics

viser = pytest.importorskip('viser', reason='the web view needs viser (tools/requirements-web.txt)')
from robokin_ros.node.web_view import WebViewNode  # noqa: E402

PANDA = RobotModel.from_urdf(robot_xml('panda'))
UR5E = RobotModel.from_urdf(robot_xml('ur5e'))
PREFIX = 'r1/'
CORPUS = ROOT.parent / 'shared' / 'urdf-corpus'


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


@pytest.mark.parametrize('name', ['g1_29dof_hand', 'tiago_hey5'])
def test_humanoid_and_mobile_manipulator_follow_joint_states(probe, name):
    path = CORPUS / f'{name}.urdf'
    if not path.is_file():
        pytest.skip(f'{path} is not here')
    text = path.read_text()
    model = RobotModel.from_urdf(text)
    probe.description.publish(String(data=text))
    view = shown_model(probe, model.name)
    scalar = [i for i, label in enumerate(model.q_names) if label in model.joint_names]  # not a floating base
    q = model.home_configuration()
    q[scalar] = model.random_configuration(rng=4)[scalar]
    probe.joints.publish(JointState(name=[model.q_names[i] for i in scalar], position=[float(q[i]) for i in scalar]))
    probe.spin_until(lambda: np.allclose(view.scene.link_poses(), forward_kinematics(model, q), atol=1e-6),
                     f'the {name} scene to follow joint states')


def test_web_view_executable_serves_the_page(tmp_path, start_process):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    proc = start_process(['-m', 'robokin_ros.node.web_view', '--ros-args', '-p', 'port:=0'], env=env, cwd=str(ROOT))
    deadline = time.monotonic() + 30
    while not (found := re.search(r'web view at (http://localhost:\d+)', proc.output())):
        proc.assert_running()
        assert time.monotonic() < deadline, proc.output()
        time.sleep(0.1)
    with urllib.request.urlopen(found.group(1), timeout=10) as page:
        assert page.status == 200


def test_web_view_executable_without_viser_says_how_to_install(tmp_path, start_process):
    (tmp_path / 'viser.py').write_text('raise ImportError("No module named viser")\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(ROOT)]))
    proc = start_process(['-m', 'robokin_ros.node.web_view'], env=env, cwd=str(ROOT))
    proc.popen.wait(timeout=60)
    proc.stop(expect_returncode=1)
    lines = proc.output().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('web_view: the web view needs viser') and 'pip install' in lines[0]


def test_bad_update_rate_is_one_line_and_exit_code_1(start_process):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get('PYTHONPATH')] if p]))
    proc = start_process(['-m', 'robokin_ros.node.web_view', '--ros-args', '-p', 'port:=0', '-p', 'update_rate:=0.0'],
                         env=env, cwd=str(ROOT))
    proc.popen.wait(timeout=60)
    proc.stop(expect_returncode=1)
    assert 'web_view: parameter update_rate must be > 0 [Hz], got 0.0' in proc.output()
