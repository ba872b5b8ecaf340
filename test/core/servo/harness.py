"""A simulated robot for servo tests: integrates the servo's output into joint states (the robot
follows the command exactly) and measures the tip's achieved twist from forward kinematics
(finite differences of poses, independent of the servo's Jacobian)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import robokin_ros as rk
from robokin_ros import robots
from robokin_ros.model.groups import default_groups
from robokin_ros.spatial import log_so3

ROOT = Path(__file__).resolve().parents[3]
CORPUS = ROOT.parent / "shared" / "urdf-corpus"
#: Bundled arms: file, tip.
BUNDLED = [("panda.urdf", "panda_hand_tcp"), ("ur5e.urdf", "tool0")]
SMALL = [("so101_arm.urdf", "tool"), ("open_manipulator_x.urdf", "tool")]
#: 6- and 7-DOF arms of the corpus (their default group's tip).
CORPUS_ARMS = ["kuka_lbr_iiwa14", "ur10e_ros2", "ur5e_ros1", "jaco2_j2s7s300", "kinova_gen3_2f85", "fanuc_m10ia",
               "abb_irb6700", "interbotix_wx250s", "moveit_panda"]


def bundled(file: str) -> rk.RobotModel:
    return rk.RobotModel.from_urdf_file(robots.path(file))


def corpus(name: str) -> tuple[rk.RobotModel, str]:
    """A corpus arm and its default tip; skips (with the reason) when the corpus is absent."""
    path = CORPUS / f"{name}.urdf"
    if not path.exists():
        pytest.skip(f"../shared/urdf-corpus/{name}.urdf is absent")
    model = rk.RobotModel.from_urdf_file(path)
    return model, next(iter(default_groups(model).values())).tip


def well_conditioned(servo: rk.Servo, rng: int = 0, samples: int = 400) -> np.ndarray:
    """A configuration inside the limits (0.3 rad from each, where the range allows) whose scaled
    Jacobian has the smallest condition number among random samples."""
    model = servo.model
    gen = np.random.default_rng(rng)
    qs = model.random_configuration(samples, rng=gen)
    lo, hi = servo.limits.lower, servo.limits.upper
    idx = servo._q_index   # noqa: SLF001 - the test reads which coordinates are the group's
    middle = np.where(np.isfinite(lo) & np.isfinite(hi), (np.nan_to_num(lo) + np.nan_to_num(hi)) / 2, 0.0)
    inner = (qs[:, idx] > np.minimum(lo + 0.3, middle)) & (qs[:, idx] < np.maximum(hi - 0.3, middle))
    qs = qs[inner.all(axis=1)]
    best, best_c = None, np.inf
    for q in qs:
        s = np.linalg.svd(scaled_jacobian(servo, q), compute_uv=False)
        c = s[0] / s[-1]
        if c < best_c:
            best, best_c = q, c
    assert best is not None, "no sample inside the limits"
    return best


def fd_jacobian(servo: rk.Servo, q: np.ndarray, h: float = 1e-6) -> np.ndarray:
    """The group's Jacobian in the base's axes by central differences of forward kinematics."""
    model, out = servo.model, []
    for i in servo._q_index:   # noqa: SLF001
        dq = np.zeros(model.n_q)
        dq[i] = h
        out.append(twist_between(servo, q - dq, q + dq, 2 * h))
    return np.array(out).T


def scaled_jacobian(servo: rk.Servo, q: np.ndarray) -> np.ndarray:
    w = np.array([1 / servo.length] * 3 + [1.0] * 3)
    return fd_jacobian(servo, q) * w[:, None]


def base_tip(servo: rk.Servo, q: np.ndarray) -> np.ndarray:
    return rk.frame_transform(servo.model, q, servo.base, servo.tip)


def twist_between(servo: rk.Servo, q0: np.ndarray, q1: np.ndarray, dt: float) -> np.ndarray:
    """The tip's twist [linear; angular] in the base's axes from q0 to q1 over dt."""
    T0, T1 = base_tip(servo, q0), base_tip(servo, q1)
    return np.concatenate([(T1[:3, 3] - T0[:3, 3]) / dt, log_so3(T1[:3, :3] @ T0[:3, :3].T) / dt])


@dataclass
class Run:
    """What a closed loop recorded, one row per cycle."""

    q: list = field(default_factory=list)          # configuration before each cycle
    velocity: list = field(default_factory=list)   # group velocity commanded
    status: list = field(default_factory=list)

    def arrays(self):
        return np.array(self.q), np.array(self.velocity)

    def codes(self) -> list:
        return [s.code for s in self.status]


def run(servo: rk.Servo, q0: np.ndarray, commands, dt: float) -> tuple[Run, np.ndarray]:
    """Run the loop: ``commands`` gives each cycle's command (None: none fresh)."""
    record, q = Run(), np.array(q0, dtype=float)
    for command in commands:
        q_next, velocity, status = servo.step(q, command, dt)
        record.q.append(q)
        record.velocity.append(velocity[servo._v_index])   # noqa: SLF001
        record.status.append(status)
        q = q_next
    record.q.append(q)
    return record, q


def angle_between(a: np.ndarray, b: np.ndarray) -> float:
    """Angle between two vectors [deg]."""
    c = a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
    return float(np.degrees(np.arccos(np.clip(c, -1.0, 1.0))))


def limit_violations(servo: rk.Servo, record: Run, dt: float) -> dict:
    """Counts of position (URDF limits), velocity and acceleration violations of a run."""
    q, v = record.arrays()
    model, names = servo.model, servo.joint_names
    index = [model.joint_index(n) for n in names]
    lower, upper = np.asarray(model.joint_lower)[index], np.asarray(model.joint_upper)[index]
    qg = q[:, servo._q_index]   # noqa: SLF001
    steps = np.diff(np.vstack([np.zeros(len(names)), v]), axis=0)
    return {"position": int(((qg < lower - 1e-12) | (qg > upper + 1e-12)).sum()),
            "velocity": int((np.abs(v) > servo.limits.velocity * (1 + 1e-9)).sum()),
            "acceleration": int((np.abs(steps) > servo.limits.acceleration * dt * (1 + 1e-9) + 1e-12).sum()),
            "nan": int((~np.isfinite(q)).sum() + (~np.isfinite(v)).sum())}
