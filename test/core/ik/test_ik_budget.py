"""FK-made targets on the bundled arms within the default iteration budget (issue 41): every
reachable target is solved with the default options (10,000 of 10,000 per arm, the singular tail
included: targets next to a singular configuration need up to ~1,250 iterations of the default
2,000), and the well-conditioned ones in few iterations. Counted in iterations, never in time."""

from __future__ import annotations

import numpy as np
import pytest

import robokin_ros as rk
from robokin_ros import robots

ARMS = {"panda.urdf": "panda_hand_tcp", "ur5e.urdf": "tool0", "so101_arm.urdf": "tool",
        "open_manipulator_x.urdf": "tool", "twin_arm_torso.urdf": "right_tool0"}


@pytest.mark.parametrize("name", sorted(ARMS))
def test_every_fk_made_target_of_a_batch_is_solved_with_the_default_options(name):
    """docs/api.md's batch example on every bundled arm: 10,000 of 10,000 (with 500 iterations,
    1 or 2 Panda targets of 10,000 were missed, and this test failed on rng 0, 2, 4 and 5)."""
    model = rk.RobotModel.from_urdf_file(robots.path(name))
    tip = ARMS[name]
    for rng in (0, 2):
        q = model.random_configuration(10_000, rng=rng)
        T = rk.forward_kinematics(model, q)[:, model.link_index(tip)]
        result = rk.solve_ik(model, T, tip)
        assert result.success.all(), [result.describe((int(i),)) for i in np.flatnonzero(~result.success)]
        # the found configurations reach their targets (not only reported so)
        reached = rk.forward_kinematics(model, result.q)[:, model.link_index(tip)]
        assert np.abs(reached[:, :3, 3] - T[:, :3, 3]).max() <= 1e-5 * 1.001


@pytest.mark.parametrize("name", sorted(ARMS))
def test_well_conditioned_fk_made_targets_all_solve_within_the_default_budget(name):
    model = rk.RobotModel.from_urdf_file(robots.path(name))
    tip = ARMS[name]
    q = model.random_configuration(1000, rng=41)
    J = rk.jacobian(model, q, tip)
    J = J[..., np.abs(J).max(axis=(0, 1)) > 0]   # the joints that move the tip (not a gripper's)
    smallest = np.linalg.svd(J, compute_uv=False)[:, min(6, J.shape[-1]) - 1]
    well = q[smallest > 0.02]   # away from singular configurations (the known tail)
    assert len(well) > 500
    T = rk.forward_kinematics(model, well)[:, model.link_index(tip)]
    result = rk.solve_ik(model, T, tip)
    assert result.success.all(), [result.describe((int(i),)) for i in np.flatnonzero(~result.success)]
    # the common case stays cheap: measured medians 5-13, 99th percentiles 40-100
    assert np.median(result.iterations) <= 25 and np.percentile(result.iterations, 99) <= 200
