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


def description_problem(xml: str, limits: DescriptionLimits) -> str:
    """Why the URDF text ``xml`` is over ``limits`` (larger than ``limits.max_bytes``, or more
    than ``limits.max_links`` ``<link>`` elements), naming the limit and its parameter; '' when
    it is within them.

    Raises:
        URDFError: the text is not well-formed XML (the parser's reason).
    """
    # (UTF-8 takes at least one byte a character: a text of more characters is too large unencoded)
    size = len(xml) if len(xml) > limits.max_bytes else len(xml.encode('utf-8', 'surrogatepass'))
    if size > limits.max_bytes:
        return f'the description has {size} bytes or more, more than max_description_bytes = {limits.max_bytes}'
    return link_count_problem(len(parse_document(xml).root.findall('link')), limits)


def link_count_problem(n_links: int, limits: DescriptionLimits) -> str:
    """Why a description of ``n_links`` links is over ``limits.max_links`` ('' when it is not)."""
    if n_links > limits.max_links:
        return f'the description has {n_links} links, more than max_links = {limits.max_links}'
    return ''


def check_description(xml: str, limits: DescriptionLimits) -> None:
    """Refuse a URDF text over ``limits`` (see :func:`description_problem`).

    Raises:
        URDFError: naming the limit, its parameter and the description's size or link count (or
            the XML parser's reason when the text is not well-formed XML).
    """
    problem = description_problem(xml, limits)
    if problem:
        raise URDFError(problem)


def collision_pairs(model: RobotModel) -> int:
    """Pairs of collision geometries on two different links of ``model``: what a self-collision
    check would take on before adjacent and disabled link pairs are left out."""
    counts = [len(geometries) for geometries in model.link_collisions]
    total = sum(counts)
    return (total * total - sum(n * n for n in counts)) // 2
