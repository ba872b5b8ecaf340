"""The constrained search (issue 32, items 1-3; issue 33, items 1 and 3): freed orientation axes
solved as free (MoveIt's rule, ``calcEulerAngles`` with inclusive bounds, judges every answer:
:meth:`OrientationConstraint.excess` re-implements it and is checked against scipy in
test_ik_constraints.py), unions tried nearest region first and sharing the budget, and requests
bounded before any work. Outcomes are decided by iteration budgets."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from freed_axes import PATTERNS, ROTATION_VECTOR, XYZ_EULER_ANGLES, piper, requests, ur5e
from scipy.spatial.transform import Rotation

from robokin_ros import RobotModel, frame_transform
from robokin_ros.errors import IKOptionError
from robokin_ros.ik import constrained
from robokin_ros.ik.constrained import FIRST_ROUND, MAX_REGIONS, MAX_TIPS, solve_constrained
from robokin_ros.ik.constraints import PITCH_MARGIN, OrientationConstraint, PositionConstraint, Region

ROBOTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "robokin_ros", "robots")
OMX = RobotModel.from_urdf_file(os.path.join(ROBOTS, "open_manipulator_x.urdf"))
PIPER, UR5E = piper(), ur5e()
#: An iteration budget, no time limit: outcomes do not depend on the machine's speed.
BUDGET = dict(timeout=None, max_iterations=20000)


def _moveit_holds(arm, request, q) -> bool:
    """FK of ``q`` meets the position target (1e-4 m) and MoveIt's rule for the constraint."""
    model, base, tip = arm
    T = frame_transform(model, q, base, tip)
    return np.linalg.norm(T[:3, 3] - request.T[:3, 3]) <= 1e-4 and request.constraint.excess(T) == 0.0


# ------------------------------------------------------------------ freed axes
def test_piper_freed_pitch_of_the_issue_solves_from_every_seed():
    """Issue 32, item 1: PiPER, link6 at (-0.006959, 0.001727, 0.419625), XYZ Euler tolerances
    (0.049898, π, 0.314015): was NO_IK_SOLUTION ('2.83 rad outside') from 5 of 31 seeds."""
    model, base, tip = PIPER
    T = np.eye(4)
    T[:3, 3] = (-0.006959, 0.001727, 0.419625)
    T[:3, :3] = Rotation.from_quat((-0.167734, 0.273425, -0.561001, 0.763140)).as_matrix()
    c = OrientationConstraint(tip, T[:3, :3], (0.049898, math.pi, 0.314015))
    seeds = [np.zeros(6)] + list(model.random_configuration(30, np.random.default_rng(1)))
    for seed in seeds:
        out = solve_constrained(model, [c], seed, base=base, poses={tip: T}, rng=0, **BUDGET)
        assert bool(out.result.success), [r.describe() for r in out.residuals]
        reached = frame_transform(model, out.result.q, base, tip)
        assert c.excess(reached) == 0.0 and np.linalg.norm(reached[:3, 3] - T[:3, 3]) <= 1e-4
        # the errors reported are the pose target's at q (its rotation is the constraint's: 0)
        assert float(out.result.position_error) == pytest.approx(np.linalg.norm(reached[:3, 3] - T[:3, 3]))
        assert float(out.result.rotation_error) == 0.0


@pytest.mark.parametrize("pattern", PATTERNS)
def test_freed_axis_patterns_solve_feasible_piper_requests(pattern):
    """Requests made from random configurations (so an answer exists), each pattern of freed XYZ
    Euler axes: every one solved (before: 33-70 % for y, xy, xz, yz)."""
    for k, request in enumerate(requests(PIPER, pattern, 6, seed=11)):
        model, base, tip = PIPER
        out = solve_constrained(model, [request.constraint], request.seed, base=base, poses={tip: request.T}, rng=k,
                                **BUDGET)
        assert bool(out.result.success) and _moveit_holds(PIPER, request, out.result.q), (k, out.residuals)


@pytest.mark.slow
@pytest.mark.parametrize("parameterization", [XYZ_EULER_ANGLES, ROTATION_VECTOR], ids=["euler", "rotvec"])
@pytest.mark.parametrize("arm", [PIPER, UR5E], ids=["piper", "ur5e"])
def test_freed_axis_patterns_solve_feasible_requests_on_two_6_dof_arms(arm, parameterization):
    """20 requests per pattern and arm: at least 119 of 120 solved, every answer held to
    MoveIt's rule (bench/bench_ik_constraints.py measures the rate on more)."""
    model, base, tip = arm
    solved = 0
    for pattern in PATTERNS:
        for k, request in enumerate(requests(arm, pattern, 20, seed=5, parameterization=parameterization)):
            out = solve_constrained(model, [request.constraint], request.seed, base=base, poses={tip: request.T},
                                    rng=k, **BUDGET)
            if bool(out.result.success):
                assert _moveit_holds(arm, request, out.result.q)
                solved += 1
    assert solved >= 119


