"""Kinematics: forward kinematics, transforms between frames, Jacobians and pose derivatives.

:mod:`.fk` (world poses of every link, ``joint_poses`` for /tf), :mod:`.geometric_jacobians`
(geometric Jacobians in the three reference frames), :mod:`.derivatives` (first and second pose
derivatives, the kinematic Hessian) and :mod:`.prepared` (:class:`Kinematics`, a model's
single-configuration calls prepared once). ``robokin_ros.kinematics.use_generated_kernels`` reads
the current runtime's kernel kind (:mod:`robokin_ros.runtime`); it cannot be assigned:
``with robokin_ros.kernels.use("generic"):`` selects for a block.
"""

import sys
import types

from ..runtime import current_runtime
from .derivatives import kinematic_hessian, pose_derivatives, pose_second_derivatives
from .fk import (
    forward_kinematics,
    forward_kinematics_generic,
    frame_transform,
    joint_motion_subspaces,
    joint_poses,
    link_positions,
)
from .geometric_jacobians import (
    LOCAL,
    LOCAL_WORLD_ALIGNED,
    WORLD,
    Reference,
    frame_pose_and_jacobian,
    jacobian,
    jacobians,
)
from .prepared import Kinematics

__all__ = ["LOCAL", "LOCAL_WORLD_ALIGNED", "WORLD", "Kinematics", "Reference", "forward_kinematics",
           "forward_kinematics_generic",
           "frame_pose_and_jacobian", "frame_transform", "jacobian", "jacobians", "joint_motion_subspaces",
           "joint_poses", "kinematic_hessian", "link_positions", "pose_derivatives", "pose_second_derivatives"]


class _KinematicsModule(types.ModuleType):
    """This package; ``use_generated_kernels`` reads the current runtime's kernel kind."""

    @property
    def use_generated_kernels(self) -> bool:
        return current_runtime().generated

    @use_generated_kernels.setter
    def use_generated_kernels(self, value: bool) -> None:
        raise AttributeError("robokin_ros.kinematics.use_generated_kernels can no longer be assigned: run the "
                             "block inside `with robokin_ros.kernels.use('generic'):` (or 'generated'), or with "
                             "robokin_ros.using(robokin_ros.Runtime(kind='generic'))")


sys.modules[__name__].__class__ = _KinematicsModule
