"""The live web view node (robokin_ros.node.web_view) against a real kin_node process.

The view node runs in the test process (its viser server is the state checked: the link poses it
holds are what browsers receive) next to a kin_node process that publishes the description and
serves /compute_ik; the probe publishes joint states. Skipped where viser is not installed.
"""

import os
import re
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest
from node_harness import FIXTURES, LATCHED_QOS, ROOT, KinNode, Probe, robot_xml
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
    while not (found := re.search(r'web view at (http://127\.0\.0\.1:\d+/\?token=[\w-]+)', proc.output())):
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


# ---------------------------------------------------------------------------- in-process, no DDS (issue 33)
@pytest.fixture
def view_node(node_context):
    """A WebViewNode in the test process, driven through its callbacks."""
    node = WebViewNode(viser, context=node_context, namespace='/test_web_view_inproc',
                       parameter_overrides=[Parameter('port', value=0)])
    yield node
    node.destroy_node()


def chain_urdf(n_joints):
    links = ''.join(f'<link name="l{i}"/>' for i in range(n_joints + 1))
    joints = ''.join(f'<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/>'
                     f'<origin xyz="0 0 0.01"/><axis xyz="0 0 1"/>'
                     f'<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>' for i in range(n_joints))
    return f'<robot name="chain{n_joints}">{links}{joints}</robot>'


def test_a_mimic_joint_driven_past_the_float_range_is_dropped_and_the_view_goes_on(view_node):
    text = (FIXTURES / 'prismatic_continuous_mimic.urdf').read_text()
    view_node._on_description(String(data=text))
    view = view_node.view
    model = view.model
    good = model.home_configuration()
    good[model.q_names.index('wheel_joint')] = 0.5
    view_node._on_joint_state(JointState(name=['wheel_joint'], position=[0.5]))
    view_node._update()
    np.testing.assert_allclose(view.scene.link_poses(), forward_kinematics(model, good), atol=1e-6)
    # the mimic follower = 2 * 1e308 + 0.1 overflows: the state is dropped, the timer lives on
    view_node._on_joint_state(JointState(name=['wheel_joint'], position=[1e308]))
    view_node._update()
    view_node._on_joint_state(JointState(name=['wheel_joint', 'slider_joint'], position=[float('nan'), 0.25]))
    view_node._update()
    good[model.q_names.index('slider_joint')] = 0.25
    np.testing.assert_allclose(view.scene.link_poses(), forward_kinematics(model, good), atol=1e-6)
    np.testing.assert_allclose(view_node.q, good)


def test_a_long_chain_is_shown_and_one_over_max_links_refused(view_node):
    view_node._on_description(String(data=chain_urdf(999)))   # 1,000 links: the node's limit
    assert view_node.view is not None and view_node.view.model.n_links == 1000
    shown = view_node.view
    view_node._on_description(String(data=chain_urdf(1000)))  # 1,001 links
    assert view_node.view is shown
    assert view_node.limits.max_links == 1000


def test_a_description_over_max_description_bytes_is_refused(node_context):
    node = WebViewNode(viser, context=node_context, namespace='/test_web_view_bytes', parameter_overrides=[
        Parameter('port', value=0), Parameter('max_description_bytes', value=2000)])
    try:
        node._on_description(String(data=robot_xml('panda')))
        assert node.view is None
        node._on_description(String(data=chain_urdf(3)))
        assert node.view is not None and node.view.model.n_links == 4
    finally:
        node.destroy_node()


def test_the_same_description_again_is_ignored_and_another_replaces_it(view_node):
    view_node._on_description(String(data=robot_xml('ur5e')))
    shown = view_node.view
    view_node._on_description(String(data=robot_xml('ur5e')))
    assert view_node.view is shown and not shown.removed
    view_node._on_description(String(data=robot_xml('panda')))
    assert view_node.view is not shown and shown.removed


def test_the_page_and_websocket_need_the_token_and_the_pages_origin(view_node):
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    port, token = view_node.access.port, view_node.access.token
    assert view_node.access.url() == f'http://127.0.0.1:{port}/?token={token}'
    with pytest.raises(urllib.error.HTTPError, match='403'):
        urllib.request.urlopen(f'http://127.0.0.1:{port}/', timeout=10)
    cookie = f'robokin-view-{port}={token}'
    for origin, sent in (('http://evil.example', cookie), (f'http://127.0.0.1:{port}', ''),
                         (f'http://127.0.0.1:{port}', f'robokin-view-{port}=wrong')):
        with pytest.raises(InvalidStatus, match='403'):
            connect(f'ws://127.0.0.1:{port}/', origin=origin, additional_headers={'Cookie': sent},
                    subprotocols=[f'viser-v{viser.__version__}'], open_timeout=10).close()
    with connect(f'ws://127.0.0.1:{port}/', origin=f'http://127.0.0.1:{port}', additional_headers={'Cookie': cookie},
                 subprotocols=[f'viser-v{viser.__version__}'], open_timeout=10) as ws:
        assert ws.recv(timeout=10)


@pytest.mark.parametrize('name, value', [('port', 70000), ('port', -1), ('host', '256.1.1.1')])
def test_a_bad_port_or_host_parameter_is_a_value_error_naming_it(node_context, name, value):
    """main() turns it into one line and exit code 1 (as a bad update_rate); never a hang in viser."""
    overrides = [Parameter('port', value=0), Parameter(name, value=value)]
    with pytest.raises(ValueError, match=rf'^{name}: '):
        WebViewNode(viser, context=node_context, namespace='/test_web_view_bad_address',
                    parameter_overrides=overrides)
