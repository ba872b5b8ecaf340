"""The ``web_view`` node: the live robot in a browser, from ``/robot_description`` and ``/joint_states``.

    ros2 run robokin_ros web_view --ros-args -p port:=8080 -p frame_prefix:=r1/
    ros2 launch robokin_ros kin.launch.py use_web_view:=true

The view is :class:`robokin_ros.web.RobotView` without its own configuration: joint states
move it (applied by a timer at ``update_rate`` Hz, the newest state only), the sliders only show
values, and the IK gizmo calls the kinematics node's ``/compute_ik`` (so what the user drags is
what clients get); the answer shows as a frame at the solution's tip pose with its residual. A
new description replaces the view; one identical to the description shown is ignored; a bad one,
or one over the kinematics node's description limits, is logged and the old view stays. Joint
states are read like the kinematics node reads them: unknown names and non-finite values are
dropped (warned, throttled), and a state the kinematics cannot evaluate (a mimic joint driven past
the float range) is dropped whole, the view keeping the last good one.

The page is served only to the URL logged at start (with its per-run token), and its websocket
only to that page (:mod:`robokin_ros.web.access`); a ``host`` other machines reach is warned about.

Parameters: ``port`` (8080; the next free one if taken, said in the log; 0: any), ``host``
(``127.0.0.1``), ``frame_prefix`` (the kinematics node's, used in the IK requests),
``update_rate`` [Hz] (30), ``ik_timeout`` [s] (1.0, the service call's budget),
``max_description_bytes`` and ``max_links`` (the kinematics node's limits, same defaults).
"""

from __future__ import annotations

import math
import threading

import numpy as np
import rclpy
from geometry_msgs.msg import Pose
from moveit_msgs.msg import MoveItErrorCodes
from moveit_msgs.srv import GetPositionIK
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from ..errors import RobokinError, ShapeError
from ..kinematics import forward_kinematics
from ..model import RobotModel
from ..model.description_limits import DescriptionLimits
from ..model.groups import derive_groups
from ..spatial import log_so3, matrix_to_quat_xyzw
from ..web import IKOutcome, RobotView, WebViewUnavailableError, import_viser
from ..web.access import serve
from .conversions import JointStateMap, some_names
from .descriptions import Rejected
from .limits import check_description

LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
ERROR_NAMES = {value: name for name, value in vars(MoveItErrorCodes).items()
               if name.isupper() and isinstance(value, int)}
#: [s] least time between two warnings about dropped joint states.
WARNING_PERIOD = 5.0


def pose_message(T: np.ndarray) -> Pose:
    """``geometry_msgs/Pose`` of a transform ``(4, 4)``."""
    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = (float(v) for v in T[:3, 3])
    x, y, z, w = (float(v) for v in matrix_to_quat_xyzw(T[:3, :3]))
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = x, y, z, w
    return pose


