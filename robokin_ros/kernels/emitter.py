"""The symbolic emitter of the generated kernels: straight-line Python source over scalar symbols.

Every per-robot kernel (forward kinematics, Jacobians, dynamics, the float iteration of IK) is
written by an :class:`Emitter`: it folds constants, carries signs instead of emitting negations
and reuses common subexpressions; :func:`allocate_registers` then drops dead lines and renames
temporaries onto reusable registers in a deterministic order (the same source in every process,
so compiled code can be cached on disk by the source's hash). :func:`finish` turns an emitter
and its output values into a :class:`GeneratedKernel`: the body and the output entries that
:mod:`robokin_ros.kernels.numba_source` wraps into a numba module (the generated code runs only
compiled; without numba the numpy recursions, the oracle, serve).
"""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np

from ..model import JointType, RobotModel

#: Numbers within this of 0 or ±1 are folded to exact values.
TOLERANCE = 1e-15

class Emitter:
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

    def assign(self, expr: str) -> str:
        """A variable holding ``expr`` (the one that already does, if any)."""
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
        return self.assign(x)

    def mul(self, a, b):
        if self._const(a) and self._const(b):
            return a * b
        if self._const(b):
            a, b = b, a
        if self._const(a):
            if abs(a) < TOLERANCE:
                return 0.0
            sign, name = self._split(b)
            sign *= math.copysign(1.0, a)
            if abs(a) == 1.0:
                return self._signed(sign, name)
            return self._signed(sign, self.assign(f"{abs(a)!r} * {name}"))
        (sa, na), (sb, nb) = self._split(a), self._split(b)
        return self._signed(sa * sb, self.assign(f"{na} * {nb}"))

    def add(self, *terms):
        const = float(sum(t for t in terms if self._const(t)))
        names = [self._split(t) for t in terms if not self._const(t)]
        pos = [n for sign, n in names if sign > 0]
        neg = [n for sign, n in names if sign < 0]
        if not names:
            return const
        if abs(const) <= TOLERANCE:
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
        return self.assign(expr)

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


def allocate_registers(e: Emitter, values: list) -> list:
    """Drop dead assignments and rename temporaries onto reusable registers, in place.

    A register is reused once its value has been read for the last time (fewer live values for
    the compiler to keep). Returns ``values`` renamed.
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


def clean(x: float) -> float:
    """Snap numbers within 1e-15 of 0 or ±1 (rpy of multiples of pi/2) to exact values."""
    for target in (0.0, 1.0, -1.0):
        if abs(x - target) < TOLERANCE:
            return target
    return float(x)


def const_matrix(M) -> list:
    return [[clean(M[r][c]) for c in range(3)] for r in range(3)]


def rotation_symbols(e: Emitter, axis, c: str, s: str):
    """Symbolic Rot(axis, θ) = I + s K + (1 - c) K² from symbols c = cos θ, s = sin θ."""
    u = [clean(x) for x in axis]
    K = [[0.0, -u[2], u[1]], [u[2], 0.0, -u[0]], [-u[1], u[0], 0.0]]
    K2 = const_matrix(np.array(K) @ np.array(K))
    one_minus_c = None
    R = []
    for r in range(3):
        row = []
        for col in range(3):
            if r == col and K2[r][col] == -1.0:  # unit axis along another coordinate: 1 - (1 - c) = c
                row.append(c)
                continue
            terms = [1.0 if r == col else 0.0, e.mul(K[r][col], s)]
            if abs(K2[r][col]) > TOLERANCE:
                if one_minus_c is None:
                    one_minus_c = e.assign(f"1.0 - {c}")
                terms.append(e.mul(K2[r][col], one_minus_c))
            row.append(e.add(*terms))
        R.append(row)
    return R


#: Most links a generated kernel covers. Its source grows with the links and Python's compiler
#: with the source (a 6,400-link chain: 12.6 s and 2.1 GB for one FK kernel); larger models use
#: the generic kernels, whose memory is linear. The largest real robot of the corpus has 113 links.
MAX_GENERATED_LINKS = 1000


def support_links(model: RobotModel, links) -> list[int]:
    """The root, ``links`` (indices) and all their ancestors, sorted: what a kernel of ``links``
    computes. A walk up the parents that stops at a link already seen, linear in the answer
    (``model.link_supports`` holds every link's ancestors: quadratic on a deep chain)."""
    parents, seen = model.link_parents, {0}
    for k in links:
        k = int(k)
        while k not in seen:
            seen.add(k)
            k = int(parents[k])
    return sorted(seen)


def supported(model: RobotModel, links=None) -> bool:
    """True when no joint moving ``links`` (default: every link) is floating or planar and they
    are at most :data:`MAX_GENERATED_LINKS`."""
    if (model.n_links if links is None else len(links)) > MAX_GENERATED_LINKS:
        return False
    joints = model.joint_types if links is None else model.joint_types[[int(i) - 1 for i in links if i > 0]]
    return not np.any(np.isin(joints, (JointType.FLOATING, JointType.PLANAR)))


def fill_template(values: list, template: np.ndarray) -> np.ndarray:
    """``template`` with the constant entries of ``values`` (floats, in flat order) written in."""
    flat = template.reshape(-1)
    for k, x in enumerate(values):
        if isinstance(x, float):
            flat[k] = x
    return flat.reshape(template.shape)


def finish(e: Emitter, values: list, template: np.ndarray) -> GeneratedKernel:
    """Outputs as plain names, dead lines dropped, temporaries on reusable registers."""
    values = allocate_registers(e, [e.plain(x) for x in values])
    return GeneratedKernel(fill_template(values, template), tuple(e.lines), tuple(values))


@dataclasses.dataclass(frozen=True)
class GeneratedKernel:
    """A generated kernel's straight-line body and how its outputs fill the result.

    Attributes:
        template: the result with every constant entry filled (e.g. ``(n_links, 4, 4)``).
        body: the lines ``    name = expr`` (reading ``q[i]``, ``cos``, ``sin``), wrapped into a
            numba module by :mod:`robokin_ros.kernels.numba_source`.
        values: every entry of the flattened result: a float (constant) or a variable's name.
    """

    template: np.ndarray
    body: tuple = ()
    values: tuple = ()
