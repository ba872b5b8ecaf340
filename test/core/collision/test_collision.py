"""Self-collision checking (robokin_ros.collision) on hand-made fixtures, and against Pinocchio + coal."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import (
    CollisionModel,
    CollisionUnavailableError,
    RobotModel,
    bounding_box_model,
    disabled_pairs_by_sampling,
    forward_kinematics,
    self_collisions,
    solve_ik,
)
from robokin_ros.collision.geometry import segment_distances
from robokin_ros.model.srdf import parse_srdf

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from peers import ERD_ROBOTS, PinCollisions, erd_urdf, example_robot_data_dir, strip_collision_meshes  # noqa: E402

coal = pytest.importorskip("coal")

ROBOTS = Path(__file__).resolve().parents[3] / "robokin_ros" / "robots"
CORPUS = Path(__file__).resolve().parents[4] / "shared" / "urdf-corpus"
PANDA = RobotModel.from_urdf_file(ROBOTS / "panda.urdf")
PANDA_SRDF = (ROBOTS / "panda.srdf").read_text()


def sliding_pair(shape_a: str, shape_b: str, origin_a: str = "0 0 0") -> str:
    """A base (a far-away sphere), link ``a`` fixed at the origin with ``shape_a``, link ``b``
    sliding along x (joint ``x`` in [-1, 1]) with ``shape_b``: ``a`` and ``b`` are siblings with
    geometry under a base with geometry, so not adjacent."""
    return f"""<robot name="pair">
  <link name="base"><collision><origin xyz="0 0 -5"/><geometry><sphere radius="0.01"/></geometry></collision></link>
  <link name="a"><collision><origin xyz="{origin_a}"/><geometry>{shape_a}</geometry></collision></link>
  <link name="b"><collision><geometry>{shape_b}</geometry></collision></link>
  <joint name="fix" type="fixed"><parent link="base"/><child link="a"/></joint>
  <joint name="x" type="prismatic"><parent link="base"/><child link="b"/><axis xyz="1 0 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
</robot>"""


BOX = '<box size="0.2 0.2 0.2"/>'


def pair_model(shape_a=BOX, shape_b=BOX, **kw) -> tuple[RobotModel, CollisionModel]:
    model = RobotModel.from_urdf(sliding_pair(shape_a, shape_b, **kw))
    return model, CollisionModel.build(model, samples=0)


# ---------------------------------------------------------------------------------- model and URDF
def test_collision_geometry_is_kept_and_round_trips():
    model = RobotModel.from_urdf(sliding_pair('<cylinder radius="0.1" length="0.4"/>', '<capsule radius="0.05" length="0.3"/>',
                                              origin_a="0.1 0.2 0.3"))
    a, b = model.link_collisions[model.link_index("a")][0], model.link_collisions[model.link_index("b")][0]
    assert (a.shape, a.size, a.origin[:3]) == ("cylinder", (0.1, 0.4), (0.1, 0.2, 0.3))
    assert (b.shape, b.size) == ("capsule", (0.05, 0.3))
    again = RobotModel.from_urdf(model.to_urdf())
    assert again.equals(model) and again.link_collisions == model.link_collisions


def test_malformed_collision_geometry_is_a_warning_and_skipped():
    text = sliding_pair('<box size="0.2 x 0.2"/>', '<sphere/>')
    model = RobotModel.from_urdf(text)
    assert model.link_collisions[model.link_index("a")] == () and model.link_collisions[model.link_index("b")] == ()
    messages = " ".join(str(w) for w in model.load_warnings)
    assert "<box> size of link 'a'" in messages and "link 'b' has no radius" in messages


def test_bundled_panda_has_primitive_collision_geometry_only():
    shapes = {g.shape for gs in PANDA.link_collisions for g in gs}
    assert shapes == {"cylinder", "sphere"}


# ---------------------------------------------------------------------------------- hand-made cases
@pytest.mark.parametrize("x, colliding, distance", [(0.1, True, None), (-0.15, True, None), (0.3, False, 0.1),
                                                    (-0.45, False, 0.25)])
def test_two_boxes_touch_exactly_when_they_overlap(x, colliding, distance):
    model, cm = pair_model()
    result = self_collisions(cm, [x], distance=True)
    assert bool(result.in_collision) is colliding
    assert result.pairs == ([("a", "b")] if colliding else [])
    if distance is None:
        assert result.min_distance <= 0.0
    else:
        assert result.min_distance == pytest.approx(distance, abs=1e-9)


@pytest.mark.parametrize("shape_a, shape_b, gap", [
    ('<sphere radius="0.1"/>', '<sphere radius="0.05"/>', 0.15),
    ('<capsule radius="0.05" length="0.4"/>', '<sphere radius="0.1"/>', 0.15),
    ('<cylinder radius="0.05" length="0.4"/>', '<capsule radius="0.02" length="1.0"/>', 0.07),
    (BOX, '<cylinder radius="0.1" length="0.1"/>', 0.2),
])
def test_primitives_collide_below_the_sum_of_their_half_widths(shape_a, shape_b, gap):
    """Along x the shapes' extents add up to ``gap``: in collision closer than it, apart beyond."""
    model, cm = pair_model(shape_a, shape_b)
    result = self_collisions(cm, [[gap - 0.01], [gap + 0.01], [-(gap + 0.05)]], distance=True)
    assert result.in_collision.tolist() == [True, False, False]
    assert result.min_distance[1:] == pytest.approx([0.01, 0.05], abs=1e-6)


