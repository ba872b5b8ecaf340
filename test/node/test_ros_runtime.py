"""Smoke tests of the ROS 2 runtime the node relies on.

Separate processes exchange tf2_msgs and moveit_msgs over DDS, the locally built interface
packages are wire-identical to upstream, and the package is installed where ROS tools look
(ament index, kin_node executable), and not stale.
"""

import filecmp
import glob
import importlib.metadata
import importlib.util
import os
import pathlib
import re
import sys
import xml.etree.ElementTree as ET

import pytest
from ament_index_python.packages import get_package_prefix, get_package_share_directory
from moveit_msgs.msg import CollisionObject, MoveItErrorCodes, OrientationConstraint, VisibilityConstraint
from moveit_msgs.srv import GetPositionIK
from ros_harness import helper_script
from tf2_msgs.msg import TF2Error, TFMessage

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _load_type_hash_checker():
    spec = importlib.util.spec_from_file_location(
        'check_type_hashes', ROOT / 'tools' / 'check_type_hashes.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TYPE_HASHES = _load_type_hash_checker()


# --------------------------------------------------------------------------- cross-process DDS

def test_tf_message_from_another_process_arrives_intact(start_process, ros):
    tag = f'p{os.getpid()}'
    proc = start_process([helper_script('tf_publisher.py'), '--ros-args', '-p', f'tag:={tag}'])

    msg = ros.wait_for_message(
        TFMessage, '/tf', watch=[proc],
        predicate=lambda m: any(t.child_frame_id == f'link_a_{tag}' for t in m.transforms))

    assert [(t.header.frame_id, t.child_frame_id) for t in msg.transforms] == [
        ('world', f'link_a_{tag}'), (f'link_a_{tag}', f'link_b_{tag}')]
    a, b = msg.transforms
    assert (a.transform.translation.x, a.transform.translation.y,
            a.transform.translation.z) == (1.0, 2.0, 3.0)
    assert (a.transform.rotation.x, a.transform.rotation.y, a.transform.rotation.z,
            a.transform.rotation.w) == (0.0, 0.0, 0.6, 0.8)
    assert (b.transform.translation.x, b.transform.translation.y,
            b.transform.translation.z) == (-0.5, 0.25, 0.125)
    assert (b.transform.rotation.x, b.transform.rotation.y, b.transform.rotation.z,
            b.transform.rotation.w) == (0.5, 0.5, 0.5, 0.5)
    assert a.header.stamp == b.header.stamp
    assert a.header.stamp.sec > 0

    # What is on the wire is the upstream type: the publisher announces the golden hash.
    infos = ros.node.get_publishers_info_by_topic('/tf')
    assert infos, 'no publisher on /tf in the graph'
    assert {str(info.topic_type_hash) for info in infos} == {
        TYPE_HASHES.EXPECTED_TYPE_HASHES['tf2_msgs/msg/TFMessage']}

    proc.stop()


def _ik_request(group):
    request = GetPositionIK.Request()
    ik = request.ik_request
    ik.group_name = group
    ik.robot_state.joint_state.name = ['j1', 'j2', 'j3']
    ik.robot_state.joint_state.position = [0.1, 0.2, 0.3]
    ik.pose_stamped.header.frame_id = 'base_link'
    ik.pose_stamped.pose.position.x = 0.5
    ik.pose_stamped.pose.orientation.w = 1.0
    ik.ik_link_name = 'tool0'
    ik.ik_link_names = ['tool0']
    ik.avoid_collisions = True
    ik.timeout.sec = 1
    ik.timeout.nanosec = 500_000_000
    return request


def test_compute_ik_service_in_another_process_answers(start_process, ros):
    proc = start_process([helper_script('ik_server.py')])
    client = ros.wait_for_service(GetPositionIK, '/compute_ik', watch=[proc])

    ok = ros.call(client, _ik_request('arm'), watch=[proc])
    assert ok.error_code.val == MoveItErrorCodes.SUCCESS
    assert ok.error_code.source == 'fake_ik_server'
    # group, ik_link_name, timeout, ik_link_names and avoid_collisions round-tripped
    assert ok.error_code.message == 'arm|tool0|1.500000000|1|True'
    assert list(ok.solution.joint_state.name) == ['j1', 'j2', 'j3']
    assert list(ok.solution.joint_state.position) == pytest.approx([0.6, 0.7, 0.8])
    assert ok.solution.joint_state.header.frame_id == 'base_link'

    bad = ros.call(client, _ik_request('legs'), watch=[proc])
    assert bad.error_code.val == MoveItErrorCodes.INVALID_GROUP_NAME
    assert 'legs' in bad.error_code.message
    assert list(bad.solution.joint_state.name) == []

    services = dict(ros.node.get_service_names_and_types())
    assert services.get('/compute_ik') == ['moveit_msgs/srv/GetPositionIK']

    proc.stop()


# --------------------------------------------------------------------------- interface packages

@pytest.mark.parametrize('type_name', sorted(TYPE_HASHES.EXPECTED_TYPE_HASHES))
def test_built_interface_type_hash_equals_upstream(type_name):
    prefix = get_package_prefix(type_name.split('/')[0])
    assert TYPE_HASHES.built_type_hash(prefix, type_name) == \
        TYPE_HASHES.EXPECTED_TYPE_HASHES[type_name]


MOVEIT_ERROR_CODES = {
    'SUCCESS': 1, 'UNDEFINED': 0, 'FAILURE': 99999, 'PLANNING_FAILED': -1,
    'INVALID_MOTION_PLAN': -2, 'MOTION_PLAN_INVALIDATED_BY_ENVIRONMENT_CHANGE': -3,
    'CONTROL_FAILED': -4, 'UNABLE_TO_AQUIRE_SENSOR_DATA': -5, 'TIMED_OUT': -6, 'PREEMPTED': -7,
    'START_STATE_IN_COLLISION': -10, 'START_STATE_VIOLATES_PATH_CONSTRAINTS': -11,
    'START_STATE_INVALID': -26, 'GOAL_IN_COLLISION': -12, 'GOAL_VIOLATES_PATH_CONSTRAINTS': -13,
    'GOAL_CONSTRAINTS_VIOLATED': -14, 'GOAL_STATE_INVALID': -27, 'UNRECOGNIZED_GOAL_TYPE': -28,
    'INVALID_GROUP_NAME': -15, 'INVALID_GOAL_CONSTRAINTS': -16, 'INVALID_ROBOT_STATE': -17,
    'INVALID_LINK_NAME': -18, 'INVALID_OBJECT_NAME': -19, 'FRAME_TRANSFORM_FAILURE': -21,
    'COLLISION_CHECKING_UNAVAILABLE': -22, 'ROBOT_STATE_STALE': -23, 'SENSOR_INFO_STALE': -24,
    'COMMUNICATION_FAILURE': -25, 'CRASH': -29, 'ABORT': -30, 'NO_IK_SOLUTION': -31,
}


@pytest.mark.parametrize('msg_type, expected', [
    (MoveItErrorCodes, MOVEIT_ERROR_CODES),
    (TF2Error, {'NO_ERROR': 0, 'LOOKUP_ERROR': 1, 'CONNECTIVITY_ERROR': 2,
                'EXTRAPOLATION_ERROR': 3, 'INVALID_ARGUMENT_ERROR': 4, 'TIMEOUT_ERROR': 5,
                'TRANSFORM_ERROR': 6}),
    (CollisionObject, {'ADD': b'\x00', 'REMOVE': b'\x01', 'APPEND': b'\x02', 'MOVE': b'\x03'}),
    (OrientationConstraint, {'XYZ_EULER_ANGLES': 0, 'ROTATION_VECTOR': 1}),
    (VisibilityConstraint, {'SENSOR_Z': 0, 'SENSOR_Y': 1, 'SENSOR_X': 2}),
], ids=lambda v: v.__name__ if isinstance(v, type) else '')
def test_interface_constants_equal_upstream(msg_type, expected):
    # Constants are not part of the type hash, so check them by value.
    actual = {name: getattr(msg_type, name) for name in expected}
    assert actual == expected
    declared = {name for name in vars(type(msg_type))
                if name.isupper() and not name.startswith('_')}
    assert declared == set(expected)


# --------------------------------------------------------------------------- installed package

def test_ament_index_finds_the_package_share_directory():
    share = pathlib.Path(get_package_share_directory('robokin_ros'))
    installed = ET.parse(share / 'package.xml').getroot()
    source = ET.parse(ROOT / 'package.xml').getroot()
    assert installed.findtext('name') == 'robokin_ros'
    assert installed.findtext('version') == source.findtext('version')
    for pattern, subdir in (('launch/*.py', 'launch'), ('config/*', 'config')):
        # glob.glob like setup.py: hidden placeholders (.gitkeep) are not installed
        for path in sorted(glob.glob(str(ROOT / pattern))):
            name = os.path.basename(path)
            assert (share / subdir / name).is_file(), f'{path} is not installed in {share}'


def _kin_node_executable():
    prefix = pathlib.Path(get_package_prefix('robokin_ros'))
    # colcon installs scripts per setup.cfg into lib/<pkg>; pip ignores setup.cfg and uses bin/.
    candidates = [prefix / 'lib' / 'robokin_ros' / 'kin_node',
                  pathlib.Path(sys.prefix, 'bin', 'kin_node')]
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return path
    pytest.fail(f'kin_node executable not found in {[str(c) for c in candidates]}')


def test_kin_node_entry_point_is_installed():
    exe = _kin_node_executable()
    text = exe.read_text()
    if 'from robokin_entry import kin_node' in text:   # pip's console script imports the module itself
        return
    # colcon (setuptools' develop/easy_install stub) looks the entry point up by name
    assert re.search(r"load_entry_point\(\s*'robokin[-_]ros[^']*',\s*'console_scripts',\s*'kin_node'\s*\)", text), text
    (point,) = [e for e in importlib.metadata.entry_points(group='console_scripts', name='kin_node')
                if e.dist is None or e.dist.name.lower().replace('-', '_') == 'robokin_ros']
    assert point.value == 'robokin_entry:kin_node'   # standard library only before the node's imports


def test_installed_package_is_not_stale():
    dist = importlib.metadata.distribution('robokin_ros')
    if dist.files is None:
        pytest.skip('robokin_ros is installed without a file list (not a pip install)')
    installed = {str(f): f for f in dist.files if str(f).startswith('robokin_ros/')}
    sources = [p for p in (ROOT / 'robokin_ros').rglob('*')
               if p.is_file() and p.suffix in ('.py', '.urdf') and '__pycache__' not in p.parts]
    stale = []
    for path in sources:
        rel = path.relative_to(ROOT).as_posix()
        if rel not in installed:
            stale.append(f'{rel}: not installed')
        elif not filecmp.cmp(path, dist.locate_file(installed[rel]), shallow=False):
            stale.append(f'{rel}: installed copy differs')
    assert not stale, ('the installed robokin_ros is stale (run "make venv"):\n  '
                       + '\n  '.join(stale))


def test_kin_node_starts_and_exits_cleanly_on_sigint(start_process, ros):
    # The installed console script (not the source tree) starts, joins the graph as `robokin`
    # and exits 0 on SIGINT.
    # In a namespace of its own: an in-process `robokin` of another test in this pytest process
    # would otherwise count as joined, and the SIGINT would reach kin_node before its handlers.
    proc = start_process([str(_kin_node_executable()), '--ros-args', '-r', '__ns:=/ros_runtime_sigint'])
    ros.wait_for_node('robokin', watch=[proc], namespace='/ros_runtime_sigint')
    assert proc.stop() == 0


def test_isolation_environment_is_set():
    # Set by test/conftest.py (or tools/run_in_env.sh) before rclpy was imported.
    assert os.environ['ROS_AUTOMATIC_DISCOVERY_RANGE'] == 'LOCALHOST'
    # Our runs pick 1..101 at random; colcon test (or a user) may set any valid domain (0..232).
    assert 0 <= int(os.environ['ROS_DOMAIN_ID']) <= 232
    # ... but never the checkout's own domain, where the user's node may run (tools/run_in_env.sh)
    assert os.environ['ROS_DOMAIN_ID'] != os.environ.get('ROBOKIN_CHECKOUT_DOMAIN_ID')
