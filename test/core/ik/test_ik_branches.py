"""``solve_ik(..., solutions=k)``: distinct solutions, checked against the UR closed form (an
independent reference: Hawkins' analytic IK on the UR5e's published DH table)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from ur_closed_form import UR5E_DH, closed_form, fk

from robokin_ros import RobotModel, frame_transform
from robokin_ros.errors import IKOptionError
from robokin_ros.ik import solve_ik

UR5E = RobotModel.from_dh(UR5E_DH)   # continuous joints: branches are distinct modulo 2π
ROBOTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "robokin_ros", "robots")
PANDA = RobotModel.from_urdf_file(os.path.join(ROBOTS, "panda.urdf"))


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
