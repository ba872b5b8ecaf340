"""robokin_ros.node.conversions: messages <-> numpy, without DDS (no rclpy.init)."""

import array

import numpy as np
import pytest
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Pose, Transform
from moveit_msgs.msg import JointConstraint, RobotState
from node_harness import FIXTURES, robot_xml
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension

from robokin_ros import RobotModel, jacobian
from robokin_ros.errors import NonFiniteError, ShapeError, UnknownJointError, UnknownLinkError
from robokin_ros.node import conversions as cv
from robokin_ros.spatial import quat_xyzw_to_matrix

PANDA = RobotModel.from_urdf(robot_xml('panda'))
FLOATING = RobotModel.from_urdf_file(FIXTURES / 'floating.urdf')
PLANAR = RobotModel.from_urdf_file(FIXTURES / 'planar_joint.urdf')


def random_rotations(n, rng):
    quats = np.random.default_rng(rng).standard_normal((n, 4))
    return quat_xyzw_to_matrix(quats)


def test_pose_round_trip_and_normalisation():
    T = np.eye(4)
    T[:3, :3] = random_rotations(1, 1)[0]
    T[:3, 3] = [0.1, -2.0, 3.5]
    np.testing.assert_allclose(cv.pose_to_matrix(cv.matrix_to_pose(T)), T, atol=1e-12)
    pose = cv.matrix_to_pose(T)
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = [
        2 * v for v in (pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w)]
    np.testing.assert_allclose(cv.pose_to_matrix(pose), T, atol=1e-12)


@pytest.mark.parametrize('field, value, message', [
    ('w', 0.0, r'target has a zero orientation quaternion'),
    ('x', float('nan'), r'target has non-finite entries'),
])
def test_bad_poses_are_refused(field, value, message):
    pose = Pose()
    setattr(pose.orientation, field, value)
    with pytest.raises(cv.InvalidMessageError, match=message):
        cv.pose_to_matrix(pose, 'target')


def test_time_conversions():
    assert cv.stamp_to_ns(Time(sec=3, nanosec=5)) == 3_000_000_005
    assert cv.ns_to_stamp(3_000_000_005) == Time(sec=3, nanosec=5)
    assert cv.duration_to_seconds(Duration(sec=1, nanosec=500_000_000)) == 1.5


def test_frames_and_topic_tokens():
    assert cv.strip_prefix('r1/base', 'r1/') == 'base'
    assert cv.strip_prefix('base', 'r1/') == 'base'
    assert cv.resolve_link(PANDA, 'r1/panda_hand', 'r1/') == 'panda_hand'
    assert cv.resolve_link(PANDA, 'panda_hand', 'r1/') == 'panda_hand'
    assert cv.resolve_link(PANDA, '', 'r1/') == 'panda_link0'
    with pytest.raises(UnknownLinkError, match=r"unknown link 'panda_hnd'; did you mean 'panda_hand'"):
        cv.resolve_link(PANDA, 'panda_hnd', '')
    with pytest.raises(UnknownLinkError, match=r"unknown link ''"):
        cv.resolve_link(PANDA, '', '', empty_is_root=False)
    assert cv.topic_token('arm-link.1') == 'arm_link_1'
    assert cv.topic_token('3d_camera') == '_3d_camera'


def test_transform_batch_fills_reused_messages():
    batch = cv.TransformBatch(['a', 'b'], ['b', 'c'])
    T = np.tile(np.eye(4), (2, 1, 1))
    T[1, :3, :3] = random_rotations(1, 2)[0]
    T[1, :3, 3] = [1.0, 2.0, 3.0]
    out = batch.fill(np.array([1]), T[1:], Time(sec=7))
    assert len(out) == 1 and out[0] is batch.messages[1]
    t = out[0]
    assert (t.header.frame_id, t.child_frame_id, t.header.stamp.sec) == ('b', 'c', 7)
    r = t.transform.rotation
    np.testing.assert_allclose(quat_xyzw_to_matrix([r.x, r.y, r.z, r.w]), T[1, :3, :3], atol=1e-12)
    assert (t.transform.translation.x, t.transform.translation.y, t.transform.translation.z) == (1.0, 2.0, 3.0)


