"""One message or request never kills, freezes or floods the node (issue 24's node cases).

Each test runs the node as a real process and talks DDS to it:
* a megabyte frame id gets a reply of a few kB (the error names it, cut);
* 50 concurrent service calls are all answered (the servers' queue holds a burst);
* an IK timeout of 1e6 s is clamped to ``ik_max_timeout``, and SIGTERM ends solves in progress;
* a description with ten thousand problems, or an SRDF with ten thousand warnings, writes a
  bounded log;
* a description over ``max_links`` / ``max_description_bytes`` is rejected in one line and the old
  model stays; a robot over ``max_collision_pairs`` is not checked for self-collision;
* /tf keeps flowing while a large description loads;
* a JointState driving a mimic joint to inf is dropped with a warning, the node keeps publishing;
* SIGTERM during a reload exits 0.
"""

import re
import signal
import time

import pytest
import yaml
from builtin_interfaces.msg import Duration
from moveit_msgs.msg import MoveItErrorCodes
from moveit_msgs.srv import GetPositionFK, GetPositionIK, GetStateValidity
from node_harness import (
    FIXTURES,
    LATCHED_QOS,
    NODE_NAME,
    PANDA_UNREACHABLE_XYZ,
    KinNode,
    Probe,
    TFListener,
    joint_state,
    robot_xml,
)
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Header, String

from robokin_ros import RobotModel

#: A reply or a log that echoes one megabyte must stay under this many characters.
SMALL = 4000


def long_chain(n_links, name='long', sphere_radius=None):
    """URDF of a chain of ``n_links`` links (revolute joints), each with a collision sphere when
    ``sphere_radius`` is given."""
    collision = '' if sphere_radius is None else \
        f'<collision><geometry><sphere radius="{sphere_radius}"/></geometry></collision>'
    parts = [f'<robot name="{name}">', f'<link name="l0">{collision}</link>']
    for i in range(1, n_links):
        parts.append(f'<link name="l{i}">{collision}</link><joint name="j{i}" type="revolute"><parent link="l{i - 1}"/>'
                     f'<child link="l{i}"/><origin xyz="0 0 0.3"/><axis xyz="0 0 1"/>'
                     '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')
    parts.append('</robot>')
    return '\n'.join(parts)


def unreachable_ik(seconds, link='panda_hand_tcp'):
    """An IK request the solver works on for its whole ``seconds`` budget."""
    req = GetPositionIK.Request()
    req.ik_request.ik_link_name = link
    position = req.ik_request.pose_stamped.pose.position   # out of reach, within the chain's length
    position.x, position.y, position.z = PANDA_UNREACHABLE_XYZ
    req.ik_request.pose_stamped.pose.orientation.w = 1.0
    req.ik_request.timeout = Duration(sec=int(seconds), nanosec=int(seconds % 1 * 1e9))
    return req


def start_node(directory, namespace, params):
    """The node in ``namespace`` (so no other node of this module answers its services or feeds
    its topics) with ``params``."""
    path = directory / 'params.yaml'
    path.write_text(yaml.safe_dump({f'{namespace}/{NODE_NAME}': {'ros__parameters': params}}))
    return KinNode(directory, ros_args=['-r', f'__ns:={namespace}', '--params-file', str(path)])


def wait_for_log(probe, node, pattern, after=0, timeout=30.0):
    """Spin until the node's output past character ``after`` matches ``pattern``."""
    probe.spin_until(lambda: re.search(pattern, node.output()[after:], re.MULTILINE), pattern, timeout=timeout)


# --------------------------------------------------------------------------- panda node, services
@pytest.fixture(scope='module')
def panda(tmp_path_factory):
    proc = start_node(tmp_path_factory.mktemp('reliability'), '/services_ns', {
        'robot_description': robot_xml('panda'), 'ik_max_timeout': 0.5, 'ik_max_iterations': 100_000_000})
    yield proc
    proc.stop()


@pytest.fixture(scope='module')
def probe(ros_context, panda):
    p = Probe(ros_context, 'reliability_probe')
    p.watch = (panda,)
    deep = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE)   # a burst of replies
    p.fk = p.node.create_client(GetPositionFK, '/services_ns/compute_fk', qos_profile=deep)
    p.ik = p.node.create_client(GetPositionIK, '/services_ns/compute_ik', qos_profile=deep)
    p.spin_until(lambda: p.fk.service_is_ready() and p.ik.service_is_ready(), 'the services')
    yield p
    p.close()


