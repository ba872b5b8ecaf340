"""Benchmark of the robokin node as a process: joint states in, /tf out.

For each robot it starts ``kin_node`` (``ignore_timestamp``: every joint state becomes a /tf
message; ``publish_stats``: the node reports its callback durations) with each ``executor``
(``events``, ``threads``) and, as the peer, a *floor* node in the same run: a node that turns each
JointState into a TFMessage of the same size without any kinematics (pre-built transforms, stamp
copied), i.e. the cost of rclpy alone, on an EventsExecutor and on a SingleThreadedExecutor. The
/tf messages are counted by a process of their own on an EventsExecutor (receiving in this
script's loop was the bound at 1 kHz before).
At doubling rates it streams pre-built JointStates for a few seconds and measures:

* delivered: /tf messages received / joint states sent (a raw subscription, so the bench does
  not pay for deserialisation); a rate is *sustained* when >= 99 % arrive;
* end-to-end latency: /tf arrival - JointState stamp (the stamp read from the raw CDR bytes);
* node callback duration p50 / p99 (measured inside the node: parse, FK, message, publish);
* node CPU share (of one core) from /proc/<pid>/stat;
* /compute_ik round trip (seed near the solution) on the bundled robots.

Run: ``tools/run_in_env.sh python bench/bench_node.py [--quick]``. Numbers depend on the load of
the machine: both processes and this script share its cores.
"""

import argparse
import json
import os
import pathlib
import signal
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RATES = (250, 500, 1000, 2000, 4000)
PHASE_SECONDS = 3.0


def _robots():
    robots = [('panda (7-DOF arm + gripper)', ROOT / 'robokin_ros/robots/panda.urdf'),
              ('twin_arm_torso (16-DOF tree)', ROOT / 'robokin_ros/robots/twin_arm_torso.urdf')]
    try:
        sys.path.insert(0, str(ROOT / 'test'))
        from peers import erd_urdf
        robots.append(('talos_reduced (32-DOF tree)', pathlib.Path(erd_urdf('talos_data/robots/talos_reduced.urdf'))))
    except (ImportError, OSError, KeyError) as e:
        print(f'(talos skipped: {e})')
    return robots


# ----------------------------------------------------------------------------------- floor node
def floor_node(urdf_path, executor_kind):
    """The peer: JointState in, TFMessage out (same transforms count), no kinematics; on a
    SingleThreadedExecutor ('threads') or rclpy's EventsExecutor ('events')."""
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from sensor_msgs.msg import JointState
    from tf2_msgs.msg import TFMessage

    from robokin_ros import RobotModel
    from robokin_ros.node.conversions import TransformBatch
    from robokin_ros.node.kinematics_node import JOINT_STATES_QOS, TF_QOS

    model = RobotModel.from_urdf_file(urdf_path)
    movable = np.flatnonzero(~model.is_fixed)
    batch = TransformBatch([model.link_names[model.link_parents[j + 1]] for j in movable],
                           [model.link_names[j + 1] for j in movable])
    rows, T = np.arange(movable.size), np.tile(np.eye(4), (movable.size, 1, 1))
    rclpy.init()
    node = rclpy.create_node('floor')
    pub = node.create_publisher(TFMessage, '/tf', TF_QOS)

    def on_joint_state(msg):
        pub.publish(TFMessage(transforms=batch.fill(rows, T, msg.header.stamp)))
    node.create_subscription(JointState, 'joint_states', on_joint_state, JOINT_STATES_QOS)
    if executor_kind == 'events':
        from rclpy.experimental import EventsExecutor
        executor = EventsExecutor()
    else:
        executor = SingleThreadedExecutor()
    executor.add_node(node)
    try:
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


# ----------------------------------------------------------------------------------- counter
def counter():
    """The receiving end, a process of its own on an EventsExecutor (so that receiving is never
    the bound): per line ``<seconds>`` on stdin, counts the /tf messages of the next ``seconds``
    and prints ``count lat50 lat99`` (end-to-end latency [ms]: arrival - the first transform's
    stamp, read from the raw CDR bytes)."""
    import rclpy
    from rclpy.experimental import EventsExecutor
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from tf2_msgs.msg import TFMessage
    rclpy.init()
    node = rclpy.create_node('bench_counter')
    arrivals = []

    def on_tf(data):
        sec, nanosec = struct.unpack_from('<iI', data, 8)  # CDR header, sequence length, first stamp
        arrivals.append(time.time_ns() - (sec * 1_000_000_000 + nanosec))
    node.create_subscription(TFMessage, '/tf', on_tf, QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE),
                             raw=True)
    executor = EventsExecutor()
    executor.add_node(node)
    print('ready', flush=True)
    for line in sys.stdin:
        end = time.monotonic() + float(line)
        arrivals.clear()
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
        latency = np.array(arrivals) * 1e-6
        p50, p99 = (np.percentile(latency, 50), np.percentile(latency, 99)) if latency.size else (np.nan, np.nan)
        print(f'{len(arrivals)} {p50} {p99}', flush=True)
    node.destroy_node()
    rclpy.try_shutdown()


