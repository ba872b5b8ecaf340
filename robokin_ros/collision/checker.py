"""The collision model of a robot: its ``<collision>`` geometry as coal shapes, and the pairs to check.

A :class:`CollisionModel` holds one coal shape per collision geometry (see
:mod:`robokin_ros.collision.geometry`) and the geometry pairs to check: every pair of geometries
on two different links, minus

* *adjacent* links: the two links of a joint; a link without collision geometry joins its
  neighbours (parent and children become adjacent to each other), as MoveIt Setup Assistant does;
* the SRDF's ``disable_collisions`` pairs, when an SRDF is given;
* without an SRDF, the pairs :func:`disabled_pairs_by_sampling` finds in collision at the home
  configuration (``"Default"``), in nearly every random configuration (``"Always"``) or in none
  (``"Never"``), MoveIt Setup Assistant's procedure, cached on disk (:mod:`robokin_ros.collision.pairs`).

Its checks of configurations ``q (..., n_q)`` (:mod:`robokin_ros.collision.batch`:
``self_collisions``, ``in_collision``, ``pair_collisions``) run numpy's path here
(:meth:`CollisionModel.geometry_poses`, :meth:`CollisionModel.bound_gaps`,
:meth:`CollisionModel.colliding`: a vectorised bounding-volume test of every pair in every
configuration, a lower bound of the pair's distance, and coal's narrow phase only for the pairs
whose bounds overlap) until the compiled check of
:class:`~robokin_ros.collision.single.SingleCheck` is loaded (:meth:`CollisionModel.prepare`,
or in the background after :data:`robokin_ros.kernels.accel.MIN_BATCH` configurations checked,
in batches or one at a time, contacts and distances included), then that: FK, bounds, culling,
the compiled narrow phases, coal for the rest; the verdicts are the same.
"""

from __future__ import annotations

import copy
import weakref

import numpy as np
from numpy.typing import NDArray

from .. import model_cache
from ..checks import is_single_vector
from ..errors import ArgumentError
from ..kernels import accel
from ..kinematics import forward_kinematics
from ..model import RobotModel
from ..model.srdf import parse_srdf
from ..runtime import current_runtime
from .geometry import bounding_capsule, coal_module, geometry_placement, geometry_shape, segment_distances
from .pairs import SAMPLES, sample_disabled_pairs
from .single import SingleCheck

Array = NDArray[np.float64]

#: Configurations evaluated together (bounds the memory of the bounding-volume test).
CHUNK = 1024
#: [m] Pairs whose bounding capsules are closer than this go to coal's narrow phase (covers
#: rounding in the bound; it never decides a collision).
BOUND_MARGIN = 1e-6


def _adjacent_pairs(model: RobotModel, has_geometry: np.ndarray) -> set:
    """Link index pairs ``(i, j)``, ``i < j``, adjacent through a joint, links without geometry
    merged into their neighbours."""
    neighbours = [set() for _ in range(model.n_links)]
    for i in range(1, model.n_links):
        p = int(model.link_parents[i])
        neighbours[i].add(p)
        neighbours[p].add(i)
    for i in range(model.n_links):
        if not has_geometry[i]:  # join its neighbours to each other, then drop it
            around = neighbours[i]
            for a in around:
                neighbours[a] |= around - {a}
                neighbours[a].discard(i)
            neighbours[i] = set()
    return {(min(i, j), max(i, j)) for i in range(model.n_links) for j in neighbours[i]
            if has_geometry[i] and has_geometry[j]}


