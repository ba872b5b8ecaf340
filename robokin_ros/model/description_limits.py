"""Bounds on the work one robot description may cost, checked before that work: its size before
parsing, its number of links right after the XML parse (before the model is built: a long chain
costs seconds and gigabytes there), its collision geometry pairs before a collision model is built.

Shared by every front end that takes descriptions from elsewhere: the ``robokin`` node (parameters
``max_description_bytes``, ``max_links``, ``max_collision_pairs``), the ``web_view`` node (the same
parameters) and ``robokin view`` (the defaults).
"""

from __future__ import annotations

import dataclasses

from ..errors import URDFError
from .description import parse_document
from .robot_model import RobotModel


@dataclasses.dataclass(frozen=True)
class DescriptionLimits:
    """Bounds on one robot description.

    Attributes:
        max_bytes: largest description [bytes] (parameter ``max_description_bytes``).
        max_links: most links (parameter ``max_links``).
        max_collision_pairs: most pairs of collision geometries on different links a
            self-collision check takes on (parameter ``max_collision_pairs``).
    """

    max_bytes: int = 4 * 1024 * 1024
    max_links: int = 1000
    max_collision_pairs: int = 2000


def check_description(xml: str, limits: DescriptionLimits) -> None:
    """Refuse a URDF text larger than ``limits.max_bytes`` or with more than ``limits.max_links``
    ``<link>`` elements.

    Raises:
        URDFError: naming the limit, its parameter and the description's size or link count (or
            the XML parser's reason when the text is not well-formed XML).
    """
    # (UTF-8 takes at least one byte a character: a text of more characters is too large unencoded)
    size = len(xml) if len(xml) > limits.max_bytes else len(xml.encode('utf-8', 'surrogatepass'))
    if size > limits.max_bytes:
        raise URDFError(f'the description has {size} bytes or more, more than max_description_bytes = '
                        f'{limits.max_bytes}')
    check_link_count(len(parse_document(xml).root.findall('link')), limits)


def check_link_count(n_links: int, limits: DescriptionLimits) -> None:
    """Refuse a description of ``n_links`` links, more than ``limits.max_links``.

    Raises:
        URDFError: naming the limit.
    """
    if n_links > limits.max_links:
        raise URDFError(f'the description has {n_links} links, more than max_links = {limits.max_links}')


def collision_pairs(model: RobotModel) -> int:
    """Pairs of collision geometries on two different links of ``model``: what a self-collision
    check would take on before adjacent and disabled link pairs are left out."""
    counts = [len(geometries) for geometries in model.link_collisions]
    total = sum(counts)
    return (total * total - sum(n * n for n in counts)) // 2
