"""The ``robokin`` command as a new user meets it (issue 30, item 3; issue 32: ``ik --solutions``):
one default tip (the node's default group's), bench on the prepared compiled loop, ``ik``
refusals and options, compact ``fk``, one mesh summary line, ``--version``, help without
markup, tree pictures without overlaps."""

from __future__ import annotations

import json
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import RobotModel, frame_transform
from robokin_ros.cli import build_parser, common, main, query
from robokin_ros.model.groups import derive_groups
from robokin_ros.spatial import log_so3, quat_xyzw_to_matrix, rpy_to_matrix

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from cli_output import without_compile_notices  # noqa: E402

pytest.importorskip("matplotlib")
ROOT = Path(__file__).resolve().parents[3]
ROBOTS = ROOT / "robokin_ros" / "robots"
CORPUS = ROOT.parent / "shared" / "urdf-corpus"
UR5E, SO101, TWIN = (str(ROBOTS / f"{n}.urdf") for n in ("ur5e", "so101_arm", "twin_arm_torso"))
#: Robots that are a hand or a gripper alone: their default tip is a finger by nature.
HANDS = {"allegro_right", "robotiq_2f85_ros1", "robotiq_3f_tendons_drake_atlas"}


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, without_compile_notices(out.err)


def corpus(*names: str) -> list[Path]:
    if not CORPUS.is_dir():
        pytest.skip(f"{CORPUS} is absent (../shared is not beside this checkout)")
    return [CORPUS / f"{n}.urdf" for n in names] if names else sorted(CORPUS.glob("*.urdf"))


# ---------------------------------------------------------------------------- one default tip
def check_default_tip(capsys, path) -> str:
    model = RobotModel.from_urdf_file(path)
    derived = derive_groups(model)
    tip = derived.groups[derived.default].tip
    assert common.default_tip(model) == (tip, derived.reason)
    code, out, _ = run(capsys, "check", path)
    assert code == 0 and f"\ndefault tip: {tip} ({derived.reason})\n" in out
    if Path(path).stem not in HANDS:
        assert not re.search("finger|thumb|jaw", tip, re.I), (path, tip)
    return tip


@pytest.mark.parametrize("path", sorted(ROBOTS.glob("*.urdf")), ids=lambda p: p.stem)
def test_the_default_tip_is_the_node_default_groups_and_check_prints_it(capsys, path):
    check_default_tip(capsys, path)


def test_the_default_tip_of_every_corpus_robot_is_no_finger(capsys):
    tips = {path.stem: check_default_tip(capsys, path) for path in corpus()}
    assert tips["g1_29dof_hand"] == "left_hand_palm_link" and tips["fetch"] == "gripper_link"
    assert tips["pr2"] == "r_gripper_tool_frame"


def test_commands_use_the_default_tip(capsys, tmp_path):
    model = RobotModel.from_urdf_file(SO101)   # its deepest leaf is the jaw; the default group's tip is "tool"
    assert max(model.leaf_links, key=lambda n: model.link_depths[model.link_index(n)]) == "jaw_link"
    code, out, _ = run(capsys, "fk", SO101, "--format", "json")
    assert code == 0 and json.loads(out)["frame"] == "tool"
    T = frame_transform(model, model.home_configuration(), model.root_link, "tool")
    code, out, _ = run(capsys, "ik", SO101, "--pose", *T[:3, 3], "--position-only")
    assert code == 0 and json.loads(out)["tip"] == "tool"
    code, out, _ = run(capsys, "workspace", SO101, "-n", 200, "-o", tmp_path / "w.png")
    assert code == 0


