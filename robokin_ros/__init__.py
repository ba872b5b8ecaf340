"""robokin_ros: kinematics and dynamics of robots from URDF, batched over configurations.

The core (everything but :mod:`robokin_ros.node`) never imports rclpy.
"""

from .cartesian import CartesianPathResult, JumpThresholds, PathOptions, PathTiming, cartesian_path
from .collision import (
                        CollisionModel,
                        CollisionUnavailableError,
                        Contact,
                        SelfCollisionResult,
                        bounding_box_model,
                        collision_model,
                        disabled_pairs_by_sampling,
                        self_collisions,
)
from .dynamics import (
                        aba,
                        center_of_mass,
                        center_of_mass_jacobian,
                        coriolis_torques,
                        crba,
                        gravity_torques,
                        kinetic_energy,
                        nonlinear_effects,
                        rnea,
                        total_mass,
)
from .errors import (
                        ArgumentError,
                        JointLimitError,
                        KernelCheckError,
                        LoadWarning,
                        ModelError,
                        NonFiniteError,
                        RobokinError,
                        ShapeError,
                        SRDFError,
                        UnknownJointError,
                        UnknownLinkError,
                        UnknownNameError,
                        UnknownStateError,
                        URDFError,
)
from .ik import CancelToken, IKOptionError, IKOptions, IKResult, InvalidTargetError, integrate, prepare_ik, solve_ik
from .kernels import prepare
from .kinematics import (
                        LOCAL,
                        LOCAL_WORLD_ALIGNED,
                        WORLD,
                        Kinematics,
                        Reference,
                        forward_kinematics,
                        frame_pose_and_jacobian,
                        frame_transform,
                        jacobian,
                        jacobians,
                        joint_poses,
                        kinematic_hessian,
                        link_positions,
                        pose_derivatives,
                        pose_second_derivatives,
)
from .model import CollisionGeometry, JointLimits, JointType, ModelFields, RobotModel
from .runtime import Runtime, current_runtime, using
from .servo import Servo, ServoParameters, ServoStatus

__all__ = [
    "Runtime", "current_runtime", "using",
    "CartesianPathResult", "JumpThresholds", "PathOptions", "PathTiming", "cartesian_path",
    "ArgumentError", "JointLimitError", "JointType", "KernelCheckError", "LoadWarning", "ModelError", "NonFiniteError",
    "RobokinError", "RobotModel", "SRDFError", "ShapeError", "URDFError", "UnknownJointError", "UnknownLinkError",
    "UnknownNameError", "UnknownStateError", "JointLimits", "ModelFields",
    "Kinematics", "forward_kinematics", "frame_transform", "joint_poses", "link_positions", "prepare",
    "LOCAL", "LOCAL_WORLD_ALIGNED", "WORLD", "Reference", "frame_pose_and_jacobian", "jacobian", "jacobians",
    "kinematic_hessian", "pose_derivatives", "pose_second_derivatives",
    "CancelToken", "IKOptionError", "IKOptions", "IKResult", "InvalidTargetError", "integrate", "prepare_ik",
    "solve_ik",
    "CollisionGeometry", "CollisionModel", "CollisionUnavailableError", "Contact", "SelfCollisionResult",
    "bounding_box_model", "collision_model", "disabled_pairs_by_sampling", "self_collisions",
    "aba", "center_of_mass", "center_of_mass_jacobian", "coriolis_torques", "crba", "gravity_torques",
    "kinetic_energy", "nonlinear_effects", "rnea", "total_mass",
    "Servo", "ServoParameters", "ServoStatus",
]
__version__ = "0.1.0"
