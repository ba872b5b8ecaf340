"""The node's parameters as the ROS tools see them (issue 30 item 5, issue 33 item 2).

``ros2 param dump /robokin`` printed ``ros__parameters: {}``: two string-array parameters were
declared without a value, and rclpy answers the whole get_parameters request empty then. An
integer for a float parameter (``-p publish_frequency:=30``, ``ik_timeout: 1``) stopped the node
with a traceback. ``publish_frequency = 1e-300`` and ``warning_period = 1e300`` passed the range
rules and the node then died with OverflowError, the set_parameters call unanswered.
"""

import time

import pytest
from node_harness import KinNode, robot_xml
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters, ListParameters, SetParameters
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter

from robokin_ros.node.parameters import MAX_PERIOD_NS, PARAMETERS, LiveState, StartupParameterError, check_value

PANDA_XML = robot_xml('panda')


@pytest.fixture
def ask(node_context):
    """``ask(node, srv_type, service, request) -> response``: a call through the node's parameter
    services, as ``ros2 param`` makes it (a client node in the same process, both spun here)."""
    client_node = Node('param_client', context=node_context)
    executor = SingleThreadedExecutor(context=node_context)
    executor.add_node(client_node)
    added = []

    def call(node, srv_type, service, request):
        if node not in added:
            executor.add_node(node)
            added.append(node)
        client = client_node.create_client(srv_type, f'{node.get_fully_qualified_name()}/{service}')
        deadline = time.monotonic() + 15.0
        while not client.service_is_ready():
            assert time.monotonic() < deadline, f'service {service} never came up'
            executor.spin_once(timeout_sec=0.05)
        future = client.call_async(request)
        while not future.done():
            assert time.monotonic() < deadline, f'no answer from {service}'
            executor.spin_once(timeout_sec=0.05)
        client_node.destroy_client(client)
        return future.result()

    yield call
    for node in added:
        executor.remove_node(node)
    executor.shutdown()
    client_node.destroy_node()


def test_param_dump_gets_every_parameter_with_a_value(make_node, ask):
    """What ``ros2 param dump`` does: list the names, then get them all in one request."""
    node = make_node(robot_description=PANDA_XML)
    names = ask(node, ListParameters, 'list_parameters', ListParameters.Request()).result.names
    assert set(PARAMETERS) <= set(names)
    values = ask(node, GetParameters, 'get_parameters', GetParameters.Request(names=list(names))).values
    assert len(values) == len(names)   # before: [] (one parameter without a value voided the whole answer)
    typed = dict(zip(names, values))
    assert all(v.type != ParameterType.PARAMETER_NOT_SET for v in values), typed
    assert typed['jacobian_frames'].type == ParameterType.PARAMETER_STRING_ARRAY
    assert list(typed['jacobian_frames'].string_array_value) == []
    assert typed['ik_group_names'].type == ParameterType.PARAMETER_STRING_ARRAY
    assert node.describe_parameter('ik_group_names').read_only   # still read-only once given its value


def test_string_lists_keep_their_start_up_values_and_stay_settable(make_node):
    node = make_node(robot_description=PANDA_XML, jacobian_frames=['panda_hand'])
    assert node.get_parameter('jacobian_frames').value == ['panda_hand']
    assert node.set_parameters([Parameter('jacobian_frames', value=['panda_link7'])])[0].successful
    assert node.settings.jacobian_frames == ('panda_link7',)


def test_integers_for_float_parameters_are_taken_at_start_up(make_node):
    """``-p publish_frequency:=30`` and ``ik_timeout: 1`` in a params file: YAML integers."""
    node = make_node(robot_description=PANDA_XML, publish_frequency=30, ik_timeout=1, warning_period=0)
    assert node.get_parameter('publish_frequency').value == 30.0
    assert node.get_parameter('publish_frequency').type_ == Parameter.Type.DOUBLE
    assert node.settings.interval_ns == 33_333_333 and node.settings.ik.timeout == 1.0


def test_integers_for_float_parameters_are_taken_at_run_time(make_node, ask):
    """``ros2 param set /robokin publish_frequency 30`` sends an integer."""
    node = make_node(robot_description=PANDA_XML)
    request = SetParameters.Request(parameters=[Parameter('publish_frequency', value=40).to_parameter_msg()])
    result = ask(node, SetParameters, 'set_parameters', request).results[0]
    assert result.successful, result.reason
    assert node.get_parameter('publish_frequency').value == 40.0 and node.settings.interval_ns == 25_000_000