# ---------------------------------------------------------------------------- bench
def test_bench_times_ik_on_the_prepared_compiled_loop_with_the_same_options(capsys, monkeypatch):
    calls = []
    real_prepare, real_solve = query.prepare_ik, query.solve_ik

    def prepare_ik(model, tip, **options):
        calls.append(("prepare", tip, options))
        return real_prepare(model, tip, **options)

    def solve_ik(model, target, tip, **options):
        calls.append(("solve", tip, options))
        return real_solve(model, target, tip, **options)
    monkeypatch.setattr(query, "prepare_ik", prepare_ik)
    monkeypatch.setattr(query, "solve_ik", solve_ik)
    code, out, _ = run(capsys, "bench", UR5E, "-n", 50, "--wait")   # the compiled loop, however cold the cache
    assert code == 0 and "tip tool0" in out
    assert calls[0][0] == "prepare" and calls[0][1] == "tool0"
    prepared = calls[0][2]
    solves = [options for kind, _, options in calls if kind == "solve"]
    assert len(solves) == query.BENCH_IK_TARGETS * query.BENCH_IK_ROUNDS + 1   # and one untimed first call
    for options in solves:   # the timed requests run the loop prepare_ik loaded
        assert {k: options[k] for k in prepared} == prepared
        assert options["timeout"] == query.BENCH_IK_TIMEOUT
    assert re.search(r"IK of tool0, 200 targets, 5 ms each, (compiled loop|numpy path, cold[^\[]*) \[us/solve\] "
                     r"\(\d+\.\d % solved\)", out), out


# ---------------------------------------------------------------------------- ik
def ur5e_pose(seed: int) -> tuple[RobotModel, np.ndarray]:
    model = RobotModel.from_urdf_file(UR5E)
    return model, frame_transform(model, model.random_configuration(rng=seed), model.root_link, "tool0")


def solved_pose(model: RobotModel, out: str, tip: str = "tool0") -> np.ndarray:
    return frame_transform(model, model.q_from_dict(json.loads(out)["q"]), model.root_link, tip)


def test_ik_refuses_a_target_beyond_reach_at_once(capsys):
    code, out, err = run(capsys, "ik", UR5E, "--pose", 2, 0, 0, 0, 0, 0, 1, "--timeout", 30)
    data = json.loads(out)
    assert code == 3 and data["status"] == "beyond_reach" and data["iterations"] == 0 and not data["success"]
    assert err.count("\n") == 1
    assert "the target of 'tool0' is 2 m from 'base_link', beyond the reach of the chain (1.312 m" in err


def test_ik_position_only(capsys):
    model, T = ur5e_pose(3)
    code, out, _ = run(capsys, "ik", UR5E, "--pose", *T[:3, 3], "--position-only")
    assert code == 0
    np.testing.assert_allclose(solved_pose(model, out)[:3, 3], T[:3, 3], atol=1e-4)


def test_ik_axis_tolerances_free_the_rotation_about_z(capsys):
    model, T = ur5e_pose(4)
    turned = T @ np.diag([-1.0, -1.0, 1.0, 1.0])   # the target turned by pi about its own z
    quat = query.matrix_to_quat_xyzw(turned[:3, :3])
    code, out, _ = run(capsys, "ik", UR5E, "--pose", *T[:3, 3], *quat, "--axis-tolerances", 0, 0, "inf",
                       "--seed", *(f"{k}={v}" for k, v in model.q_to_dict(model.random_configuration(rng=4)).items()))
    assert code == 0
    R = turned[:3, :3].T @ solved_pose(model, out)[:3, :3]
    assert abs(R[2, 2] - 1) < 1e-6   # the tool z axis on target, any turn about it


def test_ik_roll_pitch_yaw_input(capsys):
    model, T = ur5e_pose(5)
    rpy = query.matrix_to_rpy(T[:3, :3])
    code, out, _ = run(capsys, "ik", UR5E, "--pose", *T[:3, 3], "--rpy", *rpy)
    assert code == 0
    np.testing.assert_allclose(solved_pose(model, out)[:3, :3], rpy_to_matrix(rpy), atol=1e-4)
    code, _, err = run(capsys, "ik", UR5E, "--pose", *T[:3, 3])
    assert code == 1 and "--rpy R P Y" in err and "--position-only" in err