class CollisionModel:
    """coal shapes of a model's collision geometry and the pairs to check. Build it with
    :meth:`build` (cached per model); the model is held weakly.

    Attributes:
        geometry_links: ``(n_geometries,)`` link index of each geometry.
        placements: ``(n_geometries, 4, 4)`` pose of each geometry in its link frame.
        pairs: ``(n_pairs, 2)`` geometry indices checked against each other.
        disabled: ``(link1, link2, reason)`` link pairs not checked (``"Adjacent"``, the SRDF's
            reasons, or ``"Default"`` / ``"Always"`` / ``"Never"`` from sampling).
        warnings: what was skipped (meshes not found or unreadable).
    """

    def __init__(self, model: RobotModel, package_paths=None, base_dir: str | None = None):
        self._model = weakref.ref(model)
        self.link_names = model.link_names
        links, placements, shapes, warnings = [], [], [], []
        for i, geometries in enumerate(model.link_collisions):
            for g in geometries:
                shape, warning = geometry_shape(g, package_paths, base_dir)
                if shape is None:
                    warnings.append(f"link {model.link_names[i]!r}: {warning}")
                    continue
                shape.computeLocalAABB()
                links.append(i)
                placements.append(geometry_placement(g))
                shapes.append(shape)
        self.geometry_links = np.array(links, np.int64)
        self.placements = np.array(placements).reshape(-1, 4, 4)
        self.shapes = shapes
        self.warnings = tuple(warnings)
        # Bounding capsules in the geometry frames: segment ends (n_geometries, 2, 3), radius (n_geometries,).
        ends, radii = zip(*[bounding_capsule(g) for g in shapes]) if shapes else ((), ())
        self.capsule_ends = np.array(ends, float).reshape(-1, 2, 3)
        self.capsule_radii = np.array(radii, float)
        # and bounding spheres (coal's local AABB's): centre (n_geometries, 3), radius (n_geometries,)
        self.sphere_centres = np.array([s.aabb_center for s in shapes], float).reshape(-1, 3)
        self.sphere_radii = np.array([s.aabb_radius for s in shapes], float)
        # and boxes (coal's local AABBs): centre (n_geometries, 3), half extents (n_geometries, 3)
        lo = np.array([s.aabb_local.min_ for s in shapes], float).reshape(-1, 3)
        hi = np.array([s.aabb_local.max_ for s in shapes], float).reshape(-1, 3)
        self.box_centres, self.box_halves = 0.5 * (lo + hi), 0.5 * (hi - lo)
        has_geometry = np.zeros(model.n_links, bool)
        has_geometry[self.geometry_links] = True
        self.has_geometry = has_geometry
        self.adjacent = _adjacent_pairs(model, has_geometry)
        self.disabled: tuple = ()
        self._set_pairs(self._pairs_without(set()))

    def _set_pairs(self, pairs: np.ndarray) -> None:
        """Check ``pairs (n, 2)`` from now on: they and everything derived from them (their link
        names, the compiled check, built again on first use)."""
        self.pairs = pairs
        names, links = self.link_names, self.geometry_links
        #: ``(link_a, link_b)`` names of each geometry pair of :attr:`pairs`.
        self.pair_names = [(names[links[a]], names[links[b]]) for a, b in pairs.tolist()]
        self._memo: dict = {}   # what is built on first use from the pairs (the compiled check)

    @property
    def model(self) -> RobotModel:
        model = self._model()
        if model is None:
            raise ArgumentError("collision_model", "its robot model no longer exists")
        return model

    @property
    def n_geometries(self) -> int:
        return len(self.shapes)

    @property
    def link_pairs(self) -> list:
        """Link name pairs checked, in model link order."""
        pairs = sorted({tuple(self.geometry_links[p].tolist()) for p in self.pairs})
        return [(self.link_names[a], self.link_names[b]) for a, b in pairs]

    def _pairs_without(self, disabled_links: set) -> np.ndarray:
        """``(n, 2)`` geometry pairs on two links that are neither adjacent nor in ``disabled_links``."""
        off = self.adjacent | disabled_links
        g = self.geometry_links
        a, b = np.triu_indices(len(g), 1)
        lo, hi = np.minimum(g[a], g[b]), np.maximum(g[a], g[b])
        keep = (lo != hi) & np.array([(x, y) not in off for x, y in zip(lo.tolist(), hi.tolist())], bool)
        swap = g[a] > g[b]  # link_a first in the model's link order
        return np.stack([np.where(swap, b, a), np.where(swap, a, b)], axis=-1)[keep].reshape(-1, 2)

    def with_disabled(self, disabled) -> CollisionModel:
        """A copy sharing the shapes that checks every pair of links but the adjacent ones and
        ``disabled`` (``(link1, link2, reason)`` tuples; names the model lacks are ignored)."""
        index = {n: i for i, n in enumerate(self.link_names)}
        disabled = tuple(d for d in disabled if d[0] in index and d[1] in index)   # (an SRDF of another model)
        off = {(min(index[a], index[b]), max(index[a], index[b])) for a, b, _ in disabled}
        out = copy.copy(self)
        out._set_pairs(self._pairs_without(off))
        out.disabled = tuple((self.link_names[i], self.link_names[j], "Adjacent") for i, j in sorted(self.adjacent)) + \
            tuple((a, b, r) for a, b, r in disabled if r != "Adjacent")
        return out

    @classmethod
    def build(cls, model: RobotModel, srdf=None, package_paths=None, base_dir: str | None = None,
              samples: int = SAMPLES, rng=0) -> CollisionModel:
        """Same as :func:`collision_model`."""
        return collision_model(model, srdf, package_paths, base_dir, samples, rng)

    # ------------------------------------------------------------------ one configuration
    @property
    def single_check(self) -> SingleCheck | None:
        """The compiled one-configuration check (built on first use), or None when the model
        has no generated FK of its geometry links (a floating or planar joint moves them), no
        pair to check, or the accelerator is not active (:func:`robokin_ros.kernels.accel.active`)."""
        if not current_runtime().accelerated:   # (nothing kept: the accelerator may be switched on later)
            return None
        try:
            return self._memo["single check"]
        except KeyError:
            check = self._memo["single check"] = SingleCheck.of(self, self.model) if accel.available() else None
            return check

    def prepare(self) -> bool:
        """Load the compiled one-configuration check now (compiled unless the disk cache has
        it: seconds once per machine, then well under a second), instead of in the background
        after :data:`robokin_ros.kernels.accel.MIN_BATCH` single calls.

        Returns:
            True when single configurations use it; False without numba, with the accelerator
            off, or without a generated FK of the geometry links (the batched path serves).
        """
        check = self.single_check
        return check is not None and check.accelerate()

    def in_collision_one(self, q) -> bool:
        """True when one configuration ``q (n_q,)`` is in self-collision (stops at the first
        colliding pair): :func:`in_collision` of one configuration without its array.

        Raises:
            ShapeError: ``q`` is not ``(n_q,)``.
            NonFiniteError, ArgumentError: as :meth:`~robokin_ros.RobotModel.check_q`.
        """
        return self.single_states(q, stop_at_first=True)[1]

    def single_states(self, q, *, stop_at_first: bool) -> tuple:
        """``(states (n_pairs,) or None, any collision)`` of one configuration ``q (n_q,)``
        (nonzero states: pairs in collision; ``stop_at_first``: only whether one is, states
        None): the single-configuration lane (the compiled check once it is loaded, see
        :class:`~robokin_ros.collision.single.SingleCheck`), else the batched path on a batch of
        one, which checks ``q``.

        Raises:
            ShapeError: ``q`` is not ``(n_q,)``.
            NonFiniteError, ArgumentError: as :meth:`~robokin_ros.RobotModel.check_q`.
        """
        model = self.model
        if is_single_vector(q, model.n_q):
            pass
        elif type(q) is list and len(q) == model.n_q and all(type(x) is float for x in q):
            q = np.array(q)   # IK's lists of floats: finiteness is the compiled check's (or check_q's below)
        else:
            q = np.array(model.check_q(q, single=True), np.float64)   # a tuple, a view, a read-only array
        check = self.single_check   # it checks q itself
        if check is not None:
            if stop_at_first:
                found = check.collides(q)
                if found is not None:
                    return None, found
            else:
                found = check.states(q)
                if found is not None:
                    return found
        colliding = self.colliding(self.geometry_poses(model.check_q(q)[None]), self.pairs, first=stop_at_first)[0]
        return (None if stop_at_first else colliding), bool(colliding.any())

    # ------------------------------------------------------------------ checking
    def geometry_poses(self, q: Array) -> Array:
        """``(B, n_geometries, 4, 4)`` world poses of the geometries at ``q (B, n_q)``."""
        model = self.model
        # one configuration: the single-configuration kernel (a batch of one costs more)
        T = forward_kinematics(model, q[0])[None] if len(q) == 1 else forward_kinematics(model, q)
        return T[:, self.geometry_links] @ self.placements

    def bound_gaps(self, Tg: Array, pairs: Array) -> Array:
        """``(B, n_pairs)`` [m] a lower bound of each pair's distance (<= 0: the bounds
        overlap): the distance between their bounding spheres and, where those overlap, the
        largest of it, the distance between their bounding capsules and the gap between the
        world-axis-aligned boxes around their local bounding boxes (along the axis where it is
        largest)."""
        R, p = Tg[..., :3, :3], Tg[..., :3, 3]
        o = (R @ self.sphere_centres[:, :, None])[..., 0] + p                       # (B, G, 3)
        a, b = pairs[:, 0], pairs[:, 1]
        d = o[:, a] - o[:, b]
        gaps = np.sqrt(np.einsum("bpi,bpi->bp", d, d)) - (self.sphere_radii[a] + self.sphere_radii[b])
        bi, pi = np.nonzero(gaps <= BOUND_MARGIN)
        if bi.size:  # capsules of the pairs whose spheres overlap
            ga, gb = a[pi], b[pi]
            ends_a = (Tg[bi, ga, :3, :3] @ np.swapaxes(self.capsule_ends[ga], -1, -2)) + Tg[bi, ga, :3, 3:]
            ends_b = (Tg[bi, gb, :3, :3] @ np.swapaxes(self.capsule_ends[gb], -1, -2)) + Tg[bi, gb, :3, 3:]
            capsules = segment_distances(ends_a[..., 0], ends_a[..., 1], ends_b[..., 0], ends_b[..., 1]) - \
                (self.capsule_radii[ga] + self.capsule_radii[gb])
            Ra, Rb = Tg[bi, ga, :3, :3], Tg[bi, gb, :3, :3]
            ca = (Ra @ self.box_centres[ga][..., None])[..., 0] + Tg[bi, ga, :3, 3]
            cb = (Rb @ self.box_centres[gb][..., None])[..., 0] + Tg[bi, gb, :3, 3]
            ha = (np.abs(Ra) @ self.box_halves[ga][..., None])[..., 0]
            hb = (np.abs(Rb) @ self.box_halves[gb][..., None])[..., 0]
            boxes = (np.abs(ca - cb) - ha - hb).max(axis=-1)
            gaps[bi, pi] = np.maximum(np.maximum(gaps[bi, pi], capsules), boxes)
        return gaps

    def _transforms(self, Tg: Array):
        coal = coal_module()
        cache: dict = {}

        def get(b: int, g: int):
            key = (b, g)
            if key not in cache:
                T = Tg[b, g]
                cache[key] = coal.Transform3s(np.ascontiguousarray(T[:3, :3]), np.ascontiguousarray(T[:3, 3]))
            return cache[key]
        return get

    def colliding(self, Tg: Array, pairs: Array, first: bool = False) -> np.ndarray:
        """``(B, n_pairs)`` bool: coal's narrow phase where the bounding capsules overlap (the
        deepest overlaps first); ``first``: only up to the first collision of each configuration."""
        coal = coal_module()
        out = np.zeros((Tg.shape[0], len(pairs)), bool)
        if not len(pairs):
            return out
        gaps = self.bound_gaps(Tg, pairs)
        b_idx, p_idx = np.nonzero(gaps <= BOUND_MARGIN)
        order = np.lexsort((gaps[b_idx, p_idx], b_idx))
        tf = self._transforms(Tg)
        request, result, shapes = coal.CollisionRequest(), coal.CollisionResult(), self.shapes
        done = -1
        for b, p in zip(b_idx[order].tolist(), p_idx[order].tolist()):
            if b == done:
                continue
            ga, gb = pairs[p]
            result.clear()
            if coal.collide(shapes[ga], tf(b, ga), shapes[gb], tf(b, gb), request, result):
                out[b, p] = True
                done = b if first else -1
        return out


