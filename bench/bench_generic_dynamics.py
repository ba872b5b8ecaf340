"""The generic compiled dynamics against the per-robot generated kernels, numpy and Pinocchio (issue 38, item 2).

Usage: ``python3 bench/bench_generic_dynamics.py [--rounds N] [--batch B]``.

Per robot (the bundled UR5e and Panda, the H1_2 humanoid of ``../shared/urdf-corpus`` when
present), in one process, interleaved rounds (:func:`timing.interleaved`), best per-configuration
time, RNEA and CRBA:

- a batch of ``B`` configurations on one thread: generic numba
  (:mod:`robokin_ros.kernels.generic_dynamics_tier`), generated numba (the robot's own kernel,
  compiled first), the numpy recursions (a runtime of kind ``"generic"``);
- one configuration per call: the generic and generated compiled single entries (as
  :class:`robokin_ros.Kinematics` calls them), the numpy recursions, Pinocchio's ``rnea`` /
  ``crba`` (fixed base).

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
from robokin_ros.kernels import dynamics_codegen, generic_tier, parallel  # noqa: E402

CORPUS = os.path.join(HERE, "..", "..", "shared", "urdf-corpus")
ROBOTS = [("UR5e", os.path.join(HERE, "..", "robokin_ros", "robots", "ur5e.urdf")),
          ("Panda", os.path.join(HERE, "..", "robokin_ros", "robots", "panda.urdf")),
          ("H1_2 (humanoid)", os.path.join(CORPUS, "h1_2.urdf"))]
G = np.array([0.0, 0.0, -9.81])


def _pinocchio(path, model, q, v, a):
    """Pinocchio's rnea and crba of one configuration at a time (None without Pinocchio)."""
    try:
        import pinocchio as pin
        from peers import pin_configuration
    except ImportError:
        return None
    pm = pin.buildModelFromUrdf(path)
    pd = pm.createData()
    P = np.zeros((pm.nv, model.n_v))   # Pinocchio's velocity of ours (a mimic joint moves with its source)
    for jid in range(1, pm.njoints):
        j = model.joint_index(pm.names[jid])
        scale = model.mimic_multiplier[j] if model.is_mimic[j] else 1.0
        P[pm.joints[jid].idx_v, model.joint_v_index[model.velocity_source_joints[j]]] = scale
    pq = [pin_configuration(model, pm, x) for x in q]
    pv, pa = v @ P.T, a @ P.T
    return (lambda: [pin.rnea(pm, pd, x, dx, ddx) for x, dx, ddx in zip(pq, pv, pa)],
            lambda: [pin.crba(pm, pd, x) for x in pq])


def _rows(kernel_batch, inputs, width):
    out = np.empty((inputs[0].shape[0], width))
    return lambda: parallel.run_rows(kernel_batch, inputs, out, 1)


def _numpy(call):
    def run():
        with rk.current_runtime().use(kind="generic"):
            call()
    return run


def bench_robot(label, path, batch, rounds) -> list[str]:
    model = rk.RobotModel.from_urdf_file(path)
    rng = np.random.default_rng(0)
    q = model.random_configuration(batch, rng=0)
    v, a = rng.normal(size=(2, batch, model.n_v))
    rnea = dynamics_codegen.compiled_rnea(model, True, True, G)
    crba = dynamics_codegen.compiled_crba(model)
    generic_rnea, generic_crba = rnea.generic(), crba.generic()
    assert rnea.accelerate() and crba.accelerate()
    n = model.n_v
    none = lambda: None  # noqa: E731
    timers = {("RNEA", "generic numba"): (none, _rows(generic_rnea.batch, (q, v, a), n), batch),
              ("RNEA", "generated numba"): (none, lambda: rnea.batch(q, v, a, threads=1), batch),
              ("RNEA", "numpy"): (none, _numpy(lambda: rk.rnea(model, q, v, a)), batch),
              ("CRBA", "generic numba"): (none, _rows(generic_crba.batch, (q,), n * n), batch),
              ("CRBA", "generated numba"): (none, lambda: crba.batch(q, threads=1), batch),
              ("CRBA", "numpy"): (none, _numpy(lambda: rk.crba(model, q)), batch)}
    best = interleaved(timers, rounds)
    k = 200
    tau, M = np.empty(n), np.empty((n, n))
    rows = list(zip(q[:k], v[:k], a[:k]))
    singles = {("RNEA", "generic numba"): (none, lambda: [generic_rnea.single(x, dx, ddx, tau) for x, dx, ddx in rows], k),
               ("RNEA", "generated numba"): (none, lambda: [rnea.accelerated_single(x, dx, ddx, tau)
                                                            for x, dx, ddx in rows], k),
               ("RNEA", "numpy"): (none, _numpy(lambda: [rk.rnea(model, x, dx, ddx) for x, dx, ddx in rows[:20]]), 20),
               ("CRBA", "generic numba"): (none, lambda: [generic_crba.single(x, M) for x in q[:k]], k),
               ("CRBA", "generated numba"): (none, lambda: [crba.accelerated_single(x, M) for x in q[:k]], k),
               ("CRBA", "numpy"): (none, _numpy(lambda: [rk.crba(model, x) for x in q[:20]]), 20)}
    pin = _pinocchio(path, model, q[:k], v[:k], a[:k])
    if pin is not None:
        singles[("RNEA", "Pinocchio")] = (none, pin[0], k)
        singles[("CRBA", "Pinocchio")] = (none, pin[1], k)
    one = interleaved(singles, rounds)
    us = lambda s: f"{s * 1e6:.2f}"  # noqa: E731
    out = [f"| {label} ({model.n_links} links, n_v {n}) | batch {batch}, 1 thread, µs per configuration | |"]
    out += [f"| | {algo} {kind} | {us(t)} |" for (algo, kind), t in best.items()]
    out += [f"| | single {algo} {kind}, µs per call | {us(t)} |" for (algo, kind), t in one.items()]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--batch", type=int, default=10_000)
    args = parser.parse_args()
    if not generic_tier.generic_kernels().load():
        sys.exit("the generic kernels are unavailable (numba missing or off)")
    print(f"# {datetime.date.today()} generic vs generated numba vs numpy vs Pinocchio (dynamics); "
          f"{os.cpu_count()} cores")
    print("| robot | what | time |\n|---|---|---|")
    for label, path in ROBOTS:
        if not os.path.isfile(path):
            print(f"| {label} | skipped: {path} absent | |")
            continue
        for row in bench_robot(label, path, args.batch, args.rounds):
            print(row, flush=True)


if __name__ == "__main__":
    main()
