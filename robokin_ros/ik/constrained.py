"""IK under MoveIt-style position and orientation constraints (:mod:`.constraints`).

Each constraint becomes a tip of one IK solve (:func:`~robokin_ros.ik.solve.solve`) with TRAC-IK
dead bands: an orientation constraint the tip's rotation target with per-axis bands (a tolerance
>= π frees the axis), a position constraint a tip at the link's point (a fixed frame added to
the model when the point is not the link origin) aimed at the region's centre with the region's
inscribed box as band. A full pose target of the same link keeps what no constraint replaces.
The answer succeeds only when FK of the solution satisfies every constraint (checked after the
solve, as MoveIt's validity callback does); the residual of each is reported.
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
from ..spatial import transform
from .budget import CancelToken
from .constraints import OrientationConstraint, PositionConstraint, Residual
from .options import IKOptions, clamped_seeds, effective_bounds
from .result import CONVERGED, IKResult
from .solve import solve

Array = NDArray[np.float64]

#: [m] distance of the point that holds the approach axis of a constraint with one free axis.
AXIS_LENGTH = 0.1
#: [s] least time an attempt gets once the call's timeout is spent (one more short try).
MIN_ATTEMPT = 1e-3
#: The registry kind of the models with a fixed frame at each constrained point (see :func:`_with_points`).
IK_CONSTRAINT_POINTS = "ik constraint points"
#: Retries with halved rotation bands when the solver's rotation-vector band admits an answer
#: the constraint's XYZ Euler angles refuse.
EULER_RETRIES = 3


@dataclasses.dataclass(frozen=True)
class ConstrainedResult:
    """:class:`IKResult` whose ``success`` includes the check, and each constraint's :class:`Residual`."""

    result: IKResult
    residuals: tuple[Residual, ...]


def _with_points(model: RobotModel, points: tuple[tuple[str, tuple[float, ...]], ...]) -> RobotModel:
    """``model`` with a fixed frame ``_robokin_point<k>`` at each ``(link, offset)`` (kept in
    :mod:`robokin_ros.model_cache`; joint order unchanged)."""
    def build() -> RobotModel:
        out = model
        for k, (link, offset) in enumerate(points):
            out = out.add_body(link, f"_robokin_point{k}_joint", "fixed", f"_robokin_point{k}",
                               origin=transform(p=np.array(offset)))
        return out
    return model_cache.cached(model, IK_CONSTRAINT_POINTS, points, build)


def residuals(model: RobotModel, q: Array, base: str | None, constraints: Sequence) -> tuple[Residual, ...]:
    """Each constraint's :class:`Residual` at ``q (n_q,)`` (poses in the ``base`` frame)."""
    T = forward_kinematics(model, q)
    T_base_world = np.linalg.inv(T[model.link_index(base) if base else 0])
    return tuple(Residual(c, c.excess(T_base_world @ T[model.link_index(c.link)])) for c in constraints)


