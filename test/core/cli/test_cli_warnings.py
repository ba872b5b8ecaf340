"""One line per kind of problem (issue 41 item 4): ``robokin check`` printed 55 near-identical
nameless-``<material>`` warnings for the H1_2 humanoid (35 for Stretch), ``robokin view`` one
warning per missing mesh (37 for Stretch) with a ``package://`` hint wrong for relative paths, and
had no ``--mesh-dir`` / ``--package-path``. Now a kind is one line with its count and first input
lines, and the view's missing meshes one line with the hint of their kind of path. On the corpus
robots where ../shared/urdf-corpus is there (skipped with the reason where it is not)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from robokin_ros import RobotModel
from robokin_ros.cli import main
from robokin_ros.errors import LoadWarning
from robokin_ros.model.warning_groups import grouped_warnings

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT.parent / "shared" / "urdf-corpus"
H1_2, STRETCH = CORPUS / "h1_2.urdf", CORPUS / "stretch_se3.urdf"
corpus = pytest.mark.skipif(not H1_2.exists() or not STRETCH.exists(),
                            reason=f"the robot corpus is not there ({CORPUS})")


def test_warnings_of_one_kind_are_one_line_with_the_count_and_the_first_lines():
    nameless = [LoadWarning(10 * k, "<material>", f"of link 'l{k}' has no name; ignored") for k in range(1, 8)]
    swapped = LoadWarning(99, "<limit>", "lower 1.5 > upper -1.5: swapped")
    joint = LoadWarning(None, "<joint name='a'>", "unknown type 'x'")
    lines = grouped_warnings([nameless[0], swapped, *nameless[1:], joint])
    assert lines == [
        "line 10: <material>: of link 'l1' has no name; ignored [7 of this kind: lines 10, 20, 30, 40, 50 and 2 more]",
        "line 99: <limit>: lower 1.5 > upper -1.5: swapped",
        "<joint name='a'>: unknown type 'x'",
    ]
    assert grouped_warnings(nameless[:2])[0].endswith("[2 of this kind: lines 10, 20]")
    assert grouped_warnings([]) == []


@corpus
@pytest.mark.parametrize("robot, count, first", [(H1_2, 55, 25), (STRETCH, 35, 18)], ids=["h1_2", "stretch"])
def test_check_prints_one_line_per_kind_of_warning_on_the_corpus(capsys, robot, count, first):
    assert main(["check", str(robot)]) == 0
    out = capsys.readouterr().out
    warnings = out.split(" warning(s) of ", 1)[1].split("\n\n", 1)[0].splitlines()
    assert warnings[0] == "1 kind(s) (parts the model does not use; loaded anyway):", warnings
    assert len(warnings) == 2 and warnings[1].startswith(f"  line {first}: <material"), warnings
    assert f"[{count} of this kind: lines {first}, " in warnings[1], warnings
    assert sum("not found" in line for line in out.splitlines()) == 1   # the meshes: one line too


@corpus
def test_the_views_missing_meshes_are_one_line_with_the_hint_of_relative_paths(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    from robokin_ros.web.scene import link_meshes

    model = RobotModel.from_urdf_file(str(STRETCH))
    meshes, notes = link_meshes(model, CORPUS, files=True)
    assert len(notes) == 1, notes
    assert notes[0].startswith("37 of 37 meshes ('./meshes/base_link.STL', ") and " and 34 more) not found" in notes[0]
    assert f"relative paths resolve from the URDF's folder ({CORPUS})" in notes[0], notes
    assert "package://" not in notes[0] and "ROS_PACKAGE_PATH" not in notes[0], notes   # (was the hint of all)
    trimesh.creation.box().export(str(tmp_path / "base_link.STL"))   # --mesh-dir: found by its file name
    meshes, notes = link_meshes(model, CORPUS, files=True, mesh_dir=tmp_path)
    assert notes[0].startswith("36 of 37 meshes ('./meshes/link_right_wheel.STL', "), notes
    assert "./meshes/base_link.STL" in {m.source for m in meshes}


@corpus
def test_view_takes_mesh_dir_and_package_path(tmp_path):
    pytest.importorskip("viser")
    pytest.importorskip("trimesh")
    from robokin_ros.cli.view import start_view

    served, view = start_view(str(STRETCH), port=0, collisions=False, mesh_dir=str(tmp_path),
                              package_paths=[str(tmp_path)])
    try:
        assert view.meshes_loaded.wait(120)
        assert len(view.scene.notes) == 1 and "37 of 37 meshes" in view.scene.notes[0], view.scene.notes
        assert view.scene.mesh_dir == tmp_path and view.scene.package_paths == [str(tmp_path)]
    finally:
        served.server.stop()


def test_view_parses_mesh_dir_and_package_path():
    from robokin_ros.cli import build_parser

    args = build_parser().parse_args(["view", "r.urdf", "--mesh-dir", "m", "--package-path", "a", "--package-path", "b"])
    assert args.mesh_dir == "m" and args.package_path == ["a", "b"]


def test_a_peers_c_level_stderr_is_one_summary_line_and_ours_goes_on(capfd):
    from robokin_ros.cli.peer_output import peer_stderr

    with peer_stderr("the peer") as output:
        os.write(2, b"Error:   Visual material must contain a name attribute\n         at line 457 in link.cpp\n")
        os.write(2, b"Error:   Could not parse visual element for Link [pelvis]\n")
        print("robokin: compiling kernels for x (first run; cached afterwards)", file=sys.stderr)   # not the peer's
    err = capfd.readouterr().err
    assert err == "robokin: compiling kernels for x (first run; cached afterwards)\n", err
    assert output.summary() == ("the peer printed 2 message(s) while loading (hidden; the first: "
                                "'Error: Visual material must contain a name attribute')")
    with peer_stderr("quiet") as output:
        pass
    assert output.summary() is None and capfd.readouterr().err == ""


@corpus
@pytest.mark.slow   # a bench process (its compiles end with it)
def test_bench_prints_no_foreign_parser_output_and_aligns_the_pinocchio_row():
    pytest.importorskip("pinocchio")
    pytest.importorskip("tqdm")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "robokin_ros", "bench", str(H1_2), "-n", "50"], capture_output=True,
                          text=True, env=env, cwd=str(ROOT), timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert not [line for line in proc.stderr.splitlines() if line.startswith(("Error:", " "))], proc.stderr
    parser_lines = [line for line in proc.stderr.splitlines() if "urdfdom" in line]
    assert len(parser_lines) == 1 and "printed 110 message(s)" in parser_lines[0], proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("  ")]
    ends = {re.search(r"(\d+\.\d\d|-)   ", row).end() for row in rows}   # where each value column ends
    assert any("Pinocchio" in row for row in rows) and len(ends) == 1, proc.stdout
