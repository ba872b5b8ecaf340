"""Self-collision of one configuration at a time (robokin_ros.collision.single): the compiled
check against the batched path, coal itself and Pinocchio + coal, on several robots."""

import sys
from pathlib import Path

import numpy as np
import pytest

from robokin_ros import (
    ArgumentError,
    CollisionModel,
    NonFiniteError,
    RobotModel,
    ShapeError,
    bounding_box_model,
    forward_kinematics,
    self_collisions,
)
from robokin_ros.collision import in_collision
from robokin_ros.collision.compiled_source import DEFER_BAND, EVERY, NARROW_KINDS, POSES
from robokin_ros.kernels import accel as rk_accel

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from peers import ERD_ROBOTS, PinCollisions, erd_urdf, example_robot_data_dir  # noqa: E402

coal = pytest.importorskip("coal")

ROBOTS = Path(__file__).resolve().parents[3] / "robokin_ros" / "robots"
PANDA = RobotModel.from_urdf_file(ROBOTS / "panda.urdf")
PANDA_SRDF = (ROBOTS / "panda.srdf").read_text()


def prepared(cm: CollisionModel) -> CollisionModel:
    """``cm`` with its compiled check loaded (the test is skipped without numba)."""
    if not rk_accel.active():
        pytest.skip("numba is not installed or the accelerator is off: no compiled single path")
    assert cm.prepare()
    return cm


def agree_with_batched(cm: CollisionModel, q: np.ndarray) -> np.ndarray:
    """Assert that every pair's verdict of each configuration ``q (n, n_q)`` checked one at a time
    (and each verdict of ``in_collision`` of the batch, the compiled batch) equals the batched
    path's (coal on every pair whose bounds overlap); return the verdicts."""
    batched = cm.colliding(cm.geometry_poses(q), cm.pairs)
    reference = self_collisions(cm, q)
    assert in_collision(cm, q).tolist() == batched.any(axis=1).tolist()   # the compiled batch
    check = cm.single_check
    for k in range(len(q)):
        states, found = check.states(q[k])
        assert np.array_equal(states.astype(bool), batched[k]), f"configuration {k}: {q[k].tolist()}"
        assert found == batched[k].any()
        one = self_collisions(cm, q[k])
        assert one.pairs == reference.pairs[k] and bool(one.in_collision) == reference.in_collision[k]
        assert cm.in_collision_one(q[k]) == in_collision(cm, q[k])[0] == batched[k].any()
    return batched.any(axis=1)


def pin_agrees(model: RobotModel, cm: CollisionModel, peer: PinCollisions, q: np.ndarray) -> int:
    """Assert the one-at-a-time colliding link pairs equal Pinocchio's over the pairs both check;
    return how many configurations collide."""
    order = lambda a, b: (a, b) if model.link_index(a) < model.link_index(b) else (b, a)  # noqa: E731
    checked = set(cm.link_pairs) & {order(a, b) for a, b in peer.links}
    assert len(checked) >= 0.5 * len(cm.link_pairs)
    hits = 0
    for k in range(len(q)):
        expected = peer.pairs(model, q[k], checked)
        assert set(self_collisions(cm, q[k]).pairs) & checked == expected, f"configuration {k}: {q[k].tolist()}"
        hits += bool(expected)
    return hits


# ---------------------------------------------------------------------------------- robots
@pytest.mark.slow   # compiles the collision check
def test_panda_one_at_a_time_equals_the_batched_path_and_pinocchio():
    cm = prepared(CollisionModel.build(PANDA, srdf=PANDA_SRDF))
    q = PANDA.random_configuration(2000, np.random.default_rng(11))
    assert agree_with_batched(cm, q).sum() > 50
    assert pin_agrees(PANDA, cm, PinCollisions((ROBOTS / "panda.urdf").read_text()), q[:400]) > 10


def _talos_paths():
    path = erd_urdf(ERD_ROBOTS["talos"])
    robots = example_robot_data_dir()
    return path, robots, [str(Path(robots).parents[1]), str(Path(robots).parent)]


def test_talos_boxes_one_at_a_time_equals_the_batched_path_and_pinocchio():
    path, _, package_dirs = _talos_paths()
    model = bounding_box_model(RobotModel.from_urdf_file(path), package_paths=package_dirs)
    cm = prepared(CollisionModel.build(model, samples=0))
    kinds = set(cm.single_check.kinds.tolist())
    assert {6, 9} <= kinds   # box-box by the separating axes, box-cylinder by GJK
    q = model.random_configuration(300, np.random.default_rng(12))
    agree_with_batched(cm, q)
    assert pin_agrees(model, cm, PinCollisions(model.to_urdf()), q[:60]) > 0


