"""The UR arms' closed-form inverse kinematics (Hawkins, "Analytic Inverse Kinematics for the
Universal Robots UR-5/UR-10 Arms", 2013), an independent reference for the IK tests.

Standard DH table of the UR5e (Universal Robots' published "DH parameters for calculations of
kinematics and dynamics"): rows ``(a, alpha, d, theta_offset)``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

UR5E_DH = np.array([[0.0, math.pi / 2, 0.1625, 0.0],
                    [-0.425, 0.0, 0.0, 0.0],
                    [-0.3922, 0.0, 0.0, 0.0],
                    [0.0, math.pi / 2, 0.1333, 0.0],
                    [0.0, -math.pi / 2, 0.0997, 0.0],
                    [0.0, 0.0, 0.0996, 0.0]])


def dh_transform(a: float, alpha: float, d: float, theta: float) -> np.ndarray:
    """``(4, 4)`` standard DH link transform ``Rz(θ) Tz(d) Tx(a) Rx(α)``."""
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return np.array([[ct, -st * ca, st * sa, a * ct],
                     [st, ct * ca, -ct * sa, a * st],
                     [0.0, sa, ca, d],
                     [0.0, 0.0, 0.0, 1.0]])


def fk(q, table=UR5E_DH) -> np.ndarray:
    """``T_06 (4, 4)`` of the DH chain."""
    T = np.eye(4)
    for (a, alpha, d, offset), theta in zip(table, q):
        T = T @ dh_transform(a, alpha, d, theta + offset)
    return T


def closed_form(T06: np.ndarray, table=UR5E_DH) -> list[np.ndarray]:
    """Every solution ``(6,)`` in (-π, π] of ``fk(q) = T06`` (8 for a generic reachable pose)."""
    (_, _, d1, _), (a2, _, _, _), (a3, _, _, _), (_, _, d4, _), (_, _, d5, _), (_, _, d6, _) = table
    p05 = T06 @ np.array([0.0, 0.0, -d6, 1.0])
    r = math.hypot(p05[0], p05[1])
    if r < abs(d4):
        return []
    psi, phi = math.atan2(p05[1], p05[0]), math.acos(d4 / r)
    T60 = np.linalg.inv(T06)
    solutions = []
    for s1, s5, s3 in itertools.product((1, -1), repeat=3):
        t1 = psi + s1 * phi + math.pi / 2
        c5 = (T06[0, 3] * math.sin(t1) - T06[1, 3] * math.cos(t1) - d4) / d6
        if abs(c5) > 1.0:
            continue
        t5 = s5 * math.acos(c5)
        s5v = math.sin(t5)
        if abs(s5v) < 1e-9:
            continue
        t6 = math.atan2((-T60[1, 0] * math.sin(t1) + T60[1, 1] * math.cos(t1)) / s5v,
                        (T60[0, 0] * math.sin(t1) - T60[0, 1] * math.cos(t1)) / s5v)
        T01 = dh_transform(table[0, 0], table[0, 1], d1, t1)
        T45 = dh_transform(table[4, 0], table[4, 1], d5, t5)
        T56 = dh_transform(table[5, 0], table[5, 1], d6, t6)
        T14 = np.linalg.inv(T01) @ T06 @ np.linalg.inv(T45 @ T56)
        # joint 4's origin in frame 1 (frame 4's origin sits d4 along joint 4's axis, y of frame 4)
        p13 = T14 @ np.array([0.0, -d4, 0.0, 1.0])
        x, y = p13[0], p13[1]
        c3 = (x ** 2 + y ** 2 - a2 ** 2 - a3 ** 2) / (2 * a2 * a3)
        if abs(c3) > 1.0:
            continue
        t3 = s3 * math.acos(c3)
        t2 = math.atan2(y, x) - math.atan2(a3 * math.sin(t3), a2 + a3 * math.cos(t3))
        T12 = dh_transform(a2, 0.0, 0.0, t2)
        T23 = dh_transform(a3, 0.0, 0.0, t3)
        T34 = np.linalg.inv(T12 @ T23) @ T14
        t4 = math.atan2(T34[1, 0], T34[0, 0])
        q = np.array([t1, t2, t3, t4, t5, t6])
        solutions.append(np.remainder(q + math.pi, 2 * math.pi) - math.pi)
    return solutions
