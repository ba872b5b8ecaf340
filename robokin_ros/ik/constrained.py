"""IK under MoveIt-style position and orientation constraints (:mod:`.constraints`).

Each constraint becomes a tip of IK solves (:func:`~robokin_ros.ik.solve.solve`) with TRAC-IK
dead bands: an orientation constraint the tip's rotation target with per-axis bands (a tolerance
>= π frees the axis), a position constraint a tip at the link's point (a fixed frame added to
the model when the point is not the link origin) aimed at a region's centre with the region's
inscribed box as band. A full pose target of the same link keeps what no constraint replaces.
The answer succeeds only when FK of the solution satisfies every constraint (checked after the
solve, as MoveIt's validity callback does); the residual of each is reported.

The search, within one budget (the call's ``timeout`` from its start, model building included,
and ``max_iterations`` over all its solves):

- *attempts*: the regions of the position constraints (a union each) by rank, nearest the
  seed's point first, regions out of the chain's reach last; a call with one attempt gives it the
  whole budget, several share it in rounds, each round giving every attempt twice the iterations
  of the round before (:data:`FIRST_ROUND` first), so a union costs about what its easiest
  member costs, whatever the order of its regions;
- in an attempt: (1) the dead-band solve (on a link with a pose target, an XYZ Euler constraint
  with freed axes held by points along the link's axes: :func:`_euler_point_entries`), retried
  with halved bands while the check refuses (:data:`EULER_RETRIES`); (2) when it still refuses,
  each orientation constraint's target becomes the rotation it admits nearest the answer
  (:meth:`OrientationConstraint.nearest <robokin_ros.ik.constraints.OrientationConstraint.nearest>`)
  solved exactly from the answer (:data:`PROJECTIONS` times): the rotation vector the solver
  bands is not the XYZ Euler angles MoveIt checks (a freed middle axis spans ±π/2 only); (3) then
  :data:`SWEEP` rotations spread over what each orientation constraint admits, solved exactly
  from the seed and from the answer.

Bounds: at most :data:`MAX_TIPS` tips (pose targets and constraints: the solver's generated code
grows with them) and :data:`MAX_REGIONS` regions per call, refused before any work.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from .. import model_cache
from ..errors import IKOptionError
from ..kinematics import forward_kinematics
from ..model import RobotModel
from ..spatial import log_so3, transform
from .budget import CancelToken
from .constraints import (
    XYZ_EULER_ANGLES,
    OrientationConstraint,
    PositionConstraint,
    Residual,
)
from .options import IKOptions, clamped_seeds, effective_bounds
from .reach import reach_upper_bound
from .result import CONVERGED, MAX_ITERATIONS, TIMEOUT, IKResult
from .solve import solve_with_options

Array = NDArray[np.float64]

#: [m] distance of the point that holds the approach axis of a constraint with one free axis.
AXIS_LENGTH = 0.1
#: [s] least time an attempt gets once the call's timeout is spent (one more short try).
MIN_ATTEMPT = 1e-3
#: The registry kind of the models with a fixed frame at each constrained point (see :func:`_with_points`).
IK_CONSTRAINT_POINTS = "ik constraint points"
#: Models with constraint points kept per robot (each has kernels of its own: a heavy kind).
POINT_MODELS = 8
#: Retries with halved rotation bands when the solver's rotation-vector band admits an answer
#: the constraint's XYZ Euler angles refuse.
EULER_RETRIES = 3
#: Solves on the nearest admitted rotations (step 2 of an attempt).
PROJECTIONS = 3
#: Rotation targets tried in step 3 of an attempt.
SWEEP = 32
#: Iterations each attempt gets in the first round when several share the budget (doubled each round).
FIRST_ROUND = 64
#: Most tips of one call: its pose targets and its position and orientation constraints.
MAX_TIPS = 32
#: Most regions (primitives) over the position constraints of one call.
MAX_REGIONS = 256


@dataclasses.dataclass(frozen=True)
class ConstrainedResult:
    """:class:`IKResult` whose ``success`` includes the check, and each constraint's :class:`Residual`.

    ``result.iterations`` counts every solve of the call; ``result.position_error`` and
    ``rotation_error`` are the worst errors of the pose targets at ``q``, over what no constraint
    replaces (0 where nothing is left: the constraints' own are the residuals)."""

    result: IKResult
    residuals: tuple[Residual, ...]


def _with_points(model: RobotModel, points: tuple[tuple[str, tuple[float, ...]], ...]) -> RobotModel:
    """``model`` with a fixed frame ``_robokin_point<k>`` at each ``(link, offset)`` (kept in
    :mod:`robokin_ros.model_cache`, at most :data:`POINT_MODELS`; joint order unchanged)."""
    def build() -> RobotModel:
        out = model
        for k, (link, offset) in enumerate(points):
            out = out.add_body(link, f"_robokin_point{k}_joint", "fixed", f"_robokin_point{k}",
                               origin=transform(p=np.array(offset)))
        return out
    return model_cache.cached(model, IK_CONSTRAINT_POINTS, points, build, bound=POINT_MODELS)


def residuals(model: RobotModel, q: Array, base: str | None, constraints: Sequence) -> tuple[Residual, ...]:
    """Each constraint's :class:`Residual` at ``q (n_q,)`` (poses in the ``base`` frame)."""
    T = _link_poses(model, q, base)
    return tuple(Residual(c, c.excess(T[model.link_index(c.link)])) for c in constraints)


def _link_poses(model: RobotModel, q: Array, base: str | None) -> Array:
    """``(n_links, 4, 4)`` every link's pose in the ``base`` frame at ``q``."""
    T = forward_kinematics(model, q)
    return np.linalg.inv(T[model.link_index(base) if base else 0]) @ T


def check_constraints(constraints: Sequence, poses: Mapping) -> tuple:
    """``constraints`` as a tuple, checked before any work: their kinds, their number (with the
    pose targets, at most :data:`MAX_TIPS`), their regions (at most :data:`MAX_REGIONS`), one
    orientation constraint per link, something to solve.

    Raises:
        IKOptionError: naming what is wrong.
    """
    given = len(constraints) if isinstance(constraints, Sequence) else None
    if given is not None and given + len(poses) > MAX_TIPS:
        raise IKOptionError(f"{given} constraints and {len(poses)} pose targets: at most {MAX_TIPS} in one call "
                            "(each is a tip of the solve)", "constraints")
    constraints = tuple(constraints)
    if len(constraints) + len(poses) > MAX_TIPS:
        raise IKOptionError(f"{len(constraints)} constraints and {len(poses)} pose targets: at most {MAX_TIPS} in "
                            "one call (each is a tip of the solve)", "constraints")
    for k, c in enumerate(constraints):
        if not isinstance(c, (PositionConstraint, OrientationConstraint)):
            raise IKOptionError(f"constraints[{k}] must be a PositionConstraint or an OrientationConstraint, "
                                f"got {type(c).__name__}", "constraints")
    regions = sum(len(c.regions) for c in constraints if isinstance(c, PositionConstraint))
    if regions > MAX_REGIONS:
        raise IKOptionError(f"{regions} regions over the position constraints: at most {MAX_REGIONS} in one call",
                            "constraints")
    links = [c.link for c in constraints if isinstance(c, OrientationConstraint)]
    if len(set(links)) != len(links):
        twice = sorted({link for link in links if links.count(link) > 1})
        raise IKOptionError(f"two orientation constraints on one link ({', '.join(map(repr, twice))}): "
                            "give one per link", "constraints")
    if not poses and not constraints:
        raise IKOptionError("nothing to solve: no pose target and no constraint")
    return constraints


@dataclasses.dataclass(frozen=True)
class _Layout:
    """How a call's constraints become tips: the pose targets (link → ``(4, 4)``), the
    orientation and position constraints, the tip of each position constraint, the links whose
    one free rotation-vector axis is held by a point (link → (tip, axis)), and the links whose
    XYZ Euler constraint with freed axes is held by points on their axes (link → {axis: tip},
    see :func:`_euler_point_entries`)."""

    poses: dict
    orientations: list
    positions: list
    point_tips: list
    axis_tips: dict
    euler_tips: dict


def solve_constrained(model: RobotModel, constraints: Sequence, seed=None, *, base: str | None = None,
                      poses: Mapping[str, Array] | None = None, position_tolerance: float = 1e-5,
                      rotation_tolerance: float = 1e-5, cancel: CancelToken | None = None,
                      **options) -> ConstrainedResult:
    """Solve full pose targets ``poses`` (link → ``T_base_link (4, 4)``) under ``constraints``
    (:class:`PositionConstraint`, :class:`OrientationConstraint`, poses in the ``base`` frame).

    A constraint on a link with a pose target replaces that part of it (an orientation constraint
    its rotation, a position constraint its position); constraints on other links add tips.
    ``options`` are :func:`~robokin_ros.ik.solve_ik`'s (``active_joints``, ``lower``, ``upper``,
    ``timeout``, ``objective``, ... : fields of :class:`~robokin_ros.ik.options.IKOptions`, but
    ``axis_tolerances``, which the constraints set: IKOptionError); ``timeout`` [s] is the whole
    call's, from its start, and ``max_iterations`` counts every solve of the call (see the
    module's search). The result succeeds when a solve converged and every constraint holds at
    FK of ``q``; else it is the attempt with the smallest residuals, status ``"timeout"`` or
    ``"max_iterations"`` when the budget ran out. Cancelling ``cancel`` (a
    :class:`~robokin_ros.ik.budget.CancelToken`) ends the call as a timeout would.

    Raises:
        IKOptionError: see :func:`check_constraints`; ``axis_tolerances`` given; or what
            :func:`~robokin_ros.ik.solve_ik` raises.
    """
    start_time = time.perf_counter()
    poses = dict(poses or {})
    constraints = check_constraints(constraints, poses)
    orientations = [c for c in constraints if isinstance(c, OrientationConstraint)]
    positions = [c for c in constraints if isinstance(c, PositionConstraint)]
    for c in constraints:
        model.link_index(c.link)
    if "axis_tolerances" in options:
        raise IKOptionError("axis_tolerances: the constraints set them; give constraints instead", "axis_tolerances")
    opts = IKOptions(base=base, position_tolerance=position_tolerance, rotation_tolerance=rotation_tolerance,
                     **options)
    start = model.home_configuration() if seed is None else model.check_q(seed, "seed")
    budget = _Budget(None if opts.timeout is None else start_time + opts.timeout, opts.max_iterations, cancel)
    points, layout = _layout(poses, orientations, positions)
    solve_model = _with_points(model, tuple(points)) if points else model
    return _Search(model, solve_model, layout, constraints, opts, budget=budget, seed=seed, start=start).run()


@dataclasses.dataclass
class _Budget:
    """What is left of a call's budget: its deadline (None: none), iterations, cancel token."""

    deadline: float | None
    iterations: int
    cancel: CancelToken | None
    used: int = 0

    def spent(self) -> bool:
        return (self.used >= self.iterations or self.cancel is not None and self.cancel.cancelled
                or self.deadline is not None and time.perf_counter() > self.deadline)

    def timeout(self) -> float | None:
        return None if self.deadline is None else max(self.deadline - time.perf_counter(), MIN_ATTEMPT)


@dataclasses.dataclass
class _Outcome:
    """One solve: its result, the constraints' residuals at its ``q``, whether all hold."""

    result: IKResult
    residuals: tuple
    ok: bool

    @property
    def worse(self) -> float:
        return 0.0 if self.ok else (sum(r.excess for r in self.residuals) + float(self.result.position_error)
                                    + float(self.result.rotation_error))


class _Search:
    """One call's attempts (see the module docstring), within its :class:`_Budget`."""

    def __init__(self, model, solve_model, layout: _Layout, constraints, opts: IKOptions, *, budget: _Budget, seed,
                 start: Array):
        self.model, self.solve_model, self.layout, self.constraints = model, solve_model, layout, constraints
        self.opts, self.budget, self.seed, self.start = opts, budget, seed, start
        self.best: _Outcome | None = None

    def run(self) -> ConstrainedResult:
        ranks = self._ranks()
        limit = FIRST_ROUND
        while True:
            # (one attempt: its first solve may take the whole budget; several share it)
            first, used = self.budget.iterations if len(ranks) == 1 else limit, self.budget.used
            for regions in ranks:
                if self._attempt(regions, first, limit) or self.budget.spent():
                    return self._answer()
            if self.budget.used == used:   # (no solve iterated: no free joint, nothing more to find)
                return self._answer()
            limit *= 2

    def _answer(self) -> ConstrainedResult:
        best = self.best
        status = best.result.status
        if not best.ok and self.budget.spent():
            status = np.asarray(MAX_ITERATIONS if self.budget.used >= self.budget.iterations else TIMEOUT)
        result = dataclasses.replace(best.result, success=np.asarray(best.ok), status=status,
                                     iterations=np.asarray(self.budget.used))
        return ConstrainedResult(result, best.residuals)

    def _ranks(self) -> list[list]:
        """The region of each position constraint in each attempt: by rank, nearest the seed's
        point first, those beyond the chain's reach after the others (one attempt without unions)."""
        positions = self.layout.positions
        if not positions:
            return [[]]
        T = _link_poses(self.model, self.start, self.opts.base)
        ordered = []
        for c in positions:
            T_link = T[self.model.link_index(c.link)]
            point = T_link[:3, :3] @ np.array(c.offset) + T_link[:3, 3]
            reach = reach_upper_bound(self.model, self.opts.base or self.model.root_link, c.link) + float(
                np.linalg.norm(c.offset))
            ordered.append(sorted(c.regions, key=lambda r: (
                float(np.linalg.norm(r.T_base_region[:3, 3])) - r.outer_radius() > reach, r.excess(point))))
        return [[regions[min(k, len(regions) - 1)] for regions in ordered]
                for k in range(max(len(regions) for regions in ordered))]

    def _attempt(self, regions: list, first: int, limit: int) -> bool:
        """Steps (1)-(3) of one attempt with these ``regions``, the solves of step (1) at most
        ``first`` iterations each, the others ``limit``; whether it found an answer."""
        outcome = self._solve(regions, 1.0, None, self.seed, first)
        if outcome.ok or not bool(outcome.result.success) or self.budget.spent() or not self.layout.orientations:
            return outcome.ok
        q, shrink = outcome.result.q, 1.0
        for _ in range(EULER_RETRIES):
            shrink *= 0.5
            outcome = self._solve(regions, shrink, None, q, limit)
            if outcome.ok or self.budget.spent():
                return outcome.ok
            if not bool(outcome.result.success):
                break
            q = outcome.result.q
        for _ in range(PROJECTIONS):   # (the check refuses what the bands admit: the nearest admitted rotations)
            T = _link_poses(self.model, q, self.opts.base)
            rotations = {c.link: c.nearest(T[self.model.link_index(c.link), :3, :3]) for c in self.layout.orientations}
            outcome = self._solve(regions, 1.0, rotations, q, limit)
            if outcome.ok or self.budget.spent():
                return outcome.ok
            q = outcome.result.q
        # (from the seed too: the band solve's answer may sit where the solver cannot turn, a singularity)
        for rotations in _sweep(self.layout.orientations):
            for start in (self.seed, q):
                outcome = self._solve(regions, 1.0, rotations, start, limit)
                if outcome.ok or self.budget.spent():
                    return outcome.ok
        return False

    def _solve(self, regions: list, shrink: float, rotations: dict | None, seed, limit: int) -> _Outcome:
        """One solve, at most ``limit`` iterations; the best so far kept."""
        tips, targets, bands = _tips(self.layout, regions, shrink, self.opts, rotations)
        if not tips:  # every axis of every target free: the seed is an answer
            result = _unmoved(self.model, self.start, self.opts)
        else:
            iterations = max(1, min(limit, self.budget.iterations - self.budget.used))
            attempt = dataclasses.replace(self.opts, axis_tolerances=np.stack(bands), timeout=self.budget.timeout(),
                                          max_iterations=iterations)
            result = solve_with_options(self.solve_model, np.stack(targets), tips, seed, attempt, self.budget.cancel)
            self.budget.used += int(result.iterations)
        T = _link_poses(self.model, result.q, self.opts.base)
        found = tuple(Residual(c, c.excess(T[self.model.link_index(c.link)])) for c in self.constraints)
        position, rotation = _pose_errors(self.layout, T, self.model)
        result = dataclasses.replace(result, position_error=np.asarray(position), rotation_error=np.asarray(rotation))
        outcome = _Outcome(result, found, bool(result.success) and all(r.satisfied for r in found))
        if self.best is None or outcome.worse < self.best.worse:
            self.best = outcome
        return outcome


def _pose_errors(layout: _Layout, T: Array, model: RobotModel) -> tuple[float, float]:
    """[m, rad] the worst position and rotation errors of the pose targets at the link poses
    ``T (n_links, 4, 4)``, over what no constraint replaces (0 where nothing is left)."""
    position, rotation = 0.0, 0.0
    for link, T_target in layout.poses.items():
        T_link = T[model.link_index(link)]
        if all(c.link != link for c in layout.positions):
            position = max(position, float(np.linalg.norm(T_link[:3, 3] - np.asarray(T_target)[:3, 3])))
        if all(c.link != link for c in layout.orientations):
            R_error = np.asarray(T_target)[:3, :3].T @ T_link[:3, :3]
            rotation = max(rotation, float(np.linalg.norm(log_so3(R_error))))
    return position, rotation


def _sweep(orientations: list):
    """Step (3): :data:`SWEEP` rotation targets (link → ``R_base (3, 3)``) spread over what each
    orientation constraint admits (:meth:`~.constraints.OrientationConstraint.admitted`)."""
    for k in range(SWEEP):
        yield {c.link: c.admitted(k) for c in orientations}


def _layout(poses: dict, orientations: list, positions: list) -> tuple[list, _Layout]:
    """The points to add to the model (``(link, offset)``) and the call's :class:`_Layout`."""
    # The point tips: a position constraint on a link origin without another tip is the link itself.
    points, point_tips = [], []
    for c in positions:
        alone = (not any(c.offset) and c.link not in poses and all(o.link != c.link for o in orientations)
                 and sum(p.link == c.link for p in positions) == 1)
        if alone:
            point_tips.append(c.link)
        else:
            point_tips.append(f"_robokin_point{len(points)}")
            points.append((c.link, tuple(float(x) for x in c.offset)))
    # Freed axes on a link with a pose target: the rotation is held by points along the link's axes
    # (position rows: no rotation logarithm, singular at π about a free axis).
    axis_tips, euler_tips = {}, {}
    for c in orientations:
        if c.link not in poses or any(p.link == c.link for p in positions):
            continue
        free = [t >= math.pi for t in c.tolerances]
        if c.parameterization == XYZ_EULER_ANGLES and any(free):
            axes = ([2] if not (free[0] and free[1]) else []) + ([0, 1] if not free[2] else [])
            euler_tips[c.link] = {}
            for axis in axes:
                euler_tips[c.link][axis] = f"_robokin_point{len(points)}"
                points.append((c.link, tuple(AXIS_LENGTH * np.eye(3)[axis])))
        elif sum(free) == 1:
            axis_tips[c.link] = (f"_robokin_point{len(points)}", free.index(True))
            offset = [0.0, 0.0, 0.0]
            offset[free.index(True)] = AXIS_LENGTH
            points.append((c.link, tuple(offset)))
    return points, _Layout(poses, orientations, positions, point_tips, axis_tips, euler_tips)


def _euler_point_entries(c: OrientationConstraint, tips: dict, T_pose: Array, shrink: float,
                         position_tolerance: float) -> dict:
    """Tip → [target ``(4, 4)``, band ``(6,)``] of the points along a link's axes that hold an XYZ
    Euler constraint with freed axes (the link's position held by its pose ``T_pose``), bands in
    the desired frame's axes. With ``R = R_desiredᵀ R_link = Rx(a) Ry(b) Rz(c)``, the point on the
    link's z axis is at ``L (sin b, -sin a cos b, cos a cos b)`` and the x of the points on its x
    and y axes are ``L cos b cos c`` and ``-L cos b sin c``. So ``b`` bounds the x of the z-axis
    point (exact); ``a`` its y (exact at ``b = 0``), its z kept > 0 (above ``L cos a cos b`` at the
    bounds); ``c`` the x of the y-axis point (exact at ``b = 0``), the x-axis point's x kept >= 0
    (``a`` and ``c`` within ±π/2); ``shrink`` scales the inexact bands. ``b`` (an ``atan2`` of a
    non-negative second argument) never leaves ±π/2: a freed middle axis is free."""
    L, t = AXIS_LENGTH, [min(x, 0.5 * math.pi) for x in c.tolerances]
    free = [x >= math.pi for x in c.tolerances]
    out = {}
    for axis, tip in tips.items():
        centre, half = np.zeros(3), np.full(3, math.inf)
        if axis == 2:
            if not free[1]:
                half[0] = L * math.sin(t[1])
            if not free[0]:   # (z from L cos a cos b up: > 0, and near L when b is bounded too)
                low = L * math.cos(shrink * t[0]) * math.cos(t[1] if not free[1] else 0.5 * math.pi)
                centre[2], half[1], half[2] = 0.5 * (L + low), L * math.sin(shrink * t[0]), 0.5 * (L - low)
        elif axis == 1:
            half[0] = L * math.sin(shrink * t[2])
        else:
            centre[0], half[0] = 0.5 * L, 0.5 * L
        T = np.array(T_pose, float)
        T[:3, :3] = c.R_base_desired
        T[:3, 3] += c.R_base_desired @ centre
        out[tip] = [T, np.concatenate([np.maximum(half - position_tolerance, 0.0), [math.inf] * 3])]
    return out


def _unmoved(model: RobotModel, start: Array, options: IKOptions) -> IKResult:
    """The seed (clamped into the bounds) as a converged result: nothing is asked of any axis."""
    q = clamped_seeds(model, start, *effective_bounds(model, options.lower, options.upper))
    return IKResult(q, np.asarray(True), np.asarray(0.0), np.asarray(0.0),
                    np.asarray(0), np.asarray(CONVERGED))


def _tips(layout: _Layout, regions: list, shrink: float, options: IKOptions, rotations: dict | None = None):
    """Tip names, targets ``(4, 4)`` and dead bands ``(6,)`` of one solve: each position
    constraint aimed at its region of ``regions``, each orientation constraint's band scaled by
    ``shrink``, or its target the rotation of ``rotations`` (link → ``(3, 3)``), band 0."""
    position_tolerance, rotation_tolerance = options.position_tolerance, options.rotation_tolerance
    axis_tips = layout.axis_tips if rotations is None else {}
    euler_tips = layout.euler_tips if rotations is None else {}
    entries: dict[str, list] = {link: [np.array(T, float), np.zeros(6)] for link, T in layout.poses.items()}
    for c in layout.orientations:
        band = np.maximum(shrink * c.dead_band() - rotation_tolerance, 0.0)
        if c.link in euler_tips:
            entries[c.link][1][3:] = math.inf
            entries.update(_euler_point_entries(c, euler_tips[c.link], entries[c.link][0], shrink,
                                                position_tolerance))
            continue
        if c.link in axis_tips:  # the point on the free axis: turning by a about axis j moves it L sin a
            tip, free = axis_tips[c.link]
            T = np.array(entries[c.link][0])
            T[:3, :3] = c.R_base_desired
            T[:3, 3] += c.R_base_desired[:, free] * AXIS_LENGTH
            turn = np.minimum(band, 0.5 * math.pi)
            point_band = np.zeros(3)
            for j in range(3):
                if j != free:
                    point_band[3 - j - free] = AXIS_LENGTH * math.sin(turn[j])
            point_band[free] = AXIS_LENGTH * (1.0 - math.cos(float(turn[[j for j in range(3) if j != free]].max())))
            entries[c.link][1][3:] = math.inf
            entries[tip] = [T, np.concatenate([np.maximum(point_band - position_tolerance, 0.0), [math.inf] * 3])]
            continue
        if c.link not in entries:
            entries[c.link] = [np.eye(4), np.array([math.inf] * 3 + [0.0] * 3)]
        entries[c.link][0][:3, :3] = c.R_base_desired if rotations is None else rotations[c.link]
        entries[c.link][1][3:] = band if rotations is None else 0.0
    for c, tip, r in zip(layout.positions, layout.point_tips, regions):
        if c.link in entries:
            entries[c.link][1][:3] = math.inf  # the region replaces the pose's position
        entries[tip] = [np.array(r.T_base_region, float),
                        np.concatenate([np.maximum(r.inscribed_box() - position_tolerance, 0.0), [math.inf] * 3])]
    entries = {k: v for k, v in entries.items() if np.isfinite(v[1]).any()}
    tips = list(entries)
    return tips, [entries[t][0] for t in tips], [entries[t][1] for t in tips]
