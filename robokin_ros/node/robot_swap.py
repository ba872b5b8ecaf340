"""Which robot the node serves, and swapping it for a new description.

:class:`RobotSwap` takes robot descriptions (URDF) and semantic descriptions (SRDF) from the
node's parameters, their files and the topics, and makes each good one the live robot: one
:class:`~robokin_ros.node.live_robot.LiveRobot`, replaced by a single assignment, so a service
thread reads a consistent snapshot; installing one holds a lock. A description from the topic
is loaded on a thread of its own (:class:`~robokin_ros.node.background.LatestJobWorker`), so /tf
keeps flowing with the old model meanwhile. Whatever fails, the previous robot stays (logged).
After each install it publishes /tf_static and (when the node publishes it) /robot_description.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from rclpy.node import Node
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from .background import LatestJobWorker
from .conversions import some_names
from .descriptions import Note, SRDFDescription, URDFDescription, choose_ik_groups, failure, parse_urdf, text_of
from .limits import check_description
from .live_robot import LiveRobot, load_robot
from .log_limits import cap_message, cap_notes, cap_text
from .parameter_declarations import parameter_value
from .parameters import DESCRIPTION_PARAMETERS, SEMANTIC_PARAMETERS, StartupParameterError


class RobotSwap:
    """The live robot of ``node`` and the descriptions that replace it.

    Args:
        node: the node (its ``settings`` are read at each use: a parameter change replaces them).
        tf_static: the /tf_static publisher.
        description: the /robot_description publisher (None: the description comes from the topic).
        on_installed: called after a robot is made live, before /tf_static is published (the
            Jacobian publishers follow the new model).
        on_error: gets what a job of the loader thread raised (a bug: the thread survives it).

    Attributes:
        robot: the live robot (None until a description is installed).
        srdf: the latest semantic description (parameter, file or topic), None before one.
        lock: held while installing a robot or taking an SRDF (and by the parameters' apply step).
    """

    def __init__(self, node: Node, tf_static, description, on_installed: Callable[[], None],
                 on_error: Callable[[BaseException], None]):
        self._node = node
        self._tf_static = tf_static
        self._description = description
        self._on_installed = on_installed
        self.robot: LiveRobot | None = None
        self.srdf: SRDFDescription | None = None
        self.lock = threading.RLock()
        self._loader = LatestJobWorker('robokin description loader', on_error)

    @property
    def from_topic(self) -> bool:
        """The description comes from the robot_description topic (parameter description_from_topic)."""
        return self._description is None

    def start(self) -> None:
        """Take the start-up descriptions: the SRDF of the semantic parameters, and the URDF of the
        description parameters unless it comes from the topic (else wait for one, logged).

        Raises:
            StartupParameterError: a start-up file that cannot be read, or a start-up URDF that
                cannot be used (logged in one line): the node does not start, as
                robot_state_publisher does not (later descriptions that fail keep the last good model).
        """
        node = self._node
        semantic, source = self._startup_text(SEMANTIC_PARAMETERS)
        if semantic:
            self.srdf = SRDFDescription(semantic, source)
        xml, source = self._startup_text(() if self.from_topic else DESCRIPTION_PARAMETERS)
        if self.from_topic:
            node.get_logger().info('waiting for the robot description on topic '
                                   f"{node.resolve_topic_name('robot_description')}")
        elif xml:
            if not self.load(xml, source, startup=True):
                raise StartupParameterError([f'the robot description from {source} cannot be used'])
        else:
            node.get_logger().info('waiting for a robot description: set parameter robot_description '
                                   'or description_file')

    def loading(self) -> bool:
        """A description from the topic is being loaded or waits to be."""
        return not self._loader.idle()

    @property
    def stopped(self) -> bool:
        """:meth:`stop_loading` was called."""
        return self._loader.stopped

    def stop_loading(self, timeout: float) -> bool:
        """Drop a description waiting to be loaded and wait up to ``timeout`` [s] for the one being
        loaded (shutdown); True when the loader thread has ended."""
        return self._loader.stop(timeout)

    # ------------------------------------------------------------------------- the topics
    def on_description(self, msg: String) -> None:
        """Load the description on the loader thread (the latest of those waiting): /tf keeps
        flowing with the current model meanwhile."""
        xml, source = msg.data, f"topic {self._node.resolve_topic_name('robot_description')}"
        self._loader.submit(lambda: self.load(xml, source))

    def on_semantic(self, msg: String) -> None:
        if msg.data:
            topic = self._node.resolve_topic_name('robot_description_semantic')
            self.take_semantic(SRDFDescription(msg.data, f'topic {topic}'))

    # ------------------------------------------------------------------------- the SRDF
    def take_semantic(self, srdf: SRDFDescription) -> None:
        """Take a new SRDF: read it against the live model (if any) and regroup; a bad one is
        logged and the previous groups stay."""
        with self.lock:
            self._take_semantic_locked(srdf)

    def _take_semantic_locked(self, srdf: SRDFDescription) -> None:
        robot = self.robot
        if robot is None:
            self.srdf = srdf
            return
        notes: list[Note] = []
        try:
            srdf = SRDFDescription(srdf.xml, srdf.source, srdf.for_model(robot.model))
            semantics = choose_ik_groups(robot.model, self._node.settings, srdf, notes)
        except Exception as e:  # noqa: BLE001 - Rejected, or a parser bug (RecursionError): keep the groups
            self._node.get_logger().error(f'rejected the semantic description from {srdf.source} (keeping the '
                                          f'previous IK groups): {cap_message(failure(e))}')
            return
        self.srdf = srdf
        robot.semantics = semantics
        self._log_notes(notes)

    def regroup(self, robot: LiveRobot) -> None:
        """Choose the IK groups of ``robot`` again (after a change of ``default_ik_group``)."""
        notes: list[Note] = []
        robot.semantics = choose_ik_groups(robot.model, self._node.settings, self.srdf, notes)
        self._log_notes(notes)

    # ------------------------------------------------------------------------- the URDF
    def load(self, xml: str, source: str, startup: bool = False) -> bool:
        """Check, parse and install a URDF text; a bad one is logged and the previous model stays
        (``startup``: the node's first one, logged as the reason it does not start)."""
        try:
            check_description(xml, self._node.settings.limits)
            urdf = URDFDescription(parse_urdf(xml), xml, source)
        except Exception as e:  # noqa: BLE001 - Rejected, or a parser bug: keep the last good model
            keeping = 'not starting' if startup else self._keeping()
            self._node.get_logger().error(f'rejected the robot description from {source} ({keeping}): '
                                          f'{cap_message(failure(e))}')
            return False
        return self.install(urdf)

    def install(self, urdf: URDFDescription) -> bool:
        """Make a parsed URDF the live robot, with the SRDF in force; publish /tf_static and the
        description. Whatever fails, the previous robot stays (logged).

        The robot is built (the slow part) before taking the install lock, and built again under
        it in the rare case an SRDF arrived meanwhile."""
        srdf = self.srdf
        try:
            loaded = load_robot(urdf, self._node.settings, srdf, previous=self.robot)
            with self.lock:
                if self.srdf is not srdf:
                    loaded = load_robot(urdf, self._node.settings, self.srdf, previous=self.robot)
                return self._take_robot(urdf, loaded)
        except Exception as e:  # noqa: BLE001 - keep the last good model, whatever went wrong
            self._node.get_logger().error(f'could not install the robot description from {urdf.source} '
                                          f'({self._keeping()}): {cap_message(failure(e))}')
            return False

    def _keeping(self) -> str:
        robot = self.robot
        return f'keeping robot {robot.model.name!r}' if robot is not None else 'still waiting for a valid one'

    def _take_robot(self, urdf: URDFDescription, loaded) -> bool:
        """Make ``loaded`` (:class:`~robokin_ros.node.live_robot.LoadedRobot`) the live robot."""
        node = self._node
        self._log_notes(loaded.notes)
        robot, model = loaded.robot, urdf.model
        robot.log = node.get_logger().info
        robot.warn = node.get_logger().warning
        self.srdf, self.robot = loaded.srdf, robot
        self._on_installed()
        stamp = node.get_clock().now().to_msg()
        self._tf_static.publish(TFMessage(transforms=robot.static_transforms(stamp)))
        if self._description is not None:
            self._description.publish(String(data=urdf.xml))
        node.get_logger().info(cap_text(
            f'robot {model.name!r} from {urdf.source}: {model.n_links} links, {len(model.joint_names)} joints '
            f'{some_names(model.joint_names, 20)}; {int(model.is_fixed.sum())} fixed joints on /tf_static, '
            f'{robot.tf_joints.size} movable joints on /tf'))
        return True

    # ------------------------------------------------------------------------- start-up texts, notes
    def _startup_text(self, names: tuple[str, ...]) -> tuple[str, str]:
        """(text, source) of the first of parameters ``names`` with a value (a ``*_file`` one read);
        ('', '') when none has one.

        Raises:
            StartupParameterError: the file cannot be read (logged in one line: the node does not start).
        """
        for name in names:
            value = parameter_value(self._node, name)
            if value:
                try:
                    return text_of(name, value)
                except Exception as e:  # noqa: BLE001 - Rejected, or a reader bug: one line, exit 1
                    problem = cap_message(failure(e))
                    self._node.get_logger().error(f'{problem} (not starting)')
                    raise StartupParameterError([problem]) from None
        return '', ''

    def _log_notes(self, notes: tuple[Note, ...] | list[Note]) -> None:
        # one call site per severity: rclpy refuses a log call whose severity differs from the
        # previous call at the same line
        logger = self._node.get_logger()
        for level, text in cap_notes(notes):
            if level == 'error':
                logger.error(text)
            elif level == 'warning':
                logger.warning(text)
            else:
                logger.info(text)
