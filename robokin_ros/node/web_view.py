"""The ``web_view`` node: the live robot in a browser, from ``/robot_description`` and ``/joint_states``.

    ros2 run robokin_ros web_view --ros-args -p port:=8080 -p frame_prefix:=r1/
    ros2 launch robokin_ros kin.launch.py use_web_view:=true

The view is :class:`robokin_ros.web.RobotView` without its own configuration: joint states
move it (applied by a timer at ``update_rate`` Hz, the newest state only), the sliders only show
values, and the IK gizmo calls the kinematics node's ``/compute_ik`` (so what the user drags is
what clients get); the answer shows as a frame at the solution's tip pose with its residual. A
new description replaces the view; a bad one is logged and the old view stays.

Parameters: ``port`` (8080; the next free one if taken, 0: any), ``host`` (``127.0.0.1``),
``frame_prefix`` (the kinematics node's, used in the IK requests), ``update_rate`` [Hz] (30),
``ik_timeout`` [s] (1.0, the service call's budget).
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

from ..errors import RobokinError
from ..kinematics import forward_kinematics
from ..model import RobotModel
from ..model.groups import derive_groups
from ..spatial import log_so3, matrix_to_quat_xyzw
from ..web import IKOutcome, RobotView, WebViewUnavailableError, import_viser

LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
ERROR_NAMES = {value: name for name, value in vars(MoveItErrorCodes).items()
               if name.isupper() and isinstance(value, int)}


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
        if not (math.isfinite(rate) and rate > 0):
            raise ValueError(f'parameter update_rate must be > 0 [Hz], got {rate}')
        self.server = viser.ViserServer(host=host, port=port, verbose=False)
        self.view: RobotView | None = None
        self.lock = threading.Lock()
        self.q = None
        self.fresh = False
        self.updates = 0
        self.ik_client = self.create_client(GetPositionIK, 'compute_ik',
                                            callback_group=MutuallyExclusiveCallbackGroup())
        self.create_subscription(String, 'robot_description', self._on_description, LATCHED_QOS)
        self.create_subscription(JointState, 'joint_states', self._on_joint_state, qos_profile_sensor_data)
        self.create_timer(1.0 / rate, self._update)
        self.get_logger().info(f'web view at http://{"localhost" if host in ("127.0.0.1", "0.0.0.0") else host}:'
                               f'{self.server.get_port()} (waiting for /robot_description)')

    def _on_description(self, message: String) -> None:
        try:
            model = RobotModel.from_urdf(message.data)
        except RobokinError as error:
            self.get_logger().error(f'robot_description rejected, keeping the current view: {error}')
            return
        with self.lock:
            if self.view is not None:
                self.view.remove()
            self.tip_groups = {g.tip: name for name, g in derive_groups(model).groups.items() if g.tip}
            self.view = RobotView(self.server, model, ik=self._compute_ik, interactive=False, collisions=False)
            self.q, self.fresh = model.home_configuration(), True
        self.get_logger().info(f'showing {model.name!r} ({model.n_links} links)')

    def _on_joint_state(self, message: JointState) -> None:
        with self.lock:
            if self.view is None:
                return
            try:
                self.q = self.view.model.q_from_dict(dict(zip(message.name, message.position)), base=self.q)
            except RobokinError as error:
                self.get_logger().warning(f'joint state dropped: {error}', throttle_duration_sec=5.0)
                return
            self.fresh = True

    def _update(self) -> None:
        with self.lock:
            if self.view is None or not self.fresh:
                return
            self.fresh = False
            self.view.set_configuration(self.q)
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