def test_talos_meshes_one_at_a_time_equals_the_batched_path_and_pinocchio():
    path, robots, package_dirs = _talos_paths()
    model = RobotModel.from_urdf_file(path)
    srdf = Path(robots, "talos_data", "srdf", "talos.srdf").read_text()
    cm = prepared(CollisionModel.build(model, srdf=srdf, package_paths=package_dirs))
    assert cm.warnings == () and 0 in set(cm.single_check.kinds.tolist())   # meshes: coal decides
    q = model.random_configuration(100, np.random.default_rng(13))
    assert agree_with_batched(cm, q).sum() > 0
    pin_agrees(model, cm, PinCollisions(Path(path).read_text(), package_dirs), q[:30])


# ---------------------------------------------------------------------------------- primitives
SHAPES = {"sphere": '<sphere radius="0.11"/>', "capsule": '<capsule radius="0.07" length="0.3"/>',
          "cylinder": '<cylinder radius="0.08" length="0.26"/>', "box": '<box size="0.3 0.12 0.2"/>'}


def free_pair(shape_a: str, shape_b: str) -> RobotModel:
    """Link ``a`` fixed at the origin (tilted), link ``b`` moved in x, y, z and roll, pitch, yaw;
    the base carries a far sphere so that ``a`` and ``b`` are not adjacent."""
    joints, parent = [], "base"
    for k, (kind, axis) in enumerate([("prismatic", "1 0 0"), ("prismatic", "0 1 0"), ("prismatic", "0 0 1"),
                                      ("revolute", "1 0 0"), ("revolute", "0 1 0"), ("revolute", "0 0 1")]):
        child = "b" if k == 5 else f"l{k}"
        lower, upper = (-0.45, 0.45) if kind == "prismatic" else (-3.2, 3.2)
        joints.append(f'<joint name="j{k}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
                      f'<axis xyz="{axis}"/><limit lower="{lower}" upper="{upper}" effort="1" velocity="1"/></joint>')
        parent = child
    links = "".join(f'<link name="l{k}"/>' for k in range(5))
    return RobotModel.from_urdf(f"""<robot name="pair">
  <link name="base"><collision><origin xyz="0 0 -5"/><geometry><sphere radius="0.01"/></geometry></collision></link>
  <link name="a"><collision><origin xyz="0.01 -0.02 0.03" rpy="0.3 -0.2 0.5"/><geometry>{shape_a}</geometry></collision></link>
  {links}<link name="b"><collision><geometry>{shape_b}</geometry></collision></link>
  <joint name="fix" type="fixed"><parent link="base"/><child link="a"/></joint>
  {"".join(joints)}
</robot>""")


