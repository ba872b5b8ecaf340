"""Constrained IK (issue 32, items 1 and 2): freed orientation axes and unions of regions.

Usage: ``python3 bench/bench_ik_constraints.py [--requests N] [--timeout S] [--arms piper,ur5e]``.

Freed axes: for each 6-DOF arm (the PiPER chain and the bundled UR5e) and each pattern of freed
axes (x, y, z, xy, xz, yz, tolerance π; the other axes 0.02-0.4 rad), ``N`` feasible requests
(``test/core/ik/freed_axes.py``: a pose target and an orientation constraint made from a random
configuration's FK, so a solution exists), solved by ``solve_constrained`` from a random seed
with the node's default budget (0.5 s; or ``--timeout 0 --iterations K``: K iterations, no time limit); an answer counts when it succeeds and MoveIt's rule
holds at FK of the answer (checked here again). Both parameterizations (XYZ Euler, rotation
vector). Prints the solved share and the mean time per request.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "test", "core", "ik"))

from freed_axes import PATTERNS, ROTATION_VECTOR, XYZ_EULER_ANGLES, piper, requests, ur5e  # noqa: E402

from robokin_ros import frame_transform  # noqa: E402
from robokin_ros.ik import solve_constrained  # noqa: E402

#: The node's iteration budget when ik_max_iterations is 0 (the timeout ends the search).
NODE_ITERATIONS = 2 ** 62
ARMS = {"piper": piper, "ur5e": ur5e}


def freed_axes(arm_name: str, n: int, timeout: float | None, iterations: int) -> None:
    arm = ARMS[arm_name]()
    model, base, tip = arm
    for parameterization, label in ((XYZ_EULER_ANGLES, "euler"), (ROTATION_VECTOR, "rotvec")):
        for pattern in PATTERNS:
            solved, elapsed, failures, spent = 0, 0.0, [], []
            for k, req in enumerate(requests(arm, pattern, n, seed=zlib.crc32(f"{arm_name} {pattern}".encode()),
                                             parameterization=parameterization)):
                start = time.perf_counter()
                out = solve_constrained(model, [req.constraint], req.seed, base=base, poses={tip: req.T},
                                        timeout=timeout, max_iterations=iterations, rng=k)
                elapsed += time.perf_counter() - start
                T = frame_transform(model, out.result.q, base, tip)
                ok = bool(out.result.success) and req.constraint.excess(T) == 0.0 and \
                    np.linalg.norm(T[:3, 3] - req.T[:3, 3]) <= 1e-4
                solved += ok
                spent.append(int(out.result.iterations))
                if not ok:
                    failures.append(k)
            print(f"{arm_name:6s} {label:6s} {pattern:3s} {solved:4d}/{n} ({100 * solved / n:5.1f} %) "
                  f"{1e3 * elapsed / n:7.1f} ms/request, iterations median {int(np.median(spent)):5d} "
                  f"max {max(spent):6d}  failed: {failures[:8]}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--timeout", type=float, default=0.5, help="[s] per request (0: none)")
    parser.add_argument("--iterations", type=int, default=0, help="iteration budget per request (0: none, the node's)")
    parser.add_argument("--arms", default="piper,ur5e")
    args = parser.parse_args()
    for arm in args.arms.split(","):
        freed_axes(arm, args.requests, args.timeout or None, args.iterations or NODE_ITERATIONS)


if __name__ == "__main__":
    main()
