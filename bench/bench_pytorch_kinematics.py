"""robokin_ros against pytorch_kinematics on the CPU, in the same process: batched FK of every link
and batched IK (issue 31's peer; on a GPU too when torch sees one).

Usage: ``python3 bench/bench_pytorch_kinematics.py [--fk 20000] [--ik 2000] [--rounds 5]`` in an
environment with torch and pytorch_kinematics beside robokin_ros's own (not a dependency of the
project: the script says so and stops without them).

* FK: ``--fk`` random configurations within the limits; robokin ``forward_kinematics`` of every
  link on 1 thread and on every core, pytorch_kinematics ``chain.forward_kinematics`` of every
  link in float64 and float32 on 1 and on every torch thread (best of ``--rounds``); the largest
  difference of the tip's pose from robokin's.
* IK, one seed per target (the TRAC-IK protocol's): ``--ik`` targets = FK of configurations
  uniform within the chain's limits (other joints at home), seed at mid-limits, 1e-5 m / rad; robokin
  ``solve_ik`` of the batch (no time budget; best of ``--rounds``), pytorch_kinematics ``PseudoInverseIK`` of the batch
  (its defaults but the tolerances, ``retry_configs`` = the seed, 200 iterations), and
  pytorch_kinematics with 10 random retries (its own usage). An answer counts when robokin's FK
  of it reaches the target within 1e-4 m and 1e-3 rad inside the joint limits; "false" counts
  the answers a solver called converged that fail that check.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))   # this checkout's robokin_ros
import robokin_ros as rk  # noqa: E402
from robokin_ros.kernels import parallel  # noqa: E402

ROBOTS = pathlib.Path(rk.__file__).resolve().parent / "robots"
TIPS = {"ur5e": "tool0", "panda": "panda_hand"}


def best(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def pose_error(model, q, tip, T):
    """``(position [m], rotation [rad])`` errors of robokin's FK of ``q (B, n_q)`` from ``T (B, 4, 4)``."""
    F = rk.forward_kinematics(model, q, frames=[tip])[:, 0]
    position = np.linalg.norm(F[:, :3, 3] - T[:, :3, 3], axis=-1)
    R = np.einsum("bji,bjk->bik", F[:, :3, :3], T[:, :3, :3])
    rotation = np.arccos(np.clip((np.trace(R, axis1=1, axis2=2) - 1) / 2, -1, 1))
    return position, rotation


