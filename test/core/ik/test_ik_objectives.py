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


IIWA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "shared", "urdf-corpus",
                         "kuka_lbr_iiwa14.urdf")


def _arm(name):
    """``(model, tip, q indices of the arm)`` of a 7-DOF arm: the bundled Panda or the corpus's
    KUKA LBR iiwa 14 (skipped when the corpus is absent)."""
    if name == "panda":
        return PANDA, "panda_hand", INDEX
    if not os.path.exists(IIWA_FILE):
        pytest.skip(f"the URDF corpus is absent ({IIWA_FILE})")
    iiwa = RobotModel.from_urdf_file(IIWA_FILE)
    return iiwa, "tool0", list(range(7))


def _yoshikawa(model, q, tip, index):
    """Yoshikawa's manipulability ``√det(J Jᵀ)`` of the tip's 6 x 7 Jacobian (the reference)."""
    J = jacobian(model, q, tip)[:, index]
    return float(np.sqrt(max(np.linalg.det(J @ J.T), 0.0)))


@pytest.mark.slow
@pytest.mark.parametrize("arm", ["panda", "iiwa"])
def test_objectives_never_lose_to_a_plain_request_on_200_targets(arm):
    """Issue 32 item 5: an objective's answer was worse than a plain request's on 2-6 of 50
    targets (rng left at None: different restarts); now it is never worse, on 200 targets, by
    the reference measures (distance from the seed, the centre measure, Yoshikawa's)."""
    model, tip, index = _arm(arm)
    lo, hi = model.q_lower[index], model.q_upper[index]
    rng = np.random.default_rng(77)
    measures = {"closest": lambda q, seed: float(np.linalg.norm(q[index] - seed[index])),
                "center": lambda q, seed: float(np.sum(((q[index] - 0.5 * (lo + hi)) / (hi - lo)) ** 2)),
                "manipulability": lambda q, seed: -_yoshikawa(model, q, tip, index)}
    better = dict.fromkeys(measures, 0)
    for _ in range(200):
        T = frame_transform(model, model.random_configuration(rng=rng), model.root_link, tip)
        seed = model.random_configuration(rng=rng)
        plain = solve_ik(model, T, tip, seed)
        for objective, measure in measures.items():
            tuned = solve_ik(model, T, tip, seed, objective=objective)
            assert bool(tuned.success) == bool(plain.success)
            if bool(plain.success):
                before, after = measure(plain.q, seed), measure(tuned.q, seed)
                assert after <= before + 1e-12, (objective, before, after)
                better[objective] += after < before - 1e-6
    assert min(better.values()) >= 20, better   # the objectives do something
