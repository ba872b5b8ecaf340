"""Small ones of issue 41 item 7: a wrong ``--pose`` count is a usage error (exit 2, as
docs/cli.md says of usage errors; it exited 1), and ``robokin show``'s picture is one a person
would put in a report: big, the robot filling each flat view, no tick labels overlapping (the
front and top views were 3D axes looking along one axis, whose tick labels collapsed onto one spot)."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from robokin_ros import RobotModel, forward_kinematics
from robokin_ros.cli import main

pytest.importorskip("matplotlib")
ROOT = Path(__file__).resolve().parents[3]
ROBOTS = ROOT / "robokin_ros" / "robots"


@pytest.mark.parametrize("values", [["1", "2"], ["1", "2", "3", "4"], ["1", "2", "3", "0", "0", "0", "1", "9"]],
                         ids=["2", "4", "8"])
def test_a_wrong_pose_count_is_a_usage_error(capsys, values):
    with pytest.raises(SystemExit) as info:
        main(["ik", str(ROBOTS / "ur5e.urdf"), "--pose", *values])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"argument --pose: takes X Y Z [QX QY QZ QW] (3 or 7 values), got {len(values)}" in err


@pytest.mark.slow   # a process
def test_the_executable_exits_2_on_a_wrong_pose_count():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "robokin_ros", "ik", str(ROBOTS / "ur5e.urdf"), "--pose", "1", "2"],
                          capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr


def overlapping_tick_labels(fig) -> list[tuple[str, str]]:
    """Pairs of visible tick labels of one axis of the flat (2D) axes of ``fig`` whose boxes
    overlap, once drawn (matplotlib's boxes of 3D tick labels are not where they are drawn)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    pairs = []
    for ax in fig.axes:
        if hasattr(ax, "zaxis"):
            continue
        for axis in (ax.xaxis, ax.yaxis):
            labels = [(t.get_text(), t.get_window_extent(renderer)) for t in axis.get_ticklabels()
                      if t.get_visible() and t.get_text()]
            pairs += [(a, b) for (a, box_a), (b, box_b) in itertools.combinations(labels, 2) if box_a.overlaps(box_b)]
    return pairs


@pytest.mark.parametrize("robot, q", [("panda", {}), ("twin_arm_torso", {"left_shoulder_lift_joint": -0.8,
                                                                          "left_elbow_flex_joint": 1.2,
                                                                          "right_shoulder_pan_joint": 0.6})])
def test_the_show_picture_is_big_filled_and_its_labels_apart(robot, q):
    import matplotlib.pyplot as plt

    from robokin_ros.cli.draw import DPI, PLANES, robot_figure

    model = RobotModel.from_urdf_file(str(ROBOTS / f"{robot}.urdf"))
    configuration = model.q_from_dict(q) if q else model.home_configuration()
    fig, drawn = robot_figure(model, configuration)
    try:
        width, height = fig.get_size_inches() * DPI
        assert width >= 1600 and height >= 500   # (was 960 x 352 px)
        assert overlapping_tick_labels(fig) == []
        origins = forward_kinematics(model, configuration)[:, :3, 3]
        flat = [ax for ax in fig.axes if not hasattr(ax, "zaxis")]
        assert len(flat) == len(PLANES)
        for ax in fig.axes:   # no 3D view looks along an axis (its tick labels would collapse onto one spot)
            if hasattr(ax, "zaxis"):
                assert 0 < ax.elev < 90 and ax.azim % 90 != 0, (ax.elev, ax.azim)
        for ax, (_, a, b) in zip(flat, PLANES):
            (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
            drawn_box = ax.dataLim   # what is drawn (geometry, skeleton, frames) fills the limiting side
            filled = max(drawn_box.width / (x1 - x0), drawn_box.height / (y1 - y0))
            assert filled >= 0.9, (ax.get_title(), filled)
            assert x0 <= origins[:, a].min() and origins[:, a].max() <= x1
            assert y0 <= origins[:, b].min() and origins[:, b].max() <= y1
    finally:
        plt.close(fig)
