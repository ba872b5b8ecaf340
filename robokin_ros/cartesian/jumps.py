"""MoveIt's joint-space jump tests on a finished path (``CartesianInterpolator::checkJointSpaceJump``).

The relative test: with ``factor > 0`` and a path of at least
:data:`~.interpolation.MIN_STEPS_FOR_JUMP_THRESH` points, the first step whose joint distance
(``RobotState::distance`` over the group: the sum of each joint's distance, continuous joints
the shorter way round) exceeds ``factor`` times the mean step ends the path. The absolute test:
the first step in which one revolute (continuous included) joint moves more than ``revolute``
[rad], or one prismatic joint more than ``prismatic`` [m] (a threshold of 0: not tested). A path
cut after step ``i`` keeps its first ``i + 1`` points and its fraction is multiplied by
``(i + 1) / len(path)``, as MoveIt does.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..model import JointType, RobotModel
from .interpolation import MIN_STEPS_FOR_JUMP_THRESH

Array = np.ndarray


@dataclasses.dataclass(frozen=True)
class JumpThresholds:
    """MoveIt's ``JumpThreshold``: ``relative`` (the factor of the mean step), ``prismatic`` [m]
    and ``revolute`` [rad] (absolute, per joint and step); 0 disables each."""

    relative: float = 0.0
    prismatic: float = 0.0
    revolute: float = 0.0


@dataclasses.dataclass(frozen=True)
class GroupJoints:
    """The coordinates the jump tests compare: ``index`` into q, ``wrap`` (continuous: compared
    modulo 2π), ``prismatic`` (else revolute)."""

    index: Array
    wrap: Array
    prismatic: Array

    @classmethod
    def of(cls, model: RobotModel, joints: Array) -> GroupJoints:
        """The scalar joints among ``joints`` (joint indices) of ``model``."""
        scalar = [j for j in joints.tolist() if model.joint_types[j] in
                  (JointType.REVOLUTE, JointType.CONTINUOUS, JointType.PRISMATIC)]
        types = np.array([model.joint_types[j] for j in scalar], int)
        return cls(np.array([model.joint_q_index[j] for j in scalar], np.intp), types == JointType.CONTINUOUS,
                   types == JointType.PRISMATIC)

    def step_distances(self, Q: Array) -> Array:
        """``(N - 1, k)`` each joint's distance between consecutive rows of ``Q (N, n_q)``."""
        d = np.abs(np.diff(Q[:, self.index], axis=0))
        return np.where(self.wrap, np.minimum(d % (2 * math.pi), 2 * math.pi - d % (2 * math.pi)), d)


def relative_jump(distances: Array, factor: float) -> int | None:
    """The step (index into ``distances (N - 1, k)``) that MoveIt's relative test stops at, or None."""
    if factor <= 0.0 or len(distances) + 1 < MIN_STEPS_FOR_JUMP_THRESH:
        return None
    step = distances.sum(axis=1)
    over = np.flatnonzero(step > factor * step.mean())
    return int(over[0]) if over.size else None


def absolute_jump(distances: Array, joints: GroupJoints, thresholds: JumpThresholds) -> int | None:
    """The step that MoveIt's absolute test stops at, or None."""
    limit = np.where(joints.prismatic, thresholds.prismatic, thresholds.revolute)
    tested = limit > 0.0
    over = np.flatnonzero(((distances > limit) & tested).any(axis=1))
    return int(over[0]) if over.size else None


def check_jumps(Q: Array, joints: GroupJoints, thresholds: JumpThresholds) -> tuple[int, float, str]:
    """MoveIt's tests on the path ``Q (N, n_q)`` (its start included): the number of points kept,
    the factor of the fraction, and '' or which test cut the path (relative first, as MoveIt)."""
    if len(Q) <= 1 or (thresholds.relative <= 0.0 and thresholds.prismatic <= 0.0 and thresholds.revolute <= 0.0):
        return len(Q), 1.0, ''
    kept, factor, why = len(Q), 1.0, ''
    step = relative_jump(joints.step_distances(Q), thresholds.relative)
    if step is not None:
        kept, factor = step + 1, (step + 1) / len(Q)
        why = f'relative jump threshold {thresholds.relative:g} exceeded at step {step}'
    step = absolute_jump(joints.step_distances(Q[:kept]), joints, thresholds) if kept > 1 else None
    if step is not None:
        factor *= (step + 1) / kept
        kept = step + 1
        why = f'absolute jump threshold exceeded at step {step}'
    return kept, factor, why
