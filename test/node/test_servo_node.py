"""The servo node in the test process, driven through its callbacks and its cycle (no DDS): pause,
command type switching, stale commands, bad input (no motion, INVALID, one log line, alive), the
output messages; and, as a process, its topics and services over DDS (slow tier)."""

import math
import pathlib

import numpy as np
import pytest
from control_msgs.msg import JointJog
from geometry_msgs.msg import PoseStamped, TwistStamped
from moveit_msgs.srv import ServoCommandType
from node_harness import ROBOTS, joint_state
from rclpy.parameter import Parameter
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory

from robokin_ros import RobotModel
from robokin_ros.node.descriptions import Rejected
from robokin_ros.node.servo_node import ServoNode
from robokin_ros.servo import StatusCode

PANDA = (ROBOTS / 'panda.urdf').read_text()
READY = {'panda_joint2': -0.785, 'panda_joint4': -2.356, 'panda_joint6': 1.571, 'panda_joint7': 0.785}
PERIOD = 0.01


class Recorder:
    """Stands in for a publisher: keeps what is published."""

    def __init__(self):
        self.messages = []

    def publish(self, msg):
        self.messages.append(msg)


@pytest.fixture
def make_servo(node_context):
    nodes = []

    def make(**parameters):
        overrides = {'robot_description': PANDA, 'moveit_servo.publish_period': PERIOD, **parameters}
        node = ServoNode(context=node_context, namespace='/test_servo_node',
                         parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()])
        node.command_publisher, node.status_publisher = Recorder(), Recorder()
        nodes.append(node)
        return node

    yield make
    for node in nodes:
        node.destroy_node()


def ready_state(node, **changes):
    values = {**READY, **changes}
    names = [n for n in node.model.joint_names]
    return joint_state(names, [values.get(n, 0.0) for n in names])


def twist(x=0.0, y=0.0, z=0.0, frame=''):
    msg = TwistStamped()
    msg.header.frame_id = frame
    msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z = x, y, z
    return msg


def cycles(node, n, command=None, feed_back=True):
    """Run ``n`` cycles, giving ``command()`` before each (None: none); the robot follows exactly
    (its joint states are the commands out)."""
    for _ in range(n):
        if command is not None:
            command()
        before = len(node.command_publisher.messages)
        node.cycle()
        if feed_back and len(node.command_publisher.messages) > before:
            out = node.command_publisher.messages[-1]
            node.on_joint_state(joint_state(out.joint_names, list(out.points[0].positions)))


def speed(node):
    out = node.command_publisher.messages
    return max(abs(v) for v in out[-1].points[0].velocities) if out else 0.0


def status_codes(node):
    return [m.code for m in node.status_publisher.messages]


def test_a_twist_moves_the_arm_and_a_stale_one_stops_it(make_servo):
    node = make_servo(**{'moveit_servo.incoming_command_timeout': 0.05})
    node.on_joint_state(ready_state(node))
    cycles(node, 30, lambda: node.on_twist(twist(x=0.5)))
    assert speed(node) > 0.05
    first = node.command_publisher.messages[0]
    assert isinstance(first, JointTrajectory) and first.joint_names == [f'panda_joint{i}' for i in range(1, 8)]
    assert first.points[0].time_from_start.nanosec == int(PERIOD * 1e9)
    cycles(node, 100)   # no more commands: stale after 5 cycles, braking, then one holding point
    out = node.command_publisher.messages
    assert not any(out[-1].points[0].velocities)
    published = len(out)
    cycles(node, 10)
    assert len(node.command_publisher.messages) == published   # holds still: nothing more published


def test_pause_and_command_type_switching(make_servo):
    node = make_servo()
    node.on_joint_state(ready_state(node))
    assert node.on_pause(SetBool.Request(data=True), SetBool.Response()).success
    cycles(node, 20, lambda: node.on_twist(twist(x=0.5)))
    assert node.command_publisher.messages == [] and node.last_status.message == 'paused'
    node.on_pause(SetBool.Request(data=False), SetBool.Response())
    cycles(node, 5, lambda: node.on_twist(twist(x=0.5)))
    assert speed(node) > 0
    # a JointJog while the type is TWIST: refused with a reason
    jog = JointJog(joint_names=['panda_joint1'], velocities=[0.5])
    node.on_joint_jog(jog)
    node.cycle()
    assert node.last_status.code == StatusCode.INVALID and 'switch_command_type' in node.last_status.message
    response = node.on_switch(ServoCommandType.Request(command_type=ServoCommandType.Request.JOINT_JOG),
                              ServoCommandType.Response())
    assert response.success
    cycles(node, 80, lambda: node.on_joint_jog(jog))
    out = node.command_publisher.messages[-1]
    assert out.points[0].velocities[0] == pytest.approx(0.5 * node.parameters.scale_joint)
    assert not node.on_switch(ServoCommandType.Request(command_type=7), ServoCommandType.Response()).success


