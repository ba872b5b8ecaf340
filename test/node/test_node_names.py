"""One node per name whatever the remaps (issue 20, case 8): launch_ros turns ``name='robokin'``
into ``-r __node:=robokin``, which renames every node of the process. The services' companion
node must keep a name of its own, or ``ros2 param set`` reaches two nodes of one name and fails
on the one that declares nothing."""

import pytest
from node_harness import KinNode, Probe, robot_xml
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters

NAME = 'arm_kin'


@pytest.fixture(scope='module')
def node(tmp_path_factory):
    proc = KinNode(tmp_path_factory.mktemp('names'), params={'robot_description': robot_xml('panda')},
                   ros_args=['-r', f'__node:={NAME}'])
    yield proc
    proc.stop()


@pytest.fixture(scope='module')
def probe(ros_context, node):
    p = Probe(ros_context, 'names_probe')
    p.watch = (node,)
    yield p
    p.close()


def test_a_node_name_remap_names_one_node_and_its_companion_apart(probe, node):
    names = probe.spin_until(lambda: (lambda n: n if f'{NAME}_services' in n else None)(probe.node.get_node_names()),
                             f'nodes {NAME} and {NAME}_services')
    assert names.count(NAME) == 1, names
    assert names.count(f'{NAME}_services') == 1, names


def test_parameters_set_and_read_through_the_remapped_name(probe, node):
    setter = probe.client(SetParameters, f'/{NAME}/set_parameters')
    getter = probe.client(GetParameters, f'/{NAME}/get_parameters')
    for k in range(6):   # before the fix: 'Invalid access to undeclared parameter(s)' on the companion's answers
        timeout = 0.5 + 0.25 * k
        value = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=timeout)
        result = probe.call(setter, SetParameters.Request(parameters=[ParameterMsg(name='ik_timeout', value=value)]))
        assert result.results[0].successful, result.results[0].reason
        got = probe.call(getter, GetParameters.Request(names=['ik_timeout'])).values
        assert len(got) == 1 and got[0].type == ParameterType.PARAMETER_DOUBLE and got[0].double_value == timeout
