"""Inverse kinematics: :func:`solve_ik` and its :class:`IKResult`.

:mod:`.solve` (the public call: checks, chain reduction, one problem in floats or a batch),
:mod:`.requests` (what a call's names and options make, kept per model), :mod:`.problem` (free
coordinates), :mod:`.options` (tolerances, bounds), :mod:`.solver` (the iterations), :mod:`.lm`
and :mod:`.float_source` (the step, stacked and in floats), :mod:`.chain` (a problem on part of
the robot as a model of its own), :mod:`.collision_gate` (``avoid_collisions``),
:mod:`.objectives` and :mod:`.branches` (null-space objectives, several distinct solutions),
:mod:`.constraints` and :mod:`.constrained` (MoveIt's position and orientation constraints),
:mod:`.reach` (how far a chain reaches), :mod:`.single` (one request with few numpy calls,
:func:`prepare_ik`), :mod:`.compiled_loop` (the loop of one problem compiled by numba).
"""

from ..errors import IKOptionError, InvalidTargetError
from ..model.configuration import integrate
from .constrained import ConstrainedResult, residuals, solve_constrained
from .constraints import (
    BOX,
    CYLINDER,
    ROTATION_VECTOR,
    SPHERE,
    XYZ_EULER_ANGLES,
    OrientationConstraint,
    PositionConstraint,
    Region,
    Residual,
)
from .objectives import OBJECTIVES
from .reach import chain_reach
from .result import CONVERGED, IN_COLLISION, MAX_ITERATIONS, NO_FREE_JOINTS, TIMEOUT, IKResult
from .single import prepare_ik
from .solve import solve_ik

__all__ = ["BOX", "CONVERGED", "CYLINDER", "IN_COLLISION", "MAX_ITERATIONS", "NO_FREE_JOINTS", "OBJECTIVES",
           "ROTATION_VECTOR", "SPHERE", "TIMEOUT", "XYZ_EULER_ANGLES", "ConstrainedResult", "IKOptionError",
           "IKResult", "InvalidTargetError", "OrientationConstraint", "PositionConstraint", "Region", "Residual",
           "chain_reach", "integrate", "prepare_ik", "residuals", "solve_constrained", "solve_ik"]
