"""Benchmark of self-collision checking and collision-aware IK, against Pinocchio + coal.

Usage: ``python3 bench/bench_collision.py [--quick] [--configurations N] [--problems N] [--robots a,b]
[--no-checks] [--no-ik]``.

Robots (primitives only): the bundled Panda (cylinders and spheres, pairs from its SRDF) and
example-robot-data's Talos (talos_reduced.urdf with every collision mesh replaced by its
bounding box, :func:`robokin_ros.bounding_box_model`; talos.srdf's pairs suit the meshes, not
the boxes, which overlap at every configuration around the torso, hips and shoulders: its pairs
come from :func:`robokin_ros.disabled_pairs_by_sampling`, 5,000 samples, as the Setup Assistant
would make them for this model); and for reference Talos with its meshes and talos.srdf. The
IK part runs on the Panda and on Talos with its meshes (the boxes leave the arm few
collision-free configurations: 16 of 800 in a trial).

Every kernel is loaded before anything is timed (``robokin_ros.prepare(model)``,
``CollisionModel.prepare()``, and a wait for background loads), so no compilation competes
with the timing.

1. One configuration at a time (issue 25): K random configurations (1,000; 300 with --quick),
   one call each, ours and Pinocchio's timed interleaved (every round runs each timer once over
   the K configurations; best of R rounds). Every pair: ours ``self_collisions(cm, q)``
   (verdict and colliding pairs named), Pinocchio ``computeCollisions(..., False)``; stop at the
   first: ours ``cm.in_collision_one(q)`` and ``in_collision(cm, q)``, Pinocchio
   ``computeCollisions(..., True)`` (FK included in both; Pinocchio 4.1 + coal from Python on the
   same URDF text and link pairs, its GeometryData reused). Verdicts compared on every
   configuration of the benchmark: ours one at a time, ours batched, Pinocchio with the
   GeometryData reused and with a fresh one per configuration.
2. Checks/s of batches: N random configurations (10,000; 1,000 with --quick), one
   ``self_collisions(cm, q)`` / ``in_collision(cm, q)`` call on all of them, against the
   Pinocchio loops.
3. Collision-aware IK, TRAC-IK protocol: targets = FK of N configurations (2,000; 200 with
   --quick) uniform within the chain's limits (other joints at the home configuration) AND free
   of self-collision, seed: the chain at mid-limits (the other joints at home),
   tolerance 1e-5, 5 ms per problem. Single requests with ``avoid_collisions`` and without; an
   answer counts if FK confirms it (1e-4 m, 1e-3 rad, within limits) and, with
   ``avoid_collisions``, Pinocchio + coal finds it free of self-collision.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "test"))

from bench_ik import CHECK_POSITION, CHECK_ROTATION, TIMEOUT, TOLERANCE, verify  # noqa: E402
from peers import ERD_ROBOTS, PinCollisions, example_robot_data_dir, pin_configuration  # noqa: E402
from timing import best_of, interleaved, wait_for_kernels  # noqa: E402

from robokin_ros import (  # noqa: E402
    CollisionModel,
    RobotModel,
    bounding_box_model,
    frame_transform,
    prepare,
    self_collisions,
    solve_ik,
)
from robokin_ros.collision import in_collision  # noqa: E402

ROBOTS_DIR = os.path.join(HERE, "..", "robokin_ros", "robots")
TALOS_ARM = ["torso_1_joint", "torso_2_joint"] + [f"arm_left_{i}_joint" for i in range(1, 8)]


def robots():
    """(label, model, URDF text, SRDF text, IK tip, IK joints) of each benchmarked robot."""
    out = []
    with open(os.path.join(ROBOTS_DIR, "panda.urdf")) as f:
        text = f.read()
    with open(os.path.join(ROBOTS_DIR, "panda.srdf")) as f:
        srdf = f.read()
    panda = RobotModel.from_urdf(text)
    out.append(("panda", panda, text, srdf, "panda_hand_tcp", [j for j in panda.joint_names if "finger" not in j], ()))
    base = example_robot_data_dir()
    if base is None:
        print("talos skipped: example-robot-data is not installed")
        return out
    package_dirs = [os.path.dirname(os.path.dirname(base)), os.path.dirname(base)]
    talos = bounding_box_model(RobotModel.from_urdf_file(os.path.join(base, ERD_ROBOTS["talos"])), package_dirs)
    # talos.srdf's pairs suit its meshes, not their boxes (the boxes of the torso, hips and
    # shoulders overlap at every configuration): its pairs are sampled (Setup Assistant procedure)
    out.append(("talos (boxes)", talos, talos.to_urdf(), None, "gripper_left_base_link", TALOS_ARM, ()))
    meshes = RobotModel.from_urdf_file(os.path.join(base, ERD_ROBOTS["talos"]))
    with open(os.path.join(base, ERD_ROBOTS["talos"])) as f:
        text = f.read()
    with open(os.path.join(base, "talos_data", "srdf", "talos.srdf")) as f:
        srdf = f.read()
    out.append(("talos (meshes)", meshes, text, srdf, "gripper_left_base_link", TALOS_ARM, package_dirs))
    return out


def pin_checker(text: str, model: RobotModel, cm: CollisionModel, package_dirs=()):
    """Pinocchio model, data, geometry model restricted to our checked link pairs."""
    peer = PinCollisions(text, package_dirs)
    pin = peer.pin
    order = lambda a, b: (a, b) if model.link_index(a) < model.link_index(b) else (b, a)  # noqa: E731
    ours = set(cm.link_pairs)
    for k in reversed(range(len(peer.links))):
        if order(*peer.links[k]) not in ours:
            peer.geom.removeCollisionPair(peer.geom.collisionPairs[k])
    peer.links = [peer.links[k] for k in range(len(peer.links)) if order(*peer.links[k]) in ours]
    return pin, peer


def bench_single(label, model, text, cm, package_dirs, n, rounds, rng):
    """One configuration per call, ours and Pinocchio's interleaved; verdicts compared on all."""
    q = model.random_configuration(n, rng)
    pin, peer = pin_checker(text, model, cm, package_dirs)
    pq = np.array([pin_configuration(model, peer.model, qk) for qk in q])
    gdata = pin.GeometryData(peer.geom)
    rows = list(q)
    nothing = lambda: None  # noqa: E731

    def pin_loop(stop):
        return lambda: [pin.computeCollisions(peer.model, peer.data, peer.geom, gdata, x, stop) for x in pq]
    timers = {"ours all": (nothing, lambda: [self_collisions(cm, x) for x in rows], n),
              "pin all": (nothing, pin_loop(False), n),
              "ours 1st": (nothing, lambda: [cm.in_collision_one(x) for x in rows], n),
              "ours in_collision": (nothing, lambda: [in_collision(cm, x) for x in rows], n),
              "pin 1st": (nothing, pin_loop(True), n)}
    t = interleaved(timers, rounds)
    single = np.array([bool(self_collisions(cm, x).in_collision) for x in rows])
    first = np.array([cm.in_collision_one(x) for x in rows])
    batched = self_collisions(cm, q).in_collision
    reused = np.array(pin_loop(False)())
    fresh = np.array([pin.computeCollisions(peer.model, peer.data, peer.geom, pin.GeometryData(peer.geom), x, False)
                      for x in pq])
    print(f"{label:14s} {len(cm.pairs):6d} {len(peer.links):5d} | {1e6 * t['ours all']:7.2f} {1e6 * t['pin all']:7.2f} "
          f"{t['pin all'] / t['ours all']:6.2f} | {1e6 * t['ours 1st']:7.2f} {1e6 * t['ours in_collision']:7.2f} "
          f"{1e6 * t['pin 1st']:7.2f} {t['pin 1st'] / t['ours 1st']:6.2f} | {100 * single.mean():5.1f}% "
          f"{int((single == fresh).sum()):5d}/{n} {int((single == reused).sum()):5d}/{n} "
          f"{int((single == batched).sum()):5d}/{n} {int((first == single).sum()):5d}/{n}", flush=True)


