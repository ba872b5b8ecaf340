"""FK-made targets on the bundled arms within the default iteration budget (issue 41): every
well-conditioned reachable target is solved with the default options, in few iterations. Counted
in iterations, never in time. The known tail: targets next to a singular configuration (the
Jacobian's smallest singular value below ~0.005) can need more than the default 500 iterations
(measured on the Panda: 7.5 in 100,000, up to 1,848; docs/api.md)."""

from __future__ import annotations

import numpy as np
import pytest

import robokin_ros as rk
from robokin_ros import robots

ARMS = {"panda.urdf": "panda_hand_tcp", "ur5e.urdf": "tool0", "so101_arm.urdf": "tool",
        "open_manipulator_x.urdf": "tool"}


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
