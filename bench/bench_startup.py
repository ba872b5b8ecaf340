"""Start-up of the robokin node: process start -> first /tf_static and first /tf, cold and warm.

For each robot the node is started three times with one kernel cache directory
(``ROBOKIN_CACHE_DIR``): *cold* (the directory is new: nothing generated or compiled yet), then
*warm* twice (what the previous runs left there). Meanwhile this script publishes a JointState
every 5 ms and records when the first /tf_static and the first /tf of the node arrive, measured
from the moment the process was started (Python start, imports, URDF parse, model, kernels).
Also printed: the time to the first /tf of a process that only imports rclpy and answers a
JointState with a TFMessage (the *floor*: what any rclpy node pays before its first message).

Run: ``tools/run_in_env.sh python bench/bench_startup.py [--quick]``.
"""

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / 'bench'))

from bench_node import _env, _robots  # noqa: E402

FLOOR = '''
import rclpy
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage
from geometry_msgs.msg import TransformStamped
rclpy.init()
node = rclpy.create_node('startup_floor')
pub = node.create_publisher(TFMessage, '/tf', 100)
node.create_subscription(JointState, 'joint_states', lambda m: pub.publish(TFMessage(transforms=[TransformStamped()])), 10)
while rclpy.ok():
    rclpy.spin_once(node, timeout_sec=0.1)
'''


class Watcher:
    def __init__(self):
        import rclpy
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from tf2_msgs.msg import TFMessage
        self.rclpy = rclpy
        rclpy.init()
        self.node = rclpy.create_node('bench_startup')
        self.latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.TFMessage = TFMessage
        self.first = {}
        self.pub = self.node.create_publisher(JointState, '/joint_states', 10)
        self.JointState = JointState

    def run(self, args, env, names, positions, timeout=120.0, stop_at_tf=False):
        """Seconds from start to the first /tf_static and /tf of the process ``args``."""
        self.first.clear()
        # Fresh subscriptions per run: the latched /tf_static of the previous process must not count.
        pid = []
        subscriptions = [
            self.node.create_subscription(self.TFMessage, '/tf', lambda m: self._seen('tf', pid), 100),
            self.node.create_subscription(self.TFMessage, '/tf_static', lambda m: self._seen('tf_static', pid),
                                          self.latched)]
        msg = self.JointState(name=names, position=positions)
        with open(os.devnull, 'wb') as devnull:
            start = time.perf_counter()
            proc = subprocess.Popen([sys.executable, *args], env=env, stdout=devnull, stderr=devnull)
            pid.append(proc.pid)
            try:
                while not {'tf', 'tf_static'} <= set(self.first) and not (stop_at_tf and 'tf' in self.first):
                    if time.perf_counter() - start > timeout:
                        raise RuntimeError(f'no /tf or /tf_static within {timeout} s from {args}')
                    msg.header.stamp = self.node.get_clock().now().to_msg()
                    self.pub.publish(msg)
                    end = time.perf_counter() + 0.005
                    while time.perf_counter() < end:
                        self.rclpy.spin_once(self.node, timeout_sec=0.001)
            finally:
                proc.terminate()
                proc.wait(timeout=20)
                for subscription in subscriptions:
                    self.node.destroy_subscription(subscription)
        return {k: t - start for k, t in self.first.items()}

    def _seen(self, what, pid):
        if pid:  # ignore what arrives before the process exists (a previous process's last messages)
            self.first.setdefault(what, time.perf_counter())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true', help='the first robot only')
    args = parser.parse_args()
    from robokin_ros import RobotModel
    watcher = Watcher()
    floor = watcher.run(['-c', FLOOR], _env(), ['j'], [0.0], stop_at_tf=True)
    print(f'floor (rclpy node answering a JointState): first /tf after {floor["tf"]:.2f} s')
    print('\n| robot | links | run | first /tf_static [s] | first /tf [s] |')
    print('|---|---|---|---|---|')
    robots = _robots()
    for label, urdf in robots[-1:] if args.quick else robots:
        model = RobotModel.from_urdf_file(urdf)
        with tempfile.TemporaryDirectory(prefix='robokin_cache.') as cache:
            env = dict(_env(), ROBOKIN_CACHE_DIR=cache)
            node = ['-m', 'robokin_ros.node.main', '--ros-args', '-p', f'description_file:={urdf}']
            for run in ('cold', 'warm', 'warm'):
                t = watcher.run(node, env, list(model.joint_names), model.home_configuration().tolist())
                print(f'| {label} | {model.n_links} | {run} | {t["tf_static"]:.2f} | {t["tf"]:.2f} |',
                      flush=True)
    watcher.node.destroy_node()
    watcher.rclpy.try_shutdown()


if __name__ == '__main__':
    main()
