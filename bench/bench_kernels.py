"""The speed table of issue 7: our kernels (numpy generic, numpy generated, numba) against
Pinocchio, pytorch_kinematics and KDL, measured in the same run.

Usage: ``python3 bench/bench_kernels.py [--quick] [--robots ur5,panda,xarm7,talos]``.

For example-robot-data's UR5, Panda, xArm7 and Talos (60 links), prints µs per configuration of

- FK of every link: one configuration per call (``FK 1``), and a batch of 10,000 (``FK 10k``);
- the tip Jacobian (LOCAL_WORLD_ALIGNED, FK included), batch of 10,000 (``J 10k``);
- IK with the TRAC-IK protocol of ``bench/bench_ik.py`` (Talos: its left arm + torso chain): the
  mean time of one request (``IK 1``, µs) and the time per problem of one batched call of all
  problems (``IK batch``), with the solve rate;

for our three kernels (``robokin_ros.kinematics.use_generated_kernels`` off / on, ``accel.enabled`` off /
on) and the peers where installed: Pinocchio (``framesForwardKinematics`` and
``computeFrameJacobian`` in a Python loop; it has no IK), pytorch_kinematics (batched torch,
float64, one thread like every other column; its FK covers every link) and KDL (Debian's
PyKDL, which runs only on ``/usr/bin/python3.11``: run in a subprocess; FK of every link as
ChainFkSolverPos_recursive over the segments of each leaf's chain, the Jacobian by
ChainJntToJacSolver). ``xpin`` = Pinocchio's time / ours (> 1: we are faster). Then peak
memory (tracemalloc) of one batched FK of 100,000 configurations against its output's size,
and the floor that memory puts under batched FK here (allocating and writing an output of
the same size). Our numba column first compiles its kernels (or loads them from the disk
cache: the compile/load time is printed). Timings are the best of several rounds, each round
running every kernel and Pinocchio once in turn, so that on a shared machine both get the same
chances at its quiet moments (ratios still vary by ~2x between runs here under load).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import time
import tracemalloc

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "test"))
sys.path.insert(0, HERE)

from bench_ik import TALOS_ARM, problems
from bench_ik import bench_batch as ik_batch_protocol
from bench_ik import bench_ours as ik_protocol
from peers import ERD_ROBOTS, example_robot_data_dir, pin_configuration
from timing import interleaved

from robokin_ros import LOCAL_WORLD_ALIGNED, RobotModel, forward_kinematics, jacobian
from robokin_ros import prepare as prepare_kernels
from robokin_ros import runtime as rk_runtime
from robokin_ros.kernels import accel
from robokin_ros.model import SCALAR_TYPES, JointType

#: label -> (ERD_ROBOTS key, Jacobian tip, IK tip, IK joints or None for every non-finger joint)
ROBOTS = {
    "ur5": ("ur5", "tool0", "tool0", None),
    "panda": ("panda", "panda_hand_tcp", "panda_hand_tcp", None),
    "xarm7": ("xarm7", "link_eef", "link_eef", None),
    "talos": ("talos", "gripper_left_fingertip_1_link", "gripper_left_base_link", TALOS_ARM),
}
KERNELS = ("numpy generic", "numpy generated", "numba")   # (2026-12-02: "numpy generated" runs the numpy oracle)
KDL_PYTHON = "/usr/bin/python3.11"


def loop(fn, args_list):
    """A callable running ``fn(*args)`` for each of ``args_list``."""
    def run():
        for args in args_list:
            fn(*args)
    return run


KERNELS = contextlib.ExitStack()


def set_kernel(kind: str) -> None:
    """Run what follows with ``kind``'s kernels (this benchmark's own runtime, process default)."""
    KERNELS.enter_context(rk_runtime.current_runtime().use(kind="generated" if kind != "numpy generic" else "generic",
                                                            accelerated=kind == "numba"))


def joint_values(model: RobotModel, q: np.ndarray) -> dict[str, np.ndarray]:
    """Every 1-DOF joint's value (mimic joints included) for configurations ``q (B, n_q)``."""
    out = {}
    for j in range(model.n_joints):
        if JointType(model.joint_types[j]) in SCALAR_TYPES:
            s = model.mimic_source[j] if model.is_mimic[j] else j
            out[model.all_joint_names[j]] = model.mimic_multiplier[j] * q[:, model.joint_q_index[s]] + model.mimic_offset[j]
    return out


