"""Any robot out of the box, over DDS: the node started with only description_file (a corpus
robot) answers /compute_ik in a group derived from the tree; with semantic_file it uses the
SRDF's groups; an SRDF on the latched robot_description_semantic topic regroups; a bad SRDF is
rejected and the groups stay."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from geometry_msgs.msg import PoseStamped
from moveit_msgs.msg import MoveItErrorCodes
from moveit_msgs.srv import GetPositionIK
from node_harness import FIXTURES, LATCHED_QOS, ROOT, KinNode, Probe, robot_xml
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from std_msgs.msg import String

from robokin_ros import RobotModel, frame_transform
from robokin_ros.model.srdf import parse_srdf
from robokin_ros.node.conversions import matrix_to_pose
from robokin_ros.node.descriptions import MAX_LISTED_GROUPS, SRDFDescription, choose_ik_groups
from robokin_ros.node.log_limits import MAX_LINES, cap_notes
from robokin_ros.node.parameters import IKSettings

CORPUS = ROOT.parent / 'shared' / 'urdf-corpus'


def corpus_file(name: str) -> Path:
    path = CORPUS / name
    if not path.is_file():
        pytest.skip(f'{path} is absent (../shared is not beside this checkout)')
    return path


def solve(probe, client, model, tip, group='', rng=0):
    q = model.random_configuration(rng=np.random.default_rng(rng))
    req = GetPositionIK.Request()
    req.ik_request.group_name = group
    req.ik_request.pose_stamped = PoseStamped(pose=matrix_to_pose(frame_transform(model, q, model.root_link, tip)))
    req.ik_request.robot_state.joint_state.name = list(model.joint_names)
    req.ik_request.robot_state.joint_state.position = [float(v) for v in model.clamp(q + 0.05)]
    req.ik_request.timeout.sec = 5
    return probe.call(client, req)


def test_description_file_alone_gives_derived_groups(tmp_path, ros_context):
    path = corpus_file('ur5e_ros1.urdf')
    model = RobotModel.from_urdf_file(path)
    proc = KinNode(tmp_path, params={'description_file': str(path)})
    probe = Probe(ros_context, 'groups_probe')
    probe.watch = (proc,)
    try:
        client = probe.client(GetPositionIK, '/compute_ik')
        res = solve(probe, client, model, 'tool0')
        assert res.error_code.val == MoveItErrorCodes.SUCCESS, res.error_code.message
        assert "group 'tool0'" in res.error_code.message
        probe.spin_until(lambda: proc.count(r"IK groups from the kinematic tree .*default 'tool0'"), 'the groups log')
    finally:
        probe.close()
        proc.stop()


def test_semantic_file_groups_then_topic_and_bad_srdf(tmp_path, ros_context):
    path = corpus_file('fanuc_m10ia.urdf')
    model = RobotModel.from_urdf_file(path)
    proc = KinNode(tmp_path, params={'description_file': str(path),
                                     'semantic_file': str(FIXTURES / 'srdf' / 'fanuc.srdf')})
    probe = Probe(ros_context, 'groups_probe2')
    probe.watch = (proc,)
    try:
        client = probe.client(GetPositionIK, '/compute_ik')
        res = solve(probe, client, model, 'tool0')
        assert res.error_code.val == MoveItErrorCodes.SUCCESS, res.error_code.message
        assert "group 'manipulator'" in res.error_code.message
        # a bad SRDF through the parameter is rejected with its reason; the groups stay
        params = probe.client(SetParameters, '/robokin/set_parameters')
        bad = ParameterMsg(name='robot_description_semantic',
                           value=ParameterValue(type=ParameterType.PARAMETER_STRING, string_value='<robot'))
        answer = probe.call(params, SetParameters.Request(parameters=[bad]))
        assert not answer.results[0].successful and 'invalid semantic description' in answer.results[0].reason
        assert "group 'manipulator'" in solve(probe, client, model, 'tool0', rng=1).error_code.message
        # a new SRDF on the latched topic regroups
        srdf = '<robot name="fanuc"><group name="wrist"><chain base_link="link_3" tip_link="tool0"/></group></robot>'
        pub = probe.publisher(String, '/robot_description_semantic', LATCHED_QOS)
        pub.publish(String(data=srdf))
        probe.spin_until(lambda: proc.count(r"IK groups from the SRDF \(topic"), 'the regroup log')
        res = solve(probe, client, model, 'tool0', group='manipulator', rng=2)
        assert res.error_code.val == MoveItErrorCodes.INVALID_GROUP_NAME, res.error_code.message
        assert "groups: ['all', 'wrist']" in res.error_code.message
    finally:
        probe.close()
        proc.stop()


def test_the_srdf_warnings_of_one_description_are_capped_in_the_log():
    """Issue 24, case 2 (log volume): an SRDF with 1,000 bad members gave 1,000 log lines; the
    node logs its notes through log_limits.cap_notes: the first MAX_LINES and a count."""
    model = RobotModel.from_urdf(robot_xml('panda'))
    text = ('<robot name="panda"><group name="arm">' + ''.join(f'<joint name="missing_{i}"/>' for i in range(1000))
            + '<joint name="panda_joint1"/></group></robot>')
    notes = []
    semantics = choose_ik_groups(model, SimpleNamespace(ik=IKSettings(groups={})),
                                 SRDFDescription(text, 'test', parse_srdf(text, model)), notes)
    assert 'arm' in semantics.groups
    warnings = [text for level, text in cap_notes(notes) if level == 'warning']
    assert len(warnings) == MAX_LINES + 1
    assert 'missing_0' in warnings[0]
    assert warnings[-1] == f'... and {1000 - MAX_LINES} more warnings about this description (not logged)'


def test_the_log_line_of_the_groups_in_use_names_at_most_max_listed_groups():
    """Issue 24, case 6: 1,100 SRDF groups made a 44 kB log line; now the first MAX_LISTED_GROUPS
    and a count of the rest."""
    model = RobotModel.from_urdf(robot_xml('panda'))
    text = '<robot name="panda">' + ''.join(
        f'<group name="g{i}"><chain base_link="panda_link0" tip_link="panda_link{1 + i % 7}"/></group>'
        for i in range(1100)) + '</robot>'
    notes = []
    semantics = choose_ik_groups(model, SimpleNamespace(ik=IKSettings(groups={})),
                                 SRDFDescription(text, 'test', parse_srdf(text, model)), notes)
    assert len(semantics.groups) == 1101   # every group kept: only the log line is cut
    (line,) = [text for level, text in notes if level == 'info']
    assert f'... and {1101 - MAX_LISTED_GROUPS} more' in line and 'g0 (' in line and 'g1099' not in line
    assert len(line) < 4000