def test_joint_state_map_keeps_good_entries_and_names_the_bad_ones():
    m = cv.JointStateMap(PANDA)
    names = ['panda_joint2', 'panda_finger_joint2', 'panda_hand_joint', 'ghost', 'panda_joint5']
    update = m.parse(names, array.array('d', [0.5, 0.01, 0.0, 1.0, float('inf')]))
    assert update.q_indices.tolist() == [1]        # joint2 only: joint5 is inf
    assert update.values.tolist() == [0.5]
    assert update.unknown == ('ghost',)            # mimic and fixed joints are accepted silently
    assert update.nonfinite == ('panda_joint5',)
    with pytest.raises(ShapeError, match=r'JointState.position must have shape \(2,\) like JointState.name, got \(1,\)'):
        m.parse(['panda_joint1', 'panda_joint2'], [0.0])


def test_joint_values_to_q_is_strict():
    base = PANDA.home_configuration()
    q = cv.joint_values_to_q(PANDA, ['panda_joint3'], [0.7], base)
    assert q[2] == 0.7 and np.array_equal(np.delete(q, 2), np.delete(base, 2))
    with pytest.raises(UnknownJointError, match=r"unknown joint 'elbow'"):
        cv.joint_values_to_q(PANDA, ['elbow'], [0.0], base)
    with pytest.raises(NonFiniteError, match=r'panda_joint3'):
        cv.joint_values_to_q(PANDA, ['panda_joint3'], [float('nan')], base)


def test_robot_state_round_trip_with_a_floating_joint():
    q = FLOATING.random_configuration(rng=3)
    state = cv.q_to_robot_state(FLOATING, q)
    assert list(state.multi_dof_joint_state.joint_names) == ['floating_joint']
    assert 'arm_joint' in state.joint_state.name
    back = cv.robot_state_to_q(FLOATING, state, FLOATING.home_configuration())
    np.testing.assert_allclose(back[:3], q[:3], atol=1e-12)
    # same rotation (a quaternion and its negative)
    np.testing.assert_allclose(quat_xyzw_to_matrix(back[3:7]), quat_xyzw_to_matrix(q[3:7]), atol=1e-12)
    np.testing.assert_allclose(back[7:], q[7:], atol=1e-12)


def test_planar_coordinates_travel_as_labelled_joint_state_entries():
    q = PLANAR.random_configuration(rng=4)
    state = cv.q_to_robot_state(PLANAR, q)
    assert {'planar_joint/x', 'planar_joint/y', 'planar_joint/theta'} <= set(state.joint_state.name)
    np.testing.assert_allclose(cv.robot_state_to_q(PLANAR, state, PLANAR.home_configuration()), q)
    # as MoveIt reads it, a planar joint may come as a transform too: x, y and the angle about z
    moved = RobotState()
    moved.multi_dof_joint_state.joint_names = ['planar_joint']
    moved.multi_dof_joint_state.transforms = [Transform()]
    tf = moved.multi_dof_joint_state.transforms[0]
    tf.translation.x, tf.translation.y, tf.translation.z = 0.5, -0.25, 9.0
    tf.rotation.z, tf.rotation.w = np.sin(0.35), np.cos(0.35)
    np.testing.assert_allclose(cv.robot_state_to_q(PLANAR, moved, PLANAR.home_configuration())[:3], [0.5, -0.25, 0.7])
    bad = RobotState()
    bad.multi_dof_joint_state.joint_names = ['arm_joint']
    bad.multi_dof_joint_state.transforms = [Transform()]
    with pytest.raises(cv.InvalidMessageError, match=r"names joint 'arm_joint' of type revolute; only floating and "
                                                     r"planar"):
        cv.robot_state_to_q(FLOATING, bad, FLOATING.home_configuration())
    bad.multi_dof_joint_state.joint_names = ['planar_joint']
    bad.multi_dof_joint_state.transforms = []
    with pytest.raises(cv.InvalidMessageError, match=r'1 joint_names but 0 transforms'):
        cv.robot_state_to_q(PLANAR, bad, PLANAR.home_configuration())


def test_joint_bounds_intersect_constraints_with_limits():
    lower, upper = cv.joint_bounds(PANDA, [JointConstraint(joint_name='panda_joint1', position=2.8,
                                                           tolerance_above=0.5, tolerance_below=0.1)])
    assert (lower[0], upper[0]) == (pytest.approx(2.7), PANDA.q_upper[0])
    np.testing.assert_array_equal(lower[1:], PANDA.q_lower[1:])
    with pytest.raises(cv.InvalidMessageError, match=r'non-negative tolerances'):
        cv.joint_bounds(PANDA, [JointConstraint(joint_name='panda_joint1', tolerance_above=-1.0)])


