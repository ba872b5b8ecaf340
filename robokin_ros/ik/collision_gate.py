"""Collision-aware IK: the test a converged configuration must pass, and the results it refuses."""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import NDArray

from ..collision import CollisionModel, collision_model, in_collision
from ..errors import IKOptionError
from ..model import RobotModel
from .result import IN_COLLISION, IKResult

Array = NDArray[np.float64]


def collision_test(model: RobotModel, avoid_collisions):
    """``accept(q)`` of ``avoid_collisions``: for ``q (B, n_q)`` a ``(B,)`` mask of configurations
    free of self-collision, for ``q (n_q,)`` (a list) one bool; None when not avoiding."""
    if avoid_collisions is False or avoid_collisions is None:
        return None
    cm = collision_model(model) if avoid_collisions is True else avoid_collisions
    if not isinstance(cm, CollisionModel):
        raise IKOptionError("avoid_collisions must be a bool or a CollisionModel, got "
                            f"{type(avoid_collisions).__name__}")
    if cm.model is not model:
        raise IKOptionError("avoid_collisions: the CollisionModel was built for another model")
    return lambda q: ~in_collision(cm, q) if np.ndim(q) == 2 else not cm.in_collision_one(q)


def rejected_rows(accept, q: Array, ok: Array) -> Array:
    """``(B,)`` rows of ``q (n_q, B)`` within tolerance (``ok``) that ``accept`` (see
    :func:`collision_test`; None: every row accepted) refuses."""
    out = np.zeros(ok.shape, bool)
    if accept is not None and ok.any():
        rows = np.flatnonzero(ok)
        out[rows] = ~accept(q[:, rows].T)
    return out


def refuse_collisions(result: IKResult, accept) -> IKResult:
    """``result`` with status :data:`IN_COLLISION` (and ``success`` cleared) wherever ``accept``
    refuses the ``q`` it reports: the solver checks the rows it declares converged, this the
    configurations it returns as they are (a seed within tolerance, a best iterate after the
    iteration or time budget), so that an answer in collision always says so."""
    if accept is None:
        return result
    bad = ~accept(np.atleast_2d(result.q).reshape(-1, result.q.shape[-1])).reshape(np.shape(result.success))
    if not bad.any():
        return result
    success, status = np.array(result.success), np.array(result.status)
    success[bad] = False
    status[bad] = IN_COLLISION
    return dataclasses.replace(result, success=success, status=status)
