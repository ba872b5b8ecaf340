"""The ``robokin`` command: every subcommand on the bundled robots (in-process, and as
``python -m robokin_ros`` for the exit codes), outputs checked against the core; check, tree,
show and fk on every robot of ../shared/urdf-corpus."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import RobotModel, frame_transform
from robokin_ros.cli import main
from robokin_ros.cli.inspect import dot_source
from robokin_ros.spatial import quat_xyzw_to_matrix

pytest.importorskip("matplotlib")
ROOT = Path(__file__).resolve().parents[3]
ROBOTS = ROOT / "robokin_ros" / "robots"
CORPUS = ROOT.parent / "shared" / "urdf-corpus"
UR5E, PANDA, TWIN = (str(ROBOTS / f"{n}.urdf") for n in ("ur5e", "panda", "twin_arm_torso"))


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def image_size(path) -> tuple[int, int]:
    import matplotlib.image
    return matplotlib.image.imread(str(path)).shape[:2]


def test_check_prints_the_tree_joints_and_warnings(capsys, tmp_path):
    code, out, _ = run(capsys, "check", PANDA)
    assert code == 0
    assert out.startswith("robot name is: panda\n---------- Successfully Parsed XML ---------------\n")
    assert "root Link: panda_link0 has 1 child(ren)" in out and "child(1):  panda_link1" in out
    assert "DOF: n_q = 8" in out and "panda_finger_joint1 x 1 + 0" in out   # the mimic column
    field = ROOT / "test" / "fixtures" / "field" / "limits_swapped.urdf"
    code, out, _ = run(capsys, "check", field)
    assert code == 0 and re.search(r"1 warning\(s\).*\n  line \d+: <limit>: lower 1.5 > upper -1.5", out)


def test_check_exits_1_listing_every_problem(capsys):
    code, out, _ = run(capsys, "check", ROOT / "test" / "fixtures" / "bad_multiple_problems.urdf")
    assert code == 1
    assert "is not a valid robot description" in out and out.count("\n  line ") == 3


def test_tree_text_and_dot(capsys, tmp_path):
    code, out, _ = run(capsys, "tree", TWIN, "--fold-fixed")
    assert code == 0 and out.startswith("base_link\n└── torso_lift_joint (prismatic) → torso_link")
    assert "head_link + camera_link + camera_optical_frame" in out
    model = RobotModel.from_urdf_file(TWIN)
    path = tmp_path / "t.dot"
    assert run(capsys, "tree", TWIN, "--format", "dot", "-o", path)[0] == 0
    text = path.read_text()
    # the DOT parses: one node per link, one labelled edge per joint, balanced braces
    nodes = re.findall(r"^  n(\d+) \[label=\"([^\"]*)\"\];$", text, re.M)
    edges = re.findall(r"^  n(\d+) -> n(\d+) \[label=\"([^\"]*)\"\];$", text, re.M)
    assert len(nodes) == model.n_links and len(edges) == model.n_joints
    assert text.count("{") == text.count("}") == 1 and text == dot_source(model)
    parents = {int(b): int(a) for a, b, _ in edges}
    assert all(parents[i] == model.link_parents[i] for i in range(1, model.n_links))


@pytest.mark.parametrize("fmt", ["png", "svg"])
def test_tree_picture(capsys, tmp_path, fmt):
    path = tmp_path / f"tree.{fmt}"
    assert run(capsys, "tree", PANDA, "--format", fmt, "-o", path)[0] == 0
    if fmt == "png":
        h, w = image_size(path)
        assert h > 300 and w > 200
    else:
        assert path.read_text().lstrip().startswith("<?xml") and "panda_link0" in path.read_text()


def test_fk_json_agrees_with_the_core(capsys):
    code, out, _ = run(capsys, "fk", UR5E, "--frame", "tool0", "--base", "base_link", "--q", "shoulder_lift_joint=-1",
                       "elbow_joint=0.5")
    assert code == 0
    data = json.loads(out)
    model = RobotModel.from_urdf_file(UR5E)
    q = model.q_from_dict({"shoulder_lift_joint": -1, "elbow_joint": 0.5})
    T = frame_transform(model, q, "base_link", "tool0")
    np.testing.assert_allclose(data["matrix"], T, atol=1e-12)
    np.testing.assert_allclose(quat_xyzw_to_matrix(data["quat_xyzw"]), T[:3, :3], atol=1e-12)
    assert data["q"]["elbow_joint"] == 0.5


def test_ik_json_reaches_the_pose(capsys):
    model = RobotModel.from_urdf_file(UR5E)
    q = model.random_configuration(rng=5)
    T = frame_transform(model, q, model.root_link, "tool0")
    from robokin_ros.spatial import matrix_to_quat_xyzw
    pose = [*T[:3, 3], *matrix_to_quat_xyzw(T[:3, :3])]
    code, out, _ = run(capsys, "ik", UR5E, "--tip", "tool0", "--pose", *pose)
    data = json.loads(out)
    assert code == 0 and data["success"]
    solved = model.q_from_dict(data["q"])
    np.testing.assert_allclose(frame_transform(model, solved, model.root_link, "tool0"), T, atol=1e-4)


def test_ik_pose_values_in_scientific_notation(capsys):
    code, out, _ = run(capsys, "ik", UR5E, "--tip", "tool0", "--pose", "0.4", "-1.5e-05", "0.4", "0", "1", "0", "-0.0",
                       "--timeout", 1)
    assert code in (0, 3) and "success" in json.loads(out)


def test_ik_unreachable_exits_3(capsys):
    code, out, _ = run(capsys, "ik", UR5E, "--tip", "tool0", "--pose", 5, 0, 0, 0, 0, 0, 1, "--timeout", 0.05)
    assert code == 3 and json.loads(out)["success"] is False


def test_show_draws_three_views(capsys, tmp_path):
    path = tmp_path / "robot.png"
    assert run(capsys, "show", TWIN, "--random", 3, "-o", path, "--size", 2)[0] == 0
    h, w = image_size(path)
    assert w >= 2.4 * h   # three views side by side


def test_named_configuration_from_an_srdf(capsys, tmp_path):
    srdf = ROOT / "test" / "fixtures" / "srdf" / "panda.srdf"
    code, out, _ = run(capsys, "fk", PANDA, "--frame", "panda_link8", "--named", "ready", "--srdf", srdf)
    assert code == 0 and json.loads(out)["q"]["panda_joint4"] == -2.356
    code, _, err = run(capsys, "fk", PANDA, "--frame", "panda_link8", "--named", "ready")
    assert code == 1 and "needs --srdf" in err


def test_workspace_and_bench(capsys, tmp_path):
    path = tmp_path / "ws.png"
    assert run(capsys, "workspace", PANDA, "--tip", "panda_hand_tcp", "-n", 3000, "-o", path)[0] == 0
    assert image_size(path)[1] > 600
    code, out, _ = run(capsys, "bench", UR5E, "-n", 300)
    assert code == 0 and "FK every link, 300 configs" in out and "% solved" in out


@pytest.mark.parametrize("argv, code, words", [
    (["fk", "/nonexistent.urdf", "--frame", "a"], 1, ["cannot read"]),
    (["fk", UR5E, "--frame", "nowhere"], 1, ["unknown link 'nowhere'"]),
    (["fk", UR5E, "--frame", "tool0", "--q", "elbow_joint"], 1, ["NAME=VALUE"]),
    (["fk", UR5E, "--frame", "tool0", "--q", "ghost=1"], 1, ["unknown joint 'ghost'"]),
    (["nonsense"], 2, ["invalid choice"]),
])
def test_errors_are_one_line_and_an_exit_code(argv, code, words):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-m", "robokin_ros", *argv], capture_output=True, text=True, env=env,
                          cwd=str(ROOT), timeout=120)
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    for word in words:
        assert word in proc.stderr


def test_help_everywhere():
    for command in ("check", "tree", "show", "fk", "ik", "workspace", "bench"):
        with pytest.raises(SystemExit) as info:
            main([command, "--help"])
        assert info.value.code == 0


@pytest.mark.slow
def test_every_corpus_robot(capsys, tmp_path):
    if not CORPUS.is_dir():
        pytest.skip(f"{CORPUS} is absent (../shared is not beside this checkout)")
    paths = sorted(CORPUS.glob("*.urdf"))
    for path in paths:
        model = RobotModel.from_urdf_file(path)
        assert run(capsys, "check", path)[0] == 0, path.name
        assert run(capsys, "tree", path, "--format", "dot", "-o", tmp_path / "t.dot")[0] == 0, path.name
        leaf = model.leaf_links[0]
        code, out, _ = run(capsys, "fk", path, "--frame", leaf, "--random", 1)
        assert code == 0 and len(json.loads(out)["matrix"]) == 4, path.name
    for path in paths[::6]:   # pictures cost ~0.5 s each: a sample of the corpus
        assert run(capsys, "show", path, "-o", tmp_path / "s.png", "--size", 1.5)[0] == 0, path.name


def test_show_reads_meshes_by_relative_file_and_package_paths(capsys, tmp_path, monkeypatch):
    trimesh = pytest.importorskip("trimesh")
    package = tmp_path / "src" / "my_robot"
    (package / "meshes").mkdir(parents=True)
    (package / "package.xml").write_text("<package><name>my_robot</name></package>")
    trimesh.creation.box(extents=(0.1, 0.2, 0.3)).export(str(package / "meshes" / "box.stl"))
    urdf = package / "robot.urdf"
    urdf.write_text(
        '<robot name="m"><link name="a"><visual><geometry><mesh filename="meshes/box.stl"/></geometry></visual></link>'
        '<link name="b"><visual><geometry><mesh filename="package://my_robot/meshes/box.stl" scale="2 2 2"/>'
        '</geometry></visual></link>'
        f'<link name="c"><visual><geometry><mesh filename="file://{package}/meshes/box.stl"/></geometry></visual></link>'
        '<link name="d"><visual><geometry><mesh filename="package://elsewhere/missing.dae"/></geometry></visual></link>'
        '<joint name="j" type="revolute"><parent link="a"/><child link="b"/><limit lower="-1" upper="1"/></joint>'
        '<joint name="k" type="fixed"><parent link="b"/><child link="c"/><origin xyz="0.3 0 0"/></joint>'
        '<joint name="l" type="fixed"><parent link="c"/><child link="d"/></joint></robot>')
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "src"))
    code, out, err = run(capsys, "show", urdf, "-o", tmp_path / "m.png", "--size", 1.5)
    assert code == 0 and "(0 primitives, 3 meshes)" in out
    assert "mesh 'package://elsewhere/missing.dae' not found" in err
