"""A robot's IK step as straight-line source: the generated ``iteration`` of one solver.

A function generated per :class:`~robokin_ros.ik.solver.Solver` (tips, tolerances, weights,
free joints and bounds folded in as constants) reads the kernel's flat output (``flat``: per tip
a block of 10 rows of ``width`` values, rows 0-2 ``[R | p]``, rows 4-9 the LOCAL_WORLD_ALIGNED
Jacobian, see :func:`robokin_ros.kernels.fk_codegen.generate_frames_source`). It is compiled by
numba into the solver's generated module (:mod:`robokin_ros.ik.compiled_loop`) and called by the
one compiled outer loop (:func:`robokin_ros.ik.generic_loop.loop`).
"""

from __future__ import annotations

import math

from .lm import DAMPING_FLOOR, damped_step_lines, twist_lines


def step_source(s) -> str:
    """Source of ``iteration(q, t, mu, qn, err, context)`` for one problem of solver ``s`` (the
    solver must move something: free joints and a weighted row) on float64 arrays: ``q`` the
    configuration, ``t`` the targets' components (per tip its rotation row-major, then its
    position); ``context`` unused (the chain step's data, :mod:`robokin_ros.ik.generic_loop`).

    Returns the weighted cost ``½‖r‖²`` at ``q``, with the configuration after one step damped by
    ``λ = mu · cost + DAMPING_FLOOR`` written into ``qn (n_q,)`` (a coordinate at a bound the
    gradient pushes outwards is held, the others are clamped into the bounds, unbounded continuous
    ones wrapped); or -1.0 when every tip is within tolerance, with the worst tip position and
    rotation errors written into ``err (2,)``.
    """
    tol, nt, n_q = s.tol, s.n_tips, s.model.n_q
    m, n = len(s.lm_rows), len(s.free)
    if m == 0 or n == 0:
        raise ValueError("a compiled iteration needs free joints and a weighted row")
    names = [[f"b{k}_{i}{j}" for i in range(3) for j in range(3)] + [f"u{k}_{i}" for i in range(3)] for k in range(nt)]
    lines = ["def iteration(q, t, mu, qn, err, context):", "    F = flat(q)",
             f"    {''.join(x + ', ' for row in names for x in row)}= t"]
    for k in range(nt):
        lines += twist_lines(k, s.width, tol.world)
    lines += _residual_lines(tol)
    norm = lambda k, axes: "sqrt(" + " + ".join(f"d{k}_{i} * d{k}_{i}" for i in axes) + ")"  # noqa: E731
    errors = (f"max({', '.join(norm(k, range(3)) for k in range(nt))}, 0.0), "
              f"max({', '.join(norm(k, range(3, 6)) for k in range(nt))}, 0.0)")
    lines += [f"    if {_within_tolerance(tol, nt)}:", f"        err[0], err[1] = {errors}", "        return -1.0"]
    lines += [f"    rw{a} = " + (f"r{j}" if s.weights[a] == 1.0 else f"{s.weights[a]!r} * r{j}")
              for a, j in enumerate(s.lm_rows)]
    lines.append("    cost = 0.5 * (" + " + ".join(f"rw{a} * rw{a}" for a in range(m)) + ")")
    lines.append(f"    {''.join(f'q{i}, ' for i in range(n_q))}= q")
    lines += _jacobian_lines(s)
    lines += _hold_lines(s)
    lines.append(f"    damping = mu * cost + {DAMPING_FLOOR!r}")
    lines += damped_step_lines(m, n)
    out, step = _step_lines(s)
    lines += step
    lines += [f"    qn[{i}] = {x}" for i, x in enumerate(out)] + ["    return cost"]
    return "\n".join(lines) + "\n"


def _residual_lines(tol) -> list:
    """Lines of the residual rows ``r{j}``: each constrained axis's error outside its dead band."""
    lines = []
    for j, (k, i, _, box) in enumerate(tol.rows):
        d = f"d{k}_{i}"
        lines.append(f"    r{j} = {d}" if box == 0.0 else
                     f"    r{j} = {d} - {box!r} if {d} > {box!r} else {d} + {box!r} if {d} < {-box!r} else 0.0")
    return lines


