"""MoveIt's position and orientation constraints, as IK tolerances and as a check of the solution.

The meaning is ``moveit_core/kinematic_constraints`` (``PositionConstraint::decide``,
``OrientationConstraint::decide``):

- an :class:`OrientationConstraint` holds when each component of the error ``e`` of
  ``R_diff = R_desiredᵀ R_link`` (axes of the desired orientation) is within its tolerance, ``e``
  being the intrinsic XYZ Euler angles of ``R_diff`` (``XYZ_EULER_ANGLES``, MoveIt's default) or its
  rotation vector (``ROTATION_VECTOR``); a tolerance >= π frees that axis;
- a :class:`PositionConstraint` holds when the link's point ``offset`` (link axes) lies inside one
  of its :class:`Region` s (a union).

Poses here are in the IK base frame. The solve (:func:`robokin_ros.ik.constrained.solve_constrained`)
turns each constraint into a tip with TRAC-IK-style dead bands; this module checks FK of the answer.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from numpy.typing import NDArray

from ..checks import numbers
from ..errors import IKOptionError, ShapeError
from ..spatial import exp_so3, log_so3

Array = NDArray[np.float64]

#: Orientation error parameterizations (``moveit_msgs/OrientationConstraint.parameterization``).
XYZ_EULER_ANGLES, ROTATION_VECTOR = 0, 1
#: Region shapes (``shape_msgs/SolidPrimitive``: box ``[x, y, z]`` sizes, sphere ``[radius]``,
#: cylinder ``[height, radius]`` about its z axis; centred on their pose).
BOX, SPHERE, CYLINDER = "box", "sphere", "cylinder"
_DIMENSIONS = {BOX: 3, SPHERE: 1, CYLINDER: 2}
#: ``cos(pitch)`` at or below this is the XYZ Euler angles' singularity (MoveIt: 4 ε).
GIMBAL_LOCK = 4 * np.finfo(float).eps
#: Slack of the check [m, rad] (floating-point rounding at a region's face).
CHECK_SLACK = 1e-9
#: [rad] how far inside each bound :meth:`OrientationConstraint.nearest` puts its rotation (at
#: most a tenth of the tolerance): the solver's own rotation tolerance (1e-5 by default) must not
#: carry a solution of that target across the bound.
INSIDE = 1e-3
#: [rad] the middle XYZ Euler angle of :meth:`OrientationConstraint.nearest` stays this far from
#: ±π/2, where the first and last angles merge (their error grows as ``1 / cos b``).
PITCH_MARGIN = 0.05


@dataclasses.dataclass(frozen=True)
class Region:
    """A solid ``shape`` of ``dimensions`` [m] placed at ``T_base_region (4, 4)``."""

    shape: str
    dimensions: tuple[float, ...]
    T_base_region: Array

    def __post_init__(self):
        if self.shape not in _DIMENSIONS:
            raise IKOptionError(f"region shape must be one of {sorted(_DIMENSIONS)}, got {self.shape!r}")
        if len(self.dimensions) != _DIMENSIONS[self.shape] or not all(
                math.isfinite(d) and d >= 0 for d in self.dimensions):
            raise IKOptionError(f"a {self.shape} region needs {_DIMENSIONS[self.shape]} finite sizes >= 0, "
                                f"got {list(self.dimensions)}")
        T = numbers(self.T_base_region, "T_base_region")
        if T.shape != (4, 4):
            raise ShapeError("T_base_region", "(4, 4)", T.shape)
        object.__setattr__(self, "T_base_region", T)
        object.__setattr__(self, "dimensions", tuple(float(d) for d in self.dimensions))

    def excess(self, p: Array) -> float:
        """[m] distance of the point ``p (3,)`` (base frame) outside the region (0 inside)."""
        local = self.T_base_region[:3, :3].T @ (p - self.T_base_region[:3, 3])
        if self.shape == BOX:
            return float(np.linalg.norm(np.maximum(np.abs(local) - 0.5 * np.array(self.dimensions), 0.0)))
        if self.shape == SPHERE:
            return max(float(np.linalg.norm(local)) - self.dimensions[0], 0.0)
        height, radius = self.dimensions
        return math.hypot(max(math.hypot(local[0], local[1]) - radius, 0.0), max(abs(local[2]) - 0.5 * height, 0.0))

    def outer_radius(self) -> float:
        """[m] radius of the smallest sphere about the region's centre that holds it."""
        if self.shape == BOX:
            return 0.5 * float(np.linalg.norm(self.dimensions))
        if self.shape == SPHERE:
            return self.dimensions[0]
        return math.hypot(self.dimensions[1], 0.5 * self.dimensions[0])

    def inscribed_box(self) -> Array:
        """``(3,)`` [m] half sizes of a box about the region's axes that lies inside it (the
        solver's dead band: a point in the box is in the region)."""
        if self.shape == BOX:
            return 0.5 * np.array(self.dimensions)
        if self.shape == SPHERE:
            return np.full(3, self.dimensions[0] / math.sqrt(3.0))
        height, radius = self.dimensions
        return np.array([radius / math.sqrt(2.0), radius / math.sqrt(2.0), 0.5 * height])


