"""IK on each of its ways to run, single problems and batches, timed in one process: the numba
outer loop on the robot's generated step ("generated"), on the chain step compiled once per
installation ("generic"), and the numpy path ("numpy": numba off).

Usage: ``python3 bench/bench_ik_loops.py [--problems N] [--rounds R] [--json]`` with the tree to
measure first on ``PYTHONPATH``; ``--compare OLD_TREE`` runs this script on OLD_TREE and on this
tree alternately (``--rounds`` times each, one process per run) and prints both: the before/after
table of ``docs/benchmarks.md``. Targets: FK of random configurations within the limits, solved
from the home configuration, tolerance 1e-5, no time limit. Single: median time of one
``solve_ik`` call (N calls); batch: median of the calls on 500 and 10,000 targets (numpy: 500 only).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ARMS = [("ur5e", "ur5e.urdf", "tool0"), ("panda", "panda.urdf", "panda_hand_tcp")]


def _generic_only(model, tip):
    """Make the solver of ``(model, tip)`` run on the chain step: its generated step unloaded."""
    from robokin_ros.ik import IKOptions, generic_loop, generic_loop_loading
    from robokin_ros.ik.call import ik_call
    try:
        from robokin_ros.ik.chain_arrays import chain_data
    except ImportError:   # (the tree before the one outer loop)
        chain_data = generic_loop.chain_data
    s = ik_call(model, (tip,), IKOptions()).solver
    assert generic_loop_loading.KERNELS.load()
    s.chain, s._generic = chain_data(s), None
    s.loop.function = lambda *args: None


def _measure(problems: int) -> dict:
    import robokin_ros as rk
    from robokin_ros.ik import prepare_ik, solve_ik
    from robokin_ros.runtime import current_runtime
    robots = os.path.join(os.path.dirname(rk.__file__), "robots")
    rows = {}
    for name, urdf, tip in ARMS:
        rng = np.random.default_rng(7)
        for tier in ("generated", "generic", "numpy"):
            model = rk.RobotModel.from_urdf_file(os.path.join(robots, urdf))   # (a solver of its own)
            T = rk.frame_transform(model, model.random_configuration(10_000, rng), model.root_link, tip)
            with current_runtime().use(accelerated=tier != "numpy"):
                if tier == "generated":
                    assert prepare_ik(model, tip)
                elif tier == "generic":
                    _generic_only(model, tip)
                solve_ik(model, T[:600], tip)   # warm
                times, solved = [], 0
                for k in range(problems):
                    start = time.perf_counter()
                    r = solve_ik(model, T[k], tip)
                    times.append(time.perf_counter() - start)
                    solved += bool(r.success)
                row = {"single_us": 1e6 * float(np.median(times)), "single_solved": solved / problems}
                for n in (500, 10_000) if tier != "numpy" else (500,):
                    batch = []
                    for _ in range(3 if n == 10_000 else 5):
                        start = time.perf_counter()
                        r = solve_ik(model, T[:n], tip)
                        batch.append(time.perf_counter() - start)
                    row[f"batch{n}_ms"] = 1e3 * float(np.median(batch))
                    row[f"batch{n}_solved"] = float(r.success.mean())
            rows[f"{name} {tier}"] = row
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--compare", metavar="OLD_TREE")
    args = parser.parse_args()
    if not args.compare:
        rows = _measure(args.problems)
        print(json.dumps(rows) if args.json else "\n".join(f"{k:18s} {v}" for k, v in rows.items()))
        return
    trees = {"before": os.path.abspath(args.compare), "after": os.path.abspath(os.path.join(HERE, ".."))}
    runs: dict = {"before": [], "after": []}
    for _ in range(args.rounds):
        for label, tree in trees.items():
            env = dict(os.environ, PYTHONPATH=tree)
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--json", "--problems",
                                   str(args.problems)], env=env, capture_output=True, text=True, check=True)
            runs[label].append(json.loads(done.stdout.strip().splitlines()[-1]))
    keys = ["single_us", "single_solved", "batch500_ms", "batch500_solved", "batch10000_ms", "batch10000_solved"]
    print(f"{'':18s} " + " ".join(f"{k:>22s}" for k in keys))
    for row in runs["before"][0]:
        for label in ("before", "after"):
            values = [min(r[row].get(k, np.nan) for r in runs[label]) if k.endswith(("_us", "_ms"))
                      else runs[label][0][row].get(k, np.nan) for k in keys]
            print(f"{row + ' ' + label:24s} " + " ".join(f"{v:22.4g}" for v in values))


if __name__ == "__main__":
    main()
