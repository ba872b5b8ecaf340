"""Benchmark of forward kinematics (every frame) and the tip Jacobian against Pinocchio from Python.

Usage: ``python3 bench/bench_core.py [--quick]``. For the bundled UR5e and Panda and for
example-robot-data's UR5, Panda, xArm7 and Talos, prints µs per configuration of

- ``forward_kinematics`` (every link) and ``jacobian(tip, LOCAL_WORLD_ALIGNED)`` (FK included),
  single call and batched over 10,000 configurations (1,000 with --quick), and
- Pinocchio in a Python loop in the same run: ``framesForwardKinematics`` and
  ``computeFrameJacobian(tip, LOCAL_WORLD_ALIGNED)`` (FK included),

with the speed-ups ``pin / ours`` (> 1: we are faster). Targets (issue 3): batched FK >= 2x,
batched tip Jacobian >= 1x, single-call FK <= 15 µs on an arm. Best of several repeats.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "test"))

from peers import ERD_ROBOTS, example_robot_data_dir, pin_configuration  # noqa: E402
from timing import best_of, per_call_us  # noqa: E402

from robokin_ros import LOCAL_WORLD_ALIGNED, RobotModel, forward_kinematics, jacobian  # noqa: E402

ROBOTS_DIR = os.path.join(HERE, "..", "robokin_ros", "robots")
#: (label, URDF source, tip frame); source "bundled:<file>" or an ERD_ROBOTS key.
CASES = [
    ("ur5e", "bundled:ur5e.urdf", "tool0"),
    ("panda", "bundled:panda.urdf", "panda_hand_tcp"),
    ("ERD ur5", "ur5", "tool0"),
    ("ERD panda", "panda", "panda_hand_tcp"),
    ("ERD xarm7", "xarm7", "link_eef"),
    ("ERD talos", "talos", "gripper_left_fingertip_1_link"),
]


def urdf_path(source: str, erd_base: str | None) -> str | None:
    if source.startswith("bundled:"):
        return os.path.join(ROBOTS_DIR, source.split(":", 1)[1])
    return None if erd_base is None else os.path.join(erd_base, ERD_ROBOTS[source])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="batch of 1,000 and few repeats")
    args = parser.parse_args()
    batch, repeats, singles = (1000, 3, 300) if args.quick else (10000, 7, 2000)
    try:
        import pinocchio as pin
    except ImportError:
        pin = None
        print("pinocchio is not installed (pip install pin): peer columns are empty")
    erd_base = example_robot_data_dir()
    rng = np.random.default_rng(0)
    print(f"µs per configuration; batch of {batch}; single = one call; pin = Pinocchio called in a Python loop; "
          f"x = pin time / our time (> 1: we are faster)")
    header = (f"{'robot':10s} {'n_q':>3s} {'links':>5s} | {'FK batch':>8s} {'pin':>6s} {'x':>6s} | {'FK single':>9s} "
              f"{'x':>6s} | {'J batch':>7s} {'pin':>6s} {'x':>6s} | {'J single':>8s} {'x':>6s}")
    print(header)
    print("-" * len(header))
    for label, source, tip in CASES:
        path = urdf_path(source, erd_base)
        if path is None or not os.path.exists(path):
            print(f"{label:10s} skipped: example-robot-data is not installed")
            continue
        model = RobotModel.from_urdf_file(path)
        q = model.random_configuration(batch, rng)
        q1 = q[0]
        forward_kinematics(model, q1), jacobian(model, q1, tip)  # build the cached plans first
        fk_batch = best_of(lambda: forward_kinematics(model, q), repeats) / batch * 1e6
        fk_single = per_call_us(forward_kinematics, [(model, qi) for qi in q[:singles]], repeats)
        j_batch = best_of(lambda: jacobian(model, q, tip, LOCAL_WORLD_ALIGNED), repeats) / batch * 1e6
        j_single = per_call_us(jacobian, [(model, qi, tip, LOCAL_WORLD_ALIGNED) for qi in q[:singles]], repeats)
        pin_fk = pin_j = np.nan
        if pin is not None:
            pm = pin.buildModelFromUrdf(path)
            pd = pm.createData()
            fid = pm.getFrameId(tip, pin.BODY)
            pq = [pin_configuration(model, pm, qi) for qi in q[:singles]]
            pin_fk = per_call_us(pin.framesForwardKinematics, [(pm, pd, x) for x in pq], repeats)
            lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
            pin_j = per_call_us(pin.computeFrameJacobian, [(pm, pd, x, fid, lwa) for x in pq], repeats)
        print(f"{label:10s} {model.n_q:3d} {model.n_links:5d} | {fk_batch:8.2f} {pin_fk:6.2f} {pin_fk / fk_batch:6.2f} | "
              f"{fk_single:9.2f} {pin_fk / fk_single:6.2f} | {j_batch:7.2f} {pin_j:6.2f} {pin_j / j_batch:6.2f} | "
              f"{j_single:8.2f} {pin_j / j_single:6.2f}")


if __name__ == "__main__":
    main()
