"""Cold start (issue 31): first-call latency per bundled robot in a new process on a fresh cache.

Usage: ``python3 bench/bench_cold_start.py [--robots ur5e,panda,...] [--deadline 300]``.

For each bundled robot, runs a new Python process with an empty ``ROBOKIN_CACHE_DIR`` (then a
second one on the cache the first filled) and prints, in seconds from the process's start
(``import robokin_ros`` included):

- ``FK``: the first forward kinematics of one configuration answered;
- ``collision``: the first self-collision check of one configuration answered (after ``FK``;
  the collision model is built then);
- ``IK``: the first IK request answered (the float path while the compiled loop compiles);
- ``IK full``: requests keep coming (a new random reachable target each) until they run on the
  compiled loop: the solve rate is then the full one (the compile runs in a separate process
  meanwhile; ``compile`` is what the notices measured);
- requests answered and solved before ``IK full``, and the worst request latency meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
start = time.perf_counter()
import numpy as np
import robokin_ros as rk
from robokin_ros.ik.call import ik_call
from robokin_ros.ik.options import IKOptions
from robokin_ros.kernels import notices
path, tip, deadline = sys.argv[1], sys.argv[2], float(sys.argv[3])
compiles = []
out = {}
with notices.subscribed(lambda n: compiles.append(n)):
    model = rk.RobotModel.from_urdf_file(path)
    rng = np.random.default_rng(0)
    q = model.random_configuration(1, rng)[0]
    rk.forward_kinematics(model, q)
    out["FK"] = time.perf_counter() - start
    rk.self_collisions(model, q)
    out["collision"] = time.perf_counter() - start
    loop = ik_call(model, (tip,), IKOptions()).solver.loop
    answered = solved = 0
    worst = 0.0
    while True:
        target = rk.forward_kinematics(model, model.random_configuration(1, rng)[0], frames=[tip])[0]
        t = time.perf_counter()
        result = rk.solve_ik(model, target, tip, timeout=0.005)
        worst = max(worst, time.perf_counter() - t)
        answered += 1
        solved += bool(result.success)
        if answered == 1:
            out["IK"] = time.perf_counter() - start
        if loop is None or loop.function(1) is not None or time.perf_counter() - start > deadline:
            break
    out["IK full"] = time.perf_counter() - start if loop is not None and loop.function() is not None else None
    out["requests"], out["solved"], out["worst ms"] = answered, solved, worst * 1e3
out["compile"] = sum(n.seconds for n in compiles if not n.started)
out["kernels"] = sum(n.kernels for n in compiles if not n.started)
print(json.dumps(out))
"""

ROBOTS = pathlib.Path(__file__).resolve().parents[1] / "robokin_ros" / "robots"
TIPS = {"ur5e": "tool0", "panda": "panda_hand", "open_manipulator_x": "end_effector_link",
        "so101_arm": None, "twin_arm_torso": None}


def run(path: pathlib.Path, tip: str, cache: str, deadline: float) -> dict:
    env = dict(os.environ, ROBOKIN_CACHE_DIR=cache)
    env.pop("NUMBA_CACHE_DIR", None)
    done = subprocess.run([sys.executable, "-c", CHILD, str(path), tip, str(deadline)], env=env,
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def default_tip(path: pathlib.Path) -> str:
    import robokin_ros as rk
    from robokin_ros.model.groups import default_group_name, default_groups

    model = rk.RobotModel.from_urdf_file(path)
    groups = default_groups(model)
    return groups[default_group_name(groups)].tip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", default=",".join(TIPS))
    parser.add_argument("--deadline", type=float, default=300.0, help="most seconds of requests per process")
    args = parser.parse_args()
    print(f"{'robot':20s} {'cache':5s} {'FK':>6s} {'IK':>6s} {'IK full':>8s} {'collision':>9s} "
          f"{'compile':>8s} {'kernels':>7s} {'requests':>8s} {'solved':>7s} {'worst ms':>8s}")
    for name in args.robots.split(","):
        path = ROBOTS / f"{name}.urdf"
        tip = TIPS.get(name) or default_tip(path)
        with tempfile.TemporaryDirectory() as cache:
            os.chmod(cache, 0o700)
            for label in ("cold", "warm"):
                r = run(path, tip, cache, args.deadline)
                if "error" in r:
                    print(f"{name:20s} {label:5s} error: {r['error']}")
                    continue
                full = "-" if r["IK full"] is None else f"{r['IK full']:8.2f}"
                print(f"{name:20s} {label:5s} {r['FK']:6.2f} {r['IK']:6.2f} {full:>8s} {r['collision']:9.2f} "
                      f"{r['compile']:8.1f} {r['kernels']:7d} {r['requests']:8d} {r['solved']:7d} "
                      f"{r['worst ms']:8.1f}")


if __name__ == "__main__":
    main()
