"""Test helper node: a fake moveit_msgs/GetPositionIK server on /compute_ik until SIGINT.

Answers deterministically from the request, so a test can check that every field it sent
arrived:
* group ``arm``: ``error_code.val = SUCCESS``; the solution is the seed joint state with
  ``pose_stamped.pose.position.x`` added to every position and the header frame of
  ``pose_stamped``; ``error_code.message`` echoes group, ik_link_name, timeout and the number of
  ik_link_names; ``error_code.source`` is ``fake_ik_server``.
* any other group: ``error_code.val = INVALID_GROUP_NAME``, empty solution.
"""

from moveit_msgs.msg import MoveItErrorCodes
from moveit_msgs.srv import GetPositionIK
from rclpy.node import Node
from spin import run


class FakeIkServer(Node):

    def __init__(self):
        super().__init__('fake_ik_server')
        self.create_service(GetPositionIK, '/compute_ik', self._compute_ik)

    def _compute_ik(self, request, response):
        ik = request.ik_request
        response.error_code.source = 'fake_ik_server'
        if ik.group_name != 'arm':
            response.error_code.val = MoveItErrorCodes.INVALID_GROUP_NAME
            response.error_code.message = f'unknown group {ik.group_name!r}'
            return response
        seed = ik.robot_state.joint_state
        offset = ik.pose_stamped.pose.position.x
        response.solution.joint_state.header.frame_id = ik.pose_stamped.header.frame_id
        response.solution.joint_state.name = list(seed.name)
        response.solution.joint_state.position = [p + offset for p in seed.position]
        response.error_code.val = MoveItErrorCodes.SUCCESS
        response.error_code.message = (
            f'{ik.group_name}|{ik.ik_link_name}|{ik.timeout.sec}.{ik.timeout.nanosec:09d}'
            f'|{len(ik.ik_link_names)}|{ik.avoid_collisions}')
        return response


def main():
    run(FakeIkServer)


if __name__ == '__main__':
    main()
