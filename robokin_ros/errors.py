"""Exception hierarchy of robokin_ros: one root, each subclass also a matching built-in."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import NamedTuple

#: Characters of an input string an error message shows (see :func:`shorten`).
SHOWN_CHARS = 60
#: Names longer than this get no close-match suggestions (no name of a model is that long, and
#: matching a megabyte string against every name costs time).
_MATCHED_CHARS = 1000


def shorten(value, limit: int = SHOWN_CHARS) -> str:
    """``repr`` of ``str(value)`` cut to about ``limit`` characters, saying how long it was.

    Every message that echoes its input uses it, so a megabyte name gives a short message.
    """
    text = str(value)
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


class RobokinError(Exception):
    """Root of every error robokin_ros raises on purpose."""


class URDFError(RobokinError, ValueError):
    """A robot description that cannot be turned into a model.

    Attributes:
        problems: every problem found, one sentence each; the loader reports them all at once.
    """

    def __init__(self, problems: Sequence[str] | str):
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        if len(self.problems) == 1:
            text = f"invalid URDF: {self.problems[0]}"
        else:
            listed = "\n".join(f"  - {p}" for p in self.problems)
            text = f"invalid URDF ({len(self.problems)} problems):\n{listed}"
        super().__init__(text)


class LoadWarning(NamedTuple):
    """Something in a description the model does not use or had to interpret, which did not stop
    it loading (a malformed ``<visual>``, a ``<transmission>`` naming an unknown joint, swapped
    limits, ...).

    Attributes:
        line: 1-based line of the element in the input text (None if unknown).
        element: the element, e.g. ``"<material>"`` or ``"<joint name='j1'>"``.
        message: what is wrong and what was done about it.
    """

    line: int | None
    element: str
    message: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line is not None else ""
        return f"{where}{self.element}: {self.message}"


class ModelError(RobokinError, ValueError):
    """A request the model cannot serve: a builder operation that would break the tree,
    or dynamics on a model without inertials."""


class UnknownNameError(RobokinError, KeyError):
    """A link, joint or frame name the model does not have.

    Attributes:
        name: the name asked for.
        kind: "link", "joint", "frame" or "group".
        close_matches: up to three known names that resemble it.
    """

    kind = "name"

    def __init__(self, name: str, known: Iterable[str] = ()):
        self.name = name
        self.close_matches = difflib.get_close_matches(str(name), list(known), n=3, cutoff=0.5) \
            if len(str(name)) <= _MATCHED_CHARS else []
        super().__init__(name)

    def __str__(self) -> str:  # KeyError would quote the message
        hint = f"; did you mean {', '.join(map(shorten, self.close_matches))}?" if self.close_matches else ""
        name = shorten(self.name) if isinstance(self.name, str) else repr(self.name)
        return f"unknown {self.kind} {name}{hint}"


class UnknownLinkError(UnknownNameError):
    """A link (frame) name the model does not have."""

    kind = "link"


class UnknownJointError(UnknownNameError):
    """A joint name the model does not have."""

    kind = "joint"


class ArgumentError(RobokinError, ValueError):
    """An argument of the wrong type or with a value outside its domain (a tolerance that is not
    a finite number >= 0, a negative count, an unknown option name, complex numbers, ...).

    Attributes:
        argument: the argument's name.
    """

    def __init__(self, argument: str, message: str):
        self.argument = argument
        super().__init__(f"{argument}: {message}")


class ShapeError(RobokinError, ValueError):
    """An array whose shape does not match what the call needs.

    Attributes:
        argument: the argument's name.
        expected: the expected shape pattern, e.g. "(..., 7)".
        got: the shape that was given.
    """

    def __init__(self, argument: str, expected: str, got: tuple[int, ...]):
        self.argument, self.expected, self.got = argument, expected, tuple(got)
        super().__init__(f"{argument} must have shape {expected}, got {self.got}")


class NonFiniteError(RobokinError, ValueError):
    """An input with NaN or infinite entries.

    Attributes:
        argument: the argument's name.
        indices: the offending indices (into the flattened trailing axis, or named entries).
    """

    def __init__(self, argument: str, indices: Sequence, names: Sequence[str] | None = None):
        self.argument, self.indices = argument, list(indices)
        shown = list(names) if names is not None else self.indices
        more = "" if len(shown) <= 8 else f" and {len(shown) - 8} more"
        super().__init__(f"{argument} has non-finite entries at {shown[:8]}{more}")


class JointLimitError(RobokinError, ValueError):
    """A configuration outside the joint limits where one is required.

    Attributes:
        joint: the joint's name; value, lower, upper: the value and its bounds.
    """

    def __init__(self, joint: str, value: float, lower: float, upper: float):
        self.joint, self.value, self.lower, self.upper = joint, value, lower, upper
        super().__init__(f"joint {shorten(joint)} = {value:.6g} is outside its limits [{lower:.6g}, {upper:.6g}]")


class IKOptionError(ArgumentError):
    """An IK option with an invalid value (negative tolerance, weight or timeout, ...).

    Attributes:
        argument: the option's name (``"options"`` when the message names it).
    """

    def __init__(self, message: str, argument: str = "options"):
        self.argument = argument
        RobokinError.__init__(self, message)


class InvalidTargetError(RobokinError, ValueError):
    """A target pose whose rotation block is not a rotation (within
    :data:`robokin_ros.checks.ROTATION_TOLERANCE`) or whose last row is not ``[0, 0, 0, 1]``: no
    configuration can reach it, and no residual means anything.

    Attributes:
        indices: batch indices (and tip) of the offending targets.
    """

    def __init__(self, indices, reason: str):
        self.indices = list(indices)
        shown = self.indices[:8]
        more = f" and {len(self.indices) - 8} more" if len(self.indices) > 8 else ""
        super().__init__(f"targets at {shown}{more} are not rigid transforms: {reason}")


class SRDFError(RobokinError, ValueError):
    """A semantic description that cannot be read at all (malformed XML, wrong root element)."""


class UnknownStateError(UnknownNameError):
    """A named configuration (SRDF group_state) the description does not have."""

    kind = "named configuration"


class CollisionUnavailableError(RobokinError, ImportError):
    """Collision checking was asked for but the collision library (coal) is not installed."""

    def __init__(self, detail: str = ""):
        super().__init__("collision checking needs coal (pip install coal)" + (f": {detail}" if detail else ""))


class KernelCheckError(RobokinError, RuntimeError):
    """A compiled kernel that disagrees with its reference (its own source run uncompiled, or the
    numpy path), even after a rebuild."""
