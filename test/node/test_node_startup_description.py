"""kin_node with a start-up description it cannot use (issue 41): one line and exit 1, as
robot_state_publisher; a bad description later keeps the last good model
(test_node_in_process.py, test_node_descriptions.py)."""

import pytest
from node_harness import KinNode

pytestmark = pytest.mark.slow   # starts node processes


def run_to_exit(proc, timeout=60.0):
    """Wait for ``proc`` to exit by itself; its exit code."""
    try:
        proc.popen.wait(timeout=timeout)
    finally:
        if proc.running():
            proc.popen.kill()
            proc.popen.wait()
    proc.returncode = proc.popen.returncode
    return proc.returncode


def test_an_unreadable_description_file_is_one_line_and_exit_1(tmp_path):
    missing = tmp_path / 'robot.urdf'
    proc = KinNode(tmp_path, ros_args=['-p', f'description_file:={missing}'])
    assert run_to_exit(proc) == 1, proc.output()
    errors = [line for line in proc.output().splitlines() if 'ERROR' in line]
    assert len(errors) == 1 and f"description_file: cannot read '{missing}'" in errors[0], proc.output()
    assert 'Traceback' not in proc.output()


def test_an_invalid_description_file_is_one_line_and_exit_1(tmp_path):
    path = tmp_path / 'bad.urdf'
    path.write_text('<robot name="bad"><link name="a"/><joint name="j" type="revolute"/></robot>')
    proc = KinNode(tmp_path, ros_args=['-p', f'description_file:={path}'])
    assert run_to_exit(proc) == 1, proc.output()
    errors = [line for line in proc.output().splitlines() if 'ERROR' in line]
    assert len(errors) == 1 and f"rejected the robot description from description_file '{path}'" in errors[0], \
        proc.output()
    assert 'Traceback' not in proc.output()
