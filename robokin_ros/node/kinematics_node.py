"""The robokin node: its parameters, topics, services and timers wired to the objects that do
the work.

Robot description and joint states in; TF, Jacobians, gravity torques and the /compute_ik,
/compute_fk, /check_state_validity, /check_state_validity_multiple and ~/compute_ik_solutions
services out. :class:`KinematicsNode` creates the publishers, subscriptions, services and timers
and hands each to the object of its concern:

* :class:`~robokin_ros.node.robot_swap.RobotSwap`: the live robot and the descriptions (URDF,
  SRDF) that replace it; /tf_static and /robot_description.
* :class:`~robokin_ros.node.state_publisher.StatePublisher`: joint states in; /tf, the
  Jacobians, the gravity torques and ~/stats out.
* :class:`~robokin_ros.node.service_calls.ServiceCalls`: the service callbacks, each handing its
  call to its handler module (one per service, over :mod:`~robokin_ros.node.requests`).
* :class:`~robokin_ros.node.parameter_changes.ParameterChanges`: ``ros2 param set`` (check,
  apply); the parameters are declared by :mod:`~robokin_ros.node.parameter_declarations` from
  :mod:`~robokin_ros.node.parameters`.

Threading: the joint-state -> /tf path has the spinning thread (the node's default, mutually
exclusive group; /compute_fk too: it is quick); the IK and validity services have their own
reentrant group, run on ``ik_threads`` worker threads by
:class:`~robokin_ros.node.executor.OffloadingExecutor`. A description from the topic is loaded
on a thread of its own (:class:`~robokin_ros.node.background.LatestJobWorker`), so /tf keeps
flowing with the old model meanwhile. The live robot is one object replaced by a single
assignment, so a service thread reads a consistent snapshot; installing one holds a lock.

One message or request makes a bounded amount of work and of log (see
:mod:`~robokin_ros.node.limits` and :mod:`~robokin_ros.node.log_limits`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from moveit_msgs.srv import GetCartesianPath, GetMultiStateValidity, GetPositionFK, GetPositionIK, GetStateValidity
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from ..runtime import Runtime, using
from . import ik_solutions_service, multi_validity_service
from .live_robot import LiveRobot
from .parameter_changes import ParameterChanges
from .parameter_declarations import as_declared_types, declare_parameters, parameter_value
from .parameters import EVENTS, batch_threads
from .robot_swap import RobotSwap
from .service_calls import ServiceCalls
from .state_publisher import StatePublisher

NODE_NAME = 'robokin'

#: /tf like tf2_ros.TransformBroadcaster: reliable, volatile, depth 100.
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
#: /tf_static and /robot_description like tf2_ros.StaticTransformBroadcaster and
#: robot_state_publisher: reliable, transient local, depth 1.
LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: /joint_states: sensor data (best effort matches reliable and best-effort publishers); 1000 deep, so
#: the messages that arrive while the /tf thread waits for the interpreter (IK calls on the service
#: threads) are kept, not dropped (a depth of 10 lost half of 1 kHz during 50 IK calls).
JOINT_STATES_QOS = QoSProfile(depth=1000, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT,
                              durability=DurabilityPolicy.VOLATILE)
#: The services' request queue: rclpy's default keeps 10 requests, so a burst of more concurrent
#: calls than that (while the worker threads are busy) lost the rest without an answer.
SERVICE_QUEUE_DEPTH = 256
SERVICE_QOS = QoSProfile(depth=SERVICE_QUEUE_DEPTH, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)
#: [s] how long shutdown waits for a description being loaded on the worker thread (launch sends
#: SIGKILL 10 s after SIGINT).
LOAD_STOP_TIMEOUT = 3.0


class KinematicsNode(Node):
    """The ``robokin`` node (docs/node.md: topics, services, parameters).

    Attributes:
        settings: the parameter values in force (:class:`~robokin_ros.node.parameters.NodeSettings`).
        services_group: the callback group of /compute_ik and /check_state_validity.
        robot_swap: the live robot and the descriptions that replace it.
        state_publisher: joint states in; /tf, Jacobians, gravity torques and stats out.
        service_calls: the service callbacks.
        parameter_changes: the set-parameters check and apply step.

    Raises:
        StartupParameterError: a start-up parameter value ``ros2 param set`` would refuse (logged).
    """

    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        self.settings = declare_parameters(self)
        #: How this node's calls into the library run: the services' batched computations on at
        #: most ``batch_threads`` threads (so /tf keeps a core), its own background compiles.
        self.runtime = Runtime(threads=batch_threads(self.param_value('batch_threads')))
        publish_stats = self.settings.publish_stats
        self.service_calls = ServiceCalls(self)
        self.state_publisher = StatePublisher(
            self, tf=self.create_publisher(TFMessage, '/tf', TF_QOS),
            gravity=self.create_publisher(JointState, '~/gravity_torques', 10),
            stats=self.create_publisher(String, '~/stats', 10) if publish_stats else None)
        from_topic = self.param_value('description_from_topic')
        self.robot_swap = RobotSwap(
            self, tf_static=self.create_publisher(TFMessage, '/tf_static', LATCHED_QOS),
            description=None if from_topic else self.create_publisher(String, 'robot_description', LATCHED_QOS),
            on_installed=self.state_publisher.sync_jacobians, on_error=self.service_calls.crash)
        self.parameter_changes = ParameterChanges(self, self.robot_swap, self.state_publisher.sync_jacobians)

        scoped = self.in_runtime
        self.create_subscription(JointState, 'joint_states', scoped(self.state_publisher.on_joint_state),
                                 JOINT_STATES_QOS)
        if from_topic:
            self.create_subscription(String, 'robot_description', scoped(self.robot_swap.on_description), LATCHED_QOS)
        self.create_subscription(String, 'robot_description_semantic', scoped(self.robot_swap.on_semantic),
                                 LATCHED_QOS)
        self.services_group = ReentrantCallbackGroup()
        if self.param_value('executor') != EVENTS:
            self.attach_services(self)
        if publish_stats:
            self.create_timer(1.0, self.state_publisher.publish_stats)

        with using(self.runtime):   # (the loader thread's jobs run in the context they were given in)
            self.robot_swap.start()
        self.add_pre_set_parameters_callback(as_declared_types)
        self.add_on_set_parameters_callback(self.parameter_changes.validate)
        self.add_post_set_parameters_callback(self.parameter_changes.apply)

    def in_runtime(self, callback: Callable) -> Callable:
        """``callback`` running with this node's :attr:`runtime` current (every library call it
        makes, and the threads and background compiles those start)."""
        runtime = self.runtime

        @functools.wraps(callback)
        def run(*args):
            with using(runtime):
                return callback(*args)
        return run

    @property
    def robot(self) -> LiveRobot | None:
        """The live robot (None until a description is installed)."""
        return self.robot_swap.robot

    def param_value(self, name: str):
        """Value of parameter ``name`` (:func:`~robokin_ros.node.parameter_declarations.parameter_value`)."""
        return parameter_value(self, name)

    def attach_services(self, host: Node) -> None:
        """Serve /compute_ik, /check_state_validity, /check_state_validity_multiple, /compute_cartesian_path and
        ``<node>/compute_ik_solutions`` (callback group :attr:`services_group`, for worker threads)
        and /compute_fk (host's default group: ~0.1 ms, so it never queues behind IK calls) from
        ``host``: this node, or the companion node of the 'events' executor. Without the
        robokin_interfaces package, ``compute_ik_solutions`` is not served (logged)."""
        group, calls, scoped = self.services_group, self.service_calls, self.in_runtime
        host.create_service(GetPositionIK, 'compute_ik', scoped(calls.compute_ik), qos_profile=SERVICE_QOS,
                            callback_group=group)
        host.create_service(GetStateValidity, 'check_state_validity', scoped(calls.check_state_validity),
                            qos_profile=SERVICE_QOS, callback_group=group)
        host.create_service(GetCartesianPath, 'compute_cartesian_path', scoped(calls.compute_cartesian_path),
                            qos_profile=SERVICE_QOS, callback_group=group)
        host.create_service(GetMultiStateValidity, multi_validity_service.SERVICE_NAME,
                            scoped(calls.check_multi_state_validity), qos_profile=SERVICE_QOS, callback_group=group)
        host.create_service(GetPositionFK, 'compute_fk', scoped(calls.compute_fk), qos_profile=SERVICE_QOS)
        try:
            from robokin_interfaces.srv import GetPositionIKSolutions
        except ImportError:
            self.get_logger().info(f'~/{ik_solutions_service.SERVICE_NAME} is not served: the robokin_interfaces '
                                   'package is not installed (tools/ros_interfaces/README.md)')
            return
        host.create_service(GetPositionIKSolutions,
                            f'{self.get_fully_qualified_name()}/{ik_solutions_service.SERVICE_NAME}',
                            scoped(calls.compute_ik_solutions), qos_profile=SERVICE_QOS, callback_group=group)

    def loading(self) -> bool:
        """A description from the topic is being loaded or waits to be."""
        return self.robot_swap.loading()

    def cancel_solves(self) -> None:
        """End this node's IK solves in progress at their next iteration (each answers with its
        best iterate), and every later one at once (shutdown). Other solves in the process, the
        node's or not, are not touched."""
        self.service_calls.cancel_solves()

    def stop_loading(self, timeout: float = LOAD_STOP_TIMEOUT) -> bool:
        """Drop a description waiting to be loaded and wait up to ``timeout`` [s] for the one being
        loaded (shutdown); True when the loader thread has ended."""
        return self.robot_swap.stop_loading(timeout)

    def destroy_node(self):
        if not self.robot_swap.stopped:
            self.robot_swap.stop_loading(LOAD_STOP_TIMEOUT)
        self.runtime.close(timeout=0.0)   # no new background compile; the worker threads end
        super().destroy_node()
