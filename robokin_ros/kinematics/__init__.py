"""Kinematics: forward kinematics, transforms between frames, Jacobians and pose derivatives.

:mod:`.fk` (world poses of every link, ``joint_poses`` for /tf), :mod:`.geometric_jacobians`
(geometric Jacobians in the three reference frames), :mod:`.derivatives` (first and second pose
derivatives, the kinematic Hessian) and :mod:`.prepared` (:class:`Kinematics`, a model's
single-configuration calls prepared once). ``robokin_ros.kinematics.use_generated_kernels`` reads
:data:`robokin_ros.kernels.selection.use_generated` (the one switch every entry point honours);
assigning it is deprecated: ``with robokin_ros.kernels.use("generic"):`` selects for a block.
"""

import sys
import types
import warnings

from ..kernels import selection as _selection
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
    """This package, with the deprecated ``use_generated_kernels`` kept in :mod:`robokin_ros.kernels.selection`."""

    @property
    def use_generated_kernels(self) -> bool:
        return _selection.use_generated

    @use_generated_kernels.setter
    def use_generated_kernels(self, value: bool) -> None:
        warnings.warn("assigning robokin_ros.kinematics.use_generated_kernels is deprecated: use "
                      "`with robokin_ros.kernels.use('generic'):` (or 'generated'), and "
                      "robokin_ros.kernels.selected() to read it", DeprecationWarning, stacklevel=2)
        _selection.use_generated = bool(value)


sys.modules[__name__].__class__ = _KinematicsModule
