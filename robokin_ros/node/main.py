"""Entry point of the ``kin_node`` executable: the ``robokin`` node on an offloading executor."""

import signal
import sys

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.signals import SignalHandlerOptions

from .executor import OffloadingExecutor
from .kinematics_node import KinematicsNode

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequest:
    """SIGINT/SIGTERM handlers that only record the request, for the spin loop to see.

    rclpy's own handlers are not installed: they shut the context down from a signal thread, and
    Python's SIGINT handler raises KeyboardInterrupt wherever the main thread happens to be (in
    ``destroy_node()`` when Ctrl-C reaches a process group twice). Here a signal never interrupts
    anything; the loop stops within one ``spin_once`` timeout and tears down in order.
    """

    def __init__(self):
        self.signum = None
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._handle)

    def _handle(self, signum, frame):
        self.signum = signum

    @property
    def requested(self):
        return self.signum is not None

    @staticmethod
    def ignore_from_now():
        """Ignore further stop signals: the process is exiting, and Python's finalisation would
        otherwise reset our handlers to SIG_DFL, so one more Ctrl-C would end it with -2."""
        for signum in STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)


def main(args=None):
    """Run the ``robokin`` node until SIGINT/SIGTERM or an external shutdown; exit code 0.

    Teardown order: stop spinning, let offloaded callbacks (an IK call in progress) finish and
    join the worker threads, destroy the node, shut the context down. Signals arriving meanwhile
    (a second Ctrl-C, launch's escalation to SIGTERM) are recorded and do not interrupt it.

    Args:
        args: ROS command-line arguments; ``None`` reads ``sys.argv``.
    """
    stop = StopRequest()
    # A service thread computing IK holds the GIL for up to this long between two /tf updates.
    sys.setswitchinterval(0.001)
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = None
    executor = None
    try:
        if stop.requested:
            return
        node = KinematicsNode()
        executor = OffloadingExecutor([node.services_group], num_threads=2)
        executor.add_node(node)
        while rclpy.ok() and not stop.requested:
            executor.spin_once(timeout_sec=0.1)
    except ExternalShutdownException:
        pass
    finally:
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
        stop.ignore_from_now()


if __name__ == '__main__':
    main()
