"""Threads scaling of one batched call (issue 31): FK, tip Jacobian, RNEA, self-collision, IK.

Usage: ``python3 bench/bench_threads.py [--batch 20000] [--robots ur5e,panda] [--rounds 7]``.

For each bundled robot, prints the time per configuration of one batched call on 1, 2, ... up to
every core this process may use (``os.sched_getaffinity``), the speed-up against one thread, and
whether the results are bit-identical to one thread's. ``FK`` writes every link's pose into a
reused ``out=`` array; ``FK new`` allocates its output each call (its first-touch page faults
then weigh); ``FK tip`` computes the tip's pose alone (into a reused ``out=`` as well). ``collision`` is
:func:`robokin_ros.self_collisions` (verdicts and the names of the pairs in collision);
``collides`` is :func:`robokin_ros.collision.in_collision` (verdicts only, each configuration
stopping at its first collision: the IK acceptance test). The thread count is the ``threads=``
keyword where the call has one (FK, Jacobian, IK) and ``ROBOKIN_THREADS`` otherwise (RNEA,
self-collision). IK solves ``--ik`` FK-made targets from random seeds on the compiled loop
(prepared first). Kernels are compiled (or loaded from the disk cache) first. Timings are the
best of ``--rounds`` rounds, each round running every thread count once in turn
(:func:`timing.interleaved`), so that on a shared machine they get the same chances at its
quiet moments. Two control rows first show how much parallelism the machine itself gives at the
time: a GIL-free numba loop of arithmetic, and one that only writes as many bytes as ``FK`` of
the UR5e (the ceiling of a call bound by writing its output); and every row ends with the
arithmetic loop's own speed-up timed in the same rounds (``[host 1.9x]``: a row timed while
another tenant held the second core shows it there). pytorch_kinematics is not
installed here (not timed).
"""

from __future__ import annotations

import argparse
import functools
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))   # this checkout's robokin_ros
from timing import interleaved  # noqa: E402

import robokin_ros as rk  # noqa: E402
from robokin_ros.collision import collision_model, in_collision  # noqa: E402
from robokin_ros.kernels import parallel  # noqa: E402

ROBOTS = pathlib.Path(rk.__file__).resolve().parent / "robots"
TIPS = {"ur5e": "tool0", "panda": "panda_hand"}


@functools.cache
def runtime_of(threads: int | None) -> rk.Runtime:
    """One runtime per thread cap for the whole run (a runtime made per call would start its
    worker threads anew in every call)."""
    return rk.Runtime(threads=threads)


def with_threads(threads: int | None, fn):
    """``fn`` run with a runtime of at most ``threads`` threads (None: the default runtime's
    policy: every core, fewer when other processes hold them)."""
    runtime = runtime_of(threads)

    def run():
        with rk.using(runtime):
            return fn()
    return run


def calls(model: rk.RobotModel, tip: str, q: np.ndarray, targets: np.ndarray, out: np.ndarray) -> dict:
    """name -> (function of a thread count returning the result as arrays, configurations per call)."""
    v = np.zeros_like(q)
    return {
        "FK": (lambda t: [rk.forward_kinematics(model, q, threads=t, out=out).copy()], len(q)),
        "FK new": (lambda t: [rk.forward_kinematics(model, q, threads=t)], len(q)),
        "FK tip": (lambda t: [rk.forward_kinematics(model, q, frames=[tip], threads=t)], len(q)),
        "J tip": (lambda t: [rk.jacobian(model, q, tip, threads=t)], len(q)),
        "RNEA": (lambda t: [with_threads(t, lambda: rk.rnea(model, q, v, v))()], len(q)),
        "collision": (lambda t: [with_threads(t, lambda: _named(rk.self_collisions(model, q)))()], len(q)),
        "collides": (lambda t: [with_threads(t, lambda: in_collision(collision_model(model), q))()], len(q)),
        "IK": (lambda t: list(_ik(model, targets, tip, q, t)), len(targets)),
    }


@functools.cache
def _control_kernels():
    """The control rows' numba loops, compiled once (a compile inside a timed call would be timed)."""
    import numba

    @numba.njit(nogil=True, cache=False)
    def spin(n):
        s = 0.0
        for i in range(n):
            s += i * 1e-9
        return s

    @numba.njit(nogil=True, cache=False)
    def fill(a):
        for i in range(a.shape[0]):
            a[i] = i * 0.5

    spin(10)
    fill(np.empty(10))
    return spin, fill


