"""IK groups derived from the kinematic tree when there is no SRDF: one per leaf, the default group."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from robokin_ros import RobotModel, frame_transform, solve_ik
from robokin_ros.model.groups import ALL_GROUP, IKGroup, default_group_name, default_groups

ROOT = Path(__file__).resolve().parents[3]
ROBOTS = ROOT / "robokin_ros" / "robots"
CORPUS = ROOT.parent / "shared" / "urdf-corpus"

PANDA = RobotModel.from_urdf_file(ROBOTS / "panda.urdf")
TWIN = RobotModel.from_urdf_file(ROBOTS / "twin_arm_torso.urdf")


def test_derived_groups_of_the_panda():
    groups = default_groups(PANDA)
    assert list(groups) == ["panda_hand_tcp", "panda_leftfinger", ALL_GROUP]
    assert default_group_name(groups) == "panda_hand_tcp"   # the arm's tool, not a finger
    assert groups[ALL_GROUP] == IKGroup(ALL_GROUP)


def test_derived_groups_of_a_branched_robot_have_one_chain_per_leaf():
    groups = default_groups(TWIN)
    assert {"left_tool0", "right_tool0", ALL_GROUP} <= set(groups)
    assert default_group_name(groups) in ("left_tool0", "right_tool0")
    # leaves whose chain has no movable joint of its own make no group of the same joints twice
    tips = [g.tip for g in groups.values() if g.tip]
    assert len(tips) == len(set(tips))


def corpus_models():
    if not CORPUS.is_dir():
        pytest.skip(f"{CORPUS} is absent (../shared is not beside this checkout)")
    return [(p.stem, RobotModel.from_urdf_file(p)) for p in sorted(CORPUS.glob("*.urdf"))]


def test_every_corpus_robot_solves_ik_in_its_default_group():
    """Out of the box: no SRDF, no parameters; a reachable target of the default group's tip is solved."""
    failures = []
    for name, model in corpus_models():
        groups = default_groups(model)
        group = groups[default_group_name(groups)]
        rng = np.random.default_rng(7)
        q_true = model.random_configuration(rng=rng)
        target = frame_transform(model, q_true, model.root_link, group.tip)
        seed = model.clamp(q_true + 0.1 * rng.standard_normal(model.n_q))
        result = solve_ik(model, target, group.tip, seed=seed, timeout=1.0, max_iterations=100_000)
        if not bool(result.success):
            failures.append(f"{name} ({group.tip}): {result.status}")
    assert not failures, failures