def test_contacts_name_the_links_with_point_normal_and_depth():
    model, cm = pair_model()
    result = self_collisions(cm, [0.15], contacts=True)
    (contact,) = result.contacts
    assert (contact.link_a, contact.link_b) == ("a", "b")
    assert contact.depth == pytest.approx(0.05, abs=1e-9)
    assert abs(contact.normal[0]) == pytest.approx(1.0, abs=1e-9)
    assert 0.05 - 1e-9 <= contact.position[0] <= 0.1 + 1e-9


def test_batched_equals_looped_and_keeps_the_batch_shape():
    cm = CollisionModel.build(PANDA, srdf=PANDA_SRDF)
    q = PANDA.random_configuration(24, np.random.default_rng(5)).reshape(2, 12, PANDA.n_q)
    batched = self_collisions(cm, q, distance=True)
    assert batched.in_collision.shape == (2, 12) and batched.min_distance.shape == (2, 12)
    assert len(batched.pairs) == 2 and len(batched.pairs[0]) == 12
    for i in range(2):
        for j in range(12):
            one = self_collisions(cm, q[i, j], distance=True)
            assert one.in_collision == batched.in_collision[i, j]
            assert one.pairs == batched.pairs[i][j]
            assert one.min_distance == pytest.approx(batched.min_distance[i, j], abs=1e-12)
            assert (one.min_distance <= 0) == one.in_collision


def test_min_distance_is_the_smallest_pair_distance():
    """The early-stopping search over the bounds finds the same minimum as every pair's distance."""
    cm = CollisionModel.build(PANDA, srdf=PANDA_SRDF)
    q = PANDA.random_configuration(30, np.random.default_rng(8))
    fast = self_collisions(cm, q, distance=True)
    Tg = cm.geometry_poses(q)
    for b in np.flatnonzero(~fast.in_collision):
        exact = []
        for ga, gb in cm.pairs:
            tf = lambda g: coal.Transform3s(np.ascontiguousarray(Tg[b, g, :3, :3]), np.ascontiguousarray(Tg[b, g, :3, 3]))  # noqa: E731
            exact.append(coal.distance(cm.shapes[ga], tf(ga), cm.shapes[gb], tf(gb), coal.DistanceRequest(),
                                       coal.DistanceResult()))
        assert fast.min_distance[b] == pytest.approx(min(exact), abs=1e-9)