def control(threads: int, kind: str, out: np.ndarray, share: float = 1.0) -> None:
    """The machine's own parallelism now, split over ``threads`` threads: ``"compute"``, a
    GIL-free numba loop of arithmetic (1.0x at 2 threads means the other cores are busy with
    other work, whatever robokin does); ``"memory"``, one that only writes ``out`` (the bytes
    batched FK of every UR5e link writes: the ceiling a call bound by writing its output meets)."""
    import threading

    spin, fill = _control_kernels()
    if kind == "compute":
        work = [threading.Thread(target=spin, args=(int(50_000_000 * share) // threads,)) for _ in range(threads)]
    else:
        step = -(-len(out) // threads)
        work = [threading.Thread(target=fill, args=(out[k * step:(k + 1) * step],)) for k in range(threads)]
    for thread in work:
        thread.start()
    for thread in work:
        thread.join()


def _named(result) -> np.ndarray:
    """A self-collision result as one array: the verdicts, then every named pair's names."""
    names = [f"{b}:{a}/{c}" for b, pairs in enumerate(result.pairs) for a, c in pairs]
    return np.concatenate([result.in_collision.astype(str), np.array(names, str)])


def _ik(model, targets, tip, q, threads: int) -> tuple:
    result = rk.solve_ik(model, targets, tip, q[:len(targets)], timeout=None, rng=0, threads=threads)
    return result.q, result.success, result.iterations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=20000)
    parser.add_argument("--ik", type=int, default=10000, help="IK problems per call")
    parser.add_argument("--robots", default="ur5e,panda")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    cores = parallel.available_cores()
    counts = sorted({1, 2, cores} | {c for c in (4, 8, 16) if c < cores})
    counts = [c for c in counts if c <= cores]
    print(f"cores this process may use: {cores}; batch {args.batch} (IK {args.ik}); best of {args.rounds} rounds")
    written = np.empty(args.batch * 11 * 16)   # UR5e: 11 links of 4 x 4
    for kind in ("compute", "memory"):
        times = interleaved({t: (lambda: None, lambda t=t: control(t, kind, written), 1) for t in counts}, args.rounds)
        print(f"control, {kind} (numba loop, no robokin): "
              + "  ".join(f"{t} thr {times[1] / times[t]:4.2f}x" for t in counts))
    for name in args.robots.split(","):
        model = rk.RobotModel.from_urdf_file(ROBOTS / f"{name}.urdf")
        tip = TIPS.get(name, model.link_names[-1])
        rng = np.random.default_rng(0)
        q = model.random_configuration(args.batch, rng)
        targets = rk.forward_kinematics(model, model.random_configuration(args.ik, rng), frames=[tip])[:, 0]
        rk.prepare(model, frames=[(tip,)], dynamics=("rnea",))
        rk.prepare_ik(model, tip)
        has_pairs = len(collision_model(model).pairs) > 0
        collision_model(model).prepare()   # (the compiled check: else a batch runs numpy's path while it loads)
        out = np.empty((len(q), model.n_links, 4, 4))
        tip_out = np.empty((len(q), 1, 4, 4))
        for label, (fn, n) in calls(model, tip, q, targets, out).items():
            if label in ("collision", "collides") and not has_pairs:
                print(f"{name:6s} {label:9s} (no collision geometry)")
                continue
            fn(1)   # loads what is left (collision kernels start on a first batch)
            reference = fn(1)
            same = {t: all(np.array_equal(a, b) for a, b in zip(reference, fn(t))) for t in counts}
            timed = {"FK": lambda t: rk.forward_kinematics(model, q, threads=t, out=out),   # (no copy)
                     "FK tip": lambda t: rk.forward_kinematics(model, q, frames=[tip], threads=t, out=tip_out),
                     "collision": lambda t: with_threads(t, lambda: rk.self_collisions(model, q))(),   # (no strings)
                     }.get(label, fn)
            timers = {t: (lambda: None, lambda t=t: timed(t), n) for t in counts}
            timers.update({("host", t): (lambda: None, lambda t=t: control(t, "compute", written, 0.2), 1)
                           for t in counts})
            times = interleaved(timers, args.rounds)
            row = "  ".join(f"{t} thr {times[t] * 1e6:7.3f} µs ({times[1] / times[t]:4.2f}x"
                            f"{', identical' if same[t] else ', DIFFERENT'})" for t in counts)
            host = " ".join(f"{times['host', 1] / times['host', t]:4.2f}x" for t in counts[1:])
            print(f"{name:6s} {label:9s} {row}  [host {host}]")


if __name__ == "__main__":
    main()
