"""The robokin node: robot description and joint states in; TF, Jacobians, gravity torques and
the /compute_ik and /compute_fk services out. It converts messages and calls the core.

Threading: everything but /compute_ik runs in the node's default (mutually exclusive) callback
group, inline on the spinning thread (/compute_fk included: it is quick, and so never waits for
IK); /compute_ik has its own reentrant group, run on worker threads by
:class:`~robokin_ros.node.executor.OffloadingExecutor`. The live robot (model and
latest joint values) is one object replaced by a single assignment, so a service thread reads a
consistent snapshot while descriptions hot-reload.
"""

from __future__ import annotations

import json
import math
import threading
import time
import traceback

import numpy as np
from geometry_msgs.msg import TransformStamped
from moveit_msgs.srv import GetPositionFK, GetPositionIK, GetStateValidity
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.exceptions import ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from tf2_msgs.msg import TFMessage

from ..collision import CollisionModel, CollisionUnavailableError
from ..dynamics import gravity_torques
from ..errors import RobokinError, ShapeError
from ..jacobians import Reference, jacobian
from ..kinematics import forward_kinematics, joint_poses
from ..model import SCALAR_TYPES, RobotModel
from ..srdf import ALL_GROUP, IKGroup, SemanticDescription, default_group_name, default_groups, parse_srdf
from . import services
from .launch_arguments import read_xml_file
from .conversions import (JointStateMap, some_names, TFMessageEncoder, TransformBatch, jacobian_layout, jacobian_to_msg,
                          ns_to_stamp, stamp_to_ns, topic_token)

NODE_NAME = 'robokin'
#: Values of parameter ``executor``.
EVENTS, THREADS = 'events', 'threads'

#: /tf like tf2_ros.TransformBroadcaster: reliable, volatile, depth 100.
TF_QOS = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
#: /tf_static and /robot_description like tf2_ros.StaticTransformBroadcaster and
#: robot_state_publisher: reliable, transient local, depth 1.
LATCHED_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
#: /joint_states: sensor data (best effort matches reliable and best-effort publishers).
JOINT_STATES_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST, reliability=ReliabilityPolicy.BEST_EFFORT,
                              durability=DurabilityPolicy.VOLATILE)

_NEVER = np.iinfo(np.int64).min // 2


def _describe(text: str, read_only: bool = False, constraints: str = '') -> ParameterDescriptor:
    return ParameterDescriptor(description=text, read_only=read_only, additional_constraints=constraints)