@pytest.mark.slow
def test_segment_distances_lower_bound_a_dense_sampling():
    rng = np.random.default_rng(0)
    p1, q1, p2, q2 = (rng.normal(size=(500, 3)) for _ in range(4))
    q1[:50] = p1[:50]                                   # a point against a segment
    q2[25:75] = p2[25:75]                               # both points, and a segment against a point
    q2[100:150] = p2[100:150] + 0.5 * (q1[100:150] - p1[100:150])   # parallel segments
    d = segment_distances(p1, q1, p2, q2)
    u = np.linspace(0, 1, 201)[None, :, None]
    A, B = p1[:, None] + (q1 - p1)[:, None] * u, p2[:, None] + (q2 - p2)[:, None] * u
    sampled = np.linalg.norm(A[:, :, None] - B[:, None], axis=-1).min(axis=(1, 2))
    assert np.all(d <= sampled + 1e-12)
    assert np.all(sampled - d <= 0.02)   # the sampling's spacing along segments of length ~2


# ---------------------------------------------------------------------------------- pairs
def test_adjacent_pairs_join_across_links_without_geometry():
    # panda_link8 has no geometry: panda_link7 and panda_hand are adjacent through it
    cm = CollisionModel.build(PANDA, samples=0)
    adjacent = {(a, b) for a, b, reason in cm.disabled if reason == "Adjacent"}
    assert ("panda_link7", "panda_hand") in adjacent and ("panda_hand", "panda_leftfinger") in adjacent
    assert ("panda_link6", "panda_hand") not in adjacent
    assert not adjacent & set(cm.link_pairs)


def test_srdf_disable_collisions_are_not_checked():
    model, _ = pair_model()
    srdf = '<robot name="pair"><disable_collisions link1="b" link2="a" reason="Never"/></robot>'
    cm = CollisionModel.build(model, srdf=srdf)
    assert ("a", "b") not in cm.link_pairs
    assert not self_collisions(cm, [0.0]).in_collision
    assert parse_srdf(srdf, model).disabled_collisions == (("b", "a", "Never"),)


def test_sampling_disables_default_always_and_never_pairs(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path))
    model, _ = pair_model()
    # a and b overlap at the home configuration (x = 0): "Default"; the far-away base never touches them
    # (base-a and base-b are adjacent: a-b is the only pair)
    assert disabled_pairs_by_sampling(model, samples=200) == (("a", "b", "Default"),)
    # box a moved to x = 0.6: in collision for x in (0.4, 0.8), a tenth of the samples: kept
    shifted = RobotModel.from_urdf(sliding_pair(BOX, BOX, origin_a="0.6 0 0"))
    assert disabled_pairs_by_sampling(shifted, samples=400) == ()
    assert CollisionModel.build(shifted, samples=400).link_pairs == [("a", "b")]
    # box a far away: never in collision
    far = RobotModel.from_urdf(sliding_pair(BOX, BOX, origin_a="3 0 0"))
    assert disabled_pairs_by_sampling(far, samples=400) == (("a", "b", "Never"),)
    # box a around the whole stroke of b: always in collision (but not at home, x = 0, if the
    # home value is moved: here it is in collision at home too, so "Default" wins)
    always = RobotModel.from_urdf(sliding_pair('<box size="2.5 0.2 0.2"/>', BOX))
    assert disabled_pairs_by_sampling(always, samples=100) == (("a", "b", "Default"),)


def test_sampled_pairs_are_cached_on_disk_and_a_corrupt_entry_is_recomputed(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path))
    model, _ = pair_model()
    first = disabled_pairs_by_sampling(model, samples=100)
    (entry,) = (tmp_path / "collision_pairs").glob("*.json")
    assert [tuple(p) for p in json.loads(entry.read_text())["disabled"]] == list(first)
    entry.write_text('{"disabled": [["a", "no_such_link", "Never"]]}')
    assert disabled_pairs_by_sampling(model, samples=100) == first
    entry.write_text("not json")
    assert disabled_pairs_by_sampling(model, samples=100) == first
    assert [tuple(p) for p in json.loads(entry.read_text())["disabled"]] == list(first)