def bench_checks(label, model, text, cm, package_dirs, n, rng):
    q = model.random_configuration(n, rng)
    pin, peer = pin_checker(text, model, cm, package_dirs)
    pq = np.array([pin_configuration(model, peer.model, qk) for qk in q])
    ours_all = best_of(lambda: self_collisions(cm, q), 3)
    ours_first = best_of(lambda: in_collision(cm, q), 3)
    verdict = self_collisions(cm, q).in_collision
    gdata = pin.GeometryData(peer.geom)

    def pin_loop(stop):
        out = np.zeros(n, bool)
        for i in range(n):
            out[i] = pin.computeCollisions(peer.model, peer.data, peer.geom, gdata, pq[i], stop)
        return out
    pin_all = best_of(lambda: pin_loop(False), 3)
    pin_first = best_of(lambda: pin_loop(True), 3)
    reused = pin_loop(False)
    fresh = np.array([pin.computeCollisions(peer.model, peer.data, peer.geom, pin.GeometryData(peer.geom), pq[i], False)
                      for i in range(n)])
    print(f"{label:14s} {cm.n_geometries:5d} {len(cm.pairs):6d} {len(peer.links):6d} | {n / ours_all:10.0f} "
          f"{n / ours_first:10.0f} | {n / pin_all:10.0f} {n / pin_first:10.0f} | {pin_all / ours_all:6.2f} "
          f"{pin_first / ours_first:6.2f} | {100 * verdict.mean():5.1f}% {int((verdict != fresh).sum()):5d} "
          f"{int((verdict != reused).sum()):6d}", flush=True)


