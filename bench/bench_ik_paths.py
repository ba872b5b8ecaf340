"""Joint jumps along Cartesian paths: ``solve_ik`` seeded with the previous solution, with and
without the ``closest`` objective (issue 22, item 3).

Usage: ``python3 bench/bench_ik_paths.py [--steps N] [--step-mm S]``.

Paths of N (default 1,000) steps of S (default 1) mm at a fixed orientation: a line (N/4 steps
out and back twice) and a circle (circumference N mm), from a comfortable start of each arm: the Panda
(bundled) and the Talos left arm (example-robot-data, from ``torso_2_link``; skipped without it).
Per path and mode: the largest joint jump between consecutive solutions (largest |Δq_i|), the
number of steps with a jump > 0.1 rad, failed steps, and the mean time per step. A second table:
targets 0.1 m from the start in random directions (FK-made, so reachable), solved from the start:
the joint motion ``‖q - q_start‖`` with and without ``closest``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "test"))

from peers import ERD_ROBOTS, example_robot_data_dir  # noqa: E402

from robokin_ros import RobotModel, frame_transform  # noqa: E402
from robokin_ros.ik import solve_ik  # noqa: E402

JUMP = 0.1          # [rad] a step moving a joint more than this is a jump
TIMEOUT = 0.05      # [s] per step
PANDA_READY = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.0]
#: A start from which both paths stay in the Talos left arm's workspace (found by sampling).
TALOS_START = [-0.409, 1.175, -0.897, -1.634, 0.634, 0.461, 0.06]


def arms() -> list[tuple[str, RobotModel, str, str, np.ndarray, list[str]]]:
    """(label, model, base, tip, start q, joints) of each arm available."""
    out = []
    panda = RobotModel.from_urdf_file(os.path.join(HERE, "..", "robokin_ros", "robots", "panda.urdf"))
    out.append(("panda", panda, panda.root_link, "panda_hand_tcp", np.array(PANDA_READY),
                [f"panda_joint{i}" for i in range(1, 8)]))
    folder = example_robot_data_dir()
    if folder is not None:
        talos = RobotModel.from_urdf_file(os.path.join(folder, ERD_ROBOTS["talos"]))
        q, joints = talos.home_configuration(), [f"arm_left_{i}_joint" for i in range(1, 8)]
        q[[talos.q_names.index(j) for j in joints]] = TALOS_START
        out.append(("talos left arm", talos, "torso_2_link", "gripper_left_base_link", q, joints))
    return out


def paths(T0: np.ndarray, steps: int, step: float) -> dict[str, np.ndarray]:
    """``(steps, 4, 4)`` targets of each path, starting at ``T0``."""
    k = np.arange(1, steps + 1)
    quarter = max(1, steps // 4)
    phase = k % (2 * quarter)
    along = np.where(phase <= quarter, phase, 2 * quarter - phase) * step        # out and back
    radius = steps * step / (2 * math.pi)
    angle = 2 * math.pi * k / steps
    line = np.repeat(T0[None], steps, axis=0)
    line[:, :3, 3] += along[:, None] * np.array([0.0, 1.0, 0.0])
    circle = np.repeat(T0[None], steps, axis=0)
    circle[:, 0, 3] += radius * (np.cos(angle) - 1.0)
    circle[:, 1, 3] += radius * np.sin(angle)
    return {"line": line, "circle": circle}


def follow(model, base, tip, q0, joints, targets, objective):
    """(largest jump [rad], jumps > JUMP, failed steps, mean time per step [ms])."""
    q, largest, jumps, failed, index = q0, 0.0, 0, 0, [model.q_names.index(j) for j in joints]
    start = time.perf_counter()
    for T in targets:
        r = solve_ik(model, T, tip, q, base=base, active_joints=joints, timeout=TIMEOUT, rng=0, objective=objective)
        if not bool(r.success):
            failed += 1
        jump = float(np.abs(r.q[index] - q[index]).max())
        largest, jumps, q = max(largest, jump), jumps + (jump > JUMP), r.q
    return largest, jumps, failed, 1e3 * (time.perf_counter() - start) / len(targets)


def far_targets(model, base, tip, q0, joints, n: int = 100):
    """(mean, largest ‖q - q0‖ [rad]) per objective for ``n`` targets 0.1 m from the start."""
    rng = np.random.default_rng(0)
    index = [model.q_names.index(j) for j in joints]
    targets, out = [], {}
    while len(targets) < n:  # FK of the start moved until the tip is 0.1 m away: reachable targets
        q = q0.copy()
        q[index] += rng.normal(0.0, 0.15, len(index))
        T = frame_transform(model, model.clamp(q), base, tip)
        if abs(np.linalg.norm(T[:3, 3] - frame_transform(model, q0, base, tip)[:3, 3]) - 0.1) < 0.02:
            targets.append(T)
    for objective in (None, "closest"):
        motion = [float(np.linalg.norm(solve_ik(model, T, tip, q0, base=base, active_joints=joints, timeout=TIMEOUT,
                                                rng=0, objective=objective).q[index] - q0[index])) for T in targets]
        out[objective] = (float(np.mean(motion)), float(np.max(motion)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--step-mm", type=float, default=1.0)
    args = parser.parse_args()
    print(f"{args.steps} steps of {args.step_mm:g} mm; jump = a joint moving > {JUMP} rad in one step")
    print("| arm | path | objective | largest jump [rad] | jumps > 0.1 rad | failed steps | ms / step |")
    print("|---|---|---|---|---|---|---|")
    for label, model, base, tip, q0, joints in arms():
        T0 = frame_transform(model, q0, base, tip)
        for name, targets in paths(T0, args.steps, 1e-3 * args.step_mm).items():
            for objective in (None, "closest"):
                largest, jumps, failed, ms = follow(model, base, tip, q0, joints, targets, objective)
                print(f"| {label} | {name} | {objective or 'default'} | {largest:.3f} | {jumps} | {failed} | {ms:.2f} |")
    print("\nTargets 0.1 m from the start, solved from the start: joint motion ‖q - q_start‖ [rad]")
    print("| arm | default mean / max | closest mean / max |")
    print("|---|---|---|")
    for label, model, base, tip, q0, joints in arms():
        motion = far_targets(model, base, tip, q0, joints)
        print(f"| {label} | {motion[None][0]:.3f} / {motion[None][1]:.3f} | "
              f"{motion['closest'][0]:.3f} / {motion['closest'][1]:.3f} |")


if __name__ == "__main__":
    main()
