"""Feasible orientation-constraint requests with freed axes, for the tests and
``bench/bench_ik_constraints.py`` (issue 32, item 1).

A request is made from a random configuration ``q_goal``: the link's pose at ``q_goal`` is the
pose target, and the constraint's desired orientation ``R_d`` is chosen so that
``R_dᵀ R_link(q_goal)`` has the drawn parameters (constrained axes within their tolerance, freed
axes anywhere: XYZ Euler ``a, c`` in [-π, π), ``b`` in [-π/2, π/2]; a rotation vector within
the ball of radius π). So a solution exists; MoveIt's rule (:meth:`OrientationConstraint.excess`,
``calcEulerAngles`` with inclusive bounds) judges every answer.

The PiPER arm (AgileX, 6 DOF) is its kinematic chain only, typed here from the joint origins,
axes and limits of ``piper_description/urdf/piper_description.urdf`` (agilexrobotics), group
``arm``: ``base_link`` to ``link6``.
"""

from __future__ import annotations

import dataclasses
import math
import os

import numpy as np
from scipy.spatial.transform import Rotation

from robokin_ros import RobotModel, frame_transform
from robokin_ros.ik.constraints import ROTATION_VECTOR, XYZ_EULER_ANGLES, OrientationConstraint

_JOINT = ('<joint name="joint{k}" type="revolute"><origin xyz="{xyz}" rpy="{rpy}"/><parent link="{parent}"/>'
          '<child link="link{k}"/><axis xyz="0 0 1"/><limit lower="{lo}" upper="{hi}" effort="100" velocity="5"/>'
          '</joint>')
_PIPER_JOINTS = [("0 0 0.123", "0 0 0", -2.618, 2.168), ("0 0 0", "1.5708 -0.1359 -3.1416", 0.0, 3.14),
                 ("0.28503 0 0", "0 0 -1.7939", -2.967, 0.0), ("-0.021984 -0.25075 0", "1.5708 0 0", -1.745, 1.745),
                 ("0 0 0", "-1.5708 0 0", -1.22, 1.22), ("8.8259E-05 -0.091 0", "1.5708 0 0", -2.0944, 2.0944)]
#: The PiPER's kinematic chain as URDF text.
PIPER_URDF = ('<robot name="piper"><link name="base_link"/>'
              + ''.join(f'<link name="link{k}"/>' for k in range(1, 7))
              + ''.join(_JOINT.format(k=k, xyz=xyz, rpy=rpy, parent="base_link" if k == 1 else f"link{k - 1}",
                                      lo=lo, hi=hi) for k, (xyz, rpy, lo, hi) in enumerate(_PIPER_JOINTS, 1))
              + '</robot>')

ROBOTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "robokin_ros", "robots")
#: Freed-axis patterns of the issue: the axes given a tolerance of π.
PATTERNS = ("x", "y", "z", "xy", "xz", "yz")


def piper() -> tuple[RobotModel, str, str]:
    """The PiPER model, its base and its tip."""
    return RobotModel.from_urdf(PIPER_URDF), "base_link", "link6"


def ur5e() -> tuple[RobotModel, str, str]:
    """The bundled UR5e, its base and its tip."""
    return RobotModel.from_urdf_file(os.path.join(ROBOTS, "ur5e.urdf")), "base_link", "tool0"


@dataclasses.dataclass(frozen=True)
class Request:
    """A feasible request: the pose target ``T (4, 4)`` of ``tip``, the constraint, ``q_goal``
    (a configuration that satisfies both) and the seed."""

    T: np.ndarray
    constraint: OrientationConstraint
    q_goal: np.ndarray
    seed: np.ndarray


def drawn_rotation(pattern: str, tolerances: np.ndarray, parameterization: int, rng) -> np.ndarray:
    """``R_diff (3, 3)`` with its parameters within ``tolerances`` (freed axes: anywhere)."""
    free = ["xyz".index(axis) for axis in pattern]
    if parameterization == XYZ_EULER_ANGLES:
        e = rng.uniform(-1.0, 1.0, 3) * np.minimum(tolerances, [math.pi, 0.5 * math.pi, math.pi])
        return Rotation.from_euler("XYZ", e).as_matrix()
    while True:
        v = rng.uniform(-1.0, 1.0, 3) * np.minimum(tolerances, math.pi)
        if np.linalg.norm(v) < math.pi - 1e-6 or not free:
            return Rotation.from_rotvec(v).as_matrix()


def requests(arm, pattern: str, n: int, seed: int = 0, parameterization: int = XYZ_EULER_ANGLES) -> list[Request]:
    """``n`` feasible requests on ``arm`` (``(model, base, tip)``) with the axes of ``pattern``
    freed (tolerance π) and the others drawn in [0.02, 0.4] rad."""
    model, base, tip = arm
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        q_goal = model.random_configuration(rng=rng)
        T = frame_transform(model, q_goal, base, tip)
        tolerances = np.where([axis in pattern for axis in "xyz"], math.pi, rng.uniform(0.02, 0.4, 3))
        R_diff = drawn_rotation(pattern, tolerances, parameterization, rng)
        c = OrientationConstraint(tip, T[:3, :3] @ R_diff.T, tuple(tolerances), parameterization)
        if c.excess(T) == 0.0:   # (a draw on a face of the region may round outside)
            out.append(Request(T, c, q_goal, model.random_configuration(rng=rng)))
    return out


__all__ = ["PATTERNS", "PIPER_URDF", "ROTATION_VECTOR", "XYZ_EULER_ANGLES", "Request", "piper", "requests", "ur5e"]