def test_megabyte_frame_id_gets_a_short_reply(probe):
    huge = 'x' * 1_000_000
    fk = probe.call(probe.fk, GetPositionFK.Request(fk_link_names=['panda_hand'], header=Header(frame_id=huge)))
    assert fk.error_code.val == MoveItErrorCodes.FRAME_TRANSFORM_FAILURE
    assert "unknown link 'xxxx" in fk.error_code.message and '(1000000 characters)' in fk.error_code.message
    assert len(fk.error_code.message) < SMALL
    req = unreachable_ik(0.1)
    req.ik_request.ik_link_name = huge
    ik = probe.call(probe.ik, req)
    assert ik.error_code.val == MoveItErrorCodes.INVALID_LINK_NAME
    assert '(1000000 characters)' in ik.error_code.message and len(ik.error_code.message) < SMALL


def test_fifty_concurrent_calls_are_all_answered(probe):
    # 2 worker threads, 0.1 s per IK call: most requests wait in the server's queue, which must
    # hold them all (rclpy's default depth of 10 dropped 33-40 of 50); FK calls come in between
    futures = []
    for i in range(50):
        if i % 5 == 4:
            futures.append(probe.fk.call_async(GetPositionFK.Request(fk_link_names=['panda_hand'])))
        else:
            futures.append(probe.ik.call_async(unreachable_ik(0.1)))
    probe.spin_until(lambda: all(f.done() for f in futures), 'answers to all 50 calls', timeout=90.0)
    codes = [f.result().error_code.val for f in futures]
    assert codes.count(MoveItErrorCodes.TIMED_OUT) == 40 and codes.count(MoveItErrorCodes.SUCCESS) == 10


def test_ik_timeout_above_ik_max_timeout_is_clamped(probe, panda):
    # two calls asking for 1e6 s each, then an ordinary one: all answered within the clamp (their
    # messages say so; unclamped, the wait's 30 s ceiling ends the test: no speed is asserted)
    futures = [probe.ik.call_async(unreachable_ik(1e6)) for _ in range(2)]
    futures.append(probe.fk.call_async(GetPositionFK.Request(fk_link_names=['panda_hand'])))
    futures.append(probe.ik.call_async(unreachable_ik(0.1)))
    probe.spin_until(lambda: all(f.done() for f in futures), 'the answers', timeout=30.0)
    for f in futures[:2]:
        res = f.result()
        assert res.error_code.val == MoveItErrorCodes.TIMED_OUT
        assert 'the requested timeout 1e+06 s was clamped to ik_max_timeout = 0.5 s' in res.error_code.message
    assert futures[2].result().error_code.val == MoveItErrorCodes.SUCCESS
    assert futures[3].result().error_code.val == MoveItErrorCodes.TIMED_OUT
    assert 'clamped' not in futures[3].result().error_code.message
    assert panda.count(r'/compute_ik: the requested timeout 1e\+06 s was clamped') == 1   # once per value


@pytest.mark.parametrize('executor', ['events', 'threads'])
def test_sigterm_ends_long_ik_calls_promptly(ros_context, tmp_path, executor):
    proc = start_node(tmp_path, f'/sigterm_{executor}', {
        'robot_description': robot_xml('panda'), 'ik_max_timeout': 1e6, 'ik_max_iterations': 100_000_000,
        'executor': executor})
    p = Probe(ros_context, 'sigterm_probe')
    try:
        p.watch = (proc,)
        ik = p.client(GetPositionIK, f'/sigterm_{executor}/compute_ik')
        futures = [ik.call_async(unreachable_ik(1e6)) for _ in range(2)]
        p.spin_for(1.5)   # both solves under way
        assert not any(f.done() for f in futures)
        proc.popen.send_signal(signal.SIGTERM)
        proc.popen.wait(timeout=15.0)   # (the calls ask for 1e6 s: ending at all is the outcome)
        assert proc.popen.returncode == 0, proc.output()
        proc.returncode = 0
    finally:
        if proc.running():
            proc.popen.kill()
            proc.popen.wait()
        p.close()


# --------------------------------------------------------------------------- descriptions from the topic
@pytest.fixture
def topic_node(tmp_path):
    """A node reading the description from the topic, with panda loaded; small limits."""
    proc = start_node(tmp_path, '/topic_ns', {'description_from_topic': True, 'ignore_timestamp': True,
                                              'max_links': 3500, 'max_collision_pairs': 100,
                                              'max_description_bytes': 2_000_000})
    yield proc
    if proc.running():
        proc.stop()


