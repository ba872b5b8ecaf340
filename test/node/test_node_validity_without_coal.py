"""/check_state_validity and /compute_ik when coal is missing (review F6): a robot with collision
geometry is never silently valid. The handlers run in process on a real live robot, whose
collision model is built as in the node, with ``import coal`` failing."""

import re
import sys

import pytest
from moveit_msgs.msg import JointConstraint, MoveItErrorCodes, RobotState
from moveit_msgs.srv import GetPositionIK, GetStateValidity
from node_harness import robot_xml
from sensor_msgs.msg import JointState

from robokin_ros import RobotModel
from robokin_ros.node import ik_service, validity_service
from robokin_ros.node.live_robot import LiveRobot
from robokin_ros.node.parameters import REJECT, SOLVE_UNCHECKED, IKSettings

PANDA_XML = robot_xml('panda')
BARE_PANDA_XML = re.sub(r'<collision\b.*?</collision>', '', PANDA_XML, flags=re.S)


@pytest.fixture(autouse=True)
def no_coal(monkeypatch):
    monkeypatch.setitem(sys.modules, 'coal', None)   # import coal fails, as on a machine without it


def live(xml):
    """A live robot of a new model (nothing cached for it), as the node builds one."""
    return LiveRobot(RobotModel.from_urdf(xml), xml, '')


def validity(robot, policy, joint_constraints=()):
    problems, crashes = [], []
    q = robot.model.home_configuration()
    req = GetStateValidity.Request(robot_state=RobotState(joint_state=JointState(
        name=list(robot.model.q_names), position=[float(v) for v in q])))
    req.constraints.joint_constraints = list(joint_constraints)
    res = validity_service.check_state_validity(req, GetStateValidity.Response(), robot.snapshot(), None, problems.append,
                                        crashes.append, policy=policy)
    assert not crashes
    return res, problems


def test_the_collision_model_says_coal_is_missing():
    reason = live(PANDA_XML).collision_model()
    assert isinstance(reason, str) and 'collision checking needs coal' in reason


def test_reject_answers_invalid_and_says_why():
    res, problems = validity(live(PANDA_XML), REJECT)
    assert not res.valid and not res.contacts
    assert len(problems) == 1, problems
    assert problems[0].startswith("/check_state_validity answered valid=false: the collision geometry of robot "
                                  "'panda' cannot be checked (collision checking needs coal"), problems[0]
    assert 'avoid_collisions_policy to solve_unchecked' in problems[0]


def test_solve_unchecked_answers_from_the_joint_constraints_and_says_so():
    robot = live(PANDA_XML)
    holds = JointConstraint(joint_name='panda_joint1', position=0.0, tolerance_above=0.1, tolerance_below=0.1)
    fails = JointConstraint(joint_name='panda_joint1', position=1.0, tolerance_above=0.1, tolerance_below=0.1)
    res, problems = validity(robot, SOLVE_UNCHECKED, [holds])
    assert res.valid and [r.result for r in res.constraint_result] == [True]
    assert len(problems) == 1 and problems[0].startswith('/check_state_validity: self-collision NOT checked '
                                                         '(collision checking needs coal'), problems
    res, problems = validity(robot, SOLVE_UNCHECKED, [fails])
    assert not res.valid and len(problems) == 1


@pytest.mark.parametrize('policy', [REJECT, SOLVE_UNCHECKED])
def test_a_robot_without_collision_geometry_is_valid_without_a_word(policy):
    robot = live(BARE_PANDA_XML)
    assert not any(robot.model.link_collisions)
    res, problems = validity(robot, policy)
    assert res.valid and problems == []


def test_compute_ik_with_avoid_collisions_is_unavailable_as_before():
    robot = live(PANDA_XML)
    req = GetPositionIK.Request()
    req.ik_request.avoid_collisions = True
    req.ik_request.ik_link_name = 'panda_hand'
    req.ik_request.pose_stamped.pose.orientation.w = 1.0
    res = ik_service.compute_ik(req, GetPositionIK.Response(), robot.snapshot(), IKSettings(groups={}))
    assert res.error_code.val == MoveItErrorCodes.COLLISION_CHECKING_UNAVAILABLE
    assert 'collision checking needs coal' in res.error_code.message