def test_pose_targets_converge(make_servo):
    node = make_servo()
    node.on_joint_state(ready_state(node))
    node.on_switch(ServoCommandType.Request(command_type=ServoCommandType.Request.POSE), ServoCommandType.Response())
    model = node.model
    q = model.q_from_dict(READY)
    from robokin_ros import frame_transform
    T = frame_transform(model, q, node.servo.base, node.servo.tip)
    target = PoseStamped()
    target.pose.position.x, target.pose.position.y, target.pose.position.z = T[:3, 3] + [0.03, 0.03, -0.0265]
    from robokin_ros.spatial import matrix_to_quat_xyzw
    x, y, z, w = matrix_to_quat_xyzw(T[:3, :3])
    target.pose.orientation.x, target.pose.orientation.y, target.pose.orientation.z, target.pose.orientation.w = x, y, z, w
    cycles(node, 200, lambda: node.on_pose(target))
    out = node.command_publisher.messages[-1]
    q_end = model.q_from_dict(dict(zip(out.joint_names, out.points[0].positions)))
    reached = frame_transform(model, q_end, node.servo.base, node.servo.tip)
    assert np.linalg.norm(reached[:3, 3] - (T[:3, 3] + [0.03, 0.03, -0.0265])) < 1e-3


BAD_INPUT = {
    'nan twist': lambda node: node.on_twist(twist(x=math.nan)),
    'inf twist': lambda node: node.on_twist(twist(y=math.inf)),
    'unknown frame': lambda node: node.on_twist(twist(x=0.1, frame='no_such_frame')),
    'huge frame name': lambda node: node.on_twist(twist(x=0.1, frame='x' * 100_000)),
}


@pytest.mark.parametrize('what', list(BAD_INPUT))
def test_bad_twists_move_nothing_and_log_once(make_servo, what):
    node = make_servo()
    node.on_joint_state(ready_state(node))
    logged = []
    node.get_logger().warning = logged.append   # (the node's own logger object)
    cycles(node, 10, lambda: BAD_INPUT[what](node))
    assert node.command_publisher.messages == []
    assert set(status_codes(node)) == {StatusCode.INVALID}
    assert len(logged) == 1, logged
    cycles(node, 3, lambda: node.on_twist(twist(x=0.5)))   # alive: a good command moves it
    assert speed(node) > 0


@pytest.mark.parametrize('jog', [JointJog(joint_names=['panda_joint1', 'panda_joint2'], velocities=[0.1]),
                                 JointJog(joint_names=['nope'], velocities=[0.1]),
                                 JointJog(joint_names=['panda_joint1'], velocities=[math.nan]),
                                 JointJog(joint_names=['j'] * 5000, velocities=[0.0] * 5000)],
                         ids=['lengths', 'unknown joint', 'nan', 'huge'])
def test_bad_joint_jogs_move_nothing(make_servo, jog):
    node = make_servo()
    node.on_joint_state(ready_state(node))
    node.on_switch(ServoCommandType.Request(command_type=0), ServoCommandType.Response())
    cycles(node, 5, lambda: node.on_joint_jog(jog))
    assert node.command_publisher.messages == [] and set(status_codes(node)) == {StatusCode.INVALID}


def test_missing_or_stale_joint_states_move_nothing(make_servo):
    node = make_servo(joint_state_timeout=0.2)
    cycles(node, 3, lambda: node.on_twist(twist(x=0.5)))
    assert node.command_publisher.messages == [] and 'no joint states' in node.last_status.message
    node.on_joint_state(joint_state(['panda_joint1'], [0.0]))   # not every joint of the group
    cycles(node, 3, lambda: node.on_twist(twist(x=0.5)))
    assert node.command_publisher.messages == []
    node.on_joint_state(ready_state(node))
    node._joint_time -= 1.0   # noqa: SLF001 - a second old, as if the driver had stopped
    cycles(node, 3, lambda: node.on_twist(twist(x=0.5)), feed_back=False)
    assert node.command_publisher.messages == [] and 'old' in node.last_status.message
    bad = JointState(name=['panda_joint1'], position=[0.0, 1.0])
    node.on_joint_state(bad)   # mismatched lengths: ignored, reported
    node.cycle()
    assert node.last_status.code == StatusCode.INVALID