# ----------------------------------------------------------------------------------- measuring
def _cpu_seconds(pid):
    fields = pathlib.Path(f'/proc/{pid}/stat').read_text().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


class Bench:
    def __init__(self):
        import rclpy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String

        self.rclpy = rclpy
        rclpy.init()
        self.node = rclpy.create_node('bench_node')
        self.stats = []
        self.counter = subprocess.Popen([sys.executable, __file__, '--counter'], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=_env())
        if self.counter.stdout.readline().strip() != 'ready':
            raise RuntimeError('the /tf counter did not start')
        self.node.create_subscription(String, '/robokin/stats', lambda m: self.stats.append(json.loads(m.data)), 10)
        self.pub = self.node.create_publisher(JointState, '/joint_states', 1000)
        self.JointState = JointState

    def spin_until(self, condition, what, timeout=30.0):
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise RuntimeError(f'timed out waiting for {what}')
            self.rclpy.spin_once(self.node, timeout_sec=0.01)

    def drain(self, seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.rclpy.spin_once(self.node, timeout_sec=0.01)

    def phase(self, model, rate, pid):
        """Stream at ``rate`` Hz for PHASE_SECONDS; return the measurements."""
        rng = np.random.default_rng(0)
        messages = [self.JointState(name=list(model.joint_names), position=model.random_configuration(rng=rng).tolist())
                    for _ in range(64)]
        self.drain(0.3)
        self.stats.clear()
        self.counter.stdin.write(f'{PHASE_SECONDS + 1.5}\n')   # counts while we send, and 1.5 s more
        self.counter.stdin.flush()
        time.sleep(0.1)
        cpu0, wall0 = _cpu_seconds(pid), time.monotonic()
        n = int(rate * PHASE_SECONDS)
        start = time.perf_counter()
        k = 0
        while k < n:  # publish what is due, then sleep: the bench must not burn a core the node needs
            due = min(n, int((time.perf_counter() - start) * rate) + 1)
            for i in range(k, due):
                msg = messages[i % len(messages)]
                now = time.time_ns()
                msg.header.stamp.sec, msg.header.stamp.nanosec = now // 1_000_000_000, now % 1_000_000_000
                self.pub.publish(msg)
            k = due
            time.sleep(0.0005)
        sent_seconds = time.perf_counter() - start
        cpu = (_cpu_seconds(pid) - cpu0) / (time.monotonic() - wall0)
        self.drain(1.5)   # the next stats message arrives; the counter sees the queues empty
        count, lat50, lat99 = self.counter.stdout.readline().split()
        durations = np.array([d for s in self.stats for d in s['durations_us']])
        return {'rate': rate, 'achieved': n / sent_seconds, 'delivered': int(count) / n, 'cpu': cpu,
                'lat50': float(lat50), 'lat99': float(lat99),
                'cb50': np.percentile(durations, 50) if durations.size else np.nan,
                'cb99': np.percentile(durations, 99) if durations.size else np.nan}

    def close(self):
        self.counter.stdin.close()
        self.counter.wait(timeout=10)
        self.node.destroy_node()
        self.rclpy.try_shutdown()


def _env():
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT)] + [p for p in [env.get('PYTHONPATH')] if p])
    return env


def _start(args, directory, name):
    log = open(directory / f'{name}.log', 'wb')
    return subprocess.Popen([sys.executable, *args], stdout=log, stderr=subprocess.STDOUT, env=_env()), log


def _stop(proc, log):
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    log.close()


#: (label, how it is started) of the nodes compared per robot.
NODES = ('robokin events', 'robokin threads', 'floor events', 'floor threads')


