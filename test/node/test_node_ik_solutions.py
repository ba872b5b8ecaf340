"""~/compute_ik_solutions (issue 32, "all branches, once each", the node's side): the IK branches
of one GetPositionIK request in ``robokin_interfaces/srv/GetPositionIKSolutions``, through the
handler (no DDS); each solution checked by FK here, and against every other modulo 2π."""

import math

import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from moveit_msgs.msg import OrientationConstraint
from node_harness import assert_code, robot_xml

from robokin_ros import RobotModel, frame_transform
from robokin_ros.node.conversions import matrix_to_pose
from robokin_ros.node.descriptions import URDFDescription
from robokin_ros.node.ik_solutions_service import compute_ik_solutions
from robokin_ros.node.live_robot import load_robot
from robokin_ros.node.parameters import PARAMETERS, STRING_LIST, read_settings

GetPositionIKSolutions = pytest.importorskip('robokin_interfaces.srv').GetPositionIKSolutions
UR5E_XML = robot_xml('ur5e')
UR5E = RobotModel.from_urdf(UR5E_XML)
TIP = 'tool0'


def defaults(**overrides):
    values = {name: [] if spec.default is STRING_LIST else spec.default for name, spec in PARAMETERS.items()}
    values.update(overrides)
    return values.__getitem__


def ur5e_snapshot():
    return load_robot(URDFDescription(UR5E, UR5E_XML, 'test'), read_settings(defaults()), None).robot.snapshot()


def request(q_target, max_solutions=8, timeout=1.0):
    req = GetPositionIKSolutions.Request(max_solutions=max_solutions)
    req.ik_request.ik_link_name = TIP
    req.ik_request.pose_stamped.header.frame_id = UR5E.root_link
    req.ik_request.pose_stamped.pose = matrix_to_pose(frame_transform(UR5E, q_target, UR5E.root_link, TIP))
    req.ik_request.timeout = Duration(sec=int(timeout), nanosec=int(timeout % 1 * 1e9))
    return req


def wrapped_distance(a, b):
    d = (a - b + math.pi) % (2 * math.pi) - math.pi
    return float(np.linalg.norm(d))


Q_TARGET = np.array([0.4, -1.2, 1.5, -0.9, 1.3, 0.2])


def ur5e_solutions():
    """The solutions ~/compute_ik_solutions gives for the tool pose at :data:`Q_TARGET` ``(m, 6)``."""
    res = compute_ik_solutions(request(Q_TARGET), GetPositionIKSolutions.Response(), ur5e_snapshot(),
                               read_settings(defaults()).ik)
    assert_code(res, 'SUCCESS', r'distinct solutions of \[\'tool0\'\]')
    return np.array([UR5E.q_from_dict(dict(zip(s.joint_state.name, s.joint_state.position))) for s in res.solutions])


def test_every_solution_of_a_ur5e_pose_reaches_the_target():
    qs = ur5e_solutions()
    T = frame_transform(UR5E, Q_TARGET, UR5E.root_link, TIP)
    assert len(qs) >= 4, len(qs)   # a 6R arm of this kind has up to 8 branches
    for q in qs:
        assert np.allclose(frame_transform(UR5E, q, UR5E.root_link, TIP), T, atol=1e-4)
        assert (q >= UR5E.q_lower - 1e-9).all() and (q <= UR5E.q_upper + 1e-9).all()


def test_no_solution_is_a_2pi_shifted_copy_of_another():
    """The core compares solutions modulo 2π on joints whose range exceeds 2π (the ik helpers'
    part of issue 32): the UR5e's ±2π joints gave copies such as q1 = 3.0483 and -3.2349."""
    qs = ur5e_solutions()
    for i in range(len(qs)):
        for j in range(i):
            assert wrapped_distance(qs[i], qs[j]) > 0.05, (i, j, qs[i], qs[j])


def test_max_solutions_is_clamped_to_the_parameter_and_said():
    snap = ur5e_snapshot()
    settings = read_settings(defaults(ik_max_solutions=2)).ik
    res = compute_ik_solutions(request(np.array([0.4, -1.2, 1.5, -0.9, 1.3, 0.2]), max_solutions=50),
                               GetPositionIKSolutions.Response(), snap, settings)
    assert_code(res, 'SUCCESS', r'\(asked 2 \(max_solutions 50 clamped to ik_max_solutions = 2\)\)')
    assert 1 <= len(res.solutions) <= 2


def test_constraints_and_unreachable_targets_get_their_codes():
    snap, settings = ur5e_snapshot(), read_settings(defaults()).ik
    req = request(UR5E.home_configuration())
    c = OrientationConstraint(link_name=TIP, absolute_x_axis_tolerance=0.1, absolute_y_axis_tolerance=0.1,
                              absolute_z_axis_tolerance=0.1)
    c.orientation.w = 1.0
    req.ik_request.constraints.orientation_constraints = [c]
    res = compute_ik_solutions(req, GetPositionIKSolutions.Response(), snap, settings)
    assert_code(res, 'INVALID_GOAL_CONSTRAINTS', 'pose targets only')
    far = request(UR5E.home_configuration())
    far.ik_request.pose_stamped.pose.position.x = 5.0
    res = compute_ik_solutions(far, GetPositionIKSolutions.Response(), snap, settings)
    assert_code(res, 'NO_IK_SOLUTION', 'beyond the reach of the chain')
    assert not res.solutions


def test_the_service_definitions_comments_name_real_parameters_and_the_order():
    """Issue 41: the .srv's comments named a parameter that does not exist (``ik_solutions``) and
    said the first solution is /compute_ik's answer (it is the nearest to the seed, without an
    objective). Comments are not part of the RIHS01 type hash (the hashed type description holds
    field names and types only), so the pinned hash stands."""
    import pathlib
    import re

    srv = (pathlib.Path(__file__).resolve().parents[2] / 'tools' / 'ros_interfaces' / 'robokin_interfaces' / 'srv'
           / 'GetPositionIKSolutions.srv').read_text()
    comments = ' '.join(line.lstrip('# ') for line in srv.splitlines() if line.startswith('#'))
    named = set(re.findall(r"\b(ik_\w+) parameter", comments))
    assert named and named <= set(PARAMETERS), named
    assert 'nearest to the seed first' in comments and "the answer /compute_ik would give;" not in comments
