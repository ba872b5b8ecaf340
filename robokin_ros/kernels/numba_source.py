"""Source generation of the numba modules that wrap a generated kernel's straight-line body.

A generated kernel (:mod:`robokin_ros.kernels.fk_codegen`, :mod:`robokin_ros.kernels.dynamics_codegen`)
is a list of lines ``    name = expr`` reading ``q[i]``, ``cos`` and ``sin``, and per output
entry a float constant or the variable holding it. This module wraps it into the text of a
numba module that :func:`robokin_ros.kernels.accel.load` compiles (and caches on disk):

- :func:`wrapper_source`: ``kernel(qb (B, n_q), ..., out (B, size), claims)``, a loop over
  configurations writing each configuration's entries (constants included) straight into the
  configuration-major output: one pass over the output, no numpy temporaries; every thread of
  a batched call runs it, taking rows by ``claims`` (:mod:`robokin_ros.kernels.claims`);
- :func:`vector_trig_wrapper_source`: the same with the joint angles' sines and cosines
  computed per block of :data:`BLOCK` configurations first, in SIMD lanes (:data:`SINCOS_SOURCE`),
  instead of two libm calls per joint inside the loop (batched FK of a 6-DOF arm 2.5-3.5x
  faster here); the forward-kinematics kernels use it, the pose + Jacobian kernels of IK and
  :func:`robokin_ros.jacobian` keep :func:`wrapper_source`;
- :func:`single_source`: appended to either, ``single(q, ..., out) -> status`` over 1-D
  arrays, no loop and no copy, checking lengths and finiteness in the same call
  (:class:`robokin_ros.Kinematics` and the public functions' single calls go straight to it).

Results agree with the numpy recursions (the oracle) to rounding; the numba modules are checked on
loading against their own source run uncompiled (:func:`robokin_ros.kernels.accel.check_single`).
"""

from __future__ import annotations

import math
import re

#: Bumped when the wrapper's layout changes (part of the hashed source, so old cache entries
#: are never loaded for a new layout).
FORMAT = 5


def with_stores(body, values, indent: str, early: bool) -> list[str]:
    """The straight-line ``body`` (lines ``    name = expr``) re-indented by ``indent``, with the
    stores ``o[k] = values[k]``: all after it, or (``early``) each variable's right after its
    last assignment (an output's variable is never reassigned after it: its value stays live
    to the end), constants after the body.

    Early stores let each output value die once stored instead of staying live, spilled to
    the stack, until the end: Talos' batched FK of every link 1.4x faster here (0.88 -> 0.60
    µs per configuration into a reused array). They write ``out`` while inputs are still being
    read, so ``out`` must not overlap the inputs.
    """
    last = {}
    if early:
        for n, line in enumerate(body):
            last[line.strip().split(" = ", 1)[0]] = n
    after: dict[int, list[str]] = {}
    tail = []
    for k, x in enumerate(values):
        if isinstance(x, float):
            tail.append(f"{indent}    o[{k}] = {x!r}")
        elif x in last:
            after.setdefault(last[x], []).append(f"{indent}    o[{k}] = {x}")
        else:
            tail.append(f"{indent}    o[{k}] = {x}")
    lines = []
    for n, line in enumerate(body):
        lines.append(indent + line)
        lines += after.get(n, [])
    return lines + tail


def wrapper_source(body, values, input_sizes, early_stores: bool = False) -> str:
    """numba module source defining ``kernel(x_0 (B, n_0), ..., out (B, len(values)), claims)``:
    every thread of a batched call runs it at once, taking rows by ``claims``
    (:mod:`robokin_ros.kernels.claims`: ``claims[1]`` rows at a time off ``claims[0]``, the rows
    written added to ``claims[2]``), and each returns once every row is written.

    Args:
        body: the generated lines (indented by 4), reading ``q[i]``, ``cos`` and ``sin``:
            ``q`` the inputs' rows side by side.
        values: per output entry, a float constant or the name of the variable holding it.
        input_sizes: the inputs' widths (an int: one input).
        early_stores: store each output as soon as it is computed (see :func:`with_stores`).
    """
    sizes = (input_sizes,) if isinstance(input_sizes, int) else tuple(input_sizes)
    names = ["qb"] + [f"x{k}" for k in range(1, len(sizes))]
    reads = _reads(sizes, ["q"] + [f"row{k}" for k in range(1, len(sizes))])   # (the body's registers: r<k>)
    checks = [f"{x}.shape[1] != {n} or {x}.shape[0] != B" for x, n in zip(names, sizes)]
    lines = [*_HEADER, f"# format {FORMAT}", "", "", _JIT,
             f"def kernel({', '.join(names)}, out, claims):",
             "    B = out.shape[0]",
             f"    if out.shape[1] != {len(values)} or {' or '.join(checks)}:",
             "        raise ValueError('kernel: bad shapes')",
             *_CLAIM_LOOP_HEAD,
             "        for b in range(start, stop):",
             "            o = out[b]",
             "            q = qb[b]"]
    lines += [f"            row{k} = {x}[b]" for k, x in enumerate(names[1:], 1)]
    lines += with_stores([reads(line) for line in body], values, "        ", early_stores)
    lines += _CLAIM_LOOP_TAIL
    return "\n".join(lines) + "\n"