# ---------------------------------------------------------------------------------- meshes
def _box_stl(path: Path) -> None:
    trimesh = pytest.importorskip("trimesh")
    path.parent.mkdir(parents=True, exist_ok=True)
    trimesh.creation.box(extents=(0.2, 0.2, 0.2)).export(path)


@pytest.mark.parametrize("kind", ["relative", "file", "package"])
def test_meshes_resolve_and_collide_like_the_primitive(kind, tmp_path, monkeypatch):
    _box_stl(tmp_path / "share" / "my_robot" / "meshes" / "box.stl")
    uri = {"relative": "share/my_robot/meshes/box.stl",
           "file": f"file://{tmp_path}/share/my_robot/meshes/box.stl",
           "package": "package://my_robot/meshes/box.stl"}[kind]
    monkeypatch.setenv("ROS_PACKAGE_PATH", str(tmp_path / "share"))
    model = RobotModel.from_urdf(sliding_pair(f'<mesh filename="{uri}"/>', BOX))
    cm = CollisionModel.build(model, samples=0, base_dir=str(tmp_path))
    assert cm.warnings == () and cm.n_geometries == 3
    q = np.linspace(-0.5, 0.5, 41)[:, None]
    _, reference = pair_model()
    assert self_collisions(cm, q).in_collision.tolist() == self_collisions(reference, q).in_collision.tolist()


def test_package_paths_argument_finds_a_package(tmp_path, monkeypatch):
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    _box_stl(tmp_path / "somewhere" / "meshes" / "box.stl")
    model = RobotModel.from_urdf(sliding_pair('<mesh filename="package://my_robot/meshes/box.stl" scale="2 2 2"/>', BOX))
    cm = CollisionModel.build(model, samples=0, package_paths={"my_robot": str(tmp_path / "somewhere")})
    assert cm.warnings == ()
    assert self_collisions(cm, [[0.25], [0.35]]).in_collision.tolist() == [True, False]   # a 0.4 m box now


def test_a_missing_mesh_is_a_warning_not_an_error(monkeypatch):
    monkeypatch.delenv("ROS_PACKAGE_PATH", raising=False)
    model = RobotModel.from_urdf(sliding_pair('<mesh filename="package://nowhere/meshes/a.stl"/>', BOX))
    cm = CollisionModel.build(model, samples=0)
    assert len(cm.warnings) == 1 and "package://nowhere/meshes/a.stl" in cm.warnings[0] and "link 'a'" in cm.warnings[0]
    assert cm.n_geometries == 2
    assert not self_collisions(cm, [0.0]).in_collision


def test_the_trimesh_fallback_loads_what_assimp_cannot(tmp_path, monkeypatch):
    """A format coal's loader (assimp) lacks goes through trimesh: the same box, the same answers."""
    _box_stl(tmp_path / "box.stl")

    class NoAssimp:
        def load(self, path, scale):
            raise RuntimeError("assimp: unknown format")

    monkeypatch.setattr(coal, "MeshLoader", NoAssimp)
    model = RobotModel.from_urdf(sliding_pair(f'<mesh filename="{tmp_path}/box.stl" scale="2 2 2"/>', BOX))
    cm = CollisionModel.build(model, samples=0)
    assert cm.warnings == () and cm.n_geometries == 3
    assert self_collisions(cm, [[0.25], [0.35]]).in_collision.tolist() == [True, False]   # a 0.4 m box


