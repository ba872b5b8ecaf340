"""Cartesian paths (ROS-free): :func:`cartesian_path` and its :class:`CartesianPathResult`.

Module map: :mod:`.path` (the public call: arguments, segments one after another, MoveIt's
fraction, jump tests and timing applied), :mod:`.interpolation` (MoveIt's step count, lerp +
slerp, distance from a line), :mod:`.tracking` (continuation IK along one segment, batched, with
the continuity test of every pair and recursive refinement), :mod:`.checks` (joint bounds,
self-collision, path constraints), :mod:`.jumps` (MoveIt's relative and absolute jump tests),
:mod:`.timing` (time stamps, velocities, accelerations within the limits).
"""

from .jumps import JumpThresholds
from .path import MAX_POINTS, CartesianPathResult, PathOptions, PathTiming, cartesian_path
from .timing import DEFAULT_ACCELERATION, DEFAULT_VELOCITY

__all__ = ["DEFAULT_ACCELERATION", "DEFAULT_VELOCITY", "MAX_POINTS", "CartesianPathResult", "JumpThresholds",
           "PathOptions", "PathTiming", "cartesian_path"]
