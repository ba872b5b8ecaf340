"""robokin_ros.web.reach_layer: a reachability map drawn in the web view, checked on viser's
server-side state against the map (issue 23: "once it exists, a layer in the web view")."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from webview_paths import ROOT

from robokin_ros import RobotModel, UnknownLinkError
from robokin_ros.reach import reachability_map
from robokin_ros.web.panel import RobotView
from robokin_ros.web.reach_layer import ReachLayer, index_colours

PLANAR_TEXT = (ROOT / "test" / "fixtures" / "planar_2link.urdf").read_text()
PLANAR = RobotModel.from_urdf(PLANAR_TEXT)


@pytest.fixture(scope="module")
def planar_map():
    # the tool's z along the base z, free about it: reached at z = 0 for 0.5 <= r <= 1.5
    return reachability_map(PLANAR_TEXT, "tool", workers=1, resolution=0.25, orientations=2, cone=(0, 0, 1, 0.0))


@pytest.fixture
def view(server):
    view = RobotView(server, PLANAR, collisions=False)
    yield view
    view.remove()


@pytest.mark.slow   # computes a reach map
def test_the_layer_draws_the_reached_voxels_in_the_base_frame(view, planar_map):
    layer = ReachLayer(view, planar_map, PLANAR_TEXT, shown=True, cut=False)
    reached = planar_map.reachability > 0
    assert 0 < reached.sum() < len(reached)
    np.testing.assert_allclose(layer.cloud.points, planar_map.centres[reached], atol=1e-6)
    np.testing.assert_array_equal(layer.cloud.colors, index_colours(planar_map.reachability[reached]))
    # hung from the base link's node: the points move with the base
    assert layer.cloud.name.startswith(view.scene.frames[PLANAR.link_index("base_link")].name + "/")
    assert layer.cloud.visible and not layer.made_for_another_robot


def test_the_minimum_index_and_the_checkbox_filter_the_points(view, planar_map):
    layer = ReachLayer(view, planar_map, shown=True, cut=False)
    assert layer.show(1.0) == int((planar_map.reachability >= 1.0).sum())
    layer.visible.value = False
    assert not layer.cloud.visible
    layer.visible.value = True
    assert layer.cloud.visible
    with pytest.raises(ValueError, match="minimum"):
        layer.show(1.5)


def test_a_map_of_another_robot_is_flagged_and_one_of_another_tip_refused(view, planar_map):
    layer = ReachLayer(view, planar_map, PLANAR_TEXT + "\n<!-- edited -->")
    assert layer.made_for_another_robot
    of_a_ur5e = dataclasses.replace(planar_map, parameters=dataclasses.replace(planar_map.parameters, tip="tool0"))
    with pytest.raises(UnknownLinkError, match="tool0"):
        ReachLayer(view, of_a_ur5e)


def test_index_colours_run_from_red_through_yellow_to_green():
    colours = index_colours(np.array([0.0, 0.5, 1.0, 0.25]))
    np.testing.assert_array_equal(colours[:3], [(215, 48, 39), (254, 224, 80), (26, 152, 80)])
    assert colours[3, 0] > colours[3, 1] > colours[3, 2]   # between red and yellow


def test_robokin_view_shows_a_saved_map(planar_map, tmp_path):
    pytest.importorskip("viser")
    from robokin_ros.cli.view import start_view

    path = tmp_path / "planar.npz"
    planar_map.save(str(path))
    served, view = start_view(str(ROOT / "test" / "fixtures" / "planar_2link.urdf"), port=0, collisions=False,
                              reach=str(path))
    try:
        assert view.reach_layer is not None and not view.reach_layer.made_for_another_robot
        # off until ticked (the robot first), then the half y <= 0 as in `robokin reach --picture`
        assert not view.reach_layer.cloud.visible
        view.reach_layer.visible.value = True
        half = (planar_map.reachability > 0) & (planar_map.centres[:, 1] <= 1e-9)
        assert view.reach_layer.cloud.visible
        assert len(view.reach_layer.cloud.points) == int(half.sum()) < int((planar_map.reachability > 0).sum())
        view.reach_layer.cut.value = False
        assert len(view.reach_layer.cloud.points) == int((planar_map.reachability > 0).sum())
    finally:
        view.remove()
        served.server.stop()


def test_the_points_are_small_and_the_camera_frames_the_robot_not_the_map(view, planar_map):
    before = view.refit_camera()
    layer = ReachLayer(view, planar_map, shown=True, cut=False)
    assert layer.cloud.point_size == pytest.approx(0.35 * planar_map.resolution)
    after = view.refit_camera()
    np.testing.assert_allclose(after.look_at, before.look_at)
    assert after.distance == pytest.approx(before.distance)
    # the map reaches 1.5 m around the base; the planar robot itself is what the camera frames
    assert np.max(np.abs(planar_map.centres[planar_map.reachability > 0]), axis=0)[0] > after.radius
