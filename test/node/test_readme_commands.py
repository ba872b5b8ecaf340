"""The README's ``-p robot_description:="$(cat <urdf>)"`` commands, run as written.

rcl parses a ``-p`` value as YAML: a bundled URDF whose comments held ``: `` failed with
"Couldn't parse parameter override rule". A plain YAML scalar folds line breaks into spaces,
which XML does not mind; ``#`` after a blank would silently cut the text.
"""

import os
import pathlib
import re
import signal
import subprocess
import time

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