#: name -> (default, descriptor); STRING_ARRAY parameters default to empty.
PARAMETERS = {
    'robot_description': ('', _describe(
        'URDF of the robot. Setting it at run time reloads the model (an invalid URDF is rejected '
        'with the reason and the old model stays). Ignored when description_from_topic is true.')),
    'description_file': ('', _describe(
        'URDF file (a .xacro file is expanded with xacro) read when robot_description is empty; '
        'setting it at run time reloads the model, like robot_description.')),
    'robot_description_semantic': ('', _describe(
        "SRDF of the robot (MoveIt's semantic description): its groups become IK groups, its group "
        'states named configurations, its disable_collisions the link pairs never checked for self-collision. '
        'The robot_description_semantic topic (latched) is read too; '
        'the latest of the two wins. An invalid SRDF is rejected and the previous groups stay.')),
    'semantic_file': ('', _describe(
        'SRDF file (a .xacro file is expanded with xacro) read when robot_description_semantic is empty.')),
    'description_from_topic': (False, _describe(
        'Take the URDF from the robot_description topic (std_msgs/String, reliable, transient local) '
        'instead of the parameter; every new message hot-reloads the model.', read_only=True)),
    'publish_frequency': (20.0, _describe(
        'Maximum rate [Hz] of /tf per joint (as robot_state_publisher): a joint state is published '
        'when its stamp is at least 1/publish_frequency after the last one published.', constraints='> 0')),
    'ignore_timestamp': (False, _describe('Publish every joint state, whatever its stamp and publish_frequency.')),
    'frame_prefix': ('', _describe("Prefix added to every frame id published (e.g. 'robot1/').")),
    'publish_jacobians': (True, _describe('Publish the Jacobians of jacobian_frames with every /tf update.')),
    'jacobian_frames': (Parameter.Type.STRING_ARRAY, _describe(
        'Links whose Jacobians are published on ~/jacobian/<link> (empty: every leaf link).')),
    'jacobian_reference': ('local_world_aligned', _describe(
        'Frame the Jacobian twists are expressed in: world, local or local_world_aligned.',
        constraints='one of world, local, local_world_aligned')),
    'publish_gravity_torques': (True, _describe(
        'Publish gravity torques on ~/gravity_torques (sensor_msgs/JointState effort) with every /tf '
        'update, when the model has inertials.')),
    'ik_group_names': (Parameter.Type.STRING_ARRAY, _describe(
        "IK groups, each configured by ik_groups.<name>.base / .tip / .joints. Empty: the SRDF's "
        'groups, else groups derived from the tree (one per leaf chain, named after its tip, plus '
        "'all').", read_only=True)),
    'default_ik_group': ('', _describe(
        "Group used when a request's group_name is empty. Empty: the first configured or SRDF group "
        'with a tip, else the derived chain with the most rotational joints.')),
    'ik_timeout': (0.5, _describe("IK time budget [s] when a request's timeout is 0.", constraints='> 0')),
    'ik_position_tolerance': (1e-5, _describe('IK position tolerance per tip [m].', constraints='> 0')),
    'ik_rotation_tolerance': (1e-5, _describe('IK rotation tolerance per tip [rad].', constraints='> 0')),
    'ik_max_iterations': (0, _describe(
        'IK iteration budget per request (restarts included); spent: NO_IK_SOLUTION. 0: none, the '
        'timeout alone ends a search (TIMED_OUT), as in MoveIt.', constraints='>= 0')),
    'ik_restarts': (0, _describe("Extra random seeds solved alongside the request's seed.", constraints='>= 0')),
    'avoid_collisions_policy': (services.REJECT, _describe(
        'IK requests with avoid_collisions=true are checked for self-collision (URDF <collision> '
        'geometry, pairs from the SRDF or sampled) when the robot has collision geometry. This sets '
        "the answer when it has none (or coal is missing): 'reject' replies "
        "COLLISION_CHECKING_UNAVAILABLE; 'solve_unchecked' solves and says so in error_code.message.",
        constraints='reject or solve_unchecked')),
    'warning_period': (5.0, _describe('Minimum time [s] between two warnings about the same bad joint state entries.',
                                      constraints='>= 0')),
    'executor': ('events', _describe(
        "Callback dispatch: 'events' runs the joint-state -> /tf path on rclpy's EventsExecutor "
        '(dispatch in C++) and serves /compute_ik, /compute_fk and /check_state_validity from a companion node '
        "'<node name>_services' on worker threads; 'threads' runs everything on one multi-threaded "
        "executor (/compute_ik on worker threads, the rest inline). 'events' falls back to "
        "'threads', with a log line, where rclpy has no EventsExecutor.", read_only=True,
        constraints='events or threads')),
    'publish_stats': (False, _describe(
        'Publish joint-state callback statistics on ~/stats (std_msgs/String, JSON: counts and the '
        'durations [us] of the callbacks of the last second) once a second.', read_only=True)),
}
_GROUP_KEYS = {'base': ('', "Link the group's targets are expressed in (empty: root link)."),
               'tip': ('', 'Default IK link of the group (empty: requests must name one).'),
               'joints': (Parameter.Type.STRING_ARRAY, 'Joints that may move (empty: those between base and tip).')}


