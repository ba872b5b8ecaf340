"""Messages <-> numpy for the node: pure functions, no rclpy, testable without DDS.

Frames in messages may carry the node's ``frame_prefix``; the model knows bare link names.
Configurations are ``q (n_q,)`` in ``model.q_names`` order (see :mod:`robokin_ros.model`).
"""

from __future__ import annotations

import array
import math
import re
import struct
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
from builtin_interfaces.msg import Duration, Time
from geometry_msgs.msg import Pose, Transform, TransformStamped
from moveit_msgs.msg import RobotState
from sensor_msgs.msg import JointState, MultiDOFJointState
from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout

from .. import ik
from ..errors import NonFiniteError, ShapeError, UnknownJointError, UnknownLinkError
from ..model import SCALAR_TYPES, JointType, RobotModel
from ..spatial import matrix_to_quat_xyzw, quat_xyzw_to_matrix

#: Row labels of every Jacobian message: twists are [linear; angular].
JACOBIAN_ROWS = ('linear_x', 'linear_y', 'linear_z', 'angular_x', 'angular_y', 'angular_z')

_MAX_CACHED_NAME_LISTS = 64
#: Longer name lists are looked up without caching (bounded memory whatever publishers send).
_MAX_CACHED_NAMES = 1024


class InvalidMessageError(ValueError):
    """A message field the node cannot use (the text names the field and the problem)."""


# ---------------------------------------------------------------------------- time
def stamp_to_ns(stamp: Time) -> int:
    """Nanoseconds of a ``builtin_interfaces/Time``."""
    return stamp.sec * 1_000_000_000 + stamp.nanosec