def _node_args(who, urdf, directory, publish_every=True):
    if who.startswith('floor'):
        return [__file__, '--floor-node', str(urdf), who.split()[1]]
    params = directory / 'params.yaml'
    params.write_text(yaml.safe_dump({'robokin': {'ros__parameters': {
        'robot_description': urdf.read_text(), 'ignore_timestamp': publish_every, 'publish_stats': True,
        'executor': who.split()[1]}}}))
    return ['-m', 'robokin_ros.node.main', '--ros-args', '--params-file', str(params)]


def run_robot(bench, label, urdf, rates, directory):
    from robokin_ros import RobotModel
    model = RobotModel.from_urdf_file(urdf)
    rows = []
    for who in NODES:
        proc, log = _start(_node_args(who, urdf, directory), directory, who.replace(' ', '_'))
        try:
            bench.spin_until(lambda: bench.pub.get_subscription_count() >= 1, f'the {who} node')
            if who.startswith('robokin'):
                bench.spin_until(lambda: bench.stats, 'node stats')
            bench.drain(0.5)
            for rate in rates:
                r = bench.phase(model, rate, proc.pid)
                r.update(robot=label, node=who, dof=model.n_q, transforms=int((~model.is_fixed).sum()))
                rows.append(r)
                print(f'  {label:<30} {who:<16} {rate:>5} Hz: delivered {r["delivered"]:6.1%}  latency p50/p99 '
                      f'{r["lat50"]:6.2f}/{r["lat99"]:6.2f} ms  callback p50/p99 {r["cb50"]:6.0f}/{r["cb99"]:6.0f} us  '
                      f'cpu {r["cpu"]:5.0%}', flush=True)
                if r['delivered'] < 0.9:
                    break
        finally:
            _stop(proc, log)
    return rows


def cpu_at_default_frequency(bench, urdf, directory, rate=1000):
    """CPU share of the robokin node (each executor) with 1 kHz joint states and the default
    publish_frequency of 20 Hz (robot_state_publisher's usual setting): /tf at 20 Hz."""
    from robokin_ros import RobotModel
    model = RobotModel.from_urdf_file(urdf)
    result = {}
    for who in ('robokin events', 'robokin threads'):
        proc, log = _start(_node_args(who, urdf, directory, publish_every=False), directory, who.replace(' ', '_') + '_20hz')
        try:
            bench.spin_until(lambda: bench.pub.get_subscription_count() >= 1, f'the {who} node')
            bench.spin_until(lambda: bench.stats, 'node stats')
            r = bench.phase(model, rate, proc.pid)
            result[who] = (r['cpu'], r['delivered'] * rate)
        finally:
            _stop(proc, log)
    return result


def ik_round_trips(bench, directory, calls):
    """Median and p90 of /compute_ik round trips [ms] on the panda (seed near the solution)."""
    from geometry_msgs.msg import PoseStamped
    from moveit_msgs.msg import MoveItErrorCodes
    from moveit_msgs.srv import GetPositionIK

    from robokin_ros import RobotModel, frame_transform
    from robokin_ros.node.conversions import matrix_to_pose
    urdf = ROOT / 'robokin_ros/robots/panda.urdf'
    model = RobotModel.from_urdf_file(urdf)
    params = directory / 'ik.yaml'
    params.write_text(yaml.safe_dump({'robokin': {'ros__parameters': {
        'robot_description': urdf.read_text(), 'ik_group_names': ['arm'],
        'ik_groups': {'arm': {'base': 'panda_link0', 'tip': 'panda_hand_tcp'}}}}}))
    proc, log = _start(['-m', 'robokin_ros.node.main', '--ros-args', '--params-file', str(params)], directory, 'ik')
    client = bench.node.create_client(GetPositionIK, '/compute_ik')
    times, solved = [], 0
    try:
        bench.spin_until(client.service_is_ready, '/compute_ik')
        rng = np.random.default_rng(1)
        for _k in range(calls):
            q = model.random_configuration(rng=rng)
            req = GetPositionIK.Request()
            req.ik_request.pose_stamped = PoseStamped(pose=matrix_to_pose(frame_transform(model, q, 'panda_link0', 'panda_hand_tcp')))
            req.ik_request.robot_state.joint_state.name = list(model.joint_names)
            req.ik_request.robot_state.joint_state.position = model.clamp(q + 0.1 * rng.standard_normal(q.shape)).tolist()
            req.ik_request.timeout.sec = 1
            t0 = time.perf_counter()
            future = client.call_async(req)
            bench.spin_until(future.done, 'an IK answer')
            times.append((time.perf_counter() - t0) * 1e3)
            solved += future.result().error_code.val == MoveItErrorCodes.SUCCESS
    finally:
        bench.node.destroy_client(client)
        _stop(proc, log)
    return np.percentile(times, 50), np.percentile(times, 90), solved, calls


