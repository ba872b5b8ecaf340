"""Declaring the node's parameters with rclpy so every ROS tool sees a typed value.

:func:`declare` declares one :class:`~robokin_ros.node.parameters.ParameterSpec`: a list of
strings without a value gets an empty typed one (rclpy answers a whole ``get_parameters``
request empty, and ``ros2 param dump`` prints ``{}``, when one parameter has none); an integer
start-up value of a float parameter (``-p publish_frequency:=30``) is taken as that float, any
other type is refused in one line. :func:`as_declared_types` does the same for ``ros2 param set``
(the node's pre-set callback). Only rclpy's public API is used.
"""

from __future__ import annotations

from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException, ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter

from .parameters import STRING_LIST, ParameterSpec, as_declared_type, type_problem


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
