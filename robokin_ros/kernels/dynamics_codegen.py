"""Per-robot specialised dynamics: RNEA (and its gravity / nonlinear-effects cases), CRBA and
forward dynamics (``M a = tau - h`` by a sparse ``Lᵀ D L`` factorisation) as straight-line
Python source, with the generic kernels of :mod:`robokin_ros.dynamics` as oracle.

The generated code follows Featherstone's algorithms in body (local) coordinates, where every
body's spatial inertia and every joint's motion subspace are constants: only the joint
transforms depend on ``q``. The generator (the :class:`~robokin_ros.kernels.fk_codegen.Emitter` of the
FK generator) folds every constant: fixed joints are merged (their links' inertials added to
the moving ancestor, parallel-axis), axis-aligned joints touch only the entries their rotation
moves, massless bodies vanish, and inputs that are known to be zero (``v`` and ``a`` for the
gravity torques, ``a`` for the nonlinear effects) or constant (standard gravity) are folded
away. Temporaries are renamed onto a small set of registers once they are dead, so a batched
call (numpy arrays of shape ``(B,)``) frees each intermediate as soon as it is last used.

Where numba is installed, :mod:`robokin_ros.kernels.accel` compiles each kernel (a batch loop
plus a single-configuration entry checking its inputs' shapes and finiteness in the same call).
It loads (from the disk cache, or compiled in a background thread) once
:data:`~robokin_ros.kernels.accel.MIN_BATCH` configurations have gone through it, in one batch or
in single calls; :func:`robokin_ros.prepare` loads it at once.

Models with floating or planar joints get no generated kernel (the generic kernels handle them).
"""

from __future__ import annotations

import math
import re

import numpy as np

from .. import model_cache
from ..model import JointType, RobotModel
from ..runtime import current_runtime
from . import accel, numba_source, parallel
from .emitter import (
    Emitter,
    allocate_registers,
    clean,
    const_matrix,
    kernel_source,
    outputs,
    rotation_symbols,
    supported,
)
from .lazy_accel import LazyAccelerated
from .plan import dynamics_tree

#: Gravity vectors folded into the generated code as constants; any other is an input.
_CONSTANT_GRAVITIES = ((0.0, 0.0, -9.81), (0.0, 0.0, 0.0))

#: Configurations per chunk of a batched generated kernel (larger chunks amortise numpy's
#: per-operation overhead; the temporaries stay cache-sized).
CHUNK = 4096

# ---------------------------------------------------------------------------------------- symbolic helpers
def _cross(e: Emitter, a, b) -> list:
    return [e.sub(e.mul(a[1], b[2]), e.mul(a[2], b[1])),
            e.sub(e.mul(a[2], b[0]), e.mul(a[0], b[2])),
            e.sub(e.mul(a[0], b[1]), e.mul(a[1], b[0]))]


def _vadd(e: Emitter, *vectors) -> list:
    return [e.add(*xs) for xs in zip(*vectors)]


def _scale(e: Emitter, vector, s) -> list:
    return [e.mul(x, s) for x in vector]


def _transpose(M) -> list:
    return [[M[c][r] for c in range(3)] for r in range(3)]


class _Body:
    """One moving body of the generated kernels: its joint transform and constant inertia.

    ``E`` rotates parent coordinates into body coordinates, ``r`` is the body origin in the
    parent body's frame; ``u`` the joint axis (body frame), ``revolute`` its kind; ``column``
    the v index of its coordinate and ``scale`` the mimic multiplier; ``mass``, ``com``, ``I_c``
    (rotational inertia about the centre of mass), ``h = mass com`` and ``I_o`` (rotational
    inertia about the body origin) its merged inertial in the body frame; symmetric matrices as
    ``(xx, yy, zz, xy, xz, yz)``.
    """

    def __init__(self, *, parent, E, r, u, revolute, column, scale, mass, com, I_c):
        self.parent, self.E, self.r, self.u, self.revolute = parent, E, r, u, revolute
        self.column, self.scale, self.mass = column, scale, mass
        c = np.array(com)
        I_o = _unpack(I_c) + mass * (float(c @ c) * np.eye(3) - np.outer(c, c))
        self.com, self.I_c = [clean(x) for x in com], [clean(x) for x in I_c]
        self.h, self.I_o = [clean(mass * x) for x in com], _pack(I_o)


