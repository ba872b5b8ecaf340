"""Main loop shared by the helper nodes: spin until SIGINT/SIGTERM, then shut down cleanly.

Spins with ``spin_once`` in a loop (ros-env.md §6.6: a plain ``spin()`` may miss the shutdown
when the process started as a background job) and exits 0 on SIGINT. A SIGINT that lands inside
``spin_once`` shuts the context down under it: rclpy then raises ``RCLError`` ("the given context
is not valid") from the wait set instead of ``ExternalShutdownException`` (seen on a loaded
machine); that is the same shutdown.
"""

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor


def run(make_node):
    """Create the node with ``make_node()`` after ``rclpy.init()`` and spin it until shutdown."""
    rclpy.init()
    node = None
    try:
        node = make_node()
        executor = SingleThreadedExecutor()
        executor.add_node(node)
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RuntimeError:   # (rclpy's RCLError is one)
        if rclpy.ok():   # not a shutdown: a real error
            raise
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