_JIT = "@numba.njit(cache=True, nogil=True, error_model='numpy')"
#: The compiled helpers the generated modules import, ``(module, name)``: real imports of
#: compiled functions, never their text (the module needs numba, as the generated modules do,
#: so it is named here rather than imported; test/core/kernels/test_generated_imports.py
#: resolves every import of a generated module).
SHARED_IMPORTS = (("robokin_ros.kernels.claims", "fetch_add"),)
_HEADER = ["# generated by robokin_ros.accel; safe to delete (rebuilt on demand)",
           "from math import cos, inf, nan, sin",
           "import numba",
           "import numpy as np",
           *(f"from {module} import {name}" for module, name in SHARED_IMPORTS)]
#: The batch kernels' loop over the rows they claim (``start:stop``, at the indent of 8), and
#: its end: the rows written counted, then the wait for the other threads' last rows.
_CLAIM_LOOP_HEAD = ["    step, done = max(claims[1], 1), 0",
                    "    while True:",
                    "        start = fetch_add(claims, 0, step)",
                    "        if start >= B:",
                    "            break",
                    "        stop = min(start + step, B)"]
_CLAIM_LOOP_TAIL = ["        done += stop - start",
                    "    fetch_add(claims, 2, done)",
                    "    while fetch_add(claims, 2, 0) < B:   # (the other threads' last rows)",
                    "        pass"]


def _reads(sizes: tuple[int, ...], rows: list[str]):
    """A function rewriting a body line's ``q[i]`` reads of the inputs side by side into reads of
    input ``k``'s row (named ``rows[k]``)."""
    starts = [sum(sizes[:k]) for k in range(len(sizes))]

    def reads(line: str) -> str:
        def read(match):
            i = int(match.group(1))
            k = max(k for k, start in enumerate(starts) if start <= i)
            return f"{rows[k]}[{i - starts[k]}]"
        return _Q_READ.sub(read, line)
    return reads


#: Configurations per block of :func:`vector_trig_wrapper_source` (its scratch: 3 x n_trig x BLOCK floats).
BLOCK = 128

_REGISTER = re.compile(r"\br\d+\b")
_TRIG_CALL = re.compile(r"(cos|sin)\((r\d+)\)")

#: Vectorisable sin and cos of a contiguous row (fdlibm's ``__kernel_sin`` / ``__kernel_cos``
#: polynomials after a three-part Cody-Waite reduction by pi/2, quadrant chosen without
#: branches, so LLVM runs it in SIMD lanes; within 2e-16 of libm for |x| < 1e5, and libm's own
#: values elsewhere, NaN and inf included).
SINCOS_SOURCE = """
_P1, _P2, _P3 = 1.57079632673412561417e+00, 6.07710050630396597660e-11, 2.02226624871116645580e-21
_INVPIO2 = 6.36619772367581382433e-01
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11


@numba.njit(cache=True, nogil=True, error_model='numpy')
def sincos(x, c, s):
    for i in range(x.shape[0]):
        xi = x[i]
        n = np.floor(xi * _INVPIO2 + 0.5)
        r = ((xi - n * _P1) - n * _P2) - n * _P3
        z = r * r
        sr = r + r * z * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))))
        hz = 0.5 * z
        w = 1.0 - hz
        cr = w + (((1.0 - w) - hz) + z * z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6))))))
        k = n - 4.0 * np.floor(n * 0.25)
        odd = k == 1.0 or k == 3.0
        sv = cr if odd else sr
        cv = sr if odd else cr
        s[i] = -sv if k >= 2.0 else sv
        c[i] = -cv if (k == 1.0 or k == 2.0) else cv
    for i in range(x.shape[0]):
        if not abs(x[i]) < 1e5:
            c[i] = cos(x[i])
            s[i] = sin(x[i])
"""


def split_trig(body) -> tuple[list[str], list[str]]:
    """``body`` with each ``cos`` / ``sin`` of a value computed from ``q`` alone replaced by a
    read of ``tc[j, i]`` / ``ts[j, i]``, and the expressions (over ``q``, the body's own
    operations in its order, so the values are bit-identical) of those arguments, by ``j``."""
    over_q: dict[str, str] = {}   # register -> its current value as an expression over q only
    arguments: list[str] = []
    slot: dict[str, int] = {}
    lines = []
    for line in body:
        target, expr = line.strip().split(" = ", 1)
        call = _TRIG_CALL.fullmatch(expr)
        if call is not None and call.group(2) in over_q:
            argument = over_q[call.group(2)]
            if argument not in slot:
                slot[argument] = len(arguments)
                arguments.append(argument)
            lines.append(f"    {target} = {'tc' if call.group(1) == 'cos' else 'ts'}[{slot[argument]}, i]")
            over_q.pop(target, None)
            continue
        registers = _REGISTER.findall(expr)
        if "(" not in expr and all(r in over_q for r in registers):
            over_q[target] = "(" + _REGISTER.sub(lambda m: over_q[m.group(0)], expr) + ")"
        else:
            over_q.pop(target, None)
        lines.append(line)
    return lines, arguments


