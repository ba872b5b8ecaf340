"""The generic compiled tier against the per-robot generated kernels, numpy and Pinocchio (issue 38, item 2).

Usage: ``python3 bench/bench_generic_kernels.py [--rounds N] [--batch B]``.

Per robot (the bundled UR5e and Panda, the H1_2 humanoid of ``../shared/urdf-corpus`` when
present), in one process, interleaved rounds (:func:`timing.interleaved`), best per-call time:

- FK of every link, a batch of ``B`` configurations on one thread and on the default threads:
  generic numba (:mod:`robokin_ros.kernels.generic_tier`), generated numba (the robot's own kernel,
  compiled first), the numpy oracle (``forward_kinematics_generic``)
  and Pinocchio's ``framesForwardKinematics`` in a Python loop;
- FK of every link and the tip's LOCAL_WORLD_ALIGNED Jacobian, one configuration per call
  (the compiled single entries as :class:`robokin_ros.Kinematics` calls them) against Pinocchio's
  ``framesForwardKinematics`` / ``computeFrameJacobian``;
- the tip's pose + Jacobian of a batch (what ``jacobian(model, qb, tip)`` runs), one thread.

Every compiled kernel is loaded before anything is timed.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "test"))

from timing import interleaved  # noqa: E402

import robokin_ros as rk  # noqa: E402
from robokin_ros.kernels import fk_codegen, generic_tier, parallel  # noqa: E402
from robokin_ros.kinematics.fk import forward_kinematics_generic  # noqa: E402

CORPUS = os.path.join(HERE, "..", "..", "shared", "urdf-corpus")
ROBOTS = [("UR5e", os.path.join(HERE, "..", "robokin_ros", "robots", "ur5e.urdf"), "tool0"),
          ("Panda", os.path.join(HERE, "..", "robokin_ros", "robots", "panda.urdf"), "panda_hand_tcp"),
          ("H1_2 (humanoid)", os.path.join(CORPUS, "h1_2.urdf"), "left_wrist_yaw_link")]


def _pinocchio(path, model, q):
    try:
        import pinocchio as pin
        from peers import pin_configuration
    except ImportError:
        return None
    pmodel = pin.buildModelFromUrdf(path)
    return pin, pmodel, pmodel.createData(), [pin_configuration(model, pmodel, x) for x in q]


def _rows(kernel_batch, q, size, threads):
    out = np.empty((q.shape[0], size))
    return lambda: parallel.run_rows(kernel_batch, (q,), out, threads)


def bench_robot(label, path, tip, batch, rounds) -> list[str]:
    model = rk.RobotModel.from_urdf_file(path)
    q = model.random_configuration(batch, rng=0)
    fk = fk_codegen.compiled_fk(model)
    frames = fk_codegen.compiled_frames(model, (tip,))
    jac = fk_codegen.compiled_jacobian(model, tip)
    generic, generic_frames, generic_jac = fk.generic(), frames.generic(), jac.generic()
    assert fk.accelerate() and frames.accelerate() and jac.accelerate()
    size, fsize = model.n_links * 16, 10 * max(4, model.n_v)
    none = lambda: None  # noqa: E731
    batch_timers = {}
    for threads in (1, None):
        name = "1 thread" if threads == 1 else f"{parallel.thread_count()} threads"
        batch_timers[("generic numba", name)] = (none, _rows(generic.batch, q, size, threads), batch)
        batch_timers[("generated numba", name)] = (none, lambda t=threads: fk.batch(q, threads=t), batch)

    batch_timers[("numpy oracle", "")] = (none, lambda: forward_kinematics_generic(model, q), batch)
    pin = _pinocchio(path, model, q[:2000])
    if pin is not None:
        p, pmodel, pdata, pq = pin
        batch_timers[("Pinocchio loop", "")] = (none, lambda: [p.framesForwardKinematics(pmodel, pdata, x) for x in pq],
                                                 len(pq))
    batch_timers[("frames generic", "1 thread")] = (none, _rows(generic_frames.batch, q, fsize, 1), batch)
    batch_timers[("frames generated", "1 thread")] = (none, lambda: frames.batch(q, threads=1), batch)
    best = interleaved(batch_timers, rounds)
    single = q[:200]
    T, J = np.empty((model.n_links, 4, 4)), np.empty((6, model.n_v))
    timers = {"FK generic": (none, lambda: [generic.single(x, T) for x in single], len(single)),
              "FK generated": (none, lambda: [fk.accelerated_single(x, T) for x in single], len(single)),
              "J generic": (none, lambda: [generic_jac.single(x, J) for x in single], len(single)),
              "J generated": (none, lambda: [jac.accelerated_single(x, J) for x in single], len(single))}
    if pin is not None:
        fid = pmodel.getFrameId(tip)
        timers["FK Pinocchio"] = (none, lambda: [p.framesForwardKinematics(pmodel, pdata, x) for x in pq[:200]], 200)
        timers["J Pinocchio"] = (none, lambda: [p.computeFrameJacobian(pmodel, pdata, x, fid, p.LOCAL_WORLD_ALIGNED)
                                                for x in pq[:200]], 200)
    one = interleaved(timers, rounds)
    us = lambda s: f"{s * 1e6:.2f}"  # noqa: E731
    rows = [f"| {label} ({model.n_links} links, n_q {model.n_q}) | batch FK {batch}, µs per configuration | |"]
    rows += [f"| | {kind} {threads} | {us(t)} |" for (kind, threads), t in best.items()]
    rows += [f"| | single {key}, µs per call | {us(t)} |" for key, t in one.items()]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--batch", type=int, default=10_000)
    args = parser.parse_args()
    if not generic_tier.generic_kernels().load():
        sys.exit("the generic kernels are unavailable (numba missing or off)")
    print(f"# {datetime.date.today()} generic vs generated numba vs numpy vs Pinocchio; {os.cpu_count()} cores")
    print("| robot | what | time |\n|---|---|---|")
    for label, path, tip in ROBOTS:
        if not os.path.isfile(path):
            print(f"| {label} | skipped: {path} absent | |")
            continue
        for row in bench_robot(label, path, tip, args.batch, args.rounds):
            print(row, flush=True)


if __name__ == "__main__":
    main()