def test_float64_multi_array_out(make_servo):
    node = make_servo(**{'moveit_servo.command_out_type': 'std_msgs/Float64MultiArray',
                         'moveit_servo.publish_joint_positions': False})
    node.on_joint_state(ready_state(node))
    cycles(node, 20, lambda: node.on_twist(twist(x=0.5)), feed_back=False)
    out = node.command_publisher.messages[-1]
    assert isinstance(out, Float64MultiArray) and len(out.data) == 7 and any(out.data)


def test_bad_parameters_or_description_refuse_to_start(node_context):
    with pytest.raises(Rejected, match='command_in_type'):
        ServoNode(context=node_context, parameter_overrides=[
            Parameter('robot_description', value=PANDA), Parameter('moveit_servo.command_in_type', value='fast')])
    with pytest.raises(Rejected, match='robot description'):
        ServoNode(context=node_context)
    with pytest.raises(Rejected, match='move_group_name'):
        ServoNode(context=node_context, parameter_overrides=[
            Parameter('robot_description', value=PANDA), Parameter('moveit_servo.move_group_name', value='legs')])


def test_the_model_is_the_description(make_servo):
    node = make_servo()
    assert node.model.equals(RobotModel.from_urdf(PANDA)) and pathlib.Path(ROBOTS).is_dir()


# ---------------------------------------------------------------------------- as a process (slow)
def readme_twist_line():
    """``(topic, type, YAML)`` of the README's ``ros2 topic pub`` twist line."""
    import re
    text = (pathlib.Path(__file__).resolve().parents[2] / 'README.md').read_text()
    match = re.search(r'ros2 topic pub (?:-r \d+ )?(\S+) (\S+) "([^"]*)"', text)
    assert match, 'the README shows no ros2 topic pub line'
    return match.groups()


@pytest.mark.parametrize('entry', [['-m', 'robokin_ros.node.servo_node'], ['robokin_entry.py', 'servo_node']],
                         ids=['module', 'entry'])
def test_the_process_follows_the_readme_twist_line_pauses_and_switches(ros, start_process, entry):
    """The README's ``ros2 topic pub`` twist, as ``ros2 topic pub`` fills it (set_message_fields),
    moves the tip along +x; pause and switch_command_type answer over DDS."""
    import os

    import yaml
    from test_readme_commands import set_message_fields

    root = pathlib.Path(__file__).resolve().parents[2]
    env = dict(os.environ)
    env['PYTHONPATH'] = os.pathsep.join([str(root)] + [p for p in [env.get('PYTHONPATH')] if p])
    proc = start_process([*entry, '--ros-args', '-p', 'robot_description:=' + PANDA], env=env, cwd=str(root))
    topic, type_name, values = readme_twist_line()
    assert topic == '/servo_node/delta_twist_cmds' and type_name == 'geometry_msgs/msg/TwistStamped'
    command = TwistStamped()
    set_message_fields(command, yaml.safe_load(values))
    states = ros.node.create_publisher(JointState, '/joint_states', 10)
    twists = ros.node.create_publisher(TwistStamped, topic, 10)
    model = RobotModel.from_urdf(PANDA)
    state = joint_state(model.joint_names, [READY.get(n, 0.0) for n in model.joint_names])
    ros.node.create_timer(0.02, lambda: (states.publish(state), twists.publish(command)))
    out = ros.wait_for_message(JointTrajectory, '/servo_node/joint_trajectory',
                               lambda m: any(abs(v) > 1e-3 for v in m.points[0].velocities), watch=[proc])
    q = model.q_from_dict(dict(zip(out.joint_names, out.points[0].positions)), base=model.q_from_dict(READY))
    from robokin_ros import frame_transform
    moved = frame_transform(model, q, 'panda_link0', 'panda_hand_tcp')[:3, 3] \
        - frame_transform(model, model.q_from_dict(READY), 'panda_link0', 'panda_hand_tcp')[:3, 3]
    assert moved[0] > 0 and abs(moved[0]) > 5 * max(abs(moved[1]), abs(moved[2]))
    pause = ros.wait_for_service(SetBool, '/servo_node/pause_servo', watch=[proc])
    assert ros.call(pause, SetBool.Request(data=True), watch=[proc]).success
    from moveit_msgs.msg import ServoStatus as StatusMsg
    ros.wait_for_message(StatusMsg, '/servo_node/status', lambda m: m.message == 'paused', watch=[proc])
    switch = ros.wait_for_service(ServoCommandType, '/servo_node/switch_command_type', watch=[proc])
    assert ros.call(switch, ServoCommandType.Request(command_type=2), watch=[proc]).success
    assert not ros.call(switch, ServoCommandType.Request(command_type=9), watch=[proc]).success
    proc.stop()


