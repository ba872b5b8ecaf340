"""robokin_ros.web.servo_jog: the view's twist sliders jog the robot through the servo (steps
taken by the test, checked against forward kinematics)."""

from __future__ import annotations

import numpy as np
import pytest
from webview_paths import ROBOTS

from robokin_ros import RobotModel, frame_transform
from robokin_ros.model.description import read_description
from robokin_ros.model.srdf import parse_srdf
from robokin_ros.web.panel import RobotView

PANDA = RobotModel.from_urdf_file(ROBOTS / "panda.urdf")
SEMANTICS = parse_srdf(read_description(ROBOTS / "panda.srdf"), PANDA)


@pytest.fixture
def view(server):
    view = RobotView(server, PANDA, semantics=SEMANTICS, collisions=False)
    yield view
    view.remove()


def test_a_linear_slider_moves_the_tip_along_its_axis_and_zero_brakes(view):
    jog = view.jog
    assert jog is not None and jog.servo.tip == view.tip
    view.go_to_state("panda_arm: ready")
    start = frame_transform(PANDA, view.scene.q, PANDA.link_names[0], view.tip)[:3, 3]
    jog.sliders[0].value = 0.5
    for _ in range(25):
        jog.tick()
    moved = frame_transform(PANDA, view.scene.q, PANDA.link_names[0], view.tip)[:3, 3] - start
    assert moved[0] > 0.01 and np.degrees(np.arccos(moved[0] / np.linalg.norm(moved))) < 3.0
    jog.zero()
    for _ in range(200):
        jog.tick()
    assert not jog.servo.velocity.any() and not jog.tick()


def test_removing_the_view_removes_the_jog(server):
    view = RobotView(server, PANDA, semantics=SEMANTICS, collisions=False)
    jog = view.jog
    view.remove()
    assert not jog.tick() and jog._stopping.is_set()   # noqa: SLF001


def test_a_view_that_shows_only_gets_no_jog(server):
    view = RobotView(server, PANDA, semantics=SEMANTICS, collisions=False, interactive=False)
    assert view.jog is None
    view.remove()
