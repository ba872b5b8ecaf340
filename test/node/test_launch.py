"""launch_testing test of ``launch/kin.launch.py`` (runs on a ROS 2 install; skipped in the wheel venv).

Includes the package's launch file with the bundled Panda and no RViz, waits for the node's log
line naming the loaded robot, checks that /tf_static carries the Panda's fixed joints, and that
every process exits cleanly when launch shuts down. Run it with ``colcon test`` or
``launch_test test/node/test_launch.py``. The same behaviour is covered here by the process
tests in ``test_node_*.py``, which start ``kin_node`` themselves and talk DDS to it.
"""

import os
import time
import unittest

import pytest

pytestmark = [pytest.mark.launch, pytest.mark.slow]

pytest.importorskip(
    'launch_testing', reason='launch_testing is not installable from PyPI; runs on a ROS 2 install')
import launch_testing.actions  # noqa: E402
import launch_testing.asserts  # noqa: E402
import rclpy  # noqa: E402
from ament_index_python.packages import get_package_share_directory  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

import launch  # noqa: E402


@pytest.mark.launch_test
def generate_test_description():
    share = get_package_share_directory('robokin_ros')
    kin_launch = launch.actions.IncludeLaunchDescription(
        PythonLaunchDescriptionSource(os.path.join(share, 'launch', 'kin.launch.py')),
        launch_arguments={'use_rviz': 'false', 'frame_prefix': 'lt/'}.items())
    return launch.LaunchDescription([kin_launch, launch_testing.actions.ReadyToTest()]), {}


class TestKinLaunch(unittest.TestCase):

    def test_node_loads_the_bundled_robot(self, proc_output):
        proc_output.assertWaitFor("robot 'panda'", timeout=20)

    def test_tf_static_carries_the_fixed_joints_with_the_prefix(self):
        rclpy.init()
        node = rclpy.create_node('kin_launch_probe')
        try:
            received = []
            qos = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                             reliability=ReliabilityPolicy.RELIABLE)
            node.create_subscription(TFMessage, '/tf_static', received.append, qos)
            deadline = time.monotonic() + 20.0
            while not received and time.monotonic() < deadline:
                rclpy.spin_once(node, timeout_sec=0.1)
            self.assertTrue(received, 'no /tf_static message within 20 s')
            pairs = {(t.header.frame_id, t.child_frame_id) for t in received[-1].transforms}
            self.assertIn(('lt/panda_hand', 'lt/panda_hand_tcp'), pairs)
        finally:
            node.destroy_node()
            rclpy.shutdown()


@launch_testing.post_shutdown_test()
class TestKinLaunchShutdown(unittest.TestCase):

    def test_exit_codes_are_clean(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)
