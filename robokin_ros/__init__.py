"""robokin_ros: kinematics and dynamics of robots from URDF, batched over configurations.

The core (everything but :mod:`robokin_ros.node`) never imports rclpy.
"""

from .errors import (ArgumentError, JointLimitError, LoadWarning, ModelError, NonFiniteError, RobokinError, ShapeError,
                     UnknownJointError, UnknownLinkError, UnknownNameError, URDFError)
from .model import CollisionGeometry, JointType, RobotModel
from .kinematics import forward_kinematics, frame_transform, joint_poses, link_positions
from .jacobians import LOCAL, LOCAL_WORLD_ALIGNED, WORLD, Reference, frame_pose_and_jacobian, jacobian, jacobians
from .derivatives import kinematic_hessian, pose_derivatives, pose_second_derivatives
from .ik import IKOptionError, IKResult, InvalidTargetError, integrate, solve_ik
from .collision import (CollisionModel, CollisionUnavailableError, Contact, SelfCollisionResult, collision_model,
                        self_collisions)
from .collision_pairs import disabled_pairs_by_sampling
from .collision_geometry import bounding_box_model
from .dynamics import (aba, center_of_mass, center_of_mass_jacobian, coriolis_torques, crba, gravity_torques,
                       kinetic_energy, nonlinear_effects, rnea, total_mass)

__all__ = [
    "ArgumentError", "JointLimitError", "JointType", "LoadWarning", "ModelError", "NonFiniteError", "RobokinError", "RobotModel",
    "ShapeError", "URDFError", "UnknownJointError", "UnknownLinkError", "UnknownNameError",
    "forward_kinematics", "frame_transform", "joint_poses", "link_positions",
    "LOCAL", "LOCAL_WORLD_ALIGNED", "WORLD", "Reference", "frame_pose_and_jacobian", "jacobian", "jacobians",
    "kinematic_hessian", "pose_derivatives", "pose_second_derivatives",
    "IKOptionError", "IKResult", "InvalidTargetError", "integrate", "solve_ik",
    "CollisionGeometry", "CollisionModel", "CollisionUnavailableError", "Contact", "SelfCollisionResult",
    "bounding_box_model", "collision_model", "disabled_pairs_by_sampling", "self_collisions",
    "aba", "center_of_mass", "center_of_mass_jacobian", "coriolis_torques", "crba", "gravity_torques",
    "kinetic_energy", "nonlinear_effects", "rnea", "total_mass",
]
__version__ = "0.1.0"