class LiveRobot:
    """One model with everything derived from it and the frame prefix, plus its latest joint values.

    Joint values are replaced (never written in place) so readers on other threads see whole
    vectors.

    Attributes:
        model, xml: the model and its URDF.
        names: JointState name -> q coordinate map.
        q: ``(n_q,)`` latest values (home where none received); received: ``(n_q,)`` bool.
        last_published_ns: ``(n_q,)`` stamp each coordinate was last published with.
    """

    def __init__(self, model: RobotModel, xml: str, prefix: str, previous: 'LiveRobot | None' = None):
        self.model, self.xml, self.prefix = model, xml, prefix
        self.names = JointStateMap(model)
        self.groups: dict[str, IKGroup] = {ALL_GROUP: IKGroup(ALL_GROUP)}
        self.default_group = ''
        scalar = np.isin(model.joint_types, SCALAR_TYPES) & ~model.is_fixed
        self.tf_joints = np.flatnonzero(scalar)  # floating and planar joints are not published
        self.tf_parents = model.link_parents[self.tf_joints + 1]
        self.tf_children = self.tf_joints + 1
        row_of = {int(j): r for r, j in enumerate(self.tf_joints)}
        rows_of_q: list[list[int]] = [[] for _ in range(model.n_q)]
        for j in self.tf_joints.tolist():
            source = model.mimic_source[j] if model.is_mimic[j] else j
            rows_of_q[model.joint_q_index[source]].append(row_of[j])
        self._rows_of_q = rows_of_q
        self._rows_cache: dict[bytes, np.ndarray] = {}
        self.encoder = TFMessageEncoder([prefix + model.link_names[i] for i in self.tf_parents],
                                        [prefix + model.link_names[i] for i in self.tf_children])
        self.required = np.zeros(model.n_q, bool)  # coordinates a JointState must provide for a full state
        for j in model.active_joints.tolist():
            if model.joint_types[j] in SCALAR_TYPES:
                self.required[model.joint_q_index[j]] = True
        self.semantic: SemanticDescription | None = None   # the SRDF read against this model, if any
        self.log = lambda text: None   # where the collision model's build notes go (the node's logger)
        self._collision_lock = threading.Lock()
        self._collision: tuple | None = None   # (disabled pairs key, CollisionModel or reason)
        self.q = model.home_configuration()
        self.received = np.zeros(model.n_q, bool)
        self.last_published_ns = np.full(model.n_q, _NEVER, np.int64)
        self.complete = not self.required.any()
        if previous is not None:  # keep the values of joints that still exist
            old = dict(zip(previous.model.q_names, zip(previous.q.tolist(), previous.received.tolist())))
            for i, name in enumerate(model.q_names):
                if name in old and old[name][1]:
                    self.q[i], self.received[i] = old[name][0], True
            self.complete = bool(self.received[self.required].all())

    def rows(self, q_indices: np.ndarray) -> np.ndarray:
        """/tf rows (movable joints) that the q coordinates ``q_indices`` move, sorted."""
        key = q_indices.tobytes()
        rows = self._rows_cache.get(key)
        if rows is None:
            rows = np.array(sorted({r for i in q_indices.tolist() for r in self._rows_of_q[i]}), np.intp)
            if len(self._rows_cache) > 64:
                self._rows_cache.clear()
            self._rows_cache[key] = rows
        return rows

    def static_transforms(self, stamp) -> list[TransformStamped]:
        """One TransformStamped per fixed joint (parent -> child), stamped ``stamp``."""
        model = self.model
        fixed = np.flatnonzero(model.is_fixed)
        batch = TransformBatch([self.prefix + model.link_names[model.link_parents[j + 1]] for j in fixed],
                               [self.prefix + model.link_names[j + 1] for j in fixed])
        return batch.fill(np.arange(fixed.size), model.joint_origins[fixed], stamp)

    def collision_model(self) -> 'CollisionModel | str':
        """The robot's collision model (pairs from its SRDF, else sampled and cached on disk), built
        on first use (the first request with avoid_collisions or to /check_state_validity: without
        an SRDF the pair sampling takes seconds the first time a URDF is seen on a machine); or why
        there is none. :attr:`log` gets the warnings of a new build."""
        semantic = self.semantic
        key = None if semantic is None else semantic.disabled_collisions
        with self._collision_lock:
            if self._collision is None or self._collision[0] != key:
                try:
                    cm = CollisionModel.build(self.model, srdf=semantic)
                except CollisionUnavailableError as e:
                    result: CollisionModel | str = str(e)
                else:
                    result = cm
                    if not cm.n_geometries:
                        skipped = f' ({len(cm.warnings)} collision meshes could not be loaded)' if cm.warnings else ''
                        result = f'robot {self.model.name!r} has no collision geometry{skipped}'
                    for warning in cm.warnings:
                        self.log(f'collision model: {warning}')
                    if cm.n_geometries:
                        self.log(f'collision model: {cm.n_geometries} geometries, {len(cm.link_pairs)} link pairs '
                                 f"checked ({'SRDF' if semantic is not None else 'sampled'} disabled pairs)")
                self._collision = (key, result)
            return self._collision[1]

    def snapshot(self) -> services.RobotSnapshot:
        return services.RobotSnapshot(self.model, self.q, self.prefix, self.groups, self.default_group,
                                      self.collision_model)


