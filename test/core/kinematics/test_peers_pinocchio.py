"""Agreement with Pinocchio on example-robot-data URDFs: world pose of every link and the
Jacobians of every link in the three references, to 1e-9."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import LOCAL, LOCAL_WORLD_ALIGNED, WORLD, RobotModel, forward_kinematics, jacobians

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from peers import ERD_ROBOTS, column_map, erd_urdf, pin_configuration, pin_model  # noqa: E402

pin = pytest.importorskip("pinocchio")

ATOL = 1e-9
N_CONFIGURATIONS = 3


@pytest.fixture(scope="module", params=sorted(ERD_ROBOTS))
def robot(request):
    path = erd_urdf(ERD_ROBOTS[request.param])
    model = RobotModel.from_urdf_file(path)
    pmodel, pdata = pin_model(path)
    frames = [pmodel.getFrameId(name, pin.BODY) for name in model.link_names]
    missing = [n for n, f in zip(model.link_names, frames) if f >= pmodel.nframes]
    assert not missing, f"links without a Pinocchio body frame: {missing}"
    return model, pmodel, pdata, frames


def test_robot_set_includes_a_humanoid_and_at_least_ten_robots():
    assert len(ERD_ROBOTS) >= 10 and "talos" in ERD_ROBOTS


def test_forward_kinematics_of_every_link(robot):
    model, pmodel, pdata, frames = robot
    q = model.random_configuration(N_CONFIGURATIONS, rng=np.random.default_rng(11))
    T = forward_kinematics(model, q)
    for qi, Ti in zip(q, T):
        pin.framesForwardKinematics(pmodel, pdata, pin_configuration(model, pmodel, qi))
        expected = np.array([pdata.oMf[f].homogeneous for f in frames])
        np.testing.assert_allclose(Ti, expected, rtol=0, atol=ATOL)


@pytest.mark.parametrize("ours, theirs", [(WORLD, "WORLD"), (LOCAL, "LOCAL"),
                                          (LOCAL_WORLD_ALIGNED, "LOCAL_WORLD_ALIGNED")], ids=lambda r: str(r))
def test_jacobians_of_every_link(robot, ours, theirs):
    model, pmodel, pdata, frames = robot
    P = column_map(model, pmodel)
    reference = getattr(pin.ReferenceFrame, theirs)
    q = model.random_configuration(N_CONFIGURATIONS, rng=np.random.default_rng(12))
    J = jacobians(model, q, ours)
    for qi, Ji in zip(q, J):
        pq = pin_configuration(model, pmodel, qi)
        pin.computeJointJacobians(pmodel, pdata, pq)
        pin.updateFramePlacements(pmodel, pdata)
        expected = np.array([pin.getFrameJacobian(pmodel, pdata, f, reference) @ P for f in frames])
        np.testing.assert_allclose(Ji, expected, rtol=0, atol=ATOL)
