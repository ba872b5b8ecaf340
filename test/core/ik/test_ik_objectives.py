"""Null-space objectives of ``solve_ik``: never a lost target, the objective never worse than the
primary solution's, the tip pose kept (checked by FK), and bad names refused."""

from __future__ import annotations

import os

import numpy as np
import pytest

from robokin_ros import RobotModel, frame_transform, jacobian
from robokin_ros.errors import IKOptionError
from robokin_ros.ik import solve_ik

ROBOTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "robokin_ros", "robots")
PANDA = RobotModel.from_urdf_file(os.path.join(ROBOTS, "panda.urdf"))
ARM = [f"panda_joint{i}" for i in range(1, 8)]
INDEX = [PANDA.q_names.index(j) for j in ARM]


def _cases(n=8):
    rng = np.random.default_rng(21)
    goals = PANDA.random_configuration(n, rng)
    seeds = PANDA.random_configuration(n, rng)
    return [(frame_transform(PANDA, g, PANDA.root_link, "panda_hand"), s) for g, s in zip(goals, seeds)]


def _closest(q, seed):
    return float(np.linalg.norm(q[INDEX] - seed[INDEX]))


def _center(q):
    lo, hi = PANDA.q_lower[INDEX], PANDA.q_upper[INDEX]
    return float(np.sum(((q[INDEX] - 0.5 * (lo + hi)) / (hi - lo)) ** 2))


def _sigma_min(q):
    return float(np.linalg.svd(jacobian(PANDA, q, "panda_hand")[:, INDEX], compute_uv=False)[-1])


@pytest.mark.parametrize("objective", ["closest", "center", "manipulability"])
def test_objective_keeps_every_solution_and_never_does_worse(objective):
    improved = 0
    for T, seed in _cases():
        plain = solve_ik(PANDA, T, "panda_hand", seed, rng=3, max_iterations=2000)
        tuned = solve_ik(PANDA, T, "panda_hand", seed, rng=3, max_iterations=2000, objective=objective)
        assert bool(tuned.success) == bool(plain.success)
        if not bool(plain.success):
            continue
        reached = frame_transform(PANDA, tuned.q, PANDA.root_link, "panda_hand")
        assert np.abs(reached[:3, 3] - T[:3, 3]).max() < 1e-4
        assert np.abs(reached[:3, :3] - T[:3, :3]).max() < 1e-4
        assert PANDA.within_limits(tuned.q)
        before, after = {"closest": (_closest(plain.q, seed), _closest(tuned.q, seed)),
                         "center": (_center(plain.q), _center(tuned.q)),
                         "manipulability": (-_sigma_min(plain.q), -_sigma_min(tuned.q))}[objective]
        assert after <= before + 1e-9
        improved += after < before - 1e-6
    assert improved >= 1   # the objective does something on a redundant arm


def test_objective_on_a_batch_matches_single_calls_in_success():
    cases = _cases(4)
    T = np.stack([t for t, _ in cases])
    seeds = np.stack([s for _, s in cases])
    batch = solve_ik(PANDA, T, "panda_hand", seeds, rng=3, objective="center", max_iterations=2000)
    assert batch.q.shape == (4, PANDA.n_q)
    for k, (t, _) in enumerate(cases):
        if batch.success[k]:
            reached = frame_transform(PANDA, batch.q[k], PANDA.root_link, "panda_hand")
            assert np.abs(reached[:3, 3] - t[:3, 3]).max() < 1e-4


def test_unknown_objective_is_refused_by_name():
    T = frame_transform(PANDA, PANDA.home_configuration(), PANDA.root_link, "panda_hand")
    with pytest.raises(IKOptionError, match="objective must be one of .*'closest'.* got 'nearest'"):
        solve_ik(PANDA, T, "panda_hand", objective="nearest")
