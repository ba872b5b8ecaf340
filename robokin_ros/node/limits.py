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
    """:func:`robokin_ros.model.description_limits.check_description`, refusing with :class:`Rejected`.

    Raises:
        Rejected: naming the limit, its parameter and the description's size or link count (or
            the XML parser's reason when the text is not well-formed XML).
    """
    try:
        description_limits.check_description(xml, limits)
    except RobokinError as e:
        raise Rejected(failure(e)) from None


def check_link_count(n_links: int, limits: DescriptionLimits) -> None:
    """Refuse a description of ``n_links`` links, more than ``limits.max_links``.

    Raises:
        Rejected: naming the limit.
    """
    try:
        description_limits.check_link_count(n_links, limits)
    except RobokinError as e:
        raise Rejected(failure(e)) from None
