"""What a servo cycle reports: MoveIt Servo's status codes (``moveit_msgs/msg/ServoStatus``,
``moveit_servo::StatusCode``) and a one-line message."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class StatusCode(enum.IntEnum):
    """The codes of ``moveit_msgs/msg/ServoStatus`` (same numbers, same names)."""

    INVALID = -1
    NO_WARNING = 0
    DECELERATE_FOR_APPROACHING_SINGULARITY = 1
    HALT_FOR_SINGULARITY = 2
    DECELERATE_FOR_LEAVING_SINGULARITY = 3
    DECELERATE_FOR_COLLISION = 4
    HALT_FOR_COLLISION = 5
    JOINT_BOUND = 6


#: Which code wins when a cycle has several to report (first: most important).
PRIORITY = (StatusCode.INVALID, StatusCode.HALT_FOR_COLLISION, StatusCode.HALT_FOR_SINGULARITY,
            StatusCode.DECELERATE_FOR_COLLISION, StatusCode.JOINT_BOUND,
            StatusCode.DECELERATE_FOR_APPROACHING_SINGULARITY, StatusCode.DECELERATE_FOR_LEAVING_SINGULARITY,
            StatusCode.NO_WARNING)


@dataclass(frozen=True)
class ServoStatus:
    """One cycle's status.

    Attributes:
        code: the most important :class:`StatusCode` of the cycle (:data:`PRIORITY`).
        message: one line saying why (empty for ``NO_WARNING`` without a note).
        scale: the factor the cycle's wanted velocity was slowed by near a singularity or
            self-collision (1: not slowed; the limits' own cuts are not in it).
        condition: the condition number of the group's scaled Jacobian (0 for joint jogs).
    """

    code: StatusCode
    message: str = ""
    scale: float = 1.0
    condition: float = 0.0


def merged(reports: list[tuple[StatusCode, str]]) -> tuple[StatusCode, str]:
    """The most important code of ``reports`` and the messages joined (``NO_WARNING`` and no
    message when empty)."""
    if not reports:
        return StatusCode.NO_WARNING, ""
    code = min((c for c, _ in reports), key=PRIORITY.index)
    return code, "; ".join(m for _, m in reports if m)