def vector_trig_wrapper_source(body, values, n_q: int) -> str:
    """Like :func:`wrapper_source`, with the ``cos`` / ``sin`` calls taken out of the loop: per
    block of :data:`BLOCK` configurations, every joint angle is computed first, then its sines
    and cosines in SIMD lanes (:data:`SINCOS_SOURCE`; libm's scalar calls were half of an
    arm's FK), then the straight-line body reads them, storing each output as soon as it is
    computed (:func:`with_stores`). Falls back to :func:`wrapper_source` (early stores too)
    when the body has no trigonometry of ``q``."""
    lines, arguments = split_trig(body)
    if not arguments:
        return wrapper_source(body, values, n_q, early_stores=True)
    head = [*_HEADER, f"# format {FORMAT} vector trig", SINCOS_SOURCE, "", _JIT,
            "def kernel(qb, out, claims):",
            "    B = out.shape[0]",
            f"    if qb.shape[1] != {n_q} or out.shape[1] != {len(values)} or qb.shape[0] != B:",
            "        raise ValueError('kernel: bad shapes')",
            f"    scratch = np.empty((3, {len(arguments)}, min(B, {BLOCK})))",
            "    ta, tc, ts = scratch[0], scratch[1], scratch[2]",
            *_CLAIM_LOOP_HEAD,
            f"        for first in range(start, stop, {BLOCK}):",
            f"            m = min({BLOCK}, stop - first)",
            "            for i in range(m):",
            "                q = qb[first + i]"]
    head += [f"                ta[{j}, i] = {a}" for j, a in enumerate(arguments)]
    head += [f"            for j in range({len(arguments)}):",
             "                sincos(ta[j, :m], tc[j, :m], ts[j, :m])",
             "            for i in range(m):",
             "                q = qb[first + i]",
             "                o = out[first + i]"]
    head += with_stores(lines, values, "            ", early=True)
    head += _CLAIM_LOOP_TAIL
    return "\n".join(head) + "\n"


_Q_READ = re.compile(r"\bq\[(\d+)\]")


def single_source(body, values, input_sizes: tuple[int, ...], shape: tuple[int, ...], mimic_terms=(),
                  early_stores: bool = False) -> str:
    """numba source (to append to a :func:`wrapper_source` or :func:`vector_trig_wrapper_source`
    module) of ``single(x_0, ..., x_k, out) -> status``: one configuration, straight-line, no
    copy of the inputs, no allocation. Sines and cosines are libm's scalar calls: for one
    configuration they beat :func:`vector_trig_wrapper_source`'s SIMD blocks (whose scratch
    costs an allocation; UR5 FK 0.36 vs 0.45 µs per call here, Talos no faster either).

    The inputs are 1-D C-contiguous float64 arrays of ``input_sizes`` (the body's ``q[i]``
    reads them in order, concatenated); ``out`` is a C-contiguous float64 array of ``shape``,
    every entry written. Compiled eagerly for exactly these types (any other argument raises
    TypeError instead of compiling a specialisation). Status: 0 ``out`` filled; 1 a NaN or inf
    input, or a mimic joint value ``multiplier * q[index] + offset`` (``mimic_terms``, as
    :attr:`RobotModel.mimic_terms`) that overflows; 2 a wrong length or shape (``out`` untouched
    unless 0). With ``early_stores`` (:func:`with_stores`) ``out`` must not overlap an input;
    without, it may (every input is read before ``out`` is written).
    """
    args = ["q"] + [f"x{k}" for k in range(1, len(input_sizes))]
    reads = _reads(tuple(input_sizes), args)
    checks = [f"{x}.shape[0] != {n}" for x, n in zip(args, input_sizes)]
    checks += [f"out.shape[{k}] != {n}" for k, n in enumerate(shape)]
    out_type = "float64[" + ", ".join([":"] * (len(shape) - 1) + ["::1"]) + "]"
    signature = f"int64({', '.join(['float64[::1]'] * len(args) + [out_type])})"
    size = math.prod(shape)
    lines = ["", "", f"@numba.njit({signature!r}, cache=True, nogil=True, error_model='numpy')",
             f"def single({', '.join(args)}, out):",
             f"    if {' or '.join(checks)}:",
             "        return 2",
             "    s = 0.0"]
    for x, n in zip(args, input_sizes):
        lines += [f"    for k in range({n}):", f"        s += {x}[k] * 0.0"]   # inf * 0 and nan * 0 are nan
    lines += [f"    s += ({multiplier!r} * q[{index}] + {offset!r}) * 0.0" for _, index, multiplier, offset
              in mimic_terms]
    lines += ["    if s != 0.0:", "        return 1",
              "    o = out" if len(shape) == 1 else f"    o = out.reshape({size})"]
    lines += with_stores([reads(line) for line in body], values, "", early_stores)
    lines.append("    return 0")
    return "\n".join(lines) + "\n"
