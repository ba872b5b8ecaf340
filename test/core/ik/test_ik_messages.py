"""Messages state the final errors of the answer returned: every route's ``IKResult`` errors are
those of its ``q`` (checked by FK), and :meth:`IKResult.describe` words them (issue 32 item 6:
a SUCCESS quoted 0.59 m and 1.57 rad)."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from robokin_ros import RobotModel, frame_transform
from robokin_ros.ik import solve_ik
from robokin_ros.spatial import log_so3

ROBOTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "robokin_ros", "robots")
PANDA = RobotModel.from_urdf_file(os.path.join(ROBOTS, "panda.urdf"))
TIP = "panda_hand"


def _fk_errors(q, T):
    F = frame_transform(PANDA, q, PANDA.root_link, TIP)
    return float(np.linalg.norm(F[:3, 3] - T[:3, 3])), float(np.linalg.norm(log_so3(T[:3, :3].T @ F[:3, :3])))


def _target(k):
    return frame_transform(PANDA, PANDA.random_configuration(rng=k), PANDA.root_link, TIP)


ROUTES = [{}, {"restarts": 3}, {"objective": "closest"}, {"objective": "manipulability"}, {"solutions": 3},
          {"axis_tolerances": [0, 0, 0, 0.1, 0.1, np.inf]}, {"max_iterations": 3}]


@pytest.mark.parametrize("options", ROUTES)
def test_every_route_reports_the_errors_of_its_answer(options):
    for k in range(6):
        T = _target(k)
        if k % 2:
            T[:3, 3] *= 3.0   # out of reach: the best configuration's errors
        result = solve_ik(PANDA, T, TIP, PANDA.random_configuration(rng=100 + k), **options)
        q = np.atleast_2d(result.q)
        for i in range(len(q)):
            position, rotation = _fk_errors(q[i], T)
            assert np.atleast_1d(result.position_error)[i] == pytest.approx(position, abs=1e-9)
            assert np.atleast_1d(result.rotation_error)[i] == pytest.approx(rotation, abs=1e-9)


def _numbers(text):
    return [float(x) for x in re.findall(r"error (\S+) ", text)]


def test_describe_states_the_final_errors_of_a_success():
    T = _target(1)
    result = solve_ik(PANDA, T, TIP, PANDA.random_configuration(rng=7))
    text = result.describe()
    assert text.startswith("solved (converged) in ") and "best" not in text
    position, rotation = _fk_errors(result.q, T)
    assert _numbers(text) == pytest.approx([position, rotation], rel=0.01, abs=1e-12)
    assert position < 1e-5 and rotation < 1e-5


def test_describe_of_a_failure_says_best_and_of_a_batch_takes_an_index():
    T = _target(2)
    T[:3, 3] *= 3.0
    result = solve_ik(PANDA, np.stack([_target(3), T]), TIP, max_iterations=50)
    assert result.describe((0,)).startswith("solved")
    text = result.describe((1,))
    assert text.startswith("not solved (max_iterations) after 50 iterations: the best configuration found has")
    assert _numbers(text) == pytest.approx(list(_fk_errors(result.q[1], T)), rel=0.01)
    with pytest.raises(IndexError, match="give one per axis"):
        result.describe()



def test_an_answer_in_self_collision_says_so():
    """avoid_collisions: whatever the answer (converged, or the best iterate of a spent budget),
    a configuration in self-collision has status in_collision and describe() says so; a solve
    from a free configuration's pose is free and says nothing of it."""
    from robokin_ros.collision import collision_model
    from robokin_ros.ik.collision_gate import collision_test, refuse_collisions
    from robokin_ros.ik.result import IKResult

    cm = collision_model(PANDA)
    q = PANDA.random_configuration(200, rng=3)
    inside = [bool(cm.in_collision_one(x)) for x in q]
    colliding, free = q[inside.index(True)], q[inside.index(False)]
    spent = IKResult(np.array([colliding, free]), np.array([False, False]), np.array([0.1, 0.1]),
                     np.array([0.2, 0.2]), np.array([500, 500]), np.array(["max_iterations"] * 2, "<U14"))
    result = refuse_collisions(spent, collision_test(PANDA, cm))
    assert result.status.tolist() == ["in_collision", "max_iterations"] and not result.success.any()
    assert "in self-collision" in result.describe((0,)) and "self-collision" not in result.describe((1,))
    solved = solve_ik(PANDA, frame_transform(PANDA, free, PANDA.root_link, TIP), TIP, avoid_collisions=cm)
    assert bool(solved.success) and not cm.in_collision_one(solved.q) and "self-collision" not in solved.describe()
