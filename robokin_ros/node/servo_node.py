"""The ``servo_node`` executable: MoveIt Servo's ROS interface over :class:`robokin_ros.Servo`.

Subscribes ``/joint_states`` (``moveit_servo.joint_topic``), ``~/delta_twist_cmds``
(``TwistStamped``), ``~/delta_joint_cmds`` (``control_msgs/JointJog``) and ``~/pose_target_cmds``
(``PoseStamped``); every ``publish_period`` a cycle takes the newest command of the current
command type, steps the servo and publishes the command out on ``command_out_topic`` (while a
command is fresh or the group is still braking, then one last holding point) and ``~/status``.
Services ``~/pause_servo`` (``std_srvs/SetBool``) and ``~/switch_command_type``
(``moveit_msgs/ServoCommandType``). A message it cannot use moves nothing: the cycle's status
is INVALID and one log line says why (again only when the reason changes). See docs/servo.md.
"""

from __future__ import annotations

import collections
import signal
import time

import numpy as np
import rclpy
from control_msgs.msg import JointJog
from geometry_msgs.msg import PoseStamped, TwistStamped
from moveit_msgs.msg import ServoStatus as ServoStatusMsg
from moveit_msgs.srv import ServoCommandType
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool

from ..errors import RobokinError
from ..model.groups import default_group_name, derive_groups
from ..servo import CommandType, Servo, ServoParameters, ServoStatus, StatusCode
from .conversions import InvalidMessageError, JointStateMap
from .descriptions import Rejected, load_parameter
from .servo_messages import (
    command_message,
    joint_jog_command,
    message_type,
    pose_command,
    status_message,
    twist_command,
)

#: Prefix of the servo parameters (MoveIt Servo's ``moveit_servo.`` namespace).
PREFIX = 'moveit_servo.'
#: Cycle records kept for :attr:`ServoNode.cycles` (start time, computation time) [s].
CYCLE_RECORDS = 100_000