_SYM = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))


def _pack(S) -> list:
    return [clean(S[i, k]) for i, k in _SYM]


def _unpack(s) -> np.ndarray:
    return np.array([[s[0], s[3], s[4]], [s[3], s[1], s[5]], [s[4], s[5], s[2]]])


def _bodies(model: RobotModel, e: Emitter) -> list:
    """Emit every moving body's joint transform; return the bodies (index 0 is the root: None)."""
    tree = dynamics_tree(model)
    plan = tree.plan
    scalar_pos = {int(link): k for k, link in enumerate(plan.scalar_links)}
    q_symbols: dict[int, str] = {}
    trig: dict[tuple, tuple[str, str]] = {}
    bodies = [None]
    for b in range(1, tree.n_bodies):
        link = int(tree.body_links[b])
        j, k = link - 1, scalar_pos[link]
        qi, mult, off = int(plan.scalar_q[k]), float(plan.scalar_mult[k]), float(plan.scalar_offset[k])
        if qi not in q_symbols:
            q_symbols[qi] = e.assign(f"q[{qi}]")
        value = e.add(e.mul(mult, q_symbols[qi]), off)
        C = plan.C[link]
        CR, Cp = const_matrix(C[:3, :3]), [clean(x) for x in C[:3, 3]]
        u = [clean(x) for x in model.joint_axes[j]]
        revolute = JointType(model.joint_types[j]) != JointType.PRISMATIC
        if revolute:
            key = (qi, mult, off)
            if key not in trig:
                angle = e.plain(value)
                trig[key] = (e.assign(f"cos({angle})"), e.assign(f"sin({angle})"))
            c, s = trig[key]
            E = e.matmul(rotation_symbols(e, [-x for x in u], c, s), _transpose(CR))   # Rot(u, θ)ᵀ C_Rᵀ
            r = Cp
        else:
            E = _transpose(CR)
            r = [e.add(pc, e.mul(a, value)) for pc, a in zip(Cp, [clean(x) for x in np.array(CR) @ np.array(u)])]
        src = int(model.velocity_source_joints[j])
        bodies.append(_Body(parent=int(tree.parent[b]), E=E, r=r, u=u, revolute=revolute,
                            column=int(model.joint_v_index[src]), scale=mult, mass=float(tree.mass[b]),
                            com=tree.com[b].tolist(), I_c=_pack(tree.I_com[b])))
    return bodies


def _sym_apply(e: Emitter, S, x) -> list:
    """``S x`` for a symmetric matrix stored as ``(xx, yy, zz, xy, xz, yz)``."""
    return [e.dot([S[0], S[3], S[4]], x), e.dot([S[3], S[1], S[5]], x), e.dot([S[4], S[5], S[2]], x)]


def _body_force(e: Emitter, body: _Body, vl, w, al, aw) -> tuple[list, list]:
    """Newton–Euler: the force ``[f; n]`` (moment about the body origin) that gives the body the
    motion ``v = [vl; w]``, ``a = [al; aw]`` (spatial, body frame): ``I a + v ×* I v``.

    With the centre of mass ``c``: ``f = m (al + aw × c + w × (vl + w × c))`` (the classical
    acceleration of ``c``), ``n = c × f + I_c aw + w × I_c w``.
    """
    c = body.com
    v_com = _vadd(e, vl, _cross(e, w, c))
    f = _scale(e, _vadd(e, al, _cross(e, aw, c), _cross(e, w, v_com)), body.mass)
    n = _vadd(e, _cross(e, c, f), _sym_apply(e, body.I_c, aw), _cross(e, w, _sym_apply(e, body.I_c, w)))
    return f, n


