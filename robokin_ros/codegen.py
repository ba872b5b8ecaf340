"""Per-robot specialised forward kinematics: the model turned into straight-line Python source.

The generator walks the tree once and writes one assignment per non-trivial scalar operation:
fixed joints are folded into constant placements, every matrix entry that is a constant (0, ±1,
or any number known at build time) is folded, and axis-aligned joints use only the entries their
rotation touches. The same source runs on floats (``math.cos``: the fast path for one
configuration) and on numpy arrays of shape ``(B,)`` (``np.cos``: the batched path, every
operation over a contiguous batch). The generic kernel in :mod:`robokin_ros.kinematics` is its
oracle; models with floating or planar joints use the generic kernel. Where numba is installed,
:mod:`robokin_ros.accel` compiles the same lines into a loop over configurations (used for large
batches, and for every call once compiled); the generated source is deterministic, so its
compiled code can be cached on disk by the source's hash.
"""

from __future__ import annotations

import dataclasses
import math
import re
import struct
import threading
import warnings
import weakref

import numpy as np

from . import accel
from .model import JointType, RobotModel

_TOL = 1e-15


class _Emitter:
    """Builds straight-line code over scalar symbols with constant folding, common-subexpression
    reuse and signs carried instead of negations emitted.

    A value is either a Python float (a constant known at build time) or a str: a variable name
    ``"tN"`` or its negation ``"-tN"`` (never written as a line). Products take the sign of their
    factors and sums turn negative terms into subtractions; :meth:`plain` writes a negation out
    where a bare name is needed (function arguments, results).
    """

    def __init__(self):
        self.lines: list[str] = []
        self.count = 0
        self._seen: dict[str, str] = {}   # expression -> the name that already holds it (CSE)

    def _new(self, expr: str) -> str:
        known = self._seen.get(expr)
        if known is not None:
            return known
        name = f"t{self.count}"
        self.count += 1
        self.lines.append(f"    {name} = {expr}")
        self._seen[expr] = name
        return name

    @staticmethod
    def _const(x):
        return isinstance(x, float)

    @staticmethod
    def _split(x) -> tuple[float, str]:
        return (-1.0, x[1:]) if x.startswith("-") else (1.0, x)

    @staticmethod
    def _signed(sign: float, name: str) -> str:
        return name if sign > 0 else f"-{name}"

    def neg(self, x):
        if self._const(x):
            return -x
        return x[1:] if x.startswith("-") else f"-{x}"

    def plain(self, x):
        """``x`` as a constant or a bare variable name."""
        if self._const(x) or not x.startswith("-"):
            return x
        return self._new(x)

    def mul(self, a, b):
        if self._const(a) and self._const(b):
            return a * b
        if self._const(b):
            a, b = b, a
        if self._const(a):
            if abs(a) < _TOL:
                return 0.0
            sign, name = self._split(b)
            sign *= math.copysign(1.0, a)
            if abs(a) == 1.0:
                return self._signed(sign, name)
            return self._signed(sign, self._new(f"{abs(a)!r} * {name}"))
        (sa, na), (sb, nb) = self._split(a), self._split(b)
        return self._signed(sa * sb, self._new(f"{na} * {nb}"))

    def add(self, *terms):
        const = float(sum(t for t in terms if self._const(t)))
        names = [self._split(t) for t in terms if not self._const(t)]
        pos = [n for sign, n in names if sign > 0]
        neg = [n for sign, n in names if sign < 0]
        if not names:
            return const
        if abs(const) <= _TOL:
            if len(names) == 1:
                return self._signed(*names[0])
            const = 0.0
        if not pos:                                    # -(n1 + n2 + ... - const)
            return self.neg(self._sum(neg, [], -const))
        return self._sum(pos, neg, const)

    def _sum(self, pos, neg, const):
        if len(pos) == 1 and not neg and const == 0.0:
            return pos[0]
        expr = " + ".join(pos) + "".join(f" - {n}" for n in neg)
        if const > 0.0:
            expr += f" + {const!r}"
        elif const < 0.0:
            expr += f" - {-const!r}"
        return self._new(expr)

    def sub(self, a, b):
        return self.add(a, self.neg(b))

    def dot(self, row, col):
        return self.add(*[self.mul(a, b) for a, b in zip(row, col)])

    def matmul(self, A, B):
        """3x3 @ 3x3 of nested lists of symbols."""
        return [[self.dot(A[r], [B[k][c] for k in range(3)]) for c in range(3)] for r in range(3)]

    def matvec(self, A, v):
        return [self.dot(A[r], v) for r in range(3)]