@dataclasses.dataclass(frozen=True)
class PositionConstraint:
    """The point ``offset (3,)`` [m] of ``link`` (link axes) must lie in one of ``regions``."""

    link: str
    offset: tuple[float, float, float]
    regions: tuple[Region, ...]

    def __post_init__(self):
        if not self.regions:
            raise IKOptionError(f"position constraint on {self.link!r} has no region")

    def excess(self, T_base_link: Array) -> float:
        """[m] distance of the point outside the nearest region (0: satisfied)."""
        p = T_base_link[:3, :3] @ np.array(self.offset) + T_base_link[:3, 3]
        return min(r.excess(p) for r in self.regions)


@dataclasses.dataclass(frozen=True)
class OrientationConstraint:
    """``link``'s orientation within ``tolerances (3,)`` [rad] of ``R_base_desired (3, 3)``, per
    axis of the desired orientation, in ``parameterization`` (:data:`XYZ_EULER_ANGLES` or
    :data:`ROTATION_VECTOR`)."""

    link: str
    R_base_desired: Array
    tolerances: tuple[float, float, float]
    parameterization: int = XYZ_EULER_ANGLES

    def __post_init__(self):
        if self.parameterization not in (XYZ_EULER_ANGLES, ROTATION_VECTOR):
            raise IKOptionError(f"orientation constraint on {self.link!r}: parameterization must be "
                                f"{XYZ_EULER_ANGLES} (XYZ Euler angles) or {ROTATION_VECTOR} (rotation vector), "
                                f"got {self.parameterization!r}")
        if len(self.tolerances) != 3 or not all(t >= 0 for t in self.tolerances):  # (NaN fails too)
            raise IKOptionError(f"orientation constraint on {self.link!r}: tolerances must be 3 numbers >= 0, "
                                f"got {list(self.tolerances)}")

    def error(self, R_base_link: Array) -> Array:
        """``(3,)`` [rad] the error ``e`` of ``R_desiredᵀ R_link`` in the parameterization."""
        R = self.R_base_desired.T @ R_base_link
        if self.parameterization == ROTATION_VECTOR:
            return log_so3(R)
        angles, regular = xyz_euler_angles(R)
        if not regular and abs(angles[0]) > self.tolerances[2]:
            # MoveIt: at the singularity the combined angle counts as yaw when it breaks the yaw tolerance
            angles = np.array([0.0, angles[1], angles[0]])
        return angles

    def excess(self, T_base_link: Array) -> float:
        """[rad] the largest amount by which an error component exceeds its tolerance (0: satisfied)."""
        e = np.abs(self.error(T_base_link[:3, :3]))
        return float(np.max(np.maximum(e - np.array(self.tolerances), 0.0)))

    def dead_band(self) -> Array:
        """``(3,)`` per-axis dead band of the solver's rotation-vector error (inf: free axis)."""
        return np.array([math.inf if t >= math.pi else t for t in self.tolerances])

    def _bounds(self) -> Array:
        """``(3,)`` the bounds of the parameters of :meth:`nearest` and :meth:`admitted`."""
        t = np.array(self.tolerances)
        bound = np.where(t >= math.pi, math.pi, t - np.minimum(INSIDE, 0.1 * t))
        if self.parameterization == XYZ_EULER_ANGLES:
            bound[1] = min(bound[1], 0.5 * math.pi - PITCH_MARGIN)
        return bound

    def admitted(self, k: int) -> Array:
        """``R_base (3, 3)``: the ``k``-th of a sequence of rotations the constraint admits, spread
        over its parameters (a low-discrepancy sequence over the box of :meth:`nearest`'s bounds;
        a rotation vector longer than π scaled down to π)."""
        bound = self._bounds()
        p = (2.0 * np.remainder(0.5 + k * _R2_STEPS, 1.0) - 1.0) * bound
        if self.parameterization == ROTATION_VECTOR:
            norm = float(np.linalg.norm(p))
            return self.R_base_desired @ exp_so3(p if norm <= math.pi else p * (math.pi / norm))
        return self.R_base_desired @ xyz_euler_matrix(p)

    def nearest(self, R_base_link: Array) -> Array:
        """``R_base (3, 3)``: a rotation the constraint admits near ``R_base_link (3, 3)``: the
        error's parameters clamped into the bounds, :data:`INSIDE` within each (a tolerance >= π
        is no bound; the middle XYZ Euler angle within :data:`PITCH_MARGIN` of ±π/2). XYZ Euler
        angles have two forms, ``(a, b, c)`` and ``(a + π, π - b, c + π)``; each is clamped and
        the one nearer ``R_base_link`` kept (a rotation turned past π/2 about a freed middle axis
        is one of the second form)."""
        R = self.R_base_desired.T @ R_base_link
        bound = self._bounds()
        if self.parameterization == ROTATION_VECTOR:
            return self.R_base_desired @ exp_so3(np.clip(log_so3(R), -bound, bound))
        a, b, c = xyz_euler_angles(R)[0]
        best, gap = R, math.inf
        for form in ((a, b, c), (a + math.pi, math.pi - b, c + math.pi)):
            angles = np.clip(np.remainder(np.array(form) + math.pi, 2 * math.pi) - math.pi, -bound, bound)
            candidate = xyz_euler_matrix(angles)
            turn = float(np.linalg.norm(log_so3(candidate.T @ R)))
            if turn < gap:
                best, gap = candidate, turn
        return self.R_base_desired @ best


