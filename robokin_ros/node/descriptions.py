"""Robot descriptions for the node: read, parsed once, and the IK groups they give.

Whatever way a description comes in (a parameter, a file a parameter names, a latched topic),
files go through the core's size-capped reader (:func:`robokin_ros.model.description.read_description`,
``.xacro`` expanded) and texts through the core's hardened parsers (``RobotModel.from_urdf``,
:func:`robokin_ros.srdf.parse_srdf`). A description that cannot be read or parsed raises
:class:`Rejected` with one sentence naming the culprit, whatever failed underneath (a parser bug
such as a ``RecursionError`` included), so the node logs it and keeps its last good model.

The set-parameters check reads and parses a new description once (:func:`load_parameter`) and
hands the result to the apply step, so a file is never read twice. :func:`choose_ik_groups`
picks the IK groups (parameters, else SRDF, else the tree); what to log is returned, not logged.
:func:`robokin_ros.node.live_robot.load_robot` turns a parsed URDF into the node's live robot.
Only the core is imported (no rclpy, no messages): ``launch_arguments`` uses this module too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ..errors import RobokinError, URDFError
from ..model import RobotModel
from ..model.description import read_description
from ..model.groups import ALL_GROUP, IKGroup, default_group_name, derive_groups
from ..model.srdf import SemanticDescription, parse_srdf
from .parameters import DESCRIPTION_PARAMETERS, SEMANTIC_PARAMETERS, NodeSettings

#: A line for the node's log: (level: 'info', 'warning' or 'error', text).
Note = tuple[str, str]
#: Groups named in the log line of the groups in use (a robot with 1,100 groups wrote 44 kB).
MAX_LISTED_GROUPS = 30


class Rejected(Exception):
    """A description the node does not take; ``str()`` is the sentence for the log line or the
    set-parameters reason. Raised and caught inside the node only."""


@dataclasses.dataclass(frozen=True)
class URDFDescription:
    """A URDF read and parsed.

    Attributes:
        model: its model.
        xml: its text (``.xacro`` expanded), republished on ``robot_description``.
        source: where it came from, for log lines (``"parameter robot_description"``,
            ``"description_file '/x.urdf'"``, ``"topic /robot_description"``).
    """

    model: RobotModel
    xml: str
    source: str


@dataclasses.dataclass(frozen=True)
class SRDFDescription:
    """An SRDF text, and what it says about one model.

    Attributes:
        xml: its text (``.xacro`` expanded).
        source: where it came from, for log lines.
        semantic: its reading against ``semantic.model`` (the live model when it came), or None
            when there was no model to read it against.
    """

    xml: str
    source: str
    semantic: SemanticDescription | None = None

    def for_model(self, model: RobotModel) -> SemanticDescription:
        """This SRDF read against ``model`` (parsed again only for another model).

        Raises:
            Rejected: unreadable XML, a root element other than ``<robot>``, or a parser failure.
        """
        if self.semantic is not None and self.semantic.model is model:
            return self.semantic
        return parse_semantic(self.xml, model)


def failure(error: BaseException) -> str:
    """One sentence for an exception out of a reader or parser: the message of a :class:`Rejected`
    or :class:`~robokin_ros.errors.RobokinError` (it names the culprit); anything else, which is a
    bug, with its type."""
    if isinstance(error, (RobokinError, Rejected)):
        return str(error)
    return f'{type(error).__name__}: {str(error)[:300]} (unexpected: please report it)'


def read_file(parameter: str, path: str) -> str:
    """Text of the file parameter ``parameter`` names (``.xacro`` expanded with xacro).

    Raises:
        Rejected: ``"<parameter>: <why>"``, e.g. ``"description_file: cannot read '/x.urdf': No
            such file or directory"``, larger than the size cap, not UTF-8, xacro missing or failing.
    """
    try:
        return read_description(path)
    except URDFError as e:
        raise Rejected(f"{parameter}: {'; '.join(e.problems)}") from None
    except Exception as e:  # noqa: BLE001 - nothing a file holds may take the node down
        raise Rejected(f'{parameter}: cannot read {path!r}: {failure(e)}') from None


def parse_urdf(xml: str) -> RobotModel:
    """The model of a URDF text.

    Raises:
        Rejected: the loader's message (every problem at once), or a parser failure.
    """
    try:
        return RobotModel.from_urdf(xml)
    except Exception as e:  # noqa: BLE001 - a bad description must never take the node down
        raise Rejected(failure(e)) from None


def parse_semantic(xml: str, model: RobotModel) -> SemanticDescription:
    """An SRDF text read against ``model``.

    Raises:
        Rejected: unreadable XML, a root element other than ``<robot>``, or a parser failure
            (e.g. ``RecursionError`` on a malformed group).
    """
    try:
        return parse_srdf(xml, model)
    except Exception as e:  # noqa: BLE001 - a bad description must never take the node down
        raise Rejected(failure(e)) from None


def text_of(name: str, value: str) -> tuple[str, str]:
    """(text, source) of description parameter ``name`` set to ``value``: the value itself, or the
    file it names read (``'' ``: none).

    Raises:
        Rejected: the file cannot be read.
    """
    if not name.endswith('_file'):
        return value, f'parameter {name}'
    return (read_file(name, value) if value else ''), f'{name} {value!r}'


def load_parameter(name: str, value: str, model: RobotModel | None) -> URDFDescription | SRDFDescription | None:
    """What setting description parameter ``name`` (see
    :data:`~robokin_ros.node.parameters.DESCRIPTION_PARAMETERS` and ``SEMANTIC_PARAMETERS``) to
    ``value`` loads, read and parsed once, for the set-parameters check to hand to the apply step.

    Args:
        name: the parameter.
        value: its new value (a text, or a path for the ``*_file`` parameters).
        model: the live model an SRDF is read against (None: none yet; the SRDF is then only kept).

    Returns:
        The parsed URDF or SRDF; None when there is nothing to load (an empty file parameter or
        SRDF; an empty ``robot_description`` is rejected, as the loader rejects an empty URDF).

    Raises:
        Rejected: the reason for the set-parameters answer: ``"<file parameter>: cannot read
            ..."``, ``"invalid robot description: ..."`` or ``"invalid semantic description: ..."``.
    """
    text, source = text_of(name, value)
    if name in DESCRIPTION_PARAMETERS:
        if not text and name != 'robot_description':
            return None
        try:
            return URDFDescription(parse_urdf(text), text, source)
        except Rejected as e:
            raise Rejected(f'invalid robot description: {e}') from None
    if name not in SEMANTIC_PARAMETERS:
        raise ValueError(f'{name!r} is not a description parameter')
    if not text:
        return None
    if model is None:
        return SRDFDescription(text, source)
    try:
        return SRDFDescription(text, source, parse_semantic(text, model))
    except Rejected as e:
        raise Rejected(f'invalid semantic description: {e}') from None


@dataclasses.dataclass(frozen=True)
class RobotSemantics:
    """What the robot's joints mean to the services.

    Attributes:
        groups: the IK groups in force (name -> group): the parameters', else the SRDF's, else
            derived from the tree.
        default_group: the group a request with an empty group_name gets ('' : none).
        srdf: the SRDF read against this robot's model, if any (its ``disable_collisions`` pairs
            are never checked for self-collision), whether or not its groups are used.
    """

    groups: Mapping[str, IKGroup] = dataclasses.field(default_factory=lambda: {ALL_GROUP: IKGroup(ALL_GROUP)})
    default_group: str = ''
    srdf: SemanticDescription | None = None


def choose_ik_groups(model: RobotModel, settings: NodeSettings, srdf: SRDFDescription | None,
                     notes: list[Note]) -> RobotSemantics:
    """The IK groups of ``model``: the parameters', else the SRDF's, else derived from the tree.

    Args:
        model: the robot.
        settings: the node's settings (``ik.groups``, ``ik.default_group``).
        srdf: the SRDF in force, with ``semantic`` read against ``model`` (else it is not used).
        notes: gets the SRDF's warnings (when its groups are used; the node logs the first
            :data:`~robokin_ros.node.log_limits.MAX_LINES` and a count of the rest), a default
            group that is not one of the groups, and the groups chosen with the default one and why.
    """
    semantic = srdf.semantic if srdf is not None and srdf.semantic is not None \
        and srdf.semantic.model is model else None
    derived = None
    if settings.ik.groups:
        groups, origin = dict(settings.ik.groups), 'parameters'
    elif semantic is not None and semantic.groups:
        groups, origin = dict(semantic.groups), f'the SRDF ({srdf.source})'
        groups.setdefault(ALL_GROUP, IKGroup(ALL_GROUP))
        notes += [('warning', f'SRDF: {warning}') for warning in semantic.warnings]   # capped by the node's log_limits
    else:
        derived = derive_groups(model)
        groups, origin = derived.groups, 'the kinematic tree (no SRDF, no ik_groups parameters)'
    default = settings.ik.default_group
    if default and default not in groups:
        notes.append(('warning', f'default_ik_group {default!r} is not one of the IK groups {sorted(groups)}; '
                                 'using the first group with a tip'))
        default = ''
    why = ('the default_ik_group parameter' if default else derived.reason if derived is not None
           else 'the first group with a tip')
    default = default or default_group_name(groups)
    listed = [f"{g.name} ({g.base or model.root_link} -> {g.tip or 'any link'})"
              for g in list(groups.values())[:MAX_LISTED_GROUPS]]
    if len(groups) > MAX_LISTED_GROUPS:
        listed.append(f'... and {len(groups) - MAX_LISTED_GROUPS} more')
    notes.append(('info', f'IK groups from {origin}: {", ".join(listed)}; default {default!r}: {why}'))
    return RobotSemantics(groups, default, semantic)
