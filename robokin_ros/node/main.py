"""Entry point of the ``kin_node`` executable: the ``robokin`` node on an offloading executor."""

import sys

import rclpy
from rclpy.executors import ExternalShutdownException

from .executor import OffloadingExecutor
from .kinematics_node import KinematicsNode


def main(args=None):
    """Run the ``robokin`` node until SIGINT/SIGTERM or an external shutdown.

    Spins with a ``spin_once`` loop rather than ``spin()``, so the node also stops when started
    as a background job of a non-interactive shell (SIGINT ignored; rclpy's handler only shuts
    the context down).

    Args:
        args: ROS command-line arguments; ``None`` reads ``sys.argv``.
    """
    # A service thread computing IK holds the GIL for up to this long between two /tf updates.
    sys.setswitchinterval(0.001)
    rclpy.init(args=args)
    node = None
    executor = None
    try:
        node = KinematicsNode()
        executor = OffloadingExecutor([node.services_group], num_threads=2)
        executor.add_node(node)
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
