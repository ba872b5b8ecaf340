"""A 100,000-configuration self-collision batch of the bundled Panda (panda.urdf + panda.srdf):
this tree's :func:`robokin_ros.self_collisions` against an older commit's ``collision/batch.py``
(default ``bcf4f15``, which paused the garbage collector while it built the per-configuration
lists), in the same process, interleaved.

Usage: ``python3 bench/bench_collision_lists.py [--before bcf4f15] [--n 100000] [--rounds 15]``
(from the repository root, with this tree first on ``PYTHONPATH``).

Rows: ``before`` (the old batch, collector paused), ``after`` (the call alone: the pairs kept as
index arrays), ``after + .pairs`` (the call, then the nested lists made on reading),
``eager, collector on`` (the old batch without its pause: what removing the pause alone gives),
and each ``before`` / ``after + .pairs`` followed by 20,000 new lists (the collections the pause
only put off). Results are checked equal first.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import time
import types

import numpy as np

import robokin_ros
from robokin_ros.collision import batch as after
from robokin_ros.collision.checker import CollisionModel
from robokin_ros.model import RobotModel

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(robokin_ros.__file__)))


def old_batch(commit: str, name: str, paused: bool = True) -> types.ModuleType:
    """``collision/batch.py`` of ``commit`` as a module (without its collector pause unless ``paused``)."""
    text = subprocess.run(["git", "-C", ROOT, "show", f"{commit}:robokin_ros/collision/batch.py"],
                          capture_output=True, text=True, check=True).stdout
    if not paused:
        text = text.replace("    with _collector_paused():\n", "    if True:\n")
    module = types.ModuleType(f"robokin_ros.collision.{name}")
    module.__package__ = "robokin_ros.collision"
    sys.modules[module.__name__] = module
    exec(compile(text, f"{name}.py", "exec"), module.__dict__)  # noqa: S102 - this repository's own file
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="bcf4f15")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    before, eager = old_batch(args.before, "batch_before"), old_batch(args.before, "batch_eager", paused=False)
    robots = os.path.join(ROOT, "robokin_ros", "robots")
    model = RobotModel.from_urdf_file(os.path.join(robots, "panda.urdf"))
    with open(os.path.join(robots, "panda.srdf"), encoding="utf-8") as f:
        cm = CollisionModel.build(model, srdf=f.read())
    q = model.random_configuration(args.n, np.random.default_rng(0))
    while not (cm.single_check is not None and cm.single_check.batch_ready(len(q))):
        after.self_collisions(cm, q[:2000])
        time.sleep(0.5)
    reference, found = before.self_collisions(cm, q), after.self_collisions(cm, q)
    assert np.array_equal(reference.in_collision, found.in_collision) and reference.pairs == found.pairs
    print(f"results equal; {reference.in_collision.mean():.1%} in collision; "
          f"{len(gc.get_objects()):,} objects tracked by the collector")
    del reference, found
    times: dict[str, list[float]] = {}

    def timed(label: str, start: float) -> None:
        times.setdefault(label, []).append(time.perf_counter() - start)

    for _ in range(args.rounds):
        start = time.perf_counter()
        eager.self_collisions(cm, q)
        timed("eager, collector on", start)
        start = time.perf_counter()
        before.self_collisions(cm, q)
        timed("before (collector paused)", start)
        [[] for _ in range(20_000)]
        timed("before + 20k new lists", start)
        start = time.perf_counter()
        result = after.self_collisions(cm, q)
        timed("after (call)", start)
        len(result.pairs)
        timed("after + .pairs", start)
        [[] for _ in range(20_000)]
        timed("after + .pairs + 20k new lists", start)
        del result
    for label, values in times.items():
        print(f"{label:32s} median {statistics.median(values) * 1e3:7.1f} ms  min {min(values) * 1e3:7.1f} ms")


if __name__ == "__main__":
    main()
