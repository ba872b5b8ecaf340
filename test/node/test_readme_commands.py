"""The README's ``-p robot_description:="$(cat <urdf>)"`` commands, run as written.

rcl parses a ``-p`` value as YAML: a bundled URDF whose comments held ``: `` failed with
"Couldn't parse parameter override rule". A plain YAML scalar folds line breaks into spaces,
which XML does not mind; ``#`` after a blank would silently cut the text.
"""

import importlib
import os
import pathlib
import re
import signal
import subprocess
import time

import numpy as np
import pytest
import yaml
from node_harness import ROBOTS, ROOT, KinNode
from ros_harness import DEFAULT_TIMEOUT

from robokin_ros import RobotModel

pytestmark = pytest.mark.slow   # runs the README commands as processes

BUNDLED = sorted(ROBOTS.glob('*.urdf'))


def wait_for_output(proc, pattern, timeout=DEFAULT_TIMEOUT):
    deadline = time.monotonic() + timeout
    while proc.count(pattern) == 0:
        proc.assert_running()
        if time.monotonic() > deadline:
            raise AssertionError(f'no line matching {pattern!r} within {timeout} s:\n{proc.output()}')
        time.sleep(0.05)


@pytest.mark.parametrize('path', BUNDLED, ids=lambda p: p.stem)
def test_bundled_urdf_is_a_yaml_scalar_of_the_same_robot(path):
    text = path.read_text()
    value = yaml.safe_load(text)
    assert isinstance(value, str)
    assert RobotModel.from_urdf(value).to_urdf() == RobotModel.from_urdf(text).to_urdf()


@pytest.mark.parametrize('path', BUNDLED, ids=lambda p: p.stem)
def test_node_loads_bundled_urdf_given_with_ros_args_p(path, tmp_path):
    """rcl's own parser: ``kin_node --ros-args -p robot_description:=<text>``."""
    name = RobotModel.from_urdf(path.read_text()).name
    proc = KinNode(tmp_path, ros_args=['-p', 'robot_description:=' + path.read_text()])
    try:
        wait_for_output(proc, f"robot '{name}' from parameter robot_description")
    finally:
        proc.stop()


#: The wheel environment tools/run_in_env.sh runs commands in ($VENV, else .venv).
VENV = pathlib.Path(os.environ.get('VENV') or ROOT / '.venv')
needs_venv = pytest.mark.skipif(
    not os.access(VENV / 'bin' / 'python', os.X_OK),
    reason=f'tools/run_in_env.sh needs the wheel environment ({VENV}, made by make venv); on a ROS install '
           '(colcon test) the README commands through it do not apply')


def run_until_logged(command: str, pattern: str, log_path: pathlib.Path) -> None:
    """Run ``command`` through bash (this checkout first on PYTHONPATH) until its output matches
    ``pattern``, then SIGINT it: it must exit 0."""
    env = dict(os.environ)  # the worktree's source first, as for every node test
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT)] + [p for p in [env.get('PYTHONPATH')] if p])
    with open(log_path, 'wb') as log:
        proc = subprocess.Popen(['bash', '-c', 'exec ' + command], cwd=str(ROOT), env=env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + DEFAULT_TIMEOUT
            while not re.search(pattern, log_path.read_text(), re.S):
                assert proc.poll() is None, log_path.read_text()
                assert time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=DEFAULT_TIMEOUT) == 0, log_path.read_text()
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@needs_venv
def test_readme_run_in_env_command(tmp_path):
    """The README's line, through bash: ``tools/run_in_env.sh kin_node --ros-args --params-file
    config/kin.yaml -p robot_description:="$(cat robokin_ros/robots/panda.urdf)"``."""
    command = ('tools/run_in_env.sh kin_node --ros-args --params-file config/kin.yaml '
               '-p robot_description:="$(cat robokin_ros/robots/panda.urdf)"')
    run_until_logged(command, "robot 'panda' from parameter robot_description", pathlib.Path(tmp_path) / 'readme.log')


@needs_venv
def test_readme_description_file_command(tmp_path):
    """The README's ``tools/run_in_env.sh kin_node --ros-args -p description_file:=...`` line, as
    written in the README (found there, then run through bash)."""
    text = (ROOT / 'README.md').read_text()
    match = re.search(r'`(tools/run_in_env\.sh kin_node --ros-args -p description_file:=[^`]+)`', text)
    assert match, 'the README shows no description_file command'
    run_until_logged(match.group(1), r"IK groups from the kinematic tree", pathlib.Path(tmp_path) / 'readme_file.log')


def test_readme_launch_lines_use_only_known_arguments():
    """Every ``ros2 launch robokin_ros kin.launch.py ...`` of the README (continuation lines
    joined) passes the launch file's argument check; where the real launch is installed,
    test_launch_cli.py runs it."""
    from robokin_ros.node.launch_arguments import ARGUMENTS, unknown_arguments

    text = (ROOT / 'README.md').read_text().replace('\\\n', ' ')
    lines = [line.split('#')[0] for line in text.splitlines() if 'ros2 launch robokin_ros kin.launch.py' in line]
    assert lines, 'the README shows no ros2 launch line'
    for line in lines:
        words = line.split('kin.launch.py', 1)[1].replace('`', ' ').split()
        assert unknown_arguments(words) == [], line
        for word in words:
            name, _, value = word.partition(':=')
            if name in ('use_rviz', 'use_sim_time'):
                assert value.lower() in ('true', 'false', '1', '0', 'auto'), line
            assert name in ARGUMENTS, line


