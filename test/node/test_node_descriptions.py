"""kin_node as a process, over DDS: SRDFs that break the parser, on the latched topic and as a
parameter, leave the node up with its last good model (review F1); description_file set at run
time hot-reloads the robot, and an unreadable one is rejected with the reason (review F2)."""

import pytest
from moveit_msgs.msg import MoveItErrorCodes
from moveit_msgs.srv import GetPositionFK
from node_harness import LATCHED_QOS, ROBOTS, KinNode, Probe, TFListener, robot_xml
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from std_msgs.msg import String

PANDA_SRDF = (ROBOTS / 'panda.srdf').read_text()
#: A group that names a joint and then itself, on the bundled Panda: parse_srdf recursed without end
#: (RecursionError). Whether the core rejects it or reports the cycle, the node must stay up.
CYCLIC_SRDF = ('<robot name="panda"><group name="arm"><joint name="panda_joint1"/><group name="arm"/></group>'
               '</robot>')


@pytest.fixture(scope='module')
def node(tmp_path_factory):
    proc = KinNode(tmp_path_factory.mktemp('descriptions'), params={
        'robot_description': robot_xml('panda'), 'robot_description_semantic': PANDA_SRDF})
    yield proc
    proc.stop()


@pytest.fixture(scope='module')
def probe(ros_context, node):
    p = Probe(ros_context, 'descriptions_probe')
    p.watch = (node,)
    p.tf = TFListener(p)
    p.fk = p.client(GetPositionFK, '/compute_fk')
    p.params = p.client(SetParameters, '/robokin/set_parameters')
    yield p
    p.close()


def set_string(probe, name, value):
    p = ParameterMsg(name=name, value=ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value))
    return probe.call(probe.params, SetParameters.Request(parameters=[p])).results[0]


def fk_code(probe, link):
    return probe.call(probe.fk, GetPositionFK.Request(fk_link_names=[link])).error_code.val


def test_cyclic_srdf_on_the_topic_leaves_the_node_up_with_its_model(probe, node):
    probe.spin_until(lambda: node.count(r'IK groups from the SRDF \(parameter robot_description_semantic\)'),
                     'the Panda with its SRDF groups')
    pub = probe.publisher(String, '/robot_description_semantic', LATCHED_QOS)
    pub.publish(String(data=CYCLIC_SRDF))
    rejected = (r'rejected the semantic description from topic /robot_description_semantic '
                r'\(keeping the previous IK groups\)')
    taken = r'IK groups from the kinematic tree'   # srdfdom leaves the cyclic group out: the SRDF has none
    probe.spin_until(lambda: node.count(rejected) or node.count(taken), 'the cyclic SRDF rejected or taken')
    node.assert_running()
    assert fk_code(probe, 'panda_hand') == MoveItErrorCodes.SUCCESS
    probe.node.destroy_publisher(pub)


def test_cyclic_srdf_as_parameter_is_rejected_or_taken_never_fatal(probe, node):
    result = set_string(probe, 'robot_description_semantic', CYCLIC_SRDF)
    assert result.successful or result.reason.startswith('invalid semantic description: '), result.reason
    node.assert_running()
    assert fk_code(probe, 'panda_hand') == MoveItErrorCodes.SUCCESS


def test_description_file_at_run_time_reloads_the_robot(probe, node, tmp_path):
    path = tmp_path / 'twin.urdf'
    path.write_text(robot_xml('twin_arm_torso'))
    assert set_string(probe, 'description_file', str(path)).successful
    probe.spin_until(lambda: ('camera_link', 'camera_optical_frame') in probe.tf.static, '/tf_static of twin_arm_torso')
    assert node.count(rf"robot 'twin_arm_torso' from description_file '{path}'") == 1
    assert fk_code(probe, 'left_tool0') == MoveItErrorCodes.SUCCESS


def test_unreadable_description_file_is_rejected_and_the_robot_stays(probe, node, tmp_path):
    missing = tmp_path / 'none.urdf'
    result = set_string(probe, 'description_file', str(missing))
    assert not result.successful
    assert result.reason == f"description_file: cannot read '{missing}': No such file or directory"
    assert fk_code(probe, 'left_tool0') == MoveItErrorCodes.SUCCESS
