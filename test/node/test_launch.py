"""launch_testing test of kin_node (runs on a ROS 2 install; skipped in the wheel venv).

Starts the installed ``kin_node`` through launch_ros, waits for its "waiting for ..." log line
and checks that it exits cleanly when launch shuts it down. Run it with ``colcon test`` or
``launch_test test/node/test_launch.py``.
"""

import unittest

import pytest

pytestmark = [pytest.mark.launch]

pytest.importorskip(
    'launch_testing', reason='launch_testing is not installable from PyPI; runs on a ROS 2 install')
import launch  # noqa: E402
import launch_ros.actions  # noqa: E402
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402


@pytest.mark.launch_test
def generate_test_description():
    kin_node = launch_ros.actions.Node(
        package='robokin_ros', executable='kin_node', name='robokin', output='screen')
    return launch.LaunchDescription([
        kin_node,
        launch_testing.actions.ReadyToTest(),
    ]), {'kin_node': kin_node}


class TestKinNodeStarts(unittest.TestCase):

    def test_logs_waiting_for_description(self, proc_output, kin_node):
        # Without a description the node says it is waiting for one.
        proc_output.assertWaitFor('waiting for', process=kin_node, timeout=15)


@launch_testing.post_shutdown_test()
class TestKinNodeShutdown(unittest.TestCase):

    def test_exit_code_is_clean(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
