"""Checks of ``kin.launch.py``'s arguments, done before the launch starts any process.

Plain Python (no ``launch``, no rclpy), so the checks are tested without a ROS install. The
launch file calls :func:`check_launch_arguments` and returns no action at all when it raises:
a bad argument or file never leaves a half-started launch (a ``kin_node`` orphaned when RViz
then failed to start).
"""

from __future__ import annotations

import dataclasses
import difflib
import fnmatch
from collections.abc import Callable, Mapping

import yaml

from ..errors import RobokinError, URDFError
from ..model.description import max_description_bytes, parse_document, read_capped
from .descriptions import Rejected, failure, parse_semantic, parse_urdf, read_file

NODE_NAME = 'robokin'
ARGUMENTS = {
    'description_file': 'URDF or .xacro file of the robot (default: the bundled Panda)',
    'semantic_file': "SRDF or .xacro file (MoveIt's semantic description); empty: none",
    'params_file': 'parameters of the robokin node (YAML)',
    'frame_prefix': 'prefix of every published frame id',
    'use_rviz': 'true, false or auto (default: true if rviz2 is installed)',
    'use_sim_time': 'true or false: use /clock',
    'use_web_view': 'true or false (default): also start the web_view node (the robot in a browser; needs viser)',
}
TRUE_WORDS = ('true', '1')    # what launch's IfCondition accepts, case-insensitively
FALSE_WORDS = ('false', '0')


class LaunchArgumentError(RobokinError, ValueError):
    """One or more launch arguments are invalid; ``problems`` lists every one."""

    def __init__(self, problems):
        self.problems = tuple(problems)
        super().__init__('invalid launch arguments, nothing started:\n  ' + '\n  '.join(self.problems))


@dataclasses.dataclass(frozen=True)
class LaunchPlan:
    """What the launch starts, from valid arguments.

    Attributes:
        robot_description: URDF text (``.xacro`` expanded).
        root_link: the robot's root link (RViz's fixed frame, without prefix).
        semantic_file: SRDF path passed to the node as ``semantic_file``; ``''``: none.
        params_file: path of the node's parameters file.
        frame_prefix: prefix of every published frame id.
        use_rviz: start RViz.
        use_sim_time: use /clock.
        notes: messages for the user (e.g. why RViz is not started).
    """

    robot_description: str
    root_link: str
    semantic_file: str
    params_file: str
    frame_prefix: str
    use_rviz: bool
    use_sim_time: bool
    notes: tuple[str, ...] = ()


def unknown_arguments(command_line: list[str]) -> list[str]:
    """Problems for ``name:=value`` words of ``command_line`` that name no argument of ours."""
    problems = []
    for word in command_line:
        name = word.split(':=', 1)[0]
        if ':=' in word and name not in ARGUMENTS:
            close = difflib.get_close_matches(name, ARGUMENTS, n=1)
            hint = f" (did you mean '{close[0]}'?)" if close else ''
            problems.append(f"unknown launch argument '{name}'{hint}; known: {', '.join(ARGUMENTS)}")
    return problems


