"""A 3D view of a robot in the browser (viser): geometry placed by robokin's forward kinematics,
a slider per joint, an IK gizmo, link frames, self-collisions and SRDF states.

Core only: never imports rclpy (:mod:`robokin_ros.node.web_view` feeds it live joint states).
viser is an optional dependency (``pip install robokin_ros[web]``); without it, building a
view raises :class:`WebViewUnavailableError` saying how to install it.
"""

from .library import WebViewUnavailableError, import_viser
from .panel import IKOutcome, RobotView, core_ik
from .scene import RobotScene

__all__ = ["IKOutcome", "RobotScene", "RobotView", "WebViewUnavailableError", "core_ik", "import_viser"]
