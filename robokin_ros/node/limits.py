"""The node's face of the description limits (:mod:`robokin_ros.model.description_limits`, shared
with the web view): a description over them raises :class:`~.descriptions.Rejected`. No rclpy.
"""

from __future__ import annotations

from ..errors import RobokinError
from ..model import description_limits
from ..model.description_limits import DescriptionLimits, collision_pairs
from .descriptions import Rejected, failure

__all__ = ["check_description", "check_link_count", "collision_pairs"]


def check_description(xml: str, limits: DescriptionLimits) -> None:
    """Refuse a URDF text over ``limits`` (:func:`robokin_ros.model.description_limits.description_problem`).

    Raises:
        Rejected: naming the limit, its parameter and the description's size or link count (or
            the XML parser's reason when the text is not well-formed XML).
    """
    try:
        problem = description_limits.description_problem(xml, limits)
    except RobokinError as e:
        raise Rejected(failure(e)) from None
    if problem:
        raise Rejected(problem)


def check_link_count(n_links: int, limits: DescriptionLimits) -> None:
    """Refuse a description of ``n_links`` links, more than ``limits.max_links``.

    Raises:
        Rejected: naming the limit.
    """
    problem = description_limits.link_count_problem(n_links, limits)
    if problem:
        raise Rejected(problem)