def check_launch_arguments(values: Mapping[str, str], command_line: list[str] = (), *,
                           rviz_available: Callable[[], bool]) -> LaunchPlan:
    """Check every argument and file; return the plan or raise listing every problem.

    Args:
        values: launch argument name -> value (all of :data:`ARGUMENTS`).
        command_line: the ``name:=value`` words given to ``ros2 launch`` (checked for unknown names).
        rviz_available: whether the ``rviz2`` executable can be started.

    Raises:
        LaunchArgumentError: naming each bad argument or file.
    """
    problems = unknown_arguments(list(command_line))
    notes = []
    robot_description, model = '', None
    path = values['description_file']
    try:
        robot_description = read_file('description_file', path)
        model = parse_urdf(robot_description)
    except Exception as exc:  # noqa: BLE001 - Rejected, or a parser bug: listed, nothing started
        problems.append(_problem('description_file', path, exc))

    semantic = values.get('semantic_file', '')
    if semantic:
        try:
            _check_semantic(read_file('semantic_file', semantic), model)
        except Exception as exc:  # noqa: BLE001 - Rejected, or a parser bug: listed, nothing started
            problems.append(_problem('semantic_file', semantic, exc))

    problems += _check_params_file(values['params_file'])
    use_sim_time = _parse_bool(values['use_sim_time'], 'use_sim_time', problems)
    use_rviz = False
    rviz = values['use_rviz'].strip().lower()
    if rviz == 'auto':
        use_rviz = rviz_available()
        if not use_rviz:
            notes.append('rviz2 is not installed: RViz not started (use_rviz:=auto); '
                         'install ros-jazzy-rviz2 for it, or pass use_rviz:=false to silence this')
    elif _parse_bool(values['use_rviz'], 'use_rviz', problems, also='auto'):
        use_rviz = True
        if not rviz_available():
            problems.append('use_rviz:=true but rviz2 is not installed (no package rviz2 in '
                            'AMENT_PREFIX_PATH); install ros-jazzy-rviz2 or pass use_rviz:=false')
    if problems:
        raise LaunchArgumentError(problems)
    return LaunchPlan(robot_description, model.root_link, semantic, values['params_file'],
                      frame_prefix=values['frame_prefix'], use_rviz=use_rviz, use_sim_time=bool(use_sim_time),
                      notes=tuple(notes))


def _problem(argument, path, exc):
    """The problem line of a file argument (a reading failure names the argument and the file already)."""
    text = failure(exc)
    return text if text.startswith(f'{argument}: ') else f'{argument} {path!r}: {text}'


def _check_semantic(text, model):
    """Read an SRDF as the node will: against the robot's model; only its XML when the URDF failed.

    Raises:
        Rejected: unreadable XML or a root element other than ``<robot>``.
    """
    if model is not None:
        parse_semantic(text, model)
        return
    try:
        root = parse_document(text).root
    except URDFError as exc:
        raise Rejected(f"invalid SRDF: {'; '.join(exc.problems)}") from None
    if root.tag != 'robot':
        raise Rejected(f'invalid SRDF: the root element is <{root.tag[:60]}>, expected <robot>')


def _parse_bool(text, name, problems, also=None):
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    allowed = ', '.join(TRUE_WORDS + FALSE_WORDS + ((also,) if also else ()))
    problems.append(f'{name}:={text!r} is not a boolean (one of {allowed})')
    return None


def _check_params_file(path):
    """Problems of a node parameters file: unreadable, not YAML, or nothing for ``robokin``."""
    try:
        text = read_capped(path, max_description_bytes()).decode('utf-8')
    except FileNotFoundError:
        return [f'params_file {path!r}: no such file']
    except OSError as exc:
        return [f'params_file {path!r}: cannot read it: {exc.strerror or exc}']
    except UnicodeDecodeError as exc:
        return [f'params_file {path!r}: not UTF-8 text: {exc}']
    try:
        content = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return [f'params_file {path!r}: not readable as YAML: {exc}']
    if not isinstance(content, dict):
        return [f'params_file {path!r}: expected a mapping of node names to '
                f'{{ros__parameters: ...}}, got {type(content).__name__}']
    matching = [key for key in content if _names_our_node(str(key))]
    if not matching:
        return [f"params_file {path!r}: no entry for node '{NODE_NAME}' (top-level keys: "
                f"{', '.join(map(str, content)) or 'none'}; expected '{NODE_NAME}', "
                f"'/{NODE_NAME}' or '/**')"]
    problems = []
    for key in matching:
        entry = content[key]
        if not isinstance(entry, dict) or not isinstance(entry.get('ros__parameters'), dict):
            problems.append(f"params_file {path!r}: '{key}' has no 'ros__parameters' mapping")
    return problems


def _names_our_node(key):
    """Whether a parameters-file key applies to the node ``/robokin`` (rcl's wildcards)."""
    pattern = key if key.startswith('/') else '/' + key
    pattern = pattern.replace('/**', '*')  # '**' matches any number of namespace tokens
    return fnmatch.fnmatchcase('/' + NODE_NAME, pattern)
