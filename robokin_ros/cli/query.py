"""``robokin fk`` (a table or JSON), ``robokin ik`` (JSON) and ``robokin bench``.

Every command's frame defaults to the tip of the default IK group, as the node derives it
(:func:`robokin_ros.cli.common.default_tip`).
"""

from __future__ import annotations

import json
import math
import re
import sys
import threading
import time

import numpy as np

from ..errors import ArgumentError
from ..ik import prepare_ik, reach_upper_bound, solve_ik
from ..kernels import fk_codegen, notices, prepare
from ..kernels.fk_codegen import compiled_fk, compiled_frames
from ..kinematics import Kinematics, forward_kinematics, frame_transform, jacobian
from ..spatial import matrix_to_quat_xyzw, matrix_to_rpy, quat_xyzw_to_matrix, rpy_to_matrix
from . import common
from .arguments import MAX_BENCH_BATCH, MAX_SOLUTIONS, MAX_TIMEOUT, count, finite, real, tolerance, value_counts
from .peer_output import PeerOutput, peer_stderr

#: |‖quaternion‖ - 1| above which ``ik --pose`` warns that it normalised the quaternion.
UNIT_QUATERNION_TOLERANCE = 1e-6
#: The IK row of ``bench``: the TRAC-IK protocol of ``bench/bench_ik.py`` (what the README's IK
#: numbers use): targets, tolerance [m, rad], time budget per target [s], iteration budget.
BENCH_IK_TARGETS, BENCH_IK_TOLERANCE, BENCH_IK_TIMEOUT, BENCH_IK_ITERATIONS = 200, 1e-5, 0.005, 10**6
#: Rounds over the IK targets; a target's time is its best round (as ``bench/bench_ik.py``).
BENCH_IK_ROUNDS = 3
#: Pose values like -1.5e-05 must read as numbers, not options (argparse alone only knows -1.5).
_NEGATIVE_NUMBER = re.compile(r"^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def add_commands(commands) -> None:
    fk = commands.add_parser("fk", help="pose of a frame at a configuration (table or JSON)",
                             description="Pose of --frame in --base (default: the root link): position, "
                                         "quaternion, roll-pitch-yaw and matrix. Joint values outside their "
                                         "limits are used as given, with a warning.")
    common.add_file(fk)
    common.add_tip(fk, "--frame", "link whose pose is wanted")
    fk.add_argument("--base", help="link the pose is expressed in (default: root)")
    fk.add_argument("--format", choices=("table", "json"), default="table", help="output (default: table)")
    common.add_configuration(fk)
    fk.set_defaults(run=run_fk)
    _add_ik(commands)
    bench = commands.add_parser("bench", help="FK / Jacobian / IK timings of this robot",
                                description="Times single and batched FK, the Jacobian of --tip and IK (the "
                                            "TRAC-IK protocol of bench/bench_ik.py) on the compiled kernels; "
                                            "Pinocchio in the same run when it is installed. On a robot whose "
                                            "kernels are not compiled yet, the rows time what runs while they "
                                            "compile in the background, marked 'cold' (--wait: wait for them).")
    common.add_file(bench)
    common.add_tip(bench, what="IK / Jacobian frame")
    bench.add_argument("-n", type=count(1, MAX_BENCH_BATCH), default=10_000,
                       help=f"batch size in [1, {MAX_BENCH_BATCH:g}] (default 10000)")
    bench.add_argument("--wait", action="store_true", help="wait for the kernels to compile before timing "
                       "(on a robot new to this machine: seconds to minutes, once)")
    bench.set_defaults(run=run_bench)


def _add_ik(commands) -> None:
    ik = commands.add_parser(
        "ik", help="joint values reaching a pose (JSON)",
        description="Solve --tip to --pose (in --base, default root) from --seed (default home). A target "
                    "beyond the chain's reach (the sum of its link offsets) is refused at once (exit 3).")
    common.add_file(ik)
    common.add_tip(ik)
    ik.add_argument("--base")
    ik.add_argument("--pose", nargs="+", type=finite, required=True, metavar=("X Y Z", "QX QY QZ QW"),
                    action=value_counts(3, 7, what="X Y Z [QX QY QZ QW]"),
                    help="target position [m] and orientation as a quaternion (normalised, with a warning when "
                         "it is not of unit length); or the position alone with --rpy or --position-only")
    ik.add_argument("--rpy", nargs=3, type=finite, metavar=("R", "P", "Y"),
                    help="orientation as roll, pitch, yaw [rad] about the fixed x, y, z axes (URDF's rpy)")
    ik.add_argument("--position-only", action="store_true", help="any orientation of the tip")
    ik.add_argument("--axis-tolerances", nargs=3, type=tolerance, metavar=("RX", "RY", "RZ"),
                    help="[rad] rotation error allowed about the target's x, y, z axes ('inf' frees an axis)")
    ik.add_argument("--solutions", type=count(1, MAX_SOLUTIONS), metavar="K",
                    help=f"up to K distinct solutions in [1, {MAX_SOLUTIONS}] (--timeout bounds the whole search)")
    ik.add_argument("--seed", nargs="+", metavar="NAME=VALUE", default=(), help="seed joint values (default: home)")
    ik.add_argument("--timeout", type=real(0.0, MAX_TIMEOUT, low_open=True), default=1.0,
                    help=f"[s] in (0, {MAX_TIMEOUT:g}] (default 1)")
    ik._negative_number_matcher = _NEGATIVE_NUMBER
    ik.set_defaults(run=run_ik)


def compact_json(data: dict) -> str:
    """``data`` as JSON, one top-level key per line (a list of objects: one object per line)."""
    def value(v) -> str:
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            return "[\n" + ",\n".join(f"    {json.dumps(x)}" for x in v) + "\n  ]"
        return json.dumps(v)
    return "{\n" + ",\n".join(f"  {json.dumps(k)}: {value(v)}" for k, v in data.items()) + "\n}"


def _pose_json(T: np.ndarray) -> dict:
    return {"position": T[:3, 3].tolist(), "quat_xyzw": matrix_to_quat_xyzw(T[:3, :3]).tolist(),
            "rpy": matrix_to_rpy(T[:3, :3]).tolist(), "matrix": T.tolist()}


# ---------------------------------------------------------------------------- fk
def fk_table(model, frame: str, base: str, q: np.ndarray, T: np.ndarray) -> str:
    """The pose ``T (4, 4)`` of ``frame`` in ``base`` at ``q`` as a few aligned lines."""
    def row(values) -> str:
        return " ".join(f"{v:+10.6f}" for v in values)
    lines = [f"{model.name}: {frame} in {base}",
             f"  position [m]   {row(T[:3, 3])}",
             f"  quat xyzw      {row(matrix_to_quat_xyzw(T[:3, :3]))}",
             f"  rpy [rad]      {row(matrix_to_rpy(T[:3, :3]))}",
             *(f"  {'matrix' if i == 0 else '':15}{row(T[i])}" for i in range(4))]
    values = [f"{name}={value:g}" for name, value in model.q_to_dict(q).items()]
    lines += [f"  {'q' if k == 0 else '':15}{' '.join(values[k:k + 4])}" for k in range(0, len(values), 4)]
    return "\n".join(lines)


def run_fk(args) -> int:
    model, _ = common.load(args.file)
    q = common.configuration(model, args)
    base, frame = args.base or model.root_link, common.tip_of(model, args.frame)
    T = frame_transform(model, q, base, frame)
    if args.format == "json":
        print(compact_json({"robot": model.name, "frame": frame, "base": base, "q": model.q_to_dict(q),
                            **_pose_json(T)}))
    else:
        print(fk_table(model, frame, base, q, T))
    return 0


# ---------------------------------------------------------------------------- ik
def target_pose(args) -> np.ndarray:
    """``T_base_tip (4, 4)`` of ``--pose`` / ``--rpy``; the rotation is the identity with
    ``--position-only`` and no orientation given. Warns for a quaternion that is not of unit length.

    Raises:
        ArgumentError: a pose of neither 3 nor 7 values; a quaternion and --rpy together; a
            position without any orientation or --position-only; a zero quaternion.
    """
    pose = list(args.pose)
    if len(pose) not in (3, 7):
        raise ArgumentError("--pose", f"takes X Y Z [QX QY QZ QW] (3 or 7 values), got {len(pose)}")
    if len(pose) == 7 and args.rpy is not None:
        raise ArgumentError("--rpy", "the --pose already holds a quaternion; give one orientation")
    freed = args.position_only or (args.axis_tolerances is not None and np.isinf(args.axis_tolerances).all())
    if len(pose) == 3 and args.rpy is None and not freed:
        raise ArgumentError("--pose", "X Y Z needs an orientation: QX QY QZ QW after it, --rpy R P Y, "
                                      "or --position-only")
    target = np.eye(4)
    target[:3, 3] = pose[:3]
    if args.rpy is not None:
        target[:3, :3] = rpy_to_matrix(np.asarray(args.rpy))
    elif len(pose) == 7:
        target[:3, :3] = quat_xyzw_to_matrix(_unit_quaternion(np.asarray(pose[3:]), args.command))
    return target


def _unit_quaternion(quat: np.ndarray, command: str) -> np.ndarray:
    """``quat (4,)`` divided by its norm, with a warning when that was not 1."""
    scale = float(np.abs(quat).max())
    if not scale > 0:
        raise ArgumentError("--pose", "the quaternion is zero")
    boxed = quat / scale   # first to the unit box: the norm of 1e308 entries overflows
    unit = boxed / np.linalg.norm(boxed)
    norm = scale * float(np.linalg.norm(boxed))
    if not abs(norm - 1.0) <= UNIT_QUATERNION_TOLERANCE:
        common.warn(command, f"the quaternion has norm {norm:.6g}, not 1; normalised to "
                             f"({', '.join(f'{v:.6g}' for v in unit)})")
    return unit


def axis_tolerances(args) -> np.ndarray | None:
    """``(6,)`` ``axis_tolerances`` of solve_ik from --position-only / --axis-tolerances, or None."""
    if args.position_only:
        return np.array([0.0, 0.0, 0.0, np.inf, np.inf, np.inf])
    if args.axis_tolerances is not None:
        return np.array([0.0, 0.0, 0.0, *args.axis_tolerances])
    return None


def _beyond_reach(model, base: str, tip: str, target: np.ndarray) -> str | None:
    """Why ``target`` is out of reach of the chain ``base`` -> ``tip`` (as the node says it), or None."""
    distance, reach = float(np.linalg.norm(target[:3, 3])), reach_upper_bound(model, base, tip)
    if distance <= reach:
        return None
    return (f"the target of {tip!r} is {distance:.4g} m from {base!r}, beyond the reach of the chain "
            f"({reach:.4g} m, the sum of its link offsets)")


def _answer(model, result, k=None) -> dict:
    pick = (lambda a: np.asarray(a)) if k is None else (lambda a: np.asarray(a)[k])
    return {"success": bool(pick(result.success)), "status": str(pick(result.status)),
            "position_error": float(pick(result.position_error)),
            "rotation_error": float(pick(result.rotation_error)), "iterations": int(pick(result.iterations)),
            "q": model.q_to_dict(pick(result.q))}


def run_ik(args) -> int:
    model, _ = common.load(args.file)
    tip, base = common.tip_of(model, args.tip), args.base or model.root_link
    seed = model.q_from_dict(common.parse_values(model, args.seed, "--seed"), strict=True)
    target = target_pose(args)
    head = {"robot": model.name, "tip": tip, "base": base}
    refusal = _beyond_reach(model, base, tip, target)
    if refusal is not None:
        print(f"robokin ik: {refusal}", file=sys.stderr)
        print(compact_json({**head, "success": False, "status": "beyond_reach", "message": refusal,
                            "position_error": float(np.linalg.norm(target[:3, 3] - frame_transform(
                                model, seed, base, tip)[:3, 3])), "iterations": 0, "q": model.q_to_dict(seed)}))
        return 3
    options = dict(seed=seed, base=args.base, timeout=args.timeout, axis_tolerances=axis_tolerances(args))
    if args.solutions is not None:
        result = solve_ik(model, target, tip, solutions=args.solutions, **options)
        answers = [_answer(model, result, k) for k in range(len(result.success))]
        solved = [a for a in answers if a["success"]]
        print(compact_json({**head, "success": bool(solved), "count": len(solved), "solutions": solved or answers}))
        return 0 if solved else 3
    result = solve_ik(model, target, tip, max_iterations=1_000_000_000, **options)
    print(compact_json({**head, **_answer(model, result)}))
    return 0 if bool(result.success) else 3


# ---------------------------------------------------------------------------- bench
#: The path a row timed (its last column): its kernel was loaded (compiled) before the row ran, it
#: was still compiling (the row timed what runs meanwhile), or none is to be had (no numba, or no
#: generated kernel for this model).
COMPILED, COLD, NOT_COMPILED = "compiled", "cold (compiling in the background)", "not compiled (numpy)"
#: A row timed on the generic compiled kernels while the robot's own compiled in the background.
GENERIC = "generic compiled (the robot's own kernels compiling)"
#: The name of bench's loading thread (as the background loads of
#: :mod:`robokin_ros.kernels.lazy_accel`: :func:`robokin_ros.cli.leave` waits for none of them).
LOADING_THREAD = "robokin_ros accel (bench)"


class Preparation:
    """Bench's compiled kernels, loaded in a background thread in the order of :data:`STEPS`
    (each compiles in a separate process unless the disk cache has it); the rows time whatever
    is loaded when they start (:meth:`path`).

    Attributes:
        done: step name -> True (its kernels are loaded) / False (none is to be had).
    """

    #: The steps: the IK loop (the headline row), the FK of every link, the Jacobian kernels of the tip.
    STEPS = ("ik", "fk", "jacobian")

    def __init__(self, model, tip: str, ik_options: dict):
        self.model, self.tip, self.ik_options = model, tip, ik_options
        self.done: dict[str, bool] = {}
        self.error: BaseException | None = None
        self.compiling = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=LOADING_THREAD, daemon=True)

    def _step(self, name: str) -> bool:
        if name == "ik":
            return prepare_ik(self.model, self.tip, **self.ik_options)
        if name == "fk":
            return prepare(self.model)
        return prepare(self.model, frames=[(self.tip,)], fk=False)

    def _run(self) -> None:
        try:
            for name in self.STEPS:
                ready = self._step(name)
                with self._changed:
                    self.done[name] = ready
                    self._changed.notify_all()
        except BaseException as error:  # noqa: BLE001 - raised again in the caller's thread
            with self._changed:
                self.error = error
                self._changed.notify_all()

    def _tell(self, notice) -> None:
        if notice.robot == self.model.name and notice.started:
            with self._changed:
                self.compiling = True
                self._changed.notify_all()

    def start(self, wait: bool) -> None:
        """Start loading; return once every kernel is loaded (all were in the disk cache, or
        ``wait``) or one starts compiling (then the others go on in the background).

        Raises:
            RobokinError: what the loading raised (e.g. bad IK options) before it returned.
        """
        with notices.subscribed(self._tell):
            self._thread.start()
            with self._changed:
                self._changed.wait_for(lambda: self.error is not None or len(self.done) == len(self.STEPS)
                                       or (self.compiling and not wait))
        self.raise_error()

    def raise_error(self) -> None:
        """Raise what the loading raised, if anything."""
        if self.error is not None:
            raise self.error

    def _loaded(self, step: str) -> bool:
        """Whether ``step``'s kernel is in use now (loaded by this preparation, or by the
        background load a large batch starts: :mod:`robokin_ros.kernels.lazy_accel`)."""
        if step == "ik":
            return bool(self.done.get("ik"))
        kernel = self._kernel(step)
        return kernel is not None and kernel.backend == fk_codegen.GENERATED

    def _kernel(self, step: str):
        """The FK (``"fk"``) or tip Jacobian kernel of this robot (None: it has none)."""
        return compiled_fk(self.model) if step == "fk" else compiled_frames(self.model, (self.tip,))

    def path(self, step: str) -> str:
        """What a row of ``step`` times now: :data:`COMPILED`, :data:`COLD` or :data:`NOT_COMPILED`."""
        self.raise_error()
        if self._loaded(step):
            return COMPILED
        if step != "ik" and self._kernel(step) is not None and self._kernel(step).backend == fk_codegen.GENERIC:
            return GENERIC
        return NOT_COMPILED if self.done.get(step) is False else COLD

    def running(self) -> bool:
        """True while kernels still compile or load."""
        return self._thread.is_alive()


