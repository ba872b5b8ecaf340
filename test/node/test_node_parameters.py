"""The node's parameter checks and description loading as plain functions (no rclpy, no DDS):
robokin_ros.node.parameters and robokin_ros.node.descriptions."""

import os
import subprocess
import sys
import threading

import pytest
from node_harness import ROBOTS, robot_xml

from robokin_ros import RobotModel
from robokin_ros.kinematics import Reference
from robokin_ros.node import descriptions
from robokin_ros.node.descriptions import Rejected, SRDFDescription, URDFDescription, load_parameter
from robokin_ros.node.live_robot import load_robot
from robokin_ros.node.parameters import (
    GROUP_KEYS,
    PARAMETERS,
    STRING_LIST,
    LiveState,
    NodeSettings,
    check_value,
    read_settings,
)

PANDA_XML = robot_xml('panda')
PANDA = RobotModel.from_urdf(PANDA_XML)
PANDA_SRDF = (ROBOTS / 'panda.srdf').read_text()
LIVE = LiveState('panda', PANDA.link_names, ('all', 'panda_arm'))


def defaults(**overrides):
    """Parameter values as the node reads them: the declared defaults, [] for unset lists."""
    values = {name: [] if spec.default is STRING_LIST else spec.default for name, spec in PARAMETERS.items()}
    values.update(overrides)
    return values


def imported_ros_modules(modules):
    """Top-level ROS modules (rclpy, launch, message packages) that importing ``modules`` loads."""
    code = (f'import sys, {", ".join(modules)}; '
            'print(sorted({m.split(".")[0] for m in sys.modules if m.startswith(("rclpy", "launch")) '
            'or m.endswith((".msg", ".srv"))}))')
    return subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.slow   # a fresh interpreter
def test_parameters_descriptions_and_launch_arguments_need_no_ros():
    """As launch_arguments always was: checked without a ROS install."""
    assert imported_ros_modules(['robokin_ros.node.parameters', 'robokin_ros.node.descriptions',
                                 'robokin_ros.node.launch_arguments']) == '[]'


@pytest.mark.slow   # a fresh interpreter
def test_the_live_robot_needs_messages_but_not_rclpy():
    assert 'rclpy' not in imported_ros_modules(['robokin_ros.node.live_robot'])


@pytest.mark.parametrize('name, value, reason', [
    ('publish_frequency', 0.0, 'publish_frequency must be a finite number > 0, got 0.0; to publish every joint '
                               'state set ignore_timestamp to true'),
    ('ik_timeout', float('nan'), 'ik_timeout must be a finite number > 0, got nan'),
    ('warning_period', -1.0, 'warning_period must be a finite number >= 0 [s], got -1.0'),
    ('ik_max_iterations', -1, 'ik_max_iterations must be >= 0 (0: no budget), got -1'),
    ('ik_restarts', -2, 'ik_restarts must be >= 0, got -2'),
    ('avoid_collisions_policy', 'maybe', "avoid_collisions_policy must be 'reject' or 'solve_unchecked', got 'maybe'"),
    ('jacobian_reference', 'body', "unknown Jacobian reference 'body'"),
    ('jacobian_frames', ['panda_hand', 'ghost'], "jacobian_frames names links that robot 'panda' does not have: "
                                                 "['ghost']"),
    ('default_ik_group', 'legs', "default_ik_group 'legs' is not one of the IK groups ['all', 'panda_arm']"),
    ('batch_threads', -1, 'batch_threads must be 0 to 1024, got -1'),
])
def test_bad_values_are_rejected_with_a_reason(name, value, reason):
    assert reason in check_value(name, value, LIVE)


@pytest.mark.parametrize('name, value', [
    ('publish_frequency', 100.0), ('warning_period', 0.0), ('jacobian_reference', 'WORLD'),
    ('jacobian_frames', ['panda_hand']), ('jacobian_frames', None), ('default_ik_group', 'panda_arm'),
    ('default_ik_group', ''), ('robot_description', 'anything: parsed by descriptions.load_parameter'),
])
def test_good_values_pass(name, value):
    assert check_value(name, value, LIVE) == ''


def test_batch_threads_leave_the_tf_thread_a_core_by_default(monkeypatch):
    from robokin_ros.kernels import parallel
    from robokin_ros.node.parameters import batch_threads

    monkeypatch.setattr(parallel, 'available_cores', lambda: 16)
    assert [batch_threads(0), batch_threads(3)] == [15, 3]
    monkeypatch.setattr(parallel, 'available_cores', lambda: 1)
    assert batch_threads(0) == 1


def test_names_are_checked_only_against_a_live_robot():
    assert check_value('jacobian_frames', ['ghost'], LiveState()) == ''
    assert check_value('default_ik_group', 'legs', LiveState()) == ''


@pytest.mark.parametrize('name, value, refused', [
    ('robot_description', PANDA_XML, True), ('robot_description', '', True),
    ('description_file', '/x.urdf', True), ('description_file', '', False),
    ('robot_description_semantic', PANDA_SRDF, False),
])
def test_description_parameters_are_refused_when_the_urdf_comes_from_the_topic(name, value, refused):
    reason = check_value(name, value, LiveState(description_from_topic=True))
    assert (reason == 'description_from_topic is true: publish the URDF on the robot_description topic '
                      'instead') is refused


def test_read_settings_from_the_defaults():
    settings = read_settings(defaults().__getitem__)
    assert isinstance(settings, NodeSettings)
    assert settings.interval_ns == 50_000_000 and settings.reference is Reference.LOCAL_WORLD_ALIGNED
    assert settings.jacobian_frames == () and settings.ik.groups == {}
    assert settings.ik.avoid_collisions_policy == 'reject'