def test_bounding_box_model_replaces_meshes_by_their_boxes(tmp_path):
    _box_stl(tmp_path / "box.stl")
    model = RobotModel.from_urdf(sliding_pair(f'<mesh filename="{tmp_path}/box.stl" scale="1 2 1"/>', BOX,
                                              origin_a="0.1 0 0"))
    boxes = bounding_box_model(model)
    (g,) = boxes.link_collisions[boxes.link_index("a")]
    assert g.shape == "box" and g.size == pytest.approx((0.2, 0.4, 0.2)) and g.origin[:3] == pytest.approx((0.1, 0, 0))


# ---------------------------------------------------------------------------------- coal missing
def test_without_coal_a_typed_error_is_raised(monkeypatch):
    model, _ = pair_model()
    fresh = RobotModel.from_urdf(model.to_urdf())
    monkeypatch.setitem(sys.modules, "coal", None)
    with pytest.raises(CollisionUnavailableError, match="coal"):
        self_collisions(fresh, [0.0])
    assert isinstance(CollisionUnavailableError(), ImportError)


def test_the_core_imports_without_importing_coal():
    code = "import sys, robokin_ros; assert 'coal' not in sys.modules and 'rclpy' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[3])


# ---------------------------------------------------------------------------------- Pinocchio + coal
pin = pytest.importorskip("pinocchio")


def _agree(model: RobotModel, cm: CollisionModel, peer: PinCollisions, n: int, seed: int) -> int:
    """Same colliding link pairs on ``n`` random configurations, over the pairs both check
    (Pinocchio never pairs geometries on one joint: links joined by fixed joints)."""
    order = lambda a, b: (a, b) if model.link_index(a) < model.link_index(b) else (b, a)  # noqa: E731
    checked = set(cm.link_pairs) & {order(a, b) for a, b in peer.links}
    assert len(checked) >= 0.5 * len(cm.link_pairs)
    q = model.random_configuration(n, np.random.default_rng(seed))
    ours = self_collisions(cm, q)
    hits = 0
    for k in range(n):
        expected = peer.pairs(model, q[k], checked)
        assert set(ours.pairs[k]) & checked == expected, f"configuration {k}: {q[k].tolist()}"
        hits += bool(expected)
    return hits


def test_panda_pairs_agree_with_pinocchio():
    cm = CollisionModel.build(PANDA, srdf=PANDA_SRDF)
    hits = _agree(PANDA, cm, PinCollisions((ROBOTS / "panda.urdf").read_text()), 300, 1)
    assert hits > 10   # the comparison saw collisions, not only free configurations


def test_talos_with_meshes_agrees_with_pinocchio():
    path = erd_urdf(ERD_ROBOTS["talos"])
    robots = example_robot_data_dir()
    model = RobotModel.from_urdf_file(path)
    package_dirs = [str(Path(robots).parents[1]), str(Path(robots).parent)]
    srdf = Path(robots, "talos_data", "srdf", "talos.srdf").read_text()
    cm = CollisionModel.build(model, srdf=srdf, package_paths=package_dirs)
    assert cm.warnings == () and cm.n_geometries == sum(map(len, model.link_collisions))
    peer = PinCollisions(Path(path).read_text(), package_dirs)
    assert _agree(model, cm, peer, 40, 2) > 0


def test_talos_bounding_boxes_agree_with_pinocchio():
    path = erd_urdf(ERD_ROBOTS["talos"])
    robots = example_robot_data_dir()
    package_dirs = [str(Path(robots).parents[1]), str(Path(robots).parent)]
    model = bounding_box_model(RobotModel.from_urdf_file(path), package_paths=package_dirs)
    cm = CollisionModel.build(model, samples=0)
    assert {g.shape for gs in model.link_collisions for g in gs} <= {"box", "cylinder"}
    assert _agree(model, cm, PinCollisions(model.to_urdf()), 60, 3) > 0


@pytest.mark.parametrize("name", ["go1", "anymal_c", "allegro_right", "poppy_ergo_jr", "g1_29dof_hand", "nao_v50",
                                  "turtlebot3_waffle_pi"])
