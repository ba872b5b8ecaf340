"""Load warnings told one line per kind (issue 41: ``robokin check`` printed 55 near-identical
"<material> of link '...' has no name" lines for a humanoid, and the node logged them all).

Two :class:`~robokin_ros.errors.LoadWarning` s are of one kind when their element's tag and their
message agree once the quoted names are set aside (``of link 'pelvis'`` and ``of link
'torso_link'``). A kind is told by its first warning in full, with the count and the first input
lines of the others; kinds keep the order of their first warning.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..errors import LoadWarning

__all__ = ["LINES_SHOWN", "grouped_warnings"]

#: Input lines listed for a kind before "and K more".
LINES_SHOWN = 5

_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def _kind(warning: LoadWarning) -> tuple[str, str]:
    """The element's tag and the message with its quoted names set aside."""
    tag = warning.element.split(" ", 1)[0].rstrip(">")
    return tag, _QUOTED.sub("'…'", warning.message)


def grouped_warnings(warnings: Iterable[LoadWarning]) -> list[str]:
    """One line per kind of warning: the first one as it reads, and for a kind of several
    ``[N of this kind: lines a, b, c, d, e and K more]``."""
    kinds: dict[tuple[str, str], list[LoadWarning]] = {}
    for warning in warnings:
        kinds.setdefault(_kind(warning), []).append(warning)
    lines = []
    for members in kinds.values():
        line = str(members[0])
        if len(members) > 1:
            numbers = [str(w.line) for w in members if w.line is not None]
            shown = ", ".join(numbers[:LINES_SHOWN])
            more = f" and {len(numbers) - LINES_SHOWN} more" if len(numbers) > LINES_SHOWN else ""
            line += f" [{len(members)} of this kind" + (f": lines {shown}{more}]" if numbers else "]")
        lines.append(line)
    return lines
