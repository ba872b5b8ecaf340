"""/compute_ik with avoid_collisions on a robot whose collision meshes cannot be loaded (issue 20,
case 11): never an answer that claims a check it did not make. What loaded leaving no pair to
check is the unchecked path (avoid_collisions_policy); some meshes missing is said in the answer;
each missing mesh is a warning naming its file. The handlers run in process on a real live robot."""

import re

import pytest
from moveit_msgs.msg import MoveItErrorCodes
from moveit_msgs.srv import GetPositionIK
from node_harness import robot_xml

from robokin_ros import RobotModel, forward_kinematics
from robokin_ros.node import ik_service
from robokin_ros.node.live_robot import LiveRobot
from robokin_ros.node.parameters import REJECT, SOLVE_UNCHECKED, IKSettings
from robokin_ros.spatial import matrix_to_quat_xyzw

pytest.importorskip('coal', reason='collision checking needs coal (pip install coal)')

PANDA_XML = robot_xml('panda')
MISSING = 'package://no_such_package/meshes/{}.stl'


def with_missing_meshes(keep: set[str]) -> str:
    """The Panda with the collision geometry of every link but ``keep`` replaced by a mesh whose
    file does not exist."""
    def link(match):
        name, body = match.group(1), match.group(2)
        if name in keep or '<collision' not in body:
            return match.group(0)
        body = re.sub(r'<collision\b.*?</collision>', '', body, flags=re.S)
        mesh = f'<collision><geometry><mesh filename="{MISSING.format(name)}"/></geometry></collision>'
        return f'<link name="{name}">{body}{mesh}</link>'
    return re.sub(r'<link name="([^"]+)">(.*?)</link>', link, PANDA_XML, flags=re.S)


def live(xml, warnings):
    robot = LiveRobot(RobotModel.from_urdf(xml), xml, '')
    robot.warn = warnings.append
    return robot


def ik(robot, policy):
    model = robot.model
    T = forward_kinematics(model, model.home_configuration())[model.link_index('panda_hand')]
    req = GetPositionIK.Request()
    req.ik_request.avoid_collisions = True
    req.ik_request.ik_link_name = 'panda_hand'
    pose = req.ik_request.pose_stamped.pose
    pose.position.x, pose.position.y, pose.position.z = (float(v) for v in T[:3, 3])
    x, y, z, w = (float(v) for v in matrix_to_quat_xyzw(T[:3, :3]))
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = x, y, z, w
    req.ik_request.robot_state.joint_state.name = list(model.q_names)
    req.ik_request.robot_state.joint_state.position = [float(v) for v in model.home_configuration()]
    settings = IKSettings(groups={}, avoid_collisions_policy=policy)
    return ik_service.compute_ik(req, GetPositionIK.Response(), robot.snapshot(), settings)


def test_meshes_that_leave_no_pair_to_check_take_the_unchecked_path():
    warnings = []
    robot = live(with_missing_meshes(keep={'panda_link0'}), warnings)   # one primitive link left: no pair
    res = ik(robot, REJECT)
    assert res.error_code.val == MoveItErrorCodes.COLLISION_CHECKING_UNAVAILABLE, res.error_code.message
    assert 'could not be loaded' in res.error_code.message
    assert len(warnings) >= 7 and all('no_such_package' in w for w in warnings), warnings
    res = ik(live(with_missing_meshes(keep={'panda_link0'}), []), SOLVE_UNCHECKED)
    assert res.error_code.val == MoveItErrorCodes.SUCCESS
    assert 'WITHOUT collision checking' in res.error_code.message


def test_some_meshes_missing_is_said_in_the_answer():
    warnings = []
    robot = live(with_missing_meshes(keep={'panda_link0', 'panda_link1', 'panda_link2', 'panda_link3',
                                           'panda_link4', 'panda_link5'}), warnings)
    res = ik(robot, REJECT)
    assert res.error_code.val == MoveItErrorCodes.SUCCESS, res.error_code.message
    assert 'collision meshes could not be loaded and are NOT checked' in res.error_code.message
    assert warnings and all('no_such_package' in w for w in warnings)
