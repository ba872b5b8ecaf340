"""Benchmark: how many of 2,000 joint states at 1 kHz the node turns into /tf while it serves 50
IK calls (issue 33 item 4; issue 41: this figure was asserted by a test, ``>= 99 %``, which failed
on a busy machine at 97.1 %; the test now checks the outcome: every /tf that comes back is its
joint state's, and /tf flows during the calls: ``test/node/test_node_tf_delivery.py``).

Counted by the node itself (``publish_stats``: its ``~/stats`` count of /tf messages published,
``ignore_timestamp``: each joint state publishes /tf), so a reader too slow to take all 2,000 does
not count against the node. Each trial starts ``kin_node`` (this checkout, ``executor: events``),
calls ``/compute_ik`` 50 times on an unreachable pose (each runs to its 120 ms timeout: ~3 s on
the two IK threads) and meanwhile publishes 2,000 joint states at 1 kHz.

Run: ``tools/run_in_env.sh python bench/bench_tf_during_ik.py [--trials 3] [--busy 2]``
(``--busy N``: N processes spinning on a core each while the trials run). The figure depends on
the machine and its load.
"""

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / 'test' / 'node')]

CALLS = 50
RATE = 1000.0   # [Hz]
STATES = 2000
IK_TIMEOUT = 0.12   # [s] (50 calls on 2 threads: ~3 s, past the 2 s burst)


def trial(context, directory, executor='events'):
    """One run: (fraction of the joint states the node published /tf for, IK calls still pending
    when the last joint state was sent)."""
    from builtin_interfaces.msg import Duration, Time
    from moveit_msgs.srv import GetPositionIK
    from node_harness import PANDA_UNREACHABLE_XYZ, KinNode, Probe, joint_state, robot_xml
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    from robokin_ros import RobotModel

    panda = RobotModel.from_urdf(robot_xml('panda'))
    proc = KinNode(directory, params={'robot_description': robot_xml('panda'), 'ignore_timestamp': True,
                                      'executor': executor, 'ik_max_iterations': 1_000_000_000, 'publish_stats': True})
    probe = Probe(context, 'bench_tf_during_ik')
    probe.watch = (proc,)
    try:
        stats = []
        probe.node.create_subscription(String, '/robokin/stats', lambda m: stats.append(json.loads(m.data)), 10)
        publisher = probe.publisher(JointState, '/joint_states', qos=QoSProfile(depth=100))
        client = probe.node.create_client(GetPositionIK, '/compute_ik', qos_profile=QoSProfile(depth=CALLS))
        probe.spin_until(client.service_is_ready, '/compute_ik')
        q = panda.home_configuration()
        probe.spin_until(lambda: (publisher.publish(joint_state(panda.joint_names, q, Time(sec=1))) or
                                  probe.spin_for(0.01) or stats and stats[-1]['tf'] > 0), 'the first /tf')
        probe.spin_until(lambda: len(stats) >= 2 and stats[-1]['tf'] == stats[-2]['tf'], 'a quiet ~/stats')
        before = stats[-1]['tf']
        request = GetPositionIK.Request()
        pose = request.ik_request.pose_stamped.pose
        (pose.position.x, pose.position.y, pose.position.z), pose.orientation.w = PANDA_UNREACHABLE_XYZ, 1.0
        request.ik_request.ik_link_name = 'panda_hand_tcp'
        request.ik_request.timeout = Duration(nanosec=int(IK_TIMEOUT * 1e9))
        warm = client.call_async(request)   # (the node's first IK call loads its kernels: not during the burst)
        probe.spin_until(warm.done, 'a first IK answer')
        calls = [client.call_async(request) for _ in range(CALLS)]
        start = time.perf_counter()
        for k in range(STATES):
            probe.executor.spin_once(timeout_sec=0)   # at least once: the IK answers come meanwhile
            while (wait := start + k / RATE - time.perf_counter()) > 0:
                probe.executor.spin_once(timeout_sec=wait)
            publisher.publish(joint_state(panda.joint_names, q, Time(sec=10 + k // 1000, nanosec=(k % 1000) * 1000)))
        busy = sum(not c.done() for c in calls)
        probe.spin_until(lambda: all(c.done() for c in calls), 'the IK answers', timeout=60)
        count = len(stats)
        probe.spin_until(lambda: len(stats) >= count + 2 and stats[-1]['tf'] == stats[-2]['tf'], 'a quiet ~/stats')
        return (stats[-1]['tf'] - before) / STATES, busy
    finally:
        probe.close()
        proc.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--trials', type=int, default=3)
    parser.add_argument('--busy', type=int, default=0, help='processes spinning on a core each meanwhile')
    args = parser.parse_args()
    import rclpy
    from rclpy.context import Context

    context = Context()
    rclpy.init(context=context)
    spinners = [subprocess.Popen(['sh', '-c', 'while :; do :; done']) for _ in range(args.busy)]  # noqa: S607
    try:
        with tempfile.TemporaryDirectory() as directory:
            for n in range(args.trials):
                delivered, pending = trial(context, pathlib.Path(directory))
                print(f'trial {n + 1}: {delivered:.1%} of {STATES} joint states published on /tf '
                      f'({pending} of {CALLS} IK calls pending when the last was sent; {args.busy} busy processes; '
                      f'{os.cpu_count()} cores)', flush=True)
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
        rclpy.shutdown(context=context)


if __name__ == '__main__':
    main()
