"""Checks of a robot description against the node's limits, made before the work they bound.

The size is checked before parsing, the number of links right after the XML parse (before the
model is built: a long chain costs seconds and gigabytes there), the number of collision
geometry pairs before the collision model is built. No rclpy.
"""

from __future__ import annotations

from ..errors import RobokinError
from ..model import RobotModel
from ..model.description import parse_document
from .descriptions import Rejected, failure
from .parameters import DescriptionLimits


def check_description(xml: str, limits: DescriptionLimits) -> None:
    """Refuse a URDF text larger than ``limits.max_bytes`` or with more than ``limits.max_links``
    ``<link>`` elements.

    Raises:
        Rejected: naming the limit, its parameter and the description's size or link count (or
            the XML parser's reason when the text is not well-formed XML).
    """
    # (UTF-8 takes at least one byte a character: a text of more characters is too large unencoded)
    size = len(xml) if len(xml) > limits.max_bytes else len(xml.encode('utf-8', 'surrogatepass'))
    if size > limits.max_bytes:
        raise Rejected(f'the description has {size} bytes or more, more than max_description_bytes = '
                       f'{limits.max_bytes}')
    try:
        root = parse_document(xml).root
    except RobokinError as e:
        raise Rejected(failure(e)) from None
    check_link_count(len(root.findall('link')), limits)


def check_link_count(n_links: int, limits: DescriptionLimits) -> None:
    """Refuse a description of ``n_links`` links, more than ``limits.max_links``.

    Raises:
        Rejected: naming the limit.
    """
    if n_links > limits.max_links:
        raise Rejected(f'the description has {n_links} links, more than max_links = {limits.max_links}')


def collision_pairs(model: RobotModel) -> int:
    """Pairs of collision geometries on two different links of ``model``: what a self-collision
    check would take on before adjacent and disabled link pairs are left out."""
    counts = [len(geometries) for geometries in model.link_collisions]
    total = sum(counts)
    return (total * total - sum(n * n for n in counts)) // 2