def _to_parent(e: Emitter, body: _Body, f, n) -> tuple[list, list]:
    """A force ``[f; n]`` in body coordinates expressed in the parent body's coordinates."""
    R = _transpose(body.E)
    fp = e.matvec(R, f)
    return fp, _vadd(e, e.matvec(R, n), _cross(e, body.r, fp))


def _joint_dot(e: Emitter, body: _Body, f, n):
    """``Sᵀ [f; n]``: the joint's share of a force."""
    return e.dot(body.u, n if body.revolute else f)


# ---------------------------------------------------------------------------------------- generators
class _Inputs:
    """Symbols of the generated function's inputs, read in order from its one argument ``q``
    (the configuration first, then the further inputs concatenated)."""

    def __init__(self, e: Emitter, model: RobotModel):
        self.e, self.offset = e, model.n_q

    def read(self, n: int) -> list:
        symbols = [self.e.assign(f"q[{self.offset + k}]") for k in range(n)]
        self.offset += n
        return symbols


def _gravity_symbols(inputs: _Inputs, gravity) -> list:
    """The gravity vector: its constant value, or (``gravity`` None) three inputs."""
    return inputs.read(3) if gravity is None else [float(x) for x in gravity]


def _rnea_values(e: Emitter, bodies: list, n_v: int, v: list, a: list, g: list) -> list:
    """Emit RNEA for velocities ``v``, accelerations ``a`` (symbols or zeros, per v coordinate)
    and gravity ``g``; return the joint forces, one symbol per v coordinate."""
    rates = {"v": v, "a": a}
    zero = [0.0, 0.0, 0.0]
    V = {0: (zero, zero)}
    A = {0: ([e.mul(-1.0, x) for x in g], zero)}
    F = {}
    for b, body in enumerate(bodies[1:], start=1):
        vl, w = V[body.parent]
        al, aw = A[body.parent]
        qd = e.mul(body.scale, rates["v"][body.column])
        qdd = e.mul(body.scale, rates["a"][body.column])
        vl = e.matvec(body.E, _vadd(e, vl, _cross(e, w, body.r)))
        w = e.matvec(body.E, w)
        al = e.matvec(body.E, _vadd(e, al, _cross(e, aw, body.r)))
        aw = e.matvec(body.E, aw)
        uqd, uqdd = _scale(e, body.u, qd), _scale(e, body.u, qdd)
        if body.revolute:                                   # S = [0; u]; v × (S q̇) = [vl × u q̇; ω × u q̇]
            w = _vadd(e, w, uqd)
            al = _vadd(e, al, _cross(e, vl, uqd))
            aw = _vadd(e, aw, uqdd, _cross(e, w, uqd))
        else:                                               # S = [u; 0]; v × (S q̇) = [ω × u q̇; 0]
            vl = _vadd(e, vl, uqd)
            al = _vadd(e, al, uqdd, _cross(e, w, uqd))
        V[b], A[b] = (vl, w), (al, aw)
        F[b] = _body_force(e, body, vl, w, al, aw)
    tau = [0.0] * n_v
    for b in range(len(bodies) - 1, 0, -1):
        body = bodies[b]
        f, n = F[b]
        tau[body.column] = e.add(tau[body.column], e.mul(body.scale, _joint_dot(e, body, f, n)))
        if body.parent:
            fp, np_ = _to_parent(e, body, f, n)
            pf, pn = F[body.parent]
            F[body.parent] = (_vadd(e, pf, fp), _vadd(e, pn, np_))
    return tau


