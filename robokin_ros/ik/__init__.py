"""Inverse kinematics: :func:`solve_ik` and its :class:`IKResult`.

Module map, from the public face down:

- :mod:`.solve`: :func:`solve_ik`, the public face (its options as keywords or one
  :class:`IKOptions`), and ``solve_with_options``, the dispatch of a validated call to
  :mod:`.branches` or :mod:`.poses`;
- :mod:`.branches` and :mod:`.objectives`: null-space objectives and several distinct solutions;
  :mod:`.constraints` and :mod:`.constrained`: MoveIt's position and orientation constraints
  (:func:`solve_constrained`);
- :mod:`.poses`: the primitive ``solve_poses`` (targets checked once; one target set given as
  lists, or a stacked batch); :mod:`.preparation`: :func:`prepare_ik`;
- :mod:`.call`: the cached IK call (chain, free coordinates, solver, bounds) every route uses;
  :mod:`.options`: :class:`IKOptions`, bounds and tolerances; :mod:`.chain` (a problem on part
  of the robot as a model of its own); :mod:`.problem` (free coordinates);
- :mod:`.solver` (the iterations: numpy, or the compiled loop), :mod:`.budget` (time budget,
  :class:`CancelToken`, restart sequence), :mod:`.lm` (the step on stacked arrays),
  :mod:`.generic_loop` (the one compiled outer loop, and the step of any chain given as
  :mod:`.chain_arrays`), :mod:`.compiled_loop` and :mod:`.step_source` (a robot's generated
  step), :mod:`.loop_layout` (the compiled state's layout), :mod:`.collision_gate`
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
from .preparation import prepare_ik
from .reach import reach_upper_bound
from .result import CONVERGED, IN_COLLISION, MAX_ITERATIONS, NO_FREE_JOINTS, TIMEOUT, IKResult
from .solve import solve_ik

__all__ = ["BOX", "CONVERGED", "CYLINDER", "IN_COLLISION", "MAX_ITERATIONS", "NO_FREE_JOINTS", "OBJECTIVES",
           "ROTATION_VECTOR", "SPHERE", "TIMEOUT", "XYZ_EULER_ANGLES", "CancelToken", "ConstrainedResult",
           "IKOptionError", "IKOptions", "IKResult", "InvalidTargetError", "OrientationConstraint",
           "PositionConstraint", "Region", "Residual", "integrate", "prepare_ik", "reach_upper_bound", "residuals",
           "solve_constrained", "solve_ik"]
