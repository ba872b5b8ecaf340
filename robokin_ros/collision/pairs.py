"""Link pairs not worth checking for self-collision, found by sampling as MoveIt Setup Assistant does.

Pairs in collision at the home configuration (``"Default"``), in nearly every random
configuration (``"Always"``) or in none (``"Never"``); cached on disk, keyed by a hash of the
model's URDF text and the options (a corrupt entry is recomputed, never trusted).
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np

from ..errors import ArgumentError
from ..kernels.accel import cache_dir
from ..model import RobotModel

Array = np.ndarray

#: A pair in collision in at least this fraction of the samples is "Always" in collision
#: (MoveIt Setup Assistant's threshold).
ALWAYS_FRACTION = 0.95
#: Random configurations drawn by default.
SAMPLES = 5000
#: Random configurations checked together.
SAMPLE_CHUNK = 1024
_CACHE_VERSION = 1


def _cache_path(model: RobotModel, samples: int, rng) -> str | None:
    """Disk cache file of a sampling, keyed by the model's URDF text and the sampling options."""
    if not isinstance(rng, (int, np.integer)) or isinstance(rng, bool):
        return None  # a generator's state is not a key
    text = f"{_CACHE_VERSION}\n{samples}\n{int(rng)}\n{model.to_urdf()}"
    return os.path.join(cache_dir(), "collision_pairs", hashlib.sha256(text.encode()).hexdigest() + ".json")


def _read_cache(path: str, model: RobotModel) -> tuple | None:
    """The cached pairs, or None if absent or not a valid entry (never trusted blindly)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        links = set(model.link_names)
        pairs = tuple((str(a), str(b), str(r)) for a, b, r in data["disabled"])
        if all(a in links and b in links and r in ("Default", "Always", "Never") for a, b, r in pairs):
            return pairs
    except (OSError, ValueError, TypeError, KeyError):
        pass
    return None


def sample_disabled_pairs(model: RobotModel, collision, samples: int = SAMPLES, rng=0, cache: bool = True) -> tuple:
    """Link pairs not worth checking, as MoveIt Setup Assistant finds them without an SRDF.

    Of the pairs of links that carry geometry and are not adjacent: those in collision at the
    home configuration (``"Default"``), those in collision in at least :data:`ALWAYS_FRACTION` of
    ``samples`` random configurations (``"Always"``), and those in collision in none of them
    (``"Never"``). The result is cached on disk (in ``collision_pairs/`` of
    :func:`robokin_ros.accel.cache_dir`) under a hash of the model's URDF text and the options; a
    corrupt entry is recomputed.

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
    path = _cache_path(model, samples, rng) if cache else None
    if path is not None:
        cached = _read_cache(path, model)
        if cached is not None:
            return cached
    candidates = collision.with_disabled(())  # every non-adjacent pair
    g = candidates.geometry_links
    link_pairs = sorted({(int(g[a]), int(g[b])) for a, b in candidates.pairs})
    row = {p: k for k, p in enumerate(link_pairs)}
    of_pair = np.array([row[(int(g[a]), int(g[b]))] for a, b in candidates.pairs], np.int64)

    def link_hits(q: Array) -> np.ndarray:  # (B, n_link_pairs) bool
        hits = candidates.colliding(candidates.geometry_poses(q), candidates.pairs)
        out = np.zeros((len(q), len(link_pairs)), bool)
        for k in range(len(link_pairs)):
            out[:, k] = hits[:, of_pair == k].any(axis=1)
        return out

    default = link_hits(model.home_configuration()[None])[0]
    counts = np.zeros(len(link_pairs), np.int64)
    generator = np.random.default_rng(rng)
    for start in range(0, samples, SAMPLE_CHUNK):
        q = np.atleast_2d(model.random_configuration(min(SAMPLE_CHUNK, samples - start), generator))
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
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump({"robot": model.name, "samples": samples, "disabled": disabled}, f)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache only costs the sampling next time
    return disabled