@pytest.fixture
def topic_probe(ros_context, topic_node):
    p = Probe(ros_context, 'topic_probe')
    p.watch = (topic_node,)
    p.description = p.node.create_publisher(String, '/topic_ns/robot_description', LATCHED_QOS)
    p.semantic = p.node.create_publisher(String, '/topic_ns/robot_description_semantic', LATCHED_QOS)
    p.fk = p.client(GetPositionFK, '/topic_ns/compute_fk')
    p.description.publish(String(data=robot_xml('panda')))
    wait_for_log(p, topic_node, r"robot 'panda' from topic")
    yield p
    p.close()


def assert_panda_still_live(probe):
    res = probe.call(probe.fk, GetPositionFK.Request(fk_link_names=['panda_hand']))
    assert res.error_code.val == MoveItErrorCodes.SUCCESS, res.error_code.message


def test_urdf_with_ten_thousand_problems_writes_a_bounded_log(topic_probe, topic_node):
    bad = '<robot name="bad"><link name="base"/>' + ''.join(
        f'<joint name="j{i}" type="bogus"><parent link="base"/><child link="c{i}"/></joint>'
        for i in range(10_000)) + '</robot>'
    before = len(topic_node.output())
    topic_probe.description.publish(String(data=bad))
    wait_for_log(topic_probe, topic_node, r'rejected the robot description from topic', after=before)
    assert_panda_still_live(topic_probe)
    logged = topic_node.output()[before:]
    assert '... and ' in logged and len(logged) < 20 * SMALL, logged[:2000]


def test_srdf_with_ten_thousand_warnings_writes_a_bounded_log(topic_probe, topic_node):
    # 5,000 groups, each with a joint the robot has and one it does not: 5,000 warnings, and a
    # 5,000-group line saying which groups are used
    srdf = '<robot name="panda">' + ''.join(
        f'<group name="g{i}"><joint name="panda_joint1"/><joint name="no_joint_{i}"/></group>'
        for i in range(5_000)) + '</robot>'
    before = len(topic_node.output())
    topic_probe.semantic.publish(String(data=srdf))
    wait_for_log(topic_probe, topic_node, r'IK groups from the SRDF', after=before)
    wait_for_log(topic_probe, topic_node, r'and 4980 more warnings about this description \(not logged\)', after=before)
    logged = topic_node.output()[before:]
    assert len(logged) < 20 * SMALL, logged[:2000]


def test_description_over_max_links_is_rejected_in_one_line(topic_probe, topic_node):
    before = len(topic_node.output())
    topic_probe.description.publish(String(data=long_chain(3600)))
    wait_for_log(topic_probe, topic_node, r'the description has 3600 links, more than max_links = 3500', after=before)
    assert topic_node.count(r"rejected the robot description from topic .*keeping robot 'panda'") == 1
    assert_panda_still_live(topic_probe)


def test_description_over_max_description_bytes_is_rejected(topic_probe, topic_node):
    before = len(topic_node.output())
    padded = robot_xml('ur5e').replace('<robot ', '<!--' + ' ' * 2_000_000 + '-->\n<robot ', 1)
    topic_probe.description.publish(String(data=padded))
    wait_for_log(topic_probe, topic_node, r'more than max_description_bytes = 2000000', after=before)
    assert_panda_still_live(topic_probe)


def test_robot_over_max_collision_pairs_is_not_checked(topic_probe, topic_node):
    before = len(topic_node.output())
    topic_probe.description.publish(String(data=long_chain(20, 'spheres', sphere_radius=0.01)))   # 190 pairs
    wait_for_log(topic_probe, topic_node, r"robot 'spheres' has 190 collision geometry pairs, more than "
                                          r'max_collision_pairs = 100', after=before)
    check = topic_probe.client(GetStateValidity, '/topic_ns/check_state_validity')
    res = topic_probe.call(check, GetStateValidity.Request())
    assert not res.valid   # avoid_collisions_policy reject: never silently valid