class WebViewNode(Node):
    """Serves the live web view.

    Attributes:
        server: the viser server (one for the node's life). view: the :class:`RobotView` of the
            current description (None before the first). q: ``(n_q,)`` newest joint values.
        updates: how many times the view was updated from joint states.
    """

    def __init__(self, viser, **kwargs):
        super().__init__('web_view', **kwargs)
        port = self.declare_parameter('port', 8080).value
        host = self.declare_parameter('host', '127.0.0.1').value
        self.prefix = self.declare_parameter('frame_prefix', '').value
        rate = self.declare_parameter('update_rate', 30.0).value
        self.ik_timeout = self.declare_parameter('ik_timeout', 1.0).value
        defaults = DescriptionLimits()
        self.limits = DescriptionLimits(int(self.declare_parameter('max_description_bytes', defaults.max_bytes).value),
                                        int(self.declare_parameter('max_links', defaults.max_links).value))
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError(f'parameter update_rate must be > 0 [Hz], got {rate}')
        if min(self.limits.max_bytes, self.limits.max_links) <= 0:
            raise ValueError(f'parameters max_description_bytes and max_links must be > 0, got '
                             f'{self.limits.max_bytes} and {self.limits.max_links}')
        served = serve(viser, host, port)   # ArgumentError (a ValueError): a bad host or port
        self.server, self.access = served.server, served.access
        self.view: RobotView | None = None
        self.shown_text: str | None = None
        self.names: JointStateMap | None = None
        self.lock = threading.Lock()
        self.q = None
        self.fresh = False
        self.updates = 0
        self.ik_client = self.create_client(GetPositionIK, 'compute_ik',
                                            callback_group=MutuallyExclusiveCallbackGroup())
        self.create_subscription(String, 'robot_description', self._on_description, LATCHED_QOS)
        self.create_subscription(JointState, 'joint_states', self._on_joint_state, qos_profile_sensor_data)
        self.create_timer(1.0 / rate, self._update)
        for line in (served.port_note(), self.access.warning()):
            if line:
                self.get_logger().warning(line)
        self.get_logger().info(f'web view at {self.access.url()} (waiting for /robot_description)')

    def _on_description(self, message: String) -> None:
        text = message.data
        if text == self.shown_text:   # the same description again (a republished latch): nothing to do
            return
        try:
            check_description(text, self.limits)
            model = RobotModel.from_urdf(text)
        except (Rejected, RobokinError) as error:
            self.get_logger().error(f'robot_description rejected, keeping the current view: {error}')
            return
        with self.lock:
            if self.view is not None:
                self.view.remove()
            self.tip_groups = {g.tip: name for name, g in derive_groups(model).groups.items() if g.tip}
            self.view = RobotView(self.server, model, ik=self._compute_ik, interactive=False, collisions=False,
                                  limits=self.limits)
            self.shown_text, self.names = text, JointStateMap(model)
            self.q, self.fresh = model.home_configuration(), True
        self.get_logger().info(f'showing {model.name!r} ({model.n_links} links)')

    def _on_joint_state(self, message: JointState) -> None:
        with self.lock:
            if self.view is None:
                return
            model = self.view.model
            try:
                update = self.names.parse(message.name, message.position)
            except ShapeError:
                self._warn(f'dropped a JointState with {len(message.name)} names but {len(message.position)} '
                           'positions')
                return
            if update.unknown:
                self._warn(f'ignored JointState entries for joints not in robot {model.name!r}: '
                           f'{some_names(update.unknown)}')
            if update.nonfinite:
                self._warn(f'dropped non-finite JointState positions of joints {some_names(update.nonfinite)}')
            if update.q_indices.size == 0:
                return
            q = self.q.copy()
            q[update.q_indices] = update.values
            try:
                model.check_q(q)   # a mimic joint driven past the float range
            except RobokinError as error:
                self._warn(f'dropped a JointState the kinematics cannot evaluate: {error}')
                return
            self.q, self.fresh = q, True

    def _warn(self, text: str) -> None:
        self.get_logger().warning(text, throttle_duration_sec=WARNING_PERIOD)

    def _update(self) -> None:
        with self.lock:
            if self.view is None or not self.fresh:
                return
            self.fresh = False
            try:
                self.view.set_configuration(self.q)
            except (RobokinError, ValueError, ArithmeticError) as error:   # never the timer's end
                self.q = self.view.scene.q.copy()   # the last good state
                self._warn(f'joint state not shown: {error}')
                return
            self.updates += 1

    def _compute_ik(self, tip: str, target: np.ndarray, seed: np.ndarray) -> IKOutcome:
        """The gizmo's IK: a ``/compute_ik`` call (from a viser thread, while the executor spins)."""
        model = self.view.model
        request = GetPositionIK.Request()
        ik = request.ik_request
        ik.group_name = self.tip_groups.get(tip, '')
        ik.ik_link_name = self.prefix + tip
        ik.pose_stamped.header.frame_id = self.prefix + model.root_link
        ik.pose_stamped.pose = pose_message(target)
        seed_values = {name: value for name, value in model.q_to_dict(seed).items() if name in model.joint_names}
        ik.robot_state.joint_state.name = list(seed_values)
        ik.robot_state.joint_state.position = list(seed_values.values())
        ik.timeout.sec, ik.timeout.nanosec = int(self.ik_timeout), int(self.ik_timeout % 1 * 1e9)
        if not self.ik_client.service_is_ready():
            return IKOutcome(None, False, message='/compute_ik is not available (is kin_node running?)')
        done = threading.Event()
        future = self.ik_client.call_async(request)
        future.add_done_callback(lambda _: done.set())
        if not done.wait(self.ik_timeout + 2.0):
            future.cancel()
            return IKOutcome(None, False, message='/compute_ik did not answer in time')
        response = future.result()
        solution = dict(zip(response.solution.joint_state.name, response.solution.joint_state.position))
        code = response.error_code.val
        if code != MoveItErrorCodes.SUCCESS and not solution:
            return IKOutcome(None, False, message=ERROR_NAMES.get(code, str(code)))
        q = model.q_from_dict(solution, base=seed)
        T = forward_kinematics(model, q)[model.link_index(tip)]
        return IKOutcome(q, code == MoveItErrorCodes.SUCCESS, float(np.linalg.norm(T[:3, 3] - target[:3, 3])),
                         float(np.linalg.norm(log_so3(target[:3, :3].T @ T[:3, :3]))),
                         '' if code == MoveItErrorCodes.SUCCESS else ERROR_NAMES.get(code, str(code)))

    def destroy_node(self):
        self.server.stop()
        super().destroy_node()


def main(args=None):
    """Entry point of the ``web_view`` executable (exit code 1 with one line when viser is missing)."""
    try:
        viser = import_viser()
    except WebViewUnavailableError as error:
        print(f'web_view: {error}', flush=True)
        raise SystemExit(1) from None
    rclpy.init(args=args)
    node = executor = None
    try:
        try:
            node = WebViewNode(viser)
        except ValueError as error:   # a bad parameter: one line, exit code 1
            print(f'web_view: {error}', flush=True)
            raise SystemExit(1) from None
        executor = MultiThreadedExecutor(num_threads=2)
        executor.add_node(node)
        executor.spin()
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