def joint_values(model, q, names) -> np.ndarray:
    """``(B, len(names))`` the values of the joints ``names`` at ``q (B, n_q)``, mimic joints
    included (pytorch_kinematics takes them as parameters)."""
    j = [list(model.all_joint_names).index(n) for n in names]
    source = [model.mimic_source[k] if model.is_mimic[k] else k for k in j]
    return (model.mimic_multiplier[j] * q[:, model.joint_q_index[source]] + model.mimic_offset[j])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fk", type=int, default=20000)
    parser.add_argument("--ik", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    try:
        import pytorch_kinematics as pk
        import torch
    except ImportError as error:
        sys.exit(f"bench_pytorch_kinematics: needs torch and pytorch_kinematics ({error})")
    cores = parallel.available_cores()
    from importlib.metadata import version
    print(f"torch {torch.__version__}, pytorch_kinematics {version('pytorch_kinematics')}, cores {cores}, "
          f"GPU {torch.cuda.is_available()}; FK {args.fk} configurations, IK {args.ik} targets, best of {args.rounds}")
    for name, tip in TIPS.items():
        xml = (ROBOTS / f"{name}.urdf").read_text()
        model = rk.RobotModel.from_urdf(xml)
        rk.prepare(model, frames=[(tip,)])
        rk.prepare_ik(model, tip)
        rng = np.random.default_rng(0)
        chain = pk.build_chain_from_urdf(xml.encode()).to(dtype=torch.float64)
        q = model.random_configuration(args.fk, rng)
        pk_q = joint_values(model, q, chain.get_joint_parameter_names())
        for threads in (1, cores):
            t = best(lambda: rk.forward_kinematics(model, q, threads=threads), args.rounds)   # noqa: B023
            print(f"{name:6s} FK robokin  {threads} thr      {t / len(q) * 1e6:7.3f} µs/config")
        reference = rk.forward_kinematics(model, q, frames=[tip])[:, 0]
        for dtype in (torch.float64, torch.float32):
            c = chain.to(dtype=dtype)
            th = torch.tensor(pk_q, dtype=dtype)
            for threads in (1, cores):
                torch.set_num_threads(threads)
                t = best(lambda: c.forward_kinematics(th), args.rounds)   # noqa: B023
                tip_pose = c.forward_kinematics(th)[tip].get_matrix().double().numpy()
                error = np.abs(tip_pose - reference).max()
                print(f"{name:6s} FK pk {str(dtype)[6:]:7s} {threads} thr {t / len(q) * 1e6:7.3f} µs/config"
                      f"  (tip differs from robokin by {error:.1e})")
        ik_benchmark(pk, torch, model, xml, tip, args, rng, cores)


def ik_benchmark(pk, torch, model, xml, tip, args, rng, cores) -> None:
    """The IK half of :func:`main` for one robot."""
    serial = pk.build_serial_chain_from_urdf(xml.encode(), tip).to(dtype=torch.float64)
    names = serial.get_joint_parameter_names()
    columns = [model.q_names.index(n) for n in names]
    lower, upper = model.q_lower[columns], model.q_upper[columns]
    home = model.home_configuration()
    q = np.tile(home, (args.ik, 1))
    q[:, columns] = rng.uniform(lower, upper, (args.ik, len(columns)))
    targets = rk.forward_kinematics(model, q, frames=[tip])[:, 0]
    seed = home.copy()
    seed[columns] = 0.5 * (lower + upper)
    seeds = np.tile(seed, (args.ik, 1))

    def verdict(answers, claimed):
        position, rotation = pose_error(model, answers, tip, targets)
        inside = ((answers >= model.q_lower - 1e-9) & (answers <= model.q_upper + 1e-9)).all(axis=1)
        ok = (position < 1e-4) & (rotation < 1e-3) & inside
        return f"{ok.mean() * 100:6.2f} % solved, {int((claimed & ~ok).sum())} false"

    for threads in (1, cores):
        def solve(threads=threads):
            return rk.solve_ik(model, targets, tip, seeds, timeout=None, rng=0, threads=threads)
        result = solve()
        t = best(solve, args.rounds)
        print(f"{model.name:6s} IK robokin {threads} thr, one seed     {args.ik / t:9.0f} solves/s  "
              f"{verdict(result.q, result.success)}")
    goal = pk.Transform3d(matrix=torch.tensor(targets))
    limits = torch.tensor(np.stack([lower, upper], axis=1))
    torch.set_num_threads(cores)
    for label, retries in (("one seed", None), ("10 random retries", 10)):
        extra = {"retry_configs": torch.tensor(seed[columns][None])} if retries is None else {"num_retries": retries}
        ik = pk.PseudoInverseIK(serial, pos_tolerance=1e-5, rot_tolerance=1e-5, joint_limits=limits,
                                max_iterations=200, early_stopping_any_converged=True, **extra)
        start = time.perf_counter()
        solution = ik.solve(goal)
        t = time.perf_counter() - start
        converged = solution.converged.numpy()
        pick = np.where(converged.any(axis=1), converged.argmax(axis=1), 0)
        answers = np.tile(home, (args.ik, 1))
        answers[:, columns] = solution.solutions.numpy()[np.arange(args.ik), pick]
        print(f"{model.name:6s} IK pk {cores} thr, {label:17s} {args.ik / t:9.0f} solves/s  "
              f"{verdict(answers, converged.any(axis=1))}")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", str(parallel.available_cores()))
    main()
