"""Benchmark of rnea, crba and aba: robokin_ros batched and single-call against Pinocchio from Python.

Usage: ``python3 bench/bench_dynamics.py [--quick]``. Prints µs per configuration for a batch of
10,000 configurations (1,000 with --quick) and for single calls, on Panda and Talos
(example-robot-data), with Pinocchio's per-call time (a Python loop of calls) and the ratios.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test"))

from peers import ERD_ROBOTS, example_robot_data_dir, pin_configuration

from robokin_ros import RobotModel
from robokin_ros.dynamics import aba, crba, rnea


def best_of(fn, repeats: int) -> float:
    """Smallest wall time [s] of ``repeats`` calls of ``fn``."""
    best = np.inf
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small batch and few repeats")
    args = parser.parse_args()
    batch, repeats, singles = (1000, 2, 200) if args.quick else (10000, 5, 2000)
    try:
        import pinocchio as pin
    except ImportError:
        pin = None
    base = example_robot_data_dir()
    if base is None:
        sys.exit("example-robot-data is not installed (pip install example-robot-data)")
    rng = np.random.default_rng(0)
    print(f"µs per configuration; batch of {batch}; single = one call; pin = Pinocchio, loop of calls from Python")
    print(f"{'robot':7s} {'algo':5s} {'batched':>9s} {'single':>9s} {'pin':>8s} {'batched/pin':>12s} {'single/pin':>11s}")
    for name in ("panda", "talos"):
        bench_robot(name, os.path.join(base, ERD_ROBOTS[name]), pin, batch, repeats, singles, rng)


def bench_robot(name, path, pin, batch, repeats, singles, rng) -> None:
    """Print one table row per algorithm for the robot at ``path``."""
    model = RobotModel.from_urdf_file(path)
    q = model.random_configuration(batch, rng)
    v, a = rng.normal(size=(2, batch, model.n_v))
    tau = rnea(model, q, v, a)
    ours = {"rnea": (rnea, (q, v, a)), "crba": (crba, (q,)), "aba": (aba, (q, v, tau))}
    peers = {}
    if pin is not None:
        pm = pin.buildModelFromUrdf(path)
        pd = pm.createData()
        pq = [pin_configuration(model, pm, qi) for qi in q[:singles]]
        pv = rng.normal(size=(singles, pm.nv))
        peers = {"rnea": lambda k: pin.rnea(pm, pd, pq[k], pv[k], pv[k]), "crba": lambda k: pin.crba(pm, pd, pq[k]),
                 "aba": lambda k: pin.aba(pm, pd, pq[k], pv[k], pv[k])}
    for algo, (fn, inputs) in ours.items():
        first = tuple(x[0] for x in inputs)
        fn(model, *inputs)  # warm the per-model caches
        t_batch = best_of(lambda: fn(model, *inputs), repeats) / batch * 1e6  # noqa: B023 (called at once)
        n_single = max(1, singles // 10)
        t_single = best_of(lambda: [fn(model, *first) for _ in range(n_single)], repeats) / n_single * 1e6  # noqa: B023
        if algo in peers:
            call = peers[algo]
            t_pin = best_of(lambda: [call(k) for k in range(singles)], repeats) / singles * 1e6  # noqa: B023
            print(f"{name:7s} {algo:5s} {t_batch:9.2f} {t_single:9.1f} {t_pin:8.2f} {t_batch / t_pin:12.2f} {t_single / t_pin:11.1f}")
        else:
            print(f"{name:7s} {algo:5s} {t_batch:9.2f} {t_single:9.1f} {'-':>8s} {'-':>12s} {'-':>11s}")

if __name__ == "__main__":
    main()