@dataclasses.dataclass(frozen=True)
class _Layout:
    """How a call's constraints become tips: the pose targets (link → ``(4, 4)``), the
    orientation and position constraints, the tip of each position constraint, and the links
    whose one free axis is held by a point (link → (tip, axis))."""

    poses: dict
    orientations: list
    positions: list
    point_tips: list
    axis_tips: dict


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
    ``axis_tolerances``, which the constraints set: IKOptionError). The result succeeds when the solve converged
    and every constraint holds at FK of ``q``. Cancelling ``cancel`` (a
    :class:`~robokin_ros.ik.budget.CancelToken`) ends the solve as a timeout would.

    Raises:
        IKOptionError: nothing to solve, two orientation constraints on one link, or what
            :func:`~robokin_ros.ik.solve_ik` raises.
    """
    poses = dict(poses or {})
    orientations = [c for c in constraints if isinstance(c, OrientationConstraint)]
    positions = [c for c in constraints if isinstance(c, PositionConstraint)]
    if len({c.link for c in orientations}) != len(orientations):
        raise IKOptionError("two orientation constraints on one link: give one per link")
    if not poses and not constraints:
        raise IKOptionError("nothing to solve: no pose target and no constraint")
    for c in list(orientations) + list(positions):
        model.link_index(c.link)
    if "axis_tolerances" in options:
        raise IKOptionError("axis_tolerances: the constraints set them; give constraints instead", "axis_tolerances")
    opts = IKOptions(base=base, position_tolerance=position_tolerance, rotation_tolerance=rotation_tolerance,
                     **options)
    points, layout = _layout(poses, orientations, positions)
    solve_model = _with_points(model, tuple(points)) if points else model
    start = model.home_configuration() if seed is None else model.check_q(seed, "seed")
    deadline = None if opts.timeout is None else time.perf_counter() + opts.timeout
    result, found = None, ()
    for region in range(max((len(c.regions) for c in positions), default=1)):
        shrink = 1.0
        for _ in range(EULER_RETRIES + 1):
            tips, targets, bands = _tips(layout, region, shrink, opts)
            seed_now = seed if result is None or not bool(result.success) else result.q
            if not tips:  # every axis of every target free: the seed is an answer
                result = _unmoved(model, start, opts)
                found = residuals(model, result.q, base, constraints)
                break
            # (the attempts share the call's timeout; each gets what is left)
            left = None if deadline is None else max(deadline - time.perf_counter(), MIN_ATTEMPT)
            attempt = dataclasses.replace(opts, axis_tolerances=np.stack(bands), timeout=left)
            result = solve(solve_model, np.stack(targets), tips, seed_now, attempt, cancel)
            found = residuals(model, result.q, base, constraints)
            if not bool(result.success) or all(r.satisfied for r in found):
                break
            shrink *= 0.5
        if bool(result.success) and all(r.satisfied for r in found) or (
                deadline is not None and time.perf_counter() > deadline) or cancel is not None and cancel.cancelled:
            break
    ok = bool(result.success) and all(r.satisfied for r in found)
    return ConstrainedResult(dataclasses.replace(result, success=np.asarray(ok)), found)


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
    # One free axis on a link with a pose target: the approach is held by a point AXIS_LENGTH along
    # that axis (position rows: no rotation logarithm, singular at π about the free axis).
    axis_tips = {}
    for c in orientations:
        free = _free_axis(c)
        if free is not None and c.link in poses and all(p.link != c.link for p in positions):
            axis_tips[c.link] = (f"_robokin_point{len(points)}", free)
            offset = [0.0, 0.0, 0.0]
            offset[free] = AXIS_LENGTH
            points.append((c.link, tuple(offset)))
    return points, _Layout(poses, orientations, positions, point_tips, axis_tips)


def _unmoved(model: RobotModel, start: Array, options: IKOptions) -> IKResult:
    """The seed (clamped into the bounds) as a converged result: nothing is asked of any axis."""
    q = clamped_seeds(model, start, *effective_bounds(model, options.lower, options.upper))
    return IKResult(q, np.asarray(True), np.asarray(0.0), np.asarray(0.0),
                    np.asarray(0), np.asarray(CONVERGED))


def _free_axis(c: OrientationConstraint) -> int | None:
    """The axis (0-2) of ``c`` with a tolerance >= π when it is the only one, else None."""
    free = [i for i, t in enumerate(c.tolerances) if t >= math.pi]
    return free[0] if len(free) == 1 else None


def _tips(layout: _Layout, region: int, shrink: float, options: IKOptions):
    """Tip names, targets ``(4, 4)`` and dead bands ``(6,)`` of one attempt."""
    position_tolerance, rotation_tolerance = options.position_tolerance, options.rotation_tolerance
    axis_tips = layout.axis_tips
    entries: dict[str, list] = {link: [np.array(T, float), np.zeros(6)] for link, T in layout.poses.items()}
    for c in layout.orientations:
        band = np.maximum(shrink * c.dead_band() - rotation_tolerance, 0.0)
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
        entries[c.link][0][:3, :3] = c.R_base_desired
        entries[c.link][1][3:] = band
    for c, tip in zip(layout.positions, layout.point_tips):
        if c.link in entries:
            entries[c.link][1][:3] = math.inf  # the region replaces the pose's position
        r = c.regions[min(region, len(c.regions) - 1)]
        entries[tip] = [np.array(r.T_base_region, float),
                        np.concatenate([np.maximum(r.inscribed_box() - position_tolerance, 0.0), [math.inf] * 3])]
    entries = {k: v for k, v in entries.items() if np.isfinite(v[1]).any()}
    tips = list(entries)
    return tips, [entries[t][0] for t in tips], [entries[t][1] for t in tips]