def test_a_start_up_value_of_the_wrong_type_is_one_line_per_parameter(make_node):
    with pytest.raises(StartupParameterError) as info:
        make_node(publish_frequency='fast', ik_restarts=1.5)
    assert info.value.problems == ("publish_frequency must be a number, got 'fast' (str)",
                                   "ik_restarts must be an integer, got '1.5' (float)")


@pytest.mark.parametrize('name, value, reason', [
    ('publish_frequency', 1e-300, 'publish_frequency = 1e-300 Hz makes a period of 1e+300 s, more than the '
                                  '4.61e+09 s a 64-bit count of nanoseconds holds'),
    ('publish_frequency', 5e-324, 'publish_frequency = 5e-324 Hz makes a period of inf s'),
    ('warning_period', 1e300, 'warning_period = 1e+300 s is more than the 4.61e+09 s a 64-bit count of '
                              'nanoseconds holds'),
    ('ik_timeout', 1e12, 'ik_timeout = 1000000000000.0 s is more than the 2147483647 s a '
                         'builtin_interfaces/Duration holds'),
    ('ik_max_timeout', 3e9, 'ik_max_timeout = 3000000000.0 s is more than'),
])
def test_values_whose_derived_quantities_overflow_are_refused(name, value, reason):
    assert reason in check_value(name, value, LiveState())


def test_the_largest_accepted_periods_fit_64_bits():
    assert check_value('publish_frequency', 1e9 / MAX_PERIOD_NS, LiveState()) == ''
    assert check_value('warning_period', MAX_PERIOD_NS * 1e-9, LiveState()) == ''
    assert int(1e9 / (1e9 / MAX_PERIOD_NS)) < 2 ** 63 and int(MAX_PERIOD_NS * 1e-9 * 1e9) < 2 ** 63


@pytest.mark.parametrize('name, value', [('publish_frequency', 1e-300), ('warning_period', 1e300)])
def test_set_parameters_answers_an_overflowing_value_with_its_reason(make_node, ask, name, value):
    node = make_node(robot_description=PANDA_XML)
    request = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
    result = ask(node, SetParameters, 'set_parameters', request).results[0]
    assert not result.successful and 'a 64-bit count of nanoseconds' in result.reason
    assert node.settings.interval_ns == 50_000_000 and node.settings.warning_period_ns == 5_000_000_000
    assert ask(node, SetParameters, 'set_parameters', SetParameters.Request(
        parameters=[Parameter('publish_frequency', value=10.0).to_parameter_msg()])).results[0].successful


def test_a_failure_deriving_the_settings_is_a_refusal_not_a_crash(make_node, monkeypatch):
    """Whatever a rule misses, the apply step never raises: the check derives the settings first."""
    from robokin_ros.node import parameter_changes

    node = make_node(robot_description=PANDA_XML)

    def overflowing(get):
        raise OverflowError('cannot convert float infinity to integer')
    monkeypatch.setattr(parameter_changes, 'read_settings', overflowing)
    result = node.set_parameters([Parameter('publish_frequency', value=7.0)])[0]
    assert not result.successful
    assert result.reason == ("the settings from ['publish_frequency'] cannot be derived: OverflowError: cannot "
                             'convert float infinity to integer')
    assert node.get_parameter('publish_frequency').value == 20.0


@pytest.mark.slow   # starts the node process
def test_ros_args_integers_for_floats_start_the_node(tmp_path):
    """rcl's own parsing of ``-p`` and of a params file, in the real process."""
    proc = KinNode(tmp_path, params={'robot_description': PANDA_XML, 'ik_timeout': 1},
                   ros_args=['-p', 'publish_frequency:=30'])
    try:
        deadline = time.monotonic() + 30.0
        while proc.count("robot 'panda' from parameter robot_description") == 0:
            proc.assert_running()
            assert time.monotonic() < deadline, proc.output()
            time.sleep(0.05)
    finally:
        proc.stop()
    assert 'Traceback' not in proc.output()


@pytest.mark.slow   # starts the node process
def test_ros_args_value_of_the_wrong_type_stops_the_node_with_one_line(tmp_path):
    proc = KinNode(tmp_path, params={'robot_description': PANDA_XML}, ros_args=['-p', 'publish_frequency:=fast'])
    deadline = time.monotonic() + 30.0
    while proc.running() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.stop(expect_returncode=None) == 1, proc.output()
    output = proc.output()
    assert "invalid parameter: publish_frequency must be a number, got 'fast' (str)" in output, output
    assert 'Traceback' not in output, output
