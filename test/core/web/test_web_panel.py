"""robokin_ros.web.panel: sliders, mimic joints, named states, the IK gizmo, self-collision
colours and the tree, checked on viser's server-side state against the core."""

from __future__ import annotations

import numpy as np
import pytest
from webview_paths import CORPUS, ROBOTS

from robokin_ros import RobotModel, forward_kinematics, self_collisions
from robokin_ros.model.description import read_description
from robokin_ros.model.srdf import parse_srdf
from robokin_ros.web.panel import RobotView, tree_text
from robokin_ros.web.scene import wxyz

PANDA = RobotModel.from_urdf_file(ROBOTS / "panda.urdf")
SEMANTICS = parse_srdf(read_description(ROBOTS / "panda.srdf"), PANDA)


@pytest.fixture
def view(server):
    view = RobotView(server, PANDA, semantics=SEMANTICS, collisions=False)
    yield view
    view.remove()


def test_a_slider_per_independent_joint_within_its_limits(view):
    assert list(view.sliders) == list(PANDA.joint_names)
    for name, (slider, i) in view.sliders.items():
        assert PANDA.q_names[i] == name
        assert (slider.min, slider.max) == (PANDA.q_lower[i], PANDA.q_upper[i])


def test_moving_a_slider_moves_the_scene_to_the_cores_fk(view):
    slider, i = view.sliders["panda_joint2"]
    slider.value = 0.8
    q = PANDA.home_configuration()
    q[i] = 0.8
    np.testing.assert_allclose(view.scene.link_poses(), forward_kinematics(PANDA, q), atol=1e-6)
    assert not np.allclose(forward_kinematics(PANDA, q), forward_kinematics(PANDA, PANDA.home_configuration()))


def test_mimic_joint_follows_its_source(view):
    mimic = [PANDA.all_joint_names[j] for j in np.flatnonzero(PANDA.is_mimic)]
    assert mimic and not set(mimic) & set(view.sliders)
    slider, i = view.sliders["panda_finger_joint1"]
    slider.value = 0.03
    finger2 = PANDA.link_index("panda_rightfinger")
    q = PANDA.home_configuration()
    q[i] = 0.03
    np.testing.assert_allclose(view.scene.link_poses()[finger2], forward_kinematics(PANDA, q)[finger2], atol=1e-6)
    hand = view.scene.link_poses()[PANDA.link_index("panda_hand")]
    gap = np.linalg.inv(hand) @ view.scene.link_poses()[finger2]
    assert abs(gap[1, 3]) == pytest.approx(0.03, abs=1e-6)


def test_srdf_states_are_buttons_that_show_them(view):
    assert set(view.states) == {"home"} | {f"{g}: {s}" for g, states in SEMANTICS.group_states.items() for s in states}
    view.go_to_state("panda_arm: ready")
    q = SEMANTICS.named_configuration("ready", "panda_arm")
    np.testing.assert_allclose(view.scene.q, q)
    np.testing.assert_allclose(view.scene.link_poses(), forward_kinematics(PANDA, q), atol=1e-6)
    i = view.sliders["panda_joint4"][1]
    assert view.sliders["panda_joint4"][0].value == pytest.approx(q[i])
    view.go_to_state("home")
    np.testing.assert_allclose(view.scene.q, PANDA.home_configuration())


def test_gizmo_sits_on_the_tip_and_dragging_it_solves_ik_from_the_current_configuration(view):
    tip = PANDA.link_index(view.tip)
    view.go_to_state("panda_arm: ready")
    start = view.scene.q.copy()
    np.testing.assert_allclose(view.gizmo_target(), forward_kinematics(PANDA, start)[tip], atol=1e-6)
    target = view.gizmo_target()
    target[:3, 3] += [0.03, -0.02, 0.04]
    view.gizmo.position = target[:3, 3]
    view.follow_gizmo()
    assert view.last_ik.success
    reached = view.scene.link_poses()[tip]
    np.testing.assert_allclose(reached, target, atol=1e-4)
    assert np.max(np.abs(view.scene.q - start)) < 0.5    # seeded from where the arm was: a nearby solution
    assert "reached" in view.ik_status.content and "position error" in view.ik_status.content


def test_unreachable_target_shows_the_best_effort_and_says_so(view):
    view.gizmo.position = (5.0, 0.0, 0.5)
    view.follow_gizmo()
    assert not view.last_ik.success and view.last_ik.position_error > 3.0
    assert "not reached" in view.ik_status.content


def test_choosing_another_tip_moves_the_gizmo_there(view):
    other = next(t for t in view.tips if t != view.tip)
    view._choose_tip(other)
    np.testing.assert_allclose(view.gizmo_target(), view.scene.link_poses()[PANDA.link_index(other)], atol=1e-6)


