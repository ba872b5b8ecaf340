"""Benchmark of forward kinematics (every frame) and the tip Jacobian against Pinocchio from Python.

Usage: ``python3 bench/bench_core.py [--quick]``. For the bundled UR5e and Panda and for
example-robot-data's UR5, Panda, xArm7 and Talos, prints µs per configuration of

- batched over 10,000 configurations (1,000 with --quick): ``forward_kinematics`` (every link)
  and ``jacobian(tip, LOCAL_WORLD_ALIGNED)`` (FK included), against Pinocchio in a Python loop;
- single calls, all timed interleaved in the same rounds (best of the rounds): the public
  function (``forward_kinematics(model, q)``, ``jacobian(model, q, tip)``), the prepared handle
  :class:`robokin_ros.Kinematics` returning a fresh array (``h.fk(q)``) and writing into a
  reused one (``h.fk(q, out)``), and Pinocchio's ``framesForwardKinematics`` /
  ``computeFrameJacobian(tip, LOCAL_WORLD_ALIGNED)`` (which write into Pinocchio's ``data``:
  the like of ``out=``);

with the speed-ups ``x = pin / ours`` (> 1: we are faster). The numba kernels are loaded
(``robokin_ros.prepare``, the handle's construction) before anything is timed.
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
from timing import best_of, interleaved  # noqa: E402

from robokin_ros import LOCAL_WORLD_ALIGNED, Kinematics, RobotModel, forward_kinematics, jacobian, prepare  # noqa: E402,E501

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


def loop(call, n: int):
    """An :func:`timing.interleaved` timer of ``n`` calls of ``call()``."""
    def run():
        for _ in range(n):
            call()
    return (lambda: None, run, n)


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
    print(f"µs per configuration; batch of {batch}; pin = Pinocchio called in a Python loop; x = pin time / our "
          "time (> 1: we are faster)")
    header = (f"{'robot':10s} {'n_q':>3s} {'links':>5s} | {'FK batch':>8s} {'pin':>6s} {'x':>6s} | {'J batch':>7s} "
              f"{'pin':>6s} {'x':>6s}")
    single_header = (f"{'robot':10s} {'call':4s} | {'public':>7s} {'x':>5s} | {'h fresh':>7s} {'x':>5s} | "
                     f"{'h out=':>7s} {'x':>5s} | {'pin':>6s}")
    print(header)
    print("-" * len(header))
    single_rows = []
    for label, source, tip in CASES:
        path = urdf_path(source, erd_base)
        if path is None or not os.path.exists(path):
            print(f"{label:10s} skipped: example-robot-data is not installed")
            continue
        model = RobotModel.from_urdf_file(path)
        prepare(model, frames=[(tip,)])
        handle = Kinematics(model, frames=[tip], dynamics=())
        q = model.random_configuration(batch, rng)
        q1 = np.ascontiguousarray(q[0])
        fk_batch = best_of(lambda: forward_kinematics(model, q), repeats) / batch * 1e6
        j_batch = best_of(lambda: jacobian(model, q, tip, LOCAL_WORLD_ALIGNED), repeats) / batch * 1e6
        T_out, J_out = np.empty((model.n_links, 4, 4)), np.empty((6, model.n_v))
        timers = {"fk": loop(lambda: forward_kinematics(model, q1), singles),
                  "h.fk": loop(lambda: handle.fk(q1), singles),
                  "h.fk out": loop(lambda: handle.fk(q1, T_out), singles),
                  "J": loop(lambda: jacobian(model, q1, tip), singles),
                  "h.J": loop(lambda: handle.jacobian(q1, tip), singles),
                  "h.J out": loop(lambda: handle.jacobian(q1, tip, J_out), singles)}
        if pin is not None:
            pm = pin.buildModelFromUrdf(path)
            pd = pm.createData()
            fid = pm.getFrameId(tip, pin.BODY)
            pq = pin_configuration(model, pm, q1)
            lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
            pin.framesForwardKinematics(pm, pd, pq)
            np.testing.assert_allclose(handle.fk(q1)[-1], pd.oMf[pm.getFrameId(model.link_names[-1], pin.BODY)]
                                       .homogeneous, atol=1e-9)   # the rows time the same result
            timers["pin fk"] = loop(lambda: pin.framesForwardKinematics(pm, pd, pq), singles)
            timers["pin J"] = loop(lambda: pin.computeFrameJacobian(pm, pd, pq, fid, lwa), singles)
        t = {k: v * 1e6 for k, v in interleaved(timers, repeats).items()}
        pin_fk, pin_j = t.get("pin fk", np.nan), t.get("pin J", np.nan)
        print(f"{label:10s} {model.n_q:3d} {model.n_links:5d} | {fk_batch:8.2f} {pin_fk:6.2f} "
              f"{pin_fk / fk_batch:6.2f} | {j_batch:7.2f} {pin_j:6.2f} {pin_j / j_batch:6.2f}", flush=True)
        for call, peer in (("fk", pin_fk), ("J", pin_j)):
            single_rows.append(f"{label:10s} {call:4s} | {t[call]:7.3f} {peer / t[call]:5.2f} | {t['h.' + call]:7.3f} "
                               f"{peer / t['h.' + call]:5.2f} | {t['h.' + call + ' out']:7.3f} "
                               f"{peer / t['h.' + call + ' out']:5.2f} | {peer:6.3f}")
    print()
    print("single calls, µs per call (public = forward_kinematics(model, q) / jacobian(model, q, tip); h = the "
          "prepared handle Kinematics(model), fresh result or out=)")
    print(single_header)
    print("-" * len(single_header))
    print("\n".join(single_rows))


if __name__ == "__main__":
    main()
