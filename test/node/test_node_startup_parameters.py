"""Start-up parameter values are held to the rules ``ros2 param set`` applies (issue 20, case 9):
a value it would refuse (from a params file or ``-p``) stops the node at once with exit code 1
and one line naming the parameter, instead of a traceback or a node that starts and then answers
every /compute_ik with CRASH."""

import time

import pytest
from node_harness import KinNode, robot_xml

pytestmark = pytest.mark.slow   # starts node processes

BAD_VALUES = [
    ('ik_timeout', -1.0, 'ik_timeout must be a finite number > 0'),
    ('ik_position_tolerance', -1.0, 'ik_position_tolerance must be a finite number > 0'),
    ('ik_restarts', -4, 'ik_restarts must be >= 0'),
    ('publish_frequency', -5.0, 'publish_frequency must be a finite number > 0'),
    ('warning_period', -1.0, 'warning_period must be a finite number >= 0'),
    ('avoid_collisions_policy', 'maybe', "avoid_collisions_policy must be 'reject' or 'solve_unchecked'"),
    ('jacobian_reference', 'sideways', "jacobian_reference: unknown Jacobian reference 'sideways'"),
]


@pytest.mark.parametrize(('name', 'value', 'message'), BAD_VALUES, ids=[case[0] for case in BAD_VALUES])
def test_a_value_param_set_refuses_stops_the_node_with_one_line(tmp_path, name, value, message):
    proc = KinNode(tmp_path, params={'robot_description': robot_xml('panda'), name: value})
    deadline = time.monotonic() + 30.0
    while proc.running() and time.monotonic() < deadline:
        time.sleep(0.05)
    returncode = proc.stop(expect_returncode=None)
    output = proc.output()
    assert returncode == 1, output
    assert f'invalid parameter: {message}' in output, output
    assert 'Traceback' not in output, output
