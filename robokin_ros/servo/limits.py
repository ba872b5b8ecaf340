"""Joint position, velocity and acceleration limits of a servo's group, applied to each cycle's
wanted velocity so that none is ever exceeded.

Order (:meth:`GroupLimits.apply`): the wanted velocity is scaled uniformly into the velocity
limits (its direction kept); each joint is then bounded by the speed from which it can still stop
before its position limit less the margin, braking at its acceleration limit (a discrete braking
curve: ``v dt + v² / 2a <= distance``; it falls by at most ``a dt`` a cycle, so it never asks for
a harder stop than the acceleration limit); then the step from the previous velocity is scaled
uniformly into ``a dt`` per joint (a velocity change along the wanted one, never beyond the
acceleration limit), and the braking bound applied once more.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import RobotModel
from .parameters import ServoParameters
from .status import StatusCode


@dataclass(frozen=True)
class GroupLimits:
    """Per joint of the group ``(n,)``: position bounds less the margins (``±inf`` where none),
    velocity and acceleration limits (> 0).

    Attributes:
        names: the group's joints.
        lower, upper: the position range the servo keeps to (URDF limits less the margins;
            a range narrower than twice its margin is kept at its middle).
        velocity: velocity limits (URDF ``velocity``; ``default_velocity_limit`` where absent or 0).
        acceleration: acceleration limits (URDF 1.2 ``acceleration``; else
            ``default_acceleration_per_velocity`` times the velocity limit).
    """

    names: tuple
    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray

    @classmethod
    def of(cls, model: RobotModel, names: tuple, parameters: ServoParameters) -> GroupLimits:
        """The limits of the joints ``names`` of ``model`` under ``parameters``."""
        index = [model.joint_index(n) for n in names]
        lower = np.array(model.joint_lower, dtype=float)[index]
        upper = np.array(model.joint_upper, dtype=float)[index]
        margins = np.broadcast_to(np.array(parameters.joint_limit_margins, dtype=float), (len(names),))
        bounded = np.isfinite(lower) & np.isfinite(upper)
        middle = 0.5 * (np.where(bounded, lower, 0.0) + np.where(bounded, upper, 0.0))   # (0 where unbounded)
        lo = np.where(bounded, np.minimum(lower + margins, middle), lower + margins)
        hi = np.where(bounded, np.maximum(upper - margins, middle), upper - margins)
        velocity = np.array(model.joint_velocity, dtype=float)[index]
        velocity = np.where(np.isfinite(velocity) & (velocity > 0), velocity, parameters.default_velocity_limit)
        acceleration = np.array(model.joint_acceleration, dtype=float)[index]
        derived = parameters.default_acceleration_per_velocity * velocity
        acceleration = np.where(np.isfinite(acceleration) & (acceleration > 0), acceleration, derived)
        return cls(tuple(names), lo, hi, velocity, acceleration)

    def braking_bounds(self, q: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """The most negative and most positive velocity of each joint from which it can still stop
        inside the range (``v dt + v² / 2a <= distance``), ``(n,)`` each."""
        a_dt = self.acceleration * dt
        base = a_dt * a_dt
        twice = 2.0 * self.acceleration
        # (an infinite distance gives an infinite bound: no where() needed)
        top = np.sqrt(base + twice * np.maximum(self.upper - q, 0.0)) - a_dt
        bottom = a_dt - np.sqrt(base + twice * np.maximum(q - self.lower, 0.0))
        return bottom, top

    def apply(self, wanted: np.ndarray, previous: np.ndarray, q: np.ndarray, dt: float) -> tuple[np.ndarray, list]:
        """The velocity to command this cycle and the reports ``[(code, message)]`` of the
        position limits that cut it (``JOINT_BOUND``; scaling into the velocity and acceleration
        limits is not reported).

        Args:
            wanted: the velocity the law asks for ``(n,)``.
            previous: the velocity commanded last cycle ``(n,)``.
            q: the group's positions ``(n,)``.
            dt: the cycle [s].
        """
        reports = []
        speed = (np.abs(wanted) / self.velocity).max()
        v = wanted / speed if speed > 1.0 else wanted.copy()
        bottom, top = self.braking_bounds(q, dt)
        bounded = np.minimum(np.maximum(v, bottom), top)
        cut = np.abs(bounded - v) > 1e-9 * (1.0 + np.abs(v))
        if cut.any():
            names = ", ".join(n for n, c in zip(self.names, cut) if c)
            reports.append((StatusCode.JOINT_BOUND, f"close to a position limit: {names}"))
        step = bounded - previous
        allowed = self.acceleration * dt
        over = (np.abs(step) / allowed).max()
        v = previous + step / over if over > 1.0 else bounded
        return np.minimum(np.maximum(v, bottom), top), reports
