"""What a JointState makes: /tf, the Jacobians, the gravity torques and the node's statistics.

:class:`StatePublisher` is the node's joint-state callback (on the spinning thread: the node's
default, mutually exclusive group) and the publishers it feeds: the movable joints' transforms
on /tf (rate-limited by ``publish_frequency`` per joint, by message stamp), a Jacobian per
``jacobian_frames`` link on ``~/jacobian/<link>`` and the gravity torques on
``~/gravity_torques`` once every joint has a state (each only while it has a subscriber), and
one ``~/stats`` message a second. A message it cannot use is dropped with a warning, throttled
per kind by ``warning_period``.
"""

from __future__ import annotations

import json
import threading
import time

import numpy as np
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from ..dynamics import gravity_torques
from ..errors import RobokinError, ShapeError
from ..kinematics import forward_kinematics, jacobian, joint_poses
from .conversions import jacobian_layout, jacobian_to_msg, ns_to_stamp, some_names, stamp_to_ns, topic_token
from .live_robot import NEVER_NS, LiveRobot
from .log_limits import cap_text

#: What a JointState the kernels cannot evaluate raises (e.g. a mimic joint driven to inf).
KERNEL_ERRORS = (RobokinError, ValueError, ArithmeticError)


class StatePublisher:
    """The joint states of ``node``'s live robot in, its transforms and derived topics out.

    Args:
        node: the node (its ``robot`` and ``settings`` are read at each message: a new
            description or a parameter change replaces them).
        tf: the /tf publisher.
        gravity: the ``~/gravity_torques`` publisher.
        stats: the ``~/stats`` publisher (None: parameter publish_stats is false).
    """

    def __init__(self, node: Node, tf, gravity, stats):
        self._node = node
        self._tf_pub, self._gravity_pub, self._stats_pub = tf, gravity, stats
        self._jacobian_pubs: dict[str, object] = {}
        # (model, [(link, publisher, layout)]): the Jacobians published for that model; read by the
        # joint-state callback and replaced by a reload on the loader thread, under the lock
        self._jacobian_frames: tuple[object, list[tuple[str, object, object]]] = (None, [])
        self._jacobian_lock = threading.Lock()
        self._warned: dict[tuple, int] = {}
        self._last_callback_ns = 0
        self._durations_us: list[float] = []
        self._counts = {'joint_states': 0, 'tf': 0}

    def sync_jacobians(self) -> None:
        """Create and destroy the ``~/jacobian/<link>`` publishers to match the live robot and the
        Jacobian parameters (``publish_jacobians``, ``jacobian_frames``, ``jacobian_reference``)."""
        node = self._node
        robot, settings = node.robot, node.settings
        if robot is None:
            return
        model = robot.model
        wanted = []
        if settings.publish_jacobians:
            names = list(settings.jacobian_frames) or list(model.leaf_links)
            missing = [n for n in names if n not in model.link_names]
            if missing:
                node.get_logger().warning(f'jacobian_frames not in robot {model.name!r}, skipped: {missing}')
            wanted = [n for n in names if n in model.link_names]
        with self._jacobian_lock:   # (the joint-state callback never publishes on a destroyed publisher)
            for name in set(self._jacobian_pubs) - set(wanted):
                node.destroy_publisher(self._jacobian_pubs.pop(name))
            frames = []
            for name in wanted:
                if name not in self._jacobian_pubs:
                    self._jacobian_pubs[name] = node.create_publisher(
                        Float64MultiArray, f'~/jacobian/{topic_token(name)}', 10)
                layout = jacobian_layout(robot.prefix + name, settings.reference.value, model.v_names)
                frames.append((name, self._jacobian_pubs[name], layout))
            self._jacobian_frames = (model, frames)

    def on_joint_state(self, msg: JointState) -> None:
        """The joint-state callback (timed for ``~/stats``)."""
        start = time.perf_counter_ns()
        self._handle_joint_state(msg)
        if self._stats_pub is not None:
            self._durations_us.append((time.perf_counter_ns() - start) * 1e-3)

    def publish_stats(self) -> None:
        """Publish the message counts and callback durations [us] since the last call on ``~/stats``."""
        durations, self._durations_us = self._durations_us, []
        stats = dict(self._counts, durations_us=[round(d, 1) for d in durations])
        self._stats_pub.publish(String(data=json.dumps(stats)))

    def _warn(self, key: tuple, text: str) -> None:
        """Log ``text`` unless the same ``key`` was logged less than ``warning_period`` ago."""
        last = self._warned.get(key)
        now = self._last_callback_ns
        period_ns = self._node.settings.warning_period_ns
        if last is not None and now - last < period_ns:
            return
        if len(self._warned) > 256:
            self._warned.clear()
        self._warned[key] = now
        period = period_ns * 1e-9
        self._node.get_logger().warning(f'{cap_text(text)} (repeats suppressed for {period:g} s)')

    def _handle_joint_state(self, msg: JointState) -> None:
        node = self._node
        robot = node.robot
        if robot is None:
            return
        now = node.get_clock().now().nanoseconds
        if now < self._last_callback_ns:
            node.get_logger().warning('time moved backwards (bag replay?): rate limits and warning throttling reset')
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
        settings = node.settings
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
        model, settings = robot.model, self._node.settings
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