def our_timers(model, kind, q, singles, jtip) -> dict:
    """Timers (see :func:`interleaved`) of one of our kernels: FK single / batch, tip Jacobian batch."""
    def setup():
        set_kernel(kind)
    setup()
    forward_kinematics(model, q[:2]), jacobian(model, q[:2], jtip)
    return {(kind, "fk1"): (setup, loop(forward_kinematics, [(model, qi) for qi in q[:singles]]), singles),
            (kind, "fk"): (setup, lambda: forward_kinematics(model, q), len(q)),
            (kind, "j"): (setup, lambda: jacobian(model, q, jtip, LOCAL_WORLD_ALIGNED), len(q))}


def pin_timers(path, model, q, jtip) -> dict:
    """Timers of Pinocchio in a Python loop (FK single = batch: it has no batched call), or {}."""
    try:
        import pinocchio as pin
    except ImportError:
        return {}
    pm = pin.buildModelFromUrdf(path)
    pd = pm.createData()
    fid = pm.getFrameId(jtip, pin.BODY)
    pq = [pin_configuration(model, pm, qi) for qi in q]
    lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    return {("pin", "fk"): (lambda: None, loop(pin.framesForwardKinematics, [(pm, pd, x) for x in pq]), len(q)),
            ("pin", "j"): (lambda: None, loop(pin.computeFrameJacobian, [(pm, pd, x, fid, lwa) for x in pq]), len(q))}


def bench_ik_ours(model, kind, tip, joints, seed, T) -> dict:
    from robokin_ros.ik import solve_ik

    set_kernel(kind)
    solve_ik(model, T[:2], tip, seed, active_joints=joints)  # build the caches
    solve_ik(model, T[0], tip, seed, active_joints=joints)
    r = {**ik_protocol(model, tip, joints, seed, T), **ik_batch_protocol(model, tip, joints, seed, T)}
    return {"ik1": r["mean"] * 1e6, "ikb": 1e6 / r["throughput"], "ik_rate": r["rate"], "ikb_rate": r["batch_rate"]}


def bench_pk(path, model, q, singles, repeats, jtip):
    """pytorch_kinematics (float64 tensors, one thread); checks its tip pose against ours first."""
    try:
        import pytorch_kinematics as pk
        import torch
    except ImportError:
        return None
    import logging

    logging.disable(logging.WARNING)  # its URDF parser warns about every unknown attribute
    torch.set_num_threads(1)
    with open(path, "rb") as f:
        chain = pk.build_chain_from_urdf(f.read())
    serial = pk.SerialChain(chain, jtip).to(dtype=torch.float64)
    chain = chain.to(dtype=torch.float64)
    values = joint_values(model, q)
    th = torch.tensor(np.stack([values[n] for n in chain.get_joint_parameter_names()], axis=1))
    ths = torch.tensor(np.stack([values[n] for n in serial.get_joint_parameter_names()], axis=1))
    tip = chain.forward_kinematics(th[:4])[jtip].get_matrix().numpy()
    error = np.abs(tip - forward_kinematics(model, q[:4])[:, model.link_index(jtip)]).max()
    if error > 1e-6:  # it parses the URDF's numbers in float32: ~1e-7 from ours
        return {"error": f"tip differs by {error:.2g}"}
    def none():
        return None
    with torch.no_grad():
        t = interleaved({"fk1": (none, loop(chain.forward_kinematics, [(th[i:i + 1],) for i in range(singles)]), singles),
                         "fk": (none, lambda: chain.forward_kinematics(th), len(q)),
                         "j": (none, lambda: serial.jacobian(ths), len(q))}, repeats)
    return {key: value * 1e6 for key, value in t.items()}


KDL_SCRIPT = r"""
import json, sys, time
import PyKDL as kdl
spec = json.load(sys.stdin)
tree = kdl.Tree(spec["root"])
for s in spec["segments"]:
    T = s["origin"]
    frame = kdl.Frame(kdl.Rotation(*[T[r][c] for r in range(3) for c in range(3)]), kdl.Vector(*[T[r][3] for r in range(3)]))
    if s["type"] == "fixed":
        joint = kdl.Joint(s["joint"], kdl.Joint.Fixed)
    else:
        axis = frame.M * kdl.Vector(*s["axis"])
        kind = kdl.Joint.RotAxis if s["type"] == "rot" else kdl.Joint.TransAxis
        joint = kdl.Joint(s["joint"], frame.p, axis, kind)
    tree.addSegment(kdl.Segment(s["link"], joint, frame), s["parent"])
def prepare(tip):
    chain = tree.getChain(spec["root"], tip)
    names = [chain.getSegment(i).getJoint().getName() for i in range(chain.getNrOfSegments())
             if chain.getSegment(i).getJoint().getTypeName() not in ("None", "Fixed")]
    return chain, names
def arrays(names, configs):
    out = []
    for values in configs:
        a = kdl.JntArray(len(names))
        for i, n in enumerate(names):
            a[i] = values[n]
        out.append(a)
    return out
configs = spec["configs"]
leaves = []
for leaf, first in spec["leaves"]:
    chain, names = prepare(leaf)
    leaves.append((kdl.ChainFkSolverPos_recursive(chain), arrays(names, configs), list(range(first, chain.getNrOfSegments() + 1))))
frame = kdl.Frame()
def fk_all():
    for k in range(len(configs)):
        for solver, qs, segments in leaves:
            for seg in segments:
                solver.JntToCart(qs[k], frame, seg)
jchain, jnames = prepare(spec["jtip"])
jsolver, jqs, J = kdl.ChainJntToJacSolver(jchain), arrays(jnames, configs), kdl.Jacobian(len(jnames))
def jac():
    for a in jqs:
        jsolver.JntToJac(a, J)
tip = kdl.Frame()
kdl.ChainFkSolverPos_recursive(jchain).JntToCart(jqs[0], tip)
def best(fn):
    b = 1e9
    for _ in range(spec["repeats"]):
        t = time.perf_counter(); fn(); b = min(b, time.perf_counter() - t)
    return b / len(configs) * 1e6
print(json.dumps({"fk": best(fk_all), "j": best(jac), "tip": [tip.p[i] for i in range(3)]}))
"""