def test_read_settings_with_ik_groups():
    values = defaults(ik_group_names=['arm'], publish_frequency=100.0, **{
        'ik_groups.arm.base': 'panda_link0', 'ik_groups.arm.tip': 'panda_hand',
        'ik_groups.arm.joints': ['panda_joint1'], 'ik_groups.arm.objective': 'closest'})
    settings = read_settings(values.__getitem__)
    assert settings.interval_ns == 10_000_000
    group = settings.ik.groups['arm']
    assert (group.base, group.tip, group.joints) == ('panda_link0', 'panda_hand', ('panda_joint1',))
    assert settings.ik.objectives == {'arm': 'closest'}
    assert set(GROUP_KEYS) == {'base', 'tip', 'joints', 'objective'}


# ---------------------------------------------------------------------------- descriptions
def test_load_parameter_parses_each_kind_once(tmp_path):
    urdf_file, srdf_file = tmp_path / 'panda.urdf', tmp_path / 'panda.srdf'
    urdf_file.write_text(PANDA_XML)
    srdf_file.write_text(PANDA_SRDF)
    urdf = load_parameter('description_file', str(urdf_file), None)
    assert isinstance(urdf, URDFDescription) and urdf.model.name == 'panda' and urdf.xml == PANDA_XML
    assert urdf.source == f'description_file {str(urdf_file)!r}'
    srdf = load_parameter('semantic_file', str(srdf_file), PANDA)
    assert isinstance(srdf, SRDFDescription) and srdf.semantic.model is PANDA and 'panda_arm' in srdf.semantic.groups
    assert srdf.for_model(PANDA) is srdf.semantic          # not parsed again for the same model
    unparsed = load_parameter('robot_description_semantic', PANDA_SRDF, None)   # no model yet: kept
    assert unparsed.semantic is None and unparsed.source == 'parameter robot_description_semantic'
    assert load_parameter('description_file', '', PANDA) is None
    assert load_parameter('robot_description_semantic', '', PANDA) is None


@pytest.mark.parametrize('name, value, reason', [
    ('robot_description', '', 'invalid robot description: invalid URDF: the description is empty'),
    ('robot_description', '<robot name="x"><link name="a"/><joint name="j" type="revolute"/></robot>',
     'invalid robot description: invalid URDF'),
    ('description_file', '/nonexistent/r.urdf', "description_file: cannot read '/nonexistent/r.urdf': No such file"),
    ('semantic_file', '/nonexistent/r.srdf', "semantic_file: cannot read '/nonexistent/r.srdf': No such file"),
    ('robot_description_semantic', '<robot', 'invalid semantic description: invalid SRDF: malformed XML'),
    ('robot_description_semantic', '<!DOCTYPE r [<!ENTITY a "x">]><robot name="p">&a;</robot>',
     'invalid semantic description: invalid SRDF: a <!DOCTYPE> or entity declaration is not allowed'),
])
def test_load_parameter_rejects_with_the_culprit(name, value, reason):
    with pytest.raises(Rejected) as info:
        load_parameter(name, value, PANDA)
    assert str(info.value).startswith(reason), str(info.value)


def test_a_parser_failure_becomes_a_rejection(monkeypatch):
    """Whatever a core parser raises (here a RecursionError, as review F1 found) is a Rejected naming it."""
    def recursing(xml, model):
        raise RecursionError('maximum recursion depth exceeded')
    monkeypatch.setattr(descriptions, 'parse_srdf', recursing)
    with pytest.raises(Rejected, match=r'^invalid semantic description: RecursionError: maximum recursion depth '
                                       r'exceeded \(unexpected: please report it\)$'):
        load_parameter('robot_description_semantic', PANDA_SRDF, PANDA)


def test_load_robot_reads_the_srdf_against_the_new_model_and_says_what_it_did():
    settings = read_settings(defaults(frame_prefix='p/').__getitem__)
    twin = URDFDescription(RobotModel.from_urdf(robot_xml('twin_arm_torso')), robot_xml('twin_arm_torso'), 'test')
    srdf = SRDFDescription('<robot', 'parameter robot_description_semantic')
    loaded = load_robot(twin, settings, srdf)
    assert loaded.robot.model is twin.model and loaded.robot.prefix == 'p/'
    assert loaded.srdf.semantic is None and loaded.robot.semantics.srdf is None   # it does not fit: kept, unused
    levels = [level for level, _ in loaded.notes]
    assert levels == ['error', 'info'], loaded.notes
    assert loaded.notes[0][1].startswith("the semantic description from parameter robot_description_semantic does "
                                         "not fit robot 'twin_arm_torso': invalid SRDF")
    assert loaded.notes[1][1].startswith('IK groups from the kinematic tree')
    panda = load_robot(URDFDescription(PANDA, PANDA_XML, 'test'), settings, SRDFDescription(PANDA_SRDF, 'file'),
                       previous=loaded.robot)
    assert 'panda_arm' in panda.robot.semantics.groups and panda.robot.semantics.srdf.model is PANDA
    assert any(text.startswith('IK groups from the SRDF (file)') for _, text in panda.notes)


def test_a_fifo_as_description_file_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / 'robot.urdf'
    os.mkfifo(fifo)
    outcome = {}

    def read():
        try:
            outcome['text'] = descriptions.read_file('description_file', str(fifo))
        except Rejected as e:
            outcome['reason'] = str(e)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(1.0)
    waited = reader.is_alive()
    if waited:   # release it: a writer that closes at once gives the reader end of file
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(5.0)
    assert not waited, 'reading a FIFO named by description_file waited for a writer (the node would hang)'
    assert outcome.get('reason', '').startswith('description_file: '), outcome
