"""Self-collision of one configuration at a time: one compiled call, then coal for what it leaves.

:class:`SingleCheck` holds a collision model's generated kernel
(:mod:`robokin_ros.collision.compiled_source`): forward kinematics of the links with geometry,
bounds, culling and the exact primitive narrow phases in one numba call, then ``coal.collide``
only for the pairs it leaves to coal (meshes, separations within about
:data:`~robokin_ros.collision.compiled_source.DEFER_BAND` of touching), deepest bound first as
in the batched path. Its verdicts are the batched path's (coal's narrow phase on every pair
whose bounds overlap); the tests check them against it, coal and Pinocchio.

The kernel is loaded like the FK kernels (:class:`robokin_ros.kernels.lazy_accel.LazyAccelerated`):
in a background thread once :data:`robokin_ros.kernels.accel.MIN_BATCH` configurations have been
checked one at a time, or at once by :meth:`robokin_ros.collision.CollisionModel.prepare`;
until then (and without numba) :meth:`SingleCheck.states` and :meth:`SingleCheck.collides`
return None and the caller runs the batched path on a batch of one.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np
from numpy.typing import NDArray

from ..checks import is_single_vector
from ..kernels import accel
from ..kernels.fk_codegen import compiled_link_poses
from ..kernels.lazy_accel import LazyAccelerated
from ..model import RobotModel
from ..runtime import current_runtime
from .compiled_source import BOUND_MARGIN, EVERY, FIRST, FREE, HIT, OTHER, POSES, SHAPE_CODES, check_source, pair_kinds
from .geometry import coal_module

Array = NDArray[np.float64]


def _sizes(shape) -> tuple[int, list]:
    """Shape code and sizes ``[3]`` of a coal shape (see :func:`check_source`)."""
    code = SHAPE_CODES.get(type(shape).__name__, OTHER)
    if code == 0:
        return code, [float(shape.radius), 0.0, 0.0]
    if code in (1, 2):
        return code, [float(shape.radius), float(shape.halfLength), 0.0]
    if code == 3:
        return code, [float(x) for x in shape.halfSide]
    return code, [0.0, 0.0, 0.0]


#: Configurations per call of the batched kernel (:meth:`SingleCheck.collides_rows`,
#: :meth:`SingleCheck.states_rows`; its outputs: ``B x (12 G + 2 P)`` numbers, kept per thread):
#: the chunks a batch is handed out in over the threads.
BATCH_CHUNK = 512

#: Random configurations (fixed seed: the generated source stays the same) whose collisions
#: order the pairs of the stop-at-first check.
ORDER_SAMPLES = 32


def _visiting_order(cm, model: RobotModel) -> np.ndarray:
    """``(P,)`` the pairs most often in collision first (in :data:`ORDER_SAMPLES` random
    configurations by the batched path), then the nearest at the home configuration: where a
    robot's geometry overlaps in most configurations, stop-at-first meets it sooner (the
    verdicts do not depend on the order)."""
    q = np.concatenate([model.home_configuration()[None],
                        np.atleast_2d(model.random_configuration(ORDER_SAMPLES, np.random.default_rng(0)))])
    poses = cm.geometry_poses(q)
    frequency = cm.colliding(poses, cm.pairs).sum(axis=0)
    return np.lexsort((cm.bound_gaps(poses[:1], cm.pairs)[0], -frequency))


class SingleCheck(LazyAccelerated):
    """The compiled one-configuration check of a :class:`~robokin_ros.collision.CollisionModel`.

    Build it with :meth:`of` (None when the model has no generated FK of its geometry links:
    a floating or planar joint moves them). Thread-safe: scratch arrays are per thread.
    """

    counts_calls = True
    kind = "collision kernel"

    def __init__(self, cm, model: RobotModel, fk):
        super().__init__()
        self._model = weakref.ref(model)
        self._collision_model = weakref.ref(cm)   # (which holds this check)
        self._batch_kernel = None   # check_batch of the loaded module
        self.shapes = cm.shapes
        self.pairs = cm.pairs
        self.n_q = model.n_q
        links = sorted(set(cm.geometry_links.tolist()))
        slot = {link: k for k, link in enumerate(links)}
        codes, sizes = zip(*[_sizes(s) for s in cm.shapes])
        kinds, swapped = pair_kinds(np.array(codes), cm.pairs)
        self.kinds = kinds
        data = {"GEOMETRY_SLOTS": np.array([slot[g] for g in cm.geometry_links.tolist()], np.int64),
                "PLACEMENTS": cm.placements[:, :3, :], "SIZES": np.array(sizes, float),
                "CODES": np.array(codes, np.int64),
                "SPHERE_CENTRES": cm.sphere_centres, "SPHERE_RADII": cm.sphere_radii,
                "CAPSULE_ENDS": cm.capsule_ends, "CAPSULE_RADII": cm.capsule_radii,
                "BOX_CENTRES": cm.box_centres, "BOX_HALVES": cm.box_halves,
                "PAIRS": cm.pairs.astype(np.int64), "KINDS": kinds, "SWAPPED": swapped.astype(np.int64),
                "REACH2": (cm.sphere_radii[cm.pairs].sum(axis=1) + BOUND_MARGIN) ** 2,
                "SPHERE_IN_LINK": (cm.placements[:, :3, :3] @ cm.sphere_centres[:, :, None])[..., 0]
                + cm.placements[:, :3, 3],
                "ORDER": _visiting_order(cm, model)}
        self.source = check_source(fk.generated.body, fk.generated.values, model.n_q, data)
        # the batched path's geometry poses at the configuration a loaded kernel is checked at
        self._reference = cm.geometry_poses(np.array([accel.check_configuration(model.n_q)]))[0, :, :3]
        self._local = threading.local()

    @classmethod
    def of(cls, cm, model: RobotModel) -> SingleCheck | None:
        """The check of ``cm`` (a model with geometry pairs), or None (no generated FK)."""
        if not len(cm.pairs):
            return None
        links = tuple(sorted(set(cm.geometry_links.tolist())))
        fk = compiled_link_poses(model, links, "3x4")
        return None if fk is None else cls(cm, model, fk)

    def _load(self):
        n_g, n_p = len(self.shapes), len(self.pairs)

        calls = [("check", (np.zeros(self.n_q), EVERY, np.empty((n_g, 3, 4)), np.empty((2, n_p), np.int64))),
                 ("check_batch", (np.zeros((1, self.n_q)), EVERY, np.empty((1, n_g, 3, 4)),
                                  np.empty((1, 2, n_p), np.int64), np.empty((1, 2), np.int64)))]

        def agrees(check) -> bool:   # the geometry poses equal the batched path's
            q = np.array(accel.check_configuration(self.n_q))
            poses = np.empty((n_g, 3, 4))
            check(q, POSES, poses, np.empty((2, n_p), np.int64))
            return bool(np.allclose(poses, self._reference, atol=1e-9))

        model = self._model()
        return accel.load_function(self.source, "check", calls, agrees, "" if model is None else model.name)

    def _installed(self, kernel) -> None:
        self._batch_kernel = kernel.py_func.__globals__["check_batch"]   # (compiled by the warm-up)

    def batch_ready(self, rows: int) -> bool:
        """True when a batch of ``rows`` configurations runs on the compiled kernel (loaded, and
        the generated kernels on); counts ``rows`` towards loading it otherwise."""
        return rows > 0 and self._kernel(rows) is not None and current_runtime().generated

    def _batch_scratch(self, rows: int) -> tuple:
        """This thread's batch outputs for ``rows`` configurations: ``(poses (rows, G, 3, 4),
        index (rows, 2, P) int64, counts (rows, 2) int64, states (rows, P) bool)`` (views of
        scratch it reuses: a chunk allocates nothing large, and so maps no memory; two threads
        that map and unmap memory wait for each other in the kernel)."""
        local = self._local
        kept = getattr(local, "batch", None)
        if kept is None or len(kept[2]) < rows:
            n_g, n_p = len(self.shapes), len(self.pairs)
            kept = local.batch = (np.empty((rows, n_g, 3, 4)), np.empty((rows, 2, n_p), np.int64),
                                  np.empty((rows, 2), np.int64), np.empty((rows, n_p), bool))
        return tuple(x[:rows] for x in kept)

    def collides_rows(self, qb: Array) -> np.ndarray:
        """``(B,)`` bool, each configuration of ``qb (B, n_q)`` (checked: float64, finite) in
        self-collision, stopping at its first collision found (one kernel call on this thread,
        then coal for the pairs it leaves). Only once :meth:`batch_ready`.

        Configurations whose geometry poses are not finite (an overflowing mimic joint) are
        decided by the batched path."""
        qb = np.ascontiguousarray(qb, np.float64)
        poses, index, counts, _ = self._batch_scratch(len(qb))
        self._batch_kernel(qb, FIRST, poses, index, counts)
        request, result = self._scratch()[2:]
        hits, todo = counts[:, 0], counts[:, 1]
        out = hits > 0
        for b in np.flatnonzero((hits < 0) | ((hits == 0) & (todo > 0))).tolist():
            if hits[b] < 0:
                out[b] = self._fallback(qb[b:b + 1], True)[0][0].any()
            else:   # coal's pairs
                out[b] = self._coal((poses[b], index[b], request, result), int(todo[b]), True)
        return out

    def states_rows(self, qb: Array, poses: bool = False) -> tuple[np.ndarray, Array | None]:
        """The pairs in collision in each configuration of ``qb (B, n_q)`` (checked: float64,
        finite), and with ``poses`` the geometry poses they were decided at, as
        :meth:`collides_rows`.

        Returns:
            ``(states (B, P) bool, poses (B, G, 3, 4) or None)``: ``states[b, k]``, pair ``k``
            of ``cm.pairs`` is in collision in configuration ``b`` (this thread's scratch, until
            its next call); ``poses[b, g]``, the world
            pose ``[R | p]`` of geometry ``g`` (the kernel's :data:`POSES` mode: every pose
            written; what contacts and distances are computed at).
        """
        qb = np.ascontiguousarray(qb, np.float64)
        chunk_poses, index, counts, states = self._batch_scratch(len(qb))
        self._batch_kernel(qb, POSES if poses else EVERY, chunk_poses, index, counts)
        request, result = self._scratch()[2:]
        for b in np.flatnonzero(counts[:, 1] > 0).tolist():   # coal's pairs
            self._coal((chunk_poses[b], index[b], request, result), int(counts[b, 1]), False)
        np.equal(index[:, 0], HIT, out=states)
        poses_out = chunk_poses.copy() if poses else None
        for b in np.flatnonzero(counts[:, 0] < 0).tolist():
            colliding, Tg = self._fallback(qb[b:b + 1], False)
            states[b] = colliding[0]
            if poses:
                poses_out[b] = Tg[0, :, :3]
        return states, poses_out

    def _fallback(self, q: Array, first: bool) -> tuple[np.ndarray, Array]:
        """``(states (1, P) bool, Tg (1, G, 4, 4))`` of the batched path (numpy bounds, coal) at
        one configuration ``q (1, n_q)``."""
        cm = self._collision_model()
        Tg = cm.geometry_poses(q)
        return cm.colliding(Tg, cm.pairs, first), Tg

    def _scratch(self) -> tuple:
        """This thread's ``(poses (G, 3, 4), index (2, P) int64, coal request, coal result)``."""
        try:
            return self._local.scratch
        except AttributeError:
            coal = coal_module()
            self._local.scratch = (np.empty((len(self.shapes), 3, 4)), np.empty((2, len(self.pairs)), np.int64),
                                   coal.CollisionRequest(), coal.CollisionResult())
            return self._local.scratch

    def takes(self, q) -> bool:
        """True when ``q`` is an array the kernel takes as it is: float64 ``(n_q,)``, contiguous
        and writeable (another layout would compile another specialisation)."""
        return is_single_vector(q, self.n_q) and q.flags.writeable

    def _call(self, q, mode: int) -> tuple | None:
        """``(n_hit, n_todo, scratch)`` of the kernel on ``q`` (see :meth:`states`), or None."""
        kernel = self._accelerated
        if kernel is None:
            kernel = self._kernel(1)
            if kernel is None:
                return None
        if not (current_runtime().accelerated and current_runtime().generated and self.takes(q)):
            return None
        scratch = self._scratch()
        n_hit, n_todo = kernel(q, mode, scratch[0], scratch[1])
        if n_hit < 0:   # not finite: the model's check names the culprit
            model = self._model()
            if model is not None:
                model.check_q(q, single=True)
            return None   # (finite after all, poses not: the batched path decides)
        return n_hit, n_todo, scratch

    def _coal(self, scratch: tuple, n_todo: int, first: bool) -> bool:
        """coal's verdicts of the pairs the kernel left (``index[1, :n_todo]``), written into
        their states; True when one is in collision (``first``: stop there)."""
        coal = coal_module()
        poses, index, request, result = scratch
        shapes, pairs = self.shapes, self.pairs
        transforms: dict = {}

        def transform(g):
            if g not in transforms:
                transforms[g] = coal.Transform3s(poses[g, :, :3], poses[g, :, 3])
            return transforms[g]

        found = False
        for k in index[1, :n_todo].tolist():
            a, b = pairs[k].tolist()
            result.clear()
            hit = coal.collide(shapes[a], transform(a), shapes[b], transform(b), request, result)
            index[0, k] = HIT if hit else FREE
            if hit:
                if first:
                    return True
                found = True
        return found

    def states(self, q) -> tuple | None:
        """``(states, any collision)`` of one configuration ``q``: ``states (P,)`` int64 per
        pair of ``cm.pairs``, :data:`HIT` (1) in collision, :data:`FREE` (0) not (this thread's
        scratch, overwritten by its next call). None when ``q`` is not an array :meth:`takes`,
        the kernel is not loaded, or the accelerator or the generated kernels are off (use the
        batched path).

        Raises:
            NonFiniteError: ``q`` has NaN or inf entries (or a mimic joint's value overflows).
        """
        call = self._call(q, EVERY)
        if call is None:
            return None
        n_hit, n_todo, scratch = call
        found = self._coal(scratch, n_todo, False) if n_todo else False
        return scratch[1][0], n_hit > 0 or found

    def collides(self, q) -> bool | None:
        """True when some pair of one configuration ``q`` is in collision, stopping at the first
        found; None as :meth:`states`.

        Raises:
            NonFiniteError: as :meth:`states`.
        """
        call = self._call(q, FIRST)
        if call is None:
            return None
        n_hit, n_todo, scratch = call
        return n_hit > 0 or (n_todo > 0 and self._coal(scratch, n_todo, True))
