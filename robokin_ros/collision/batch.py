"""Checking configurations against a :class:`~robokin_ros.collision.checker.CollisionModel`:
verdicts, the link pairs in collision, contacts and distances, batched over every core.

A call decides its route once (:func:`_row_states`): the compiled check of
:class:`~robokin_ros.collision.single.SingleCheck` once it is loaded, else numpy's bounding
volumes and coal. Its configurations are handed out in chunks over the threads
(:func:`_over_threads`), each chunk checked from its kernel call to its pair indices on one
thread, so that one chunk's compiled kernel runs without the GIL while another's Python parts
(coal, numpy) hold it; every configuration's results depend on it alone, the same bits whatever
the thread count.

A batch keeps the link pairs it found compactly (:class:`CollidingPairs`: two index arrays for
the whole batch, a few Python objects a chunk); :attr:`SelfCollisionResult.pairs` makes the
nested lists (one a configuration) on first reading. No process-wide switch is touched: a
100k-configuration call would otherwise make 100k lists under the garbage collector, whose
collections walk every object of the process.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from ..checks import is_single_vector
from ..kernels import parallel
from .checker import CHUNK, CollisionModel, collision_model
from .geometry import coal_module
from .single import BATCH_CHUNK

Array = NDArray[np.float64]


@dataclasses.dataclass(frozen=True)
class Contact:
    """One contact between two links (coal's deepest point of the pair).

    Attributes:
        link_a, link_b: the two links (``link_a`` first in the model's link order).
        position: ``(3,)`` [m] contact point in the root (world) frame.
        normal: ``(3,)`` unit normal in the world frame, from ``link_a`` towards ``link_b``.
        depth: [m] penetration depth (>= 0).
    """

    link_a: str
    link_b: str
    position: Array
    normal: Array
    depth: float


@dataclasses.dataclass(frozen=True)
class CollidingPairs:
    """The link pairs in collision of a batch of configurations, compactly: configuration ``r``
    (row-major over the batch) has ``names[ids[e]]`` for the entries ``e`` with ``rows[e] == r``,
    in that order.

    Attributes:
        names: the distinct link pairs ``(link_a, link_b)`` of the checked geometry pairs.
        rows: ``(m,)`` int64, ascending: the configuration of each entry.
        ids: ``(m,)`` int64: the link pair of each entry (each once a configuration, in the
            order of the collision model's pairs).
        batch: the batch shape (``()``: one configuration).
    """

    names: tuple
    rows: np.ndarray
    ids: np.ndarray
    batch: tuple

    def lists(self) -> list:
        """The link pairs per configuration: a list for one configuration, nested lists of
        batch shape ``batch`` for several."""
        n = int(np.prod(self.batch, dtype=np.int64))
        out: list = [[] for _ in range(n)]
        names = self.names
        for row, i in zip(self.rows.tolist(), self.ids.tolist()):
            out[row].append(names[i])
        return _nested(out, self.batch)


@dataclasses.dataclass(frozen=True)
class SelfCollisionResult:
    """Outcome of :func:`self_collisions` for configurations of batch shape ``...``.

    Attributes:
        in_collision: ``(...)`` bool, some checked pair is in collision.
        colliding_pairs: the link pairs in collision, compactly (:class:`CollidingPairs`).
        min_distance: ``(...)`` [m] smallest distance between checked geometries (coal's signed
            distance: negative when they penetrate), ``inf`` when nothing is checked; None unless
            ``distance=True`` was asked.
        contacts: :class:`Contact` s per configuration (laid out like ``pairs``); None unless
            ``contacts=True`` was asked.
    """

    in_collision: np.ndarray
    colliding_pairs: CollidingPairs
    min_distance: Array | None = None
    contacts: list | None = None

    @functools.cached_property
    def pairs(self) -> list:
        """The link pairs ``(link_a, link_b)`` in collision: a list for one configuration, nested
        lists of batch shape ``...`` for several (made on first reading, then kept)."""
        return self.colliding_pairs.lists()


def self_collisions(model, q, *, distance: bool = False, contacts: bool = False) -> SelfCollisionResult:
    """Self-collisions of configurations ``q (..., n_q)``.

    Args:
        model: a :class:`~robokin_ros.model.RobotModel` (its default :func:`collision_model`:
            no SRDF, sampled pairs) or a :class:`CollisionModel`.
        q: ``(..., n_q)`` configurations.
        distance: also compute ``min_distance`` (costs more: distances of near pairs).
        contacts: also list the contacts (point, normal, depth) of the colliding pairs.

    Returns:
        :class:`SelfCollisionResult` of batch shape ``...``.

    Raises:
        CollisionUnavailableError: coal is not installed.
        ShapeError, NonFiniteError: ``q`` of the wrong length or not finite.
    """
    cm = model if isinstance(model, CollisionModel) else collision_model(model)
    robot = cm.model
    named_only = not (distance or contacts)
    single = named_only and is_single_vector(q, robot.n_q)   # checked by the compiled check itself
    if not single:
        q = robot.check_q(q)
        single = named_only and q.ndim == 1
    if single:
        states, any_pair = cm.single_states(q, stop_at_first=False)
        names, link_pair = _link_pairs(cm)
        ids = np.asarray(list(dict.fromkeys(link_pair[np.flatnonzero(states)].tolist())) if any_pair else [], np.int64)
        return SelfCollisionResult(np.array(any_pair), CollidingPairs(names, np.zeros(len(ids), np.int64), ids, ()))
    batch = q.shape[:-1]
    flat = q.reshape(-1, robot.n_q)
    n = flat.shape[0]
    hit = np.zeros(n, bool)
    found: dict[int, tuple] = {}   # chunk start -> (rows, ids) of its colliding link pairs
    contacts_out: list = [None] * n
    distances = np.full(n, np.inf)
    states, chunk = _row_states(cm, n, poses=contacts or distance)
    names, link_pair = _link_pairs(cm)

    def rows(a: int, b: int) -> None:   # everything of configurations a:b (a thread's chunk)
        colliding, Tg = states(flat[a:b])
        hit[a:b] = any_pair = colliding.any(axis=1)
        found[a] = _pair_entries(colliding, any_pair, link_pair, len(names), a)
        if contacts:
            contacts_out[a:b] = _contacts(cm, Tg, colliding)
        if distance:
            distances[a:b] = _min_distances(cm, Tg, colliding)

    _over_threads(n, rows, chunk, threads=1 if contacts or distance else None)   # (coal's, under the GIL)
    parts = [found[a] for a in sorted(found)]
    pairs = CollidingPairs(names, np.concatenate([r for r, _ in parts] or [np.zeros(0, np.int64)]),
                           np.concatenate([i for _, i in parts] or [np.zeros(0, np.int64)]), batch)
    return SelfCollisionResult(hit.reshape(batch), pairs, distances.reshape(batch) if distance else None,
                               _nested(contacts_out, batch) if contacts else None)


def _link_pairs(cm: CollisionModel) -> tuple:
    """``(names, link_pair)``: the distinct link pairs of ``cm.pairs`` (in order of first
    appearance) and ``(n_pairs,)`` int64, the index in ``names`` of each geometry pair's links."""
    index: dict = {}
    link_pair = np.array([index.setdefault(name, len(index)) for name in cm.pair_names], np.int64)
    return tuple(index), link_pair


def _pair_entries(colliding: np.ndarray, any_pair: np.ndarray, link_pair: np.ndarray, n_names: int,
                  start: int) -> tuple:
    """``(rows, ids)`` of :class:`CollidingPairs` for the configurations ``start:start + b`` of
    ``colliding (b, n_pairs)`` (``any_pair (b,)``: its rows' ``any``): per configuration, the
    link pair of each colliding geometry pair, each once, in the order of the pairs."""
    in_collision = np.flatnonzero(any_pair)
    rows, columns = np.nonzero(colliding[in_collision])
    rows = in_collision[rows]
    ids = link_pair[columns]
    _, first = np.unique(rows * n_names + ids, return_index=True)   # (rows ascending: keys sorted by row)
    first.sort()
    return rows[first].astype(np.int64) + start, ids[first]


def _nested(items: list, batch: tuple):
    """The per-configuration ``items`` of a batch of shape ``batch`` as nested lists (the item
    itself for one configuration, ``batch == ()``)."""
    if len(batch) <= 1:
        return items[0] if not batch else items
    return np.array(items + [None], object)[:-1].reshape(batch).tolist()


def pair_collisions(cm: CollisionModel, q: Sequence | Array) -> np.ndarray:
    """Which geometry pairs are in self-collision: :func:`self_collisions`' verdicts pair by
    pair, without naming them (one array for a large batch).

    Args:
        cm: the collision model.
        q: ``(..., n_q)`` configurations.

    Returns:
        ``(..., n_pairs)`` bool: pair ``k`` of ``cm.pairs`` (links ``cm.pair_names[k]``) is in
        collision.

    Raises:
        ShapeError, NonFiniteError, ArgumentError: ``q`` is not ``(..., n_q)`` real finite numbers.
    """
    robot = cm.model
    q = robot.check_q(q)
    flat = q.reshape(-1, robot.n_q)
    out = np.zeros((len(flat), len(cm.pairs)), bool)
    states, chunk = _row_states(cm, len(flat), poses=False)

    def rows(a: int, b: int) -> None:
        out[a:b] = states(flat[a:b])[0]

    _over_threads(len(flat), rows, chunk)
    return out.reshape(q.shape[:-1] + (len(cm.pairs),))


def _row_states(cm: CollisionModel, n: int, poses: bool) -> tuple:
    """The route of a call on ``n`` configurations, decided once for the whole call, and its
    chunk size: ``(states, rows)``, ``states`` a function of ``qb (b, n_q)`` (checked) returning
    ``(colliding (b, n_pairs) bool, Tg)``: the compiled check's
    (:meth:`~robokin_ros.collision.single.SingleCheck.states_rows`, :data:`BATCH_CHUNK` rows;
    ``Tg (b, G, 3, 4)`` with ``poses``, else None) once it is loaded, else numpy's (bounding
    volumes, then coal, :data:`CHUNK` rows; ``Tg (b, G, 4, 4)``). Each configuration's verdicts
    depend on it alone."""
    check = cm.single_check
    if check is not None and check.batch_ready(n):
        return (lambda qb: check.states_rows(qb, poses)), BATCH_CHUNK

    def numpy_states(qb: Array) -> tuple:
        Tg = cm.geometry_poses(qb)
        return cm.colliding(Tg, cm.pairs), Tg
    return numpy_states, CHUNK


def _over_threads(n: int, rows, chunk: int, threads: int | None = None) -> None:
    """``rows(a, b)`` over chunks of ``chunk`` rows of ``range(n)`` on ``threads`` threads
    (default: every thread a batched call may use, :func:`robokin_ros.kernels.parallel.run_chunks`):
    the compiled kernel of one chunk runs without the GIL while another thread's chunk is with
    coal or builds its lists. Contacts and distances are coal's calls, which hold the GIL: one
    thread pays best."""

    def chunks(a: int, b: int) -> None:   # (one thread's call on the whole batch too: bounded scratch)
        for start in range(a, b, chunk):
            rows(start, min(b, start + chunk))
    parallel.run_chunks(n, chunks, threads, chunk_rows=chunk, min_rows=2 * BATCH_CHUNK)


def _contacts(cm: CollisionModel, Tg: Array, colliding: np.ndarray) -> list:
    """Per configuration, a :class:`Contact` per colliding geometry pair (``colliding (B, P)``)
    at the geometry poses ``Tg (B, G, 4, 4)`` or ``(B, G, 3, 4)``."""
    coal = coal_module()
    tf, out = cm._transforms(Tg), []
    request = coal.CollisionRequest(coal.CollisionRequestFlag.CONTACT, 1)
    for b in range(len(Tg)):
        found = []
        for ga, gb in cm.pairs[colliding[b]].tolist():
            result = coal.CollisionResult()
            if coal.collide(cm.shapes[ga], tf(b, ga), cm.shapes[gb], tf(b, gb), request, result):
                c = result.getContact(0)
                found.append(Contact(cm.link_names[cm.geometry_links[ga]], cm.link_names[cm.geometry_links[gb]],
                                     np.array(c.pos, float), np.array(c.normal, float),
                                     abs(float(c.penetration_depth))))
        out.append(found)
    return out


def _min_distances(cm: CollisionModel, Tg: Array, colliding: np.ndarray) -> Array:
    """``(B,)`` smallest signed distance over the checked pairs at the geometry poses ``Tg`` (as
    :func:`_contacts`): exact distances in the order of the bounding-sphere lower bounds,
    stopping once the bound exceeds the best distance."""
    coal = coal_module()
    tf, out = cm._transforms(Tg), np.full(len(Tg), np.inf)
    if not len(cm.pairs):
        return out
    gaps = cm.bound_gaps(Tg, cm.pairs)
    request = coal.DistanceRequest()
    for b in range(len(Tg)):
        candidates = np.flatnonzero(colliding[b]) if colliding[b].any() else np.argsort(gaps[b])
        best = np.inf
        for p in candidates.tolist():
            if gaps[b, p] > best:
                break
            ga, gb = cm.pairs[p]
            result = coal.DistanceResult()
            best = min(best, coal.distance(cm.shapes[ga], tf(b, ga), cm.shapes[gb], tf(b, gb), request, result))
        out[b] = best
    return out


def in_collision(cm: CollisionModel, q: Sequence[float] | Array) -> np.ndarray:
    """Whether configurations are in self-collision (the IK acceptance test; no names; each
    stops at its first colliding pair).

    Args:
        cm: the collision model.
        q: ``(B, n_q)`` configurations, or one ``(n_q,)`` (both through the compiled check once
            it is loaded, see :class:`~robokin_ros.collision.single.SingleCheck`).

    Returns:
        ``(B,)`` bool; ``(1,)`` for one configuration (:meth:`CollisionModel.in_collision_one`
        gives a plain bool).

    Raises:
        ShapeError, NonFiniteError, ArgumentError: ``q`` is not ``(..., n_q)`` real finite numbers.
    """
    check = cm.single_check
    if check is not None and is_single_vector(q, check.n_q):
        found = check.collides(q)   # checks q itself; None until loaded (the call counts towards it)
        if found is not None:
            return np.array([found])
        return cm.colliding(cm.geometry_poses(cm.model.check_q(q)[None]), cm.pairs, first=True).any(axis=1)
    robot = cm.model
    q = robot.check_q(q)
    if q.ndim == 1:
        return np.array([cm.single_states(q, stop_at_first=True)[1]])
    q = q.reshape(-1, robot.n_q)
    check = cm.single_check
    out = np.empty(len(q), bool)
    if check is not None and check.batch_ready(len(q)):
        def rows(a: int, b: int) -> None:
            out[a:b] = check.collides_rows(q[a:b])
        _over_threads(len(q), rows, BATCH_CHUNK)
    else:
        def rows(a: int, b: int) -> None:
            out[a:b] = cm.colliding(cm.geometry_poses(q[a:b]), cm.pairs, first=True).any(axis=1)
        _over_threads(len(q), rows, CHUNK)
    return out
