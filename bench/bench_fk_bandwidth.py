"""Batched FK against this machine's memory-write bandwidth and against Pinocchio (issue 13, part 2).

Usage: ``python3 bench/bench_fk_bandwidth.py [--quick] [--robots ur5,panda,xarm7,talos] [--batch N]``.

For example-robot-data's UR5, Panda, xArm7 and Talos (``talos_reduced.urdf``: fixed base, 32 DOF,
60 links, as in ``bench/bench_kernels.py``), measures in one run, interleaved (every round runs
each timer once, best of the rounds):

- Pinocchio: ``framesForwardKinematics`` in a Python loop (µs per configuration);
- our batched FK of ``--batch`` configurations (numba kernels when numba is installed, else
  the generated numpy kernels) for each output option: every link as ``4x4`` (the default),
  ``3x4`` (no constant bottom row) and positions only (``link_positions``), and a subset of
  frames (the arm's tip; Talos' grippers and soles), each into a fresh array (the call
  allocates, so the kernel also pays the page faults) and into a reused one (``out=``);
- the bound that memory puts under each row: the time to write the same number of bytes,
  ``ndarray.fill`` of a preallocated array of that size (the ``out=`` rows' limit) and
  ``np.empty`` + ``fill`` (the fresh rows' limit: allocation and first-touch page faults
  included); also ``np.copyto`` (read + write) for reference;
- ``out=`` again with a batch of :data:`IN_CACHE` configurations (``in cache``: the output
  stays in the L3 cache here), which tells memory-bound rows from compute-bound ones;
- the share of arithmetic that used to dominate: the sines and cosines of the joint angles
  alone, as libm calls in the configuration loop (the kernels before issue 13) and vectorised
  per block (as the FK kernels compute them now).

Prints per row: µs/config, bytes written per config, achieved GB/s, the bandwidth limit's time
and ``of limit`` = limit time / our time (1.00 = at the bandwidth limit), and ``xpin`` =
Pinocchio / ours. Then per robot the goal (≥ 5× Pinocchio on arms, ≥ 3× on Talos, or within
1.5× of the bandwidth limit) and what stops it where it is not met.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "test"))
sys.path.insert(0, HERE)

from peers import ERD_ROBOTS, example_robot_data_dir, pin_configuration
from timing import interleaved

from robokin_ros import RobotModel, forward_kinematics, link_positions, prepare
from robokin_ros.kernels import accel, numba_source
from robokin_ros.kernels.fk_codegen import compiled_fk

#: label -> (ERD_ROBOTS key, the subset of frames, the goal as a multiple of Pinocchio's time)
ROBOTS = {
    "ur5": ("ur5", ["tool0"], 5.0),
    "panda": ("panda", ["panda_hand_tcp"], 5.0),
    "xarm7": ("xarm7", ["link_eef"], 5.0),
    "talos": ("talos", ["gripper_left_base_link", "gripper_right_base_link", "left_sole_link", "right_sole_link"], 3.0),
}
#: A row is within reach of the bandwidth bound when it takes at most this multiple of it.
NEAR_LIMIT = 1.5
#: Configurations of the ``in cache`` column: ``out=`` reused, output small enough for the L3 here.
IN_CACHE = 1000
#: option label -> (layout, every link or the subset)
OPTIONS = {
    "4x4 all (default)": ("4x4", False),
    "3x4 all": ("3x4", False),
    "positions all": ("position", False),
    "4x4 subset": ("4x4", True),
    "positions subset": ("position", True),
}
PER_LINK = {"4x4": 16, "3x4": 12, "position": 3}


def call(model, q, layout, frames, out=None):
    if layout == "position":
        return link_positions(model, q, frames=frames, out=out)
    return forward_kinematics(model, q, frames=frames, layout=layout, out=out)


def trig_floors(n_trig: int):
    """Two numba kernels over ``x (n_trig, B)`` angles: libm's ``cos`` + ``sin`` of each, one
    configuration after another (what the kernels did before); and the vectorised sines and
    cosines our FK kernels now compute per block (:data:`robokin_ros.kernels.numba_source.SINCOS_SOURCE`).
    None without numba."""
    if not accel.available():
        return None
    import math

    import numba

    @numba.njit(nogil=True, error_model="numpy")
    def libm(x, c, s):
        for b in range(x.shape[1]):
            for k in range(x.shape[0]):
                c[k, b] = math.cos(x[k, b])
                s[k, b] = math.sin(x[k, b])

    namespace = {"numba": numba, "np": np, "cos": math.cos, "sin": math.sin}
    exec(numba_source.SINCOS_SOURCE.replace("cache=True, ", ""), namespace)  # noqa: S102
    rows = namespace["sincos"]

    def vector(x, c, s):
        for k in range(x.shape[0]):
            rows(x[k], c[k], s[k])
    return libm, vector


def pin_loop(path, model, q):
    """A callable running Pinocchio's framesForwardKinematics over ``q``, or None."""
    try:
        import pinocchio as pin
    except ImportError:
        return None
    pm = pin.buildModelFromUrdf(path)
    pd = pm.createData()
    pq = [pin_configuration(model, pm, qi) for qi in q]
    fk = pin.framesForwardKinematics

    def run():
        for x in pq:
            fk(pm, pd, x)
    return run