# ---------------------------------------------------------------------------- ros2 service call
SERVICE_CALL = re.compile(r'ros2 service call (\S+) (\S+) (?:\\\n\s*)?"([^"]*)"((?:\n#[^\n]*)*)')
#: Pages whose ``ros2 service call`` lines run here (their blocks are marked ``runs-in`` this file).
PAGES = ('README.md', 'docs/node.md')


def readme_service_calls(text):
    """``(service, type, YAML request, comment lines)`` of each ``ros2 service call`` in ``text``."""
    return [(m.group(1), m.group(2), m.group(3), m.group(4)) for m in SERVICE_CALL.finditer(text)]


def set_message_fields(msg, values):
    """rosidl_runtime_py's ``set_message_fields`` (what ``ros2 service call`` fills a request
    with), where that package is installed; else the same walk: each key a field, nested
    dictionaries into nested messages, lists of dictionaries into sequences of messages."""
    try:
        from rosidl_runtime_py import set_message_fields as ros_set_message_fields
    except ImportError:   # (not in the wheel environment)
        pass
    else:
        ros_set_message_fields(msg, values)
        return
    types = msg.get_fields_and_field_types()
    for name, value in values.items():
        field = getattr(msg, name)   # (AttributeError for a field the type does not have, as ros2 says)
        if isinstance(value, dict):
            set_message_fields(field, value)
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            element = message_class(types[name].split('<', 1)[1].rstrip('>').split(',')[0])
            items = []
            for item in value:
                items.append(element())
                set_message_fields(items[-1], item)
            setattr(msg, name, items)
        else:
            setattr(msg, name, type(field)(value) if isinstance(field, (bool, int, float, str)) else value)


def message_class(type_name):
    """The class of ``pkg/Msg`` or ``pkg/msg/Msg`` (a message field's type string)."""
    package, _, name = type_name.replace('/msg/', '/').partition('/')
    return getattr(importlib.import_module(f'{package}.msg'), name)


def ros2_service_call(ros, service, type_name, values):
    """What ``ros2 service call SERVICE TYPE VALUES`` does (ros2service's ``requester``): the
    request type from its name, the YAML set with :func:`set_message_fields`, one call."""
    package, _, name = type_name.replace('/srv/', '/').partition('/')
    srv = getattr(importlib.import_module(f'{package}.srv'), name)
    request = srv.Request()
    set_message_fields(request, yaml.safe_load(values))
    client = ros.wait_for_service(srv, service)
    return ros.call(client, request)


def check_against_readme(service, response, comment, model):
    """The answer as the README's comment under the command states it, and right by FK."""
    if service in ('/compute_ik', '/robokin/compute_ik_solutions'):
        stated = re.search(r'val: (-?\d+)', comment)   # (none shown: SUCCESS)
        assert response.error_code.val == (int(stated.group(1)) if stated else 1), response.error_code
        states = response.solutions if service.endswith('solutions') else [response.solution]
        assert states
        return [model.q_from_dict(dict(zip(s.joint_state.name, s.joint_state.position))) for s in states]
    if service == '/compute_fk':
        assert response.error_code.val == 1, response.error_code
        xyz = [float(v) for v in re.search(r'x (-?[\d.]+), y (-?[\d.]+), z (-?[\d.]+)', comment).groups()]
        position = response.pose_stamped[0].pose.position
        assert [position.x, position.y, position.z] == pytest.approx(xyz, abs=1e-3), (position, comment)
        return None
    if service == '/compute_cartesian_path':   # the fraction stated, the hand moved by the stated height
        from robokin_ros import frame_transform
        assert response.error_code.val == 1, response.error_code
        assert response.fraction == float(re.search(r'fraction: ([\d.]+)', comment).group(1)), response
        points = response.solution.joint_trajectory.points
        names = response.solution.joint_trajectory.joint_names
        ends = [model.q_from_dict(dict(zip(names, p.positions))) for p in (points[0], points[-1])]
        drop = float(re.search(r'the hand (\d+) cm lower', comment).group(1)) / 100
        T0, T1 = (frame_transform(model, q, 'panda_link0', 'panda_hand_tcp') for q in ends)
        assert T1[:3, 3] - T0[:3, 3] == pytest.approx([0.0, 0.0, -drop], abs=2e-3), (T0, T1)
        return None
    if service == '/check_state_validity':
        assert response.valid is (re.search(r'valid: (true|false)', comment).group(1) == 'true'), response
        return None
    raise AssertionError(f'the README calls {service}, which this test does not know how to check')