class ServoNode(Node):
    """The servo node (name ``servo_node``). Parameters: ``robot_description`` or
    ``description_file`` (the URDF), ``robot_description_semantic`` or ``semantic_file`` (an SRDF,
    for ``move_group_name``), ``frame_prefix``, ``joint_state_timeout`` [s] and
    ``moveit_servo.<name>`` for every :class:`~robokin_ros.servo.ServoParameters` name.

    Raises:
        Rejected: no usable robot description, or a bad servo parameter (the message says which).
    """

    def __init__(self, node_name: str = 'servo_node', **kwargs):
        super().__init__(node_name, **kwargs)
        for name in ('robot_description', 'description_file', 'robot_description_semantic', 'semantic_file',
                     'frame_prefix'):
            self.declare_parameter(name, '')
        self.declare_parameter('joint_state_timeout', 1.0)
        loose = ParameterDescriptor(dynamic_typing=True)   # (an integer for a float: ServoParameters checks)
        for name, value in ServoParameters().as_dict().items():
            self.declare_parameter(PREFIX + name, list(value) if isinstance(value, tuple) else value, loose)
        self.parameters = self._read_parameters()
        self.prefix = self.get_parameter('frame_prefix').value
        self.joint_state_timeout = float(self.get_parameter('joint_state_timeout').value)
        model, tip, base = self._load_group()
        try:
            self.servo = Servo(model, tip, base, parameters=self.parameters)
        except RobokinError as error:
            raise Rejected(f'cannot servo {model.name!r}: {error}') from None
        self.model = model
        self.command_type = CommandType.TWIST
        self._joint_map = JointStateMap(model)
        self._measured = model.home_configuration()
        self._seen = np.zeros(model.n_q, bool)
        self._joint_time = None
        self._pending = None
        self._problem = None
        self._commanded = None
        self._moving = False
        self._logged = None
        #: (start [s, monotonic], computation [s]) of each cycle, for benchmarks.
        self.cycles = collections.deque(maxlen=CYCLE_RECORDS)
        self.last_status = ServoStatus(StatusCode.NO_WARNING)
        self._wire()
        self.get_logger().info(
            f"servo of {model.name!r}: {len(self.servo.joint_names)} joints from {self.servo.base!r} to "
            f"{self.servo.tip!r}; commands in {self.parameters.command_in_type}, out on "
            f"{self.parameters.command_out_topic} as {self.parameters.command_out_type} every "
            f"{self.parameters.publish_period} s; command type TWIST")

    # ------------------------------------------------------------------ set-up
    def _read_parameters(self) -> ServoParameters:
        values = {}
        for name in ServoParameters.names():
            value = self.get_parameter(PREFIX + name).value
            values[name] = tuple(value) if isinstance(value, (list, tuple)) or hasattr(value, 'tolist') else value
        try:
            return ServoParameters.from_dict(values)
        except (ValueError, TypeError) as error:
            raise Rejected(f'servo parameter {PREFIX}{error}') from None

    def _load_group(self):
        """The model, tip and base of ``move_group_name`` (the SRDF's groups, else the tree's)."""
        urdf = None
        for name in ('robot_description', 'description_file'):
            value = self.get_parameter(name).value
            if value:
                urdf = load_parameter(name, value, None)
                break
        if urdf is None:
            raise Rejected('no robot description: set robot_description or description_file')
        model = urdf.model
        groups = derive_groups(model).groups
        for name in ('robot_description_semantic', 'semantic_file'):
            value = self.get_parameter(name).value
            if value:
                srdf = load_parameter(name, value, model)
                if srdf is not None and srdf.semantic is not None and srdf.semantic.groups:
                    groups = dict(srdf.semantic.groups)
                break
        wanted = self.parameters.move_group_name or default_group_name(groups)
        if wanted not in groups:
            raise Rejected(f'{PREFIX}move_group_name {wanted!r} is not a group; groups: {sorted(groups)}')
        group = groups[wanted]
        tip = self.parameters.ee_frame or group.tip or None
        base = self.parameters.planning_frame or (group.base if group.base in model.link_names else None)
        return model, tip, base

    def _wire(self):
        p = self.parameters
        self.create_subscription(JointState, p.joint_topic, self.on_joint_state, 10)
        self.create_subscription(TwistStamped, '~/delta_twist_cmds', self.on_twist, 10)
        self.create_subscription(JointJog, '~/delta_joint_cmds', self.on_joint_jog, 10)
        self.create_subscription(PoseStamped, '~/pose_target_cmds', self.on_pose, 10)
        self.command_publisher = self.create_publisher(message_type(p), p.command_out_topic, 10)
        self.status_publisher = self.create_publisher(ServoStatusMsg, p.status_topic, 10)
        self.create_service(SetBool, '~/pause_servo', self.on_pause)
        self.create_service(ServoCommandType, '~/switch_command_type', self.on_switch)
        self.timer = self.create_timer(p.publish_period, self.cycle)

    # ------------------------------------------------------------------ inputs
    def on_joint_state(self, msg: JointState):
        try:
            update = self._joint_map.parse(msg.name, msg.position)
        except ValueError as error:
            self._problem = f'joint states: {error}'
            return
        self._measured[update.q_indices] = update.values
        self._seen[update.q_indices] = True
        self._joint_time = time.monotonic()

    def _take(self, kind: CommandType, convert, msg):
        if kind != self.command_type:
            self._problem = (f'a {kind.name} command while the command type is {self.command_type.name} '
                             '(call ~/switch_command_type)')
            return
        try:
            self._pending = convert(msg)
        except InvalidMessageError as error:
            self._problem = str(error)

    def on_twist(self, msg: TwistStamped):
        self._take(CommandType.TWIST, lambda m: twist_command(m, self.prefix), msg)

    def on_joint_jog(self, msg: JointJog):
        self._take(CommandType.JOINT_JOG, joint_jog_command, msg)

    def on_pose(self, msg: PoseStamped):
        self._take(CommandType.POSE, lambda m: pose_command(m, self.prefix), msg)

    def on_pause(self, request, response):
        self.servo.paused = bool(request.data)
        response.success = True
        response.message = 'paused' if request.data else 'unpaused'
        self.get_logger().info(f'servo {response.message}')
        return response

    def on_switch(self, request, response):
        try:
            kind = CommandType(request.command_type)
        except ValueError:
            response.success = False
            self.get_logger().warning(f'switch_command_type: unknown command type {request.command_type}')
            return response
        if kind != self.command_type:
            self.command_type = kind
            self.servo.stop()
            self._pending = None
        response.success = True
        return response

    # ------------------------------------------------------------------ the cycle
    def _missing_joints(self) -> str | None:
        group = self.servo._q_index   # noqa: SLF001 - the node is the servo's own reader
        if self._joint_time is None or not self._seen[group].all():
            return 'no joint states yet for every joint of the group'
        age = time.monotonic() - self._joint_time
        if age > self.joint_state_timeout:
            return f'joint states are {age:.2f} s old (joint_state_timeout {self.joint_state_timeout} s)'
        return None

    def cycle(self):
        """One servo cycle: step, publish the command out (while moving) and the status."""
        start = time.perf_counter()
        command, self._pending = self._pending, None
        problem, self._problem = self._problem, None
        missing = self._missing_joints()
        if missing is not None:
            problem = problem or missing
            self.servo.stop()
            command = None
            if not self._moving:
                self._finish(ServoStatus(StatusCode.INVALID, problem), start)
                return
        # Integrate from the last commanded state while moving (the robot lags its commands);
        # from the measured one at rest.
        q = self._commanded if self._moving and self._commanded is not None else self._measured.copy()
        if problem is not None:
            self.servo.stop()
        q_next, velocity, status = self.servo.step(q, command, self.parameters.publish_period)
        if problem is not None:
            status = ServoStatus(StatusCode.INVALID, problem, 0.0, status.condition)
        group = self.servo._q_index   # noqa: SLF001
        moving = bool(velocity.any())
        if moving or self._moving:   # while moving, and once more at rest: the holding point
            msg = command_message(self.parameters, self.servo.joint_names, q_next[group],
                                  velocity[self.servo._v_index], self.get_clock().now().to_msg())   # noqa: SLF001
            self.command_publisher.publish(msg)
        self._commanded, self._moving = q_next, moving
        self._finish(status, start)

    def _finish(self, status: ServoStatus, start: float):
        self.status_publisher.publish(status_message(status))
        self.last_status = status
        if status.code == StatusCode.INVALID and status.message != self._logged:
            self.get_logger().warning(f'no motion: {status.message}')
        self._logged = status.message if status.code == StatusCode.INVALID else None
        self.cycles.append((start, time.perf_counter() - start))


def main(args=None):
    """Run the servo node until SIGINT/SIGTERM; exit code 0 (1 when it cannot start)."""
    stopping = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda s, f: stopping.append(s))
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    node = executor = None
    code = 0
    try:
        try:
            node = ServoNode()
        except Rejected as error:
            rclpy.logging.get_logger('servo_node').error(str(error))
            code = 1
            return code
        executor = make_executor()
        executor.add_node(node)
        while rclpy.ok() and not stopping:
            executor.spin_once(timeout_sec=0.1)
    except ExternalShutdownException:
        pass
    finally:
        if executor is not None:
            executor.shutdown()
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return code


def make_executor(context=None):
    """rclpy's EventsExecutor where this rclpy has it (timers on time at 1 kHz), else the
    single-threaded one; on ``context`` (None: the default one)."""
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return SingleThreadedExecutor(context=context)
    return EventsExecutor(context=context)


if __name__ == '__main__':
    raise SystemExit(main())