def ns_to_stamp(ns: int) -> Time:
    """``builtin_interfaces/Time`` of a nanosecond count (>= 0)."""
    return Time(sec=int(ns // 1_000_000_000), nanosec=int(ns % 1_000_000_000))


def duration_to_seconds(duration: Duration) -> float:
    """Seconds of a ``builtin_interfaces/Duration``."""
    return duration.sec + duration.nanosec * 1e-9


# ---------------------------------------------------------------------------- frames and names
def strip_prefix(frame: str, prefix: str) -> str:
    """Bare link name of a frame id that may carry the node's ``frame_prefix``."""
    if prefix and frame.startswith(prefix):
        return frame[len(prefix):]
    return frame


def resolve_link(model: RobotModel, frame: str, prefix: str, empty_is_root: bool = True) -> str:
    """Link name of a frame id (with or without ``prefix``; empty: the root link when allowed).

    Raises:
        UnknownLinkError: the frame is not a link of the model.
    """
    if not frame and empty_is_root:
        return model.root_link
    for candidate in (strip_prefix(frame, prefix), frame):
        if candidate in model.link_names:
            return candidate
    raise UnknownLinkError(frame, model.link_names)


def topic_token(name: str) -> str:
    """A valid ROS topic name token for a link name (invalid characters become ``_``)."""
    token = re.sub(r'[^A-Za-z0-9_]', '_', name) or '_'
    return '_' + token if token[0].isdigit() else token


# ---------------------------------------------------------------------------- poses
def pose_to_matrix(pose: Pose, what: str = 'pose') -> np.ndarray:
    """Homogeneous transform ``(4, 4)`` of a ``geometry_msgs/Pose``; the quaternion is normalised.

    Raises:
        InvalidMessageError: non-finite entries or a quaternion of (near) zero norm.
    """
    p, o = pose.position, pose.orientation
    return _matrix(np.array([p.x, p.y, p.z, o.x, o.y, o.z, o.w]), what)


def transform_to_matrix(transform: Transform, what: str = 'transform') -> np.ndarray:
    """Homogeneous transform ``(4, 4)`` of a ``geometry_msgs/Transform``; see :func:`pose_to_matrix`."""
    t, r = transform.translation, transform.rotation
    return _matrix(np.array([t.x, t.y, t.z, r.x, r.y, r.z, r.w]), what)


def _matrix(values: np.ndarray, what: str) -> np.ndarray:
    """Transform of ``[x, y, z, qx, qy, qz, qw]``."""
    if not np.all(np.isfinite(values)):
        raise InvalidMessageError(f'{what} has non-finite entries')
    if np.linalg.norm(values[3:]) < 1e-6:
        raise InvalidMessageError(f'{what} has a zero orientation quaternion')
    T = np.eye(4)
    T[:3, :3] = quat_xyzw_to_matrix(values[3:])
    T[:3, 3] = values[:3]
    return T


def matrix_to_pose(T: np.ndarray) -> Pose:
    """``geometry_msgs/Pose`` of a homogeneous transform ``(4, 4)``."""
    pose = Pose()
    x, y, z = T[:3, 3].tolist()
    pose.position.x, pose.position.y, pose.position.z = x, y, z
    qx, qy, qz, qw = matrix_to_quat_xyzw(T[:3, :3]).tolist()
    pose.orientation.x, pose.orientation.y, pose.orientation.z, pose.orientation.w = qx, qy, qz, qw
    return pose


class TFMessageEncoder:
    """Serialised ``tf2_msgs/TFMessage`` (CDR, little endian) of parent -> child transforms.

    Building Python messages and converting them for ``publish`` cost most of the node's time;
    the bytes of a TFMessage whose frames are known differ only in stamps and numbers. For each
    set of rows a byte template is built once; :meth:`encode` writes the stamps and the 7
    doubles of each transform at their offsets. ``Publisher.publish`` sends bytes as they are.
    """

    _HEADER = b'\x00\x01\x00\x00'  # CDR little endian, no options

    def __init__(self, parents: Sequence[str], children: Sequence[str]):
        self._frames = [(p.encode(), c.encode()) for p, c in zip(parents, children)]
        self._templates: dict[bytes, tuple[bytes, np.ndarray, np.ndarray]] = {}

    def _template(self, rows: np.ndarray):
        key = rows.tobytes()
        hit = self._templates.get(key)
        if hit is not None:
            return hit
        out = bytearray(struct.pack('<I', rows.size))
        stamps, numbers = [], []

        def align(n):
            out.extend(b'\x00' * (-len(out) % n))

        for r in rows.tolist():
            parent, child = self._frames[r]
            align(4)
            stamps.append(len(out))
            out.extend(b'\x00' * 8)
            for name in (parent, child):
                align(4)
                out.extend(struct.pack('<I', len(name) + 1) + name + b'\x00')
            align(8)
            numbers.append(len(out))
            out.extend(b'\x00' * 56)
        base = len(self._HEADER)
        hit = (self._HEADER + bytes(out),
               np.array(stamps, np.intp)[:, None] + base + np.arange(8),      # (n, 8) byte offsets
               np.array(numbers, np.intp)[:, None] + base + np.arange(56))    # (n, 56)
        if len(self._templates) > 64:
            self._templates.clear()
        self._templates[key] = hit
        return hit

    def encode(self, rows: np.ndarray, poses: np.ndarray, stamp: Time) -> bytes:
        """Bytes of the TFMessage of rows ``rows`` with poses ``(len(rows), 7)``
        ``[x, y, z, qx, qy, qz, qw]`` (sent with w >= 0), stamped ``stamp``."""
        template, stamp_at, numbers_at = self._template(rows)
        values = np.array(poses, '<f8')
        values[:, 3:] *= np.where(values[:, 6:7] < 0.0, -1.0, 1.0)
        buf = np.frombuffer(bytearray(template), np.uint8)
        buf[numbers_at] = values.view(np.uint8).reshape(len(rows), 56)
        buf[stamp_at] = np.frombuffer(struct.pack('<iI', stamp.sec, stamp.nanosec), np.uint8)
        return buf.tobytes()


def poses_xyz_quat(T: np.ndarray) -> np.ndarray:
    """Transforms ``(n, 4, 4)`` as rows ``(n, 7)`` ``[x, y, z, qx, qy, qz, qw]``."""
    return np.concatenate([T[:, :3, 3], matrix_to_quat_xyzw(T[:, :3, :3])], axis=-1)


class TransformBatch:
    """Reusable ``TransformStamped`` messages for a fixed list of parent -> child frames
    (for /tf_static and tests; the /tf hot path uses :class:`TFMessageEncoder`)."""

    def __init__(self, parents: Sequence[str], children: Sequence[str]):
        self.messages = [TransformStamped() for _ in parents]
        for msg, parent, child in zip(self.messages, parents, children):
            msg.header.frame_id = parent
            msg.child_frame_id = child
        self._translations = [m.transform.translation for m in self.messages]
        self._rotations = [m.transform.rotation for m in self.messages]

    def fill(self, rows: np.ndarray, T: np.ndarray, stamp: Time) -> list:
        """Set the messages ``rows`` to transforms ``T (len(rows), 4, 4)`` stamped ``stamp``.

        Returns:
            The filled messages, in ``rows`` order.
        """
        positions = T[:, :3, 3].tolist()
        quats = matrix_to_quat_xyzw(T[:, :3, :3]).tolist()
        out = []
        for r, (x, y, z), (qx, qy, qz, qw) in zip(rows.tolist(), positions, quats):
            tr, rot, msg = self._translations[r], self._rotations[r], self.messages[r]
            tr.x, tr.y, tr.z = x, y, z
            rot.x, rot.y, rot.z, rot.w = qx, qy, qz, qw
            msg.header.stamp = stamp
            out.append(msg)
        return out


# ---------------------------------------------------------------------------- joint states
class JointStateUpdate(NamedTuple):
    """The usable part of one JointState message.

    Attributes:
        q_indices: q coordinates to set ``(k,)``.
        values: their values ``(k,)`` (finite).
        unknown: names the model does not have (dropped).
        nonfinite: names whose position is NaN or infinite (dropped).
    """

    q_indices: np.ndarray
    values: np.ndarray
    unknown: tuple[str, ...]
    nonfinite: tuple[str, ...]


class JointStateMap:
    """Maps JointState names to q coordinates for one model.

    Accepted names: independent 1-DOF joints, and the labels of :attr:`RobotModel.q_names` for the
    coordinates of planar and floating joints (``base/x`` ...). Names of fixed and mimic joints are
    accepted and ignored (mimic joints follow their source). Any other name is unknown.
    The per-name-list lookup is cached: publishers send the same list every time.
    """

    def __init__(self, model: RobotModel):
        self.model = model
        self._index = {n: i for i, n in enumerate(model.q_names)}
        self._ignored = {model.all_joint_names[j] for j in range(model.n_joints)
                         if model.is_fixed[j] or model.is_mimic[j]}
        self._cache: dict[tuple[str, ...], tuple[np.ndarray, np.ndarray, tuple[str, ...]]] = {}

    def _lookup(self, names: tuple[str, ...]):
        hit = self._cache.get(names)
        if hit is None:
            entries, indices, unknown = [], [], []
            for k, name in enumerate(names):
                i = self._index.get(name)
                if i is not None:
                    entries.append(k)
                    indices.append(i)
                elif name not in self._ignored:
                    unknown.append(name)
            hit = (np.array(entries, np.intp), np.array(indices, np.intp), tuple(unknown))
            if len(names) <= _MAX_CACHED_NAMES:
                if len(self._cache) >= _MAX_CACHED_NAME_LISTS:
                    self._cache.clear()
                self._cache[names] = hit
        return hit

    def lookup(self, names: Sequence[str]) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
        """For a name list: ``(k,)`` the entries used, ``(k,)`` their q coordinates, and the
        unknown names (cached per list)."""
        return self._lookup(tuple(names))

    def parse(self, names: Sequence[str], positions) -> JointStateUpdate:
        """The usable entries of a JointState's ``name`` and ``position``.

        Raises:
            ShapeError: ``len(name) != len(position)`` (the whole message is unusable).
        """
        if len(names) != len(positions):
            raise ShapeError('JointState.position', f'({len(names)},) like JointState.name', (len(positions),))
        entries, indices, unknown = self._lookup(tuple(names))
        values = _float_array(positions)[entries]
        finite = np.isfinite(values)
        if finite.all():
            return JointStateUpdate(indices, values, unknown, ())
        bad = tuple(names[k] for k in entries[~finite].tolist())
        return JointStateUpdate(indices[finite], values[finite], unknown, bad)


def some_names(names: Sequence[str], shown: int = 5) -> str:
    """A few of ``names`` and how many more: a bounded text for logs, whatever the list's size."""
    head = ', '.join(repr(str(n)[:80]) for n in list(names[:shown]))
    more = len(names) - shown
    return f"[{head}{f', ... and {more} more' if more > 0 else ''}]"


def _float_array(values) -> np.ndarray:
    if isinstance(values, array.array) and values.typecode == 'd':
        return np.frombuffer(values, dtype=np.float64) if len(values) else np.zeros(0)
    return np.asarray(values, dtype=np.float64).reshape(-1)


def joint_values_to_q(model: RobotModel, names: Sequence[str], positions, base: np.ndarray) -> np.ndarray:
    """``base (n_q,)`` with the named joints set; strict (for service requests).

    Names of mimic and fixed joints are ignored; other unknown names raise.

    Raises:
        ShapeError: ``len(names) != len(positions)``.
        UnknownJointError: a name that is not a joint (or q label) of the model.
        NonFiniteError: NaN or infinite positions (named).
    """
    mapping = JointStateMap(model)
    update = mapping.parse(names, positions)
    if update.unknown:
        raise UnknownJointError(update.unknown[0], model.q_names)
    if update.nonfinite:
        raise NonFiniteError('joint_state.position', list(update.nonfinite), list(update.nonfinite))
    q = np.array(base, dtype=float)
    q[update.q_indices] = update.values
    return q


def robot_state_to_q(model: RobotModel, state: RobotState, base: np.ndarray) -> np.ndarray:
    """Configuration ``(n_q,)`` of a ``moveit_msgs/RobotState`` laid over ``base (n_q,)``.

    Joints the message does not mention keep their ``base`` value (whatever ``is_diff`` says).
    ``multi_dof_joint_state`` may set floating joints (translation + rotation) and, as MoveIt
    reads it, planar joints (x, y of the translation, the rotation's angle about z). Velocities,
    efforts and attached collision objects are not used.

    Raises:
        ShapeError, UnknownJointError, NonFiniteError: a bad ``joint_state`` (see
            :func:`joint_values_to_q`).
        InvalidMessageError: a bad ``multi_dof_joint_state``.
    """
    q = joint_values_to_q(model, list(state.joint_state.name), state.joint_state.position, base)
    mdof = state.multi_dof_joint_state
    if len(mdof.joint_names) != len(mdof.transforms):
        raise InvalidMessageError(f'multi_dof_joint_state has {len(mdof.joint_names)} joint_names but '
                                  f'{len(mdof.transforms)} transforms')
    for name, tf in zip(mdof.joint_names, mdof.transforms):
        j = model.joint_index(name)
        if model.joint_types[j] not in (JointType.FLOATING, JointType.PLANAR):
            raise InvalidMessageError(
                f'multi_dof_joint_state names joint {name!r} of type {JointType(model.joint_types[j]).name.lower()}; '
                f'only floating and planar joints are accepted there (give other coordinates as joint_state '
                f'entries labelled like {model.q_names[0]!r})')
        T = transform_to_matrix(tf, f'multi_dof_joint_state transform of {name!r}')
        i = model.joint_q_index[j]
        if model.joint_types[j] == JointType.PLANAR:
            q[i:i + 3] = T[0, 3], T[1, 3], math.atan2(T[1, 0], T[0, 0])
        else:
            q[i:i + 3] = T[:3, 3]
            q[i + 3:i + 7] = matrix_to_quat_xyzw(T[:3, :3])
    return q


def q_to_robot_state(model: RobotModel, q: np.ndarray) -> RobotState:
    """``moveit_msgs/RobotState`` of a configuration ``(n_q,)``.

    ``joint_state`` lists every 1-DOF joint (mimic joints included) and the labelled coordinates of
    planar joints; floating joints go to ``multi_dof_joint_state`` as transforms.
    """
    state = RobotState()
    values = model.all_joint_values(q)
    names, positions = list(values), list(values.values())
    mdof = MultiDOFJointState()
    for j in model.active_joints.tolist():
        t, i = JointType(model.joint_types[j]), model.joint_q_index[j]
        if t == JointType.PLANAR:
            names += [model.q_names[i], model.q_names[i + 1], model.q_names[i + 2]]
            positions += q[i:i + 3].tolist()
        elif t == JointType.FLOATING:
            tf = Transform()
            tf.translation.x, tf.translation.y, tf.translation.z = q[i:i + 3].tolist()
            quat = q[i + 3:i + 7] / np.linalg.norm(q[i + 3:i + 7])
            tf.rotation.x, tf.rotation.y, tf.rotation.z, tf.rotation.w = quat.tolist()
            mdof.joint_names.append(model.all_joint_names[j])
            mdof.transforms.append(tf)
    state.joint_state = JointState(name=names, position=positions)
    state.multi_dof_joint_state = mdof
    return state


def joint_bounds(model: RobotModel, constraints: Sequence) -> tuple[np.ndarray, np.ndarray]:
    """q bounds ``(n_q,), (n_q,)``: the model's limits intersected with ``moveit_msgs/JointConstraint``s.

    A constraint allows ``[position - tolerance_below, position + tolerance_above]``.

    Raises:
        UnknownJointError: a constraint names no independent 1-DOF joint.
        InvalidMessageError: non-finite or negative tolerances, or an empty intersection.
    """
    lower, upper = model.q_lower.copy(), model.q_upper.copy()
    index = {model.all_joint_names[j]: model.joint_q_index[j] for j in model.active_joints.tolist()
             if model.joint_types[j] in SCALAR_TYPES}
    for c in constraints:
        i = index.get(c.joint_name)
        if i is None:
            raise UnknownJointError(c.joint_name, list(index))
        values = (c.position, c.tolerance_above, c.tolerance_below)
        if not all(math.isfinite(v) for v in values) or c.tolerance_above < 0 or c.tolerance_below < 0:
            raise InvalidMessageError(f'joint constraint on {c.joint_name!r} needs a finite position and '
                                      f'non-negative tolerances, got {values}')
        lower[i] = max(lower[i], c.position - c.tolerance_below)
        upper[i] = min(upper[i], c.position + c.tolerance_above)
        if lower[i] > upper[i]:
            raise InvalidMessageError(f'joint constraint on {c.joint_name!r} leaves no value within the joint '
                                      f'limits [{model.q_lower[i]:.6g}, {model.q_upper[i]:.6g}]')
    return lower, upper


# ---------------------------------------------------------------------------- Jacobians
def jacobian_layout(frame: str, reference: str, columns: Sequence[str]) -> MultiArrayLayout:
    """Self-describing layout of a ``(6, n_v)`` Jacobian in a ``Float64MultiArray`` (row-major).

    ``dim[0].label`` is ``"frame=<frame>;reference=<reference>;rows=linear_x,...,angular_z"``,
    ``dim[1].label`` is ``"columns=<v name>,<v name>,..."`` (``model.v_names``: joint names).
    """
    n = len(columns)
    rows = MultiArrayDimension(label=f"frame={frame};reference={reference};rows={','.join(JACOBIAN_ROWS)}",
                               size=6, stride=6 * n)
    cols = MultiArrayDimension(label='columns=' + ','.join(columns), size=n, stride=n)
    return MultiArrayLayout(dim=[rows, cols], data_offset=0)


def jacobian_to_msg(J: np.ndarray, layout: MultiArrayLayout) -> Float64MultiArray:
    """``Float64MultiArray`` of a Jacobian ``(6, n_v)`` with a layout from :func:`jacobian_layout`."""
    data = array.array('d')
    data.frombytes(np.ascontiguousarray(J, dtype=np.float64).tobytes())
    return Float64MultiArray(layout=layout, data=data)


class JacobianMessage(NamedTuple):
    """A decoded Jacobian message: frame, reference, row and column labels, matrix ``(6, n_v)``."""

    frame: str
    reference: str
    rows: tuple[str, ...]
    columns: tuple[str, ...]
    J: np.ndarray


def parse_jacobian_msg(msg: Float64MultiArray) -> JacobianMessage:
    """Decode a message made by :func:`jacobian_to_msg`.

    Raises:
        InvalidMessageError: the layout is not the one :func:`jacobian_layout` writes.
    """
    if len(msg.layout.dim) != 2:
        raise InvalidMessageError(f'a Jacobian message has 2 dimensions, got {len(msg.layout.dim)}')
    try:
        fields = dict(part.split('=', 1) for part in msg.layout.dim[0].label.split(';'))
        frame, reference, rows = fields['frame'], fields['reference'], tuple(fields['rows'].split(','))
        key, cols = msg.layout.dim[1].label.split('=', 1)
    except (KeyError, ValueError):
        raise InvalidMessageError(f'unrecognised Jacobian layout labels {[d.label for d in msg.layout.dim]}') from None
    columns = tuple(cols.split(',')) if cols else ()
    if key != 'columns' or len(rows) != msg.layout.dim[0].size or len(columns) != msg.layout.dim[1].size:
        raise InvalidMessageError(f'inconsistent Jacobian layout {[(d.label, d.size) for d in msg.layout.dim]}')
    J = np.array(msg.data, dtype=float)
    if J.size != len(rows) * len(columns):
        raise InvalidMessageError(f'Jacobian data has {J.size} entries, layout says {len(rows)} x {len(columns)}')
    return JacobianMessage(frame, reference, rows, columns, J.reshape(len(rows), len(columns)))


#: ``shape_msgs/SolidPrimitive`` types a position constraint region may use, by their constant.
_PRIMITIVES = {1: (ik.BOX, 3), 2: (ik.SPHERE, 1), 3: (ik.CYLINDER, 2)}


def constraints_from_msg(position_constraints: Sequence, orientation_constraints: Sequence,
                         frame_pose: Callable[[str, str], np.ndarray]) -> list:
    """``moveit_msgs/PositionConstraint`` s and ``OrientationConstraint`` s as
    :class:`robokin_ros.ik.PositionConstraint` and :class:`robokin_ros.ik.OrientationConstraint`
    objects with poses in the IK base frame;
    ``frame_pose(frame_id, what)`` is ``T_base_frame (4, 4)`` of a header's frame.

    Raises:
        InvalidMessageError: a mesh region, an unsupported primitive, sizes that do not fit it,
            a region without a pose, non-finite values or an unknown parameterization.
    """
    out = []
    for c in position_constraints:
        what = f'position constraint on {c.link_name!r}'
        region = c.constraint_region
        if region.meshes:
            raise InvalidMessageError(f'{what}: mesh regions are not supported '
                                      '(use box, sphere or cylinder primitives)')
        if len(region.primitive_poses) != len(region.primitives):
            raise InvalidMessageError(f'{what}: {len(region.primitives)} primitives but '
                                      f'{len(region.primitive_poses)} primitive_poses')
        if not region.primitives:
            raise InvalidMessageError(f'{what}: constraint_region has no primitive')
        T_base_frame = frame_pose(c.header.frame_id, what)
        regions = []
        for k, (shape, pose) in enumerate(zip(region.primitives, region.primitive_poses)):
            kind = _PRIMITIVES.get(shape.type)
            dims = [float(d) for d in shape.dimensions]
            if kind is None:
                raise InvalidMessageError(f'{what}: primitive {k} has type {shape.type}; supported: box (1), '
                                          'sphere (2), cylinder (3)')
            if len(dims) != kind[1] or not all(math.isfinite(d) and d >= 0 for d in dims):
                raise InvalidMessageError(f'{what}: a {kind[0]} needs {kind[1]} finite dimensions >= 0, got {dims}')
            T_base_region = T_base_frame @ pose_to_matrix(pose, f'{what}: primitive {k}')
            regions.append(ik.Region(kind[0], tuple(dims), T_base_region))
        offset = c.target_point_offset
        point = (float(offset.x), float(offset.y), float(offset.z))
        if not all(map(math.isfinite, point)):
            raise InvalidMessageError(f'{what}: target_point_offset is not finite: {point}')
        out.append(ik.PositionConstraint(c.link_name, point, tuple(regions)))
    for c in orientation_constraints:
        what = f'orientation constraint on {c.link_name!r}'
        tolerances = (float(c.absolute_x_axis_tolerance), float(c.absolute_y_axis_tolerance),
                      float(c.absolute_z_axis_tolerance))
        if not all(t >= 0 for t in tolerances):
            raise InvalidMessageError(f'{what}: axis tolerances must be >= 0, got {list(tolerances)}')
        if c.parameterization not in (ik.XYZ_EULER_ANGLES, ik.ROTATION_VECTOR):
            raise InvalidMessageError(f'{what}: parameterization {c.parameterization} is neither XYZ_EULER_ANGLES (0) '
                                      'nor ROTATION_VECTOR (1)')
        o = c.orientation
        R = _matrix(np.array([0.0, 0.0, 0.0, o.x, o.y, o.z, o.w]), f'{what}: orientation')[:3, :3]
        R_base = frame_pose(c.header.frame_id, what)[:3, :3] @ R
        out.append(ik.OrientationConstraint(c.link_name, R_base, tolerances, int(c.parameterization)))
    return out
