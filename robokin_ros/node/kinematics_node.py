"""The robokin node's wiring: parameters, subscriptions, publishers, timers and service glue.

Robot description and joint states in; TF, Jacobians, gravity torques and the /compute_ik,
/compute_fk, /check_state_validity, /check_state_validity_multiple and ~/compute_ik_solutions
services out. The rest lives in plain modules without rclpy: parameters in
:mod:`~robokin_ros.node.parameters` (declared by :mod:`~robokin_ros.node.parameter_declarations`),
descriptions in :mod:`~robokin_ros.node.descriptions`, the live robot in
:mod:`~robokin_ros.node.live_robot`, the handlers in one module per service over
:mod:`~robokin_ros.node.requests`, conversions in :mod:`~robokin_ros.node.conversions`.

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

import json
import threading
import time
import traceback

import numpy as np
from builtin_interfaces.msg import Duration
from moveit_msgs.srv import GetMultiStateValidity, GetPositionFK, GetPositionIK, GetStateValidity
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from tf2_msgs.msg import TFMessage

from .. import ik
from ..dynamics import gravity_torques
from ..errors import RobokinError, ShapeError
from ..kinematics import forward_kinematics, jacobian, joint_poses
from . import fk_service, ik_service, ik_solutions_service, multi_validity_service, validity_service
from .background import LatestJobWorker
from .conversions import (
    duration_to_seconds,
    jacobian_layout,
    jacobian_to_msg,
    ns_to_stamp,
    some_names,
    stamp_to_ns,
    topic_token,
)
from .descriptions import (
    Note,
    SRDFDescription,
    URDFDescription,
    choose_ik_groups,
    failure,
    load_parameter,
    parse_urdf,
    text_of,
)
from .limits import check_description, check_link_count
from .live_robot import NEVER_NS, LiveRobot, load_robot
from .log_limits import MAX_REPLY_CHARS, cap_message, cap_notes, cap_text
from .parameter_declarations import as_declared_types, declare, parameter_value
from .parameters import (
    DESCRIPTION_PARAMETERS,
    EVENTS,
    GROUP_KEYS,
    PARAMETERS,
    SEMANTIC_PARAMETERS,
    LiveState,
    StartupParameterError,
    check_value,
    read_settings,
    startup_problems,
)
from .requests import RobotSnapshot

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
#: What a JointState the kernels cannot evaluate raises (e.g. a mimic joint driven to inf).
KERNEL_ERRORS = (RobokinError, ValueError, ArithmeticError)


class KinematicsNode(Node):
    """The ``robokin`` node (docs/node.md: topics, services, parameters).

    Attributes:
        settings: the parameter values in force (:class:`~robokin_ros.node.parameters.NodeSettings`).
        services_group: the callback group of /compute_ik and /check_state_validity.
    """

    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        self._robot: LiveRobot | None = None
        #: Given to every IK solve of this node's services; cancelled on shutdown (:meth:`cancel_solves`).
        self._solves = ik.CancelToken()
        self._srdf: SRDFDescription | None = None   # the latest SRDF (parameter, file or topic)
        # what the set-parameters check read and parsed, for the apply step: parameter -> description
        self._accepted: dict[str, URDFDescription | SRDFDescription | None] = {}
        self._warned: dict[tuple, int] = {}
        self._last_callback_ns = 0
        self._durations_us: list[float] = []
        self._counts = {'joint_states': 0, 'tf': 0}
        self._install_lock = threading.RLock()   # installing a robot, taking an SRDF
        self._clamped_timeouts: set[float] = set()   # request timeouts already logged as clamped
        self._loader = LatestJobWorker('robokin description loader', self._crash)
        declared = dict(PARAMETERS)
        problems = [declare(self, name, spec) for name, spec in PARAMETERS.items()]
        for group in self.param_value('ik_group_names'):
            for key, spec in GROUP_KEYS.items():
                problems.append(declare(self, f'ik_groups.{group}.{key}', spec))
                declared[f'ik_groups.{group}.{key}'] = spec
        problems = [p for p in problems if p] or startup_problems(self.param_value, list(declared),
                                                                  self.param_value('description_from_topic'))
        if problems:   # what ros2 param set refuses is refused at start-up too (main exits 1)
            for problem in problems:
                self.get_logger().error(f'invalid parameter: {problem}')
            raise StartupParameterError(problems)
        self.settings = read_settings(self.param_value)

        self._tf_pub = self.create_publisher(TFMessage, '/tf', TF_QOS)
        self._tf_static_pub = self.create_publisher(TFMessage, '/tf_static', LATCHED_QOS)
        self._gravity_pub = self.create_publisher(JointState, '~/gravity_torques', 10)
        self._jacobian_pubs: dict[str, object] = {}
        # (model, [(link, publisher, layout)]): the Jacobians published for that model; read by the
        # joint-state callback and replaced by a reload on the loader thread, under the lock
        self._jacobian_frames: tuple[object, list[tuple[str, object, object]]] = (None, [])
        self._jacobian_lock = threading.Lock()
        self._stats_pub = self.create_publisher(String, '~/stats', 10) if self.settings.publish_stats else None
        self.create_subscription(JointState, 'joint_states', self._on_joint_state, JOINT_STATES_QOS)
        self._from_topic = self.param_value('description_from_topic')
        if self._from_topic:
            self.create_subscription(String, 'robot_description', self._on_description, LATCHED_QOS)
            self._description_pub = None
        else:
            self._description_pub = self.create_publisher(String, 'robot_description', LATCHED_QOS)

        self.create_subscription(String, 'robot_description_semantic', self._on_semantic, LATCHED_QOS)
        self.services_group = ReentrantCallbackGroup()
        if self.param_value('executor') != EVENTS:
            self.attach_services(self)
        if self._stats_pub is not None:
            self.create_timer(1.0, self._publish_stats_message)

        semantic, source = self._startup_text(SEMANTIC_PARAMETERS)
        if semantic:
            self._srdf = SRDFDescription(semantic, source)
        xml, source = self._startup_text(() if self._from_topic else DESCRIPTION_PARAMETERS)
        if self._from_topic:
            self.get_logger().info('waiting for the robot description on topic '
                                   f"{self.resolve_topic_name('robot_description')}")
        elif xml:
            self._load(xml, source)
        else:
            self.get_logger().info('waiting for a robot description: set parameter robot_description '
                                   'or description_file')
        self.add_pre_set_parameters_callback(as_declared_types)
        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)

    def attach_services(self, host: Node) -> None:
        """Serve /compute_ik, /check_state_validity, /check_state_validity_multiple and
        ``<node>/compute_ik_solutions`` (callback group :attr:`services_group`, for worker threads)
        and /compute_fk (host's default group: ~0.1 ms, so it never queues behind IK calls) from
        ``host``: this node, or the companion node of the 'events' executor. Without the
        robokin_interfaces package, ``compute_ik_solutions`` is not served (logged)."""
        group = self.services_group
        host.create_service(GetPositionIK, 'compute_ik', self._compute_ik, qos_profile=SERVICE_QOS,
                            callback_group=group)
        host.create_service(GetStateValidity, 'check_state_validity', self._check_state_validity,
                            qos_profile=SERVICE_QOS, callback_group=group)
        host.create_service(GetMultiStateValidity, multi_validity_service.SERVICE_NAME,
                            self._check_multi_state_validity, qos_profile=SERVICE_QOS, callback_group=group)
        host.create_service(GetPositionFK, 'compute_fk', self._compute_fk, qos_profile=SERVICE_QOS)
        try:
            from robokin_interfaces.srv import GetPositionIKSolutions
        except ImportError:
            self.get_logger().info(f'~/{ik_solutions_service.SERVICE_NAME} is not served: the robokin_interfaces '
                                   'package is not installed (tools/ros_interfaces/README.md)')
            return
        host.create_service(GetPositionIKSolutions,
                            f'{self.get_fully_qualified_name()}/{ik_solutions_service.SERVICE_NAME}',
                            self._compute_ik_solutions, qos_profile=SERVICE_QOS, callback_group=group)

    def destroy_node(self):
        if not self._loader.stopped:
            self._loader.stop(LOAD_STOP_TIMEOUT)
        super().destroy_node()

    def cancel_solves(self) -> None:
        """End this node's IK solves in progress at their next iteration (each answers with its
        best iterate), and every later one at once (shutdown). Other solves in the process, the
        node's or not, are not touched."""
        self._solves.cancel()

    def stop_loading(self, timeout: float = LOAD_STOP_TIMEOUT) -> bool:
        """Drop a description waiting to be loaded and wait up to ``timeout`` [s] for the one being
        loaded (shutdown); True when the loader thread has ended."""
        return self._loader.stop(timeout)

    # ------------------------------------------------------------------------- parameters
    def param_value(self, name: str):
        """Value of parameter ``name`` (:func:`~robokin_ros.node.parameter_declarations.parameter_value`)."""
        return parameter_value(self, name)

    def _validate_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        """The set-parameters check: reject with a reason, or accept; a new description is read and
        parsed here, once, and handed to :meth:`_apply_parameters` through ``_accepted``."""
        self._accepted = {}
        robot = self._robot
        state = LiveState(description_from_topic=self._from_topic) if robot is None else LiveState(
            robot.model.name, robot.model.link_names, robot.semantics.groups, self._from_topic)
        for p in parameters:
            reason = check_value(p.name, p.value, state)
            if not reason and p.name in DESCRIPTION_PARAMETERS + SEMANTIC_PARAMETERS:
                try:
                    self._accepted[p.name] = self._load_parameter(p.name, p.value, robot)
                except Exception as e:  # noqa: BLE001 - Rejected, or a parser bug: never out of this callback
                    reason = cap_message(failure(e))
            if reason:
                self._accepted = {}
                self.get_logger().warning(f'rejected parameter {p.name}: {reason}')
                return SetParametersResult(successful=False, reason=reason)
        new = {p.name: [] if p.value is None else p.value for p in parameters}
        try:   # what the apply step derives from the values must not fail there (set_parameters answers)
            read_settings(lambda name: new[name] if name in new else self.param_value(name))
        except Exception as e:  # noqa: BLE001 - any failure is a refusal with its reason
            self._accepted = {}
            reason = f'the settings from {sorted(new)} cannot be derived: {type(e).__name__}: {e}'
            self.get_logger().warning(f'rejected parameters: {reason}')
            return SetParametersResult(successful=False, reason=reason)
        return SetParametersResult(successful=True)

    def _load_parameter(self, name: str, value: str, robot: LiveRobot | None):
        """:func:`~robokin_ros.node.descriptions.load_parameter` within the description limits: a
        URDF text is checked before parsing, a URDF file's link count after."""
        limits = self.settings.limits
        if name == 'robot_description':
            check_description(value, limits)
        loaded = load_parameter(name, value, None if robot is None else robot.model)
        if isinstance(loaded, URDFDescription):
            check_link_count(loaded.model.n_links, limits)
        return loaded

    def _apply_parameters(self, parameters: list[Parameter]) -> None:
        """Take accepted values: read the settings again; install what the check loaded."""
        with self._install_lock:
            self._apply_accepted({p.name for p in parameters})

    def _apply_accepted(self, names: set[str]) -> None:
        accepted, self._accepted = self._accepted, {}
        old_prefix = self.settings.frame_prefix
        self.settings = read_settings(self.param_value)
        for name in ('semantic_file', 'robot_description_semantic'):
            if isinstance(accepted.get(name), SRDFDescription):
                self._take_semantic(accepted[name])
        installed = False
        for name in ('description_file', 'robot_description'):
            if isinstance(accepted.get(name), URDFDescription):
                installed = self._install(accepted[name]) or installed
        if installed:
            return   # with every derived publisher and the IK groups
        robot = self._robot
        if self.settings.frame_prefix != old_prefix and robot is not None:
            self._install(URDFDescription(robot.model, robot.xml, 'frame_prefix change'))
        elif names & {'jacobian_frames', 'publish_jacobians', 'jacobian_reference'}:
            self._sync_jacobian_publishers()
        elif 'default_ik_group' in names and robot is not None:
            self._regroup(robot)

    # ------------------------------------------------------------------------- description
    def _log_notes(self, notes: tuple[Note, ...] | list[Note]) -> None:
        # one call site per severity: rclpy refuses a log call whose severity differs from the
        # previous call at the same line
        logger = self.get_logger()
        for level, text in cap_notes(notes):
            if level == 'error':
                logger.error(text)
            elif level == 'warning':
                logger.warning(text)
            else:
                logger.info(text)

    def _startup_text(self, names: tuple[str, ...]) -> tuple[str, str]:
        """(text, source) of the first of parameters ``names`` with a value (a ``*_file`` one read);
        ('', '') when none has one or the file cannot be read (logged)."""
        for name in names:
            value = self.param_value(name)
            if value:
                try:
                    return text_of(name, value)
                except Exception as e:  # noqa: BLE001 - Rejected, or a reader bug: the node starts anyway
                    self.get_logger().error(cap_message(failure(e)))
                    return '', ''
        return '', ''

    def _on_semantic(self, msg: String) -> None:
        if msg.data:
            topic = self.resolve_topic_name('robot_description_semantic')
            self._take_semantic(SRDFDescription(msg.data, f'topic {topic}'))

    def _take_semantic(self, srdf: SRDFDescription) -> None:
        """Take a new SRDF: read it against the live model (if any) and regroup; a bad one is
        logged and the previous groups stay."""
        with self._install_lock:
            self._take_semantic_locked(srdf)

    def _take_semantic_locked(self, srdf: SRDFDescription) -> None:
        robot = self._robot
        if robot is None:
            self._srdf = srdf
            return
        notes: list[Note] = []
        try:
            srdf = SRDFDescription(srdf.xml, srdf.source, srdf.for_model(robot.model))
            semantics = choose_ik_groups(robot.model, self.settings, srdf, notes)
        except Exception as e:  # noqa: BLE001 - Rejected, or a parser bug (RecursionError): keep the groups
            self.get_logger().error(f'rejected the semantic description from {srdf.source} (keeping the previous '
                                    f'IK groups): {cap_message(failure(e))}')
            return
        self._srdf = srdf
        robot.semantics = semantics
        self._log_notes(notes)

    def _regroup(self, robot: LiveRobot) -> None:
        """Choose the IK groups of ``robot`` again (after a change of ``default_ik_group``)."""
        notes: list[Note] = []
        robot.semantics = choose_ik_groups(robot.model, self.settings, self._srdf, notes)
        self._log_notes(notes)

    def _on_description(self, msg: String) -> None:
        """Load the description on the loader thread (the latest of those waiting): /tf keeps
        flowing with the current model meanwhile."""
        xml, source = msg.data, f"topic {self.resolve_topic_name('robot_description')}"
        self._loader.submit(lambda: self._load(xml, source))

    def loading(self) -> bool:
        """A description from the topic is being loaded or waits to be."""
        return not self._loader.idle()

    def _load(self, xml: str, source: str) -> bool:
        """Check, parse and install a URDF text; a bad one is logged and the previous model stays."""
        try:
            check_description(xml, self.settings.limits)
            urdf = URDFDescription(parse_urdf(xml), xml, source)
        except Exception as e:  # noqa: BLE001 - Rejected, or a parser bug: keep the last good model
            self.get_logger().error(f'rejected the robot description from {source} ({self._keeping()}): '
                                    f'{cap_message(failure(e))}')
            return False
        return self._install(urdf)

    def _keeping(self) -> str:
        robot = self._robot
        return f'keeping robot {robot.model.name!r}' if robot is not None else 'still waiting for a valid one'

    def _install(self, urdf: URDFDescription) -> bool:
        """Make a parsed URDF the live robot, with the SRDF in force; publish /tf_static and the
        description. Whatever fails, the previous robot stays (logged).

        The robot is built (the slow part) before taking the install lock, and built again under
        it in the rare case an SRDF arrived meanwhile."""
        srdf = self._srdf
        try:
            loaded = load_robot(urdf, self.settings, srdf, previous=self._robot)
            with self._install_lock:
                if self._srdf is not srdf:
                    loaded = load_robot(urdf, self.settings, self._srdf, previous=self._robot)
                return self._take_robot(urdf, loaded)
        except Exception as e:  # noqa: BLE001 - keep the last good model, whatever went wrong
            self.get_logger().error(f'could not install the robot description from {urdf.source} '
                                    f'({self._keeping()}): {cap_message(failure(e))}')
            return False

    def _take_robot(self, urdf: URDFDescription, loaded) -> bool:
        """Make ``loaded`` (:class:`~robokin_ros.node.live_robot.LoadedRobot`) the live robot."""
        self._log_notes(loaded.notes)
        robot, model = loaded.robot, urdf.model
        robot.log = self.get_logger().info
        robot.warn = self.get_logger().warning
        self._srdf, self._robot = loaded.srdf, robot
        self._sync_jacobian_publishers()
        stamp = self.get_clock().now().to_msg()
        self._tf_static_pub.publish(TFMessage(transforms=robot.static_transforms(stamp)))
        if self._description_pub is not None:
            self._description_pub.publish(String(data=urdf.xml))
        self.get_logger().info(cap_text(
            f'robot {model.name!r} from {urdf.source}: {model.n_links} links, {len(model.joint_names)} joints '
            f'{some_names(model.joint_names, 20)}; {int(model.is_fixed.sum())} fixed joints on /tf_static, '
            f'{robot.tf_joints.size} movable joints on /tf'))
        return True

    def _sync_jacobian_publishers(self) -> None:
        robot, settings = self._robot, self.settings
        if robot is None:
            return
        model = robot.model
        wanted = []
        if settings.publish_jacobians:
            names = list(settings.jacobian_frames) or list(model.leaf_links)
            missing = [n for n in names if n not in model.link_names]
            if missing:
                self.get_logger().warning(f'jacobian_frames not in robot {model.name!r}, skipped: {missing}')
            wanted = [n for n in names if n in model.link_names]
        with self._jacobian_lock:   # (the joint-state callback never publishes on a destroyed publisher)
            for name in set(self._jacobian_pubs) - set(wanted):
                self.destroy_publisher(self._jacobian_pubs.pop(name))
            frames = []
            for name in wanted:
                if name not in self._jacobian_pubs:
                    self._jacobian_pubs[name] = self.create_publisher(
                        Float64MultiArray, f'~/jacobian/{topic_token(name)}', 10)
                layout = jacobian_layout(robot.prefix + name, settings.reference.value, model.v_names)
                frames.append((name, self._jacobian_pubs[name], layout))
            self._jacobian_frames = (model, frames)

    # ------------------------------------------------------------------------- joint states
    def _warn(self, key: tuple, text: str) -> None:
        """Log ``text`` unless the same ``key`` was logged less than ``warning_period`` ago."""
        last = self._warned.get(key)
        now = self._last_callback_ns
        period_ns = self.settings.warning_period_ns
        if last is not None and now - last < period_ns:
            return
        if len(self._warned) > 256:
            self._warned.clear()
        self._warned[key] = now
        period = period_ns * 1e-9
        self.get_logger().warning(f'{cap_text(text)} (repeats suppressed for {period:g} s)')

    def _on_joint_state(self, msg: JointState) -> None:
        start = time.perf_counter_ns()
        self._handle_joint_state(msg)
        if self._stats_pub is not None:
            self._durations_us.append((time.perf_counter_ns() - start) * 1e-3)

    def _handle_joint_state(self, msg: JointState) -> None:
        robot = self._robot
        if robot is None:
            return
        now = self.get_clock().now().nanoseconds
        if now < self._last_callback_ns:
            self.get_logger().warning('time moved backwards (bag replay?): rate limits and warning throttling reset')
            self._warned.clear()
            robot.last_published_ns[:] = NEVER_NS
        self._last_callback_ns = now
        self._counts['joint_states'] += 1
        names = msg.name
        try:
            update = robot.names.parse(names, msg.position)
        except ShapeError:
            self._warn(('length',),
                       f'dropped a JointState with {len(names)} names but {len(msg.position)} positions '
                       f'(joints {some_names(names)})')
            return
        if update.unknown:
            self._warn(('unknown',),
                       f'dropped JointState entries for joints not in robot {robot.model.name!r}: '
                       f'{some_names(update.unknown)}')
        if update.nonfinite:
            self._warn(('nonfinite',),
                       f'dropped non-finite JointState positions of joints {some_names(update.nonfinite)}')
        idx = update.q_indices
        if idx.size == 0:
            return
        old_q = robot.q
        q = old_q.copy()
        q[idx] = update.values
        robot.q = q
        robot.received[idx] = True
        if not robot.complete:
            robot.complete = bool(robot.received[robot.required].all())
        stamp_ns = stamp_to_ns(msg.header.stamp)
        stamp = msg.header.stamp
        if stamp_ns == 0:  # an unstamped message: stamp it with the time it arrived
            stamp_ns, stamp = now, ns_to_stamp(now)
        settings = self.settings
        if not settings.ignore_timestamp and stamp_ns < int(robot.last_published_ns[idx].min()) + settings.interval_ns:
            return
        previous_stamps = robot.last_published_ns[idx]
        robot.last_published_ns[idx] = stamp_ns
        try:
            self._publish(robot, q, robot.rows(idx), stamp)
        except KERNEL_ERRORS as e:   # e.g. a mimic joint driven to inf: drop the message, keep the old values
            robot.q, robot.last_published_ns[idx] = old_q, previous_stamps
            self._warn(('kernel',), f'dropped a JointState the kinematics cannot evaluate (joints '
                                    f'{some_names(names)}): {e}')

    def _publish(self, robot: LiveRobot, q: np.ndarray, rows: np.ndarray, stamp) -> None:
        model, settings = robot.model, self.settings
        if rows.size:  # tf rows are the model's 1-DOF joints, in joint_poses' order
            self._tf_pub.publish(robot.encoder.encode(rows, joint_poses(model, q)[rows], stamp))
            self._counts['tf'] += 1
        if not robot.complete:
            return
        T = None
        with self._jacobian_lock:
            frames_model, frames = self._jacobian_frames
            for name, pub, layout in frames if frames_model is model else ():   # (else a reload is under way)
                if pub.get_subscription_count():
                    if T is None:
                        T = forward_kinematics(model, q)
                    J = jacobian(model, q, name, settings.reference, poses=T)
                    pub.publish(jacobian_to_msg(J, layout))
        if settings.publish_gravity and model.link_has_inertial.any() and self._gravity_pub.get_subscription_count():
            tau = gravity_torques(model, q)
            msg = JointState(name=list(model.v_names), effort=tau.tolist())
            msg.header.stamp = stamp
            self._gravity_pub.publish(msg)

    def _publish_stats_message(self) -> None:
        durations, self._durations_us = self._durations_us, []
        stats = dict(self._counts, durations_us=[round(d, 1) for d in durations])
        self._stats_pub.publish(String(data=json.dumps(stats)))

    # ------------------------------------------------------------------------- services
    def _crash(self, error: BaseException) -> None:
        self.get_logger().error(cap_message('service handler failed:\n' + ''.join(
            traceback.format_exception(type(error), error, error.__traceback__)), max_lines=60))

    def _snapshot(self) -> RobotSnapshot | None:
        robot = self._robot
        return None if robot is None else robot.snapshot()

    def _compute_ik(self, request, response):
        return self._solve_call(ik_service.compute_ik, request, response)

    def _compute_ik_solutions(self, request, response):
        return self._solve_call(ik_solutions_service.compute_ik_solutions, request, response)

    def _solve_call(self, handler, request, response):
        """``handler`` (/compute_ik's or ~/compute_ik_solutions') with the request's timeout clamped."""
        settings = self.settings.ik
        clamped = self._clamp_timeout(request.ik_request, settings.max_timeout)
        handling = ik_service.Handling(self._solves, self._crash)
        response = handler(request, response, self._snapshot(), settings, handling)
        response.error_code.message += clamped
        return _capped_reply(response)

    def _clamp_timeout(self, ik_request, max_timeout: float) -> str:
        """Clamp a request's timeout above ``ik_max_timeout`` to it (logged once per value); the
        sentence to append to the reply, '' when nothing was clamped."""
        asked = duration_to_seconds(ik_request.timeout)
        if not asked > max_timeout:   # (0: ik_timeout, which is not clamped)
            return ''
        ik_request.timeout = Duration(sec=int(max_timeout), nanosec=int(round(max_timeout % 1 * 1e9)))
        note = f'the requested timeout {asked:.6g} s was clamped to ik_max_timeout = {max_timeout:g} s'
        if asked not in self._clamped_timeouts and len(self._clamped_timeouts) < 64:
            self._clamped_timeouts.add(asked)
            self.get_logger().warning(f'/compute_ik: {note} (said once per value)')
        return f' ({note})'

    def _problem(self, text: str) -> None:
        self.get_logger().warning(cap_text(text))

    def _check_state_validity(self, request, response):
        policy, caps = self.settings.ik.avoid_collisions_policy, self.settings.validity_caps
        return validity_service.check_state_validity(request, response, self._snapshot(),
                                                     self.get_clock().now().to_msg(), self._problem, self._crash,
                                                     policy=policy, caps=caps)

    def _check_multi_state_validity(self, request, response):
        return multi_validity_service.check_multi_state_validity(
            request, response, self._snapshot(), self.get_clock().now().to_msg(), self._problem, self._crash,
            policy=self.settings.ik.avoid_collisions_policy, max_states=self.settings.max_validity_states,
            caps=self.settings.validity_caps)

    def _compute_fk(self, request, response):
        return _capped_reply(fk_service.compute_fk(request, response, self._snapshot(), self.get_clock().now().to_msg(),
                                                 self._crash))


def _capped_reply(response):
    """``response`` with its ``error_code.message`` cut to :data:`~robokin_ros.node.log_limits.MAX_REPLY_CHARS`."""
    response.error_code.message = cap_text(response.error_code.message, MAX_REPLY_CHARS)
    return response