def bench_kdl(model, q, repeats: int, jtip: str):
    """KDL through Debian's python3.11 (a subprocess: it is built against Debian's Python)."""
    if not os.path.exists(KDL_PYTHON) or subprocess.run([KDL_PYTHON, "-c", "import PyKDL"], capture_output=True, check=False).returncode:
        return None
    kinds = {JointType.REVOLUTE: "rot", JointType.CONTINUOUS: "rot", JointType.PRISMATIC: "trans", JointType.FIXED: "fixed"}
    segments = [{"link": model.link_names[j + 1], "parent": model.link_names[model.link_parents[j + 1]],
                 "joint": model.all_joint_names[j], "type": kinds[JointType(model.joint_types[j])],
                 "axis": model.joint_axes[j].tolist(), "origin": model.joint_origins[j].tolist()}
                for j in range(model.n_joints)]
    leaves, covered = [], {0}
    for leaf in [i for i in range(model.n_links) if not len(model.link_children[i])]:
        chain = [int(i) for i in model.link_supports[leaf]]
        first = next(k for k, link in enumerate(chain) if link not in covered)  # segment k of the chain is chain[k]
        covered.update(chain)
        leaves.append((model.link_names[leaf], first))
    values = joint_values(model, q)
    configs = [{n: float(v[k]) for n, v in values.items()} for k in range(len(q))]
    spec = {"root": model.root_link, "segments": segments, "leaves": leaves, "jtip": jtip, "configs": configs,
            "repeats": repeats}
    run = subprocess.run([KDL_PYTHON, "-c", KDL_SCRIPT], input=json.dumps(spec), capture_output=True, text=True, check=False)
    if run.returncode:
        return {"error": run.stderr.strip().splitlines()[-1]}
    result = json.loads(run.stdout)
    error = np.abs(np.array(result["tip"]) - forward_kinematics(model, q[0])[model.link_index(jtip), :3, 3]).max()
    if error > 1e-9:
        return {"error": f"tip differs by {error:.2g}"}
    return {"fk1": result["fk"], "fk": result["fk"], "j": result["j"]}


def peak_memory(model, n: int) -> dict:
    """Peak traced memory / output size of one batched FK of ``n`` configurations, per kernel;
    and the floor: time [µs/config] to allocate and write an output of that size."""
    q = model.random_configuration(n, np.random.default_rng(1))
    out_bytes = n * model.n_links * 16 * 8
    row = {"MB": out_bytes / 1e6}
    for kind in KERNELS:
        set_kernel(kind)
        if kind == "numba" and not prepare_kernels(model):
            continue
        tracemalloc.start()
        forward_kinematics(model, q)
        row[kind] = tracemalloc.get_traced_memory()[1] / out_bytes
        tracemalloc.stop()
    row["floor"] = interleaved({"floor": (lambda: None, lambda: np.empty((n, model.n_links * 16)).fill(1.0), n)}, 3)["floor"] * 1e6
    return row