def callback_cost(urdf, repeats):
    """Median / p99 [us] of the node's joint-state callback called directly (no DDS in the loop)."""
    import rclpy
    from rclpy.context import Context
    from sensor_msgs.msg import JointState

    from robokin_ros import RobotModel
    from robokin_ros.node.kinematics_node import KinematicsNode
    model = RobotModel.from_urdf_file(urdf)
    context = Context()
    rclpy.init(context=context, args=['--ros-args', '-p', 'ignore_timestamp:=true', '-r', '__node:=bench_cost'])
    node = KinematicsNode(context=context)
    try:
        node.robot_swap.load(urdf.read_text(), 'bench')
        rng = np.random.default_rng(2)
        messages = [JointState(name=list(model.joint_names), position=model.random_configuration(rng=rng).tolist())
                    for _ in range(64)]
        times = []
        for k in range(repeats):
            msg = messages[k % 64]
            msg.header.stamp.sec = k + 1
            t0 = time.perf_counter_ns()
            node.state_publisher.on_joint_state(msg)
            times.append((time.perf_counter_ns() - t0) * 1e-3)
        return np.percentile(times, 50), np.percentile(times, 99)
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=context)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--floor-node', nargs=2, help=argparse.SUPPRESS)
    parser.add_argument('--counter', action='store_true', help=argparse.SUPPRESS)
    parser.add_argument('--quick', action='store_true', help='fewer rates and IK calls (while developing)')
    args = parser.parse_args()
    if args.floor_node:
        floor_node(*args.floor_node)
        return
    if args.counter:
        counter()
        return
    if os.environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE') != 'LOCALHOST':
        sys.exit('run through tools/run_in_env.sh (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST)')
    rates = RATES[1:4] if args.quick else RATES
    print('joint-state callback called in-process (parse, FK, /tf message, publish; no DDS delivery):')
    for label, urdf in _robots():
        p50, p99 = callback_cost(urdf, 500 if args.quick else 3000)
        print(f'  {label:<30} p50 {p50:6.0f} us  p99 {p99:6.0f} us  -> at most {1e6 / p50:6.0f} joint states/s per core')
    bench = Bench()
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix='bench_node.') as tmp:
            for label, urdf in _robots():
                rows += run_robot(bench, label, urdf, rates, pathlib.Path(tmp))
            ik = ik_round_trips(bench, pathlib.Path(tmp), 10 if args.quick else 40)
            panda = _robots()[0]
            default_rate = cpu_at_default_frequency(bench, panda[1], pathlib.Path(tmp))
    finally:
        bench.close()
    print('\n| robot | node | DOF | /tf transforms | highest sustained rate [Hz] (>= 99 % delivered) | at that rate: callback p50 / p99 [us] | e2e latency p50 / p99 [ms] | CPU [% of a core] |')
    print('|---|---|---|---|---|---|---|---|')
    for robot in dict.fromkeys(r['robot'] for r in rows):
        for who in NODES:
            mine = [r for r in rows if r['robot'] == robot and r['node'] == who]
            ok = [r for r in mine if r['delivered'] >= 0.99]
            best = max(ok, key=lambda r: r['rate']) if ok else None
            if best is None:
                print(f'| {robot} | {who} | {mine[0]["dof"]} | {mine[0]["transforms"]} | < {mine[0]["rate"]} | | | |')
                continue
            cb = f'{best["cb50"]:.0f} / {best["cb99"]:.0f}' if who.startswith('robokin') else 'n/a'
            print(f'| {robot} | {who} | {best["dof"]} | {best["transforms"]} | {best["rate"]} | {cb} | '
                  f'{best["lat50"]:.2f} / {best["lat99"]:.2f} | {best["cpu"]:.0%} |')
    print(f'\n{panda[0]}, 1 kHz joint states, default publish_frequency 20 Hz: ' + ', '.join(
        f'{who}: CPU {cpu:.0%} of a core, /tf {tf:.0f} Hz' for who, (cpu, tf) in default_rate.items()))
    print(f'\n/compute_ik round trip (panda, seed within ~0.1 rad): median {ik[0]:.1f} ms, p90 {ik[1]:.1f} ms, '
          f'{ik[2]}/{ik[3]} solved')


if __name__ == '__main__':
    main()
