"""Benchmark of the dynamics: generic, generated (numpy) and numba kernels side by side with Pinocchio from Python.

Usage: ``python3 bench/bench_dynamics.py [--quick]``. Prints µs per configuration, on Panda and
Talos (example-robot-data), for rnea, crba, aba, gravity torques and the centre of mass:

- batched (10,000 configurations; 1,000 with --quick): robokin_ros's generic kernel, its
  per-robot generated kernel on numpy and the same kernel compiled by numba;
- single calls (one configuration as 1-D float64 arrays): the public function with the
  generated kernel on Python floats (numba off) and with its numba-compiled single entry, and
  the prepared handle :class:`robokin_ros.Kinematics` (``h 1``: fresh result; ``h out``:
  written into a reused ``out=``), timed interleaved with Pinocchio;
- Pinocchio's call from Python in a loop (``pin.rnea``, ``pin.crba``, ``pin.aba``,
  ``pin.computeGeneralizedGravity``, ``pin.centerOfMass``), timed interleaved with our single call;
- a floor row per robot: a no-op numba function taking the same arrays as our compiled rnea
  entry (q, v, a, out), called from Python with the output allocated — the call overhead no
  compiled single call can go below.

Ratios are ours / Pinocchio (below 1: faster than Pinocchio; Pinocchio writes into its ``data``,
the like of ``out=``). All columns come from the same run. (2026-12-02: the generated code no
longer runs on numpy; with numba off, the ``gen b`` and ``gen 1`` columns time the numpy
recursions, the oracle.)
The numba kernels are compiled (or loaded from the disk cache) before timing; the first compile
on a machine takes minutes for Talos (see ``robokin_ros.dynamics.prepare``).
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
from timing import best_of

from robokin_ros import Kinematics, RobotModel, dynamics
from robokin_ros.dynamics import aba, center_of_mass, crba, gravity_torques, rnea
from robokin_ros.kernels import accel, use

ALGOS = {"rnea": "rnea", "crba": "crba", "aba": "aba", "gravity": "gravity_torques", "com": "center_of_mass"}


def batch_us(fn, model, inputs, batch: int, repeats: int, generated: bool, numba: bool) -> float:
    """µs per configuration of ``fn`` on the whole batch."""
    with use("generated" if generated else "generic", accelerated=numba):
        fn(model, *inputs)
        return best_of(lambda: fn(model, *inputs), repeats) / batch * 1e6


def single_us(call, n: int, repeats: int) -> float:
    """µs per call of ``call()`` (best of ``repeats`` loops of ``n`` calls)."""
    call()
    return best_of(lambda: [call() for _ in range(n)], repeats) / n * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small batch and few repeats")
    args = parser.parse_args()
    batch, repeats, singles = (1000, 3, 300) if args.quick else (10000, 5, 2000)
    try:
        import pinocchio as pin
    except ImportError:
        pin = None
    base = example_robot_data_dir()
    if base is None:
        sys.exit("example-robot-data is not installed (pip install example-robot-data)")
    if not accel.active():
        print("numba is not active (not installed, or ROBOKIN_ACCEL=0): numba columns repeat numpy")
    rng = np.random.default_rng(0)
    print(f"µs per configuration; batch of {batch}; single = one call from Python; pin = Pinocchio, loop of calls"
          " from Python; gen = generated kernel on numpy; nb = numba; ratio = ours / pin")
    header = (f"{'robot':6s} {'algo':8s} {'generic b':>10s} {'gen b':>8s} {'nb b':>8s} {'gen 1':>8s} {'nb 1':>8s}"
              f" {'h 1':>7s} {'h out':>7s} {'pin 1':>8s} {'nb b/pin':>9s} {'nb 1/pin':>9s} {'h 1/pin':>8s}"
              f" {'hout/pin':>8s}")
    print(header)
    print("-" * len(header))
    for name in ("panda", "talos"):
        bench_robot(name, os.path.join(base, ERD_ROBOTS[name]), pin, batch, repeats, singles, rng)


def bench_robot(name, path, pin, batch, repeats, singles, rng) -> None:
    """Print one table row per algorithm for the robot at ``path``, then the floor row."""
    model = RobotModel.from_urdf_file(path)
    t = time.perf_counter()
    ready = dynamics.prepare(model, tuple(ALGOS.values()))
    handle = Kinematics(model, dynamics=("rnea", "crba", "aba", "gravity_torques"))
    print(f"{name}: numba kernels {'ready' if ready else 'NOT ready'} in {time.perf_counter() - t:.1f} s", flush=True)
    q = model.random_configuration(batch, rng)
    v, a = rng.normal(size=(2, batch, model.n_v))
    tau = rnea(model, q, v, a)
    handles = {"rnea": handle.rnea, "crba": handle.crba, "aba": handle.aba, "gravity": handle.gravity_torques}
    ours = {"rnea": (rnea, (q, v, a)), "crba": (crba, (q,)), "aba": (aba, (q, v, tau)),
            "gravity": (gravity_torques, (q,)), "com": (center_of_mass, (q,))}
    peers = {}
    if pin is not None:
        pm = pin.buildModelFromUrdf(path)
        pd = pm.createData()
        pq = pin_configuration(model, pm, q[0])
        pv, pa = rng.normal(size=(2, pm.nv))
        peers = {"rnea": lambda: pin.rnea(pm, pd, pq, pv, pa),
                 "crba": lambda: pin.crba(pm, pd, pq),   # upper triangle; ours fills both
                 "aba": lambda: pin.aba(pm, pd, pq, pv, pa),
                 "gravity": lambda: pin.computeGeneralizedGravity(pm, pd, pq),
                 "com": lambda: pin.centerOfMass(pm, pd, pq)}
    for algo, (fn, inputs) in ours.items():
        generic_b = batch_us(fn, model, inputs, batch, repeats, False, False)
        gen_b = batch_us(fn, model, inputs, batch, repeats, True, False)
        nb_b = batch_us(fn, model, inputs, batch, repeats, True, True)
        first = tuple(np.ascontiguousarray(x[0]) for x in inputs)

        def one(fn=fn, first=first):
            return fn(model, *first)

        with use(accelerated=False):
            gen_1 = single_us(one, max(1, singles // 10), repeats)
        h_1 = h_out = pin_1 = np.inf
        if algo in handles:
            out = np.empty(fn(model, *first).shape)

            def fresh(method=handles[algo], first=first):
                return method(*first)

            def written(method=handles[algo], first=first, out=out):
                return method(*first, out)
        nb_1 = np.inf
        for _ in range(repeats):   # interleaved: all see the same machine load
            nb_1 = min(nb_1, single_us(one, singles, 1))
            if algo in handles:
                h_1 = min(h_1, single_us(fresh, singles, 1))
                h_out = min(h_out, single_us(written, singles, 1))
            if algo in peers:
                pin_1 = min(pin_1, single_us(peers[algo], singles, 1))
        row = f"{name:6s} {algo:8s} {generic_b:10.2f} {gen_b:8.2f} {nb_b:8.2f} {gen_1:8.1f} {nb_1:8.2f}"
        row += f" {h_1:7.2f} {h_out:7.2f}" if algo in handles else f" {'':>7s} {'':>7s}"
        if algo in peers:
            row += f" {pin_1:8.2f} {nb_b / pin_1:9.2f} {nb_1 / pin_1:9.2f}"
            if algo in handles:
                row += f" {h_1 / pin_1:8.2f} {h_out / pin_1:8.2f}"
        print(row, flush=True)
    floor = floor_us(model, singles, repeats)
    print(f"{name:6s} {'floor':8s} {'':>10s} {'':>8s} {'':>8s} {'':>8s} {floor:8.2f}"
          "   (no-op numba call with rnea's arrays, output allocated)", flush=True)


def floor_us(model, singles: int, repeats: int) -> float:
    """µs of a Python function that allocates the output and calls a no-op numba function with
    the same arguments as the compiled rnea entry (q, v, a, out)."""
    if not accel.active():
        return float("nan")
    import numba

    @numba.njit("int64(float64[::1], float64[::1], float64[::1], float64[::1])", nogil=True)
    def noop(q, v, a, out):
        return 0

    def call(model, q, v, a):
        out = np.empty(model.n_v)
        noop(q, v, a, out)
        return out

    q, v = model.home_configuration().copy(), np.zeros(model.n_v)
    return single_us(lambda: call(model, q, v, v), singles, repeats)


if __name__ == "__main__":
    main()