def timed_row(preparation: Preparation, step: str, measure) -> tuple[str, float]:
    """``(path, measure())``: ``measure`` runs again when ``step``'s kernels were loaded while it
    ran, so that a row times one path only."""
    path = preparation.path(step)
    value = measure()
    if path in (COLD, GENERIC) and preparation.path(step) != path:
        path, value = preparation.path(step), measure()
    return path, value


def _best(fn, repeats: int = 5) -> float:
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bench_ik(model, tip: str, rng, preparation: Preparation) -> tuple[str, float, str]:
    """The IK row of ``bench``: :data:`BENCH_IK_TARGETS` single requests of the TRAC-IK protocol
    (targets = FK of random configurations, seed at mid-limits, tolerance
    :data:`BENCH_IK_TOLERANCE`, :data:`BENCH_IK_TIMEOUT` each), on the compiled loop that
    ``preparation`` loaded (:func:`~robokin_ros.ik.prepare_ik`, same options: :func:`ik_options`)
    or, while it compiles, on the numpy path (the label says which), solved in
    :data:`BENCH_IK_ROUNDS` rounds.

    Returns:
        (label, mean over the targets of each one's best time [µs] (a target counts as solved
        when its first round of the timed path solved it), path timed).
    """
    options = ik_options()
    lo, hi = model.q_lower, model.q_upper
    seed = np.where(np.isfinite(lo) & np.isfinite(hi), 0.5 * (lo + hi), 0.0)
    targets = forward_kinematics(model, model.random_configuration(BENCH_IK_TARGETS, rng=rng))[:, model.link_index(tip)]
    solved = np.zeros(len(targets), bool)

    def rounds() -> float:
        solve_ik(model, targets[0], tip, seed=seed, timeout=BENCH_IK_TIMEOUT, rng=0, **options)   # untimed first call
        best = np.full(len(targets), np.inf)
        for round_ in range(BENCH_IK_ROUNDS):
            for i, T in enumerate(targets):
                start = time.perf_counter()
                result = solve_ik(model, T, tip, seed=seed, timeout=BENCH_IK_TIMEOUT, rng=i, **options)
                best[i] = min(best[i], time.perf_counter() - start)
                solved[i] = bool(result.success) if round_ == 0 else solved[i]
        return float(best.mean()) * 1e6

    path, mean = timed_row(preparation, "ik", rounds)
    loop = {COMPILED: "compiled loop", COLD: "numpy path, cold",
            NOT_COMPILED: "numpy path, cold: the compiled loop is not active"}[path]
    return (f"IK of {tip}, {len(targets)} targets, {BENCH_IK_TIMEOUT * 1e3:g} ms each, {loop} [us/solve] "
            f"({100 * solved.mean():.1f} % solved)", mean, path)


