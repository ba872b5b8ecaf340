"""``robokin fk``, ``robokin ik`` (JSON out) and ``robokin bench``."""

from __future__ import annotations

import json
import re
import sys
import time

import numpy as np

from ..ik import solve_ik
from ..kernels import prepare
from ..kinematics import forward_kinematics, frame_transform, jacobian
from ..spatial import matrix_to_quat_xyzw, quat_xyzw_to_matrix
from . import common
from .arguments import MAX_BENCH_BATCH, MAX_TIMEOUT, count, finite, real


def add_commands(commands) -> None:
    fk = commands.add_parser("fk", help="pose of a frame at a configuration (JSON)",
                             description="Pose of --frame in --base (default: the root link) as JSON.")
    common.add_file(fk)
    fk.add_argument("--frame", required=True, help="link whose pose is wanted")
    fk.add_argument("--base", help="link the pose is expressed in (default: root)")
    common.add_configuration(fk)
    fk.set_defaults(run=run_fk)
    ik = commands.add_parser("ik", help="joint values reaching a pose (JSON)",
                             description="Solve --tip to --pose (in --base, default root) from --seed (default home).")
    common.add_file(ik)
    ik.add_argument("--tip", required=True)
    ik.add_argument("--base")
    ik.add_argument("--pose", nargs=7, type=finite, required=True, metavar=("X", "Y", "Z", "QX", "QY", "QZ", "QW"))
    ik.add_argument("--seed", nargs="+", metavar="NAME=VALUE", default=(), help="seed joint values (default: home)")
    ik.add_argument("--timeout", type=real(0.0, MAX_TIMEOUT, low_open=True), default=1.0,
                    help=f"[s] in (0, {MAX_TIMEOUT:g}] (default 1)")
    # Pose values like -1.5e-05 must read as numbers, not options (argparse only knows -1.5).
    ik._negative_number_matcher = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
    ik.set_defaults(run=run_ik)
    bench = commands.add_parser("bench", help="FK / Jacobian / IK timings of this robot",
                                description="Times single and batched FK, the Jacobian of --tip and IK; "
                                            "Pinocchio in the same run when it is installed.")
    common.add_file(bench)
    bench.add_argument("--tip", help="IK / Jacobian frame (default: the deepest leaf)")
    bench.add_argument("-n", type=count(1, MAX_BENCH_BATCH), default=10_000,
                       help=f"batch size in [1, {MAX_BENCH_BATCH:g}] (default 10000)")
    bench.set_defaults(run=run_bench)


def _pose_json(T: np.ndarray) -> dict:
    return {"position": T[:3, 3].tolist(), "quat_xyzw": matrix_to_quat_xyzw(T[:3, :3]).tolist(),
            "matrix": T.tolist()}


def run_fk(args) -> int:
    model, _ = common.load(args.file)
    q = common.configuration(model, args)
    base = args.base or model.root_link
    T = frame_transform(model, q, base, args.frame)
    print(json.dumps({"robot": model.name, "frame": args.frame, "base": base, "q": model.q_to_dict(q),
                      **_pose_json(T)}, indent=2))
    return 0


def run_ik(args) -> int:
    model, _ = common.load(args.file)
    seed = model.q_from_dict(common.parse_values(model, args.seed, "--seed"), strict=True)
    target = np.eye(4)
    target[:3, 3] = args.pose[:3]
    quat = np.asarray(args.pose[3:])
    if not np.abs(quat).max() > 0:
        raise ValueError("--pose: the quaternion is zero")
    quat = quat / np.abs(quat).max()   # first to the unit box: the norm of 1e308 entries overflows
    target[:3, :3] = quat_xyzw_to_matrix(quat / np.linalg.norm(quat))
    result = solve_ik(model, target, args.tip, seed=seed, base=args.base, timeout=args.timeout,
                      max_iterations=1_000_000_000)
    print(json.dumps({"robot": model.name, "tip": args.tip, "base": args.base or model.root_link,
                      "success": bool(result.success), "status": str(result.status),
                      "position_error": float(result.position_error), "rotation_error": float(result.rotation_error),
                      "iterations": int(result.iterations), "q": model.q_to_dict(result.q)}, indent=2))
    return 0 if bool(result.success) else 3


def _best(fn, repeats: int = 5) -> float:
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run_bench(args) -> int:
    from tqdm import tqdm

    model, text = common.load(args.file)
    tip = args.tip or max(model.leaf_links, key=lambda n: model.link_depths[model.link_index(n)])
    prepare(model, frames=[(tip,)])   # compiled kernels first (numba; seconds on first use)
    rng = np.random.default_rng(0)
    q = model.random_configuration(args.n, rng=rng)
    rows = []
    steps = tqdm(total=4, desc="bench", disable=not sys.stderr.isatty(), file=sys.stderr)
    rows.append(("FK every link, 1 config [us]", _best(lambda: forward_kinematics(model, q[0]), 50) * 1e6))
    steps.update()
    rows.append((f"FK every link, {args.n} configs [us/config]",
                 _best(lambda: forward_kinematics(model, q)) / args.n * 1e6))
    steps.update()
    rows.append((f"Jacobian of {tip}, {args.n} configs [us/config]",
                 _best(lambda: jacobian(model, q, tip)) / args.n * 1e6))
    steps.update()
    targets = forward_kinematics(model, q[:200])[:, model.link_index(tip)]
    seed = model.home_configuration()
    start = time.perf_counter()
    solved = sum(bool(solve_ik(model, T, tip, seed=seed, timeout=0.005).success) for T in targets)
    rows.append((f"IK of {tip}, 200 targets, 5 ms each [us/solve] ({solved / 2:.1f} % solved)",
                 (time.perf_counter() - start) / 200 * 1e6))
    steps.update()
    steps.close()
    peer = {}
    try:
        import pinocchio as pin
        pmodel = pin.buildModelFromXML(text)
        pdata = pmodel.createData()
        pq = [pin.randomConfiguration(pmodel) for _ in range(min(args.n, 2000))]
        peer["FK"] = _best(lambda: [pin.framesForwardKinematics(pmodel, pdata, x) for x in pq]) / len(pq) * 1e6
    except Exception as error:  # noqa: BLE001 - the peer is optional
        peer["error"] = f"{type(error).__name__}: {error}"
    print(f"robot {model.name}: {model.n_links} links, n_q = {model.n_q}")
    for label, value in rows:
        print(f"  {label:70} {value:10.2f}")
    if "FK" in peer:
        print(f"  Pinocchio framesForwardKinematics from Python [us/config] {peer['FK']:10.2f}   "
              f"(Pinocchio / ours batched = {peer['FK'] / rows[1][1]:.1f})")
    else:
        print(f"  (Pinocchio not run: {peer.get('error')})")
    return 0
