"""Benchmark: N states through /check_state_validity_multiple in one call vs N single
/check_state_validity calls, over DDS to a kin_node process (Panda: its collision geometry pairs
on different links minus those sampled as never or always in collision, two joint constraints;
random states, some in self-collision, some outside the joint constraints). The warm-up checks
more than MIN_BATCH (256) states, so the node has loaded its compiled collision check when the
timing starts (a fresh node's first large batch runs on numpy while it loads).

The peer is the single-state service the same node serves, called one state at a time, as a
client without the multi-state service does. The multi-state call's time includes building and
sending its request (N JointStates) and the answer; each single call's its own round trip. The
verdict is checked: the multi-state answer is ``all(single answers)``, and on the valid states
alone it is true.

Run: ``tools/run_in_env.sh python bench/bench_multi_state_validity.py [--states 10000]
[--singles 10000] [--no-collision]`` (``--singles`` < ``--states`` times that many and scales to N; the output
says so). Numbers depend on the load of the machine: the node and this script share its cores.
"""

import argparse
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def start_node(directory, collision=True):
    import re

    import yaml
    params = directory / 'params.yaml'
    xml = (ROOT / 'robokin_ros' / 'robots' / 'panda.urdf').read_text()
    if not collision:
        xml = re.sub(r'<collision\b.*?</collision>', '', xml, flags=re.S)
    params.write_text(yaml.safe_dump({'robokin': {'ros__parameters': {'robot_description': xml}}}))
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([str(ROOT)] + [p for p in [env.get('PYTHONPATH')] if p])
    log = open(directory / 'kin_node.log', 'wb')
    proc = subprocess.Popen([sys.executable, '-m', 'robokin_ros.node.main', '--ros-args', '--params-file',
                             str(params)], stdout=log, stderr=subprocess.STDOUT, env=env)
    return proc, log


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--states', type=int, default=10_000)
    parser.add_argument('--singles', type=int, default=10_000)
    parser.add_argument('--no-collision', action='store_true', help='the Panda without collision geometry '
                        '(joint constraints only: what the service costs besides the collision check)')
    args = parser.parse_args()

    import rclpy
    from moveit_msgs.msg import JointConstraint, RobotState
    from moveit_msgs.srv import GetMultiStateValidity, GetStateValidity
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState

    from robokin_ros import RobotModel

    model = RobotModel.from_urdf((ROOT / 'robokin_ros' / 'robots' / 'panda.urdf').read_text())
    Q = model.random_configuration(args.states, rng=2026)
    names = list(model.q_names)
    constraints = [JointConstraint(joint_name='panda_joint1', position=0.0, tolerance_above=2.5, tolerance_below=2.5),
                   JointConstraint(joint_name='panda_joint4', position=-1.5, tolerance_above=1.4, tolerance_below=1.4)]
    rclpy.init()
    node = rclpy.create_node(f'bench_multi_state_{os.getpid()}')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    directory = pathlib.Path(tempfile.mkdtemp(prefix='bench_multi_state_'))
    proc, log = start_node(directory, collision=not args.no_collision)
    try:
        single = node.create_client(GetStateValidity, '/check_state_validity')
        multi = node.create_client(GetMultiStateValidity, '/check_state_validity_multiple')

        def call(client, request, timeout=600.0):
            future = client.call_async(request)
            deadline = time.monotonic() + timeout
            while not future.done():
                assert proc.poll() is None, (directory / 'kin_node.log').read_text()
                assert time.monotonic() < deadline, 'no answer'
                executor.spin_once(timeout_sec=0.01)
            return future.result()

        while not (single.service_is_ready() and multi.service_is_ready()):
            assert proc.poll() is None, (directory / 'kin_node.log').read_text()
            executor.spin_once(timeout_sec=0.05)

        def single_request(q):
            request = GetStateValidity.Request(robot_state=RobotState(joint_state=JointState(
                name=names, position=q.tolist())))
            request.constraints.joint_constraints = constraints
            return request

        def multi_request(states):
            request = GetMultiStateValidity.Request(robot_state=RobotState(joint_state=JointState(
                name=names, position=states[0].tolist())))
            request.joint_states = [JointState(name=names, position=q.tolist()) for q in states]
            request.constraints.joint_constraints = constraints
            return request

        # warm up both paths: the collision model, and its compiled check, which the node loads in the
        # background once MIN_BATCH (256) configurations have been checked (until then, numpy)
        for q in Q[:300]:
            call(single, single_request(q))
        for _ in range(3):
            call(multi, multi_request(Q[:2000]))

        n_single = min(args.singles, args.states)
        start = time.perf_counter()
        verdicts = [call(single, single_request(q)).valid for q in Q[:n_single]]
        t_single = (time.perf_counter() - start) * args.states / n_single

        start = time.perf_counter()
        answer = call(multi, multi_request(Q))
        t_multi = time.perf_counter() - start

        subset = call(multi, multi_request(Q[:n_single])).valid
        valid_only = [q for q, v in zip(Q[:n_single], verdicts) if v]
        all_valid = call(multi, multi_request(valid_only)).valid
        scaled = '' if n_single == args.states else f' (timed on {n_single}, scaled to {args.states})'
        if args.no_collision:
            checked = 'no collision geometry'
        else:   # the node's collision model: no SRDF, pairs sampled (cached on disk)
            from robokin_ros.collision import collision_model
            checked = f'self-collision ({len(collision_model(model).pairs)} geometry pairs checked)'
        print(f'Panda, {args.states} random states, 2 joint constraints, {checked}:')
        print(f'  {args.states} single /check_state_validity calls: {t_single:8.2f} s{scaled} '
              f'({t_single / args.states * 1e3:.2f} ms each); {sum(verdicts)} of {n_single} valid')
        print(f'  one /check_state_validity_multiple call:     {t_multi:8.2f} s '
              f'({t_multi / args.states * 1e6:.0f} us per state); valid = {answer.valid}')
        print(f'  ratio: {t_single / t_multi:.1f}x')
        print(f'  verdicts: multi over the {n_single} singles = {subset} (all singles valid: {all(verdicts)}); '
              f'multi over the {len(valid_only)} valid ones = {all_valid}')
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        log.close()
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