def _crba_values(e: Emitter, bodies: list, n_v: int) -> list:
    """Emit CRBA; return the entries of ``M`` row-major (symmetric, both triangles)."""
    IC = {b: (body.mass, list(body.h), list(body.I_o)) for b, body in enumerate(bodies) if body is not None}
    for b in range(len(bodies) - 1, 0, -1):                 # composite inertias, body frames
        body = bodies[b]
        if not body.parent:
            continue
        m, h, I = IC[b]
        R, r = _transpose(body.E), body.r
        hh = e.matvec(R, h)
        RI = [_sym_apply(e, I, [R[k][0], R[k][1], R[k][2]]) for k in range(3)]   # rows of R I
        two_hr_mrr = e.add(e.mul(2.0, e.dot(hh, r)), e.mul(m, e.dot(r, r)))
        shifted = []
        for i, k in _SYM:
            x = e.dot(RI[i], R[k])                                               # (R I Rᵀ)[i, k]
            outer = e.add(e.mul(hh[i], r[k]), e.mul(r[i], hh[k]), e.mul(m, e.mul(r[i], r[k])))
            shifted.append(e.sub(e.add(x, two_hr_mrr) if i == k else x, outer))
        pm, ph, pI = IC[body.parent]
        IC[body.parent] = (pm + m, _vadd(e, ph, hh, _scale(e, r, m)), _vadd(e, pI, shifted))
    entries: dict[tuple[int, int], object] = {}
    for i in range(1, len(bodies)):
        body = bodies[i]
        m, h, I = IC[i]
        u = body.u
        if body.revolute:                                   # I [0; u] = [-h × u; I_o u]
            f, n = [e.mul(-1.0, x) for x in _cross(e, h, u)], _sym_apply(e, I, u)
        else:                                               # I [u; 0] = [m u; h × u]
            f, n = _scale(e, u, m), _cross(e, h, u)
        j, other = i, body
        while True:
            value = e.mul(body.scale * other.scale, _joint_dot(e, other, f, n))
            row, col = max(body.column, other.column), min(body.column, other.column)
            if j != i and row == col:                       # two mimic columns of one coordinate
                value = e.mul(2.0, value)
            entries[row, col] = e.add(entries.get((row, col), 0.0), value)
            if not other.parent:
                break
            f, n = _to_parent(e, other, f, n)
            j = other.parent
            other = bodies[j]
    values = [0.0] * (n_v * n_v)
    for (row, col), value in entries.items():
        values[row * n_v + col] = values[col * n_v + row] = value
    return values


def _com_values(e: Emitter, bodies: list, mass0: float, h0, total: float) -> list:
    """Emit the whole robot's centre of mass in the world frame: ``Σ m_b (R_b c_b + p_b) / Σ m``
    over the moving bodies, plus the root body's constant ``h0 = m_0 c_0`` (``total``: every
    link's mass)."""
    identity = [[1.0 if r == c else 0.0 for c in range(3)] for r in range(3)]
    R, p = {0: identity}, {0: [0.0, 0.0, 0.0]}
    moment = [float(x) for x in h0]
    for b, body in enumerate(bodies[1:], start=1):
        Rp, pp = R[body.parent], p[body.parent]
        R[b] = e.matmul(Rp, _transpose(body.E))                  # world <- body
        p[b] = _vadd(e, pp, e.matvec(Rp, body.r))
        if body.mass:
            moment = _vadd(e, moment, e.matvec(R[b], body.h), _scale(e, p[b], body.mass))
    return _scale(e, moment, 1.0 / total)


_RECIPROCAL = re.compile(r"recip\(([^()]*)\)")


def _reciprocal(x):
    """``1 / x`` for a float or an array; ``±inf`` (not ZeroDivisionError) for a float zero."""
    try:
        return 1.0 / x
    except ZeroDivisionError:
        return math.copysign(math.inf, x)


