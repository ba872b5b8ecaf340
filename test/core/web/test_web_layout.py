"""robokin_ros.web.layout and the view's framing (issue 30, item 4), without a browser: the camera
frames the robot's box (geometry included), the floor grid sits under it, sliders are grouped by
limb with a filter, link names on demand, and a removed view is never touched again."""

from __future__ import annotations

import math

import numpy as np
import pytest
from webview_paths import CORPUS, ROBOTS

from robokin_ros import RobotModel, forward_kinematics
from robokin_ros.web.layout import (
    FIT_MARGIN,
    OTHER_JOINTS,
    fit_camera,
    floor_grid,
    limb_folders,
    matches,
    robot_bounds,
    slider_joints,
)
from robokin_ros.web.panel import RobotView
from robokin_ros.web.scene import link_meshes

PANDA = RobotModel.from_urdf_file(ROBOTS / "panda.urdf")
TWIN = RobotModel.from_urdf_file(ROBOTS / "twin_arm_torso.urdf")


def test_fit_camera_puts_the_boxs_bounding_sphere_inside_the_field_of_view():
    lo, hi = np.array([-0.2, -0.3, 0.0]), np.array([0.4, 0.3, 1.2])
    fov = math.radians(60)
    fit = fit_camera(lo, hi, fov)
    np.testing.assert_allclose(fit.look_at, [0.1, 0.0, 0.6])
    radius = 0.5 * np.linalg.norm(hi - lo)
    assert fit.radius == pytest.approx(radius)
    assert np.linalg.norm(fit.position - fit.look_at) == pytest.approx(fit.distance)
    # the sphere's angular radius seen from the camera is within the half field of view, with the margin
    assert math.asin(radius / fit.distance) == pytest.approx(math.asin(math.sin(fov / 2) / FIT_MARGIN))
    # every corner of the box is in front of the camera, within the half field of view (a cone)
    axis = (fit.look_at - fit.position) / fit.distance
    corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
    rays = corners - fit.position
    angles = np.arccos(rays @ axis / np.linalg.norm(rays, axis=1))
    assert angles.max() < fov / 2


def test_robot_bounds_hold_link_origins_and_the_posed_geometry():
    q = PANDA.random_configuration(rng=2)
    poses = forward_kinematics(PANDA, q)
    pieces, _ = link_meshes(PANDA)          # the primitives (panda: collision/visual meshes aside)
    lo, hi = robot_bounds(poses, pieces)
    origins = poses[:, :3, 3]
    assert np.all(lo <= origins.min(axis=0) + 1e-12) and np.all(hi >= origins.max(axis=0) - 1e-12)
    for piece in pieces:     # every vertex of every piece, posed, is inside
        T = poses[piece.link] @ piece.T_link_mesh
        placed = piece.vertices @ T[:3, :3].T + T[:3, 3]
        assert np.all(placed >= lo - 1e-6) and np.all(placed <= hi + 1e-6)


def test_the_view_frames_the_robot_and_refits_on_demand(server):
    view = RobotView(server, PANDA, collisions=False)
    try:
        lo, hi = robot_bounds(forward_kinematics(PANDA, view.scene.q), view.scene.meshes)
        expected = fit_camera(lo, hi, float(server.initial_camera.fov))
        np.testing.assert_allclose(view.camera.look_at, expected.look_at)
        np.testing.assert_allclose(server.initial_camera.look_at, expected.look_at)
        np.testing.assert_allclose(server.initial_camera.position, expected.position)
        # the grid lies under the robot's lowest point
        grid = floor_grid(lo, hi)
        np.testing.assert_allclose(view.grid.position, grid.centre, atol=1e-12)
        assert grid.centre[2] == pytest.approx(lo[2]) and grid.size >= 2 * max(hi[0] - lo[0], hi[1] - lo[1])
        # joints moved: a refit frames the new pose
        q = view.scene.q.copy()
        q[PANDA.q_names.index("panda_joint2")] = 1.5
        view.set_configuration(q)
        refit = view.refit_camera()
        lo2, hi2 = robot_bounds(forward_kinematics(PANDA, q), view.scene.meshes)
        np.testing.assert_allclose(refit.look_at, 0.5 * (lo2 + hi2))
        assert not np.allclose(refit.look_at, expected.look_at)
    finally:
        view.remove()


def test_sliders_are_grouped_by_limb_and_filtered(server):
    folders = limb_folders(TWIN)
    assert sorted(j for joints in folders.values() for j in joints) == slider_joints(TWIN)
    assert len(folders) >= 3     # the torso, the left arm, the right arm (and fingers)
    arms = [label for label in folders if label != OTHER_JOINTS]
    assert any("left" in label for label in arms) and any("right" in label for label in arms)
    view = RobotView(server, TWIN, collisions=False)
    try:
        shown = view.filter_sliders("left")
        assert shown and all("left" in name for name in shown)
        assert all(view.sliders[name][0].visible == ("left" in name) for name in view.sliders)
        assert all(folder.visible == any("left" in n for n in names) for folder, names in view.slider_folders.values())
        assert sorted(view.filter_sliders("")) == sorted(view.sliders)
        assert all(slider.visible for slider, _ in view.sliders.values())
    finally:
        view.remove()


def test_filter_words_all_match_case_insensitively():
    assert matches("left_shoulder_pitch_joint", "LEFT pitch") and not matches("left_elbow_joint", "left pitch")
    assert matches("anything", "  ")


def test_a_humanoids_sliders_are_in_limb_folders():
    path = CORPUS / "g1_29dof_hand.urdf"
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    g1 = RobotModel.from_urdf_file(path)
    folders = limb_folders(g1)
    assert len(folders) >= 6 and max(len(joints) for joints in folders.values()) <= 10
    assert sum(len(joints) for joints in folders.values()) == len(slider_joints(g1))


def test_link_names_on_demand(server):
    view = RobotView(server, PANDA, collisions=False)
    try:
        assert view.labels == [] and not view.show_labels.value
        view.show_labels.value = True
        assert [label.text for label in view.labels] == list(PANDA.link_names)
        assert all(label.visible for label in view.labels)
        view.show_labels.value = False
        assert not any(label.visible for label in view.labels)
    finally:
        view.remove()


def test_a_removed_view_is_never_touched_again(server):
    view = RobotView(server, PANDA, collisions=False, interactive=False)
    view.meshes_loaded.wait()
    frames = [(frame, tuple(frame.position)) for frame in view.scene.frames]
    slider, _ = view.sliders["panda_joint1"]
    status = view.ik_status.content
    view.remove()
    q = PANDA.random_configuration(rng=7)
    view.set_configuration(q)                                 # a late joint state
    view.solve(view.tip, forward_kinematics(PANDA, q)[PANDA.link_index(view.tip)], q)   # a late IK answer
    view.filter_sliders("joint1")
    view.label_links(True)
    assert [tuple(frame.position) for frame, _ in frames] == [position for _, position in frames]
    assert slider.value == 0.0 and slider.visible and view.ik_status.content == status
    assert view.labels == [] and view.handles == []
