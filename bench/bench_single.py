"""The table of issue 25: single calls (one configuration at a time) against the C++ peers, one run.

Usage: ``python3 bench/bench_single.py [--quick] [--rounds N] [--no-ik]``.

Every row times robokin_ros and its peer in the same process, interleaved (each round runs every
timer of the row once, over the same configurations), and prints the best per-call time of each,
the ratio ``peer / robokin`` (> 1: robokin is faster) with its range over the rounds, and the
largest difference between the two results (each row's answers checked against the peer's):

- FK of every link, one configuration per call: ``forward_kinematics(model, q)`` and the prepared
  handle's ``fk(q, out)`` (:class:`robokin_ros.Kinematics`; its Jacobian and dynamics likewise) against Pinocchio's ``framesForwardKinematics`` (UR5, Panda, Talos of
  example-robot-data); the tip Jacobian likewise against ``computeFrameJacobian``;
- rnea / crba / aba on the arms (mimic tags removed: Pinocchio reads mimic joints as independent) against ``pin.rnea`` / ``pin.crba`` / ``pin.aba``;
- self-collision of the bundled Panda (its SRDF's pairs), every pair and stop at the first,
  against Pinocchio + coal's ``computeCollisions`` on the same pairs (the verdicts must agree);
- IK with the TRAC-IK protocol of ``bench/bench_ik.py`` (UR5, Panda, xArm7): mean time of a
  single request against roboticstoolbox ``ik_LM``, solve rates and wrong answers;
- batched FK of every link of Talos against Pinocchio's loop, and the numpy fallback (numba off)
  against the same loop.

The numba kernels are loaded before anything is timed (:func:`robokin_ros.prepare`, then
:func:`timing.wait_for_kernels`).
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "test"))

from peers import ERD_ROBOTS, example_robot_data_dir, pin_configuration  # noqa: E402
from timing import wait_for_kernels  # noqa: E402

import robokin_ros as rk  # noqa: E402
from robokin_ros import LOCAL_WORLD_ALIGNED, RobotModel  # noqa: E402
from robokin_ros.collision import in_collision  # noqa: E402

#: (label, example-robot-data key, tip frame) of the FK, Jacobian and dynamics rows.
ARMS = [("UR5", "ur5", "tool0"), ("Panda", "panda", "panda_hand_tcp"), ("xArm7", "xarm7", "link_eef")]
TALOS = ("Talos", "talos", "gripper_left_fingertip_1_link")


class Row:
    """One line of the table: per-round times of ours and the peer, and the result check."""

    def __init__(self, what: str, robot: str, unit: str = "µs"):
        self.what, self.robot, self.unit = what, robot, unit
        self.ours: list[float] = []
        self.peer: list[float] = []
        self.error = np.nan
        self.note = ""

    def time(self, ours, peer, count: int, rounds: int, scale: float = 1e6) -> Row:
        """Interleaved rounds of ``ours()`` and ``peer()`` (each ``count`` calls' worth), after one
        untimed warm-up call of each (first-touch page faults, lazy loads)."""
        ours(), peer()
        for _ in range(rounds):
            for fn, times in ((ours, self.ours), (peer, self.peer)):
                t = time.perf_counter()
                fn()
                times.append((time.perf_counter() - t) / count * scale)
        return self

    def line(self) -> str:
        ours, peer = min(self.ours), min(self.peer)
        ratios = np.array(self.peer) / np.array(self.ours)
        return (f"| {self.what} | {self.robot} | {ours:.3g} {self.unit} | {peer:.3g} {self.unit} | "
                f"**{peer / ours:.2f}×** ({ratios.min():.2f}–{ratios.max():.2f}) | {self.error:.1e} | {self.note} |")


def pin_models(path: str):
    import pinocchio as pin
    pm = pin.buildModelFromUrdf(path)
    return pin, pm, pm.createData()


def without_mimics(path: str) -> RobotModel:
    """The robot of ``path`` with its mimic tags removed: Pinocchio's URDF reader makes mimic joints
    independent, so only then are the two models (and their dynamics) the same."""
    with open(path) as f:
        return RobotModel.from_urdf(re.sub(r"<mimic\b[^>]*/>", "", f.read()))


def link_frames(model: RobotModel, pin, pm):
    """(our link index, Pinocchio frame id) of every link both have."""
    pairs = []
    for i, name in enumerate(model.link_names):
        if pm.existFrame(name, pin.BODY):
            pairs.append((i, pm.getFrameId(name, pin.BODY)))
    return pairs


def kinematics_rows(label, path, tip, n, rounds, rng) -> list[Row]:
    pin, pm, pd = pin_models(path)
    model = without_mimics(path)
    rk.prepare(model, [(tip,)], dynamics=("rnea", "crba", "aba"))
    wait_for_kernels()
    q = model.random_configuration(n, rng)
    pq = [pin_configuration(model, pm, x) for x in q]
    qs = list(q)   # row views made up front, as Pinocchio's list: no view creation timed
    handle = rk.Kinematics(model) if hasattr(rk, "Kinematics") else None
    rows = []

    # FK of every link
    frames = link_frames(model, pin, pm)
    ours_T = np.array([rk.forward_kinematics(model, x) for x in q[:20]])
    err = 0.0
    for k in range(20):
        pin.framesForwardKinematics(pm, pd, pq[k])
        err = max(err, max(np.abs(ours_T[k, i] - pd.oMf[f].homogeneous).max() for i, f in frames))

    def ours_fk():
        for x in qs:
            rk.forward_kinematics(model, x)

    def pin_fk():
        for x in pq:
            pin.framesForwardKinematics(pm, pd, x)

    row = Row("FK every link, single call", label).time(ours_fk, pin_fk, n, rounds)
    row.error = err
    rows.append(row)
    if handle is not None:
        out = np.empty((model.n_links, 4, 4))

        def handle_fk():
            for x in qs:
                handle.fk(x, out)
        row = Row("FK every link, prepared handle, out=", label).time(handle_fk, pin_fk, n, rounds)
        row.error = max(np.abs(handle.fk(x) - rk.forward_kinematics(model, x)).max() for x in q[:20])
        rows.append(row)

    # tip Jacobian (LOCAL_WORLD_ALIGNED, FK included)
    fid = pm.getFrameId(tip, pin.BODY)
    lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    err = 0.0
    for k in range(20):
        J = rk.jacobian(model, q[k], tip, LOCAL_WORLD_ALIGNED)
        Jp = pin.computeFrameJacobian(pm, pd, pq[k], fid, lwa)
        err = max(err, np.abs(J - pin_velocity_columns(model, pm, Jp)).max())

    def ours_j():
        for x in qs:
            rk.jacobian(model, x, tip, LOCAL_WORLD_ALIGNED)

    def pin_j():
        for x in pq:
            pin.computeFrameJacobian(pm, pd, x, fid, lwa)
    row = Row("tip Jacobian, single call", label).time(ours_j, pin_j, n, rounds)
    row.error = err
    rows.append(row)
    if handle is not None:
        j_out = np.empty((6, model.n_v))

        def handle_j():
            for x in qs:
                handle.jacobian(x, tip, j_out)
        row = Row("tip Jacobian, prepared handle, out=", label).time(handle_j, pin_j, n, rounds)
        row.error = max(np.abs(handle.jacobian(x, tip) - rk.jacobian(model, x, tip, LOCAL_WORLD_ALIGNED)).max()
                        for x in q[:20])
        rows.append(row)

    # dynamics
    v = rng.normal(size=(n, model.n_v))
    a = rng.normal(size=(n, model.n_v))
    pv = [pin_velocity(model, pm, x) for x in v]
    pa = [pin_velocity(model, pm, x) for x in a]
    tau = np.array([rk.rnea(model, q[k], v[k], a[k]) for k in range(n)])
    ptau = [pin_velocity(model, pm, x) for x in tau]
    # per call: the function and its argument tuple, prepared up front (no lambda or indexing timed)
    ours_args = {"rnea": [(model, q[k], v[k], a[k]) for k in range(n)], "crba": [(model, q[k]) for k in range(n)],
                 "aba": [(model, q[k], v[k], tau[k]) for k in range(n)]}
    pin_args = {"rnea": [(pm, pd, pq[k], pv[k], pa[k]) for k in range(n)], "crba": [(pm, pd, pq[k]) for k in range(n)],
                "aba": [(pm, pd, pq[k], pv[k], ptau[k]) for k in range(n)]}
    for name in ("rnea", "crba", "aba"):
        ours, peer, symmetric = getattr(rk, name), getattr(pin, name), name == "crba"
        err = 0.0
        for k in range(20):
            mine, theirs = np.asarray(ours(*ours_args[name][k])), np.array(peer(*pin_args[name][k]))
            if symmetric:
                theirs = np.triu(theirs) + np.triu(theirs, 1).T
                mine = pin_velocity_matrix(model, pm, mine)
            else:
                mine = pin_velocity(model, pm, mine)
            err = max(err, np.abs(mine - theirs).max())

        def ours_loop(ours=ours, calls=ours_args[name]):
            for args in calls:
                ours(*args)

        def peer_loop(peer=peer, calls=pin_args[name]):
            for args in calls:
                peer(*args)
        row = Row(f"{name}, single call", label).time(ours_loop, peer_loop, n, rounds)
        row.error = err
        rows.append(row)
        if handle is not None:
            method, calls = getattr(handle, name), [args[1:] for args in ours_args[name]]
            out = np.empty((model.n_v, model.n_v) if symmetric else model.n_v)

            def handle_loop(method=method, calls=calls, out=out):
                for args in calls:
                    method(*args, out=out)
            row = Row(f"{name}, prepared handle, out=", label).time(handle_loop, peer_loop, n, rounds)
            row.error = max(np.abs(method(*calls[k]) - ours(*ours_args[name][k])).max() for k in range(20))
            rows.append(row)
    return rows


def pin_velocity(model: RobotModel, pm, v: np.ndarray) -> np.ndarray:
    """Our velocity-space vector ``(n_v,)`` in Pinocchio's joint order (same size on these arms)."""
    out = np.zeros(pm.nv)
    for jid in range(1, pm.njoints):
        j = model.joint_index(pm.names[jid])
        out[pm.joints[jid].idx_v] = v[model.joint_v_index[j]]
    return out


def pin_velocity_matrix(model: RobotModel, pm, M: np.ndarray) -> np.ndarray:
    idx = [model.joint_v_index[model.joint_index(pm.names[jid])] for jid in range(1, pm.njoints)]
    order = np.empty(pm.nv, int)
    for jid, i in zip(range(1, pm.njoints), idx):
        order[pm.joints[jid].idx_v] = i
    return M[np.ix_(order, order)]


def pin_velocity_columns(model: RobotModel, pm, Jp: np.ndarray) -> np.ndarray:
    """Pinocchio's Jacobian ``(6, nv)`` with its columns in our velocity order."""
    out = np.zeros((6, model.n_v))
    for jid in range(1, pm.njoints):
        out[:, model.joint_v_index[model.joint_index(pm.names[jid])]] = Jp[:, pm.joints[jid].idx_v]
    return out


def batched_fk_rows(label, path, batch, rounds, rng) -> list[Row]:
    pin, pm, pd = pin_models(path)
    model = RobotModel.from_urdf_file(path)
    q = model.random_configuration(batch, rng)
    pq = [pin_configuration(model, pm, x) for x in q]
    rk.prepare(model)
    wait_for_kernels()
    out = np.empty((batch, model.n_links, 4, 4))

    def pin_loop():
        for x in pq:
            pin.framesForwardKinematics(pm, pd, x)
    rows = []
    row = Row("FK every link, batch", label, "µs/config").time(
        lambda: rk.forward_kinematics(model, q, out=out), pin_loop, batch, rounds)
    frames = link_frames(model, pin, pm)
    pin.framesForwardKinematics(pm, pd, pq[-1])
    row.error = max(np.abs(out[-1, i] - pd.oMf[f].homogeneous).max() for i, f in frames)
    rows.append(row)
    with rk.kernels.use(accelerated=False):
        row = Row("FK every link, batch, numpy (no numba)", label, "µs/config").time(
            lambda: rk.forward_kinematics(model, q, out=out), pin_loop, batch, rounds)
        row.error = max(np.abs(out[-1, i] - pd.oMf[f].homogeneous).max() for i, f in frames)
        rows.append(row)
    return rows


def collision_rows(n, rounds, rng) -> list[Row]:
    from bench_collision import pin_checker, robots

    label, model, text, srdf, *_ = robots()[0]   # the bundled Panda and its SRDF
    cm = rk.collision_model(model, srdf)
    q = model.random_configuration(n, rng)
    pin, peer = pin_checker(text, model, cm)
    pq = [pin_configuration(model, peer.model, x) for x in q]
    gdata = pin.GeometryData(peer.geom)
    rk.prepare(model)
    in_collision(cm, q[:300])
    wait_for_kernels()
    rows = []
    for stop, what in ((False, "self-collision, every pair"), (True, "self-collision, stop at first")):
        def ours():
            if stop:
                for x in q:
                    in_collision(cm, x)
            else:
                for x in q:
                    rk.self_collisions(cm, x)

        def theirs(stop=stop):
            for x in pq:
                pin.computeCollisions(peer.model, peer.data, peer.geom, gdata, x, stop)
        row = Row(what, f"{label} ({len(cm.pairs)} pairs)").time(ours, theirs, n, rounds)
        mine = np.array([bool(np.asarray(in_collision(cm, x))) for x in q])
        verdicts = np.array([pin.computeCollisions(peer.model, peer.data, peer.geom, gdata, x, False) for x in pq])
        row.error = float((mine != verdicts).sum())
        row.note = f"verdicts differ on {int(row.error)} of {n} ({100 * verdicts.mean():.0f} % in collision)"
        rows.append(row)
    return rows


def ik_rows(n, rounds, rng) -> list[Row]:
    from bench_ik import bench_ours, bench_rtb, chain_joints, problems, urdf_path

    rows = []
    for label, key, tip in ARMS:
        path = urdf_path(key)
        model = RobotModel.from_urdf_file(path)
        joints = chain_joints(model, None, tip)
        seed, _, T = problems(model, tip, joints, n, rng)
        rk.prepare(model, [(tip,)])
        rk.solve_ik(model, T[:300], tip, seed, active_joints=joints)   # loads what a batch loads
        wait_for_kernels()
        row = Row("IK (TRAC-IK protocol) mean", label, "ms")
        rates, wrong, peer_rate = [], 0, np.nan
        for _ in range(rounds):
            mine = bench_ours(model, tip, joints, seed, T)
            theirs = bench_rtb(path, tip, joints, model, T)
            if theirs is None:
                return rows
            row.ours.append(1e3 * mine["mean"])
            row.peer.append(1e3 * theirs["mean"])
            rates.append(mine["rate"])
            wrong += mine["wrong"]
            peer_rate = theirs["rate"]
        row.error = float(wrong)
        row.note = f"solved {100 * min(rates):.1f} % (rtb {100 * peer_rate:.1f} %), {wrong} wrong"
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer configurations and rounds")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--no-ik", action="store_true", help="skip the IK rows (rtb takes a while)")
    args = parser.parse_args()
    n, batch, rounds, n_ik = (200, 1000, 3, 100) if args.quick else (1000, 10000, 7, 500)
    rounds = args.rounds or rounds
    base = example_robot_data_dir()
    if base is None:
        sys.exit("example-robot-data is not installed (pip install example-robot-data)")
    try:
        import pinocchio  # noqa: F401
    except ImportError:
        sys.exit("Pinocchio is not installed (pip install pin)")
    rng = np.random.default_rng(0)
    print(f"bench/bench_single.py, {datetime.date.today()}: {n} configurations per single-call row, "
          f"{rounds} interleaved rounds; ratio = peer / robokin (> 1: robokin faster), range over the rounds; "
          "'error': largest difference from the peer's result (collision, IK: count)\n")
    print("| call | robot | robokin | peer | peer / robokin | error | note |")
    print("|---|---|---|---|---|---|---|")
    for label, key, tip in ARMS + [TALOS]:
        for row in kinematics_rows(label, os.path.join(base, ERD_ROBOTS[key]), tip, n, rounds, rng):
            print(row.line(), flush=True)
    for row in collision_rows(n, rounds, rng):
        print(row.line(), flush=True)
    if not args.no_ik:
        for row in ik_rows(n_ik, max(2, rounds // 3), rng):
            print(row.line(), flush=True)
    for row in batched_fk_rows(*TALOS[:1], os.path.join(base, ERD_ROBOTS["talos"]), batch, rounds, rng):
        print(row.line(), flush=True)
    for label, key, _ in ARMS:
        for row in batched_fk_rows(label, os.path.join(base, ERD_ROBOTS[key]), batch, rounds, rng)[1:]:
            print(row.line(), flush=True)


if __name__ == "__main__":
    main()