def _solve_values(e: Emitter, M: list, b: list) -> list:
    """Emit the solution ``x`` of ``M x = b`` for a symmetric positive definite ``M`` (row-major
    symbols) by the factorisation ``M = Lᵀ D L`` (L unit lower triangular), eliminating the
    last coordinate first. On a tree in topological order this creates no fill-in and touches
    only the non-zero entries (Featherstone, Rigid Body Dynamics Algorithms, §6.5); zeros of
    ``M`` are constants, so the emitter skips them."""
    n = len(b)
    H = [[M[i * n + j] for j in range(i + 1)] for i in range(n)]    # lower triangle, overwritten by L
    inv_d = [0.0] * n
    for k in range(n - 1, -1, -1):
        inv_d[k] = e.assign(f"recip({e.plain(H[k][k])})")   # a massless direction: inf, as numpy gives
        for i in range(k - 1, -1, -1):
            if H[k][i] == 0.0:
                continue
            a = e.mul(H[k][i], inv_d[k])
            for j in range(i + 1):
                H[i][j] = e.sub(H[i][j], e.mul(a, H[k][j]))
            H[k][i] = a
    x = list(b)
    for i in range(n - 1, -1, -1):                                   # Lᵀ y = b
        for j in range(i):
            x[j] = e.sub(x[j], e.mul(H[i][j], x[i]))
    x = [e.mul(xi, d) for xi, d in zip(x, inv_d)]                    # D z = y
    for i in range(n):                                               # L x = z
        x[i] = e.sub(x[i], e.dot(H[i][:i], x[:i]))
    return x


