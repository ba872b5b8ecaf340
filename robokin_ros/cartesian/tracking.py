"""Continuation IK along one straight segment, with a proof of continuity between every pair.

:class:`Tracker` solves the poses of a segment in runs of up to :data:`MAX_RUN` points at once
(the batched :func:`robokin_ros.ik.solve_ik`, each point seeded by extrapolating the last two
accepted points), then checks each consecutive pair: both solved, each point valid
(:class:`~.checks.StateChecks`) and the FK of the joint-space midpoint between them within
``max_deviation`` [m] of the straight line and ``maxrotation_deviation`` [rad] of
the slerp — a branch switch or a pass through a singularity moves the tip off the line between
the two points, so no accepted pair is one. The leading pairs that pass are kept; the first one
that does not is refined (:meth:`Tracker.refine`): the point is solved again from the last
accepted one, and while it fails the step is halved and each half tracked (at most
:data:`MAX_DEPTH` times; the midpoints become points of the path). What still fails stops the
segment, before the failing point, with the status and the reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from ..ik import IKOptions, reach_upper_bound, solve_ik
from ..kinematics import forward_kinematics
from ..model import RobotModel
from ..spatial import matrix_to_quat_xyzw
from .checks import JOINT_LIMIT, StateChecks
from .interpolation import line_deviation

Array = np.ndarray

#: Points solved together (the run doubles from :data:`FIRST_RUN` while every pair passes).
MAX_RUN = 128
FIRST_RUN = 16
#: Halvings of one step by :meth:`Tracker.refine` before it gives up (1/32 of a step).
MAX_DEPTH = 5

COMPLETE = 'complete'
UNREACHABLE = 'unreachable'
NO_IK_SOLUTION = 'no_ik_solution'
DISCONTINUITY = 'discontinuity'


@dataclasses.dataclass(frozen=True)
class Deviation:
    """The largest deviation of the joint-space interpolation from the path: ``position`` [m]
    from the straight line, ``rotation`` [rad] from the slerp."""

    position: float = 1e-3
    rotation: float = 1e-2


@dataclasses.dataclass
class Track:
    """Points accepted along a segment: ``q``, path parameter ``s`` in [0, 1] and target pose
    ``T`` (base frame) of each; ``status`` and ``message`` say why it ended early ('' : it did not)."""

    q: list
    s: list
    T: list
    status: str = ''
    message: str = ''

    def add(self, q: Array, s: float, T: Array) -> None:
        self.q.append(q)
        self.s.append(s)
        self.T.append(T)

    def extend(self, Q: Array, s: Array, T: Array) -> None:
        self.q.extend(Q)
        self.s.extend(s.tolist())
        self.T.extend(T)


class Tracker:
    """Continuation IK of ``tip`` of ``model`` with ``options`` (base, bounds, tolerances).

    Args:
        checks: what every point must satisfy. deviation: the continuity bound.
    """

    def __init__(self, model: RobotModel, tip: str, options: IKOptions, checks: StateChecks,
                 deviation: Deviation):
        self.model, self.tip, self.options, self.checks, self.deviation = model, tip, options, checks, deviation
        self._frames = [tip] if options.base is None else [options.base, tip]
        self.solves = 0

    # ------------------------------------------------------------------ kinematics
    def tip_poses(self, Q: Array) -> Array:
        """``(k, 4, 4)`` the tip's pose in the base frame at ``Q (k, n_q)``."""
        T = forward_kinematics(self.model, Q, frames=self._frames)
        return T[:, 0] if len(self._frames) == 1 else np.linalg.solve(T[:, 0], T[:, 1])

    def solve(self, targets: Array, seeds: Array) -> tuple[Array, Array]:
        """``(k, n_q)`` solutions of ``targets (k, 4, 4)`` from ``seeds (k, n_q)`` and ``(k,)`` success."""
        self.solves += 1
        result = solve_ik(self.model, targets, self.tip, seeds, options=self.options)
        return result.q, np.asarray(result.success)

    def continuous(self, q_a: Array, T_a: Array, Q: Array, T: Array) -> Array:
        """``(k,)`` bool: each pair (previous point, ``Q[i]``) — the first's previous is ``q_a`` at
        ``T_a`` — stays within the deviation bound between its points."""
        prev_q = np.vstack([q_a[None], Q[:-1]])
        prev_T = np.concatenate([T_a[None], T[:-1]])
        poses = self.tip_poses(0.5 * (prev_q + Q))
        ok = line_deviation(poses[:, :3, 3], prev_T[:, :3, 3], T[:, :3, 3]) <= self.deviation.position
        if np.isfinite(self.deviation.rotation):
            ok &= rotation_deviation(poses[:, :3, :3], prev_T[:, :3, :3], T[:, :3, :3]) <= self.deviation.rotation
        return ok

    # ------------------------------------------------------------------ a segment
    def track(self, q_start: Array, T_start: Array, pose_at: Callable[[Array], Array], steps: int) -> Track:
        """Follow the segment ``pose_at(s)`` (s in [0, 1]; ``pose_at(0)`` = ``T_start``, the tip's
        pose at ``q_start``) in ``steps`` equal steps."""
        grid = np.arange(1, steps + 1) / steps
        targets = pose_at(grid)
        track = Track([q_start], [0.0], [T_start])
        i, run = 0, FIRST_RUN
        while i < steps:
            k = min(run, steps - i)
            Q, ok = self.solve(targets[i:i + k], self._predict(track, k))
            good = self._leading(track, Q, ok, targets[i:i + k])
            track.extend(Q[:good], grid[i:i + good], targets[i:i + good])
            i += good
            if good == k:
                run = min(2 * run, MAX_RUN)
                continue
            run = FIRST_RUN
            if good == 0:
                if not self.refine(track, grid[i], targets[i], pose_at, 0):
                    break
                i += 1
        return track

    def _predict(self, track: Track, k: int) -> Array:
        """Seeds of the next ``k`` points: the last accepted point moved on by its last step."""
        last = track.q[-1]
        if len(track.q) < 2:
            return np.repeat(last[None], k, axis=0)
        step = last - track.q[-2]
        seeds = last[None] + np.arange(1, k + 1)[:, None] * step[None]
        return np.clip(seeds, self.checks.lower, self.checks.upper)

    def _leading(self, track: Track, Q: Array, ok: Array, targets: Array) -> int:
        """How many leading points of ``Q`` pass every test (solved, valid, continuous)."""
        bad = ~ok
        first = int(np.argmax(bad)) if bad.any() else len(Q)
        if first == 0:
            return 0
        Q, targets = Q[:first], targets[:first]
        failures = self.checks.failures(Q)
        joined = self.continuous(track.q[-1], track.T[-1], Q, targets)
        passing = joined & np.array([f == '' for f in failures])
        return int(np.argmin(passing)) if not passing.all() else len(Q)

    # ------------------------------------------------------------------ refinement
    def refine(self, track: Track, s_b: float, T_b: Array, pose_at: Callable[[Array], Array], depth: int) -> bool:
        """Reach the point ``s_b`` (pose ``T_b``) from the track's last point, halving the step
        while a pair fails; False (the track's status and message set) when it cannot."""
        q_a, s_a, T_a = track.q[-1], track.s[-1], track.T[-1]
        seed = self._predict(track, 1)
        Q, ok = self.solve(T_b[None], seed)
        failure = self.checks.failures(Q)[0] if ok[0] else ''
        joined = bool(ok[0]) and bool(self.continuous(q_a, T_a, Q, T_b[None])[0])
        if joined and not failure:
            track.add(Q[0], s_b, T_b)
            return True
        if joined and failure != JOINT_LIMIT:     # the path itself is invalid here: no step helps
            return self._stop(track, failure, s_b, self.checks.describe(Q[0], failure))
        if depth >= MAX_DEPTH:
            return self._give_up(track, Q[0], bool(ok[0]), failure, s_b, T_b)
        s_m = 0.5 * (s_a + s_b)
        return (self.refine(track, s_m, pose_at(np.array([s_m]))[0], pose_at, depth + 1)
                and self.refine(track, s_b, T_b, pose_at, depth + 1))

    def _give_up(self, track: Track, q: Array, solved: bool, failure: str, s: float, T: Array) -> bool:
        """Stop the track before ``s``: the reason from what the last attempt found."""
        if failure and solved:
            return self._stop(track, failure, s, self.checks.describe(q, failure))
        if solved:
            return self._stop(track, DISCONTINUITY, s, 'the IK solution is not joined continuously to the last '
                                                       'point (a branch switch or a singularity)')
        reach = reach_upper_bound(self.model, self.options.base or self.model.root_link, self.tip)
        distance = float(np.linalg.norm(T[:3, 3]))
        if distance > reach:
            return self._stop(track, UNREACHABLE, s, f'the pose is {distance:.4g} m from the base, beyond the '
                                                     f'reach of the chain ({reach:.4g} m)')
        at_bound = np.flatnonzero((np.abs(q - self.checks.lower) < 1e-6) | (np.abs(q - self.checks.upper) < 1e-6))
        if at_bound.size:
            names = [self.model.q_names[i] for i in at_bound]
            return self._stop(track, JOINT_LIMIT, s, f'no IK solution continuing the path: the best reaches the '
                                                     f'bounds of {names}')
        return self._stop(track, NO_IK_SOLUTION, s, 'no IK solution continuing the path (out of the workspace '
                                                    'or past a singularity)')

    @staticmethod
    def _stop(track: Track, status: str, s: float, reason: str) -> bool:
        track.status, track.message = status, f'{reason} (at s = {s:.4g} of the segment)'
        return False


def rotation_deviation(R: Array, R_a: Array, R_b: Array) -> Array:
    """``(k,)`` [rad] the angle of each ``R (k, 3, 3)`` from the slerp midpoint of ``R_a (k, 3, 3)``
    and ``R_b``: the normalised sum of their quaternions, on one hemisphere."""
    q = matrix_to_quat_xyzw(np.concatenate([R_a, R_b, R]))
    k = len(R)
    q_a, q_b, q_r = q[:k], q[k:2 * k], q[2 * k:]
    q_b = np.where(np.einsum('ij,ij->i', q_a, q_b)[:, None] < 0.0, -q_b, q_b)
    mid = q_a + q_b
    mid /= np.linalg.norm(mid, axis=1, keepdims=True)
    cos_half = np.abs(np.einsum('ij,ij->i', mid, q_r))
    return 2.0 * np.arccos(np.minimum(cos_half, 1.0))