def bench_ik(label, model, text, cm, tip, joints, package_dirs, n, rng):
    # targets from collision-free configurations: the chain's joints random, the others at the home
    # configuration (Talos standing; mid-limits would cross its legs); the seed: the chain at mid-limits
    home = model.home_configuration()
    cols = [model.q_names.index(j) for j in joints]
    seed = home.copy()
    seed[cols] = 0.5 * (model.q_lower[cols] + model.q_upper[cols])
    q = np.tile(home, (4 * n, 1))
    q[:, cols] = model.random_configuration(4 * n, rng)[:, cols]
    T = frame_transform(model, q, model.root_link, tip)
    free = ~self_collisions(cm, q).in_collision
    q, T = q[free][:n], T[free][:n]
    if len(T) < n:
        print(f"{label}: only {len(T)} collision-free configurations of {4 * n}")
    peer = PinCollisions(text, package_dirs)
    order = lambda a, b: (a, b) if model.link_index(a) < model.link_index(b) else (b, a)  # noqa: E731
    checked = set(cm.link_pairs) & {order(a, b) for a, b in peer.links}
    solve_ik(model, T[0], tip, seed, active_joints=joints, avoid_collisions=cm)
    rows = {}
    for avoid in (False, cm):
        times, answers, success = np.empty(len(T)), np.empty((len(T), model.n_q)), np.zeros(len(T), bool)
        for i in range(len(T)):
            t = time.perf_counter()
            r = solve_ik(model, T[i], tip, seed, active_joints=joints, position_tolerance=TOLERANCE,
                         rotation_tolerance=TOLERANCE, timeout=TIMEOUT, max_iterations=10**6, rng=i,
                         avoid_collisions=avoid)
            times[i] = time.perf_counter() - t
            answers[i], success[i] = r.q, r.success
        reached = verify(model, tip, answers, T) & success
        colliding = np.array([bool(peer.pairs(model, answers[i], checked)) if reached[i] else False
                              for i in range(len(T))])
        ok = reached & ~colliding
        t = time.perf_counter()
        b = solve_ik(model, T, tip, seed, active_joints=joints, position_tolerance=TOLERANCE,
                     rotation_tolerance=TOLERANCE, timeout=TIMEOUT, max_iterations=10**6, rng=0, avoid_collisions=avoid)
        batch_time = time.perf_counter() - t
        batch_ok = verify(model, tip, b.q, T) & b.success & ~self_collisions(cm, b.q).in_collision
        rows[avoid is not False] = (ok.mean(), times.mean(), np.median(times), colliding.sum(), batch_ok.mean(),
                                    len(T) / batch_time)
    for avoid, name in ((False, "plain"), (True, "avoid_collisions")):
        rate, mean, median, bad, batch_rate, throughput = rows[avoid]
        print(f"{label:14s} {len(joints):3d} {name:16s} | {100 * rate:6.2f}% {1e3 * mean:8.3f} {1e3 * median:7.3f} "
              f"{int(bad):9d} | {100 * batch_rate:6.2f}% {throughput:9.0f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 configurations, 200 IK problems")
    parser.add_argument("--configurations", type=int, default=None, help="batched checks (default 10,000)")
    parser.add_argument("--singles", type=int, default=None, help="one-at-a-time configurations (default 1,000)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds of the single calls (default 7)")
    parser.add_argument("--problems", type=int, default=None)
    parser.add_argument("--robots", default=None, help="comma-separated labels (default: all)")
    parser.add_argument("--no-checks", action="store_true", help="only the IK part")
    parser.add_argument("--no-ik", action="store_true", help="only the checks part")
    args = parser.parse_args()
    n_checks = args.configurations or (1000 if args.quick else 10000)
    n_single = args.singles or (300 if args.quick else 1000)
    rounds = args.rounds or (3 if args.quick else 7)
    n_ik = args.problems or (200 if args.quick else 2000)
    cases = [c for c in robots() if args.robots is None or c[0] in args.robots.split(",")]
    built = []
    for label, model, text, srdf, tip, joints, package_dirs in cases:
        cm = CollisionModel.build(model, srdf=srdf, package_paths=list(package_dirs) or None)
        # every kernel loaded before timing: FK (IK's frames load with their first batch), the
        # one-configuration collision check, and whatever a first call started in the background
        prepare(model)
        cm.prepare()
        built.append((label, model, text, cm, tip, joints, package_dirs))
    wait_for_kernels()
    if not args.no_checks:
        singles(built, n_single, rounds)
        checks(built, n_checks)
    if not args.no_ik:
        collision_aware_ik(built, n_ik)


