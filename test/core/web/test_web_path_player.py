"""robokin_ros.web.path_player: the view's "Cartesian path" folder plans a straight move with
rk.cartesian_path, draws it and plays it back (checked against forward kinematics)."""

from __future__ import annotations

import numpy as np
import pytest
from webview_paths import ROBOTS

from robokin_ros import RobotModel, frame_transform
from robokin_ros.model.description import read_description
from robokin_ros.model.srdf import parse_srdf
from robokin_ros.web.panel import RobotView
from robokin_ros.web.path_player import COMPLETE_COLOUR, FRAME_PERIOD, PARTIAL_COLOUR

PANDA = RobotModel.from_urdf_file(ROBOTS / "panda.urdf")
SEMANTICS = parse_srdf(read_description(ROBOTS / "panda.srdf"), PANDA)


@pytest.fixture
def view(server):
    view = RobotView(server, PANDA, semantics=SEMANTICS, collisions=False)
    view.go_to_state("panda_arm: ready")
    yield view
    view.remove()


def tip_position(view, q):
    return frame_transform(PANDA, q, PANDA.root_link, view.tip)[:3, 3]


def test_a_planned_move_is_drawn_on_the_line_and_played_back_to_its_end(view):
    player = view.path
    start = tip_position(view, view.scene.q)
    result = player.plan(offset=(0.0, 0.0, -0.1), max_step=0.005)
    assert result is not None and result.complete and result.fraction == 1.0
    assert np.allclose(tip_position(view, result.q[-1]), start + [0.0, 0.0, -0.1], atol=1e-4)
    segments = player.line.points
    assert segments.shape == (len(result.q) - 1, 2, 3)
    assert np.allclose(segments[0, 0], start, atol=1e-4) and np.allclose(segments[-1, 1], result.poses[-1, :3, 3])
    assert tuple(np.asarray(player.line.colors).reshape(-1, 3)[0]) == COMPLETE_COLOUR
    assert "fraction **1.000**" in player.status.content
    frames = player.frames()
    times = [t for t, _ in frames]
    assert np.all(np.diff(times) >= FRAME_PERIOD - 1e-12) and np.array_equal(frames[-1][1], result.q[-1])
    assert np.array_equal(view.scene.q, result.q[0])   # planning does not move the robot
    assert player.play()
    player._thread.join(60.0)   # noqa: SLF001 - the playback's end
    assert np.allclose(view.scene.q, result.q[-1])


def test_a_move_out_of_reach_is_drawn_partial_with_its_reason(view):
    result = view.path.plan(offset=(2.0, 0.0, 0.0), max_step=0.01)
    assert result is not None and not result.complete and 0.0 <= result.fraction < 1.0
    assert "stopped:" in view.path.status.content and result.message in view.path.status.content
    if view.path.line is not None:
        assert tuple(np.asarray(view.path.line.colors).reshape(-1, 3)[0]) == PARTIAL_COLOUR


def test_a_refused_request_says_why_and_draws_nothing(view):
    assert view.path.plan(offset=(0.0, 0.0, -0.1), max_step=0.0) is None
    assert view.path.status.content.startswith("Refused:") and "max_step" in view.path.status.content
    assert view.path.line is None and view.path.frames() == [] and not view.path.play()


def test_removing_the_view_removes_the_player(server):
    view = RobotView(server, PANDA, semantics=SEMANTICS, collisions=False)
    player = view.path
    player.plan(offset=(0.0, 0.0, -0.05), max_step=0.01)
    view.remove()
    assert player.plan() is None and not player.show(view.scene.q)


def test_a_view_that_shows_only_gets_no_player(server):
    view = RobotView(server, PANDA, semantics=SEMANTICS, collisions=False, interactive=False)
    assert view.path is None
    view.remove()