def test_nearest_rotation_is_admitted_and_turns_a_pitch_past_a_half_turn_back():
    """A rotation turned 2.0 rad about a freed middle (y) axis has XYZ Euler angles (π, π - 2, π)
    in MoveIt's form: refused. The nearest admitted rotation is the same turn stopped short of
    π/2 (the second form, ``(a + π, π - b, c + π)``), not a turn back through 0."""
    R_desired = Rotation.from_euler("xyz", [0.3, -0.4, 1.1]).as_matrix()
    c = OrientationConstraint("tool", R_desired, (0.05, math.pi, 0.05))
    T = np.eye(4)
    T[:3, :3] = R_desired @ Rotation.from_euler("XYZ", [0.0, 2.0, 0.0]).as_matrix()
    assert c.excess(T) > 3.0
    T[:3, :3] = c.nearest(T[:3, :3])
    assert c.excess(T) == 0.0
    a, b, z = Rotation.from_matrix(R_desired.T @ T[:3, :3]).as_euler("XYZ")
    assert b == pytest.approx(0.5 * math.pi - PITCH_MARGIN, abs=1e-9)
    assert abs(a) < 1e-9 and abs(z) < 1e-9


@pytest.mark.parametrize("parameterization", [XYZ_EULER_ANGLES, ROTATION_VECTOR])
def test_nearest_and_admitted_rotations_hold_by_moveits_rule(parameterization):
    rng = np.random.default_rng(3)
    for _ in range(40):
        tolerances = tuple(math.pi if rng.random() < 0.4 else rng.uniform(0.0, 1.0) for _ in range(3))
        c = OrientationConstraint("tool", Rotation.random(random_state=rng).as_matrix(), tolerances, parameterization)
        T = np.eye(4)
        for k in range(8):
            T[:3, :3] = c.admitted(k)
            assert c.excess(T) == 0.0, (tolerances, k)
        T[:3, :3] = c.nearest(Rotation.random(random_state=rng).as_matrix())
        assert c.excess(T) == 0.0, tolerances


def test_a_rotation_already_admitted_is_its_own_nearest_within_the_margin():
    c = OrientationConstraint("tool", np.eye(3), (0.3, math.pi, 0.3))
    R = Rotation.from_euler("XYZ", [0.1, 1.2, -0.2]).as_matrix()
    np.testing.assert_allclose(c.nearest(R), R, atol=1e-12)


# ------------------------------------------------------------------ unions
def _union_case():
    """OMX: a reachable sphere around FK of a configuration and two regions the tool cannot
    reach (behind and below the base, within the reach bound); the seed's point is nearer the
    unreachable ones."""
    q_goal = OMX.random_configuration(rng=13)
    T = frame_transform(OMX, q_goal, OMX.root_link, "tool")
    behind, below = np.eye(4), np.eye(4)
    behind[:3, 3] = [-0.1, 0.0, -0.2]
    below[:3, :3] = Rotation.from_euler("xyz", [0.2, 0.4, 0.1]).as_matrix()
    below[:3, 3] = [-0.05, 0.05, -0.25]
    reachable = Region("box", (0.004, 0.006, 0.005), T)
    return [Region("cylinder", (0.01, 0.005), behind), Region("box", (0.01, 0.01, 0.01), below), reachable]


def _seed_near(point):
    """A seed whose tool point is nearer ``point`` than FK of the goal: the base turned away."""
    seed = OMX.home_configuration()
    seed[0] = math.pi * 0.9
    return seed


def _counted(monkeypatch):
    """The iterations of every solve a constrained call runs, counted outside it (its result's
    own count is checked against this)."""
    spent = []
    solve = constrained.solve_with_options

    def counting(*args, **kwargs):
        result = solve(*args, **kwargs)
        spent.append(int(result.iterations))
        return result

    monkeypatch.setattr(constrained, "solve_with_options", counting)
    return spent


