"""Threads on a busy machine (issue 38): the default runtime against one thread, with other processes
holding every core but one, and on a quiet machine.

Usage: ``python3 bench/bench_busy.py [--batch 10000] [--ik 500] [--calls 15] [--robots ur5e,panda]
[--quiet-only | --busy-only]``.

For each bundled robot and call (FK of every link allocating, FK into ``out=``, the tip's
Jacobian, RNEA, IK of ``--ik`` FK-made targets), times ``--calls`` calls of each of three runtimes
interleaved (one call of each in turn, the order rotated every round, so that they meet the same
moments of the machine) and
prints the median time per call and its ratio to one thread's (> 1: faster than one thread):

- ``default``: ``robokin_ros.Runtime()`` (every core, no more than the cores other processes
  leave free now: :mod:`robokin_ros.free_cores`);
- ``all cores``: ``Runtime(share_cores=False)`` (every core whatever the machine does: what the
  default did before issue 38);
- ``1 thread``: ``Runtime(threads=1)``.

Then the batch check against Pinocchio: FK of every link of ``--batch`` configurations, allocating,
on the default runtime, against ``pinocchio.framesForwardKinematics`` in a Python loop (2,000
configurations), per configuration, median of ``--calls`` interleaved calls, on example-robot-data's
UR5, Panda, xArm7 and Talos (``--erd``; skipped without Pinocchio or example-robot-data).

"busy": ``cores - 1`` processes spinning at normal priority (started here, stopped at the end),
so that one core is left; "quiet": none. Results of every runtime are checked bit-identical.
"""

from __future__ import annotations

import argparse
import multiprocessing
import pathlib
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))   # this checkout's robokin_ros
import robokin_ros as rk  # noqa: E402
from robokin_ros.free_cores import available_cores  # noqa: E402

ROBOTS = pathlib.Path(rk.__file__).resolve().parent / "robots"
TIPS = {"ur5e": "tool0", "panda": "panda_hand"}


def _spin(stop) -> None:
    while not stop.is_set():
        for _ in range(100_000):
            pass


def calls(model, tip, q, targets):
    out = np.empty((len(q), model.n_links, 4, 4))
    v = np.zeros_like(q)
    seeds = q[:len(targets)]
    return {
        "FK new": lambda: rk.forward_kinematics(model, q),
        "FK out=": lambda: rk.forward_kinematics(model, q, out=out),
        "J tip": lambda: rk.jacobian(model, q, tip),
        "RNEA": lambda: rk.rnea(model, q, v, v),
        "IK": lambda: rk.solve_ik(model, targets, tip, seeds, timeout=None, rng=0).q,
    }


def measure(runtimes: dict, fn, n_calls: int) -> dict:
    """Median seconds per call of ``fn`` under each runtime, interleaved; and bit-identity."""
    times = {name: [] for name in runtimes}
    results = {}
    for name, runtime in runtimes.items():   # warm-up, and the results to compare (copies: out= is reused)
        with rk.using(runtime):
            results[name] = np.copy(fn())
    names = list(runtimes)
    for k in range(n_calls):   # one call of each in turn, the order rotated every round (no runtime always first)
        for name in names[k % len(names):] + names[:k % len(names)]:
            runtime = runtimes[name]
            with rk.using(runtime):
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    same = all(np.array_equal(results["1 thread"], r) for r in results.values())
    return {name: statistics.median(t) for name, t in times.items()}, same


def pinocchio_rows(args) -> None:
    """FK of every link, a batch on the default runtime, against Pinocchio in a Python loop."""
    try:
        import pinocchio as pin
        sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "test"))
        from peers import ERD_ROBOTS, example_robot_data_dir
    except ImportError as error:
        print(f"(Pinocchio rows not run: {error})")
        return
    base = example_robot_data_dir()
    if base is None:
        print("(Pinocchio rows not run: example-robot-data is not installed)")
        return
    runtime = rk.Runtime()
    for name in filter(None, args.erd.split(",")):   # (--erd "": none)
        path = pathlib.Path(base) / ERD_ROBOTS[name]
        model = rk.RobotModel.from_urdf_file(path)
        pm = pin.buildModelFromUrdf(str(path))
        pd = pm.createData()
        q = model.random_configuration(args.batch, np.random.default_rng(0))
        pq = [pin.randomConfiguration(pm) for _ in range(2000)]
        rk.prepare(model)

        def ours():
            with rk.using(runtime):
                rk.forward_kinematics(model, q)

        def peer():
            for x in pq:
                pin.framesForwardKinematics(pm, pd, x)

        ours(), peer()
        times = {"ours": [], "pin": []}
        for k in range(args.calls):
            for label, fn in ((("ours", ours), ("pin", peer))[::1 if k % 2 else -1]):
                start = time.perf_counter()
                fn()
                times[label].append(time.perf_counter() - start)
        us = statistics.median(times["ours"]) / args.batch * 1e6
        us_pin = statistics.median(times["pin"]) / len(pq) * 1e6
        print(f"{name:7s} FK every link, batch: robokin {us:6.3f} µs/config, Pinocchio loop {us_pin:6.3f} "
              f"µs/config: {us_pin / us:5.1f}x")


def run(args, label: str) -> None:
    runtimes = {"default": rk.Runtime(), "all cores": rk.Runtime(share_cores=False), "1 thread": rk.Runtime(threads=1)}
    print(f"-- {label}: median of {args.calls} calls, batch {args.batch} (IK {args.ik}); ratio = 1 thread / runtime")
    for name in args.robots.split(","):
        model = rk.RobotModel.from_urdf_file(ROBOTS / f"{name}.urdf")
        tip = TIPS.get(name, model.link_names[-1])
        rng = np.random.default_rng(0)
        q = model.random_configuration(args.batch, rng)
        targets = rk.forward_kinematics(model, model.random_configuration(args.ik, rng), frames=[tip])[:, 0]
        rk.prepare(model, frames=[(tip,)], dynamics=("rnea",))
        rk.prepare_ik(model, tip)
        for call, fn in calls(model, tip, q, targets).items():
            median, same = measure(runtimes, fn, args.calls)
            one = median["1 thread"]
            row = "  ".join(f"{r} {median[r] * 1e3:7.2f} ms ({one / median[r]:4.2f}x)" for r in ("default", "all cores"))
            print(f"{name:6s} {call:8s} 1 thread {one * 1e3:7.2f} ms  {row}  {'identical' if same else 'DIFFERENT'}")
    pinocchio_rows(args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=10000)
    parser.add_argument("--ik", type=int, default=500)
    parser.add_argument("--calls", type=int, default=15)
    parser.add_argument("--robots", default="ur5e,panda")
    parser.add_argument("--erd", default="ur5,panda,xarm7,talos", help="example-robot-data robots against Pinocchio")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--quiet-only", action="store_true")
    which.add_argument("--busy-only", action="store_true")
    args = parser.parse_args()
    cores = available_cores()
    print(f"bench_busy {time.strftime('%Y-%m-%d %H:%M')}: {cores} cores this process may use")
    if not args.busy_only:
        run(args, "quiet (no other process started here)")
    if not args.quiet_only:
        stop = multiprocessing.Event()
        hogs = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(max(0, cores - 1))]
        for hog in hogs:
            hog.start()
        try:
            time.sleep(0.5)
            run(args, f"busy ({len(hogs)} spinning processes: one core left)")
        finally:
            stop.set()
            for hog in hogs:
                hog.join(5)


if __name__ == "__main__":
    main()
