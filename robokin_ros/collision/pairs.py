"""Link pairs not worth checking for self-collision, found by sampling as MoveIt Setup Assistant does.

Pairs in collision at the home configuration (``"Default"``), in nearly every random
configuration (``"Always"``) or in none (``"Never"``); cached on disk in the private cache
directory (:func:`robokin_ros.kernels.disk_cache.cache_dir`). An entry is named by a hash of its key
(the model's URDF text, the collision shapes actually loaded, the options) and holds that key and
a digest of its pairs; it is used only when both match, it is a regular file of the current
user within the size cap, and its JSON has the expected structure. Anything else (an entry of
another robot, a corrupt or planted file, a FIFO, a link to ``/dev/zero``, deeply nested JSON)
is recomputed and overwritten, never trusted and never an error.
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np

from ..errors import ArgumentError
from ..kernels.disk_cache import cache_dir, read_entry, write_entry
from ..model import RobotModel

Array = np.ndarray

#: A pair in collision in at least this fraction of the samples is "Always" in collision
#: (MoveIt Setup Assistant's threshold).
ALWAYS_FRACTION = 0.95
#: Random configurations drawn by default.
SAMPLES = 5000
#: Random configurations checked together (fewer when the robot has many pairs: see
#: :data:`MAX_PAIR_CHECKS_PER_CHUNK`).
SAMPLE_CHUNK = 1024
#: Largest (configurations x geometry pairs) checked together: bounds the memory of the
#: bounding-volume test (a few (B, pairs, 3) float arrays) on robots with thousands of pairs.
MAX_PAIR_CHECKS_PER_CHUNK = 1 << 20
_CACHE_VERSION = 2
#: Largest cache entry read [bytes] (a 100-link robot's entry is ~300 kB).
MAX_ENTRY_BYTES = 16 * 1024 * 1024
_REASONS = ("Default", "Always", "Never")


def _digest(data) -> str:
    return hashlib.sha256(data if isinstance(data, bytes) else data.encode()).hexdigest()


def _geometry_digest(collision) -> str:
    """Digest of the shapes a collision model loaded: links, placements, bounds and mesh vertices
    (the same URDF with other mesh files, or a mesh that was missing, samples differently)."""
    h = hashlib.sha256()
    for array in (collision.geometry_links, collision.placements, collision.box_centres, collision.box_halves,
                  collision.capsule_ends, collision.capsule_radii):
        h.update(np.ascontiguousarray(array).tobytes())
    for shape in collision.shapes:
        h.update(type(shape).__name__.encode())
        if hasattr(shape, "vertices"):
            h.update(np.ascontiguousarray(shape.vertices(), np.float64).tobytes())
    return h.hexdigest()


def _cache_key(model: RobotModel, collision, samples: int, rng) -> dict | None:
    """What a sampling depends on, or None when it cannot be cached (a generator's state is not a key)."""
    if not isinstance(rng, (int, np.integer)) or isinstance(rng, bool):
        return None
    return {"version": _CACHE_VERSION, "samples": int(samples), "rng": int(rng),
            "urdf_sha256": _digest(model.to_urdf()), "geometry_sha256": _geometry_digest(collision)}


def _cache_path(key: dict) -> str | None:
    """The entry's file, named by a hash of ``key``; None when no cache directory can be had."""
    try:
        folder = cache_dir()
    except OSError:
        return None
    return os.path.join(folder, "collision_pairs", _digest(json.dumps(key, sort_keys=True)) + ".json")


def _pairs_digest(disabled) -> str:
    return _digest(json.dumps([list(p) for p in disabled]))


def _read_cache(path: str, key: dict, model: RobotModel) -> tuple | None:
    """The cached pairs, or None unless ``path`` is a valid entry made for ``key`` (see the module)."""
    data = read_entry(path, MAX_ENTRY_BYTES)
    if data is None:
        return None
    try:
        entry = json.loads(data)
    except (ValueError, RecursionError):   # not JSON (or not UTF-8), or nested too deep
        return None
    if not isinstance(entry, dict) or entry.get("key") != key or not isinstance(entry.get("disabled"), list):
        return None
    links = set(model.link_names)
    pairs = entry["disabled"]
    if not all(isinstance(p, list) and len(p) == 3 and all(isinstance(x, str) for x in p)
               and p[0] in links and p[1] in links and p[2] in _REASONS for p in pairs):
        return None
    if entry.get("disabled_sha256") != _pairs_digest(pairs):
        return None
    return tuple(tuple(p) for p in pairs)


def _write_cache(path: str, key: dict, model: RobotModel, disabled: tuple) -> None:
    entry = {"key": key, "robot": model.name, "disabled": [list(p) for p in disabled],
             "disabled_sha256": _pairs_digest(disabled)}
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        write_entry(path, json.dumps(entry).encode())
    except OSError:
        pass  # a read-only cache only costs the sampling next time


def _link_pair_hits(candidates):
    """The link pairs of ``candidates``' geometry pairs (sorted ``(link a, link b)`` tuples), and
    a function of ``q (B, n_q)`` giving ``(B, n_link_pairs)`` bool: whether any geometry pair of
    each link pair collides (one ``reduceat`` over the geometry pairs grouped by link pair)."""
    g = candidates.geometry_links
    of_geometry_pair = [(int(g[a]), int(g[b])) for a, b in candidates.pairs]
    link_pairs = sorted(set(of_geometry_pair))
    row = {p: k for k, p in enumerate(link_pairs)}
    of_pair = np.array([row[p] for p in of_geometry_pair], np.int64)
    order = np.argsort(of_pair, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(of_pair[order]) != 0])   # every link pair has >= 1

    def link_hits(q: Array) -> np.ndarray:
        hits = candidates.colliding(candidates.geometry_poses(q), candidates.pairs)
        if not link_pairs:
            return np.zeros((len(q), 0), bool)
        return np.logical_or.reduceat(hits[:, order], starts, axis=1)
    return link_pairs, link_hits


