"""``solve_ik(..., solutions=k)``: distinct solutions, checked against the UR closed form (an
independent reference: Hawkins' analytic IK on the UR5e's published DH table)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from ur_closed_form import UR5E_DH, closed_form, fk

from robokin_ros import RobotModel, frame_transform
from robokin_ros.errors import IKOptionError
from robokin_ros.ik import branches, solve_ik

UR5E = RobotModel.from_dh(UR5E_DH)   # continuous joints: branches are distinct modulo 2π
ROBOTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "robokin_ros", "robots")
PANDA = RobotModel.from_urdf_file(os.path.join(ROBOTS, "panda.urdf"))
# The bundled UR5e: revolute joints with limits ±2π (the elbow ±π), the same kinematics as the DH
# table (its header says so; test_bundled_ur5e_is_the_closed_forms_robot checks it).
UR5E_URDF = RobotModel.from_urdf_file(os.path.join(ROBOTS, "ur5e.urdf"))


def _wrapped(d):
    return np.remainder(d + np.pi, 2 * np.pi) - np.pi


def _generic_targets(n):
    rng = np.random.default_rng(31)
    out = []
    while len(out) < n:
        T = fk(rng.uniform(-np.pi, np.pi, 6))
        if len(closed_form(T)) == 8:
            out.append(T)
    return out


def test_dh_model_is_the_closed_forms_robot():
    q = np.random.default_rng(2).uniform(-np.pi, np.pi, 6)
    assert np.allclose(frame_transform(UR5E, q, UR5E.root_link, "tool"), fk(q), atol=1e-12)


def test_ur5e_all_eight_branches_match_the_closed_form():
    for T in _generic_targets(4):
        analytic = closed_form(T)
        for q in analytic:
            assert np.allclose(fk(q), T, atol=1e-9)
        found = solve_ik(UR5E, T, "tool", solutions=8, timeout=2.0, rng=0)
        assert found.q.shape == (8, 6) and found.success.all()
        matched = set()
        for q in found.q:
            d = [np.abs(_wrapped(q - a)).max() for a in analytic]
            assert min(d) < 1e-3, d
            matched.add(int(np.argmin(d)))
        assert len(matched) == 8   # every analytic branch found once


def test_solutions_are_sorted_by_distance_from_the_seed_and_apart():
    T = _generic_targets(1)[0]
    seed = np.zeros(6)
    found = solve_ik(UR5E, T, "tool", seed, solutions=8, timeout=2.0, rng=1)
    distance = [np.linalg.norm(_wrapped(q - seed)) for q in found.q]
    assert distance == sorted(distance)
    for i in range(len(found.q)):
        for j in range(i):
            assert np.linalg.norm(_wrapped(found.q[i] - found.q[j])) > 0.1


def test_redundant_arm_gives_distinct_solutions_within_the_distance():
    T = frame_transform(PANDA, PANDA.random_configuration(rng=4), PANDA.root_link, "panda_hand")
    found = solve_ik(PANDA, T, "panda_hand", solutions=5, solution_distance=0.5, timeout=1.0, rng=0)
    assert 2 <= len(found.q) <= 5 and found.success.all()
    for i in range(len(found.q)):
        reached = frame_transform(PANDA, found.q[i], PANDA.root_link, "panda_hand")
        assert np.abs(reached[:3, 3] - T[:3, 3]).max() < 1e-4
        for j in range(i):
            assert np.linalg.norm(found.q[i, :7] - found.q[j, :7]) > 0.5


def test_unreachable_target_gives_one_failed_entry():
    T = np.eye(4)
    T[0, 3] = 3.0
    found = solve_ik(UR5E, T, "tool", solutions=4, timeout=0.05, rng=0)
    assert found.q.shape == (1, 6) and not found.success.any()


@pytest.mark.parametrize("kwargs,message", [({"solutions": 0}, "solutions must be a whole number >= 1"),
                                            ({"solutions": 2, "solution_distance": 0.0}, "solution_distance must be > 0"),
                                            ({"solutions": 2.5}, "solutions must be a whole number")])
def test_bad_solutions_options_are_refused(kwargs, message):
    with pytest.raises(IKOptionError, match=message):
        solve_ik(UR5E, fk(np.zeros(6)), "tool", **kwargs)


def test_solutions_take_one_target():
    with pytest.raises(IKOptionError, match="solves one target"):
        solve_ik(UR5E, np.stack([fk(np.zeros(6))] * 2), "tool", solutions=2)


def test_bundled_ur5e_is_the_closed_forms_robot():
    for q in np.random.default_rng(3).uniform(-np.pi, np.pi, (5, 6)):
        assert np.allclose(frame_transform(UR5E_URDF, q, "base_link", "tool0"), fk(q), atol=1e-12)


def _branches(analytic, distance=0.1):
    """The closed form's solutions grouped into branches: solutions closer than ``distance``
    (modulo 2π, Euclidean) are one (two near a singularity, which ``solution_distance`` joins)."""
    groups = []
    for q in analytic:
        for g in groups:
            if any(np.linalg.norm(_wrapped(q - other)) <= distance for other in g):
                g.append(q)
                break
        else:
            groups.append([q])
    return groups


def test_bundled_ur5e_solutions_8_gives_every_real_branch_once():
    """Issue 32 item 4: on limits ±2π, solutions=8 returned 2π-shifted copies of one branch and
    missed others; now every real branch (Hawkins' closed form) on >= 29 of 30 random poses, no
    copies, each solution within the limits and reached (FK)."""
    rng = np.random.default_rng(5)
    complete = 0
    for _ in range(30):
        T = fk(rng.uniform(-np.pi, np.pi, 6))
        seed = rng.uniform(-np.pi, np.pi, 6)
        analytic = closed_form(T)
        found = solve_ik(UR5E_URDF, T, "tool0", seed, solutions=8)
        assert found.success.all() and UR5E_URDF.within_limits(found.q).all()
        reached = frame_transform(UR5E_URDF, found.q, "base_link", "tool0")
        assert np.abs(reached - T).max() < 1e-4
        groups = _branches(analytic)
        matched = []
        for q in found.q:   # the branch of each solution
            d = [min(np.abs(_wrapped(q - a)).max() for a in g) for g in groups]
            assert min(d) < 2e-2, d    # (near a singular wrist a converged solution is ~1e-3 off)
            matched.append(int(np.argmin(d)))
        assert len(matched) == len(set(matched)), matched   # no copies
        complete += len(set(matched)) == len(groups)
    assert complete >= 29


def test_solutions_are_reported_nearest_the_seed_within_the_limits():
    T = fk(np.array([0.3, -1.2, 1.1, -0.4, 1.3, 0.2]))
    for seed in (np.full(6, 5.0), np.full(6, -5.0), np.zeros(6)):
        seed[2] = 0.0
        found = solve_ik(UR5E_URDF, T, "tool0", seed, solutions=8)
        wide = [0, 1, 3, 4, 5]   # limits ±2π: each solution's value nearest the seed
        for q in found.q:
            for i in wide:
                candidates = [q[i] + 2 * np.pi * k for k in range(-2, 3) if abs(q[i] + 2 * np.pi * k) <= 2 * np.pi]
                assert abs(q[i] - seed[i]) <= min(abs(c - seed[i]) for c in candidates) + 1e-12


def _counting_solves(monkeypatch, limit):
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        assert len(calls) <= limit, "the search of solutions= goes on past its bound"
        return solve_poses(*args, **kwargs)

    solve_poses = branches.solve_poses
    monkeypatch.setattr(branches, "solve_poses", counted)
    return calls


def test_solutions_with_an_infinite_timeout_stop_at_a_far_target(monkeypatch):
    """Issue 33 item 11: solutions=2, timeout=inf on a target 5 m away ran forever; now the reach
    refuses it after the primary solve (one solve, counted, no clock)."""
    calls = _counting_solves(monkeypatch, 1 + branches.MAX_ROUNDS)
    T = np.eye(4)
    T[0, 3] = 5.0
    found = solve_ik(UR5E_URDF, T, "tool0", solutions=2, timeout=float("inf"), max_iterations=50)
    assert found.q.shape == (1, 6) and not found.success.any()
    assert len(calls) == 1


def test_solutions_with_an_infinite_timeout_are_bounded_by_rounds(monkeypatch):
    """A target within reach that no configuration solves (the wrist centre on the base axis:
    the closed form has no solution): the rounds stop as without a timeout."""
    calls = _counting_solves(monkeypatch, 1 + branches.MAX_ROUNDS)
    T = np.eye(4)
    T[2, 3] = 0.5
    assert closed_form(T) == []
    found = solve_ik(UR5E_URDF, T, "tool0", solutions=2, timeout=float("inf"), max_iterations=30)
    assert found.q.shape == (1, 6) and not found.success.any()
    assert len(calls) <= 1 + branches.MAX_ROUNDS
