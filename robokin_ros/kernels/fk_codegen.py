"""Per-robot specialised forward kinematics: the model turned into straight-line Python source.

The generator walks the tree once and writes one assignment per non-trivial scalar operation:
fixed joints are folded into constant placements, every matrix entry that is a constant (0, ±1,
or any number known at build time) is folded, and axis-aligned joints use only the entries their
rotation touches. :mod:`robokin_ros.accel` compiles the lines with numba into a loop over
configurations and a single-configuration entry (:mod:`robokin_ros.kernels.numba_source`); the
generated source is deterministic, so its compiled code can be cached on disk by the source's
hash. The generated code runs only compiled: until it is loaded the generic compiled tier
(:mod:`robokin_ros.kernels.generic_tier`) serves, and without numba the caller runs the numpy
recursions of :mod:`robokin_ros.kinematics` (the oracle; also for models with floating or
planar joints).
"""

from __future__ import annotations

import threading

import numpy as np

from .. import model_cache
from ..model import JointType, RobotModel
from ..spatial import matrix_to_quat_xyzw
from . import accel, generic_tier, parallel
from .emitter import Emitter, GeneratedKernel, clean, const_matrix, finish, rotation_symbols, support_links, supported
from .lazy_accel import LazyAccelerated
from .numba_source import single_source, vector_trig_wrapper_source, wrapper_source
from .plan import fk_plan


def _emit_poses(model: RobotModel, e: Emitter, links) -> tuple[dict, dict]:
    """Emit the world poses of ``links`` (ascending, closed under anchors): symbolic R, p per link."""
    plan = fk_plan(model)
    R = {0: [[1.0 if r == c else 0.0 for c in range(3)] for r in range(3)]}
    p = {0: [0.0, 0.0, 0.0]}
    scalar_pos = {int(link): k for k, link in enumerate(plan.scalar_links)}
    value_of_q: dict[int, str] = {}
    trig: dict[tuple, tuple[str, str]] = {}

    def joint_value(link):
        k = scalar_pos[link]
        qi, mult, off = int(plan.scalar_q[k]), float(plan.scalar_mult[k]), float(plan.scalar_offset[k])
        if qi not in value_of_q:
            value_of_q[qi] = e.assign(f"q[{qi}]")
        return e.add(e.mul(mult, value_of_q[qi]), off), (qi, mult, off)

    for i in links:  # anchors always precede their links
        if i == 0:
            continue
        a = int(plan.anchor[i])
        C = plan.C[i]
        CR, Cp = const_matrix(C[:3, :3]), [clean(x) for x in C[:3, 3]]
        M = e.matmul(R[a], CR)                                        # R_a C_R
        base = [e.add(x, y) for x, y in zip(e.matvec(R[a], Cp), p[a])]  # p_a + R_a C_p
        j = i - 1
        t = JointType(model.joint_types[j])
        if t == JointType.FIXED:
            R[i], p[i] = M, base
        elif t == JointType.PRISMATIC:
            value, _ = joint_value(i)
            Mu = e.matvec(M, [clean(x) for x in model.joint_axes[j]])
            R[i] = M
            p[i] = [e.add(b, e.mul(m, value)) for b, m in zip(base, Mu)]
        else:  # revolute or continuous (the caller excluded floating and planar)
            value, key = joint_value(i)
            if key not in trig:
                trig[key] = (e.assign(f"cos({value})"), e.assign(f"sin({value})"))
            c, s = trig[key]
            R[i] = e.matmul(M, rotation_symbols(e, model.joint_axes[j], c, s))
            p[i] = base
    return R, p


#: Per-link entries of each output layout of :func:`generate_link_poses_source`.
LAYOUTS = {"4x4": (4, 4), "3x4": (3, 4), "position": (3,)}


