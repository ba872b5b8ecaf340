"""Memory of compiled kernels (issue 33 item 12): RSS per distinct robot whose kernels a process loaded.

Usage: ``python3 bench/bench_kernel_memory.py [--robots 10] [--cache DIR]``.

Makes ``--robots`` distinct 6-DOF arms (DH tables with different lengths: distinct generated
sources), fills the kernel cache with their FK and IK-loop kernels in a first process, then in
a fresh process loads each robot, :func:`robokin_ros.prepare` s and :func:`robokin_ros.prepare_ik` s
it, solves one IK request and (``released``) drops the model or (``kept``) keeps it, printing the
process's RSS after each robot and the growth per robot (least squares over the robots).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import gc, json, sys
import numpy as np
import robokin_ros as rk

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

def arm(k):
    table = [[0.0, np.pi / 2, 0.1 + 0.001 * k, 0.0], [0.4 + 0.001 * k, 0.0, 0.0, 0.0], [0.35, 0.0, 0.0, 0.0],
             [0.0, np.pi / 2, 0.1, 0.0], [0.0, -np.pi / 2, 0.09, 0.0], [0.0, 0.0, 0.08 + 0.001 * k, 0.0]]
    return rk.RobotModel.from_dh(table, limits=[[-3.0, 3.0]] * 6, name=f"arm{k}")

mode, n = sys.argv[1], int(sys.argv[2])
kept, rss = [], []
for k in range(n + 1):
    model = arm(k)
    assert rk.prepare(model) and rk.prepare_ik(model, "tool")
    rk.solve_ik(model, rk.forward_kinematics(model, np.full(6, 0.3), frames=["tool"])[0], "tool")
    if mode == "kept":
        kept.append(model)
    del model
    gc.collect()
    rss.append(rss_mb())
print(json.dumps(rss))
"""


def child(mode: str, n: int, cache: str) -> list:
    env = dict(os.environ, ROBOKIN_CACHE_DIR=cache)
    done = subprocess.run([sys.executable, "-c", CHILD, mode, str(n)], env=env, capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", type=int, default=10)
    parser.add_argument("--cache", help="kernel cache to use (default: a fresh one, filled first)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as fresh:
        cache = args.cache or fresh
        os.chmod(cache, 0o700)
        child("kept", args.robots, cache)   # compiles every kernel into the cache
        for mode in ("released", "kept"):
            rss = child(mode, args.robots, cache)
            growth = rss[1:]   # the first robot also loads numba's own code: not counted
            n = len(growth)
            mean_x, mean_y = (n - 1) / 2, sum(growth) / n
            slope = sum((x - mean_x) * (y - mean_y) for x, y in enumerate(growth)) / max(
                sum((x - mean_x) ** 2 for x in range(n)), 1e-9)
            print(f"{mode:9s} RSS after each robot [MB]: {' '.join(f'{x:.0f}' for x in rss)}; "
                  f"growth {slope:.2f} MB per distinct robot ({rss[-1] - rss[1]:+.0f} MB over {n - 1} robots)")


if __name__ == "__main__":
    main()
