"""Entry point of the ``kin_node`` executable: the ``robokin`` node on rclpy's EventsExecutor (its
services on worker threads), or on an offloading multi-threaded executor (parameter ``executor``)."""

import os
import signal
import sys
import threading

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from ..runtime import default_runtime
from .executor import OffloadingExecutor
from .kinematics_node import KinematicsNode
from .parameters import EVENTS, THREADS, StartupParameterError

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: [s] how long shutdown waits for a background numba compile to end (its result is cached on disk
#: for the next start); past it the process leaves with ``os._exit``.
COMPILE_STOP_TIMEOUT = 3.0


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


def main(args=None, early=None):
    """Run the ``robokin`` node until SIGINT/SIGTERM or an external shutdown; exit code 0 (1, with one
    line per bad parameter, when a start-up parameter value is one ``ros2 param set`` would refuse).

    Teardown order: stop spinning, end the IK solves in progress at their next iteration
    (:meth:`KinematicsNode.cancel_solves`: this node's solves only), let the offloaded callbacks
    answer and join the worker threads, wait (bounded) for a description being loaded, destroy
    the node, shut the context down, wait (bounded) for background numba compiles. A compile or load still running then
    would crash the interpreter's finalisation (SIGSEGV/SIGABRT in LLVM): the process leaves with
    ``os._exit`` and the same exit code instead. Signals arriving meanwhile (a second Ctrl-C,
    launch's escalation to SIGTERM) are recorded and do not interrupt it.

    Args:
        args: ROS command-line arguments; ``None`` reads ``sys.argv``.
        early: what recorded the stop signals before this module was imported (``signum``: the
            first, or None), as the ``kin_node`` executable does (``robokin_entry``); a signal it
            recorded counts as received here.
    """
    stop = StopRequest()
    if early is not None and early.signum is not None:   # (read after our handlers are in place)
        stop.signum = early.signum
    # A service thread computing IK holds the GIL for up to this long between two /tf updates.
    sys.setswitchinterval(0.001)
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = None
    executor = services = None
    failed = False
    try:
        if stop.requested:
            return
        try:
            node = KinematicsNode()
        except StartupParameterError:   # logged by the node, one line per parameter
            failed = True
            return
        executor, services = _executors(node)
        while rclpy.ok() and not stop.requested:
            executor.spin_once(timeout_sec=0.1)
    except ExternalShutdownException:
        pass
    finally:
        if node is not None:
            node.cancel_solves()
        if services is not None:
            services.stop()
        if executor is not None:
            executor.shutdown()
        loaded = True
        if node is not None:
            loaded = node.stop_loading()
            node.destroy_node()
        rclpy.try_shutdown()
        stop.ignore_from_now()
        # the node's runtime's background compiles, and any started outside its callbacks
        compiled = ((node is None or node.runtime.close(COMPILE_STOP_TIMEOUT))
                    and default_runtime().stop_background(COMPILE_STOP_TIMEOUT))
        if not (loaded and compiled):   # a thread still in numba/LLVM: skip the finalisation it would crash
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1 if failed else 0)
        if failed:
            sys.exit(1)


def _executors(node: KinematicsNode):
    """The executor spinning ``node`` in the main thread, and the :class:`ServiceThread` serving
    its services (None when they are served by the same executor); see parameter ``executor``."""
    kind = node.get_parameter('executor').value
    if kind not in (EVENTS, THREADS):
        node.get_logger().error(f'parameter executor must be {EVENTS!r} or {THREADS!r}, got {kind!r}: '
                                f'using {THREADS!r}')
        kind = THREADS
    if kind == EVENTS:
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:
            node.get_logger().info("this rclpy has no EventsExecutor (rclpy.experimental): executor 'threads'")
        else:
            executor = EventsExecutor()
            executor.add_node(node)
            return executor, ServiceThread(node)
        node.attach_services(node)
    executor = OffloadingExecutor([node.services_group], num_threads=node.param_value('ik_threads'))
    executor.add_node(node)
    return executor, None


class ServiceThread:
    """The services of ``node`` on a companion node, ``<name>_services`` in its namespace (whatever
    the remaps: launch_ros's ``name=`` remaps every node of the process), spun by an
    :class:`OffloadingExecutor` in a thread of its own (/compute_ik on its worker threads).

    rclpy's EventsExecutor dispatches in C++ but runs every callback on its one thread; an IK call
    there would hold /tf back for its whole time budget. A node belongs to one executor, hence the
    companion node.
    """

    def __init__(self, node: KinematicsNode):
        # Its own name even under a global `-r __node:=NAME` (launch_ros's name=), which would rename
        # every node of the process: a local remap takes precedence over the global one.
        name = f'{node.get_name()}_services'
        self.host = Node(name, namespace=node.get_namespace(), context=node.context,
                         cli_args=['--ros-args', '-r', f'__node:={name}'])
        node.attach_services(self.host)
        self.executor = OffloadingExecutor([node.services_group], num_threads=node.param_value('ik_threads'),
                                           context=node.context)
        self.executor.add_node(self.host)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._spin, name='robokin services', daemon=True)
        self._thread.start()

    def _spin(self):
        try:
            while not self._stopping.is_set() and self.executor.context.ok():
                self.executor.spin_once(timeout_sec=0.1)
        except ExternalShutdownException:
            pass

    def stop(self):
        """Stop spinning, let a call in progress finish, destroy the companion node."""
        self._stopping.set()
        self._thread.join()
        self.executor.shutdown()
        self.host.destroy_node()


if __name__ == '__main__':
    main()