def generate_link_poses_source(model: RobotModel, links=None, layout: str = "4x4") -> GeneratedKernel | None:
    """Generated world poses of ``links`` in ``layout``, writing only what the layout holds.

    Args:
        links: link indices in output order (repeats allowed); None: every link, in order.
        layout: ``"4x4"`` homogeneous matrices ``(n, 4, 4)``; ``"3x4"`` their top three rows
            ``[R | p]`` ``(n, 3, 4)``; ``"position"`` the translations ``(n, 3)``.

    Returns:
        The kernel, computing only the supports of ``links``; None when a floating or planar
        joint moves one of them.
    """
    n = model.n_links
    links = tuple(range(n)) if links is None else tuple(int(i) for i in links)
    needed = support_links(model, links)
    if not supported(model, needed):
        return None
    e = Emitter()
    R, p = _emit_poses(model, e, needed)
    values = []
    for i in links:
        if layout == "position":
            values += p[i]
            continue
        for r in range(3):
            values += [R[i][r][0], R[i][r][1], R[i][r][2], p[i][r]]
        if layout == "4x4":
            values += [0.0, 0.0, 0.0, 1.0]
    return finish(e, values, np.zeros((len(links),) + LAYOUTS[layout]))


def _emit_jacobian(model: RobotModel, e: Emitter, R: dict, p: dict, k: int) -> list:
    """Emit the LOCAL_WORLD_ALIGNED Jacobian of link ``k`` from the emitted poses: 6 rows of
    ``n_v`` symbols or zeros, rows [linear; angular]."""
    J = [[0.0] * model.n_v for _ in range(6)]
    for link in model.link_supports[k][1:]:
        link = int(link)
        j = link - 1
        src = model.velocity_source_joints[j]
        if src < 0:
            continue
        col = int(model.joint_v_index[src])
        scale = float(model.mimic_multiplier[j]) if model.is_mimic[j] else 1.0
        w = e.matvec(R[link], [clean(x) for x in model.joint_axes[j]])  # joint axis, world
        if model.joint_types[j] == JointType.PRISMATIC:
            lin, ang = w, [0.0, 0.0, 0.0]
        else:  # ω × (p_frame - p_joint)
            r = [e.sub(pk, pl) for pk, pl in zip(p[k], p[link])]
            lin = [e.sub(e.mul(w[1], r[2]), e.mul(w[2], r[1])),
                   e.sub(e.mul(w[2], r[0]), e.mul(w[0], r[2])),
                   e.sub(e.mul(w[0], r[1]), e.mul(w[1], r[0]))]
            ang = w
        for row, x in enumerate(lin + ang):
            J[row][col] = e.add(J[row][col], e.mul(scale, x))
    return J


def _frames_emitter(model: RobotModel, frames) -> tuple[list[int], Emitter, dict, dict] | None:
    """Link indices of ``frames`` and an emitter holding the poses of their supports, or None
    when a floating or planar joint moves one of them."""
    ks = [model.link_index(f) for f in frames]
    needed = support_links(model, ks)
    if not supported(model, needed):
        return None
    e = Emitter()
    R, p = _emit_poses(model, e, needed)
    return ks, e, R, p


def generate_frames_source(model: RobotModel, frames: tuple[str, ...]) -> GeneratedKernel | None:
    """Generated poses and LOCAL_WORLD_ALIGNED Jacobians of several frames, sharing their common
    chain. The result has shape ``(n_frames, 10, max(4, n_v))``: per frame, rows 0-3 / columns
    0-3 hold the pose, rows 4-9 / columns 0..n_v-1 the Jacobian. Only the frames' supports are
    computed, so a model with a floating base elsewhere still gets a kernel for its arm frames;
    None when a floating or planar joint moves one of the frames."""
    emitted = _frames_emitter(model, frames)
    if emitted is None:
        return None
    ks, e, R, p = emitted
    width = max(4, model.n_v)
    values = []
    for k in ks:
        J = _emit_jacobian(model, e, R, p, k)
        for r in range(3):
            values += [R[k][r][0], R[k][r][1], R[k][r][2], p[k][r]] + [0.0] * (width - 4)
        values += [0.0, 0.0, 0.0, 1.0] + [0.0] * (width - 4)
        for row in J:
            values += row + [0.0] * (width - model.n_v)
    return finish(e, values, np.zeros((len(ks), 10, width)))