class KinematicsNode(Node):
    """The ``robokin`` node (see the README section "The node" for topics, services, parameters)."""

    def __init__(self, **kwargs):
        super().__init__(NODE_NAME, **kwargs)
        self._robot: LiveRobot | None = None
        self._parsed: dict[str, RobotModel] = {}
        self._semantic_xml: tuple[str, str] | None = None   # (SRDF text, where it came from)
        self._semantic: SemanticDescription | None = None
        self._warned: dict[tuple, int] = {}
        self._last_callback_ns = 0
        self._durations_us: list[float] = []
        self._counts = {'joint_states': 0, 'tf': 0}
        for name, (default, descriptor) in PARAMETERS.items():
            self.declare_parameter(name, default, descriptor)
        for group in self._string_list('ik_group_names'):
            for key, (default, text) in _GROUP_KEYS.items():
                self.declare_parameter(f'ik_groups.{group}.{key}', default, _describe(text, read_only=True))
        self._read_parameters()

        self._tf_pub = self.create_publisher(TFMessage, '/tf', TF_QOS)
        self._tf_static_pub = self.create_publisher(TFMessage, '/tf_static', LATCHED_QOS)
        self._gravity_pub = self.create_publisher(JointState, '~/gravity_torques', 10)
        self._jacobian_pubs: dict[str, object] = {}
        self._jacobian_frames: list[tuple[str, object, object]] = []  # (link, publisher, layout)
        self._stats_pub = self.create_publisher(String, '~/stats', 10) if self._publish_stats else None
        self.create_subscription(JointState, 'joint_states', self._on_joint_state, JOINT_STATES_QOS)
        self._from_topic = self.get_parameter('description_from_topic').value
        if self._from_topic:
            self.create_subscription(String, 'robot_description', self._on_description, LATCHED_QOS)
            self._description_pub = None
        else:
            self._description_pub = self.create_publisher(String, 'robot_description', LATCHED_QOS)

        self.create_subscription(String, 'robot_description_semantic', self._on_semantic, LATCHED_QOS)
        self.services_group = ReentrantCallbackGroup()
        if self.get_parameter('executor').value != EVENTS:
            self.attach_services(self)
        if self._stats_pub is not None:
            self.create_timer(1.0, self._publish_stats_message)

        semantic, source = self.get_parameter('robot_description_semantic').value, 'parameter robot_description_semantic'
        if not semantic and self.get_parameter('semantic_file').value:
            path = self.get_parameter('semantic_file').value
            semantic, source = self._read_file(path, 'semantic_file'), f'semantic_file {path!r}'
        if semantic:
            self._semantic_xml = (semantic, source)
        xml, source = self.get_parameter('robot_description').value, 'parameter robot_description'
        if not xml and self.get_parameter('description_file').value and not self._from_topic:
            path = self.get_parameter('description_file').value
            xml, source = self._read_file(path, 'description_file'), f'description_file {path!r}'
        if self._from_topic:
            self.get_logger().info('waiting for the robot description on topic '
                                   f"{self.resolve_topic_name('robot_description')}")
        elif xml:
            self._load(xml, source)
        else:
            self.get_logger().info('waiting for a robot description: set parameter robot_description '
                                   'or description_file')
        self.add_on_set_parameters_callback(self._validate_parameters)
        self.add_post_set_parameters_callback(self._apply_parameters)

    def attach_services(self, host: Node) -> None:
        """Serve /compute_ik and /check_state_validity (callback group :attr:`services_group`, for
        worker threads) and /compute_fk (host's default group: ~0.1 ms, so it never queues behind
        IK calls) from ``host``: this node, or the companion node of the 'events' executor."""
        host.create_service(GetPositionIK, 'compute_ik', self._compute_ik, callback_group=self.services_group)
        host.create_service(GetStateValidity, 'check_state_validity', self._check_state_validity,
                            callback_group=self.services_group)
        host.create_service(GetPositionFK, 'compute_fk', self._compute_fk)

    # ------------------------------------------------------------------------- parameters
    def _string_list(self, name: str) -> list[str]:
        try:
            return list(self.get_parameter(name).value)
        except ParameterUninitializedException:  # declared STRING_ARRAY without a value, or "[]"
            return []

    def _read_parameters(self) -> None:
        get = lambda name: self.get_parameter(name).value  # noqa: E731
        self._interval_ns = int(1e9 / get('publish_frequency'))
        self._ignore_timestamp = bool(get('ignore_timestamp'))
        self._frame_prefix = get('frame_prefix')
        self._publish_jacobians = bool(get('publish_jacobians'))
        self._jacobian_frame_names = self._string_list('jacobian_frames')
        self._reference = Reference.parse(get('jacobian_reference'))
        self._publish_gravity = bool(get('publish_gravity_torques'))
        self._warning_period_ns = int(get('warning_period') * 1e9)
        self._publish_stats = bool(get('publish_stats'))
        groups = {}
        for name in self._string_list('ik_group_names'):
            prefix = f'ik_groups.{name}.'
            groups[name] = IKGroup(name, get(prefix + 'base'), get(prefix + 'tip'),
                                   tuple(self._string_list(prefix + 'joints')))
        self.ik_settings = services.IKSettings(
            groups=groups, default_group=get('default_ik_group'), timeout=float(get('ik_timeout')),
            position_tolerance=float(get('ik_position_tolerance')),
            rotation_tolerance=float(get('ik_rotation_tolerance')),
            max_iterations=int(get('ik_max_iterations')), restarts=int(get('ik_restarts')),
            avoid_collisions_policy=get('avoid_collisions_policy'))

    def _validate_parameters(self, parameters: list[Parameter]) -> SetParametersResult:
        for p in parameters:
            reason = self._check_parameter(p)
            if reason:
                self.get_logger().warning(f'rejected parameter {p.name}: {reason}')
                return SetParametersResult(successful=False, reason=reason)
        return SetParametersResult(successful=True)

    def _check_parameter(self, p: Parameter) -> str:
        """Why ``p`` cannot be set ("" if it can)."""
        v = p.value
        positive = ('publish_frequency', 'ik_timeout', 'ik_position_tolerance', 'ik_rotation_tolerance')
        if p.name in positive and not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            hint = '; to publish every joint state set ignore_timestamp to true' if p.name == 'publish_frequency' \
                else ''
            return f'{p.name} must be a finite number > 0, got {v!r}{hint}'
        if p.name == 'warning_period' and not (math.isfinite(v) and v >= 0):
            return f'warning_period must be a finite number >= 0 [s], got {v!r}'
        if p.name == 'ik_max_iterations' and v < 0:
            return f'ik_max_iterations must be >= 0 (0: no budget), got {v!r}'
        if p.name == 'ik_restarts' and v < 0:
            return f'ik_restarts must be >= 0, got {v!r}'
        if p.name == 'avoid_collisions_policy' and v not in (services.REJECT, services.SOLVE_UNCHECKED):
            return f'avoid_collisions_policy must be {services.REJECT!r} or {services.SOLVE_UNCHECKED!r}, got {v!r}'
        if p.name == 'jacobian_reference':
            try:
                Reference.parse(v)
            except ValueError as e:
                return str(e)
        if p.name == 'jacobian_frames' and self._robot is not None and p.type_ != Parameter.Type.NOT_SET:
            unknown = [f for f in v if f not in self._robot.model.link_names]
            if unknown:
                return f'jacobian_frames names links that robot {self._robot.model.name!r} does not have: {unknown}'
        if p.name == 'default_ik_group' and v and self._robot is not None and v not in self._robot.groups:
            return f'default_ik_group {v!r} is not one of the IK groups {sorted(self._robot.groups)}'
        if p.name in ('description_file', 'semantic_file') and v:
            text = self._read_file(v, p.name)
            if not text:
                return f'{p.name} {v!r} cannot be read (see the log)'
            if p.name == 'description_file':
                p = Parameter('robot_description', value=text)
            else:
                p = Parameter('robot_description_semantic', value=text)
            v = text
        if p.name == 'robot_description_semantic' and v and self._robot is not None:
            try:
                parse_srdf(v, self._robot.model)
            except (RobokinError, ValueError) as e:
                return f'invalid semantic description: {e}'
        if p.name == 'robot_description':
            if self._from_topic:
                return 'description_from_topic is true: publish the URDF on the robot_description topic instead'
            try:
                self._parsed = {v: RobotModel.from_urdf(v)}
            except (RobokinError, ValueError) as e:
                return f'invalid robot description: {e}'
        return ''

    def _apply_parameters(self, parameters: list[Parameter]) -> None:
        names = {p.name for p in parameters}
        old_prefix = self._frame_prefix
        self._read_parameters()
        def text_and_source(name):
            value = self.get_parameter(name).value if name in names else ''
            if not value or not name.endswith('_file'):
                return value, f'parameter {name}'
            return self._read_file(value, name), f'{name} {value!r}'

        for name in ('semantic_file', 'robot_description_semantic'):
            self._set_semantic(*text_and_source(name))
        installed = False
        for name in ('description_file', 'robot_description'):
            xml, source = text_and_source(name)
            model = self._parsed.pop(xml, None) if xml else None
            if model is not None:
                self._install(model, xml, source)
                installed = True
        if installed:
            return   # with every derived publisher and the IK groups
        if self._frame_prefix != old_prefix and self._robot is not None:
            self._install(self._robot.model, self._robot.xml, 'frame_prefix change')
        elif names & {'jacobian_frames', 'publish_jacobians', 'jacobian_reference'}:
            self._sync_jacobian_publishers()
        elif 'default_ik_group' in names and self._robot is not None:
            self._regroup(self._robot)

    # ------------------------------------------------------------------------- description
    def _read_file(self, path: str, parameter: str) -> str:
        """Text of a description file (``.xacro`` expanded); "" after logging why it cannot be read."""
        try:
            return read_xml_file(path)
        except (OSError, ImportError, ValueError) as e:
            self.get_logger().error(f'{parameter}: cannot read {path!r}: {e}')
            return ''

    def _on_semantic(self, msg: String) -> None:
        self._set_semantic(msg.data, f"topic {self.resolve_topic_name('robot_description_semantic')}")

    def _set_semantic(self, xml: str, source: str) -> None:
        """Take a new SRDF: parse it against the live model (if any) and regroup; a bad one is
        logged and the previous groups stay."""
        if not xml:
            return
        if self._robot is not None:
            try:
                semantic = parse_srdf(xml, self._robot.model)
            except (RobokinError, ValueError) as e:
                self.get_logger().error(f'rejected the semantic description from {source} (keeping the previous '
                                        f'IK groups): {e}')
                return
            self._semantic = semantic
            self._semantic_xml = (xml, source)
            self._regroup(self._robot)
        else:
            self._semantic_xml = (xml, source)

    def _regroup(self, robot: LiveRobot) -> None:
        """Set the IK groups of ``robot``: the parameters', else the SRDF's, else derived ones."""
        source = self._semantic_xml[1] if self._semantic_xml else ''
        robot.semantic = self._semantic if self._semantic is not None and self._semantic.model is robot.model else None
        if self.ik_settings.groups:
            groups, origin = dict(self.ik_settings.groups), 'parameters'
        elif self._semantic is not None and self._semantic.model is robot.model and self._semantic.groups:
            groups, origin = dict(self._semantic.groups), f'the SRDF ({source})'
            groups.setdefault(ALL_GROUP, IKGroup(ALL_GROUP))
            for warning in self._semantic.warnings:
                self.get_logger().warning(f'SRDF: {warning}')
        else:
            groups, origin = default_groups(robot.model), 'the kinematic tree (no SRDF, no ik_groups parameters)'
        default = self.ik_settings.default_group
        if default and default not in groups:
            self.get_logger().warning(f'default_ik_group {default!r} is not one of the IK groups {sorted(groups)}; '
                                      'using the first group with a tip')
            default = ''
        robot.groups, robot.default_group = groups, default or default_group_name(groups)
        described = ', '.join(f"{g.name} ({g.base or robot.model.root_link} -> {g.tip or 'any link'})"
                              for g in groups.values())
        self.get_logger().info(f'IK groups from {origin}: {described}; default {robot.default_group!r}')

    def _on_description(self, msg: String) -> None:
        self._load(msg.data, f"topic {self.resolve_topic_name('robot_description')}")

    def _load(self, xml: str, source: str) -> bool:
        try:
            model = RobotModel.from_urdf(xml)
        except (RobokinError, ValueError) as e:
            keep = f'keeping robot {self._robot.model.name!r}' if self._robot else 'still waiting for a valid one'
            self.get_logger().error(f'rejected the robot description from {source} ({keep}): {e}')
            return False
        self._install(model, xml, source)
        return True

    def _install(self, model: RobotModel, xml: str, source: str) -> None:
        robot = LiveRobot(model, xml, self._frame_prefix, self._robot)
        robot.log = self.get_logger().info
        for warning in model.load_warnings:
            self.get_logger().warning(f'robot description ({source}): {warning}')
        if self._semantic_xml is not None:
            text, semantic_source = self._semantic_xml
            try:
                self._semantic = parse_srdf(text, model)
            except (RobokinError, ValueError) as e:
                self._semantic = None
                self.get_logger().error(f'the semantic description from {semantic_source} does not fit robot '
                                        f'{model.name!r}: {e}')
        self._regroup(robot)
        self._warm_up(robot)
        self._robot = robot
        self._sync_jacobian_publishers()
        stamp = self.get_clock().now().to_msg()
        self._tf_static_pub.publish(TFMessage(transforms=robot.static_transforms(stamp)))
        if self._description_pub is not None:
            self._description_pub.publish(String(data=xml))
        self.get_logger().info(
            f'robot {model.name!r} from {source}: {model.n_links} links, {len(model.joint_names)} joints '
            f'{list(model.joint_names)}; {int(model.is_fixed.sum())} fixed joints on /tf_static, '
            f'{robot.tf_joints.size} movable joints on /tf')

    def _warm_up(self, robot: LiveRobot) -> None:
        """Run the kernels once, so the first joint state is not delayed by building their plans."""
        model, q = robot.model, robot.q
        T = forward_kinematics(model, q)
        robot.encoder.encode(np.arange(robot.tf_joints.size), joint_poses(model, q), ns_to_stamp(0))
        for leaf in model.leaf_links:
            jacobian(model, q, leaf, self._reference, poses=T)
        if model.link_has_inertial.any():
            gravity_torques(model, q)

    def _sync_jacobian_publishers(self) -> None:
        robot = self._robot
        if robot is None:
            return
        model = robot.model
        wanted = []
        if self._publish_jacobians:
            names = self._jacobian_frame_names or list(model.leaf_links)
            missing = [n for n in names if n not in model.link_names]
            if missing:
                self.get_logger().warning(f'jacobian_frames not in robot {model.name!r}, skipped: {missing}')
            wanted = [n for n in names if n in model.link_names]
        for name in set(self._jacobian_pubs) - set(wanted):
            self.destroy_publisher(self._jacobian_pubs.pop(name))
        frames = []
        for name in wanted:
            if name not in self._jacobian_pubs:
                self._jacobian_pubs[name] = self.create_publisher(
                    Float64MultiArray, f'~/jacobian/{topic_token(name)}', 10)
            layout = jacobian_layout(robot.prefix + name, self._reference.value, model.v_names)
            frames.append((name, self._jacobian_pubs[name], layout))
        self._jacobian_frames = frames

    # ------------------------------------------------------------------------- joint states
    def _warn(self, key: tuple, text: str) -> None:
        """Log ``text`` unless the same ``key`` was logged less than ``warning_period`` ago."""
        last = self._warned.get(key)
        now = self._last_callback_ns
        if last is not None and now - last < self._warning_period_ns:
            return
        if len(self._warned) > 256:
            self._warned.clear()
        self._warned[key] = now
        period = self._warning_period_ns * 1e-9
        self.get_logger().warning(f'{text} (repeats suppressed for {period:g} s)')

    def _on_joint_state(self, msg: JointState) -> None:
        start = time.perf_counter_ns()
        self._handle_joint_state(msg)
        if self._stats_pub is not None:
            self._durations_us.append((time.perf_counter_ns() - start) * 1e-3)

    def _handle_joint_state(self, msg: JointState) -> None:
        robot = self._robot
        if robot is None:
            return
        now = self.get_clock().now().nanoseconds
        if now < self._last_callback_ns:
            self.get_logger().warning('time moved backwards (bag replay?): rate limits and warning throttling reset')
            self._warned.clear()
            robot.last_published_ns[:] = _NEVER
        self._last_callback_ns = now
        self._counts['joint_states'] += 1
        names = msg.name
        try:
            update = robot.names.parse(names, msg.position)
        except ShapeError:
            self._warn(('length',),
                       f'dropped a JointState with {len(names)} names but {len(msg.position)} positions '
                       f'(joints {some_names(names)})')
            return
        if update.unknown:
            self._warn(('unknown',),
                       f'dropped JointState entries for joints not in robot {robot.model.name!r}: '
                       f'{some_names(update.unknown)}')
        if update.nonfinite:
            self._warn(('nonfinite',),
                       f'dropped non-finite JointState positions of joints {some_names(update.nonfinite)}')
        idx = update.q_indices
        if idx.size == 0:
            return
        q = robot.q.copy()
        q[idx] = update.values
        robot.q = q
        robot.received[idx] = True
        if not robot.complete:
            robot.complete = bool(robot.received[robot.required].all())
        stamp_ns = stamp_to_ns(msg.header.stamp)
        stamp = msg.header.stamp
        if stamp_ns == 0:  # an unstamped message: stamp it with the time it arrived
            stamp_ns, stamp = now, ns_to_stamp(now)
        if not self._ignore_timestamp and stamp_ns < int(robot.last_published_ns[idx].min()) + self._interval_ns:
            return
        robot.last_published_ns[idx] = stamp_ns
        self._publish(robot, q, robot.rows(idx), stamp)

    def _publish(self, robot: LiveRobot, q: np.ndarray, rows: np.ndarray, stamp) -> None:
        model = robot.model
        if rows.size:  # tf rows are the model's 1-DOF joints, in joint_poses' order
            self._tf_pub.publish(robot.encoder.encode(rows, joint_poses(model, q)[rows], stamp))
            self._counts['tf'] += 1
        if not robot.complete:
            return
        T = None
        for name, pub, layout in self._jacobian_frames:
            if pub.get_subscription_count():
                if T is None:
                    T = forward_kinematics(model, q)
                J = jacobian(model, q, name, self._reference, poses=T)
                pub.publish(jacobian_to_msg(J, layout))
        if self._publish_gravity and model.link_has_inertial.any() and self._gravity_pub.get_subscription_count():
            tau = gravity_torques(model, q)
            msg = JointState(name=list(model.v_names), effort=tau.tolist())
            msg.header.stamp = stamp
            self._gravity_pub.publish(msg)

    def _publish_stats_message(self) -> None:
        durations, self._durations_us = self._durations_us, []
        stats = dict(self._counts, durations_us=[round(d, 1) for d in durations])
        self._stats_pub.publish(String(data=json.dumps(stats)))

    # ------------------------------------------------------------------------- services
    def _crash(self, error: BaseException) -> None:
        self.get_logger().error('service handler failed:\n' + ''.join(
            traceback.format_exception(type(error), error, error.__traceback__)))

    def _snapshot(self) -> services.RobotSnapshot | None:
        robot = self._robot
        return None if robot is None else robot.snapshot()

    def _compute_ik(self, request, response):
        return services.compute_ik(request, response, self._snapshot(), self.ik_settings, self._crash)

    def _check_state_validity(self, request, response):
        return services.check_state_validity(request, response, self._snapshot(), self.get_clock().now().to_msg(),
                                             self.get_logger().warning, self._crash)

    def _compute_fk(self, request, response):
        return services.compute_fk(request, response, self._snapshot(), self.get_clock().now().to_msg(), self._crash)