# ---------------------------------------------------------------------------------------- compiled kernels
class CompiledDynamics(LazyAccelerated):
    """A generated dynamics kernel callable on one configuration or a batch.

    ``single(*inputs)`` takes 1-D arrays (``q``, then the kernel's other inputs) and returns an
    array of shape :attr:`shape`; ``batch(*inputs)`` takes ``(B, k)`` arrays and returns
    ``(B,) + shape``. :attr:`gravity_input`: whether the gravity vector is the last input;
    :attr:`input_sizes`: the length of each input. Both use the numba-compiled kernel once it is
    loaded (:meth:`accelerate`), else the numpy / Python-float code.
    """

    counts_calls = True   # a controller's single calls add up to a batch
    kind = "numba dynamics kernel"

    def __init__(self, model: RobotModel, e: Emitter, values: list, shape: tuple, label: str,
                 input_sizes: tuple, gravity_input: bool = False):
        values = allocate_registers(e, [e.plain(x) for x in values])
        names, slots, template = outputs(values, np.zeros(shape))
        self.generated = kernel_source(e, values, names, slots, template)
        namespace: dict = {"inf": math.inf, "nan": math.nan,   # constants that overflowed print as these
                           "recip": _reciprocal}
        exec(compile(self.generated.source, f"<robokin {label} {model.name!r}>", "exec"), namespace)  # noqa: S102
        self._batch, self._single = namespace["kernel_batch"], namespace["kernel_all"]
        self.shape, self.gravity_input, self.input_sizes = shape, gravity_input, tuple(input_sizes)
        self._size = self.size = template.size
        # Batched results are assembled from the non-zero entries only (variables and non-zero
        # constants, in flat order), copied as runs of consecutive entries.
        flat = template.reshape(-1)
        nonzero = np.union1d(slots, np.flatnonzero(flat)).astype(np.int64)
        self._rows = np.searchsorted(nonzero, slots)           # row of each returned entry
        self._constants = [(k, flat[s]) for k, s in enumerate(nonzero) if s not in set(slots.tolist())]
        cuts = np.flatnonzero(np.diff(nonzero) != 1) + 1
        starts, stops = np.r_[0, cuts], np.r_[cuts, nonzero.size]
        self._runs = [(int(nonzero[a]), int(a), int(b - a)) for a, b in zip(starts, stops) if b > a]
        self._n_nonzero = nonzero.size
        self._dense = nonzero.size == self._size
        # once loaded: the numba single entry, and the same without type dispatch (accel.direct_entry)
        self.accelerated_single = self.direct_single = None
        self._mimic_terms, self._robot = model.mimic_terms, model.name   # (the name: compile notices)
        super().__init__()

    def wrapper_source(self) -> str:
        """The numba module of this kernel: :func:`robokin_ros.kernels.numba_source.wrapper_source`'s batch
        ``kernel(x_1 (B, k_1), ..., out (B, size), claims)`` and
        :func:`robokin_ros.kernels.numba_source.single_source`'s ``single(x_1, ..., x_k, out) -> status``
        over 1-D float64 inputs and an output of :attr:`shape` (0: ``out`` filled; 1: a non-finite
        input or mimic joint value; 2: a wrong length)."""
        body = [_RECIPROCAL.sub(r"(1.0 / (\1))", line) for line in self.generated.body]   # numpy error model: ±inf
        return numba_source.wrapper_source(body, self.generated.values, self.input_sizes) + \
            numba_source.single_source(body, self.generated.values, self.input_sizes, self.shape, self._mimic_terms)

    def _load(self):
        kernel = accel.load(self.wrapper_source(), self.input_sizes, self._size,
                            reference=lambda x: self._single(x, math.cos, math.sin), robot=self._robot)
        self._check_single(kernel.py_func.__globals__["single"])
        return kernel

    def _check_single(self, single) -> None:
        """Raise :class:`robokin_ros.errors.KernelCheckError` unless the compiled single entry
        agrees with the Python-float kernel (:func:`robokin_ros.kernels.accel.check_single`)."""
        accel.check_single(single, self.input_sizes, self.shape, lambda x: self._single(x, math.cos, math.sin))

    def _installed(self, kernel) -> None:
        self.accelerated_single = kernel.py_func.__globals__["single"]
        self.direct_single = accel.direct_entry(self.accelerated_single)

    def single_entry(self):
        """The compiled ``single(*inputs, out) -> status`` once loaded (see
        :meth:`wrapper_source`), else None; counts as one configuration towards loading it (the
        single-configuration lane, :func:`robokin_ros.kernels.single_lane.single_result`, calls
        it; :meth:`single` and :meth:`single_flat` do not count)."""
        return None if self._kernel(1) is None else self.accelerated_single

    def single(self, *inputs: np.ndarray) -> np.ndarray:
        """Kernel output for one configuration (1-D inputs)."""
        kernel = self._accelerated if current_runtime().accelerated else None   # (counts nothing)
        if kernel is not None:
            out = np.empty((1, self._size))
            accel.call_kernel(kernel, np.concatenate(inputs).reshape(1, -1), out, self.input_sizes)
            return out.reshape(self.shape)
        return self.single_flat([x for a in inputs for x in a.tolist()])

    def single_flat(self, inputs: list) -> np.ndarray:
        """Kernel output for one configuration given as one list of floats (inputs concatenated)."""
        kernel = self._accelerated if current_runtime().accelerated else None   # (counts nothing)
        if kernel is not None:
            out = np.empty((1, self._size))
            accel.call_kernel(kernel, np.array([inputs], np.float64), out, self.input_sizes)
            return out.reshape(self.shape)
        return np.array(self._single(inputs, math.cos, math.sin)).reshape(self.shape)

    def batch(self, *inputs: np.ndarray, threads: int | None = None) -> np.ndarray:
        """Outputs ``(B,) + shape`` for ``(B, k)`` inputs in chunks of :data:`CHUNK` (numba: threaded)."""
        B = inputs[0].shape[0]
        kernel = self._kernel(B)
        if kernel is not None:
            out = np.empty((B, self._size))
            parallel.run_rows(kernel, inputs, out, threads)
            return out.reshape((B,) + self.shape)
        out = np.empty((B, self._size)) if self._dense else np.zeros((B, self._size))
        scratch = np.empty((self._n_nonzero, min(B, CHUNK)))
        for k, value in self._constants:
            scratch[k] = value
        for start in range(0, B, CHUNK):
            stop = min(B, start + CHUNK)
            view = scratch[:, :stop - start]
            x = np.concatenate([a[start:stop].T for a in inputs])   # (n inputs, chunk), component-first
            for row, entry in zip(self._rows, self._batch(x, np.cos, np.sin)):
                view[row] = entry
            if self._dense:
                out[start:stop] = view.T
            else:
                block, entries = out[start:stop], view.T.copy()
                for first, k, length in self._runs:
                    block[:, first:first + length] = entries[:, k:k + length]
        return out.reshape((B,) + self.shape)