def generate_jacobian_source(model: RobotModel, frame: str) -> GeneratedKernel | None:
    """Generated LOCAL_WORLD_ALIGNED Jacobian of one frame, ``(6, n_v)``, and nothing else (the
    single-configuration :func:`robokin_ros.jacobian`); None when a floating or planar joint
    moves the frame."""
    emitted = _frames_emitter(model, (frame,))
    if emitted is None:
        return None
    (k,), e, R, p = emitted
    values = [x for row in _emit_jacobian(model, e, R, p, k) for x in row]
    return finish(e, values, np.zeros((6, model.n_v)))


def generate_joint_poses_source(model: RobotModel) -> GeneratedKernel:
    """Generated pose of every 1-DOF joint's child link in its parent link (what
    robot_state_publisher sends on /tf), as ``(n_scalar_joints, 7)`` rows
    ``[x, y, z, qx, qy, qz, qw]`` in ``model.scalar_joint_indices`` order, with ``w >= 0`` not enforced.

    Revolute: ``q_origin ⊗ (u sin(θ/2), cos(θ/2))``, translation the origin's; prismatic: the
    origin's rotation, translation ``p_origin + R_origin u d``. Other joints do not matter, so
    every model has this kernel.
    """
    e = Emitter()
    values = []
    value_of_q: dict[int, str] = {}
    for j in model.scalar_joint_indices:
        src = model.mimic_source[j] if model.is_mimic[j] else j
        qi = int(model.joint_q_index[src])
        if qi not in value_of_q:
            value_of_q[qi] = e.assign(f"q[{qi}]")
        value = e.add(e.mul(float(model.mimic_multiplier[j]), value_of_q[qi]), float(model.mimic_offset[j]))
        origin = model.joint_origins[j]
        p = [clean(x) for x in origin[:3, 3]]
        ax, ay, az, aw = (clean(x) for x in matrix_to_quat_xyzw(origin[:3, :3]))
        u = [clean(x) for x in model.joint_axes[j]]
        if model.joint_types[j] == JointType.PRISMATIC:
            R = const_matrix(origin[:3, :3])
            shift = e.matvec(R, u)
            values += [e.add(pk, e.mul(sk, value)) for pk, sk in zip(p, shift)] + [ax, ay, az, aw]
            continue
        half = e.mul(0.5, value)
        c, s_ = e.assign(f"cos({e.plain(half)})"), e.assign(f"sin({e.plain(half)})")
        bx, by, bz, bw = e.mul(u[0], s_), e.mul(u[1], s_), e.mul(u[2], s_), c
        values += p + [
            e.add(e.mul(aw, bx), e.mul(ax, bw), e.mul(ay, bz), e.neg(e.mul(az, by))),
            e.add(e.mul(aw, by), e.neg(e.mul(ax, bz)), e.mul(ay, bw), e.mul(az, bx)),
            e.add(e.mul(aw, bz), e.mul(ax, by), e.neg(e.mul(ay, bx)), e.mul(az, bw)),
            e.add(e.mul(aw, bw), e.neg(e.mul(ax, bx)), e.neg(e.mul(ay, by)), e.neg(e.mul(az, bz)))]
    return finish(e, values, np.zeros((len(model.scalar_joint_indices), 7)))


#: :attr:`CompiledFK.backend`'s answers (:data:`NUMPY`: neither compiled tier runs; the caller
#: runs the numpy recursions, the oracle).
GENERATED, GENERIC, NUMPY = "generated numba", "generic numba", "numpy"