def test_jacobian_message_round_trip():
    q = PANDA.random_configuration(rng=5)
    J = jacobian(PANDA, q, 'panda_hand', 'world')
    layout = cv.jacobian_layout('r1/panda_hand', 'world', PANDA.v_names)
    decoded = cv.parse_jacobian_msg(cv.jacobian_to_msg(J, layout))
    assert (decoded.frame, decoded.reference) == ('r1/panda_hand', 'world')
    assert decoded.rows == cv.JACOBIAN_ROWS and decoded.columns == PANDA.v_names
    np.testing.assert_array_equal(decoded.J, J)


def test_foreign_multiarrays_are_not_taken_for_jacobians():
    msg = Float64MultiArray(data=[1.0, 2.0])
    with pytest.raises(cv.InvalidMessageError, match=r'a Jacobian message has 2 dimensions, got 0'):
        cv.parse_jacobian_msg(msg)
    msg.layout.dim = [MultiArrayDimension(label='x', size=1), MultiArrayDimension(label='y', size=2)]
    with pytest.raises(cv.InvalidMessageError, match=r'unrecognised Jacobian layout labels'):
        cv.parse_jacobian_msg(msg)
    layout = cv.jacobian_layout('f', 'world', ['a', 'b'])
    with pytest.raises(cv.InvalidMessageError, match=r'Jacobian data has 2 entries, layout says 6 x 2'):
        cv.parse_jacobian_msg(Float64MultiArray(layout=layout, data=[1.0, 2.0]))


def test_joint_state_message_type_is_what_the_node_reads():
    msg = JointState(name=['panda_joint1'], position=[0.25])
    update = cv.JointStateMap(PANDA).parse(msg.name, msg.position)
    assert update.values.tolist() == [0.25]


@pytest.mark.parametrize('rows', [[0, 1, 2], [2], [1, 2]])
def test_tf_encoder_bytes_decode_to_the_message_rclpy_would_send(rows):
    from rclpy.serialization import deserialize_message, serialize_message
    from tf2_msgs.msg import TFMessage
    parents, children = ['world', 'r1/a_long_parent_name', 'b'], ['r1/a_long_parent_name', 'b', 'tool0']
    T = np.tile(np.eye(4), (3, 1, 1))
    T[:, :3, :3] = random_rotations(3, 6)
    T[:, :3, 3] = np.random.default_rng(7).standard_normal((3, 3))
    rows = np.array(rows)
    stamp = Time(sec=-5, nanosec=999_999_999)
    encoder = cv.TFMessageEncoder(parents, children)
    expected = TFMessage(transforms=cv.TransformBatch(parents, children).fill(rows, T[rows], stamp))
    for _ in range(2):  # the second call uses the cached template
        data = encoder.encode(rows, cv.poses_xyz_quat(T[rows]), stamp)
        # same size as rclpy's serialisation (which leaves alignment padding uninitialised: its
        # bytes may differ there), and decodes to exactly the expected message
        assert len(data) == len(serialize_message(expected))
        assert deserialize_message(data, TFMessage) == expected


@pytest.mark.slow   # 2,000,000 names under tracemalloc
def test_name_list_cache_is_bounded_for_long_lists():
    """100k-name lists are looked up without caching: 20 distinct ones leave no trace."""
    import tracemalloc

    from robokin_ros.node import conversions
    model = RobotModel.from_urdf(robot_xml('panda'))
    mapping = conversions.JointStateMap(model)
    positions = np.zeros(100_000)
    tracemalloc.start()
    for k in range(20):
        names = [f'n{k}_{i}' for i in range(100_000)]
        update = mapping.parse(names, positions)
        assert len(update.unknown) == 100_000
        del names, update
    # What conversions.py still holds (other threads of this process, e.g. a kernel compiling
    # in the background for an earlier test, allocate meanwhile: not counted).
    snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, conversions.__file__)])
    tracemalloc.stop()
    held = sum(stat.size for stat in snapshot.statistics('filename'))
    assert len(mapping._cache) == 0
    assert held < 2_000_000, held


def test_some_names_is_bounded():
    from robokin_ros.node.conversions import some_names
    assert some_names(['a', 'b']) == "['a', 'b']"
    text = some_names([f'joint_{i}' for i in range(100_000)])
    assert text.endswith('... and 99995 more]') and len(text) < 200