_TEMP = re.compile(r"\bt\d+\b")


def _allocate_registers(e: _Emitter, values: list) -> list:
    """Drop dead assignments and rename temporaries onto reusable registers, in place.

    A register is reused once its value has been read for the last time, so on numpy batches
    each intermediate array is freed (and its memory recycled) as soon as it is dead. Returns
    ``values`` renamed.
    """
    parsed = []
    for line in e.lines:
        target, expr = line.strip().split(" = ", 1)
        parsed.append((target, expr, _TEMP.findall(expr)))
    live = {x for x in values if isinstance(x, str)}
    kept = []
    for target, expr, uses in reversed(parsed):
        if target in live:
            kept.append((target, expr, uses))
            live.update(uses)
    kept.reverse()
    last = {name: k for k, (_, _, uses) in enumerate(kept) for name in uses}
    last.update((x, math.inf) for x in values if isinstance(x, str))
    register, free, count, lines = {}, [], 0, []
    for k, (target, expr, uses) in enumerate(kept):
        expr = _TEMP.sub(lambda m: register[m.group(0)], expr)
        for name in dict.fromkeys(uses):  # ordered: the same source in every process (disk caches)
            if last[name] == k:
                free.append(register[name])
        if free:
            register[target] = free.pop()
        else:
            register[target], count = f"r{count}", count + 1
        lines.append(f"    {register[target]} = {expr}")
    e.lines = lines
    return [register[x] if isinstance(x, str) else x for x in values]


def _clean(x: float) -> float:
    """Snap numbers within 1e-15 of 0 or ±1 (rpy of multiples of pi/2) to exact values."""
    for target in (0.0, 1.0, -1.0):
        if abs(x - target) < _TOL:
            return target
    return float(x)


def _const_matrix(M) -> list:
    return [[_clean(M[r][c]) for c in range(3)] for r in range(3)]


def _rotation_symbols(e: _Emitter, axis, c: str, s: str):
    """Symbolic Rot(axis, θ) = I + s K + (1 - c) K² from symbols c = cos θ, s = sin θ."""
    u = [_clean(x) for x in axis]
    K = [[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]]
    K2 = _const_matrix(np.array(K) @ np.array(K))
    one_minus_c = None
    R = []
    for r in range(3):
        row = []
        for col in range(3):
            if r == col and K2[r][col] == -1.0:  # unit axis along another coordinate: 1 - (1 - c) = c
                row.append(c)
                continue
            terms = [1.0 if r == col else 0.0, e.mul(K[r][col], s)]
            if abs(K2[r][col]) > _TOL:
                if one_minus_c is None:
                    one_minus_c = e._new(f"1.0 - {c}")
                terms.append(e.mul(K2[r][col], one_minus_c))
            row.append(e.add(*terms))
        R.append(row)
    return R


def _supported(model: RobotModel, links=None) -> bool:
    """True when no joint moving ``links`` (default: every link) is floating or planar."""
    joints = model.joint_types if links is None else model.joint_types[[int(i) - 1 for i in links if i > 0]]
    return not np.any(np.isin(joints, (JointType.FLOATING, JointType.PLANAR)))