class CompiledFK(LazyAccelerated):
    """A generated kernel made callable on one configuration or a batch, through the fastest
    compiled tier that runs now.

    ``single(q (n_q,))`` returns an array shaped like the template; ``batch(qb (B, n_q))``
    returns ``(B,) + template shape``. Both use the numba-compiled kernel of
    :mod:`robokin_ros.accel` once it is loaded (see :meth:`accelerate`), else the generic
    compiled tier's kernel of the same output (:meth:`generic`); when neither runs (numba off or
    missing, the generic kernels not loaded yet, or not covering this output) they return None
    and the caller runs the numpy recursions (the oracle).
    """

    def __init__(self, model: RobotModel, generated: GeneratedKernel, vector_trig: bool = False,
                 generic: tuple | None = None):
        self.generated = generated
        # numba: sines and cosines in SIMD lanes per block (numba_source.vector_trig_wrapper_source)
        self._vector_trig = vector_trig
        self.shape = generated.template.shape   # of one configuration's result
        self._size = generated.template.size
        self._n_q = model.n_q
        self._mimic_terms = model.mimic_terms
        self._robot = model.name   # (for the compile notices)
        #: Once loaded: the compiled ``single(q (n_q,), out) -> status`` of
        #: :func:`robokin_ros.kernels.numba_source.single_source` (0 written, 1 non-finite, 2 wrong shape).
        self.accelerated_single = None
        #: Once loaded: :attr:`accelerated_single` without numba's type dispatch
        #: (:func:`robokin_ros.kernels.accel.direct_entry`: plain float64 vectors only).
        self.direct_single = None
        #: The compiled ``single(q (n_q,), out) -> status`` that runs now: :attr:`accelerated_single`
        #: once loaded, else the generic tier's (:mod:`robokin_ros.kernels.generic_tier`) once bound
        #: (:meth:`generic`), else None. Replaced by one assignment when the generated kernel loads.
        self.ready_single = None
        # the generic tier's kernel: (what, argument) of generic_tier.bound until bound, then its Bound
        self._generic_request = None if generic is None else (generic_tier.robot_arrays(model), *generic)
        self._generic: generic_tier.Bound | None = None
        self._swap = threading.Lock()
        super().__init__()

    def _load(self):
        body, values = self.generated.body, self.generated.values
        # stores as soon as computed (numba_source.with_stores): out never overlaps q here
        source = vector_trig_wrapper_source(body, values, self._n_q) if self._vector_trig else \
            wrapper_source(body, values, self._n_q, early_stores=True)
        source += single_source(body, values, (self._n_q,), self.shape, self._mimic_terms, early_stores=True)
        kernel = accel.load(source, self._n_q, self.shape, robot=self._robot)
        accel.check_single(kernel.py_func.__globals__["single"], (self._n_q,), self.shape)
        return kernel

    def _installed(self, kernel) -> None:
        single = kernel.py_func.__globals__["single"]
        with self._swap:
            self.accelerated_single = single
            self.direct_single = accel.direct_entry(single)
            self.ready_single = single

    @property
    def backend(self) -> str:
        """What runs now: :data:`GENERATED` (the robot's own compiled kernel), :data:`GENERIC`
        (the generic compiled tier, while the robot's own compiles) or :data:`NUMPY` (neither:
        the caller runs the numpy recursions, the oracle)."""
        if self.accelerated_single is not None and accel.active():
            return GENERATED
        return GENERIC if self.generic() is not None else NUMPY

    def load_in_background(self) -> None:
        """Start loading the generated numba kernel in a background thread now (compiling it in
        a separate process unless the disk cache has it), unless it is loaded, loading, failed,
        or the accelerator is off; calls meanwhile run the generic tier (:meth:`generic`)."""
        if accel.active() and self.accelerated_single is None:
            self._start_loading()

    def generic(self) -> generic_tier.Bound | None:
        """The generic compiled tier's kernel computing what this kernel computes
        (:func:`robokin_ros.kernels.generic_tier.bound`), or None: the accelerator switched off,
        the tier not loaded yet (its loading starts here), or not covering this kernel."""
        bound = self._generic
        if bound is None and self._generic_request is not None and accel.enabled:
            bound = generic_tier.bound(*self._generic_request)
            if bound is None:
                return None
            with self._swap:
                self._generic, self._generic_request = bound, None
                if self.ready_single is None:
                    self.ready_single = bound.single
        return bound if bound is not None and bound.single is not None and accel.enabled else None

    def single_entry(self):
        """The compiled ``single(q (n_q,), out) -> status`` once loaded (see
        :attr:`accelerated_single`), else None; counts as one configuration towards loading it
        when the kernel :attr:`counts_calls`."""
        return None if self._kernel(1) is None else self.accelerated_single

    def single(self, q: np.ndarray, out: np.ndarray | None = None) -> np.ndarray | None:
        """Kernel output for one checked configuration ``q (n_q,)`` on the compiled tier that
        runs now; ``out``: a C-contiguous float64 array of the template's size to write into
        (checked by the caller), returned reshaped. None when no compiled tier runs (the caller
        runs the oracle; ``out`` untouched)."""
        kernel = self._kernel(1)
        if kernel is not None:
            result = np.empty(self.shape) if out is None else out.reshape(self.shape)
            # the single entry takes writeable C-contiguous float64 vectors (numba's refusal of
            # another type is slow); for others, or a status of NaN, the batch kernel copies q
            if not (q.flags.c_contiguous and q.flags.writeable and q.dtype == np.float64
                    and self.accelerated_single(q, result) == 0):
                accel.call_kernel(kernel, np.array(q, np.float64).reshape(1, -1), result.reshape(1, -1))
            return result
        generic = self.generic()
        if generic is None:
            return None
        result = np.empty(self.shape) if out is None else out.reshape(self.shape)
        try:
            if generic.single(np.ascontiguousarray(q, np.float64), result) == 0:
                return result
        except TypeError:   # (an argument numba has no signature for: the oracle below)
            pass
        return None

    def batch(self, qb: np.ndarray, out: np.ndarray | None = None, threads: int | None = None) -> np.ndarray | None:
        """Kernel outputs ``(B,) + shape`` for checked configurations ``qb (B, n_q)`` on the
        compiled tier that runs now, on :func:`~robokin_ros.kernels.parallel.thread_count`
        ``(threads)`` threads (:func:`~robokin_ros.kernels.parallel.run_rows`; bit-identical for
        every count); ``out``: a C-contiguous float64 ``(B, size)`` array to write into (checked
        by the caller). None when no compiled tier runs (the caller runs the oracle)."""
        B = qb.shape[0]
        parallel.check_threads(threads)   # checked on every path
        kernel = self._kernel(B)
        if kernel is None:
            generic = self.generic()
            kernel = None if generic is None else generic.batch
            if kernel is None:
                return None
        if out is None:
            out = np.empty((B, self._size))
        parallel.run_rows(kernel, (qb,), out, threads)
        return out.reshape((B,) + self.shape)


