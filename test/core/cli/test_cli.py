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

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from cli_output import without_compile_notices  # noqa: E402

pytest.importorskip("matplotlib")
ROOT = Path(__file__).resolve().parents[3]
ROBOTS = ROOT / "robokin_ros" / "robots"
CORPUS = ROOT.parent / "shared" / "urdf-corpus"
UR5E, PANDA, TWIN = (str(ROBOTS / f"{n}.urdf") for n in ("ur5e", "panda", "twin_arm_torso"))


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, without_compile_notices(out.err)


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
                       "elbow_joint=0.5", "--format", "json")
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
    code, _, err = run(capsys, "show", TWIN, "--random", 3, "-o", path, "--size", 2)
    assert code == 0, err
    h, w = image_size(path)
    assert w >= 2.4 * h   # three views side by side


def test_named_configuration_from_an_srdf(capsys, tmp_path):
    srdf = ROOT / "test" / "fixtures" / "srdf" / "panda.srdf"
    code, out, _ = run(capsys, "fk", PANDA, "--frame", "panda_link8", "--named", "ready", "--srdf", srdf,
                       "--format", "json")
    assert code == 0 and json.loads(out)["q"]["panda_joint4"] == -2.356
    code, _, err = run(capsys, "fk", PANDA, "--frame", "panda_link8", "--named", "ready")
    assert code == 1 and "needs --srdf" in err


def test_workspace_and_bench(capsys, tmp_path):
    path = tmp_path / "ws.png"
    assert run(capsys, "workspace", PANDA, "--tip", "panda_hand_tcp", "-n", 3000, "-o", path)[0] == 0
    assert image_size(path)[1] > 600
    code, out, _ = run(capsys, "bench", UR5E, "-n", 300, "--wait")   # no compile left running in this process
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
        code, out, _ = run(capsys, "fk", path, "--frame", leaf, "--random", 1, "--format", "json")
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


def test_show_skips_a_mesh_over_the_size_cap_without_reading_it(capsys, tmp_path, monkeypatch):
    """Issue 24, case 12 for pictures: the mesh cap of collision checking holds for `show` too."""
    trimesh = pytest.importorskip("trimesh")
    trimesh.creation.box(extents=(0.1, 0.2, 0.3)).export(str(tmp_path / "box.stl"))
    urdf = tmp_path / "robot.urdf"
    urdf.write_text('<robot name="m"><link name="a"><visual><geometry><mesh filename="box.stl"/></geometry>'
                    '</visual></link></robot>')
    monkeypatch.setenv("ROBOKIN_MAX_MESH_BYTES", "100")
    code, out, err = run(capsys, "show", urdf, "-o", tmp_path / "m.png", "--size", 1.5)
    assert code == 0 and "(0 primitives, 0 meshes)" in out
    assert "more than the limit of 100 bytes" in err


# ---------------------------------------------------------------------------- bad input (issue 24, "The CLI")
def chain_urdf(path: Path, n: int) -> Path:
    links = "".join(f'<link name="l{i}"/>' for i in range(n + 1))
    joints = "".join(f'<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/>'
                     f'<origin xyz="0.01 0 0"/><axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" '
                     'velocity="1"/></joint>' for i in range(n))
    path.write_text(f'<robot name="chain">{links}{joints}</robot>')
    return path


@pytest.mark.parametrize("argv", [["check"], ["tree"], ["tree", "--format", "dot"], ["tree", "--fold-fixed"]])
def test_a_2000_link_chain_is_walked_without_recursion(capsys, tmp_path, argv):
    path = chain_urdf(tmp_path / "chain.urdf", 2000)
    code, out, err = run(capsys, argv[0], path, *argv[1:])
    assert code == 0, err
    assert "l2000" in out and "j1999" in out
    if argv == ["check"]:   # check_urdf's indentation: two spaces a level
        assert f"{'  ' * 2001}child(1):  l2000\n" in out


@pytest.mark.slow   # draws a 2,000-link chain
def test_the_tree_picture_of_a_deep_chain(capsys, tmp_path):
    from robokin_ros.cli.tree_picture import draw_tree
    draw_tree(RobotModel.from_urdf_file(chain_urdf(tmp_path / "chain.urdf", 1500)), str(tmp_path / "t.png"))
    assert image_size(tmp_path / "t.png")[0] > 100