#: The registry kind (:mod:`robokin_ros.model_cache`) of the generated dynamics kernels; the
#: functions below are the only places that spell their keys.
DYNAMICS_KERNELS = "dynamics kernels"


def _build_if_supported(model: RobotModel, build):
    """``build()``, or None for a model with floating or planar joints or without any inertial
    (the public calls raise ModelError for it before they would run a kernel)."""
    return build() if supported(model) and dynamics_tree(model).has_inertial else None


def _cached(model: RobotModel, key, build):
    """The kernel ``key`` of ``model`` (kept in :mod:`robokin_ros.model_cache`), or None (see
    :func:`_build_if_supported`)."""
    return model_cache.cached(model, DYNAMICS_KERNELS, key, _build_if_supported, (model, build))


def _constant_gravity(gravity: np.ndarray):
    """``gravity`` as a tuple when it is folded into the generated code, else None (an input)."""
    g = tuple(gravity.tolist())
    return g if g in _CONSTANT_GRAVITIES else None


def _rnea_key(with_v: bool, with_a: bool, constant) -> tuple:
    return ("rnea", with_v, with_a, constant)


def _forward_dynamics_key(constant) -> tuple:
    return ("forward dynamics", constant)


_CENTER_OF_MASS_KEY = "center of mass"


def compiled_rnea(model: RobotModel, with_v: bool, with_a: bool, gravity) -> CompiledDynamics | None:
    """The generated RNEA of ``model`` (None for models with floating or planar joints).

    Args:
        with_v, with_a: whether ``v`` / ``a`` are inputs (else zero: gravity torques are
            ``with_v = with_a = False``, nonlinear effects ``with_a = False``).
        gravity: ``(3,)``; standard and zero gravity are folded in, any other vector is a
            further input (pass it after ``q``, ``v``, ``a``).

    Returns:
        The kernel; its inputs are ``q``, then ``v`` and ``a`` when present, then the gravity
        vector when it is not folded; its output is ``tau (n_v,)``.
    """
    constant = _constant_gravity(gravity)

    def build():
        e = Emitter()
        bodies, inputs, zeros = _bodies(model, e), _Inputs(e, model), [0.0] * model.n_v
        v = inputs.read(model.n_v) if with_v else zeros
        a = inputs.read(model.n_v) if with_a else zeros
        tau = _rnea_values(e, bodies, model.n_v, v, a, _gravity_symbols(inputs, constant))
        sizes = (model.n_q,) + (model.n_v,) * (int(with_v) + int(with_a)) + ((3,) if constant is None else ())
        return CompiledDynamics(model, e, tau, (model.n_v,), f"rnea v={with_v} a={with_a} g={constant}", sizes,
                                gravity_input=constant is None)

    return _cached(model, _rnea_key(with_v, with_a, constant), build)


def compiled_crba(model: RobotModel) -> CompiledDynamics | None:
    """The generated CRBA of ``model``: ``q -> M (n_v, n_v)`` (None for floating / planar joints)."""

    def build():
        e = Emitter()
        return CompiledDynamics(model, e, _crba_values(e, _bodies(model, e), model.n_v), (model.n_v, model.n_v),
                                "crba", (model.n_q,))

    return _cached(model, "crba", build)


