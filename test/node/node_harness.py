"""Harness for the kin_node tests: start the node process, talk to it from an rclpy probe node.

One node process per test module (fixtures with module scope in the test files); the probe
spins in the test thread and every wait polls a condition up to a timeout (no fixed sleeps).
"""

import os
import pathlib
import re
import time

import numpy as np
import yaml
from moveit_msgs.msg import MoveItErrorCodes, RobotState
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from ros_harness import DEFAULT_TIMEOUT, NodeProcess
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

ROOT = pathlib.Path(__file__).resolve().parents[2]
ROBOTS = ROOT / 'robokin_ros' / 'robots'
FIXTURES = ROOT / 'test' / 'fixtures'
NODE_NAME = 'robokin'
# A point no Panda pose reaches (even position-only: the arm's horizontal reach from the shoulder
# is about 1 m) but within its chain's length (1.423 m from panda_link0), so the node's quick
# reach check passes and the solver works until its timeout.
PANDA_UNREACHABLE_XYZ = (1.3, 0.0, 0.333)
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE)
LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)


def robot_xml(name):
    """Text of a bundled robot (``panda``, ``twin_arm_torso``, ``ur5e``)."""
    return (ROBOTS / f'{name}.urdf').read_text()


def set_parameter(node, name, value):
    """Set one parameter of a node in the test process; its ``SetParametersResult``."""
    return node.set_parameters([Parameter(name, value=value)])[0]


def assert_code(response, code, pattern=''):
    """``response.error_code`` is robokin's ``MoveItErrorCodes`` constant ``code``, its message
    matching the regular expression ``pattern``."""
    assert response.error_code.val == getattr(MoveItErrorCodes, code), (response.error_code.val,
                                                                        response.error_code.message)
    assert re.search(pattern, response.error_code.message), response.error_code.message
    assert response.error_code.source == 'robokin'


def robot_state(model, q):
    """A ``moveit_msgs/RobotState`` setting every coordinate of ``model`` to ``q (n_q,)``."""
    return RobotState(joint_state=JointState(name=list(model.q_names), position=[float(v) for v in q]))


def solution_q(model, response):
    """``(n_q,)``: the solution of a /compute_ik response."""
    js = response.solution.joint_state
    return model.q_from_dict(dict(zip(js.name, js.position)))


def write_params(path, **params):
    """Write a parameters file for the ``robokin`` node and return its path."""
    path = pathlib.Path(path)
    path.write_text(yaml.safe_dump({NODE_NAME: {'ros__parameters': params}}))
    return path


class KinNode(NodeProcess):
    """The node as a real process: ``python -m robokin_ros.node.main --ros-args ...``.

    The source tree is put first on PYTHONPATH so the process runs this checkout (the venv holds
    an installed copy too).
    """

    def __init__(self, directory, params=None, ros_args=()):
        directory = pathlib.Path(directory)
        args = ['-m', 'robokin_ros.node.main', '--ros-args']
        if params is not None:
            args += ['--params-file', str(write_params(directory / 'params.yaml', **params))]
        args += list(ros_args)
        env = dict(os.environ)
        env['PYTHONPATH'] = os.pathsep.join([str(ROOT)] + [p for p in [env.get('PYTHONPATH')] if p])
        super().__init__(args, directory / 'kin_node.log', env=env, cwd=str(ROOT))

    def count(self, pattern):
        """Number of output lines matching the regular expression ``pattern``."""
        return len(re.findall(pattern, self.output(), flags=re.MULTILINE))


class Probe:
    """An rclpy node in the test process with subscriptions that record, and waits."""

    def __init__(self, context, name='probe'):
        self.node = Node(f'{name}_{os.getpid()}', context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.watch = ()

    def close(self):
        self.executor.remove_node(self.node)
        self.executor.shutdown()
        self.node.destroy_node()

    def spin_until(self, condition, what, timeout=DEFAULT_TIMEOUT):
        """Spin until ``condition()`` is truthy and return it; fail naming ``what`` on timeout
        (or at once, with its output, if a watched process died)."""
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            for proc in self.watch:
                proc.assert_running()
            if time.monotonic() > deadline:
                raise AssertionError(f'timed out after {timeout} s waiting for {what}')
            self.executor.spin_once(timeout_sec=0.02)

    def spin_for(self, seconds):
        """Spin for ``seconds`` (to collect a stream over a time window, never to wait for a state)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)

    def record(self, msg_type, topic, qos=10):
        """A list that collects every message on ``topic``."""
        messages = []
        self.node.create_subscription(msg_type, topic, messages.append, qos)
        return messages

    def publisher(self, msg_type, topic, qos=10, subscribers=1):
        """A publisher, returned once ``subscribers`` subscriptions matched it."""
        pub = self.node.create_publisher(msg_type, topic, qos)
        self.spin_until(lambda: pub.get_subscription_count() >= subscribers, f'a subscriber on {topic}')
        return pub

    def client(self, srv_type, name):
        """A service client, returned once the server is available."""
        client = self.node.create_client(srv_type, name)
        self.spin_until(client.service_is_ready, f'service {name}')
        return client

    def call(self, client, request, timeout=DEFAULT_TIMEOUT):
        future = client.call_async(request)
        self.spin_until(future.done, f'a response from {client.srv_name}', timeout=timeout)
        return future.result()


class TFListener:
    """Latest transform per (parent, child) from /tf and /tf_static (a minimal tf2 buffer)."""

    def __init__(self, probe):
        self.latest = {}
        self.static = {}
        self.dynamic_messages = []
        probe.node.create_subscription(TFMessage, '/tf', self._on_tf, TF_QOS)
        probe.node.create_subscription(TFMessage, '/tf_static', self._on_static, LATCHED_QOS)

    def _on_tf(self, msg):
        self.dynamic_messages.append(msg)
        for t in msg.transforms:
            self.latest[(t.header.frame_id, t.child_frame_id)] = t

    def _on_static(self, msg):
        for t in msg.transforms:
            self.static[(t.header.frame_id, t.child_frame_id)] = t


def transform_matrix(t):
    """``(4, 4)`` of a TransformStamped."""
    from robokin_ros.spatial import quat_xyzw_to_matrix
    tr, r = t.transform.translation, t.transform.rotation
    T = np.eye(4)
    T[:3, :3] = quat_xyzw_to_matrix([r.x, r.y, r.z, r.w])
    T[:3, 3] = [tr.x, tr.y, tr.z]
    return T


def joint_state(names, positions, stamp=None):
    """A sensor_msgs/JointState."""
    msg = JointState(name=list(names), position=[float(p) for p in positions])
    if stamp is not None:
        msg.header.stamp = stamp
    return msg

