"""The robokin node's parameters: declarations, checks of new values, settings read from them.

Plain Python (no rclpy, no messages), so every check runs without DDS, like
:mod:`~robokin_ros.node.launch_arguments`. The node declares :data:`PARAMETERS` (and
:data:`GROUP_KEYS` per IK group), rejects a new value with the sentence :func:`check_value`
returns, and after every accepted change reads the values once into a :class:`NodeSettings`
(:func:`read_settings`). The description parameters (``robot_description``,
``description_file`` and their semantic twins) are read and parsed by
:mod:`~robokin_ros.node.descriptions`; only their rule against ``description_from_topic`` is here.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Mapping

from .. import ik
from ..errors import RobokinError
from ..kernels import parallel
from ..kinematics import Reference
from ..model.description_limits import DescriptionLimits  # (the core's, shared with web_view)
from ..model.groups import IKGroup

#: Values of parameter ``executor``.
EVENTS, THREADS = 'events', 'threads'
#: Values of parameter ``avoid_collisions_policy``: what a request that needs collision checking
#: gets when the robot cannot be checked (no collision geometry, or coal missing).
REJECT, SOLVE_UNCHECKED = 'reject', 'solve_unchecked'


class _StringList:
    """Type of :data:`STRING_LIST`."""

    def __repr__(self):
        return 'STRING_LIST'


#: Default of the parameters that hold a list of strings: declared as STRING_ARRAY without a
#: value (read as an empty list).
STRING_LIST = _StringList()
#: Parameters whose value is (or names a file holding) the URDF, resp. the SRDF.
DESCRIPTION_PARAMETERS = ('robot_description', 'description_file')
SEMANTIC_PARAMETERS = ('robot_description_semantic', 'semantic_file')


@dataclasses.dataclass(frozen=True)
class ParameterSpec:
    """One declared parameter.

    Attributes:
        default: its default value, or :data:`STRING_LIST` for a list of strings declared empty.
        description: the text ``ros2 param describe`` shows.
        read_only: settable only at start-up.
        constraints: the range, in words (``additional_constraints``).
    """

    default: object
    description: str
    read_only: bool = False
    constraints: str = ''


#: name -> :class:`ParameterSpec`; ``config/kin.yaml`` documents every one.
PARAMETERS = {
    'robot_description': ParameterSpec('', (
        'URDF of the robot. Setting it at run time reloads the model (an invalid URDF is rejected '
        'with the reason and the old model stays). Ignored when description_from_topic is true.')),
    'description_file': ParameterSpec('', (
        'URDF file (a .xacro file is expanded with xacro) read when robot_description is empty; '
        'setting it at run time reloads the model, like robot_description.')),
    'robot_description_semantic': ParameterSpec('', (
        "SRDF of the robot (MoveIt's semantic description): its groups become IK groups, its group "
        'states named configurations, its disable_collisions the link pairs never checked for self-collision. '
        'The robot_description_semantic topic (latched) is read too; '
        'the latest of the two wins. An invalid SRDF is rejected and the previous groups stay.')),
    'semantic_file': ParameterSpec('', (
        'SRDF file (a .xacro file is expanded with xacro) read when robot_description_semantic is empty.')),
    'description_from_topic': ParameterSpec(False, (
        'Take the URDF from the robot_description topic (std_msgs/String, reliable, transient local) '
        'instead of the parameter; every new message hot-reloads the model.'), read_only=True),
    'publish_frequency': ParameterSpec(20.0, (
        'Maximum rate [Hz] of /tf per joint (as robot_state_publisher): a joint state is published '
        'when its stamp is at least 1/publish_frequency after the last one published.'), constraints='> 0'),
    'ignore_timestamp': ParameterSpec(False, 'Publish every joint state, whatever its stamp and publish_frequency.'),
    'frame_prefix': ParameterSpec('', "Prefix added to every frame id published (e.g. 'robot1/')."),
    'publish_jacobians': ParameterSpec(True, 'Publish the Jacobians of jacobian_frames with every /tf update.'),
    'jacobian_frames': ParameterSpec(STRING_LIST, (
        'Links whose Jacobians are published on ~/jacobian/<link> (empty: every leaf link).')),
    'jacobian_reference': ParameterSpec('local_world_aligned', (
        'Frame the Jacobian twists are expressed in: world, local or local_world_aligned.'),
        constraints='one of world, local, local_world_aligned'),
    'publish_gravity_torques': ParameterSpec(True, (
        'Publish gravity torques on ~/gravity_torques (sensor_msgs/JointState effort) with every /tf '
        'update, when the model has inertials.')),
    'ik_group_names': ParameterSpec(STRING_LIST, (
        "IK groups, each configured by ik_groups.<name>.base / .tip / .joints. Empty: the SRDF's "
        'groups, else groups derived from the tree (one per leaf chain, named after its tip, plus '
        "'all')."), read_only=True),
    'default_ik_group': ParameterSpec('', (
        "Group used when a request's group_name is empty. Empty: the first configured or SRDF group "
        'with a tip, else the derived chain with the most rotational joints.')),
    'ik_timeout': ParameterSpec(0.5, "IK time budget [s] when a request's timeout is 0.", constraints='> 0'),
    'ik_max_timeout': ParameterSpec(5.0, (
        "Largest IK time budget [s]: a request's longer timeout is clamped to it (said in "
        'error_code.message and logged), so no call holds a service thread or shutdown longer.'),
        constraints='> 0'),
    'ik_position_tolerance': ParameterSpec(1e-5, 'IK position tolerance per tip [m].', constraints='> 0'),
    'ik_rotation_tolerance': ParameterSpec(1e-5, 'IK rotation tolerance per tip [rad].', constraints='> 0'),
    'ik_max_iterations': ParameterSpec(0, (
        'IK iteration budget per request (restarts included); spent: NO_IK_SOLUTION. 0: none, the '
        'timeout alone ends a search (TIMED_OUT), as in MoveIt.'), constraints='>= 0'),
    'ik_restarts': ParameterSpec(0, "Extra random seeds solved alongside the request's seed.", constraints='>= 0'),
    'ik_max_constraints': ParameterSpec(64, ('Most constraints (position, orientation, joint and visibility together) '
                                             'of one /compute_ik request; more: INVALID_GOAL_CONSTRAINTS at once.'),
                                        constraints='> 0'),
    'ik_max_primitives': ParameterSpec(64, ('Most region primitives and meshes over the position constraints of one '
                                            '/compute_ik request; more: INVALID_GOAL_CONSTRAINTS at once.'),
                                       constraints='> 0'),
    'ik_max_links': ParameterSpec(16, 'Most IK links of one /compute_ik request; more: INVALID_LINK_NAME at once.',
                                  constraints='> 0'),
    'ik_max_solutions': ParameterSpec(16, (
        'Most distinct IK solutions ~/compute_ik_solutions returns: a request asking for 0 gets this many '
        '(those found within its timeout), one asking for more is clamped to it (said in error_code.message).'),
        constraints='> 0'),
    'ik_threads': ParameterSpec(2, (
        'Worker threads serving /compute_ik, ~/compute_ik_solutions and the state validity services '
        '(concurrent calls beyond it wait in the queue): the /tf path runs on a thread of its own and '
        'competes with at most this many for the interpreter.'), read_only=True, constraints='1 to 64'),
    'batch_threads': ParameterSpec(0, (
        'Threads a batched computation of the services (many states of /check_state_validity_multiple, '
        'IK batches) may use: the /tf thread keeps a core. 0: every core but one (at least one). '
        'Fewer run while other processes hold cores.'), read_only=True, constraints='0 to 1024'),
    'max_validity_states': ParameterSpec(100_000, (
        'Most states one /check_state_validity_multiple request may hold; a larger one is answered '
        'valid=false at once (logged).'), constraints='> 0'),
    'cartesian_max_points': ParameterSpec(100_000, (
        'Most waypoints, and most points at max_step, of one /compute_cartesian_path request; a larger '
        'one is refused (FAILURE) before any IK.'), constraints='> 0'),
    'validity_max_constraints': ParameterSpec(64, (
        'Most constraints (joint, position, orientation and visibility together) of one '
        '/check_state_validity or /check_state_validity_multiple request; more: valid=false at once (logged).'),
        constraints='> 0'),
    'validity_max_primitives': ParameterSpec(64, (
        'Most region primitives and meshes over the position constraints of one /check_state_validity or '
        '/check_state_validity_multiple request (a mesh region is refused without reading its vertices); '
        'more: valid=false at once (logged).'), constraints='> 0'),
    'avoid_collisions_policy': ParameterSpec(REJECT, (
        'IK requests with avoid_collisions=true, and /check_state_validity, are checked for '
        'self-collision (URDF <collision> geometry, pairs from the SRDF or sampled) when the robot has '
        'collision geometry. This sets the answer when it cannot be checked: for IK, a robot without '
        "geometry or coal missing: 'reject' replies COLLISION_CHECKING_UNAVAILABLE, 'solve_unchecked' "
        'solves and says so in error_code.message; for /check_state_validity, a robot with geometry '
        "but coal missing: 'reject' answers valid=false, 'solve_unchecked' evaluates the joint "
        'constraints only; both log why.'),
        constraints='reject or solve_unchecked'),
    'max_description_bytes': ParameterSpec(4 * 1024 * 1024, (
        'Largest robot description [bytes] taken (checked before parsing); a larger one is rejected '
        'and the previous model stays.'), constraints='> 0'),
    'max_links': ParameterSpec(1000, (
        'Most links a robot description may have (counted right after the XML parse, before the model '
        'is built); one with more is rejected and the previous model stays.'), constraints='> 0'),
    'max_collision_pairs': ParameterSpec(2000, (
        'Most pairs of collision geometries (on different links) the self-collision check takes on: '
        'a robot with more is not checked for self-collision (avoid_collisions_policy decides the '
        'answer; logged at load). Counted before the collision model is built.'), constraints='> 0'),
    'warning_period': ParameterSpec(5.0, (
        'Minimum time [s] between two warnings about the same bad joint state entries.'), constraints='>= 0'),
    'executor': ParameterSpec(EVENTS, (
        "Callback dispatch: 'events' runs the joint-state -> /tf path on rclpy's EventsExecutor "
        '(dispatch in C++) and serves /compute_ik, /compute_fk and /check_state_validity from a companion node '
        "'<node name>_services' on worker threads; 'threads' runs everything on one multi-threaded "
        "executor (/compute_ik on worker threads, the rest inline). 'events' falls back to "
        "'threads', with a log line, where rclpy has no EventsExecutor."), read_only=True,
        constraints='events or threads'),
    'publish_stats': ParameterSpec(False, (
        'Publish joint-state callback statistics on ~/stats (std_msgs/String, JSON: counts and the '
        'durations [us] of the callbacks of the last second) once a second.'), read_only=True),
}

#: key -> :class:`ParameterSpec` of the parameters ``ik_groups.<group>.<key>`` (all read-only).
GROUP_KEYS = {
    'base': ParameterSpec('', "Link the group's targets are expressed in (empty: root link).", read_only=True),
    'tip': ParameterSpec('', 'Default IK link of the group (empty: requests must name one).', read_only=True),
    'joints': ParameterSpec(STRING_LIST, 'Joints that may move (empty: those between base and tip).',
                            read_only=True),
    'objective': ParameterSpec('', (
        "Secondary IK objective, followed in the null space once a target is solved (never at the cost of "
        "a solution): 'closest' (least motion from the seed), 'center' (away from the joint limits), "
        "'manipulability' (away from singularities); empty: none."), read_only=True,
        constraints="'', closest, center or manipulability"),
}


@dataclasses.dataclass(frozen=True)
class IKSettings:
    """IK service options (from the node's parameters); see ``config/kin.yaml``.

    ``groups`` are the groups configured by parameters (empty: the node uses the SRDF's, or groups
    derived from the tree); ``default_group`` the ``default_ik_group`` parameter.
    """

    groups: Mapping[str, IKGroup]
    default_group: str = ''
    timeout: float = 0.5
    position_tolerance: float = 1e-5
    rotation_tolerance: float = 1e-5
    max_iterations: int = 0   # 0: no iteration budget, the timeout ends the search
    max_timeout: float = 5.0  # [s] a longer request timeout is clamped to it
    restarts: int = 0
    max_constraints: int = 64   # constraints of one request (ik_service.check_request_size)
    max_primitives: int = 64
    max_ik_links: int = 16
    avoid_collisions_policy: str = REJECT
    objectives: Mapping[str, str] = dataclasses.field(default_factory=dict)  # group -> objective ('': none)
    max_solutions: int = 16   # ~/compute_ik_solutions: the most solutions returned


@dataclasses.dataclass(frozen=True)
class ValidityCaps:
    """Bounds on the constraints of one /check_state_validity or /check_state_validity_multiple
    request, checked before any of its work.

    Attributes:
        max_constraints: parameter ``validity_max_constraints``: joint, position, orientation and
            visibility constraints together.
        max_primitives: parameter ``validity_max_primitives``: region primitives and meshes over
            the position constraints.
    """

    max_constraints: int = 64
    max_primitives: int = 64


#: The caps of the parameters' defaults.
DEFAULT_VALIDITY_CAPS = ValidityCaps()


@dataclasses.dataclass(frozen=True)
class NodeSettings:
    """The node's parameter values, read once after every accepted change.

    Attributes:
        interval_ns: [ns] 1 / ``publish_frequency``: least stamp step between two /tf of a joint.
        ignore_timestamp: publish every joint state.
        frame_prefix: prefix of every published frame id.
        publish_jacobians: publish the Jacobians of ``jacobian_frames``.
        jacobian_frames: links whose Jacobians are published (empty: every leaf link).
        reference: frame the Jacobian twists are expressed in.
        publish_gravity: publish gravity torques.
        warning_period_ns: [ns] least time between two warnings about the same bad input.
        publish_stats: publish callback statistics.
        max_validity_states: most states of one /check_state_validity_multiple request.
        cartesian_max_points: most waypoints and points of one /compute_cartesian_path request.
        validity_caps: the bounds on the constraints of one state-validity request.
        ik: the IK and collision-checking options of the services.
        limits: the bounds on a robot description.
    """

    interval_ns: int
    ignore_timestamp: bool
    frame_prefix: str
    publish_jacobians: bool
    jacobian_frames: tuple[str, ...]
    reference: Reference
    publish_gravity: bool
    warning_period_ns: int
    publish_stats: bool
    ik: IKSettings
    max_validity_states: int = 100_000
    cartesian_max_points: int = 100_000
    validity_caps: ValidityCaps = DEFAULT_VALIDITY_CAPS
    limits: DescriptionLimits = DescriptionLimits()


def read_settings(get: Callable[[str], object]) -> NodeSettings:
    """The settings from parameter values.

    Args:
        get: parameter name -> value, a list for the :data:`STRING_LIST` parameters (empty when
            unset), including ``ik_groups.<group>.<key>`` for every name in ``ik_group_names``.
    """
    groups, objectives = {}, {}
    for name in get('ik_group_names'):
        prefix = f'ik_groups.{name}.'
        groups[name] = IKGroup(name, get(prefix + 'base'), get(prefix + 'tip'), tuple(get(prefix + 'joints')))
        objectives[name] = get(prefix + 'objective')
    ik = IKSettings(
        groups=groups, default_group=get('default_ik_group'), timeout=float(get('ik_timeout')),
        position_tolerance=float(get('ik_position_tolerance')),
        rotation_tolerance=float(get('ik_rotation_tolerance')),
        max_iterations=int(get('ik_max_iterations')), restarts=int(get('ik_restarts')),
        max_timeout=float(get('ik_max_timeout')), max_constraints=int(get('ik_max_constraints')),
        max_primitives=int(get('ik_max_primitives')), max_ik_links=int(get('ik_max_links')),
        avoid_collisions_policy=get('avoid_collisions_policy'), objectives=objectives,
        max_solutions=int(get('ik_max_solutions')))
    return NodeSettings(
        interval_ns=int(1e9 / get('publish_frequency')), ignore_timestamp=bool(get('ignore_timestamp')),
        frame_prefix=get('frame_prefix'), publish_jacobians=bool(get('publish_jacobians')),
        jacobian_frames=tuple(get('jacobian_frames')), reference=Reference.parse(get('jacobian_reference')),
        publish_gravity=bool(get('publish_gravity_torques')), warning_period_ns=int(get('warning_period') * 1e9),
        publish_stats=bool(get('publish_stats')), ik=ik, max_validity_states=int(get('max_validity_states')),
        cartesian_max_points=int(get('cartesian_max_points')),
        validity_caps=ValidityCaps(int(get('validity_max_constraints')), int(get('validity_max_primitives'))),
        limits=DescriptionLimits(int(get('max_description_bytes')), int(get('max_links')),
                                 int(get('max_collision_pairs'))))


@dataclasses.dataclass(frozen=True)
class LiveState:
    """What a new parameter value is checked against.

    Attributes:
        robot_name: the live model's name ('' : none loaded yet).
        link_names: its links (empty: none loaded yet).
        group_names: the IK groups in force.
        description_from_topic: the URDF comes from the topic, not from parameters.
    """

    robot_name: str = ''
    link_names: Collection[str] = ()
    group_names: Collection[str] = ()
    description_from_topic: bool = False

    @property
    def has_robot(self) -> bool:
        return bool(self.link_names)


_POSITIVE = ('publish_frequency', 'ik_timeout', 'ik_max_timeout', 'ik_position_tolerance', 'ik_rotation_tolerance',
             'max_description_bytes', 'max_links', 'max_collision_pairs', 'ik_max_constraints', 'ik_max_primitives',
             'ik_max_links', 'ik_max_solutions', 'max_validity_states', 'cartesian_max_points',
             'validity_max_constraints', 'validity_max_primitives')


class StartupParameterError(RobokinError, ValueError):
    """Start-up parameter values (a params file, ``-p``) that ``ros2 param set`` would refuse.

    Attributes:
        problems: one sentence per bad value, naming the parameter.
    """

    def __init__(self, problems):
        self.problems = tuple(problems)
        super().__init__('; '.join(self.problems))


def startup_problems(get: Callable[[str], object], names, description_from_topic: bool) -> list[str]:
    """Why the start-up values of ``names`` are refused ('' entries left out), by the rules of
    :func:`check_value` (what ``ros2 param set`` applies): the node refuses to start on them
    rather than run with other settings than asked. Description parameters are not checked here:
    loading them reports its own errors and keeps the node waiting for a good one.

    Args:
        get: parameter name -> value.
        names: the declared parameters.
        description_from_topic: the node's ``description_from_topic``.
    """
    state = LiveState(description_from_topic=description_from_topic)
    skip = set(DESCRIPTION_PARAMETERS + SEMANTIC_PARAMETERS)
    return [reason for reason in (check_value(name, get(name), state) for name in names if name not in skip) if reason]


#: Largest value of a derived period or deadline in nanoseconds (a signed 64-bit count, with room
#: for adding it to a stamp): ``1e9 / publish_frequency`` and ``warning_period * 1e9``.
MAX_PERIOD_NS = 2 ** 62
#: [s] Largest time budget: a ``builtin_interfaces/Duration`` holds whole seconds in an int32.
MAX_TIMEOUT = 2 ** 31 - 1


def as_declared_type(name: str, value):
    """``value`` as parameter ``name``'s declared type where that loses nothing: an integer for a
    float parameter becomes that float (``-p publish_frequency:=30``, ``ik_timeout: 1`` in a
    params file, ``ros2 param set /robokin ik_timeout 1``); anything else is returned unchanged
    (and refused by rclpy's type check when it does not fit)."""
    spec = PARAMETERS.get(name)
    if spec is not None and isinstance(spec.default, float) and isinstance(value, int) \
            and not isinstance(value, bool):
        return float(value)
    return value


def type_problem(name: str, value) -> str:
    """The one line saying that a start-up ``value`` of parameter ``name`` has the wrong type."""
    spec = PARAMETERS.get(name) or GROUP_KEYS.get(name.rpartition('.')[2])
    expected = 'a list of strings' if spec is None or spec.default is STRING_LIST else \
        {bool: 'true or false', int: 'an integer', float: 'a number', str: 'a string'}[type(spec.default)]
    return f'{name} must be {expected}, got {str(value)[:60]!r} ({type(value).__name__})'


def check_value(name: str, value, state: LiveState) -> str:
    """Why parameter ``name`` cannot take ``value`` ('' if it can).

    Args:
        name: the parameter.
        value: its new value (None: a list parameter set to no value).
        state: the live model and options the value must fit.
    """
    if name in _POSITIVE and not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        hint = '; to publish every joint state set ignore_timestamp to true' if name == 'publish_frequency' else ''
        return f'{name} must be a finite number > 0, got {value!r}{hint}'
    if name == 'warning_period' and not (math.isfinite(value) and value >= 0):
        return f'warning_period must be a finite number >= 0 [s], got {value!r}'
    return _check_derived(name, value) or _check_value_in_context(name, value, state)


def batch_threads(value: int) -> int:
    """The thread cap of the services' batched computations for parameter ``batch_threads``
    (0: every core of the process but one, at least one)."""
    return value if value > 0 else max(1, parallel.available_cores() - 1)


def _check_derived(name: str, value) -> str:
    """Why a value passing its range rule makes a derived quantity overflow ('' if it does not)."""
    if name == 'publish_frequency' and 1e9 / value > MAX_PERIOD_NS:
        return (f'publish_frequency = {value!r} Hz makes a period of {1 / value:.3g} s, more than the '
                f'{MAX_PERIOD_NS * 1e-9:.3g} s a 64-bit count of nanoseconds holds')
    if name == 'warning_period' and value * 1e9 > MAX_PERIOD_NS:
        return (f'warning_period = {value!r} s is more than the {MAX_PERIOD_NS * 1e-9:.3g} s a 64-bit count '
                'of nanoseconds holds')
    if name in ('ik_timeout', 'ik_max_timeout') and value > MAX_TIMEOUT:
        return f'{name} = {value!r} s is more than the {MAX_TIMEOUT} s a builtin_interfaces/Duration holds'
    return ''


def _check_value_in_context(name: str, value, state: LiveState) -> str:
    """The rules of :func:`check_value` past the numeric ranges."""
    if name == 'ik_max_iterations' and value < 0:
        return f'ik_max_iterations must be >= 0 (0: no budget), got {value!r}'
    if name == 'ik_threads' and not 1 <= value <= 64:
        return f'ik_threads must be 1 to 64, got {value!r}'
    if name == 'batch_threads' and not 0 <= value <= 1024:
        return f'batch_threads must be 0 to 1024, got {value!r}'
    if name == 'ik_restarts' and value < 0:
        return f'ik_restarts must be >= 0, got {value!r}'
    if name.startswith('ik_groups.') and name.endswith('.objective') and value and value not in ik.OBJECTIVES:
        return f'{name} must be empty or one of {list(ik.OBJECTIVES)}, got {str(value)[:60]!r}'
    if name == 'avoid_collisions_policy' and value not in (REJECT, SOLVE_UNCHECKED):
        return f'avoid_collisions_policy must be {REJECT!r} or {SOLVE_UNCHECKED!r}, got {value!r}'
    if name == 'jacobian_reference':
        try:
            Reference.parse(value)
        except ValueError:
            names = ', '.join(r.name for r in Reference)
            return f'jacobian_reference: unknown Jacobian reference {str(value)[:60]!r}; expected one of {names}'
    if name == 'jacobian_frames' and state.has_robot and value is not None:
        unknown = [f for f in value if f not in state.link_names]
        if unknown:
            return f'jacobian_frames names links that robot {state.robot_name!r} does not have: {unknown}'
    if name == 'default_ik_group' and value and state.has_robot and value not in state.group_names:
        return f'default_ik_group {value!r} is not one of the IK groups {sorted(state.group_names)}'
    if name in DESCRIPTION_PARAMETERS and state.description_from_topic and (value or name == 'robot_description'):
        return 'description_from_topic is true: publish the URDF on the robot_description topic instead'
    return ''
