"""Inverse kinematics: :func:`solve_ik` and its :class:`IKResult`.

Module map, from the public face down:

- :mod:`.solve`: :func:`solve_ik`, the public face (keywords or one :class:`IKOptions`), and
  ``solve``, the dispatch of a validated call to :mod:`.branches` or :mod:`.poses`;
- :mod:`.branches` and :mod:`.objectives`: null-space objectives and several distinct solutions;
  :mod:`.constraints` and :mod:`.constrained`: MoveIt's position and orientation constraints
  (:func:`solve_constrained`);
- :mod:`.poses`: the primitive ``solve_poses`` (targets checked once; one problem in floats or a
  stacked batch); :mod:`.single`: one problem in floats or on the compiled loop, and
  :func:`prepare_ik`;
- :mod:`.call`: the cached IK call (chain, free coordinates, solver, bounds) every route uses;
  :mod:`.options`: :class:`IKOptions`, bounds and tolerances; :mod:`.chain` (a problem on part
  of the robot as a model of its own); :mod:`.problem` (free coordinates);
- :mod:`.solver` (the iterations), :mod:`.budget` (time budget, :class:`CancelToken`, restart
  sequence), :mod:`.lm` and :mod:`.float_source` (the step, stacked and in floats),
  :mod:`.compiled_loop` (the loop of one problem compiled by numba), :mod:`.collision_gate`
  (``avoid_collisions``), :mod:`.result` (:class:`IKResult`), :mod:`.reach`
  (:func:`reach_upper_bound`: how far a chain can reach).
"""

from ..errors import IKOptionError, InvalidTargetError
from ..model.configuration import integrate
from .budget import CancelToken
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
from .options import OBJECTIVES, IKOptions
from .reach import reach_upper_bound
from .result import CONVERGED, IN_COLLISION, MAX_ITERATIONS, NO_FREE_JOINTS, TIMEOUT, IKResult
from .single import prepare_ik
from .solve import solve_ik

__all__ = ["BOX", "CONVERGED", "CYLINDER", "IN_COLLISION", "MAX_ITERATIONS", "NO_FREE_JOINTS", "OBJECTIVES",
           "ROTATION_VECTOR", "SPHERE", "TIMEOUT", "XYZ_EULER_ANGLES", "CancelToken", "ConstrainedResult",
           "IKOptionError", "IKOptions", "IKResult", "InvalidTargetError", "OrientationConstraint",
           "PositionConstraint", "Region", "Residual", "integrate", "prepare_ik", "reach_upper_bound", "residuals",
           "solve_constrained", "solve_ik"]