#: The registry kind (:mod:`robokin_ros.model_cache`) of :func:`collision_model`.
COLLISION_MODELS = "collision models"
#: Collision models kept per robot (they hold meshes).
MAX_COLLISION_MODELS = 8


def collision_model(model: RobotModel, srdf=None, package_paths=None, base_dir: str | None = None,
                    samples: int = SAMPLES, rng=0) -> CollisionModel:
    """The collision model of ``model``, kept per model and arguments (in
    :mod:`robokin_ros.model_cache`; the model is held weakly).

    Args:
        model: the robot.
        srdf: SRDF text or :class:`~robokin_ros.srdf.SemanticDescription` whose
            ``disable_collisions`` pairs are not checked; None: pairs found by
            :func:`disabled_pairs_by_sampling` with ``samples`` and ``rng`` (cached on disk).
        package_paths: where ``package://`` meshes live (see
            :func:`~robokin_ros.collision.meshes.package_directories`).
        base_dir: folder relative mesh paths are read from (default: the working directory).
        samples: random configurations for the pair sampling (0: only adjacent pairs are
            disabled).

    Raises:
        CollisionUnavailableError: coal is not installed.
        SRDFError: unreadable SRDF text.
    """
    if srdf is not None and not hasattr(srdf, "disabled_collisions"):
        srdf = parse_srdf(srdf, model)
    disabled_key = None if srdf is None else srdf.disabled_collisions
    paths_key = None if package_paths is None else (tuple(sorted(package_paths.items())) if hasattr(
        package_paths, "items") else tuple(package_paths))
    key = (disabled_key, paths_key, base_dir, samples, rng if isinstance(rng, int) else id(rng))

    def build() -> CollisionModel:
        cm = CollisionModel(model, package_paths, base_dir)
        if srdf is not None:
            disabled = tuple((a, b, reason) for a, b, reason in srdf.disabled_collisions)
        elif samples and len(cm.pairs):
            disabled = sample_disabled_pairs(model, cm, samples, rng)
        else:
            disabled = ()
        return cm.with_disabled(disabled)

    return model_cache.cached(model, COLLISION_MODELS, key, build, bound=MAX_COLLISION_MODELS)


def disabled_pairs_by_sampling(model: RobotModel, samples: int = SAMPLES, rng=0,
                               collision: CollisionModel | None = None, cache: bool = True) -> tuple:
    """Link pairs not worth checking, as MoveIt Setup Assistant finds them without an SRDF: see
    :func:`robokin_ros.collision.pairs.sample_disabled_pairs` (``collision``: default, one without
    disabled pairs, meshes resolved with the defaults)."""
    collision = collision if collision is not None else CollisionModel(model)
    return sample_disabled_pairs(model, collision, samples, rng, cache)