def test_a_union_costs_about_its_reachable_member_wherever_it_is_listed(monkeypatch):
    """Issue 32, item 2: the reachable region third, the first two unreachable and nearer the
    seed's point: the call's solves cost what the reachable region alone costs plus one first
    round for each other (before: the first region took the whole budget, TIMED_OUT)."""
    regions = _union_case()
    seed = _seed_near(regions[0].T_base_region[:3, 3])
    spent = _counted(monkeypatch)
    alone = solve_constrained(OMX, [PositionConstraint("tool", (0.0, 0.0, 0.0), regions[2:])], seed, rng=0,
                              max_iterations=5000)
    assert bool(alone.result.success) and sum(spent) <= FIRST_ROUND
    alone_cost, spent[:] = sum(spent), []
    union = solve_constrained(OMX, [PositionConstraint("tool", (0.0, 0.0, 0.0), tuple(regions))], seed, rng=0,
                              max_iterations=5000)
    assert bool(union.result.success)
    assert union.residuals[0].satisfied
    assert sum(spent) <= alone_cost + 2 * FIRST_ROUND
    assert int(union.result.iterations) == sum(spent)


def test_a_union_tries_the_region_nearest_the_seed_first(monkeypatch):
    """Listed last but nearest the seed's point: solved by one solve, that of the region alone."""
    regions = _union_case()
    seed = OMX.random_configuration(rng=13) + 0.05
    spent = _counted(monkeypatch)
    alone = solve_constrained(OMX, [PositionConstraint("tool", (0.0, 0.0, 0.0), regions[2:])], seed, rng=0)
    union = solve_constrained(OMX, [PositionConstraint("tool", (0.0, 0.0, 0.0), tuple(regions))], seed, rng=0)
    assert bool(union.result.success)
    assert len(spent) == 2 and spent[0] == spent[1]
    np.testing.assert_array_equal(union.result.q, alone.result.q)


def test_an_unreachable_union_reports_its_nearest_residual_and_the_spent_budget():
    regions = _union_case()[:2]
    out = solve_constrained(OMX, [PositionConstraint("tool", (0.0, 0.0, 0.0), tuple(regions))], rng=0,
                            max_iterations=600)
    assert not bool(out.result.success)
    assert str(out.result.status) == "max_iterations" and int(out.result.iterations) >= 600
    assert out.residuals[0].excess > 0.01 and "m outside" in out.residuals[0].describe()


# ------------------------------------------------------------------ bounded requests
def test_a_thousand_position_constraints_are_refused_before_any_work(monkeypatch):
    """Issue 33, item 1: 1,000 PositionConstraints into solve_constrained(..., timeout=1) were a
    RecursionError after 25 s (833 MB): the solver's generated code grows with the tips. Now an
    IKOptionError naming the bound, before any model is built or solve run."""
    monkeypatch.setattr(constrained, "solve_with_options", lambda *a, **k: pytest.fail("solved"))
    monkeypatch.setattr(constrained, "_with_points", lambda *a, **k: pytest.fail("built"))
    region = (Region("sphere", (0.01,), np.eye(4)),)
    many = [PositionConstraint("tool", (0.0, 0.0, 0.001 * k), region) for k in range(1000)]
    with pytest.raises(IKOptionError, match=f"1000 constraints and 0 pose targets: at most {MAX_TIPS}"):
        solve_constrained(OMX, many, timeout=1)
    with pytest.raises(IKOptionError, match=f"at most {MAX_TIPS}"):
        solve_constrained(OMX, iter(many), timeout=1)   # (any iterable: counted before the rest)


def test_too_many_regions_and_foreign_objects_are_refused():
    regions = tuple(Region("sphere", (0.01,), np.eye(4)) for _ in range(MAX_REGIONS + 1))
    with pytest.raises(IKOptionError, match=f"{MAX_REGIONS + 1} regions over the position constraints"):
        solve_constrained(OMX, [PositionConstraint("tool", (0.0, 0.0, 0.0), regions)])
    with pytest.raises(IKOptionError, match=r"constraints\[1\] must be a PositionConstraint or an Orient"):
        solve_constrained(OMX, [OrientationConstraint("tool", np.eye(3), (0.1, 0.1, 0.1)), "tool"])


def test_two_orientation_constraints_on_one_link_name_it():
    c = OrientationConstraint("tool", np.eye(3), (0.1, 0.1, 0.1))
    with pytest.raises(IKOptionError, match="two orientation constraints on one link \\('tool'\\)") as info:
        solve_constrained(OMX, [c, c])
    assert info.value.argument == "constraints"


def test_no_free_joint_ends_the_search_at_once():
    """No joint may move: every solve returns without an iteration, and the search stops there
    (no time limit, so a search that went on would never end)."""
    T = frame_transform(OMX, OMX.home_configuration(), OMX.root_link, "tool")
    turned = OrientationConstraint("tool", T[:3, :3] @ Rotation.from_euler("x", 1.0).as_matrix(), (0.1, 0.1, math.pi))
    out = solve_constrained(OMX, [turned], poses={"tool": T}, active_joints=[], timeout=None)
    assert not bool(out.result.success)
    assert str(out.result.status) == "no_free_joints" and int(out.result.iterations) == 0
