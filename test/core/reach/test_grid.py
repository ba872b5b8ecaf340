"""The voxels of a map: the reach sphere (hand-derived on the planar arm, sampled on the bundled
robots) and the grid around it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import RobotModel, forward_kinematics
from robokin_ros.errors import ArgumentError, ModelError, UnknownLinkError
from robokin_ros.reach import MAX_VOXELS, reach_grid, reach_sphere

ROOT = Path(__file__).resolve().parents[3]
ROBOTS, FIXTURES = ROOT / "robokin_ros" / "robots", ROOT / "test" / "fixtures"


def test_planar_arm_reach_is_the_sum_of_its_links():
    model = RobotModel.from_urdf_file(FIXTURES / "planar_2link.urdf")
    centre, radius = reach_sphere(model, "tool")
    assert np.allclose(centre, 0) and radius == pytest.approx(1.5, abs=1e-9)   # L1 + L2, at q2 = 0


@pytest.mark.parametrize("robot, tip, base", [("ur5e", "tool0", None), ("panda", "panda_hand_tcp", None),
                                              ("panda", "panda_hand_tcp", "panda_link2"),
                                              ("twin_arm_torso", "left_gripper_link", "torso_link")])
def test_reach_sphere_holds_every_sampled_tip_position_and_is_tight(robot, tip, base):
    model = RobotModel.from_urdf_file(ROBOTS / f"{robot}.urdf")
    if tip not in model.link_names:
        pytest.skip(f"{robot} has no {tip}")
    centre, radius = reach_sphere(model, tip, base)
    T = forward_kinematics(model, model.random_configuration(50_000, rng=7))
    b = 0 if base is None else model.link_index(base)
    p = (np.linalg.inv(T[:, b]) @ T[:, model.link_index(tip)])[:, :3, 3]
    distance = np.linalg.norm(p - centre, axis=1)
    assert distance.max() <= radius
    assert distance.max() >= 0.95 * radius   # not a loose bound


def test_reach_grid_keeps_the_voxels_that_can_meet_the_sphere():
    centre, radius, resolution = np.array([0.02, -0.01, 0.3]), 0.5, 0.1
    grid = reach_grid(centre, radius, resolution)
    assert np.allclose(grid.origin / resolution, np.round(grid.origin / resolution))   # a centre at the base origin
    index = np.stack(np.meshgrid(*[np.arange(n) for n in grid.shape], indexing="ij"), -1).reshape(-1, 3)
    distance = np.linalg.norm(grid.origin + resolution * index - centre, axis=1)
    kept = {tuple(v) for v in grid.voxels}
    assert kept == {tuple(v) for v in index[distance <= radius + resolution * np.sqrt(3) / 2]}
    assert {tuple(v) for v in index[distance <= radius]} <= kept
    # The cube spans the sphere: every point within it lies in a grid voxel.
    assert (grid.origin - resolution / 2 <= centre - radius).all()
    assert (grid.origin + resolution * (np.array(grid.shape) - 0.5) >= centre + radius).all()


def test_reach_grid_refuses_too_many_voxels():
    with pytest.raises(ArgumentError, match=r"resolution: 0.001 m makes about .* voxels .* " + re.escape(f"(at most {MAX_VOXELS:g})")):
        reach_grid(np.zeros(3), 1.0, 0.001)


def test_reach_sphere_errors_name_the_culprit():
    model = RobotModel.from_urdf_file(ROBOTS / "panda.urdf")
    with pytest.raises(UnknownLinkError, match="panda_hand_tcpp"):
        reach_sphere(model, "panda_hand_tcpp")
    with pytest.raises(ArgumentError, match="'panda_link7' is not an ancestor of the tip 'panda_link3'"):
        reach_sphere(model, "panda_link3", "panda_link7")
    floating = RobotModel.from_urdf_file(FIXTURES / "floating.urdf")
    moving = [n for n in floating.link_names if n != floating.root_link]
    with pytest.raises(ModelError, match="floating joint .* the reach is unbounded"):
        reach_sphere(floating, moving[-1])