def _emit_poses(model: RobotModel, e: _Emitter, links) -> tuple[dict, dict]:
    """Emit the world poses of ``links`` (ascending, closed under anchors): symbolic R, p per link."""
    from .kinematics import _plan

    plan = _plan(model)
    R = {0: [[1.0 if r == c else 0.0 for c in range(3)] for r in range(3)]}
    p = {0: [0.0, 0.0, 0.0]}
    scalar_pos = {int(link): k for k, link in enumerate(plan.scalar_links)}
    value_of_q: dict[int, str] = {}
    trig: dict[tuple, tuple[str, str]] = {}

    def joint_value(link):
        k = scalar_pos[link]
        qi, mult, off = int(plan.scalar_q[k]), float(plan.scalar_mult[k]), float(plan.scalar_offset[k])
        if qi not in value_of_q:
            value_of_q[qi] = e._new(f"q[{qi}]")
        return e.add(e.mul(mult, value_of_q[qi]), off), (qi, mult, off)

    for i in links:  # anchors always precede their links
        if i == 0:
            continue
        a = int(plan.anchor[i])
        C = plan.C[i]
        CR, Cp = _const_matrix(C[:3, :3]), [_clean(x) for x in C[:3, 3]]
        M = e.matmul(R[a], CR)                                        # R_a C_R
        base = [e.add(x, y) for x, y in zip(e.matvec(R[a], Cp), p[a])]  # p_a + R_a C_p
        j = i - 1
        t = JointType(model.joint_types[j])
        if t == JointType.FIXED:
            R[i], p[i] = M, base
        elif t == JointType.PRISMATIC:
            value, _ = joint_value(i)
            Mu = e.matvec(M, [_clean(x) for x in model.joint_axes[j]])
            R[i] = M
            p[i] = [e.add(b, e.mul(m, value)) for b, m in zip(base, Mu)]
        else:  # revolute or continuous (the caller excluded floating and planar)
            value, key = joint_value(i)
            if key not in trig:
                trig[key] = (e._new(f"cos({value})"), e._new(f"sin({value})"))
            c, s = trig[key]
            R[i] = e.matmul(M, _rotation_symbols(e, model.joint_axes[j], c, s))
            p[i] = base
    return R, p


def _outputs(values: list, template: np.ndarray) -> tuple[list, np.ndarray, np.ndarray]:
    """Split symbols into constants (written into ``template``) and variables (names, slots)."""
    flat = template.reshape(-1)
    names, slots = [], []
    for k, x in enumerate(values):
        if isinstance(x, float):
            flat[k] = x
        else:
            names.append(x)
            slots.append(k)
    return names, np.array(slots, np.int64), flat.reshape(template.shape)


def generate_fk_source(model: RobotModel) -> GeneratedFK | None:
    """Generated FK of every link of ``model``, or None when it has joints the generator does
    not handle (floating, planar)."""
    return generate_link_poses_source(model)


#: Per-link entries of each output layout of :func:`generate_link_poses_source`.
LAYOUTS = {"4x4": (4, 4), "3x4": (3, 4), "position": (3,)}


def generate_link_poses_source(model: RobotModel, links=None, layout: str = "4x4") -> GeneratedFK | None:
    """Generated world poses of ``links`` in ``layout``, writing only what the layout holds.

    Args:
        links: link indices in output order (repeats allowed); None: every link, in order.
        layout: ``"4x4"`` homogeneous matrices ``(n, 4, 4)``; ``"3x4"`` their top three rows
            ``[R | p]`` ``(n, 3, 4)``; ``"position"`` the translations ``(n, 3)``.

    Returns:
        The kernel, computing only the supports of ``links``; None when a floating or planar
        joint moves one of them. ``links=None, layout="4x4"`` is :func:`generate_fk_source`.
    """
    n = model.n_links
    links = tuple(range(n)) if links is None else tuple(int(i) for i in links)
    needed = sorted(set().union({0}, *[set(int(i) for i in model.link_supports[k]) for k in links]))
    if not _supported(model, needed):
        return None
    e = _Emitter()
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
    return _finish(e, values, np.zeros((len(links),) + LAYOUTS[layout]))


def _finish(e: _Emitter, values: list, template: np.ndarray) -> GeneratedFK:
    """Outputs as plain names, dead lines dropped, temporaries on reusable registers."""
    values = _allocate_registers(e, [e.plain(x) for x in values])
    names, slots, template = _outputs(values, template)
    return _generated(e, values, names, slots, template)


def _generated(e: _Emitter, values: list, names: list, slots, template) -> GeneratedFK:
    """Source with two functions over the same body: ``fk`` returns the variable entries (for
    batches), ``fk_all`` every entry with constants inline (one configuration: no scatter)."""
    body = "\n".join(e.lines)
    every = ", ".join(repr(x) if isinstance(x, float) else x for x in values)
    source = (f"def fk(q, cos, sin):\n{body}\n    return [{', '.join(names)}]\n\n\n"
              f"def fk_all(q, cos, sin):\n{body}\n    return [{every}]\n")
    return GeneratedFK(source, slots, template, tuple(e.lines), tuple(values))


