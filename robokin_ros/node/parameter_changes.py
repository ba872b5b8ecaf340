"""``ros2 param set`` on the running node: the check that accepts or rejects new values, and the
step that applies the accepted ones.

:class:`ParameterChanges` is the node's on-set (check) and post-set (apply) parameters callback
(the pre-set one, :func:`~robokin_ros.node.parameter_declarations.as_declared_types`, converts
types). The check refuses, with a reason, a value :func:`~robokin_ros.node.parameters.check_value`
refuses, a description it cannot read or parse (read and parsed here, once, for the apply step),
and values from which the settings cannot be derived; it never raises. The apply step reads the
settings again and installs what changed: a new robot or SRDF, a new ``frame_prefix`` (the
robot again), the Jacobian publishers or the IK groups.
"""

from __future__ import annotations

from collections.abc import Callable

from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter

from .descriptions import SRDFDescription, URDFDescription, failure, load_parameter
from .limits import check_description, check_link_count
from .live_robot import LiveRobot
from .log_limits import cap_message
from .parameter_declarations import parameter_value
from .parameters import DESCRIPTION_PARAMETERS, SEMANTIC_PARAMETERS, LiveState, check_value, read_settings
from .robot_swap import RobotSwap

#: Parameters whose change makes the Jacobian publishers again.
JACOBIAN_PARAMETERS = frozenset({'jacobian_frames', 'publish_jacobians', 'jacobian_reference'})


class ParameterChanges:
    """The set-parameters check and apply step of ``node``.

    Args:
        node: the node (its ``settings`` are replaced by the apply step).
        robot_swap: the node's live robot and descriptions.
        sync_jacobians: makes the Jacobian publishers match the parameters.

    Attributes:
        accepted: what the check read and parsed, for the apply step: parameter -> description.
    """

    def __init__(self, node: Node, robot_swap: RobotSwap, sync_jacobians: Callable[[], None]):
        self._node = node
        self._swap = robot_swap
        self._sync_jacobians = sync_jacobians
        self.accepted: dict[str, URDFDescription | SRDFDescription | None] = {}

    def validate(self, parameters: list[Parameter]) -> SetParametersResult:
        """The set-parameters check: reject with a reason, or accept; a new description is read and
        parsed here, once, and handed to :meth:`apply` through :attr:`accepted`."""
        self.accepted = {}
        robot, from_topic = self._swap.robot, self._swap.from_topic
        state = LiveState(description_from_topic=from_topic) if robot is None else LiveState(
            robot.model.name, robot.model.link_names, robot.semantics.groups, from_topic)
        logger = self._node.get_logger()
        for p in parameters:
            reason = check_value(p.name, p.value, state)
            if not reason and p.name in DESCRIPTION_PARAMETERS + SEMANTIC_PARAMETERS:
                try:
                    self.accepted[p.name] = self._load_parameter(p.name, p.value, robot)
                except Exception as e:  # noqa: BLE001 - Rejected, or a parser bug: never out of this callback
                    reason = cap_message(failure(e))
            if reason:
                self.accepted = {}
                logger.warning(f'rejected parameter {p.name}: {reason}')
                return SetParametersResult(successful=False, reason=reason)
        new = {p.name: [] if p.value is None else p.value for p in parameters}
        try:   # what the apply step derives from the values must not fail there (set_parameters answers)
            read_settings(lambda name: new[name] if name in new else parameter_value(self._node, name))
        except Exception as e:  # noqa: BLE001 - any failure is a refusal with its reason
            self.accepted = {}
            reason = f'the settings from {sorted(new)} cannot be derived: {type(e).__name__}: {e}'
            logger.warning(f'rejected parameters: {reason}')
            return SetParametersResult(successful=False, reason=reason)
        return SetParametersResult(successful=True)

    def apply(self, parameters: list[Parameter]) -> None:
        """Take accepted values: read the settings again; install what the check loaded."""
        with self._swap.lock:
            self._apply_accepted({p.name for p in parameters})

    def _load_parameter(self, name: str, value: str, robot: LiveRobot | None):
        """:func:`~robokin_ros.node.descriptions.load_parameter` within the description limits: a
        URDF text is checked before parsing, a URDF file's link count after."""
        limits = self._node.settings.limits
        if name == 'robot_description':
            check_description(value, limits)
        loaded = load_parameter(name, value, None if robot is None else robot.model)
        if isinstance(loaded, URDFDescription):
            check_link_count(loaded.model.n_links, limits)
        return loaded

    def _apply_accepted(self, names: set[str]) -> None:
        node, swap = self._node, self._swap
        accepted, self.accepted = self.accepted, {}
        old_prefix = node.settings.frame_prefix
        node.settings = read_settings(lambda name: parameter_value(node, name))
        for name in ('semantic_file', 'robot_description_semantic'):
            if isinstance(accepted.get(name), SRDFDescription):
                swap.take_semantic(accepted[name])
        installed = False
        for name in ('description_file', 'robot_description'):
            if isinstance(accepted.get(name), URDFDescription):
                installed = swap.install(accepted[name]) or installed
        if installed:
            return   # with every derived publisher and the IK groups
        robot = swap.robot
        if node.settings.frame_prefix != old_prefix and robot is not None:
            swap.install(URDFDescription(robot.model, robot.xml, 'frame_prefix change'))
        elif names & JACOBIAN_PARAMETERS:
            self._sync_jacobians()
        elif 'default_ik_group' in names and robot is not None:
            swap.regroup(robot)
