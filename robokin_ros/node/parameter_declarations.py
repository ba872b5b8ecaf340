"""Declaring the node's parameters with rclpy so every ROS tool sees a typed value.

:func:`declare` declares one :class:`~robokin_ros.node.parameters.ParameterSpec`: a list of
strings without a value gets an empty typed one (rclpy answers a whole ``get_parameters``
request empty, and ``ros2 param dump`` prints ``{}``, when one parameter has none); an integer
start-up value of a float parameter (``-p publish_frequency:=30``) is taken as that float, any
other type is refused in one line. :func:`as_declared_types` does the same for ``ros2 param set``
(the node's pre-set callback). :func:`declare_parameters` declares them all at start-up and
reads the settings, refusing to start on a value ``ros2 param set`` would refuse. Only rclpy's
public API is used.
"""

from __future__ import annotations

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException, ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter

from .parameters import (
    GROUP_KEYS,
    PARAMETERS,
    STRING_LIST,
    NodeSettings,
    ParameterSpec,
    StartupParameterError,
    as_declared_type,
    read_settings,
    startup_problems,
    type_problem,
)


def declare(node: Node, name: str, spec: ParameterSpec) -> str:
    """Declare parameter ``name`` of ``node``: '' or the one line refusing the type of its
    start-up value (it is then declared with its default).

    A read-only parameter is declared writable, given its value, then made read-only
    (``set_descriptor``), since its empty list cannot be set once it is read-only.
    """
    descriptor = ParameterDescriptor(description=spec.description, read_only=spec.read_only,
                                     additional_constraints=spec.constraints)
    writable = ParameterDescriptor(description=spec.description, additional_constraints=spec.constraints)
    default = Parameter.Type.STRING_ARRAY if spec.default is STRING_LIST else spec.default
    problem = ''
    try:
        declared = node.declare_parameter(name, default, writable)
    except InvalidParameterTypeException:   # read the start-up value untyped, then declare it typed
        given = node.declare_parameter(name, None, ParameterDescriptor(dynamic_typing=True)).value
        node.undeclare_parameter(name)
        value = as_declared_type(name, given)
        if value is given:
            problem, value = type_problem(name, given), default
        declared = node.declare_parameter(name, value, writable, ignore_override=True)
    if declared.type_ == Parameter.Type.NOT_SET:
        node.set_parameters([Parameter(name, Parameter.Type.STRING_ARRAY, [])])
    if spec.read_only:
        descriptor.type = node.describe_parameter(name).type
        node.set_descriptor(name, descriptor)
    return problem


def as_declared_types(parameters: list[Parameter]) -> list[Parameter]:
    """The pre-set step: an integer for a float parameter becomes that float (``ros2 param set``
    sends ``30`` as an integer)."""
    return [Parameter(p.name, value=as_declared_type(p.name, p.value)) if p.type_ == Parameter.Type.INTEGER
            else p for p in parameters]


def parameter_value(node: Node, name: str):
    """Value of parameter ``name``; ``[]`` for a list parameter without one."""
    try:
        value = node.get_parameter(name).value
    except ParameterUninitializedException:  # declared STRING_ARRAY without a value
        return []
    return [] if value is None else value


def declare_parameters(node: Node) -> NodeSettings:
    """Declare every parameter of ``node`` (:data:`~robokin_ros.node.parameters.PARAMETERS`, and
    the :data:`~robokin_ros.node.parameters.GROUP_KEYS` of each group in ``ik_group_names``) and
    read the settings from them.

    Raises:
        StartupParameterError: start-up values ``ros2 param set`` would refuse (each logged as an
            error line ``invalid parameter: ...`` first).
    """
    declared = dict(PARAMETERS)
    problems = [declare(node, name, spec) for name, spec in PARAMETERS.items()]
    for group in parameter_value(node, 'ik_group_names'):
        for key, spec in GROUP_KEYS.items():
            problems.append(declare(node, f'ik_groups.{group}.{key}', spec))
            declared[f'ik_groups.{group}.{key}'] = spec

    def value(name: str):
        return parameter_value(node, name)
    problems = [p for p in problems if p] or startup_problems(value, list(declared), value('description_from_topic'))
    if problems:   # what ros2 param set refuses is refused at start-up too (main exits 1)
        for problem in problems:
            node.get_logger().error(f'invalid parameter: {problem}')
        raise StartupParameterError(problems)
    return read_settings(value)