@pytest.mark.parametrize('page', ['README.md', 'docs/servo.md'])
def test_the_servo_launch_and_twist_lines_of_the_pages(page):
    """The ``ros2 launch robokin_ros servo.launch.py`` lines of README.md and docs/servo.md pass
    the launch's argument check; their ``ros2 topic pub`` twist line is the README's (which the
    process test runs); docs/servo.md's ``switch_command_type`` call names TWIST."""
    import re

    from robokin_ros.node.launch_arguments import unknown_arguments

    text = (pathlib.Path(__file__).resolve().parents[2] / page).read_text()
    lines = [line.split('#')[0] for line in text.splitlines() if 'ros2 launch robokin_ros servo.launch.py' in line]
    assert lines
    for line in lines:
        assert unknown_arguments(line.split('servo.launch.py', 1)[1].split()) == [], line
    assert re.search(r'ros2 topic pub (?:-r \d+ )?(\S+) (\S+) "([^"]*)"', text).groups() == readme_twist_line()
    call = re.search(r'ros2 service call (\S+) moveit_msgs/srv/ServoCommandType "\{command_type: (\d)\}"', text)
    if call:
        assert call.groups() == ('/servo_node/switch_command_type', str(int(ServoCommandType.Request.TWIST)))


def test_config_servo_yaml_lists_every_parameter_with_its_default():
    import yaml

    from robokin_ros.servo import ServoParameters

    root = pathlib.Path(__file__).resolve().parents[2]
    content = yaml.safe_load((root / 'config' / 'servo.yaml').read_text())['/**']['ros__parameters']

    def flat(mapping, prefix=''):
        for key, value in mapping.items():
            if isinstance(value, dict):
                yield from flat(value, f'{prefix}{key}.')
            else:
                yield f'{prefix}{key}', value

    listed = dict(flat(content['moveit_servo']))
    defaults = ServoParameters().as_dict()
    assert set(listed) == set(defaults)
    assert {k: tuple(v) if isinstance(v, list) else v for k, v in listed.items()} == defaults
    assert ServoParameters.from_dict(listed) == ServoParameters()


def test_integers_where_floats_are_meant_and_bad_groups(make_servo, node_context):
    node = make_servo(**{'moveit_servo.scale.linear': 1, 'moveit_servo.joint_limit_margins': [0.05]})
    assert node.parameters.scale_linear == 1 and node.parameters.joint_limit_margins == (0.05,)
    with pytest.raises(Rejected, match='joint_limit_margins'):
        ServoNode(context=node_context, parameter_overrides=[
            Parameter('robot_description', value=PANDA), Parameter('moveit_servo.joint_limit_margins', value=[0.1, 0.2])])
    with pytest.raises(Rejected, match=r'scale\.linear: must be'):
        ServoNode(context=node_context, parameter_overrides=[
            Parameter('robot_description', value=PANDA), Parameter('moveit_servo.scale.linear', value='fast')])


def test_servo_launch_declares_kin_launchs_description_arguments_and_its_defaults_pass():
    """launch/servo.launch.py (read, not imported: launch_ros may be missing here) declares the
    description arguments of kin.launch.py, and its defaults pass the same checks before anything
    starts."""
    import ast

    from robokin_ros.node.launch_arguments import ARGUMENTS, check_launch_arguments

    root = pathlib.Path(__file__).resolve().parents[2]
    tree = ast.parse((root / 'launch' / 'servo.launch.py').read_text())
    defaults = next(node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                    and getattr(node.targets[0], 'id', None) == 'DEFAULTS')
    names = {key.value for key in defaults.keys}
    assert names == {'description_file', 'semantic_file', 'params_file', 'frame_prefix', 'use_sim_time'}
    assert names <= set(ARGUMENTS)
    plan = check_launch_arguments({'description_file': str(ROBOTS / 'panda.urdf'), 'semantic_file': '',
                                   'params_file': str(root / 'config' / 'servo.yaml'), 'frame_prefix': '',
                                   'use_sim_time': 'false', 'use_rviz': 'false', 'use_web_view': 'false'},
                                  ['description_file:=x.urdf'], rviz_available=lambda: False)
    assert plan.params_file.endswith('servo.yaml') and not plan.use_rviz