def ik_options() -> dict:
    """The options of bench's IK requests (:func:`bench_ik`) and of the loop it prepares."""
    return dict(position_tolerance=BENCH_IK_TOLERANCE, rotation_tolerance=BENCH_IK_TOLERANCE,
                max_iterations=BENCH_IK_ITERATIONS)


def bench_rows(model, tip: str, n: int, preparation: Preparation) -> list[tuple[str, float, str]]:
    """bench's rows: (label, value, path timed: :data:`COMPILED`, :data:`COLD` or
    :data:`NOT_COMPILED`); the prepared handle's value is NaN (not timed) while its kernel
    compiles (building the handle would wait for it)."""
    from tqdm import tqdm

    rng = np.random.default_rng(0)
    q = model.random_configuration(n, rng=rng)
    out, one = np.empty((model.n_links, 4, 4)), np.ascontiguousarray(q[0])

    def prepared_fk() -> float:
        if preparation.path("fk") == COLD:
            return math.nan
        kinematics = Kinematics(model, dynamics=())   # its FK alone (the dynamics would compile too)
        return _best(lambda: kinematics.fk(one, out), 50) * 1e6

    steps = tqdm(total=5, desc="bench", disable=not sys.stderr.isatty(), file=sys.stderr)
    rows = []
    for step, label, measure in (
            ("fk", "FK every link, 1 config, forward_kinematics [us]",
             lambda: _best(lambda: forward_kinematics(model, q[0]), 50) * 1e6),
            ("fk", "FK every link, 1 config, prepared Kinematics(model).fk(q, out) [us]", prepared_fk),
            ("fk", f"FK every link, {n} configs [us/config]",
             lambda: _best(lambda: forward_kinematics(model, q)) / n * 1e6),
            ("jacobian", f"Jacobian of {tip}, {n} configs [us/config]",
             lambda: _best(lambda: jacobian(model, q, tip)) / n * 1e6)):
        rows.append((label, *reversed(timed_row(preparation, step, measure))))
        steps.update()
    rows.append(bench_ik(model, tip, rng, preparation))
    steps.update()
    steps.close()
    return rows