def recursive_text_tree(model: RobotModel) -> str:
    """The text tree as the recursive walk printed it (before it became iterative), unfolded."""
    out = [model.link_names[0]]

    def walk(i: int, prefix: str) -> None:
        kids = model.link_children[i]
        for k, c in enumerate(kids):
            last = k == len(kids) - 1
            kind = str(model.joint_types[c - 1].item())
            kind = {"0": "fixed", "1": "revolute", "2": "continuous", "3": "prismatic", "4": "floating"}.get(kind, kind)
            out.append(f"{prefix}{'└── ' if last else '├── '}{model.all_joint_names[c - 1]} ({kind}) → "
                       f"{model.link_names[c]}")
            walk(c, prefix + ("    " if last else "│   "))
    walk(0, "")
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("path", [TWIN, PANDA, UR5E])
def test_text_tree_is_the_recursive_walks_output(capsys, path):
    code, out, _ = run(capsys, "tree", path)
    assert code == 0 and out == recursive_text_tree(RobotModel.from_urdf_file(path))


@pytest.mark.parametrize("argv, words", [
    (["ik", UR5E, "--tip", "tool0", "--pose", "0", "0", "0", "0", "0", "0", "1", "--timeout", "1e309"],
     ["--timeout", "1e309", "(0, 3600]"]),
    (["ik", UR5E, "--tip", "tool0", "--pose", "0", "0", "0", "0", "0", "0", "1", "--timeout", "nan"], ["--timeout"]),
    (["ik", UR5E, "--tip", "tool0", "--pose", "0", "0", "0", "0", "0", "0", "1", "--timeout", "0"], ["--timeout"]),
    (["ik", UR5E, "--tip", "tool0", "--pose", "0", "0", "inf", "0", "0", "0", "1"], ["--pose", "inf"]),
    (["workspace", UR5E, "--tip", "tool0", "-n", "1e10"], ["-n", "1e10", "1e+07"]),
    (["workspace", UR5E, "--tip", "tool0", "-n", "2.5"], ["-n", "whole number"]),
    (["workspace", UR5E, "--tip", "tool0", "--seed", "-1"], ["--seed"]),
    (["bench", UR5E, "-n", "1e10"], ["-n", "1e10"]),
    (["bench", UR5E, "-n", "0"], ["-n", "0 is outside [1"]),
    (["show", UR5E, "--size", "1e4"], ["--size", "[0.5, 50]"]),
    (["show", UR5E, "--size", "-1"], ["--size"]),
    (["fk", UR5E, "--frame", "tool0", "--random", "-3"], ["--random"]),
])
def test_numeric_options_out_of_bounds_are_one_line_usage_errors(argv, words):
    proc = run_module(argv)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    for word in words:
        assert word in proc.stderr


def test_counts_may_be_written_in_exponent_form(capsys, tmp_path):
    code, out, err = run(capsys, "workspace", UR5E, "--tip", "tool0", "-n", "1e3", "-o", tmp_path / "w.png")
    assert code == 0, err and (tmp_path / "w.png").exists()


def test_an_error_of_thousands_of_lines_is_capped(tmp_path):
    from robokin_ros.cli.arguments import MAX_ERROR_LINES
    problems = "".join(f'<joint name="b{i}" type="revolute"><parent link="x{i}"/><child link="y{i}"/></joint>'
                       for i in range(10_000))
    path = tmp_path / "bad.urdf"
    path.write_text(f'<robot name="bad"><link name="a"/>{problems}</robot>')
    for argv, stream in ((["fk", path, "--frame", "a"], "stderr"), (["check", path], "stdout")):
        proc = run_module(argv)
        text = getattr(proc, stream)
        assert proc.returncode == 1 and "Traceback" not in proc.stderr
        assert len(text.splitlines()) <= MAX_ERROR_LINES + 2, text[:2000]
        assert re.search(r"\.\.\. and \d{4,} more lines\n$", text), text[-300:]


def test_no_numpy_warning_before_the_answer():
    """A quaternion of 1e308 entries: its norm overflows (numpy warned, then the target was 'non-finite')."""
    proc = run_module(["ik", UR5E, "--tip", "tool0", "--pose", "0.3", "0.2", "0.3", "1e308", "1e308", "0", "1"])
    assert "Warning" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 3), proc.stderr
    assert json.loads(proc.stdout)["tip"] == "tool0"


def run_module(argv) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "robokin_ros", *map(str, argv)], capture_output=True, text=True,
                          env=env, cwd=str(ROOT), timeout=120)