def singles(built, n: int, rounds: int) -> None:
    print(f"Self-collision, one configuration per call: {n} random configurations, ours and Pinocchio "
          f"{__import__('pinocchio').__version__} + coal interleaved, best of {rounds} rounds [µs per configuration].")
    header = (f"{'robot':14s} {'pairs':>6s} {'pin':>5s} | {'ours all':>7s} {'pin all':>7s} {'x':>6s} | {'ours 1st':>7s} "
              f"{'in_coll':>7s} {'pin 1st':>7s} {'x':>6s} | {'coll':>6s} {'=fresh':>10s} {'=reused':>10s} {'=batched':>10s} "
              f"{'=1st':>10s}")
    print(header)
    print("-" * len(header))
    for label, model, text, cm, _, _, package_dirs in built:
        bench_single(label, model, text, cm, package_dirs, n, rounds, np.random.default_rng(7))
    print("all: every pair (ours self_collisions, verdict and pairs named; pin computeCollisions(..., False)); 1st: stop "
          "at the first collision (ours cm.in_collision_one, in_collision(cm, q) returns a (1,) array; pin "
          "computeCollisions(..., True)). x: pin / ours (> 1: ours faster). =fresh / =reused / =batched / =1st: "
          "configurations where our one-at-a-time verdict equals Pinocchio's (fresh / reused GeometryData), our "
          "batched call's, our stop-at-first call's.")
    print()


def checks(built, n_checks: int) -> None:
    print(f"Self-collision checks/s of batches, {n_checks} random configurations (best of 3); Pinocchio "
          f"{__import__('pinocchio').__version__} + coal from Python on the same URDF text and link pairs.")
    header = (f"{'robot':14s} {'geoms':>5s} {'pairs':>6s} {'pin':>6s} | {'ours all':>10s} {'ours 1st':>10s} | "
              f"{'pin all':>10s} {'pin 1st':>10s} | {'all x':>6s} {'1st x':>6s} | {'coll':>6s} "
              f"{'≠fresh':>5s} {'≠reused':>6s}")
    print(header)
    print("-" * len(header))
    for label, model, text, cm, _, _, package_dirs in built:
        bench_checks(label, model, text, cm, package_dirs, n_checks, np.random.default_rng(7))
    print("all: every pair's verdict (ours names the colliding pairs too); 1st: stop at the first collision. "
          "x: pin time / ours. pairs / pin: geometry pairs checked by ours / Pinocchio (it never pairs geometries "
          "on one joint). ≠fresh / ≠reused: configurations where the verdicts differ from Pinocchio with a fresh / "
          "reused GeometryData.")
    print()


def collision_aware_ik(built, n_ik: int) -> None:
    print(f"Collision-aware IK, TRAC-IK protocol: {n_ik} targets from collision-free configurations, seed at mid-limits, "
          f"tolerance {TOLERANCE:g}, {TIMEOUT * 1e3:g} ms; verified by FK (<{CHECK_POSITION:g} m, <{CHECK_ROTATION:g} rad) "
          "and Pinocchio + coal (no self-collision).")
    header = (f"{'robot':14s} {'dof':>3s} {'mode':16s} | {'solved':>7s} {'mean ms':>8s} {'median':>7s} {'colliding':>9s} | "
              f"{'batch':>7s} {'solves/s':>9s}")
    print(header)
    print("-" * len(header))
    for label, model, text, cm, tip, joints, package_dirs in built:
        if label != "talos (boxes)":  # its boxes leave the arm few collision-free configurations
            bench_ik(label, model, text, cm, tip, joints, package_dirs, n_ik, np.random.default_rng(12345))
    print("solved: FK-verified and free of self-collision (Pinocchio + coal); colliding: FK-verified answers in "
          "self-collision (not counted as solved). batch: one call with every target (verified by our checker).")


if __name__ == "__main__":
    main()
