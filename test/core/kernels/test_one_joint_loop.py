"""The compiled IK loop on one-joint chains (issue 31): its self-check starts away from its target.

The self-check once reversed its test configuration to make the target, which for one joint is
the same configuration: the reference path converged at once where the compiled loop was asked
for a step, so every one-joint group (the derived groups of grippers' fingers, wheels, heads)
compiled twice, warned twice and fell back to the slower path.
"""

from __future__ import annotations

import pathlib
import types
import warnings

import pytest

from robokin_ros import RobotModel, prepare_ik
from robokin_ros.ik import generic_loop
from robokin_ros.ik.call import ik_call
from robokin_ros.ik.compiled_loop import loop_source
from robokin_ros.ik.options import IKOptions
from robokin_ros.kernels import accel, notices
from robokin_ros.model.groups import derive_groups

CORPUS = pathlib.Path(__file__).resolve().parents[4] / "shared" / "urdf-corpus"


def one_joint_groups() -> list[tuple[str, str]]:
    """``(URDF file name, tip)`` of every derived group of the corpus whose chain has one coordinate."""
    if not CORPUS.is_dir():
        return []
    found = []
    for path in sorted(CORPUS.glob("*.urdf")):
        model = RobotModel.from_urdf_file(path)
        for group in derive_groups(model).groups.values():
            if group.tip and ik_call(model, (group.tip,), IKOptions()).solver.model.n_q == 1:
                found.append((path.name, group.tip))
    return found


GROUPS = one_joint_groups()
needs_corpus = pytest.mark.skipif(not GROUPS, reason="../shared/urdf-corpus is absent")


@needs_corpus
def test_the_corpus_has_one_joint_groups():
    assert len(GROUPS) >= 30   # 38 in 14 robots when written


@needs_corpus
def test_the_self_check_takes_a_step_on_every_one_joint_group():
    """The numpy path's first iteration from the check's start is a step, not convergence (what
    the compiled loop is compared with), on every one-joint group."""
    converged = []
    for file, tip in GROUPS:
        model = RobotModel.from_urdf_file(CORPUS / file)
        solver = ik_call(model, (tip,), IKOptions()).solver
        q, target = solver.loop.check_problem(solver)
        cost, _ = solver.first_iteration(q, target)
        if cost is None:
            converged.append((file, tip))
    assert converged == []


def python_run(solver):
    """The compiled loop's ``run`` of ``solver`` as plain Python (its module with ``numba.njit``
    a no-op, the generic loop's functions it imports as their Python originals): the same
    arithmetic, without a compile."""
    stub = types.SimpleNamespace(njit=lambda *args, **kwargs: lambda function: function)
    namespace = {"numba": stub}
    exec(compile(loop_source(solver).replace("import numba\n", ""), "<loop>", "exec"), namespace)  # noqa: S102
    for name in ("loop", "loop_rows", "log_so3"):
        function = getattr(generic_loop, name)
        namespace[name] = getattr(function, "py_func", function)
    return namespace["run"]


@needs_corpus
def test_the_self_check_accepts_the_loop_on_every_one_joint_group():
    """The loop's self-check, run on the loop's own source in plain Python, agrees with the numpy
    path on every one-joint group (it refused every one of them)."""
    refused = []
    for file, tip in GROUPS:
        model = RobotModel.from_urdf_file(CORPUS / file)   # (held: the solver's chain lives with it)
        solver = ik_call(model, (tip,), IKOptions()).solver
        if not solver.loop._agrees(python_run(solver), solver):
            refused.append((file, tip))
    assert refused == []


def one_group_per_robot() -> list[tuple[str, str]]:
    return list(dict(GROUPS).items())


@pytest.mark.slow
@needs_corpus
@pytest.mark.skipif(not accel.available(), reason="numba is not installed")
def test_one_joint_groups_run_the_compiled_loop(accelerated):
    """prepare_ik loads the compiled loop of a one-joint group of each corpus robot: no warning,
    one kernel compiled per group (none for a copy of an earlier robot), none again for a second
    model of the same robot."""
    sent: list[notices.Notice] = []
    failed = []
    with notices.subscribed(sent.append), warnings.catch_warnings():
        warnings.simplefilter("error")
        for file, tip in one_group_per_robot():
            model = RobotModel.from_urdf_file(CORPUS / file)
            before = len(sent)
            if not prepare_ik(model, tip):
                failed.append((file, tip))
            compiled = sum(n.kernels for n in sent[before:] if not n.started)
            assert compiled <= 1, (file, tip, compiled)   # 0: the same loop as an earlier robot's
            assert prepare_ik(RobotModel.from_urdf_file(CORPUS / file), tip)
            assert sum(n.kernels for n in sent[before:] if not n.started) == compiled   # from the cache
    assert failed == []
    assert sent, "nothing was compiled"
