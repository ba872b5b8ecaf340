"""Benchmark of the dynamics: generic and generated kernels side by side with Pinocchio from Python.

Usage: ``python3 bench/bench_dynamics.py [--quick]``. Prints µs per configuration, on Panda and
Talos (example-robot-data), for rnea, crba, aba and gravity torques: robokin_ros's generic kernel
and its per-robot generated kernel, each batched (10,000 configurations; 1,000 with --quick) and
as a single call, next to Pinocchio's per-call time (a Python loop of calls), with the ratios
ours / Pinocchio (below 1: faster than Pinocchio). All columns come from the same run.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test"))

from peers import ERD_ROBOTS, example_robot_data_dir, pin_configuration
from timing import best_of

from robokin_ros import RobotModel, kinematics
from robokin_ros.dynamics import aba, crba, gravity_torques, rnea


def time_ours(fn, model, inputs, batch: int, repeats: int, n_single: int, generated: bool) -> tuple[float, float]:
    """(batched, single) µs per configuration of ``fn`` with the generated kernels on or off."""
    kinematics.use_generated_kernels = generated
    try:
        first = tuple(x[0] for x in inputs)
        fn(model, *inputs)  # build / warm the per-model caches
        fn(model, *first)
        t_batch = best_of(lambda: fn(model, *inputs), repeats) / batch * 1e6
        t_single = best_of(lambda: [fn(model, *first) for _ in range(n_single)], repeats) / n_single * 1e6
    finally:
        kinematics.use_generated_kernels = True
    return t_batch, t_single


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
    print(f"µs per configuration; batch of {batch}; single = one call; pin = Pinocchio, loop of calls from Python;"
          " gen = generated kernel; ratio = ours / pin")
    header = (f"{'robot':6s} {'algo':7s} {'batch':>8s} {'gen batch':>10s} {'single':>8s} {'gen single':>11s}"
              f" {'pin':>7s} {'batch/pin':>10s} {'gen batch/pin':>14s} {'gen single/pin':>15s}")
    print(header)
    print("-" * len(header))
    for name in ("panda", "talos"):
        bench_robot(name, os.path.join(base, ERD_ROBOTS[name]), pin, batch, repeats, singles, rng)


def bench_robot(name, path, pin, batch, repeats, singles, rng) -> None:
    """Print one table row per algorithm for the robot at ``path``."""
    model = RobotModel.from_urdf_file(path)
    q = model.random_configuration(batch, rng)
    v, a = rng.normal(size=(2, batch, model.n_v))
    tau = rnea(model, q, v, a)
    ours = {"rnea": (rnea, (q, v, a)), "crba": (crba, (q,)), "aba": (aba, (q, v, tau)),
            "gravity": (gravity_torques, (q,))}
    peers = {}
    if pin is not None:
        pm = pin.buildModelFromUrdf(path)
        pd = pm.createData()
        pq = [pin_configuration(model, pm, qi) for qi in q[:singles]]
        pv = rng.normal(size=(singles, pm.nv))
        peers = {"rnea": lambda k: pin.rnea(pm, pd, pq[k], pv[k], pv[k]), "crba": lambda k: pin.crba(pm, pd, pq[k]),
                 "aba": lambda k: pin.aba(pm, pd, pq[k], pv[k], pv[k]),
                 "gravity": lambda k: pin.computeGeneralizedGravity(pm, pd, pq[k])}
    for algo, (fn, inputs) in ours.items():
        generic_batch, generic_single = time_ours(fn, model, inputs, batch, repeats, max(1, singles // 100), False)
        gen_batch, gen_single = time_ours(fn, model, inputs, batch, repeats, max(1, singles // 10), True)
        row = f"{name:6s} {algo:7s} {generic_batch:8.2f} {gen_batch:10.2f} {generic_single:8.1f} {gen_single:11.1f}"
        if algo in peers:
            call = peers[algo]
            t_pin = best_of(lambda: [call(k) for k in range(singles)], repeats) / singles * 1e6  # noqa: B023
            row += (f" {t_pin:7.2f} {generic_batch / t_pin:10.2f} {gen_batch / t_pin:14.2f}"
                    f" {gen_single / t_pin:15.1f}")
        else:
            row += f" {'-':>7s} {'-':>10s} {'-':>14s} {'-':>15s}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
