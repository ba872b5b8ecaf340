"""IK from the first request on a robot new to the machine (issue 31): the TRAC-IK protocol in a
fresh process on an empty kernel cache, optionally while a second robot's kernels compile.

Usage: ``python3 bench/bench_cold_ik.py [--set bundled|humanoids|all] [--problems 2000]
[--second panda] [--load] [--robots a,b]``.

For each chain, a new Python process with an empty ``ROBOKIN_CACHE_DIR`` (nothing compiled for
it: every kernel compiles, in a separate process, while the requests come) loads the robot and
answers the TRAC-IK protocol of ``bench_ik.py`` from its first request: ``--problems`` targets
(FK of configurations uniform within the chain's limits), one request each from the mid-limits
seed, tolerance 1e-5 (m, rad), a 5 ms time budget per request; every answer verified by FK (a
wrong answer counts as a failure and is reported). ``--second ROBOT`` (a bundled robot): the
process also compiles that robot's kernels (every FK and dynamics kernel and the IK loop of its
default tip, ``prepare`` in a thread of the same process) from just before the first request.
``--load``: one busy process (a pure-Python loop) holds another core meanwhile, as a second
program on the machine would.

Prints per chain: solved %, wrong answers, requests answered before the robot's own compiled IK
loop took over (all of them when its compile took longer than the protocol: they ran on the
generic loop, or with ``ROBOKIN_GENERIC_IK=0`` on the float path), the worst request latency, and
the seconds of compiling the notices measured (compiles that ended within the protocol). Target (issue 31): >= 99.9 % on every bundled
arm and every humanoid arm, 0 wrong, also with ``--second``, on 2 cores with one loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_ik import HUMANOID_ARMS, urdf_path  # noqa: E402

ROOT = os.path.dirname(HERE)
#: The bundled arms: (label, URDF source, base, tip, joints) as in bench_ik.
BUNDLED_ARMS = [
    ("ur5e", "bundled:ur5e.urdf", None, "tool0", None),
    ("panda", "bundled:panda.urdf", None, "panda_hand_tcp", None),
    ("open_manipulator_x", "bundled:open_manipulator_x.urdf", None, "end_effector_link", None),
    ("so101_arm", "bundled:so101_arm.urdf", None, "tool", None),
    ("twin_arm_torso left", "bundled:twin_arm_torso.urdf", "torso_link", "left_gripper_link", None),
    ("twin_arm_torso right", "bundled:twin_arm_torso.urdf", "torso_link", "right_gripper_link", None),
]
SETS = {"bundled": BUNDLED_ARMS, "humanoids": HUMANOID_ARMS, "all": BUNDLED_ARMS + HUMANOID_ARMS}

CHILD = r"""
import json, sys, threading, time
start = time.perf_counter()
import numpy as np
import robokin_ros as rk
from robokin_ros.ik.call import ik_call
from robokin_ros.ik.options import IKOptions
from robokin_ros.kernels import notices
from bench_ik import TIMEOUT, TOLERANCE, chain_joints, problems, verify
path, base, tip, n, second = sys.argv[1], sys.argv[2] or None, sys.argv[3], int(sys.argv[4]), sys.argv[5]
compiles = []
with notices.subscribed(lambda notice: compiles.append(notice)):
    model = rk.RobotModel.from_urdf_file(path)
    joints = chain_joints(model, base, tip)
    active = joints
    seed, _, T = problems(model, tip, joints, n, np.random.default_rng(0), base)
    if second:
        other = rk.RobotModel.from_urdf_file(second)
        from robokin_ros.model.groups import default_group_name, default_groups
        groups = default_groups(other)
        other_tip = groups[default_group_name(groups)].tip

        def compile_second():
            rk.prepare(other, frames=[(other_tip,)], dynamics=("rnea", "crba", "aba"))
            rk.prepare_ik(other, other_tip)

        threading.Thread(target=compile_second, daemon=True).start()
    keywords = dict(base=base, active_joints=active, position_tolerance=TOLERANCE, rotation_tolerance=TOLERANCE,
                    timeout=TIMEOUT, max_iterations=10**6)
    loop = ik_call(model, (tip,), IKOptions(**keywords)).solver.loop
    answers, worst, before = [], 0.0, None
    for i in range(n):
        t = time.perf_counter()
        r = rk.solve_ik(model, T[i], tip, seed, rng=i, **keywords)
        worst = max(worst, time.perf_counter() - t)
        answers.append((bool(r.success), r.q))
        if before is None and loop is not None and loop.function() is not None:
            before = i + 1
    q = np.array([a[1] for a in answers])
    claimed = np.array([a[0] for a in answers])
    right = verify(model, tip, q, T, base)
print(json.dumps({"solved": int((claimed & right).sum()), "wrong": int((claimed & ~right).sum()), "n": n,
                  "before": before if before is not None else n, "worst ms": worst * 1e3,
                  "compile": sum(c.seconds for c in compiles if not c.started)}))
"""


def run(label, source, base, tip, problems: int, second: str | None) -> dict:
    path = urdf_path(source)
    if path is None:
        return {"error": "example-robot-data is not installed"}
    with tempfile.TemporaryDirectory() as cache:
        os.chmod(cache, 0o700)
        env = dict(os.environ, ROBOKIN_CACHE_DIR=cache,
                   PYTHONPATH=os.pathsep.join([ROOT, HERE, os.path.join(ROOT, "test")]))
        env.pop("NUMBA_CACHE_DIR", None)
        done = subprocess.run([sys.executable, "-c", CHILD, path, base or "", tip, str(problems), second or ""],
                              env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", choices=sorted(SETS), default="bundled")
    parser.add_argument("--robots", help="labels (comma-separated) of the set to run")
    parser.add_argument("--problems", type=int, default=2000)
    parser.add_argument("--second", help="a bundled robot whose kernels compile meanwhile (e.g. panda)")
    parser.add_argument("--load", action="store_true", help="one busy process on another core meanwhile")
    args = parser.parse_args()
    second = None if args.second is None else os.path.join(ROOT, "robokin_ros", "robots", f"{args.second}.urdf")
    chains = [c for c in SETS[args.set] if args.robots is None or c[0] in args.robots.split(",")]
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.load else None
    try:
        print(f"{'chain':24s} {'solved':>8s} {'wrong':>5s} {'before own':>10s} {'worst ms':>8s} {'compile s':>9s}"
              f"   (cold cache; second: {args.second or '-'}; load: {'1 busy core' if args.load else '-'})")
        for label, source, base, tip, _ in chains:
            r = run(label, source, base, tip, args.problems, second)
            if "error" in r:
                print(f"{label:24s} error: {r['error']}")
                continue
            print(f"{label:24s} {100 * r['solved'] / r['n']:7.2f}% {r['wrong']:5d} {r['before']:10d} "
                  f"{r['worst ms']:8.1f} {r['compile']:9.1f}")
    finally:
        if busy is not None:
            busy.kill()


if __name__ == "__main__":
    main()
