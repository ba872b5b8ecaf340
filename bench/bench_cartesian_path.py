"""Benchmark of Cartesian paths: ``rk.cartesian_path`` in-process and ``/compute_cartesian_path``
through a node process.

Usage: ``tools/run_in_env.sh python bench/bench_cartesian_path.py [--quick] [--no-service]``.

1. Random certified-feasible straight lines (5–30 cm; every third turning the tip up to 0.5 rad;
   certified by the numpy Newton continuation of ``test/core/cartesian/cartesian_oracle.py``) on
   the bundled Panda and UR5e and the ``../shared/urdf-corpus`` arms (skipped when absent), at
   ``max_step`` 5 mm: the share followed whole (fraction 1.0), points, the worst joint step per
   Cartesian step (max |Δq| / |Δx| [rad/m]), the worst midpoint deviation from the line [mm]
   (FK of each pair's joint-space midpoint) and the median time per request [ms].
2. The issue's case: a 20 cm straight line at ``max_step`` 1 mm (about 200 points) on the Panda
   and the UR5e: median and p90 time in-process and through the service (a ``kin_node``
   started with ``python -m robokin_ros.node.main``; round trip of ``call_async`` on this
   script's node, warm-up calls first, so the compiled IK step of the path's options is loaded).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / 'test' / 'core' / 'cartesian'))

import robokin_ros as rk  # noqa: E402
from robokin_ros import robots  # noqa: E402

CORPUS = ROOT.parent / 'shared' / 'urdf-corpus'
ARMS = [('panda', robots.path('panda.urdf'), 'panda_hand_tcp'), ('ur5e', robots.path('ur5e.urdf'), 'tool0'),
        ('kuka_lbr_iiwa14', CORPUS / 'kuka_lbr_iiwa14.urdf', 'tool0'), ('ur10e', CORPUS / 'ur10e_ros2.urdf', 'tool0'),
        ('abb_irb6700', CORPUS / 'abb_irb6700.urdf', 'tool0'), ('fanuc_m10ia', CORPUS / 'fanuc_m10ia.urdf', 'tool0')]
#: The issue's case: start configurations and a 20 cm move of the tip.
LINE_CASES = {'panda': (np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8, 0.0]), [0.2, 0.0, 0.0]),
              'ur5e': (np.array([0.3, -1.5, 1.5, -1.5, -1.5, 0.2]), [0.0, 0.0, 0.2])}


def line_target(model, tip, q0, move):
    T = rk.forward_kinematics(model, q0, frames=[tip])[0]
    T[:3, 3] += move
    return T


def path_figures(model, tip, result):
    """Worst joint step per Cartesian step [rad/m] and worst midpoint deviation [m] from each
    pair's targets' segment."""
    Q, P = result.q, result.poses[:, :3, 3]
    if len(Q) < 2:
        return 0.0, 0.0
    dx = np.linalg.norm(np.diff(P, axis=0), axis=1)
    dq = np.abs(np.diff(Q, axis=0)).max(axis=1)
    mid = rk.forward_kinematics(model, 0.5 * (Q[1:] + Q[:-1]), frames=[tip])[:, 0, :3, 3]
    a, b = P[:-1], P[1:]
    ab = b - a
    t = np.clip(np.einsum('ij,ij->i', mid - a, ab) / np.maximum(np.einsum('ij,ij->i', ab, ab), 1e-300), 0, 1)
    deviation = np.linalg.norm(mid - (a + t[:, None] * ab), axis=1)
    return float((dq / np.maximum(dx, 1e-12)).max()), float(deviation.max())


def random_lines(n):
    from cartesian_oracle import random_feasible_line
    print(f'random certified lines 5-30 cm, max_step 5 mm, {n} per arm')
    print(f'{"arm":16} {"whole":>8} {"points":>7} {"worst dq/dx":>12} {"worst mid dev":>14} {"median ms":>10}')
    for name, path, tip in ARMS:
        if not path.exists():
            print(f'{name:16} skipped: {path} absent')
            continue
        model = rk.RobotModel.from_urdf_file(path)
        rk.prepare_ik(model, tip, position_tolerance=1e-8, rotation_tolerance=1e-8, max_iterations=100)
        rng = np.random.default_rng(7)
        whole, points, steps, devs, times = 0, [], [], [], []
        for i in range(n):
            q0, T_goal, _ = random_feasible_line(model, tip, rng, rotation=0.5 if i % 3 == 2 else 0.0)
            t0 = time.perf_counter()
            result = rk.cartesian_path(model, T_goal, tip, q0, max_step=0.005)
            times.append((time.perf_counter() - t0) * 1e3)
            whole += result.fraction == 1.0
            step, dev = path_figures(model, tip, result)
            points.append(len(result.q))
            steps.append(step)
            devs.append(dev)
        print(f'{name:16} {whole:>4}/{n:<3} {np.median(points):>7.0f} {max(steps):>12.2f} '
              f'{1e3 * max(devs):>11.4f} mm {np.median(times):>10.2f}')


def in_process(repeats):
    out = {}
    for name, (q0, move) in LINE_CASES.items():
        path, tip = {a[0]: (a[1], a[2]) for a in ARMS}[name]
        model = rk.RobotModel.from_urdf_file(path)
        rk.prepare_ik(model, tip, position_tolerance=1e-8, rotation_tolerance=1e-8, max_iterations=100)
        T = line_target(model, tip, q0, move)
        for _ in range(5):
            rk.cartesian_path(model, T, tip, q0, max_step=0.001)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            result = rk.cartesian_path(model, T, tip, q0, max_step=0.001)
            times.append((time.perf_counter() - t0) * 1e3)
        out[name] = (np.percentile(times, 50), np.percentile(times, 90), len(result.q), result.fraction)
    return out


def through_service(repeats, directory):
    import rclpy
    from moveit_msgs.msg import RobotState
    from moveit_msgs.srv import GetCartesianPath
    from sensor_msgs.msg import JointState

    from robokin_ros.node.conversions import matrix_to_pose
    rclpy.init()
    node = rclpy.create_node('bench_cartesian_path')
    out = {}
    try:
        for name, (q0, move) in LINE_CASES.items():
            path, tip = {a[0]: (a[1], a[2]) for a in ARMS}[name]
            model = rk.RobotModel.from_urdf_file(path)
            params = directory / f'{name}.yaml'
            params.write_text(yaml.safe_dump({'robokin': {'ros__parameters': {'robot_description': path.read_text()}}}))
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get('PYTHONPATH', '')]))
            log = open(directory / f'{name}.log', 'wb')
            proc = subprocess.Popen([sys.executable, '-m', 'robokin_ros.node.main', '--ros-args', '--params-file',
                                     str(params)], stdout=log, stderr=subprocess.STDOUT, env=env)
            client = node.create_client(GetCartesianPath, '/compute_cartesian_path')
            try:
                deadline = time.monotonic() + 60
                while not client.service_is_ready():
                    if time.monotonic() > deadline:
                        raise RuntimeError('no /compute_cartesian_path within 60 s')
                    rclpy.spin_once(node, timeout_sec=0.05)
                req = GetCartesianPath.Request(link_name=tip, max_step=0.001,
                                               waypoints=[matrix_to_pose(line_target(model, tip, q0, move))])
                req.start_state = RobotState(joint_state=JointState(name=list(model.joint_names),
                                                                    position=q0.tolist()))
                times, fraction, points = [], 0.0, 0
                for k in range(repeats + 30):   # the first 30 load the compiled IK step of these options
                    t0 = time.perf_counter()
                    future = client.call_async(req)
                    while not future.done():
                        rclpy.spin_once(node, timeout_sec=0.01)
                    if k >= 30:
                        times.append((time.perf_counter() - t0) * 1e3)
                    res = future.result()
                    fraction, points = res.fraction, len(res.solution.joint_trajectory.points)
                out[name] = (np.percentile(times, 50), np.percentile(times, 90), points, fraction)
            finally:
                node.destroy_client(client)
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                log.close()
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='fewer lines and repeats')
    parser.add_argument('--no-service', action='store_true', help='in-process only')
    args = parser.parse_args()
    random_lines(10 if args.quick else 30)
    repeats = 20 if args.quick else 100
    print('\n20 cm straight line, max_step 1 mm')
    print(f'{"arm":8} {"where":12} {"points":>7} {"fraction":>9} {"median ms":>10} {"p90 ms":>8}')
    rows = [('in-process', in_process(repeats))]
    if not args.no_service:
        with tempfile.TemporaryDirectory() as d:
            rows.append(('service', through_service(repeats, pathlib.Path(d))))
    for where, figures in rows:
        for name, (p50, p90, points, fraction) in figures.items():
            print(f'{name:8} {where:12} {points:>7} {fraction:>9.3f} {p50:>10.2f} {p90:>8.2f}')


if __name__ == '__main__':
    main()
