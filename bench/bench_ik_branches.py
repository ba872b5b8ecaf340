"""Distinct IK solutions within a time budget: ``solve_ik(..., solutions=k)`` (issue 22, item 4).

Usage: ``python3 bench/bench_ik_branches.py [--targets N]``.

UR5e (its published DH table, continuous joints) against the closed form (Hawkins 2013, in
``test/core/ik/ur_closed_form.py``): per budget, the mean number of the 8 analytic branches found
(a solution matches a branch within 1e-3 rad, modulo 2π). Panda (bundled) and xArm7
(example-robot-data, skipped without it), redundant: the mean number of solutions found pairwise
farther apart than 0.5 rad (of at most 16 asked). Targets are FK of random configurations.
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
sys.path.insert(0, os.path.join(HERE, "..", "test", "core", "ik"))

from peers import ERD_ROBOTS, example_robot_data_dir  # noqa: E402
from ur_closed_form import UR5E_DH, closed_form, fk  # noqa: E402

from robokin_ros import RobotModel, frame_transform  # noqa: E402
from robokin_ros.ik import solve_ik  # noqa: E402

BUDGETS = (0.01, 0.05, 0.2)   # [s] per target, the whole search
ASKED, APART = 16, 0.5


def ur5e(n: int) -> None:
    model = RobotModel.from_dh(UR5E_DH)
    rng = np.random.default_rng(0)
    targets = []
    while len(targets) < n:
        T = fk(rng.uniform(-np.pi, np.pi, 6))
        if len(closed_form(T)) == 8:
            targets.append(T)
    solve_ik(model, targets[0], "tool", solutions=8, timeout=0.5, rng=0)   # warm-up: kernels generated
    for budget in BUDGETS:
        matched, elapsed = [], 0.0
        for T in targets:
            start = time.perf_counter()
            found = solve_ik(model, T, "tool", solutions=8, timeout=budget, rng=0)
            elapsed += time.perf_counter() - start
            analytic = closed_form(T)
            hits = {int(np.argmin([np.abs(np.remainder(q - a + np.pi, 2 * np.pi) - np.pi).max() for a in analytic]))
                    for q in found.q[found.success]}
            matched.append(len(hits))
        print(f"| UR5e (DH) | {budget * 1e3:g} | {np.mean(matched):.2f} of 8 (analytic) | {min(matched)} | "
              f"{1e3 * elapsed / n:.1f} |")


def redundant(label: str, model: RobotModel, tip: str, joints: list[str], n: int) -> None:
    rng = np.random.default_rng(1)
    index = [model.q_names.index(j) for j in joints]
    targets = [frame_transform(model, q, model.root_link, tip) for q in model.random_configuration(n, rng)]
    solve_ik(model, targets[0], tip, solutions=ASKED, solution_distance=APART, active_joints=joints, timeout=0.5)
    for budget in BUDGETS:
        counts, elapsed = [], 0.0
        for T in targets:
            start = time.perf_counter()
            found = solve_ik(model, T, tip, solutions=ASKED, solution_distance=APART, active_joints=joints,
                             timeout=budget, rng=0)
            elapsed += time.perf_counter() - start
            counts.append(int(found.success.sum()))
            assert all(np.linalg.norm(found.q[i, index] - found.q[j, index]) > APART
                       for i in range(len(found.q)) for j in range(i))
        print(f"| {label} | {budget * 1e3:g} | {np.mean(counts):.1f} (> {APART} rad apart, of {ASKED} asked) | "
              f"{min(counts)} | {1e3 * elapsed / n:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=20)
    args = parser.parse_args()
    print("| arm | budget [ms] | mean solutions found | fewest | mean time [ms] |")
    print("|---|---|---|---|---|")
    ur5e(args.targets)
    panda = RobotModel.from_urdf_file(os.path.join(HERE, "..", "robokin_ros", "robots", "panda.urdf"))
    redundant("Panda", panda, "panda_hand", [f"panda_joint{i}" for i in range(1, 8)], args.targets)
    folder = example_robot_data_dir()
    if folder is not None:
        xarm = RobotModel.from_urdf_file(os.path.join(folder, ERD_ROBOTS["xarm7"]))
        redundant("xArm7", xarm, "link_eef", [f"joint{i}" for i in range(1, 8)], args.targets)


if __name__ == "__main__":
    main()