def bench_table(rows) -> list[str]:
    """The lines of bench's rows: label, value (``-``: not timed) and the path timed."""
    width = max(len(label) for label, _, _ in rows)
    lines = []
    for label, value, path in rows:
        if not math.isfinite(value):
            value, path = "-", f"{path}: not timed (building the handle waits for its compile)"
        lines.append(f"  {label:{width}} {value:>10.2f}   {path}" if isinstance(value, float) else
                     f"  {label:{width}} {value:>10}   {path}")
    return lines


def peer_fk(text: str, n: int) -> tuple[dict, PeerOutput]:
    """Pinocchio's FK of every frame from Python [us/config] on at most 2,000 random
    configurations (``{"FK": value}``, or ``{"error": why}`` without Pinocchio or when it cannot
    read ``text``), and what its URDF parser wrote on stderr meanwhile (kept off the terminal)."""
    peer = {}
    with peer_stderr("Pinocchio's URDF parser (urdfdom)") as parser:
        try:
            import pinocchio as pin
            pmodel = pin.buildModelFromXML(text)
        except Exception as error:  # noqa: BLE001 - the peer is optional
            return {"error": f"{type(error).__name__}: {error}"}, parser
    try:
        pdata = pmodel.createData()
        pq = [pin.randomConfiguration(pmodel) for _ in range(min(n, 2000))]
        peer["FK"] = _best(lambda: [pin.framesForwardKinematics(pmodel, pdata, x) for x in pq]) / len(pq) * 1e6
    except Exception as error:  # noqa: BLE001 - the peer is optional
        peer["error"] = f"{type(error).__name__}: {error}"
    return peer, parser