def bench_robot(label: str, base: str, batch: int, n_pin: int, rounds: int) -> dict:
    key, subset, goal = ROBOTS[label]
    path = os.path.join(base, ERD_ROBOTS[key])
    model = RobotModel.from_urdf_file(path)
    q = model.random_configuration(batch, np.random.default_rng(0))
    variants = [(layout, subset if sub else None) for layout, sub in OPTIONS.values()]
    t0 = time.perf_counter()
    numba_on = prepare(model, fk_variants=variants)
    prepare_s = time.perf_counter() - t0
    none = lambda: None  # noqa: E731
    timers, nbytes = {}, {}
    for name, (layout, sub) in OPTIONS.items():
        frames = subset if sub else None
        n = len(subset) if sub else model.n_links
        nbytes[name] = n * PER_LINK[layout] * 8
        expected = call(model, q[:3], layout, frames)  # builds the kernel; checks the shapes
        out = np.empty((batch,) + expected.shape[1:])
        timers[name, "fresh"] = (none, lambda layout=layout, frames=frames: call(model, q, layout, frames), batch)
        timers[name, "out="] = (none, lambda layout=layout, frames=frames, out=out: call(model, q, layout, frames, out), batch)
        small = np.empty((min(IN_CACHE, batch),) + expected.shape[1:])
        timers[name, "cached"] = (none, lambda layout=layout, frames=frames, out=small: call(model, q[:len(out)], layout,
                                                                                            frames, out), len(small))
    for size in sorted(set(nbytes.values())):
        buf, src = np.empty(batch * size // 8), np.ones(batch * size // 8)
        buf.fill(0.0)
        timers["fill", size] = (none, lambda buf=buf: buf.fill(1.0), batch)
        timers["fresh fill", size] = (none, lambda size=size: np.empty(batch * size // 8).fill(1.0), batch)
        timers["copy", size] = (none, lambda buf=buf, src=src: np.copyto(buf, src), batch)
    n_trig = "\n".join(compiled_fk(model).generated.body).count("cos(")
    floors = trig_floors(n_trig)
    if floors is not None:
        x = np.ascontiguousarray(np.resize(q.T, (n_trig, batch)))
        c, s = np.empty_like(x), np.empty_like(x)
        for name, fn in zip(("libm trig", "vector trig"), floors):
            fn(x[:, :2], c[:, :2], s[:, :2])
            timers[name] = (none, lambda fn=fn: fn(x, c, s), batch)
    pin = pin_loop(path, model, q[:n_pin])
    if pin is not None:
        timers["pin"] = (none, pin, n_pin)
    t = {k: v * 1e6 for k, v in interleaved(timers, rounds).items()}
    return {"model": model, "t": t, "nbytes": nbytes, "goal": goal, "numba": numba_on, "prepare": prepare_s,
            "n_trig": n_trig, "subset": subset}


def fmt(x, width=7, digits=2):
    return f"{'':>{width}s}" if x is None else f"{x:{width}.{digits}f}"


def report(label: str, r: dict, batch: int) -> None:
    t, model = r["t"], r["model"]
    pin = t.get("pin")
    print(f"\n{label} ({model.n_links} links, {model.n_q} DOF): Pinocchio loop {fmt(pin, 0)} µs/config; "
          f"kernels: {'numba' if r['numba'] else 'numpy (numba unavailable)'} (prepared in {r['prepare']:.1f} s); "
          f"subset = {', '.join(r['subset'])}")
    sizes = sorted(set(r["nbytes"].values()))
    print(f"  memory, per output size (batch of {batch:,}): " + "; ".join(
        f"{s} B: fill {s / t['fill', s] / 1e3:.1f} GB/s, fresh {s / t['fresh fill', s] / 1e3:.1f} GB/s, "
        f"copy {s / t['copy', s] / 1e3:.1f} GB/s" for s in sizes))
    if "libm trig" in t:
        print(f"  sines and cosines of the {r['n_trig']} joint angles alone: libm calls {t['libm trig']:.3f} µs/config, "
              f"vectorised (as our kernels) {t['vector trig']:.3f} µs/config")
    header = (f"  {'option':20s} {'out':6s} | {'B/config':>8s} | {'µs/config':>9s} | {'GB/s':>6s} | "
              f"{'limit µs':>8s} | {'of limit':>8s} | {'xpin':>6s} | {'in cache':>8s}")
    print(header)
    print("  " + "-" * (len(header) - 2))
    for name, size in r["nbytes"].items():
        for kind in ("fresh", "out="):
            ours = t[name, kind]
            limit = t["fresh fill" if kind == "fresh" else "fill", size]
            cached = f"{t[name, 'cached']:8.3f}" if kind == "out=" else f"{'':8s}"
            print(f"  {name:20s} {kind:6s} | {size:8d} | {ours:9.3f} | {size / ours / 1e3:6.1f} | {limit:8.3f} | "
                  f"{limit / ours:8.2f} | {fmt(pin / ours if pin else None, 6)} | {cached}")
    verdict(r)


def verdict(r: dict) -> None:
    """Per option and output kind: the goal met, or the measured bound that stops it."""
    t, goal, pin = r["t"], r["goal"], r["t"].get("pin")
    lines = []
    for name, size in r["nbytes"].items():
        parts = []
        for kind in ("fresh", "out="):
            ours = t[name, kind]
            limit = t["fresh fill" if kind == "fresh" else "fill", size]
            x = pin / ours if pin else None
            if x is not None and x >= goal:
                parts.append(f"{kind} met ({x:.1f}× Pinocchio)")
            elif ours <= NEAR_LIMIT * limit:
                parts.append(f"{kind} met (within {ours / limit:.2f}× of the bandwidth limit; {fmt(x, 0, 1)}× Pinocchio)")
            else:
                trig = t.get("vector trig")
                parts.append(f"{kind} not met ({fmt(x, 0, 1)}× Pinocchio, {ours / limit:.1f}× the bandwidth limit: "
                             f"{ours - limit:.3f} µs/config of arithmetic and stores beyond the bytes' bandwidth time"
                             + (f", sines and cosines {trig:.3f} of it" if trig is not None else "")
                             + f"; {t[name, 'cached']:.3f} µs/config with the output in cache)")
        lines.append(f"{name}: " + "; ".join(parts))
    print(f"  goal ≥ {goal:.0f}× Pinocchio or ≤ {NEAR_LIMIT}× the bandwidth limit:\n    " + "\n    ".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="batch of 2,000, 3 rounds")
    parser.add_argument("--robots", default=",".join(ROBOTS), help="comma-separated subset of " + ",".join(ROBOTS))
    parser.add_argument("--batch", type=int, default=None, help="configurations per batched call (default 10,000)")
    args = parser.parse_args()
    batch, rounds, n_pin = (2000, 3, 300) if args.quick else (10000, 9, 1000)
    batch = args.batch or batch
    base = example_robot_data_dir()
    if base is None:
        sys.exit("example-robot-data is not installed (pip install example-robot-data)")
    print(f"Batched FK of {batch:,} configurations against memory bandwidth and Pinocchio, best of {rounds} "
          f"interleaved rounds; of limit = time to write the same bytes (fresh: np.empty + fill; out=: fill of a "
          f"reused array) / our time (1.00 = at the limit); xpin = Pinocchio / ours")
    for label in args.robots.split(","):
        report(label, bench_robot(label, base, batch, n_pin, rounds), batch)


if __name__ == "__main__":
    main()
