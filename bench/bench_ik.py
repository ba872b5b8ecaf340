"""Benchmark of inverse kinematics with the TRAC-IK protocol, against roboticstoolbox ``ik_LM``.

Usage: ``python3 bench/bench_ik.py [--quick] [--problems N] [--no-peers] [--robots a,b]``.

For each robot: N configurations (2,000; 200 with --quick) uniform within the limits of the
chain's joints (the others at mid-limits) -> target = FK of the tip -> solve from the
mid-limits seed with tolerance 1e-5 (m and rad) and a 5 ms time limit per problem. Every answer
is verified by FK (position < 1e-4 m, rotation < 1e-3 rad, within limits); a wrong answer counts
as a failure. Prints, per robot: solve rate, mean / median time of single requests (one call per
problem) and their time per LM iteration (per evaluation: iterations + 1), the throughput of one
batched call with all N targets and its time per problem-iteration; then the same for
roboticstoolbox-python ``ik_LM`` (C++, Chan's LM, 30 iterations x 100 random searches; verified with its own
FK and limits) when it is installed. KDL is not run here (it needs Debian's python3.11 and numpy 1).

Targets (issue 4): solve rate >= 99.9 % on the arms, >= 99.5 % on the Talos arm, single-request
mean <= 0.5 ms, batched >= 20,000 solves/s.
"""

from __future__ import annotations

import argparse
import os
import sys
import re
import tempfile
import time
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "test"))

from peers import ERD_ROBOTS, example_robot_data_dir  # noqa: E402
from robokin_ros import RobotModel, frame_transform  # noqa: E402
from robokin_ros.ik import solve_ik  # noqa: E402
from robokin_ros.spatial import log_so3  # noqa: E402

ROBOTS_DIR = os.path.join(HERE, "..", "robokin_ros", "robots")
TALOS_ARM = ["torso_1_joint", "torso_2_joint"] + [f"arm_left_{i}_joint" for i in range(1, 8)]
#: (label, URDF source, tip, joints of the chain or None for every non-finger joint).
CASES = [
    ("ur5e", "bundled:ur5e.urdf", "tool0", None),
    ("panda", "bundled:panda.urdf", "panda_hand_tcp", None),
    ("ERD ur5", "ur5", "tool0", None),
    ("ERD panda", "panda", "panda_hand_tcp", None),
    ("ERD xarm7", "xarm7", "link_eef", None),
    ("ERD talos arm", "talos", "gripper_left_base_link", TALOS_ARM),
]
TOLERANCE, TIMEOUT = 1e-5, 5e-3
CHECK_POSITION, CHECK_ROTATION = 1e-4, 1e-3


def urdf_path(source: str) -> str | None:
    if source.startswith("bundled:"):
        return os.path.join(ROBOTS_DIR, source.split(":", 1)[1])
    base = example_robot_data_dir()
    return None if base is None else os.path.join(base, ERD_ROBOTS[source])


def problems(model: RobotModel, tip: str, joints: list[str], n: int, rng):
    """Mid-limits seed ``(n_q,)``, true configurations ``(n, n_q)`` and targets ``(n, 4, 4)``."""
    lo, hi = model.q_lower, model.q_upper
    mid = np.where(np.isfinite(lo) & np.isfinite(hi), 0.5 * (lo + hi), 0.0)
    q = np.tile(mid, (n, 1))
    cols = [model.q_names.index(j) for j in joints]
    q[:, cols] = model.random_configuration(n, rng)[:, cols]
    return mid, q, frame_transform(model, q, model.root_link, tip)


def verify(model, tip, q, T) -> np.ndarray:
    """``(n,)`` bool: the answers really reach their targets within the protocol's thresholds."""
    Tq = frame_transform(model, q, model.root_link, tip)
    dp = np.linalg.norm(Tq[..., :3, 3] - T[..., :3, 3], axis=-1)
    dr = np.linalg.norm(log_so3(np.swapaxes(T[..., :3, :3], -1, -2) @ Tq[..., :3, :3]), axis=-1)
    return (dp < CHECK_POSITION) & (dr < CHECK_ROTATION) & model.within_limits(q, 1e-12)


def bench_ours(model, tip, joints, seed, T):
    n = len(T)
    times, answers = np.empty(n), np.empty((n, model.n_q))
    success, iterations = np.zeros(n, bool), np.zeros(n, np.int64)
    for i in range(n):
        t = time.perf_counter()
        r = solve_ik(model, T[i], tip, seed, active_joints=joints, position_tolerance=TOLERANCE,
                     rotation_tolerance=TOLERANCE, timeout=TIMEOUT, max_iterations=10**6, rng=i)
        times[i] = time.perf_counter() - t
        answers[i], success[i], iterations[i] = r.q, r.success, r.iterations
    single_ok = verify(model, tip, answers, T)
    t = time.perf_counter()
    r = solve_ik(model, T, tip, seed, active_joints=joints, position_tolerance=TOLERANCE,
                 rotation_tolerance=TOLERANCE, timeout=TIMEOUT, max_iterations=10**6, rng=0)
    batch_time = time.perf_counter() - t
    batch_ok = verify(model, tip, r.q, T)
    return dict(rate=single_ok.mean(), mean=times.mean(), median=np.median(times),
                per_iteration=times.sum() / max(1, (iterations + 1).sum()),
                batch_rate=batch_ok.mean(), throughput=n / batch_time,
                batch_per_iteration=batch_time / max(1, (r.iterations + 1).sum()),
                wrong=int(np.sum(success & ~single_ok)) + int(np.sum(r.success & ~batch_ok)))