def fmt(x, width=7, digits=2):
    return f"{'':>{width}s}" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:{width}.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="batches of 1,000, 50 IK problems, few repeats")
    parser.add_argument("--robots", default=",".join(ROBOTS), help="comma-separated subset of " + ",".join(ROBOTS))
    args = parser.parse_args()
    batch, repeats, singles, n_ik, n_mem = (1000, 3, 200, 50, 20000) if args.quick else (10000, 7, 1000, 300, 100000)
    base = example_robot_data_dir()
    if base is None:
        sys.exit("example-robot-data is not installed (pip install example-robot-data)")
    print(f"µs per configuration (IK: per problem); batches of {batch}; 1 = one configuration per call; "
          f"xpin = Pinocchio / ours (> 1: ours faster); IK: TRAC-IK protocol, {n_ik} problems, success % after /")
    print(f"numba {'available' if accel.available() else 'NOT installed: no numba rows'}")
    header = (f"{'robot':6s} {'kernel':20s} | {'FK 1':>7s} {'xpin':>5s} | {'FK 10k':>7s} {'xpin':>5s} | "
              f"{'J 10k':>7s} {'xpin':>5s} | {'IK 1':>7s} {'/%':>5s} | {'IK batch':>8s} {'/%':>5s}")
    print(header)
    print("-" * len(header))
    memory = {}
    for label in args.robots.split(","):
        key, jtip, ik_tip, ik_joints = ROBOTS[label]
        path = os.path.join(base, ERD_ROBOTS[key])
        model = RobotModel.from_urdf_file(path)
        q = model.random_configuration(batch, np.random.default_rng(0))
        joints = ik_joints or [j for j in model.joint_names if "finger" not in j]
        seed, _, T = problems(model, ik_tip, joints, n_ik, np.random.default_rng(12345))
        kinds = [k for k in KERNELS if k != "numba" or accel.available()]
        compile_seconds = None
        if "numba" in kinds:
            set_kernel("numba")
            t = time.perf_counter()
            if prepare_kernels(model, [(jtip,), (ik_tip,)]):
                compile_seconds = time.perf_counter() - t
            else:
                kinds.remove("numba")
        timers = {}
        for kind in kinds:  # the generic kernel's single calls are slow: fewer of them
            timers.update(our_timers(model, kind, q, singles if kind != "numpy generic" else singles // 10, jtip))
        timers.update(pin_timers(path, model, q[:singles], jtip))
        t = {key: value * 1e6 for key, value in interleaved(timers, repeats).items()}
        rows = {kind: {m: t[kind, m] for m in ("fk1", "fk", "j")} for kind in kinds}
        for kind in kinds:
            rows[kind].update(bench_ik_ours(model, kind, ik_tip, joints, seed, T))
        pin = {"fk1": t["pin", "fk"], "fk": t["pin", "fk"], "j": t["pin", "j"]} if ("pin", "fk") in t else None
        rows["Pinocchio (loop)"] = pin
        set_kernel(kinds[-1])
        rows["pytorch_kinematics"] = bench_pk(path, model, q, min(singles, 200), repeats, jtip)
        rows["KDL (loop)"] = bench_kdl(model, q[:singles], repeats, jtip)
        for name, row in rows.items():
            if row is None:
                print(f"{label:6s} {name:20s} | not installed")
                continue
            if "error" in row:
                print(f"{label:6s} {name:20s} | skipped: disagrees with our FK ({row['error']})")
                continue
            ratio = {k: (pin[k] / row[k] if pin and k in row else None) for k in ("fk1", "fk", "j")}
            ours = name in KERNELS
            ik = (f"{fmt(row.get('ik1'), 7, 0)} {fmt(100 * row['ik_rate'], 5, 1)} | "
                  f"{fmt(row.get('ikb'), 8, 1)} {fmt(100 * row['ikb_rate'], 5, 1)}") if "ik1" in row else f"{'n/a':>7s} {'':5s} | {'n/a':>8s}"
            print(f"{label:6s} {name:20s} | {fmt(row['fk1'])} {fmt(ratio['fk1'] if ours else None, 5)} | "
                  f"{fmt(row['fk'])} {fmt(ratio['fk'] if ours else None, 5)} | {fmt(row['j'])} "
                  f"{fmt(ratio['j'] if ours else None, 5)} | {ik}", flush=True)
        if compile_seconds is not None:
            print(f"{'':6s} (numba: compile or disk-cache load of the FK, Jacobian and IK kernels: {compile_seconds:.1f} s)")
        memory[label] = peak_memory(model, n_mem)
    print(f"\nPeak memory (tracemalloc) of one batched FK of {n_mem:,} configurations, as a multiple of its output; "
          f"floor = µs/config to allocate and fill an output of that size (page faults + writes)")
    print(f"{'robot':6s} {'output MB':>9s} | " + " | ".join(f"{k:>15s}" for k in KERNELS) + f" | {'floor µs':>8s}")
    for label, row in memory.items():
        print(f"{label:6s} {row['MB']:9.0f} | " + " | ".join(fmt(row.get(k), 15) for k in KERNELS) + f" | {row['floor']:8.2f}")


if __name__ == "__main__":
    main()