def generate_frames_source(model: RobotModel, frames: tuple[str, ...]) -> GeneratedFK | None:
    """Generated poses and LOCAL_WORLD_ALIGNED Jacobians of several frames, sharing their common
    chain. The result has shape ``(n_frames, 10, max(4, n_v))``: per frame, rows 0-3 / columns
    0-3 hold the pose, rows 4-9 / columns 0..n_v-1 the Jacobian. Only the frames' supports are
    computed, so a model with a floating base elsewhere still gets a kernel for its arm frames;
    None when a floating or planar joint moves one of the frames."""
    ks = [model.link_index(f) for f in frames]
    needed = sorted(set().union(*[set(int(i) for i in model.link_supports[k]) for k in ks]))
    if not _supported(model, needed):
        return None
    e = _Emitter()
    R, p = _emit_poses(model, e, needed)
    width = max(4, model.n_v)
    values = []
    for k in ks:
        J = [[0.0] * model.n_v for _ in range(6)]
        for link in model.link_supports[k][1:]:
            link = int(link)
            j = link - 1
            src = model.velocity_source_joints[j]
            if src < 0:
                continue
            col = int(model.joint_v_index[src])
            scale = float(model.mimic_multiplier[j]) if model.is_mimic[j] else 1.0
            w = e.matvec(R[link], [_clean(x) for x in model.joint_axes[j]])  # joint axis, world
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
        for r in range(3):
            values += [R[k][r][0], R[k][r][1], R[k][r][2], p[k][r]] + [0.0] * (width - 4)
        values += [0.0, 0.0, 0.0, 1.0] + [0.0] * (width - 4)
        for row in J:
            values += row + [0.0] * (width - model.n_v)
    return _finish(e, values, np.zeros((len(ks), 10, width)))


def generate_joint_poses_source(model: RobotModel) -> GeneratedFK:
    """Generated pose of every 1-DOF joint's child link in its parent link (what
    robot_state_publisher sends on /tf), as ``(n_scalar_joints, 7)`` rows
    ``[x, y, z, qx, qy, qz, qw]`` in ``model.scalar_joints`` order, with ``w >= 0`` not enforced.

    Revolute: ``q_origin ⊗ (u sin(θ/2), cos(θ/2))``, translation the origin's; prismatic: the
    origin's rotation, translation ``p_origin + R_origin u d``. Other joints do not matter, so
    every model has this kernel.
    """
    from .spatial import matrix_to_quat_xyzw

    e = _Emitter()
    values = []
    value_of_q: dict[int, str] = {}
    for j in scalar_joints(model):
        src = model.mimic_source[j] if model.is_mimic[j] else j
        qi = int(model.joint_q_index[src])
        if qi not in value_of_q:
            value_of_q[qi] = e._new(f"q[{qi}]")
        value = e.add(e.mul(float(model.mimic_multiplier[j]), value_of_q[qi]), float(model.mimic_offset[j]))
        origin = model.joint_origins[j]
        p = [_clean(x) for x in origin[:3, 3]]
        ax, ay, az, aw = (_clean(x) for x in matrix_to_quat_xyzw(origin[:3, :3]))
        u = [_clean(x) for x in model.joint_axes[j]]
        if model.joint_types[j] == JointType.PRISMATIC:
            R = _const_matrix(origin[:3, :3])
            shift = e.matvec(R, u)
            values += [e.add(pk, e.mul(sk, value)) for pk, sk in zip(p, shift)] + [ax, ay, az, aw]
            continue
        half = e.mul(0.5, value)
        c, s_ = e._new(f"cos({e.plain(half)})"), e._new(f"sin({e.plain(half)})")
        bx, by, bz, bw = e.mul(u[0], s_), e.mul(u[1], s_), e.mul(u[2], s_), c
        values += p + [
            e.add(e.mul(aw, bx), e.mul(ax, bw), e.mul(ay, bz), e.neg(e.mul(az, by))),
            e.add(e.mul(aw, by), e.neg(e.mul(ax, bz)), e.mul(ay, bw), e.mul(az, bx)),
            e.add(e.mul(aw, bz), e.mul(ax, by), e.neg(e.mul(ay, bx)), e.mul(az, bw)),
            e.add(e.mul(aw, bw), e.neg(e.mul(ax, bx)), e.neg(e.mul(ay, by)), e.neg(e.mul(az, bz)))]
    return _finish(e, values, np.zeros((len(scalar_joints(model)), 7)))


