"""/compute_fk: ``moveit_msgs/srv/GetPositionFK``, poses of links for a state.

:func:`compute_fk` is the handler, a plain function of (request, response, robot snapshot,
stamp) over :mod:`~robokin_ros.node.requests`, so it runs without DDS in tests. Every failure
becomes a ``moveit_msgs/MoveItErrorCodes`` constant chosen by name, with a sentence in
``error_code.message``; nothing raises out of it.
"""

from __future__ import annotations

from collections.abc import Callable

from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped
from std_msgs.msg import Header

from ..kinematics import forward_kinematics, frame_transform
from .conversions import matrix_to_pose
from .requests import RobotSnapshot, answer, frame_link, request_configuration, require_robot


def compute_fk(request, response, robot: RobotSnapshot | None, stamp: Time,
               on_crash: Callable[[BaseException], None] = lambda e: None):
    """Answer a ``moveit_msgs/srv/GetPositionFK`` request: poses of ``fk_link_names`` in
    ``header.frame_id`` (empty: the root link) for ``robot_state`` over the latest joint states."""

    def handle() -> str:
        snap = require_robot(robot)
        view = snap.with_virtual_joint()
        model = view.model
        frame = frame_link(view, request.header.frame_id, 'FRAME_TRANSFORM_FAILURE', 'header.frame_id', True,
                      snap.model_frame)
        q = request_configuration(view, request.robot_state)
        links = [frame_link(view, name, 'INVALID_LINK_NAME', 'fk_link_names', False) for name in request.fk_link_names]
        poses = forward_kinematics(model, q)
        frame_id = request.header.frame_id or snap.frame_prefix + snap.model_frame
        response.pose_stamped = [
            PoseStamped(header=Header(frame_id=frame_id, stamp=stamp),
                        pose=matrix_to_pose(frame_transform(model, q, frame, link, poses=poses)))
            for link in links]
        response.fk_link_names = list(request.fk_link_names)
        return f'{len(links)} poses in {frame_id!r}'

    return answer(response, handle, on_crash)