def test_readme_ros2_service_calls_against_a_live_node(ros, tmp_path):
    """Each ``ros2 service call`` of the README and docs/node.md (:data:`PAGES`), parsed from it and sent as ``ros2 service call``
    sends it (the ros2 CLI is not in the wheel environment: its YAML-to-request path,
    rosidl_runtime_py's ``set_message_fields``), to a node started on the README's robot; each
    answer checked against the comment the README shows under it and, for /compute_ik, by FK."""
    from geometry_msgs.msg import Pose

    from robokin_ros import frame_transform
    from robokin_ros.node.conversions import pose_to_matrix

    calls = [call for page in PAGES for call in readme_service_calls((ROOT / page).read_text())]
    assert '/compute_ik' in [c[0] for c in calls], 'the README shows no ros2 service call /compute_ik'
    assert '/robokin/compute_ik_solutions' in [c[0] for c in calls], 'docs/node.md shows no compute_ik_solutions'
    model = RobotModel.from_urdf((ROBOTS / 'panda.urdf').read_text())
    proc = KinNode(tmp_path, params={'robot_description': (ROBOTS / 'panda.urdf').read_text()})
    try:
        wait_for_output(proc, "robot 'panda' from parameter robot_description")
        for service, type_name, values, comment in calls:
            response = ros2_service_call(ros, service, type_name, values)
            solutions = check_against_readme(service, response, comment, model)
            for q in solutions or ():   # each IK solution reaches the page's target
                request = yaml.safe_load(values)['ik_request']['pose_stamped']
                pose = Pose()
                set_message_fields(pose, request['pose'])
                T = frame_transform(model, q, request['header']['frame_id'], 'panda_hand_tcp')
                assert np.allclose(T, pose_to_matrix(pose), atol=1e-4), (T, pose)
    finally:
        proc.stop()


# ---------------------------------------------------------------------------- an rclpy client
def doc_examples():
    """test/core/test_doc_examples.py as a module (its block reader and output comparison)."""
    import importlib.util
    import sys

    name = 'robokin_doc_examples'
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, ROOT / 'test' / 'core' / 'test_doc_examples.py')
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module   # (its dataclasses look their module up)
        spec.loader.exec_module(module)
    return sys.modules[name]


def test_docs_rclpy_client_calls_a_node_started_apart(tmp_path):
    """docs/node.md's rclpy client (marked runs-in this file), run as a process of its own, as from
    a second terminal, against a node process on the same ROS_DOMAIN_ID: it exits 0 and prints
    what its comments say."""
    import ast
    import sys

    examples = doc_examples()
    clients = [b for b in examples.blocks(ROOT / 'docs' / 'node.md')
               if b.lang == 'python' and b.markers.get('runs-in') == 'test/node/test_readme_commands.py']
    assert len(clients) == 1, 'docs/node.md shows one rclpy client'
    body = clients[0].body
    lines = body.splitlines()
    claims = [c for statement in ast.parse(body).body for c in examples.printed_claims(statement, lines)]
    proc = KinNode(tmp_path, params={'robot_description': (ROBOTS / 'panda.urdf').read_text()})
    try:
        wait_for_output(proc, "robot 'panda' from parameter robot_description")
        env = dict(os.environ)
        env['PYTHONPATH'] = os.pathsep.join([str(ROOT)] + [p for p in [env.get('PYTHONPATH')] if p])
        result = subprocess.run([sys.executable, '-c', body], cwd=tmp_path, env=env, capture_output=True, text=True,
                                stdin=subprocess.DEVNULL, timeout=120)
        assert result.returncode == 0, result.stdout + result.stderr
        printed = result.stdout.splitlines()
        assert len(printed) == len(claims) and all(map(examples.output_matches, printed, claims)), (printed, claims)
    finally:
        proc.stop()


def test_run_in_env_gives_every_terminal_of_a_checkout_one_domain(tmp_path):
    """Two calls of tools/run_in_env.sh (two terminals) share the checkout's ROS_DOMAIN_ID, outside
    the tests' 1..101 and 215..232; an explicit ROS_DOMAIN_ID wins; this run is not on it."""
    env = {k: v for k, v in os.environ.items() if k not in ('ROS_DOMAIN_ID', 'ROBOKIN_CHECKOUT_DOMAIN_ID')}
    env['VENV'] = str(VENV)

    def domain(extra=None):
        result = subprocess.run(['bash', str(ROOT / 'tools' / 'run_in_env.sh'), 'bash', '-c', 'echo $ROS_DOMAIN_ID'],
                                env={**env, **(extra or {})}, capture_output=True, text=True, check=True)
        return int(result.stdout)

    if not os.access(VENV / 'bin' / 'python', os.X_OK):
        pytest.skip(f'no wheel environment at {VENV}')
    first, second = domain(), domain()
    assert first == second and 102 <= first <= 214
    assert domain({'ROS_DOMAIN_ID': '220'}) == 220
    assert os.environ['ROS_DOMAIN_ID'] != str(first) and 1 <= int(os.environ['ROS_DOMAIN_ID']) <= 232