def _kernel(model: RobotModel, key, generate, args: tuple, vector_trig: bool,
            counts_calls: bool = False) -> CompiledFK | None:
    """``CompiledFK`` of ``generate(model, *args)``, or None when it gives no source; with the
    generic tier's counterpart of ``key`` (:func:`_generic_of`)."""
    generated = generate(model, *args)
    if generated is None:
        return None
    kernel = CompiledFK(model, generated, vector_trig, _generic_of(model, key))
    kernel.counts_calls = counts_calls
    return kernel


def _generic_of(model: RobotModel, key) -> tuple | None:
    """``(what, argument)`` of :func:`robokin_ros.kernels.generic_tier.bound` computing what the
    generated kernel ``key`` computes, or None (the joint poses of /tf: no generic kernel)."""
    if key == _EVERY_LINK:
        return "poses", (tuple(range(model.n_links)), generic_tier.LAYOUT_CODES["4x4"])
    if key[0] == "link poses":
        links = tuple(range(model.n_links)) if key[2] is None else key[2]
        return "poses", (links, generic_tier.LAYOUT_CODES[key[1]])
    if key[0] == "jacobian":
        return "jacobian", model.link_index(key[1])
    if key[0] == "frames":
        return "frames", tuple(model.link_index(f) for f in key[1])
    return None