def near_contact(model: RobotModel, cm: CollisionModel, n: int, rng) -> np.ndarray:
    """``(n, 6)`` configurations of :func:`free_pair`, half random, half moved along their
    position to within 2 mm of touching (by bisection with coal), some within the defer band."""
    request = coal.CollisionRequest()
    pair = np.flatnonzero((cm.geometry_links[cm.pairs] == model.link_index("a")).any(axis=1)
                          & (cm.geometry_links[cm.pairs] == model.link_index("b")).any(axis=1))[0]
    ga, gb = cm.pairs[pair]

    def collides(q) -> bool:
        T = cm.geometry_poses(q[None])[0]
        return coal.collide(cm.shapes[ga], coal.Transform3s(T[ga, :3, :3], T[ga, :3, 3]),
                            cm.shapes[gb], coal.Transform3s(T[gb, :3, :3], T[gb, :3, 3]), request, coal.CollisionResult())

    q = model.random_configuration(n, rng)
    for k in range(n // 2):
        direction = q[k, :3] / max(np.linalg.norm(q[k, :3]), 1e-9)
        lo, hi = 0.0, 0.6   # the distance along direction: colliding at lo, apart at hi
        q[k, :3] = 0.0
        if not collides(q[k]):
            continue
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            q[k, :3] = mid * direction
            lo, hi = (mid, hi) if collides(q[k]) else (lo, mid)
        offset = rng.choice([rng.uniform(-2e-3, 2e-3), rng.uniform(-3 * DEFER_BAND, 3 * DEFER_BAND)])
        q[k, :3] = (0.5 * (lo + hi) + offset) * direction
    return q


@pytest.mark.parametrize("shape_b", list(SHAPES))
@pytest.mark.parametrize("shape_a", list(SHAPES))
def test_compiled_narrow_phases_equal_coal_near_contact(shape_a, shape_b):
    model = free_pair(SHAPES[shape_a], SHAPES[shape_b])
    cm = prepared(CollisionModel.build(model, samples=0))
    q = near_contact(model, cm, 600, np.random.default_rng(sum(map(ord, shape_a + shape_b))))
    verdicts = agree_with_batched(cm, q)
    assert 0.2 < verdicts.mean() < 0.8   # both verdicts are well represented
    codes = {"sphere": 0, "capsule": 1, "cylinder": 2, "box": 3}
    pair = (min(codes[shape_a], codes[shape_b]), max(codes[shape_a], codes[shape_b]))
    if pair in NARROW_KINDS:   # decided without coal but near the band (closed forms, GJK)
        kernel = cm.single_check._kernel(1)
        poses, index = cm.single_check._scratch()[:2]
        to_coal = sum(kernel(x, EVERY, poses, index)[1] for x in q)
        assert to_coal < 0.15 * len(q)


# ---------------------------------------------------------------------------------- paths and inputs
def test_without_numba_single_configurations_take_the_batched_path(run_with, monkeypatch):
    cm = CollisionModel.build(PANDA, srdf=PANDA_SRDF)
    q = PANDA.random_configuration(300, np.random.default_rng(14))
    expected = self_collisions(cm, q)
    run_with(accelerated=False)
    fresh = CollisionModel.build(PANDA, srdf=PANDA_SRDF).with_disabled(cm.disabled)   # no kernel loaded
    assert fresh.single_check is None or fresh.single_check.states(q[0]) is None
    for k in range(len(q)):
        assert self_collisions(fresh, q[k]).pairs == expected.pairs[k]
        assert fresh.in_collision_one(q[k]) == in_collision(fresh, q[k])[0] == expected.in_collision[k]
    assert expected.in_collision.sum() > 5


def test_one_configuration_in_any_layout_gives_the_same_verdicts():
    cm = prepared(CollisionModel.build(PANDA, srdf=PANDA_SRDF))
    q = PANDA.random_configuration(200, np.random.default_rng(15))
    expected = self_collisions(cm, q).in_collision
    wide = np.zeros((len(q), 2 * PANDA.n_q))
    wide[:, ::2] = q
    for k in range(len(q)):
        frozen = q[k].copy()
        frozen.flags.writeable = False
        for variant in (q[k], q[k].tolist(), wide[k, ::2], frozen):
            assert cm.in_collision_one(variant) == expected[k]
            assert bool(self_collisions(cm, variant).in_collision) == expected[k]
    assert in_collision(cm, q).tolist() == expected.tolist()


@pytest.mark.parametrize("use_kernel", [True, False])
def test_bad_configurations_raise_typed_errors(use_kernel, run_with, monkeypatch):
    cm = CollisionModel.build(PANDA, srdf=PANDA_SRDF)
    if use_kernel:
        prepared(cm)
    else:
        run_with(accelerated=False)
    q = PANDA.home_configuration()
    for bad, error in [(np.r_[q[:-1], np.nan], NonFiniteError), (np.r_[q[:-1], np.inf], NonFiniteError),
                       (np.r_[np.nan, q[1:]].tolist(), NonFiniteError),
                       (q[:-1], ShapeError), (["a"] * PANDA.n_q, ArgumentError)]:
        with pytest.raises(error):
            cm.in_collision_one(bad)
        with pytest.raises(error):
            in_collision(cm, bad)
        with pytest.raises(error):
            self_collisions(cm, bad)
    with pytest.raises(ShapeError):
        cm.in_collision_one(np.stack([q, q]))


def test_a_copy_with_other_pairs_gets_its_own_check():
    cm = prepared(CollisionModel.build(PANDA, srdf=PANDA_SRDF))
    every = cm.with_disabled(())
    assert len(every.pairs) > len(cm.pairs)
    assert every.single_check is not cm.single_check and len(every.single_check.pairs) == len(every.pairs)
    q = PANDA.random_configuration(200, np.random.default_rng(16))
    prepared(every)
    agree_with_batched(every, q)


def test_geometry_poses_of_the_kernel_equal_forward_kinematics():
    cm = prepared(CollisionModel.build(PANDA, srdf=PANDA_SRDF))
    kernel = cm.single_check._kernel(1)
    poses, index = cm.single_check._scratch()[:2]
    for q in PANDA.random_configuration(20, np.random.default_rng(17)):
        kernel(q, POSES, poses, index)
        T = forward_kinematics(PANDA, q)[cm.geometry_links] @ cm.placements
        np.testing.assert_allclose(poses, T[:, :3], atol=1e-12)
