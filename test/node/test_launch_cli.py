"""The real ``ros2 launch robokin_ros kin.launch.py`` as a user runs it (ROS 2 install only).

Runs the installed package (``colcon build`` / an ament prefix on AMENT_PREFIX_PATH), in its own
process group like a terminal, and checks: a bad argument starts nothing; Ctrl-C (SIGINT to the
group, twice) ends everything with exit code 0 and no traceback; a dead ``kin_node`` ends the
launch. Skipped where ros2launch is not installed (it is not on PyPI); the checks themselves are
covered here by test_launch_arguments.py and test_shutdown.py.
"""

import os
import shutil
import signal
import subprocess
import time

import pytest

pytestmark = pytest.mark.slow   # runs ros2 launch

pytest.importorskip('ros2launch', reason='ros2launch (ros2cli) is not installable from PyPI; runs on a ROS 2 install')
if shutil.which('ros2') is None:
    pytest.skip('no ros2 executable on PATH', allow_module_level=True)

STARTED = 'from parameter robot_description'


class Launch:
    def __init__(self, tmp_path, *arguments):
        self.log_path = tmp_path / 'launch.log'
        self._log = open(self.log_path, 'wb')
        self.popen = subprocess.Popen(['ros2', 'launch', 'robokin_ros', 'kin.launch.py', *arguments],
                                      stdout=self._log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)

    def output(self):
        return self.log_path.read_text(errors='replace')

    def wait_for(self, text, timeout=30.0):
        deadline = time.monotonic() + timeout
        while text not in self.output():
            assert self.popen.poll() is None, self.output()
            assert time.monotonic() < deadline, f'no {text!r} within {timeout} s:\n{self.output()}'
            time.sleep(0.1)

    def wait(self, timeout=30.0):
        try:
            return self.popen.wait(timeout=timeout)
        finally:
            if self.popen.poll() is None:
                os.killpg(self.popen.pid, signal.SIGKILL)
                self.popen.wait()
            self._log.close()


def kin_node_pids(launch_pid):
    out = subprocess.run(['ps', '-ww', '-eo', 'pid,pgid,args'], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines()
            if 'robokin_ros/kin_node' in line and line.split()[1] == str(launch_pid)]


@pytest.mark.parametrize('argument, message', [
    ('use_rviz:=maybe', "use_rviz:='maybe' is not a boolean"),
    ('params_file:=/nonexistent/kin.yaml', "params_file '/nonexistent/kin.yaml': no such file"),
    ('descripton_file:=robot.urdf', "unknown launch argument 'descripton_file'"),
])
def test_bad_argument_starts_nothing(tmp_path, argument, message):
    launch = Launch(tmp_path, argument)
    assert launch.wait() != 0
    assert message in launch.output()
    assert 'process started' not in launch.output()


def test_ctrl_c_twice_to_the_process_group_ends_everything_cleanly(tmp_path):
    launch = Launch(tmp_path, 'use_rviz:=false')
    try:
        launch.wait_for(STARTED)
        os.killpg(launch.popen.pid, signal.SIGINT)
        time.sleep(0.05)
        os.killpg(launch.popen.pid, signal.SIGINT)
    finally:
        returncode = launch.wait()
    assert returncode == 0, launch.output()
    assert 'Traceback' not in launch.output() and 'process has finished cleanly' in launch.output()


def test_launch_ends_when_kin_node_dies(tmp_path):
    launch = Launch(tmp_path, 'use_rviz:=false')
    try:
        launch.wait_for(STARTED)
        (pid,) = kin_node_pids(launch.popen.pid)
        os.kill(int(pid), signal.SIGKILL)
    finally:
        launch.wait()
    assert 'shutting down launched system' in launch.output()
    assert kin_node_pids(launch.popen.pid) == []