def bench_rtb(path, tip, joints, model, T):
    """roboticstoolbox ``ik_LM`` on the same chain and targets (its own FK checks its answers)."""
    try:
        import roboticstoolbox as rtb
    except ImportError:
        return None
    with open(path) as f:  # without meshes: rtb's xacro pass cannot resolve package:// URIs
        text = re.sub(r"<(visual|collision)\b.*?</\1>", "", f.read(), flags=re.S)
    with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        stripped = os.path.join(folder, "robot.urdf")
        with open(stripped, "w") as f:
            f.write(text)
        robot = rtb.Robot.URDF(stripped)
    ets = robot.ets(start=model.root_link, end=tip)
    qlim = ets.qlim
    seed = np.where(np.isfinite(qlim).all(axis=0), qlim.mean(axis=0), 0.0)
    n = len(T)
    times, ok = np.empty(n), np.zeros(n, bool)
    for i in range(n):
        t = time.perf_counter()
        solution = ets.ik_LM(T[i], q0=seed, tol=0.5 * TOLERANCE**2, joint_limits=True, ilimit=30, slimit=100)
        times[i] = time.perf_counter() - t
        q, success = solution.q, solution.success
        Tq = ets.eval(q)
        dp = np.linalg.norm(Tq[:3, 3] - T[i, :3, 3])
        dr = np.linalg.norm(log_so3(T[i, :3, :3].T @ Tq[:3, :3]))
        within = np.all((q >= qlim[0] - 1e-12) & (q <= qlim[1] + 1e-12))
        ok[i] = bool(success) and dp < CHECK_POSITION and dr < CHECK_ROTATION and within
    return dict(rate=ok.mean(), mean=times.mean(), median=np.median(times), dof=ets.n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 problems per robot")
    parser.add_argument("--problems", type=int, default=None)
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--robots", default=None, help="comma-separated labels (default: all)")
    args = parser.parse_args()
    n = args.problems or (200 if args.quick else 2000)
    wanted = None if args.robots is None else set(args.robots.split(","))
    print(f"IK, TRAC-IK protocol: {n} targets per robot, seed at mid-limits, tolerance {TOLERANCE:g}, "
          f"{TIMEOUT * 1e3:g} ms per problem; answers verified by FK (<{CHECK_POSITION:g} m, <{CHECK_ROTATION:g} rad).")
    header = (f"{'robot':15s} {'dof':>3s} | {'ours %':>7s} {'mean ms':>8s} {'median':>7s} {'µs/it':>6s} | {'batch %':>7s} "
              f"{'solves/s':>9s} {'µs/it':>6s} {'wrong':>5s} | {'rtb %':>7s} {'mean ms':>8s} {'median':>7s} | {'rtb/ours':>8s}")
    print(header)
    print("-" * len(header))
    for label, source, tip, joints in CASES:
        if wanted and label not in wanted:
            continue
        path = urdf_path(source)
        if path is None or not os.path.exists(path):
            print(f"{label:15s} skipped: example-robot-data is not installed")
            continue
        model = RobotModel.from_urdf_file(path)
        joints = joints or [j for j in model.joint_names if "finger" not in j]
        seed, _, T = problems(model, tip, joints, n, np.random.default_rng(12345))
        solve_ik(model, T, tip, seed, active_joints=joints)  # build the kernels and caches (batched ones too)
        solve_ik(model, T[0], tip, seed, active_joints=joints)
        ours = bench_ours(model, tip, joints, seed, T)
        peer = None if args.no_peers else bench_rtb(path, tip, joints, model, T)
        line = (f"{label:15s} {len(joints):3d} | {100 * ours['rate']:6.2f}% {1e3 * ours['mean']:8.3f} "
                f"{1e3 * ours['median']:7.3f} {1e6 * ours['per_iteration']:6.1f} | {100 * ours['batch_rate']:6.2f}% "
                f"{ours['throughput']:9.0f} {1e6 * ours['batch_per_iteration']:6.2f} {ours['wrong']:5d} | ")
        if peer is None:
            line += f"{'n/a':>7s} {'':8s} {'':7s} | {'':8s}"
        else:
            line += (f"{100 * peer['rate']:6.2f}% {1e3 * peer['mean']:8.3f} {1e3 * peer['median']:7.3f} | "
                     f"{peer['mean'] / ours['mean']:8.2f}")
        print(line, flush=True)
    print("µs/it: time per LM iteration (per problem in the batch). rtb/ours > 1: ours is faster "
          "per single request (mean). 'wrong': reported success that FK disproves (single and batch).")


if __name__ == "__main__":
    main()