def sample_disabled_pairs(model: RobotModel, collision, samples: int = SAMPLES, rng=0, cache: bool = True) -> tuple:
    """Link pairs not worth checking, as MoveIt Setup Assistant finds them without an SRDF.

    Of the pairs of links that carry geometry and are not adjacent: those in collision at the
    home configuration (``"Default"``), those in collision in at least :data:`ALWAYS_FRACTION` of
    ``samples`` random configurations (``"Always"``), and those in collision in none of them
    (``"Never"``). The result is cached on disk (in ``collision_pairs/`` of
    :func:`robokin_ros.kernels.disk_cache.cache_dir`) under a hash of the model's URDF text, the collision
    shapes and the options; an entry that does not hold that key and its own digest, or cannot
    be read safely, is recomputed and overwritten.

    Args:
        model: the robot.
        collision: its :class:`~robokin_ros.collision.CollisionModel` (its shapes are used; its
            own disabled pairs are not).
        samples: random configurations drawn (``model.random_configuration``).
        rng: seed (an int, cached) or generator (not cached).
        cache: read and write the disk cache.

    Returns:
        ``(link1, link2, reason)`` tuples, link1 before link2 in the model's link order.

    Raises:
        ArgumentError: ``samples`` is not a whole number >= 1.
    """
    if not isinstance(samples, (int, np.integer)) or isinstance(samples, bool) or samples < 1:
        raise ArgumentError("samples", f"must be a whole number >= 1, got {samples!r}")
    key = _cache_key(model, collision, samples, rng) if cache else None
    path = _cache_path(key) if key is not None else None
    if path is not None:
        cached = _read_cache(path, key, model)
        if cached is not None:
            return cached
    candidates = collision.with_disabled(())  # every non-adjacent pair
    link_pairs, link_hits = _link_pair_hits(candidates)
    default = link_hits(model.home_configuration()[None])[0]
    counts = np.zeros(len(link_pairs), np.int64)
    generator = np.random.default_rng(rng)
    chunk = max(1, min(SAMPLE_CHUNK, MAX_PAIR_CHECKS_PER_CHUNK // max(1, len(candidates.pairs))))
    for start in range(0, samples, chunk):
        q = np.atleast_2d(model.random_configuration(min(chunk, samples - start), generator))
        counts += link_hits(q).sum(axis=0)
    names = model.link_names
    disabled = []
    for k, (a, b) in enumerate(link_pairs):
        reason = ("Default" if default[k] else "Always" if counts[k] >= ALWAYS_FRACTION * samples
                  else "Never" if counts[k] == 0 else None)
        if reason:
            disabled.append((names[a], names[b], reason))
    disabled = tuple(disabled)
    if path is not None:
        _write_cache(path, key, model, disabled)
    return disabled