def test_corpus_primitives_agree_with_pinocchio(name):
    path = CORPUS / f"{name}.urdf"
    if not path.is_file():
        pytest.skip(f"{path} is absent (../shared is not beside this checkout)")
    text = strip_collision_meshes(path.read_text())
    model = RobotModel.from_urdf(text)
    cm = CollisionModel.build(model, samples=0)
    assert cm.warnings == ()
    _agree(model, cm, PinCollisions(text), 100, 4)


def test_corpus_meshes_without_files_warn_and_primitives_still_work():
    path = CORPUS / "g1_29dof_hand.urdf"
    if not path.is_file():
        pytest.skip(f"{path} is absent (../shared is not beside this checkout)")
    model = RobotModel.from_urdf_file(path)
    cm = CollisionModel.build(model, samples=0)
    meshes = sum(g.shape == "mesh" for gs in model.link_collisions for g in gs)
    assert len(cm.warnings) == meshes > 0 and cm.n_geometries == sum(map(len, model.link_collisions)) - meshes


# ---------------------------------------------------------------------------------- IK
def test_ik_does_not_accept_a_solution_in_collision():
    model, cm = pair_model()
    target = np.eye(4)
    target[0, 3] = 0.1   # b's origin at x = 0.1: the boxes overlap there, and only there
    # outcomes decided by iteration budgets; the timeouts are only a generous backstop
    plain = solve_ik(model, target, "b", axis_tolerances=[0, 0, 0, np.inf, np.inf, np.inf], max_iterations=200,
                     timeout=30.0)
    assert plain.success
    avoided = solve_ik(model, target, "b", axis_tolerances=[0, 0, 0, np.inf, np.inf, np.inf], max_iterations=200,
                       timeout=30.0, avoid_collisions=cm)
    assert not avoided.success and avoided.status != "converged"
    batch = solve_ik(model, np.stack([target] * 70), "b", axis_tolerances=[0, 0, 0, np.inf, np.inf, np.inf],
                     max_iterations=50, timeout=30.0, avoid_collisions=cm)
    assert not batch.success.any()


def test_ik_with_avoid_collisions_gives_collision_free_panda_solutions_verified_by_pinocchio():
    cm = CollisionModel.build(PANDA, srdf=PANDA_SRDF)
    peer = PinCollisions((ROBOTS / "panda.urdf").read_text())
    checked = set(cm.link_pairs)
    q = PANDA.random_configuration(400, np.random.default_rng(11))
    free = q[~self_collisions(cm, q).in_collision][:100]
    tip = "panda_hand_tcp"
    targets = forward_kinematics(PANDA, free)[:, PANDA.link_index(tip)]
    seed = 0.5 * (PANDA.q_lower + PANDA.q_upper)
    # outcomes decided by the iteration budget (max_iterations); the timeout is only a generous backstop
    singles = [solve_ik(PANDA, T, tip, seed=seed, max_iterations=500, timeout=30.0, avoid_collisions=cm, rng=k)
               for k, T in enumerate(targets[:40])]
    batch = solve_ik(PANDA, targets, tip, seed=seed, max_iterations=500, timeout=30.0, avoid_collisions=cm, rng=0)
    solutions = [r.q for r in singles if r.success] + list(batch.q[batch.success])
    assert len(solutions) >= 0.9 * 140
    for qs in solutions:
        assert peer.pairs(PANDA, qs, checked) == set()
    assert not self_collisions(cm, np.array(solutions)).in_collision.any()


def test_ik_avoid_collisions_needs_a_matching_collision_model():
    model, cm = pair_model()
    from robokin_ros import IKOptionError

    with pytest.raises(IKOptionError, match="another model"):
        solve_ik(PANDA, np.eye(4), "panda_hand_tcp", avoid_collisions=cm)
    with pytest.raises(IKOptionError, match="bool or a CollisionModel"):
        solve_ik(model, np.eye(4), "b", avoid_collisions="yes")


