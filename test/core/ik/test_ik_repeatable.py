"""Repeatable answers: the same IK request (seed, targets, options; ``rng`` left at None) gives
the same answer bit for bit, however many requests came before and in a fresh process: the
restarts are seeded from the request itself (:func:`robokin_ros.ik.budget.request_offset`)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from robokin_ros import RobotModel, frame_transform
from robokin_ros.ik import prepare_ik, solve_ik

HERE = os.path.dirname(os.path.abspath(__file__))
ROBOTS = os.path.join(HERE, "..", "..", "..", "robokin_ros", "robots")
REPO = os.path.join(HERE, "..", "..", "..")


def _requests():
    """Requests whose answers depend on where the restarts go: a far seed on the Panda, a target
    out of reach (every iteration budget spent restarting), a UR5e target from a far seed.
    Built from fixed numbers only, so a subprocess builds the same."""
    panda = RobotModel.from_urdf_file(os.path.join(ROBOTS, "panda.urdf"))
    ur5e = RobotModel.from_urdf_file(os.path.join(ROBOTS, "ur5e.urdf"))
    rng = np.random.default_rng(123)
    out = []
    for model, tip in ((panda, "panda_hand"), (ur5e, "tool0")):
        for k in range(3):
            T = frame_transform(model, model.random_configuration(rng=rng), model.root_link, tip)
            if k == 2:
                T[:3, 3] *= 4.0   # out of reach
            out.append((model, tip, T, model.random_configuration(rng=rng)))
    return out


def _answers(requests, repeat=1):
    """``q`` bytes of each request's answer (``max_iterations=200``), one set per repetition;
    the requests' compiled loops loaded first (the rule's exception: a request repeated across
    the moment its robot's compiled step first compiles on the machine, which a suite started on
    an empty cache would meet; once compiled, a solver loads it when made)."""
    for m, tip, _, _ in requests:
        prepare_ik(m, tip, max_iterations=200)
    return [[solve_ik(m, T, tip, seed, max_iterations=200).q.tobytes() for m, tip, T, seed in requests]
            for _ in range(repeat)]


def test_the_requests_depend_on_their_restarts():
    """(Guard of the tests below: with different restart sequences the answers differ.)"""
    differ = 0
    for m, tip, T, seed in _requests():
        a = solve_ik(m, T, tip, seed, max_iterations=200, rng=1).q
        b = solve_ik(m, T, tip, seed, max_iterations=200, rng=2).q
        differ += not np.array_equal(a, b)
    assert differ >= 3


def test_100_repeated_requests_give_one_answer():
    requests = _requests()
    answers = _answers(requests, repeat=100)
    for k in range(len(requests)):
        assert len({a[k] for a in answers}) == 1, k


def test_a_batch_and_distinct_solutions_repeat():
    requests = _requests()[:2]
    m, tip = requests[0][0], requests[0][1]
    T = np.stack([r[2] for r in requests])
    seeds = np.stack([r[3] for r in requests])
    first = solve_ik(m, T, tip, seeds, restarts=3, max_iterations=100)
    again = solve_ik(m, T, tip, seeds, restarts=3, max_iterations=100)
    assert first.q.tobytes() == again.q.tobytes()
    a = solve_ik(m, T[0], tip, seeds[0], solutions=3, max_iterations=100)
    b = solve_ik(m, T[0], tip, seeds[0], solutions=3, max_iterations=100)
    assert a.q.tobytes() == b.q.tobytes()


def test_request_offset_depends_on_the_request_only():
    from robokin_ros.ik.budget import request_offset

    T = np.eye(4)
    assert request_offset((T, None)) == request_offset((T.tolist(), None))
    assert request_offset((T, [0.0, 1.0])) != request_offset((T, [0.0, 1.5]))
    assert request_offset((T, None)) != request_offset((T, [0.0]))


@pytest.mark.slow
def test_a_fresh_process_gives_the_same_bits():
    here = _answers(_requests())[0]
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import test_ik_repeatable as t; "
            "print(' '.join(a.hex() for a in t._answers(t._requests())[0]))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.abspath(REPO), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", code, HERE], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.split() == [a.hex() for a in here]