def test_tree_lists_every_link_once_under_its_parent():
    lines = tree_text(PANDA).splitlines()
    names = [line.split()[0] for line in lines]
    assert sorted(names) == sorted(PANDA.link_names)
    stack = []
    for line, name in zip(lines, names):
        depth = (len(line) - len(line.lstrip())) // 2
        stack[depth:] = [name]
        if depth:
            link = PANDA.link_index(name)
            assert PANDA.link_names[PANDA.link_parents[link]] == stack[depth - 1], line
            assert f"({PANDA.all_joint_names[link - 1]}, " in line


def test_self_colliding_links_are_coloured(server):
    pytest.importorskip("coal")
    view = RobotView(server, PANDA, semantics=SEMANTICS)
    import time
    deadline = time.monotonic() + 60
    while view.collision is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert view.collision is not None, view.collision_status.content
    rng = np.random.default_rng(0)
    qs = PANDA.random_configuration(400, rng=rng)
    hits = self_collisions(view.collision, qs).in_collision
    q = qs[np.flatnonzero(hits)[0]]
    view.set_configuration(q)
    pairs = self_collisions(view.collision, q).pairs
    expected = {PANDA.link_index(name) for pair in pairs for name in pair}
    assert view.colliding == expected and expected
    colours = view.scene.link_colours()
    assert {link for link, c in colours.items() if c == (230, 60, 50)} == expected & set(colours)
    view.set_configuration(qs[np.flatnonzero(~hits)[0]])
    assert view.colliding == set() and view.collision_status.content == "Self-collisions: none"
    view.show_collisions.value = False
    view.set_configuration(q)
    assert view.colliding == set()
    view.remove()


def test_humanoid_and_mobile_manipulator_views(server):
    for name in ("g1_29dof_hand", "tiago_hey5"):
        path = CORPUS / f"{name}.urdf"
        if not path.is_file():
            pytest.skip(f"{path} is not here")
        model = RobotModel.from_urdf_file(path)
        view = RobotView(server, model, urdf_dir=path.parent, collisions=False)
        assert view.meshes_loaded.wait(60)
        assert view.tip and len(view.sliders) == sum(1 for j in model.active_joints if model.joint_nq[j] == 1)
        q = model.random_configuration(rng=2)
        view.set_configuration(q)
        np.testing.assert_allclose(view.scene.link_poses(), forward_kinematics(model, q), atol=1e-6)
        view.remove()


def test_live_view_keeps_the_users_target_and_shows_the_answer_as_a_marker(server):
    view = RobotView(server, PANDA, interactive=False, collisions=False)
    assert all(slider.disabled for slider, _ in view.sliders.values()) and view.states == {"home": None}
    tip = PANDA.link_index(view.tip)
    q1, q2 = PANDA.random_configuration(2, rng=8)
    view.set_configuration(q1)
    np.testing.assert_allclose(view.gizmo_target(), forward_kinematics(PANDA, q1)[tip], atol=1e-6)
    target = forward_kinematics(PANDA, q2)[tip]
    view.gizmo.wxyz, view.gizmo.position = wxyz(target[:3, :3]), target[:3, 3]
    view.follow_gizmo()
    assert view.last_ik.success
    np.testing.assert_allclose(view.scene.q, q1)                        # joint states move the robot, not IK
    np.testing.assert_allclose(view.solution_marker.position, target[:3, 3], atol=1e-4)
    view.set_configuration(q2 * 0.5)
    np.testing.assert_allclose(view.gizmo_target(), target, atol=1e-6)   # the user's target stays
    other = next(t for t in view.tips if t != view.tip)
    view._choose_tip(other)
    view.set_configuration(q1)
    np.testing.assert_allclose(view.gizmo_target(), forward_kinematics(PANDA, q1)[PANDA.link_index(other)], atol=1e-6)
    view.remove()


def test_the_gizmo_solves_with_the_closest_objective():
    """Issue 21: the gizmo's IK uses `closest` now that it exists: never more motion from the
    configuration shown than the plain solve of the same target."""
    from robokin_ros import frame_transform, solve_ik
    from robokin_ros.web.panel import core_ik

    rng = np.random.default_rng(3)
    ik = core_ik(PANDA, timeout=0.5)
    for _ in range(5):
        seed = PANDA.random_configuration(rng=rng)
        target = frame_transform(PANDA, PANDA.clamp(seed + 0.3 * rng.standard_normal(PANDA.n_q)),
                                 PANDA.root_link, "panda_hand_tcp")
        outcome = ik("panda_hand_tcp", target, seed)
        plain = solve_ik(PANDA, target, "panda_hand_tcp", seed=seed, timeout=0.5)
        assert outcome.success and bool(plain.success)
        assert np.linalg.norm(outcome.q - seed) <= np.linalg.norm(plain.q - seed) + 1e-9