def scalar_joints(model: RobotModel) -> np.ndarray:
    """Indices of the revolute, continuous and prismatic joints (mimic ones included)."""
    return np.flatnonzero(np.isin(model.joint_types, (JointType.REVOLUTE, JointType.CONTINUOUS, JointType.PRISMATIC)))


@dataclasses.dataclass(frozen=True)
class GeneratedFK:
    """Generated source and how its outputs fill the result.

    Attributes:
        source: ``def fk(q, cos, sin)`` returning the non-constant result entries, and
            ``def fk_all(q, cos, sin)`` returning every entry of the flattened result.
        slots: where each returned entry goes in the flattened result.
        template: the result with every constant entry filled (e.g. ``(n_links, 4, 4)``).
        body: the lines shared by both functions (reading ``q[i]``, ``cos``, ``sin``).
        values: every entry of the flattened result: a float (constant) or a variable's name.
    """

    source: str
    slots: np.ndarray
    template: np.ndarray
    body: tuple = ()
    values: tuple = ()


class CompiledFK:
    """A generated kernel made callable on one configuration or a batch.

    ``single(q (n_q,))`` returns an array shaped like the template; ``batch(qb (B, n_q))``
    returns ``(B,) + template shape``. Both use the numba-compiled kernel of
    :mod:`robokin_ros.accel` once it is loaded (see :meth:`accelerate`), else numpy.
    """

    def __init__(self, model: RobotModel, generated: GeneratedFK, label: str = "fk", vector_trig: bool = False):
        self.generated = generated
        self._vector_trig = vector_trig   # numba: sines and cosines in SIMD lanes per block (accel.vector_trig_wrapper_source)
        namespace: dict = {"inf": math.inf, "nan": math.nan}   # constants that overflowed print as these
        exec(compile(generated.source, f"<robokin {label} {model.name}>", "exec"), namespace)  # noqa: S102
        self._fk, self._fk_all = namespace["fk"], namespace["fk_all"]
        self._shape = generated.template.shape
        self._flat_template = generated.template.reshape(-1)
        self._pack = struct.Struct(f"{self._flat_template.size}d").pack
        self._n_q = model.n_q
        self._accelerated = None   # the numba kernel once loaded
        self._accel_failed = False
        self._compiling: threading.Thread | None = None

    def accelerate(self) -> bool:
        """Load the numba-compiled kernel now (compiling it unless the disk cache has it).

        Returns:
            True when the accelerated kernel is in use: :func:`robokin_ros.accel.active` and
            compilation worked (a failure warns once and keeps numpy).
        """
        if not accel.active():
            return False
        if self._accelerated is None and not self._accel_failed:
            wrap = accel.vector_trig_wrapper_source if self._vector_trig else accel.wrapper_source
            source = wrap(self.generated.body, self.generated.values, self._n_q)
            try:
                self._accelerated = accel.load(source, self._n_q, self._flat_template.size, reference=self.flat)
            except Exception as error:  # noqa: BLE001 - an optional accelerator must not break FK
                self._accel_failed = True
                warnings.warn(f"robokin_ros.accel: numba kernel unavailable, using numpy ({error!r})", RuntimeWarning,
                              stacklevel=2)
        return self._accelerated is not None

    def _kernel(self, batch: int):
        """The accelerated kernel to use for ``batch`` configurations, or None (numpy).

        A batch of :data:`robokin_ros.accel.MIN_BATCH` or more starts loading the kernel in a
        background thread (compiling can take seconds: the caller, maybe an IK solve with a
        time limit, goes on with numpy meanwhile)."""
        if not accel.enabled:
            return None
        if self._accelerated is None and batch >= accel.MIN_BATCH and self._compiling is None and accel.available():
            self._compiling = threading.Thread(target=self.accelerate, name="robokin_ros accel", daemon=True)
            self._compiling.start()
        return self._accelerated

    def flat(self, q: list) -> list:
        """Every entry of the flattened result for one configuration given as a list of floats
        (pure Python: no numpy call; the inner loop of single-request IK)."""
        return self._fk_all(q, math.cos, math.sin)

    def single(self, q: np.ndarray, values: list | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """Kernel output for one configuration ``q (n_q,)``; ``values``: ``q.tolist()`` when
        the caller has it already (the numpy path runs on it); ``out``: a C-contiguous float64
        array of the template's size to write into (checked by the caller), returned reshaped."""
        kernel = self._kernel(1)
        if kernel is not None:
            flat = np.empty((1, self._flat_template.size)) if out is None else out.reshape(1, -1)
            kernel(np.ascontiguousarray(q, np.float64).reshape(1, -1), flat)
            return flat.reshape(self._shape)
        entries = self._fk_all(q.tolist() if values is None else values, math.cos, math.sin)
        if out is None:
            return self.from_flat(entries)
        flat = out.reshape(-1)
        flat[:] = entries
        return flat.reshape(self._shape)

    def from_flat(self, values: list) -> np.ndarray:
        """The result array of :meth:`flat`'s list (struct packing is the cheapest list -> ndarray
        measured here: 2x faster than ``array.array``, 3x than ``np.array``)."""
        return np.frombuffer(bytearray(self._pack(*values)), np.float64).reshape(self._shape)

    def batch(self, qb: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """Kernel outputs ``(B,) + shape`` for configurations ``qb (B, n_q)``; ``out``: a
        C-contiguous float64 ``(B, size)`` array to write into (checked by the caller).

        numpy: works through the batch in chunks of :data:`CHUNK` configurations, so the
        generated code's temporaries stay cache-sized and peak memory stays near the output's.
        """
        B, size = qb.shape[0], self._flat_template.size
        if out is None:
            out = np.empty((B, size))
        kernel = self._kernel(B)
        if kernel is not None:
            kernel(np.ascontiguousarray(qb, np.float64), out)
            return out.reshape((B,) + self._shape)
        qT = np.ascontiguousarray(qb.T)
        components = np.empty((size, min(B, CHUNK)))   # component-first scratch, reused per chunk
        components[:] = self._flat_template[:, None]
        for start in range(0, B, CHUNK):
            stop = min(B, start + CHUNK)
            view = components[:, :stop - start]
            for slot, entry in zip(self.generated.slots, self._fk(qT[:, start:stop], np.cos, np.sin)):
                view[slot] = entry
            for column in range(0, size, 64):  # blocked transpose: ~20 % faster than one strided copy
                out[start:stop, column:column + 64] = view[column:column + 64].T
        return out.reshape((B,) + self._shape)


#: Configurations per chunk of a batched generated kernel.
CHUNK = 2048

_COMPILED: weakref.WeakKeyDictionary[RobotModel, dict] = weakref.WeakKeyDictionary()


def _cached(model: RobotModel, key, build, vector_trig: bool = False):
    per_model = _COMPILED.get(model)
    if per_model is None:
        per_model = _COMPILED[model] = {}
    if key not in per_model:
        generated = build()
        per_model[key] = None if generated is None else CompiledFK(model, generated, str(key), vector_trig)
    return per_model[key]


def compiled_fk(model: RobotModel) -> CompiledFK | None:
    """The model's generated FK of every link (built on first use, cached per model), or None."""
    return _cached(model, "fk", lambda: generate_fk_source(model), vector_trig=True)


def compiled_link_poses(model: RobotModel, links: tuple[int, ...] | None = None, layout: str = "4x4") -> CompiledFK | None:
    """The generated poses of ``links`` (link indices, None: every link) in ``layout`` (see
    :func:`generate_link_poses_source`), built on first use and cached per model, or None.
    Every link in ``"4x4"`` is :func:`compiled_fk`."""
    if links is None and layout == "4x4":
        return compiled_fk(model)
    return _cached(model, ("link poses", layout, links), lambda: generate_link_poses_source(model, links, layout),
                   vector_trig=True)


def compiled_joint_poses(model: RobotModel) -> CompiledFK:
    """The generated child-in-parent poses of the 1-DOF joints; see :func:`generate_joint_poses_source`."""
    return _cached(model, "joint poses", lambda: generate_joint_poses_source(model))


def compiled_frames(model: RobotModel, frames) -> CompiledFK | None:
    """The generated poses + Jacobians kernel of a tuple of frames (cached per model and
    frames), or None; see :func:`generate_frames_source`."""
    frames = tuple(frames)
    for f in frames:
        model.link_index(f)
    return _cached(model, ("frames", frames), lambda: generate_frames_source(model, frames))