#: The registry kind (:mod:`robokin_ros.model_cache`) of the generated FK kernels, keyed by what
#: they compute; the accessors below are the only places that spell the keys.
FK_KERNELS = "fk kernels"
_EVERY_LINK = "fk"

# The lookups pass the builder and its arguments rather than a closure (the single-configuration
# lane looks its kernel up on every call).


def compiled_fk(model: RobotModel) -> CompiledFK | None:
    """The model's generated FK of every link (built on first use, kept per model), or None."""
    return model_cache.cached(model, FK_KERNELS, _EVERY_LINK, _kernel,
                              (model, _EVERY_LINK, generate_link_poses_source, (), True))


def built_fk(model: RobotModel) -> CompiledFK | None:
    """:func:`compiled_fk` if it has been built already, else None (a lookup that builds
    nothing: the single-configuration lane of :func:`robokin_ros.forward_kinematics`, whose
    general path builds it)."""
    return model_cache.peek(model, FK_KERNELS, _EVERY_LINK)


def compiled_link_poses(model: RobotModel, links: tuple[int, ...] | None = None,
                        layout: str = "4x4") -> CompiledFK | None:
    """The generated poses of ``links`` (link indices, None: every link) in ``layout`` (see
    :func:`generate_link_poses_source`), built on first use and kept per model, or None.
    Every link in ``"4x4"`` is :func:`compiled_fk`."""
    if links is None and layout == "4x4":
        return compiled_fk(model)
    key = ("link poses", layout, links)
    return model_cache.cached(model, FK_KERNELS, key, _kernel,
                              (model, key, generate_link_poses_source, (links, layout), True))


def compiled_joint_poses(model: RobotModel) -> CompiledFK:
    """The generated child-in-parent poses of the 1-DOF joints; see :func:`generate_joint_poses_source`.
    The generic tier has no kernel of them: until its numba kernel loads (in the background
    once :data:`robokin_ros.kernels.accel.MIN_BATCH` configurations have gone through it, single
    calls adding up as /tf's do, or at once by :func:`robokin_ros.prepare`) the numpy recursion
    (the oracle) serves."""
    return model_cache.cached(model, FK_KERNELS, "joint poses", _kernel,
                              (model, "joint poses", generate_joint_poses_source, (), False, True))


def compiled_jacobian(model: RobotModel, frame: str) -> CompiledFK | None:
    """The generated LOCAL_WORLD_ALIGNED Jacobian ``(6, n_v)`` of one frame (kept per model and
    frame), or None; see :func:`generate_jacobian_source`. Its numba kernel loads in the
    background once :data:`robokin_ros.kernels.accel.MIN_BATCH` single calls have gone through
    :meth:`CompiledFK.single_entry` (a controller's calls add up), or at once by
    :func:`robokin_ros.prepare`. The single-configuration lane of :func:`robokin_ros.jacobian`
    looks it up here on every call (one registry probe once built).

    Raises:
        UnknownLinkError: a frame the model does not have.
    """
    key = ("jacobian", frame)
    kernel = model_cache.peek(model, FK_KERNELS, key)   # the lane's lookup: one probe when built
    if kernel is None:
        model.link_index(frame)
        kernel = model_cache.cached(model, FK_KERNELS, key, _kernel,
                                    (model, key, generate_jacobian_source, (frame,), False, True))
    return kernel


def compiled_frames(model: RobotModel, frames) -> CompiledFK | None:
    """The generated poses + Jacobians kernel of a tuple of frames (kept per model and
    frames), or None; see :func:`generate_frames_source`.

    Raises:
        UnknownLinkError: a frame the model does not have.
    """
    frames = tuple(frames)
    for f in frames:
        model.link_index(f)
    key = ("frames", frames)
    return model_cache.cached(model, FK_KERNELS, key, _kernel, (model, key, generate_frames_source, (frames,), False))
