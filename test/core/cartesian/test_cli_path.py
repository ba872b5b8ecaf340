"""``robokin path``: the fraction printed, the picture written, bad --to refused (exit 2 / 1)."""

from __future__ import annotations

import pytest

from robokin_ros import RobotModel, forward_kinematics, robots
from robokin_ros.cli import main

UR5E = str(robots.path("ur5e.urdf"))
START = ["shoulder_lift_joint=-1.5", "elbow_joint=1.5", "wrist_1_joint=-1.5", "wrist_2_joint=-1.5"]


def start_position():
    model = RobotModel.from_urdf_file(UR5E)
    q = model.q_from_dict({k: float(v) for k, v in (s.split("=") for s in START)})
    return forward_kinematics(model, q, frames=["tool0"])[0, :3, 3]


def test_path_prints_the_fraction_and_draws(tmp_path, capsys):
    p = start_position() + [0.0, 0.0, 0.1]
    out = tmp_path / "path.png"
    assert main(["path", UR5E, "--from-q", *START, "--to", *map(str, p), "--step", "0.01", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("fraction 1 (complete)")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_path_out_of_reach_prints_where_it_stopped(capsys):
    p = start_position() * 3.0
    assert main(["path", UR5E, "--from-q", *START, "--to", *map(str, p)]) == 0
    printed = capsys.readouterr().out
    fraction = float(printed.split()[1])
    assert 0.0 <= fraction < 1.0 and "stopped on the way to waypoint 0" in printed


@pytest.mark.parametrize("to", [["0.1", "0.2"], ["0.1", "0.2", "0.3", "0", "0", "0", "0"]])
def test_bad_waypoints_are_one_line_errors(to, capsys):
    assert main(["path", UR5E, "--to", *to]) == 1
    err = capsys.readouterr().err
    assert "--to" in err and len(err.strip().splitlines()) == 1


def test_a_step_outside_its_bounds_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["path", UR5E, "--to", "0.1", "0.2", "0.3", "--step", "0"])
    assert stop.value.code == 2