def test_tf_keeps_flowing_while_a_large_description_loads(topic_probe, topic_node):
    tf = TFListener(topic_probe)
    states = topic_probe.publisher(JointState, '/topic_ns/joint_states')
    names = RobotModel.from_urdf(robot_xml('panda')).joint_names
    arrivals = []
    tf_count = [0]

    def tick():
        states.publish(joint_state(names, [0.1] * len(names)))
        if len(tf.dynamic_messages) != tf_count[0]:
            tf_count[0] = len(tf.dynamic_messages)
            arrivals.append(time.monotonic())

    before = len(topic_node.output())
    topic_probe.description.publish(String(data=long_chain(3000)))   # seconds to load
    published = time.monotonic()
    while not re.search(r"robot 'long' from topic", topic_node.output()[before:]):
        assert time.monotonic() - published < 60.0, 'the long chain was not loaded'
        tick()
        topic_probe.spin_for(0.02)
    loaded = time.monotonic()
    assert loaded - published > 1.0   # (the load did take a while)
    gaps = [b - a for a, b in zip([published] + arrivals, arrivals + [loaded])]
    # Loaded inline, the load was one gap (2.8 s here, 10 s under load); on the loader thread the
    # longest gap is 0.67 s of 3.2 s (a step that holds the GIL: compiling the generated kernel
    # source). Relative to the load time, so a slower machine slows both alike.
    assert max(gaps) < 0.5 * (loaded - published), \
        f'/tf stopped for {max(gaps):.2f} s of the {loaded - published:.2f} s the description took to load'


def test_mimic_joint_driven_to_inf_drops_the_message(topic_probe, topic_node):
    xml = (FIXTURES / 'prismatic_continuous_mimic.urdf').read_text()
    model = RobotModel.from_urdf(xml)
    topic_probe.description.publish(String(data=xml))
    wait_for_log(topic_probe, topic_node, r"robot 'prismatic_continuous_mimic' from topic")
    tf = TFListener(topic_probe)
    states = topic_probe.publisher(JointState, '/topic_ns/joint_states')
    names = list(model.joint_names)
    values = [1e308 if n == 'wheel_joint' else 0.0 for n in names]   # follower = 2 * 1e308 + 0.1 = inf

    def bad_state_dropped():
        states.publish(joint_state(names, values))
        topic_probe.spin_for(0.05)
        return topic_node.count(r'dropped a JointState the kinematics cannot evaluate')

    topic_probe.spin_until(bad_state_dropped, 'the warning about the bad joint state')
    assert not tf.dynamic_messages   # nothing published for it

    def good_state_published():
        states.publish(joint_state(names, [0.25] * len(names)))
        topic_probe.spin_for(0.05)
        return tf.dynamic_messages

    topic_probe.spin_until(good_state_published, 'a /tf after the bad joint state')
    slider = [t for m in tf.dynamic_messages for t in m.transforms if t.child_frame_id == 'slider']
    assert slider and slider[-1].transform.translation.x == pytest.approx(0.25)
    assert topic_node.running()


def test_sigterm_during_reloads_exits_zero(ros_context, tmp_path, monkeypatch):
    # A new kernel cache per trial: the kernels compile in the background (seconds) rather than
    # load from disk, so SIGTERM comes while a compile and the reload of a long chain are running.
    names = RobotModel.from_urdf(robot_xml('twin_arm_torso')).joint_names
    during_reload = []
    for trial in range(3):
        monkeypatch.setenv('ROBOKIN_CACHE_DIR', str(tmp_path / f'cache{trial}'))
        (tmp_path / f'trial{trial}').mkdir()
        ns = f'/reload{trial}'
        proc = start_node(tmp_path / f'trial{trial}', ns, {'description_from_topic': True, 'ignore_timestamp': True})
        p = Probe(ros_context, f'sigterm_reload_probe{trial}')
        try:
            p.watch = (proc,)
            description = p.node.create_publisher(String, f'{ns}/robot_description', LATCHED_QOS)
            description.publish(String(data=robot_xml('twin_arm_torso')))
            wait_for_log(p, proc, r"robot '\w+' from topic")
            torques = p.record(JointState, f'{ns}/robokin/gravity_torques')   # a subscriber: gravity is computed
            states = p.publisher(JointState, f'{ns}/joint_states')
            p.spin_until(lambda: p.node.count_publishers(f'{ns}/robokin/gravity_torques'), 'the gravity publisher')
            for i in range(400):   # 256 single calls start compiling the dynamics kernel
                states.publish(joint_state(names, [0.001 * i] * len(names)))
                p.spin_for(0.001)
            assert len(torques) > 256
            description.publish(String(data=long_chain(400, f'chain{trial}')))   # a reload of about a second
            p.spin_for(0.1 + 0.2 * trial)
            during_reload.append(not proc.count(f"robot 'chain{trial}' from topic"))
            proc.popen.send_signal(signal.SIGTERM)
            proc.popen.wait(timeout=40.0)
            assert proc.popen.returncode == 0, f'trial {trial}: exit code {proc.popen.returncode}\n{proc.output()}'
            proc.returncode = 0
        finally:
            if proc.running():
                proc.popen.kill()
                proc.popen.wait()
            p.close()
    assert any(during_reload), 'every reload had ended before SIGTERM: the test tested nothing'