def test_ik_avoid_collisions_true_uses_the_models_default_collision_model(tmp_path, monkeypatch):
    monkeypatch.setenv("ROBOKIN_CACHE_DIR", str(tmp_path))
    model = RobotModel.from_urdf(sliding_pair(BOX, BOX, origin_a="0.6 0 0"))   # a-b checked (see sampling)
    target = np.eye(4)
    target[0, 3] = 0.5
    free = [0, 0, 0, np.inf, np.inf, np.inf]
    assert solve_ik(model, target, "b", axis_tolerances=free, timeout=0.05).success
    result = solve_ik(model, target, "b", axis_tolerances=free, timeout=0.05, avoid_collisions=True)
    assert not result.success


@pytest.mark.slow   # IK on Talos's meshes
def test_ik_with_avoid_collisions_on_talos_meshes_verified_by_pinocchio():
    """A humanoid with its real collision meshes: the left arm from the torso, targets from
    collision-free configurations, every solution free of self-collision for Pinocchio + coal."""
    path = erd_urdf(ERD_ROBOTS["talos"])
    robots = example_robot_data_dir()
    package_dirs = [str(Path(robots).parents[1]), str(Path(robots).parent)]
    model = RobotModel.from_urdf_file(path)
    cm = CollisionModel.build(model, srdf=Path(robots, "talos_data", "srdf", "talos.srdf").read_text(),
                              package_paths=package_dirs)
    peer = PinCollisions(Path(path).read_text(), package_dirs)
    arm = [n for n in model.joint_names if n.startswith("arm_left_") or n.startswith("torso_")]
    home = model.home_configuration()
    q = np.tile(home, (120, 1))
    cols = [model.q_names.index(n) for n in arm]
    q[:, cols] = model.random_configuration(120, np.random.default_rng(21))[:, cols]
    free = q[~self_collisions(cm, q).in_collision][:30]
    tip = "arm_left_7_link"
    targets = forward_kinematics(model, free)[:, model.link_index(tip)]
    result = solve_ik(model, targets, tip, seed=home, active_joints=arm, timeout=0.1, avoid_collisions=cm, rng=0)
    assert result.success.sum() >= 25
    order = lambda a, b: (a, b) if model.link_index(a) < model.link_index(b) else (b, a)  # noqa: E731
    checked = set(cm.link_pairs) & {order(a, b) for a, b in peer.links}
    for qs in result.q[result.success]:
        assert peer.pairs(model, qs, checked) == set()


def test_builder_operations_keep_collision_geometry_in_place():
    from robokin_ros.collision.geometry import geometry_placement
    from robokin_ros.model.builder import set_fixed_transform
    from robokin_ros.spatial import rpy_to_matrix

    X = np.eye(4)
    X[:3, :3] = rpy_to_matrix(np.array([0.3, -0.2, 0.5]))
    X[:3, 3] = (0.01, 0.02, 0.05)
    moved = set_fixed_transform(PANDA, "panda_hand_joint", joint_to_child=X)
    q = PANDA.random_configuration(5, np.random.default_rng(2))
    i = PANDA.link_index("panda_hand")
    before = forward_kinematics(PANDA, q)[:, i] @ geometry_placement(PANDA.link_collisions[i][0])
    after = forward_kinematics(moved, q)[:, i] @ geometry_placement(moved.link_collisions[i][0])
    np.testing.assert_allclose(after, before, atol=1e-12)
    cm_before, cm_after = CollisionModel.build(PANDA, samples=0), CollisionModel.build(moved, samples=0)
    assert self_collisions(cm_before, q).pairs == self_collisions(cm_after, q).pairs
    removed = moved.remove_subtree("panda_hand_tcp")
    assert removed.link_collisions[removed.link_index("panda_hand")] == moved.link_collisions[i]
    assert removed.link_collisions[removed.link_index("panda_leftfinger")] == PANDA.link_collisions[
        PANDA.link_index("panda_leftfinger")]