def test_ik_warns_of_a_quaternion_that_is_not_unit_and_normalises_it(capsys):
    model, T = ur5e_pose(6)
    quat = 2 * query.matrix_to_quat_xyzw(T[:3, :3])
    code, out, err = run(capsys, "ik", UR5E, "--pose", *T[:3, 3], *quat)
    assert code == 0 and "warning: the quaternion has norm 2, not 1; normalised" in err
    np.testing.assert_allclose(solved_pose(model, out)[:3, :3], quat_xyzw_to_matrix(quat / 2), atol=1e-4)
    code, _, err = run(capsys, "ik", UR5E, "--pose", *T[:3, 3], *(quat / 2))
    assert "warning" not in err


def test_ik_solutions_are_distinct_and_each_reaches_the_pose(capsys):
    model, T = ur5e_pose(7)
    code, out, _ = run(capsys, "ik", UR5E, "--pose", *T[:3, 3], *query.matrix_to_quat_xyzw(T[:3, :3]),
                       "--solutions", 4, "--timeout", 5)
    data = json.loads(out)
    assert code == 0 and data["success"] and data["count"] == len(data["solutions"]) >= 2
    q = np.array([model.q_from_dict(s["q"]) for s in data["solutions"]])
    for x in q:
        Tx = frame_transform(model, x, model.root_link, "tool0")
        assert np.linalg.norm(Tx[:3, 3] - T[:3, 3]) < 1e-4 and np.linalg.norm(log_so3(T[:3, :3].T @ Tx[:3, :3])) < 1e-4
    gaps = np.linalg.norm(q[:, None] - q[None], axis=-1) + np.eye(len(q))
    assert gaps.min() > 0.1


# ---------------------------------------------------------------------------- fk
def test_fk_prints_a_compact_table_or_json(capsys):
    model = RobotModel.from_urdf_file(UR5E)
    T = frame_transform(model, model.q_from_dict({"elbow_joint": 0.5}), "base_link", "tool0")
    code, out, _ = run(capsys, "fk", UR5E, "--q", "elbow_joint=0.5")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "ur5e: tool0 in base_link" and len(lines) <= 12
    position = [float(v) for v in re.match(r"  position \[m\] +(.*)", lines[1])[1].split()]
    np.testing.assert_allclose(position, T[:3, 3], atol=1e-6)
    code, out, _ = run(capsys, "fk", UR5E, "--q", "elbow_joint=0.5", "--format", "json")
    assert code == 0 and len(out.splitlines()) <= 12
    np.testing.assert_allclose(json.loads(out)["matrix"], T, atol=1e-12)


def test_fk_warns_of_values_outside_the_limits(capsys):
    code, out, err = run(capsys, "fk", UR5E, "--q", "elbow_joint=4", "shoulder_lift_joint=1")
    assert code == 0 and "elbow_joint=4" in out
    assert err == "robokin fk: warning: elbow_joint = 4 is outside its limits [-3.142, 3.142]; used as given\n"


# ---------------------------------------------------------------------------- meshes
def mesh_robot(folder: Path) -> Path:
    """A URDF with 5 package:// meshes of package 'arm_meshes' and 2 relative ones, none of them beside it."""
    uris = [f"package://arm_meshes/meshes/l{i}.stl" for i in range(5)] + ["parts/r0.stl", "parts/r1.stl"]
    links = "".join(f'<link name="l{i}"><visual><geometry><mesh filename="{u}"/></geometry></visual></link>'
                    for i, u in enumerate(uris))
    joints = "".join(f'<joint name="j{i}" type="revolute"><parent link="l{i}"/><child link="l{i + 1}"/>'
                     '<origin xyz="0 0 0.1"/><limit lower="-1" upper="1"/></joint>' for i in range(len(uris) - 1))
    folder.mkdir(parents=True)
    (folder / "robot.urdf").write_text(f'<robot name="m">{links}{joints}</robot>')
    return folder / "robot.urdf"


