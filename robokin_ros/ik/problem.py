"""An IK problem's free coordinates: what one (model, tips, base, allowed joints) needs."""

from __future__ import annotations

import numpy as np

from ..kinematics import forward_kinematics
from ..model import SCALAR_TYPES, JointType, RobotModel


class IKProblem:
    """What one (model, tips, base, active joints) problem needs, built once per IK call
    (:class:`~robokin_ros.ik.call.IKCall`).

    Attributes:
        tips, base: link indices. free_joints: independent joints that move a tip relative to
        the base and may move; free_q, free_v: their q and v coordinates. scalar: every joint
        moving a tip is 1-DOF. periodic, revolute, randomised: per free q coordinate, whether it
        wraps, is revolute, is redrawn on restarts. bounded_v, bounded_q: free columns with a q
        twin (bounds that can hold a step). base_moves: a joint moves the base.
        T_world_base: ``(4, 4)`` the base's pose at the home configuration.
    """

    def __init__(self, model: RobotModel, tips: tuple[int, ...], base: int, active: tuple[int, ...]):
        self.tips, self.base, self.active = tips, base, active
        tip_support = model.support_mask[list(tips)].any(axis=0)
        base_support = model.support_mask[base]
        src = model.velocity_source_joints
        moving = np.zeros(model.n_joints, bool)  # independent joints that move a tip relative to the base
        for j in range(model.n_joints):
            if src[j] >= 0 and tip_support[j + 1] and not base_support[j + 1]:
                moving[src[j]] = True
        self.free_joints = [j for j in model.active_joints if moving[j] and j in active]
        self.free_q = np.array([model.joint_q_index[j] + k for j in self.free_joints
                                for k in range(model.joint_nq[j])], np.int64)
        self.free_v = np.array([model.joint_v_index[j] + k for j in self.free_joints
                                for k in range(model.joint_nv[j])], np.int64)
        on_tips = [j for j in range(model.n_joints) if tip_support[j + 1] and not model.is_fixed[j]]
        self.scalar = all(JointType(model.joint_types[j]) in SCALAR_TYPES for j in on_tips)
        # Free q coordinates that wrap (continuous, planar θ), that are revolute and that restarts
        # redraw (not floating).
        periodic, revolute, randomised = np.zeros(model.n_q, bool), np.zeros(model.n_q, bool), np.zeros(model.n_q, bool)
        for j in self.free_joints:
            t, i = JointType(model.joint_types[j]), model.joint_q_index[j]
            if t in (JointType.CONTINUOUS, JointType.PLANAR):
                periodic[i + (2 if t == JointType.PLANAR else 0)] = True
            revolute[i] = t == JointType.REVOLUTE
            randomised[i:i + model.joint_nq[j]] = t != JointType.FLOATING
        self.periodic = periodic[self.free_q]
        self.revolute = revolute[self.free_q]
        self.randomised = randomised[self.free_q]
        # Free columns with a q twin (all but floating joints' v): bounds that can hold a step.
        self.bounded_v, self.bounded_q = [], []
        for j in self.free_joints:
            if model.joint_types[j] != JointType.FLOATING:
                for k in range(model.joint_nv[j]):
                    self.bounded_v.append(int(np.flatnonzero(self.free_v == model.joint_v_index[j] + k)[0]))
                    self.bounded_q.append(int(model.joint_q_index[j] + k))
        self.base_moves = bool(np.any(~model.is_fixed[np.flatnonzero(base_support[1:])]))
        self.T_world_base = forward_kinematics(model, model.home_configuration())[base]

