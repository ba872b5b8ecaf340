"""robokin_ros.web.scene: link frames posed by the core's FK, geometry from <visual> (or
<collision>), meshes through package://, file:// and relative URIs."""

from __future__ import annotations

import numpy as np
import pytest
from webview_paths import CORPUS, ROBOTS

from robokin_ros import RobotModel, forward_kinematics
from robokin_ros.web.scene import RobotScene, link_meshes

PANDA = RobotModel.from_urdf_file(ROBOTS / "panda.urdf")


def extents(piece) -> np.ndarray:
    return piece.vertices.max(axis=0) - piece.vertices.min(axis=0)


@pytest.mark.parametrize("path", [ROBOTS / "panda.urdf", ROBOTS / "twin_arm_torso.urdf", ROBOTS / "ur5e.urdf",
                                  CORPUS / "g1_29dof_hand.urdf", CORPUS / "fetch.urdf", CORPUS / "tiago_hey5.urdf"])
def test_link_frames_hold_the_cores_fk(server, path):
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    model = RobotModel.from_urdf_file(path)
    scene = RobotScene(server, model, urdf_dir=path.parent)
    np.testing.assert_allclose(scene.link_poses(), forward_kinematics(model, model.home_configuration()), atol=1e-6)
    q = model.random_configuration(rng=7)
    returned = scene.update(q)
    expected = forward_kinematics(model, q)
    np.testing.assert_allclose(scene.link_poses(), expected, atol=1e-6)
    np.testing.assert_allclose(returned, expected)
    edges = scene.skeleton.points
    parents = model.link_parents[np.flatnonzero(model.link_parents >= 0)]
    np.testing.assert_allclose(edges[:, 0], expected[parents, :3, 3], atol=1e-6)


def primitive_urdf(tmp_path, geometry: str, collision: str = "") -> RobotModel:
    collision = f"<collision><geometry>{collision}</geometry></collision>" if collision else ""
    path = tmp_path / "one.urdf"
    path.write_text(f'<robot name="one"><link name="base"><visual><origin xyz="0.1 0 0"/>'
                    f"<geometry>{geometry}</geometry></visual>{collision}</link></robot>")
    return RobotModel.from_urdf_file(path)


@pytest.mark.parametrize(("geometry", "size"), [
    ('<box size="0.1 0.2 0.3"/>', (0.1, 0.2, 0.3)),
    ('<cylinder radius="0.05" length="0.4"/>', (0.1, 0.1, 0.4)),
    ('<sphere radius="0.2"/>', (0.4, 0.4, 0.4)),
])
def test_primitives_have_their_urdf_size_along_urdf_axes(tmp_path, geometry, size):
    (piece,), notes = link_meshes(primitive_urdf(tmp_path, geometry))
    np.testing.assert_allclose(extents(piece), size, rtol=0.02)
    np.testing.assert_allclose(piece.T_link_mesh[:3, 3], [0.1, 0, 0])
    assert notes == []
    assert piece.faces.max() < len(piece.vertices)


def test_capsule_is_a_cylinder_with_half_spheres(tmp_path):
    model = RobotModel.from_urdf(
        '<robot name="c"><link name="base"><collision><geometry><capsule radius="0.05" length="0.3"/>'
        "</geometry></collision></link></robot>")
    if not model.link_collisions[0] or model.link_collisions[0][0].shape != "capsule":
        pytest.skip("this URDF reader drops <capsule>")
    (piece,), _ = link_meshes(model)
    np.testing.assert_allclose(extents(piece), (0.1, 0.1, 0.4), rtol=0.02)


def test_collision_geometry_is_shown_where_a_link_has_no_visual():
    model = RobotModel.from_urdf(
        '<robot name="c"><link name="base"><collision><geometry><box size="1 2 3"/></geometry></collision>'
        "</link></robot>")
    (piece,), _ = link_meshes(model)
    np.testing.assert_allclose(extents(piece), (1, 2, 3))


def write_stl(path, size):
    trimesh = pytest.importorskip("trimesh")
    path.parent.mkdir(parents=True, exist_ok=True)
    trimesh.creation.box(extents=size).export(str(path))


@pytest.mark.parametrize("uri", ["meshes/part.stl", "file://{dir}/meshes/part.stl", "package://mypkg/meshes/part.stl"])
def test_mesh_files_resolve_like_collision_meshes(tmp_path, monkeypatch, uri):
    write_stl(tmp_path / "mypkg" / "meshes" / "part.stl", (0.1, 0.2, 0.3))
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path))
    urdf_dir = tmp_path / "mypkg"
    model = primitive_urdf(tmp_path, f'<mesh filename="{uri.format(dir=urdf_dir)}" scale="2 2 2"/>')
    assert link_meshes(model, urdf_dir)[0] == []           # meshes come in the files pass
    (piece,), notes = link_meshes(model, urdf_dir, files=True)
    np.testing.assert_allclose(extents(piece), (0.2, 0.4, 0.6), rtol=1e-6)
    assert notes == []


def test_missing_mesh_is_a_note_and_the_collision_primitives_stand_in(tmp_path):
    model = primitive_urdf(tmp_path, '<mesh filename="package://nowhere/a.stl"/>', '<sphere radius="0.5"/>')
    (piece,), notes = link_meshes(model, tmp_path, files=True)
    np.testing.assert_allclose(extents(piece), (1, 1, 1), rtol=0.02)
    assert len(notes) == 1 and "package://nowhere/a.stl" in notes[0] and "not found" in notes[0]


def test_scene_loads_meshes_after_start_and_removes_everything(server, tmp_path):
    write_stl(tmp_path / "part.stl", (0.1, 0.1, 0.1))
    model = primitive_urdf(tmp_path, '<mesh filename="part.stl"/>')
    scene = RobotScene(server, model, urdf_dir=tmp_path)
    assert scene.pieces == []
    assert scene.load_meshes() == []
    assert len(scene.pieces) == 1 and scene.pieces[0].name.startswith("/robot/base/")
    def robot_nodes():   # viser's server-side scene tree ("/robot" itself is viser's implicit parent)
        return [name for name in server.scene._handle_from_node_name if name.startswith(("/robot/", "/robot_"))]

    assert set(robot_nodes()) == {"/robot/base", "/robot_skeleton", scene.pieces[0].name}
    scene.remove()
    assert robot_nodes() == []


def test_link_frames_on_demand_and_collision_colours(server):
    scene = RobotScene(server, PANDA)
    assert not any(frame.show_axes for frame in scene.frames)
    scene.show_frames(True)
    assert all(frame.show_axes for frame in scene.frames)
    hand = PANDA.link_index("panda_hand")
    scene.colour_links({hand})
    colours = scene.link_colours()
    assert colours[hand] == (230, 60, 50)
    assert {c for link, c in colours.items() if link != hand} == {(160, 182, 210)}