def test_missing_meshes_are_one_summary_line_and_the_options_find_them(capsys, tmp_path, monkeypatch):
    trimesh = pytest.importorskip("trimesh")
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    urdf = mesh_robot(tmp_path / "robot")
    code, out, err = run(capsys, "show", urdf, "-o", tmp_path / "a.png", "--size", 1)
    assert code == 0 and "(0 primitives, 0 meshes)" in out
    assert err.count("\n") == 1 and err.startswith("robokin show: warning: 7 of 7 meshes ("), err
    assert "'package://arm_meshes/meshes/l0.stl', 'package://arm_meshes/meshes/l1.stl', " \
           "'package://arm_meshes/meshes/l2.stl' and 4 more) not found" in err
    assert "package:// needs its package (arm_meshes) on ROS_PACKAGE_PATH" in err and "--package-path DIR" in err
    assert f"relative paths resolve from the URDF's folder ({urdf.parent})" in err and "--mesh-dir DIR" in err
    code, out, _ = run(capsys, "check", urdf)
    assert code == 0 and out.count("warning: 7 of 7 meshes (") == 1
    package, loose = tmp_path / "src" / "arm_meshes" / "meshes", tmp_path / "loose"
    package.mkdir(parents=True)
    loose.mkdir()
    for i in range(5):
        trimesh.creation.box(extents=(0.1, 0.1, 0.1)).export(str(package / f"l{i}.stl"))
    for i in range(2):
        trimesh.creation.box(extents=(0.1, 0.1, 0.1)).export(str(loose / f"r{i}.stl"))
    code, out, err = run(capsys, "show", urdf, "-o", tmp_path / "b.png", "--size", 1,
                         "--package-path", tmp_path / "src", "--mesh-dir", loose)
    assert code == 0 and "(0 primitives, 7 meshes)" in out and err == ""


# ---------------------------------------------------------------------------- version, help
def test_version_is_the_packages(capsys):
    expected = ET.parse(ROOT / "package.xml").getroot().findtext("version")
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out == f"robokin (robokin_ros) {expected}\n"


def test_no_help_shows_docstring_markup(capsys):
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices
    assert {"check", "tree", "show", "fk", "ik", "workspace", "bench", "reach", "view"} <= set(commands)
    for argv in [["--help"]] + [[name, "--help"] for name in commands]:
        with pytest.raises(SystemExit):
            main(argv)
        text = capsys.readouterr().out
        assert "``" not in text and not re.search(r":[a-z]+:`", text), (argv, text)


# ---------------------------------------------------------------------------- tree pictures
def label_boxes(fig) -> np.ndarray:
    """``(n, 4)`` [x0, y0, x1, y1] in pixels of every text of ``fig`` (its box when it has one)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    out = []
    for text in fig.axes[0].texts:
        patch = text.get_bbox_patch()
        box = patch.get_window_extent(renderer) if patch is not None else text.get_window_extent(renderer)
        out.append([box.x0, box.y0, box.x1, box.y1])
    return np.array(out)


def overlaps(boxes: np.ndarray) -> list[tuple[int, int]]:
    a, b = boxes[:, None], boxes[None]
    hit = (a[..., 0] < b[..., 2]) & (b[..., 0] < a[..., 2]) & (a[..., 1] < b[..., 3]) & (b[..., 1] < a[..., 3])
    return [(i, j) for i, j in zip(*np.nonzero(np.triu(hit, 1)))]


@pytest.mark.parametrize("fold", [None, pytest.param(False, marks=pytest.mark.slow)])   # unfolded: 8 s
def test_tree_pictures_of_wide_robots_have_no_overlapping_labels(fold):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from robokin_ros.cli.tree_picture import FOLD_FIXED_PAST, tree_figure
    for path in [Path(TWIN), *corpus("g1_29dof_hand", "tiago_hey5")]:
        model = RobotModel.from_urdf_file(path)
        fig = tree_figure(model, fold)
        FigureCanvasAgg(fig)
        boxes = label_boxes(fig)
        texts = [t.get_text() for t in fig.axes[0].texts]
        assert all(name in "\n".join(texts) for name in model.link_names[:3])
        assert overlaps(boxes) == [], [(texts[i], texts[j]) for i, j in overlaps(boxes)][:5]
        folded = "fixed joints folded" in texts[-1]
        assert folded == (fold is None and model.n_links > FOLD_FIXED_PAST), path