def compiled_forward_dynamics(model: RobotModel, gravity) -> CompiledDynamics | None:
    """The generated forward dynamics of ``model``: ``(q, v, tau[, gravity]) -> a (n_v,)``
    solving ``M a = tau - h`` with the generated CRBA, RNEA and a sparse ``Lᵀ D L``
    factorisation, in one function sharing the joint transforms (None for floating / planar
    joints). ``gravity`` as in :func:`compiled_rnea`."""
    constant = _constant_gravity(gravity)

    def build():
        e = Emitter()
        bodies, inputs = _bodies(model, e), _Inputs(e, model)
        v, tau = inputs.read(model.n_v), inputs.read(model.n_v)
        h = _rnea_values(e, bodies, model.n_v, v, [0.0] * model.n_v, _gravity_symbols(inputs, constant))
        M = _crba_values(e, bodies, model.n_v)
        a = _solve_values(e, M, [e.sub(t, x) for t, x in zip(tau, h)])
        sizes = (model.n_q, model.n_v, model.n_v) + ((3,) if constant is None else ())
        return CompiledDynamics(model, e, a, (model.n_v,), f"forward dynamics g={constant}", sizes,
                                gravity_input=constant is None)

    return _cached(model, _forward_dynamics_key(constant), build)


def compiled_center_of_mass(model: RobotModel) -> CompiledDynamics | None:
    """The generated centre of mass of ``model``: ``q -> c (3,)`` in the world frame, every
    link (the root's included) weighted by its mass (None for floating / planar joints or a
    massless model)."""
    total = float(model.link_masses.sum())

    def build():
        if total <= 0.0:
            return None
        e = Emitter()
        tree = dynamics_tree(model)
        values = _com_values(e, _bodies(model, e), float(tree.mass[0]), tree.mass[0] * tree.com[0], total)
        return CompiledDynamics(model, e, values, (3,), "center of mass", (model.n_q,))

    return _cached(model, _CENTER_OF_MASS_KEY, build)   # (a model with mass has an inertial)


#: Standard gravity along -z [m/s²], folded into the generated kernels.
STANDARD_GRAVITY = (0.0, 0.0, -9.81)
_STANDARD = np.array(STANDARD_GRAVITY)

#: The dynamics calls with a compiled single entry (standard gravity; zero for ``coriolis_torques``),
#: each with its kernel factory: what :func:`robokin_ros.kernels.prepare` accelerates.
PREPARABLE = {
    "rnea": lambda model: compiled_rnea(model, True, True, _STANDARD),
    "gravity_torques": lambda model: compiled_rnea(model, False, False, _STANDARD),
    "nonlinear_effects": lambda model: compiled_rnea(model, True, False, _STANDARD),
    "coriolis_torques": lambda model: compiled_rnea(model, True, False, np.zeros(3)),
    "crba": compiled_crba,
    "aba": lambda model: compiled_forward_dynamics(model, _STANDARD),
    "center_of_mass": compiled_center_of_mass,
}

#: The registry key of each call of :data:`PREPARABLE` (what its factory builds).
_SINGLE_KEYS = {
    "rnea": _rnea_key(True, True, STANDARD_GRAVITY),
    "gravity_torques": _rnea_key(False, False, STANDARD_GRAVITY),
    "nonlinear_effects": _rnea_key(True, False, STANDARD_GRAVITY),
    "coriolis_torques": _rnea_key(True, False, (0.0, 0.0, 0.0)),
    "crba": "crba",
    "aba": _forward_dynamics_key(STANDARD_GRAVITY),
    "center_of_mass": _CENTER_OF_MASS_KEY,
}


def built_single(model: RobotModel, call: str) -> CompiledDynamics | None:
    """The kernel of the public dynamics ``call`` (a name of :data:`PREPARABLE`) if it has been
    built already, else None: a lookup that builds nothing, for the single-configuration lane
    (the call's general path builds it).

    A kernel of a model whose dynamics the public call refuses is never built (no inertial; see
    :func:`_build_if_supported`); ``aba`` of a model with massless coordinates (a singular mass
    matrix, which ``aba`` must report) is built but never loaded: neither
    :func:`robokin_ros.kernels.prepare` nor :class:`robokin_ros.Kinematics` loads it, and its
    general path raises before running it.
    """
    return model_cache.peek(model, DYNAMICS_KERNELS, _SINGLE_KEYS[call])