def run_bench(args) -> int:
    model, text = common.load(args.file)
    tip = common.tip_of(model, args.tip)
    model.link_index(tip)   # an unknown --tip: its error now
    preparation = Preparation(model, tip, ik_options())
    preparation.start(wait=args.wait)   # returns at once when a kernel must compile (unless --wait)
    rows = bench_rows(model, tip, args.n, preparation)
    peer, parser = peer_fk(text, args.n)
    if "FK" in peer:
        rows.append(("Pinocchio framesForwardKinematics from Python [us/config]", peer["FK"],
                     f"(Pinocchio / ours batched = {peer['FK'] / rows[2][1]:.1f})"))
    print(f"robot {model.name}: {model.n_links} links, n_q = {model.n_q}, tip {tip}")
    print("\n".join(bench_table(rows)))
    if "FK" not in peer:
        print(f"  (Pinocchio not run: {peer.get('error')})")
    if parser.summary():
        print(f"robokin bench: {parser.summary()}", file=sys.stderr)
    if any(path in (COLD, GENERIC) for _, _, path in rows):
        print(f"robokin bench: the rows marked cold or generic ran while {model.name}'s kernels compiled in the "
              "background; "
              "a compile still running stops with this command (what finished is cached): run bench again, "
              "or with --wait to compile them all first (once per machine)", file=sys.stderr)
    return 0
