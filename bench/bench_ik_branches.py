"""Distinct IK solutions within a time budget: ``solve_ik(..., solutions=k)`` (issue 22, item 4).

Usage: ``python3 bench/bench_ik_branches.py [--targets N]``.

UR5e (its published DH table, continuous joints) against the closed form (Hawkins 2013, in
``test/core/ik/ur_closed_form.py``): per budget, the mean number of the 8 analytic branches found
(a solution matches a branch within 1e-3 rad, modulo 2π). Panda (bundled) and xArm7
(example-robot-data, skipped without it), redundant: the mean number of solutions found pairwise
farther apart than 0.5 rad (of at most 16 asked). Targets are FK of random configurations.

A second table, the arms under 6 DOF (bundled SO-101 and Open-Manipulator-X classes): FK-made
targets turned about the tool's approach axis by a random yaw, solved with that axis free
(``solve_constrained``, an orientation constraint ``(0.01, 0.01, π)``): solved share and time;
the same targets also turned 0.3 rad about the tool's x axis (out of the arm's plane), as full
poses: how many answered success (a success is a pose within 1e-5 of the target: only a
near-singular target could give one) and the smallest remaining error.
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
from robokin_ros.ik import OrientationConstraint, solve_constrained, solve_ik  # noqa: E402
from robokin_ros.spatial import exp_so3  # noqa: E402

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


def small_arm(label: str, model: RobotModel, n: int) -> None:
    rng = np.random.default_rng(2)
    solved, elapsed, successes, smallest = 0, 0.0, 0, np.inf
    for q in model.random_configuration(n, rng):
        T = frame_transform(model, q, model.root_link, "tool")
        T[:3, :3] = T[:3, :3] @ exp_so3(np.array([0.0, 0.0, rng.uniform(-np.pi, np.pi)]))
        free = OrientationConstraint("tool", T[:3, :3], (0.01, 0.01, np.pi))
        start = time.perf_counter()
        r = solve_constrained(model, [free], poses={"tool": T}, timeout=0.5, max_iterations=10 ** 6)
        elapsed += time.perf_counter() - start
        solved += bool(r.result.success)
        T[:3, :3] = T[:3, :3] @ exp_so3(np.array([0.3, 0.0, 0.0]))
        full = solve_ik(model, T, "tool", timeout=0.02, max_iterations=10 ** 6)
        successes += bool(full.success)
        smallest = min(smallest, float(full.position_error) + float(full.rotation_error))
    print(f"| {label} | {solved} / {n} | {1e3 * elapsed / n:.2f} | {successes} / {n} | {smallest:.3g} |")


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
    print("\n| arm under 6 DOF | yaw-free pick solved | mean time [ms] | full pose turned out of the plane: "
          "success | smallest position + rotation error [m + rad] |")
    print("|---|---|---|---|---|")
    for name, label in (("so101_arm", "SO-101 class (5 DOF)"), ("open_manipulator_x", "Open-Manipulator-X class (4 DOF)")):
        model = RobotModel.from_urdf_file(os.path.join(HERE, "..", "robokin_ros", "robots", f"{name}.urdf"))
        small_arm(label, model, 5 * args.targets)


if __name__ == "__main__":
    main()