def _within_tolerance(tol, nt: int) -> str:
    """The expression true when every tip's residual is within the tolerances."""
    checks = []
    for k in range(nt):
        for kind, limit in ((range(3), tol.position ** 2), (range(3, 6), tol.rotation ** 2)):
            rows = [j for j, row in enumerate(tol.rows) if row[0] == k and row[1] in kind]
            if rows:
                checks.append("(" + " + ".join(f"r{j} * r{j}" for j in rows) + f") <= {limit!r}")
    return " and ".join(checks) or "True"


def _jacobian_lines(s) -> list:
    """Lines of the weighted Jacobian rows ``j{a}_{c}`` in the residual's axes."""
    tol, w, n = s.tol, s.width, len(s.free)
    columns = s.problem.free_v.tolist()
    contiguous = columns == list(range(columns[0], columns[0] + n))
    lines = []
    for a, j in enumerate(s.lm_rows):
        k, i, _, _ = tol.rows[j]
        o, weight = 10 * w * k, s.weights[a]
        row = [f"j{a}_{c}" for c in range(n)]
        if tol.world and contiguous:  # one slice of the kernel's row
            start = o + (4 + i) * w + columns[0]
            lines.append(f"    {''.join(x + ', ' for x in row)}= F[{start}:{start + n}]")
            if weight != 1.0:
                lines += [f"    {x} *= {weight!r}" for x in row]
            continue
        scale = "" if weight == 1.0 else f"{weight!r} * "
        for c, v in enumerate(columns):
            if tol.world:
                lines.append(f"    j{a}_{c} = {scale}F[{o + (4 + i) * w + v}]")
            else:  # column i % 3 of R_t against the three world rows of its kind
                top = o + (4 + 3 * (i // 3)) * w + v
                terms = " + ".join(f"b{k}_{l}{i % 3} * F[{top + l * w}]" for l in range(3))
                lines.append(f"    j{a}_{c} = {scale}({terms})")
    return lines


def _hold_lines(s) -> list:
    """Lines holding a coordinate at a bound the gradient pushes outwards (its column zeroed)."""
    m, lines = len(s.lm_rows), []
    for c, (_, (i, lo, hi)) in enumerate(s.free):
        bounds = ((f"q{i} <= {lo!r}", "g > 0.0", lo), (f"q{i} >= {hi!r}", "g < 0.0", hi))
        sides = [(at, push) for at, push, bound in bounds if math.isfinite(bound)]
        if not sides:
            continue
        lines += [f"    if {' or '.join(at for at, _ in sides)}:",
                  "        g = " + " + ".join(f"j{a}_{c} * rw{a}" for a in range(m)),
                  "        if " + " or ".join(f"({at} and {push})" for at, push in sides) + ":",
                  "            " + " = ".join(f"j{a}_{c}" for a in range(m)) + " = 0.0"]
    return lines


def _step_lines(s) -> tuple[list, list]:
    """The next configuration's names (``q{i}`` or ``z{c}``) and the lines of the clamped,
    wrapped step."""
    out = [f"q{i}" for i in range(s.model.n_q)]
    wrap, lines = set(s.wrap.tolist()), []
    for c, (_, (i, lo, hi)) in enumerate(s.free):
        x = f"z{c}"
        lines.append(f"    {x} = q{i} + dx{c}")
        if math.isfinite(lo):  # (written so that a NaN step lands on the bound)
            lines.append(f"    if not {x} >= {lo!r}:\n        {x} = {lo!r}")
        if math.isfinite(hi):
            lines.append(f"    if {x} > {hi!r}:\n        {x} = {hi!r}")
        if c in wrap:
            lines.append(f"    {x} = {math.pi!r} - ({math.pi!r} - {x}) % {2 * math.pi!r}")
        out[i] = x
    return out, lines