def xyz_euler_angles(R: Array) -> tuple[Array, bool]:
    """Intrinsic XYZ Euler angles ``(a, b, c) (3,)`` with ``R = Rx(a) Ry(b) Rz(c)``, ``b`` in
    [-π/2, π/2], and whether ``R`` is away from the singularity ``cos b = 0`` (MoveIt's
    ``calcEulerAngles``, from Eigen's EulerSystem: at the singularity ``a`` takes the combined
    angle and ``c`` is 0)."""
    rsum = math.sqrt((R[0, 0] ** 2 + R[0, 1] ** 2 + R[1, 2] ** 2 + R[2, 2] ** 2) / 2.0)
    b = math.atan2(float(R[0, 2]), rsum)
    if rsum > GIMBAL_LOCK:
        return np.array([math.atan2(-float(R[1, 2]), float(R[2, 2])), b,
                         math.atan2(-float(R[0, 1]), float(R[0, 0]))]), True
    if R[0, 2] > 0:
        return np.array([math.atan2(float(R[1, 0] + R[2, 1]), float(R[1, 1] - R[2, 0])), b, 0.0]), False
    return np.array([math.atan2(float(R[2, 1] - R[1, 0]), float(R[1, 1] + R[2, 0])), b, 0.0]), False


#: Steps of the 3-D R2 low-discrepancy sequence (Roberts 2018): ``φ^-(j+1)``, ``φ`` the positive
#: root of ``x^4 = x + 1``.
_R2_STEPS = 1.0 / 1.2207440846057596 ** np.arange(1, 4)


def xyz_euler_matrix(angles: Array) -> Array:
    """``R = Rx(a) Ry(b) Rz(c) (3, 3)`` of intrinsic XYZ Euler angles ``(a, b, c) (3,)``."""
    return exp_so3(np.array([angles[0], 0.0, 0.0])) @ exp_so3(np.array([0.0, angles[1], 0.0])) @ exp_so3(
        np.array([0.0, 0.0, angles[2]]))


@dataclasses.dataclass(frozen=True)
class Residual:
    """How far a solution is from satisfying one constraint: ``excess`` [m or rad] (0: satisfied)."""

    constraint: PositionConstraint | OrientationConstraint
    excess: float

    @property
    def satisfied(self) -> bool:
        return self.excess <= CHECK_SLACK

    def describe(self) -> str:
        """E.g. ``"orientation of 'tool' 0.12 rad outside"`` or ``"position of 'tool' satisfied"``."""
        kind = "position" if isinstance(self.constraint, PositionConstraint) else "orientation"
        unit = "m" if kind == "position" else "rad"
        state = "satisfied" if self.satisfied else f"{self.excess:.3g} {unit} outside"
        return f"{kind} of {self.constraint.link!r} {state}"
