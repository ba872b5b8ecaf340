"""Reachability maps: poses/s of the engines, and the serial parts of a run.

For the bundled UR5e and Panda at 0.05 m and 50 orientations (the maps of ``robokin reach``'s
defaults), a sample of the map's chunks (every k-th, so the sample spans the grid: reachable
voxels and unreachable ones, which cost the full iteration budget) is solved by

* 1 local process (this one, kernels loaded: the steady rate of one core),
* 2 local processes (a ``spawn``ed pool whose workers have prepared the job),
* a local Ray cluster of 2 CPUs (workers that have prepared the job; skipped without Ray),

each ``--rounds`` times, interleaved (the best round counts: the machine is shared),

and the serial parts of a run are timed: a fresh process preparing the job (URDF parse, reach,
grid, numba kernels from the disk cache), the same with an empty cache (kernel compile), the
start-up of a 2-process pool and of Ray's 2 workers, and the gather (assemble and save the full
map's arrays). Prints a Markdown table for docs/cli.md.

Run: ``tools/run_in_env.sh python bench/bench_reach.py [--chunks N] [--rounds R] [--no-ray]``
(any environment with Ray for the Ray rows).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from robokin_ros.reach import ReachParameters  # noqa: E402
from robokin_ros.reach import engines as reach_engines  # noqa: E402
from robokin_ros.reach.chunks import ChunkResult, ReachJob, prepared  # noqa: E402
from robokin_ros.reach.engines import run_here, run_ray  # noqa: E402
from robokin_ros.reach.reach_map import ReachMap  # noqa: E402

ROBOTS = (("UR5e", "ur5e.urdf", "tool0"), ("Panda", "panda.urdf", "panda_hand_tcp"))

PREPARE = """
import sys, time
sys.path.insert(0, {root!r})
t = time.perf_counter()
from robokin_ros.reach.chunks import ReachJob, prepared
from robokin_ros.reach import ReachParameters
job = ReachJob(open({urdf!r}).read(), ReachParameters({tip!r}))
t_import = time.perf_counter()
prepared(job)
print(t_import - t, time.perf_counter() - t_import)
"""


def fresh_prepare(urdf: Path, tip: str, cache_dir: str | None = None) -> tuple[float, float]:
    """(import, prepare) seconds in a new interpreter (``cache_dir``: an empty kernel cache)."""
    env = dict(os.environ, **({"ROBOKIN_CACHE_DIR": cache_dir} if cache_dir else {}))
    out = subprocess.run([sys.executable, "-c", PREPARE.format(root=str(ROOT), urdf=str(urdf), tip=tip)],
                         env=env, capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def _ready(job: ReachJob) -> int:
    prepared(job)
    time.sleep(0.5)   # (so that every worker gets one)
    return os.getpid()


def _ready_installed(_) -> int:
    return _ready(reach_engines._WORKER_JOB)


def started_pool(job: ReachJob, workers: int) -> tuple[ProcessPoolExecutor, float]:
    """A spawned pool of ``workers`` that has prepared ``job`` in each, and the seconds that took
    (as :func:`~robokin_ros.reach.engines.run_processes` starts its pool)."""
    import multiprocessing
    t = time.perf_counter()
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=reach_engines._install, initargs=(job,))
    list(pool.map(_ready_installed, range(workers)))
    return pool, time.perf_counter() - t - 0.5


def on_pool(pool: ProcessPoolExecutor, chunks, workers: int):
    """The chunks on a started pool (what ``run_processes`` does once its pool is up)."""
    e = reach_engines
    return e._bounded(lambda index: pool.submit(e._worker_chunk, index), lambda f: f.result(), e._wait_futures,
                      chunks, workers * (1 + e.QUEUE_PER_WORKER))


def timed(engine) -> tuple[float, int]:
    """(seconds, poses) of consuming an engine."""
    t = time.perf_counter()
    poses = sum(result.solved.size for _, result in engine)
    return time.perf_counter() - t, poses


def gather_seconds(job: ReachJob) -> float:
    """Assemble the full map from chunk results and save it (random results of the right sizes)."""
    here = prepared(job)
    rng = np.random.default_rng(0)
    n_ori = len(here.rotations)
    chunks = [ChunkResult(rng.random((s.stop - s.start, n_ori)) < 0.5, np.full(s.stop - s.start, np.nan))
              for s in map(here.chunk_voxels, range(here.n_chunks))]
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        solved = np.concatenate([c.solved for c in chunks])
        manip = np.concatenate([c.manipulability for c in chunks])
        ReachMap(job.parameters, job.robot_sha256, here.grid.resolution, here.grid.origin, here.grid.shape,
                 here.grid.voxels.astype(np.int32), solved.mean(axis=1), manip, solved, here.rotations,
                 here.reach_centre, here.reach_radius).save(os.path.join(tmp, "map.npz"))
        return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=24, help="chunks sampled per robot (default 24)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every engine (default 2)")
    parser.add_argument("--no-ray", action="store_true")
    args = parser.parse_args()
    try:
        import ray
    except ImportError:
        ray = None
    rows, notes = [], []
    ray_init = None
    for label, name, tip in ROBOTS:
        urdf = ROOT / "robokin_ros" / "robots" / name
        job = ReachJob(urdf.read_text(), ReachParameters(tip, resolution=0.05, orientations=50))
        here = prepared(job)
        sample = list(np.linspace(0, here.n_chunks - 1, min(args.chunks, here.n_chunks)).round().astype(int))
        total_poses = len(here.grid.voxels) * len(here.rotations)
        pool, startup = started_pool(job, 2)
        engines = {"1 process": lambda: run_here(job, sample), "2 processes": lambda: on_pool(pool, sample, 2)}
        ray_workers = None
        if ray is not None and not args.no_ray:
            if ray_init is None:
                t = time.perf_counter()
                ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}},
                         log_to_driver=False)
                ray_init = time.perf_counter() - t
            t = time.perf_counter()
            remote = ray.remote(num_cpus=1)(_ready)
            ray.get([remote.remote(job) for _ in range(2)])
            ray_workers = time.perf_counter() - t - 0.5
            engines["Ray, 2 CPUs"] = lambda: run_ray(job, sample, "auto")
        timings = {}
        for _ in range(args.rounds):
            for engine, run in engines.items():
                seconds, poses = timed(run())
                timings[engine] = min(timings.get(engine, (np.inf, 0)), (seconds, poses))
        pool.shutdown()
        warm_import, warm = fresh_prepare(urdf, tip)
        with tempfile.TemporaryDirectory() as empty:
            _, cold = fresh_prepare(urdf, tip, empty)
        gather = gather_seconds(job)
        base = timings["1 process"][1] / timings["1 process"][0]
        for engine, (seconds, poses) in timings.items():
            rate = poses / seconds
            rows.append(f"| {label} | {engine} | {poses:,} | {seconds:.1f} | {rate:,.0f} | {rate / base:.2f} |"
                        f" {total_poses / rate / 60:.1f} |")
        notes.append(f"| {label} | {len(here.grid.voxels):,} x 50 = {total_poses:,} | {here.n_chunks:,} |"
                     f" {warm_import:.2f} + {warm:.2f} | {cold:.1f} | {startup:.1f} |"
                     f" {'-' if ray_workers is None else f'{ray_workers:.1f}'} | {gather:.2f} |")
    if ray is not None and ray.is_initialized():
        ray.shutdown()
    print(f"Sample: {args.chunks} chunks of 2,048 poses (40 voxels x 50 orientations) spread over each map; "
          f"{os.cpu_count()} cores, machine load {os.getloadavg()[0]:.1f}.\n")
    print("| robot | engine | poses | s | poses/s | vs 1 process | full map, min |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print("\nSerial parts [s]" + (f" (ray.init of the 2-CPU cluster: {ray_init:.1f} s)" if ray_init else "") + ":\n")
    print("| robot | map poses | chunks | fresh process: import + prepare (cached kernels) | prepare, empty cache "
          "(compile) | 2-process pool start-up | Ray 2 workers start-up | gather + save |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(notes))


if __name__ == "__main__":
    main()
