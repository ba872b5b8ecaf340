"""Per-robot specialised dynamics as straight-line source: the emission of RNEA (and its gravity /
nonlinear-effects cases), CRBA, the centre of mass and forward dynamics (``M a = tau - h`` by a
sparse ``Lᵀ D L`` factorisation) through the :class:`~robokin_ros.kernels.emitter.Emitter`.

The generated code follows Featherstone's algorithms in body (local) coordinates, where every
body's spatial inertia and every joint's motion subspace are constants: only the joint
transforms depend on ``q``. The emitter folds every constant: fixed joints are merged (their
links' inertials added to the moving ancestor, parallel-axis), axis-aligned joints touch only the
entries their rotation moves, massless bodies vanish, and inputs that are known to be zero (``v``
and ``a`` for the gravity torques, ``a`` for the nonlinear effects) or constant (standard
gravity) are folded away.

:mod:`robokin_ros.kernels.compiled_dynamics` turns the emitted values into a callable kernel;
:mod:`robokin_ros.kernels.dynamics_codegen` builds and keeps them per model. The generic
compiled kernels (:mod:`robokin_ros.kernels.generic_dynamics_numba`) run the same arithmetic
over the robot given as arrays.
"""

from __future__ import annotations

import re

import numpy as np

from ..model import JointType, RobotModel
from .emitter import Emitter, clean, const_matrix, rotation_symbols
from .plan import dynamics_tree


# ---------------------------------------------------------------------------------------- symbolic helpers
def cross(e: Emitter, a, b) -> list:
    return [e.sub(e.mul(a[1], b[2]), e.mul(a[2], b[1])),
            e.sub(e.mul(a[2], b[0]), e.mul(a[0], b[2])),
            e.sub(e.mul(a[0], b[1]), e.mul(a[1], b[0]))]


def vadd(e: Emitter, *vectors) -> list:
    return [e.add(*xs) for xs in zip(*vectors)]


def scale(e: Emitter, vector, s) -> list:
    return [e.mul(x, s) for x in vector]


def transpose(M) -> list:
    return [[M[c][r] for c in range(3)] for r in range(3)]


class Body:
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
        I_o = unpack(I_c) + mass * (float(c @ c) * np.eye(3) - np.outer(c, c))
        self.com, self.I_c = [clean(x) for x in com], [clean(x) for x in I_c]
        self.h, self.I_o = [clean(mass * x) for x in com], pack(I_o)


SYM = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))


def pack(S) -> list:
    return [clean(S[i, k]) for i, k in SYM]


def unpack(s) -> np.ndarray:
    return np.array([[s[0], s[3], s[4]], [s[3], s[1], s[5]], [s[4], s[5], s[2]]])


def emit_bodies(model: RobotModel, e: Emitter) -> list:
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
            E = e.matmul(rotation_symbols(e, [-x for x in u], c, s), transpose(CR))   # Rot(u, θ)ᵀ C_Rᵀ
            r = Cp
        else:
            E = transpose(CR)
            r = [e.add(pc, e.mul(a, value)) for pc, a in zip(Cp, [clean(x) for x in np.array(CR) @ np.array(u)])]
        src = int(model.velocity_source_joints[j])
        bodies.append(Body(parent=int(tree.parent[b]), E=E, r=r, u=u, revolute=revolute,
                            column=int(model.joint_v_index[src]), scale=mult, mass=float(tree.mass[b]),
                            com=tree.com[b].tolist(), I_c=pack(tree.I_com[b])))
    return bodies


def sym_apply(e: Emitter, S, x) -> list:
    """``S x`` for a symmetric matrix stored as ``(xx, yy, zz, xy, xz, yz)``."""
    return [e.dot([S[0], S[3], S[4]], x), e.dot([S[3], S[1], S[5]], x), e.dot([S[4], S[5], S[2]], x)]


def body_force(e: Emitter, body: Body, vl, w, al, aw) -> tuple[list, list]:
    """Newton–Euler: the force ``[f; n]`` (moment about the body origin) that gives the body the
    motion ``v = [vl; w]``, ``a = [al; aw]`` (spatial, body frame): ``I a + v ×* I v``.

    With the centre of mass ``c``: ``f = m (al + aw × c + w × (vl + w × c))`` (the classical
    acceleration of ``c``), ``n = c × f + I_c aw + w × I_c w``.
    """
    c = body.com
    v_com = vadd(e, vl, cross(e, w, c))
    f = scale(e, vadd(e, al, cross(e, aw, c), cross(e, w, v_com)), body.mass)
    n = vadd(e, cross(e, c, f), sym_apply(e, body.I_c, aw), cross(e, w, sym_apply(e, body.I_c, w)))
    return f, n


def to_parent(e: Emitter, body: Body, f, n) -> tuple[list, list]:
    """A force ``[f; n]`` in body coordinates expressed in the parent body's coordinates."""
    R = transpose(body.E)
    fp = e.matvec(R, f)
    return fp, vadd(e, e.matvec(R, n), cross(e, body.r, fp))


def joint_dot(e: Emitter, body: Body, f, n):
    """``Sᵀ [f; n]``: the joint's share of a force."""
    return e.dot(body.u, n if body.revolute else f)


# ---------------------------------------------------------------------------------------- generators
class Inputs:
    """Symbols of the generated function's inputs, read in order from its one argument ``q``
    (the configuration first, then the further inputs concatenated)."""

    def __init__(self, e: Emitter, model: RobotModel):
        self.e, self.offset = e, model.n_q

    def read(self, n: int) -> list:
        symbols = [self.e.assign(f"q[{self.offset + k}]") for k in range(n)]
        self.offset += n
        return symbols


def gravity_symbols(inputs: Inputs, gravity) -> list:
    """The gravity vector: its constant value, or (``gravity`` None) three inputs."""
    return inputs.read(3) if gravity is None else [float(x) for x in gravity]


def rnea_values(e: Emitter, bodies: list, n_v: int, v: list, a: list, g: list) -> list:
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
        vl = e.matvec(body.E, vadd(e, vl, cross(e, w, body.r)))
        w = e.matvec(body.E, w)
        al = e.matvec(body.E, vadd(e, al, cross(e, aw, body.r)))
        aw = e.matvec(body.E, aw)
        uqd, uqdd = scale(e, body.u, qd), scale(e, body.u, qdd)
        if body.revolute:                                   # S = [0; u]; v × (S q̇) = [vl × u q̇; ω × u q̇]
            w = vadd(e, w, uqd)
            al = vadd(e, al, cross(e, vl, uqd))
            aw = vadd(e, aw, uqdd, cross(e, w, uqd))
        else:                                               # S = [u; 0]; v × (S q̇) = [ω × u q̇; 0]
            vl = vadd(e, vl, uqd)
            al = vadd(e, al, uqdd, cross(e, w, uqd))
        V[b], A[b] = (vl, w), (al, aw)
        F[b] = body_force(e, body, vl, w, al, aw)
    tau = [0.0] * n_v
    for b in range(len(bodies) - 1, 0, -1):
        body = bodies[b]
        f, n = F[b]
        tau[body.column] = e.add(tau[body.column], e.mul(body.scale, joint_dot(e, body, f, n)))
        if body.parent:
            fp, np_ = to_parent(e, body, f, n)
            pf, pn = F[body.parent]
            F[body.parent] = (vadd(e, pf, fp), vadd(e, pn, np_))
    return tau


def crba_values(e: Emitter, bodies: list, n_v: int) -> list:
    """Emit CRBA; return the entries of ``M`` row-major (symmetric, both triangles)."""
    IC = {b: (body.mass, list(body.h), list(body.I_o)) for b, body in enumerate(bodies) if body is not None}
    for b in range(len(bodies) - 1, 0, -1):                 # composite inertias, body frames
        body = bodies[b]
        if not body.parent:
            continue
        m, h, I = IC[b]
        R, r = transpose(body.E), body.r
        hh = e.matvec(R, h)
        RI = [sym_apply(e, I, [R[k][0], R[k][1], R[k][2]]) for k in range(3)]   # rows of R I
        two_hr_mrr = e.add(e.mul(2.0, e.dot(hh, r)), e.mul(m, e.dot(r, r)))
        shifted = []
        for i, k in SYM:
            x = e.dot(RI[i], R[k])                                               # (R I Rᵀ)[i, k]
            outer = e.add(e.mul(hh[i], r[k]), e.mul(r[i], hh[k]), e.mul(m, e.mul(r[i], r[k])))
            shifted.append(e.sub(e.add(x, two_hr_mrr) if i == k else x, outer))
        pm, ph, pI = IC[body.parent]
        IC[body.parent] = (pm + m, vadd(e, ph, hh, scale(e, r, m)), vadd(e, pI, shifted))
    entries: dict[tuple[int, int], object] = {}
    for i in range(1, len(bodies)):
        body = bodies[i]
        m, h, I = IC[i]
        u = body.u
        if body.revolute:                                   # I [0; u] = [-h × u; I_o u]
            f, n = [e.mul(-1.0, x) for x in cross(e, h, u)], sym_apply(e, I, u)
        else:                                               # I [u; 0] = [m u; h × u]
            f, n = scale(e, u, m), cross(e, h, u)
        j, other = i, body
        while True:
            value = e.mul(body.scale * other.scale, joint_dot(e, other, f, n))
            row, col = max(body.column, other.column), min(body.column, other.column)
            if j != i and row == col:                       # two mimic columns of one coordinate
                value = e.mul(2.0, value)
            entries[row, col] = e.add(entries.get((row, col), 0.0), value)
            if not other.parent:
                break
            f, n = to_parent(e, other, f, n)
            j = other.parent
            other = bodies[j]
    values = [0.0] * (n_v * n_v)
    for (row, col), value in entries.items():
        values[row * n_v + col] = values[col * n_v + row] = value
    return values


def com_values(e: Emitter, bodies: list, mass0: float, h0, total: float) -> list:
    """Emit the whole robot's centre of mass in the world frame: ``Σ m_b (R_b c_b + p_b) / Σ m``
    over the moving bodies, plus the root body's constant ``h0 = m_0 c_0`` (``total``: every
    link's mass)."""
    identity = [[1.0 if r == c else 0.0 for c in range(3)] for r in range(3)]
    R, p = {0: identity}, {0: [0.0, 0.0, 0.0]}
    moment = [float(x) for x in h0]
    for b, body in enumerate(bodies[1:], start=1):
        Rp, pp = R[body.parent], p[body.parent]
        R[b] = e.matmul(Rp, transpose(body.E))                  # world <- body
        p[b] = vadd(e, pp, e.matvec(Rp, body.r))
        if body.mass:
            moment = vadd(e, moment, e.matvec(R[b], body.h), scale(e, p[b], body.mass))
    return scale(e, moment, 1.0 / total)


RECIPROCAL = re.compile(r"recip\(([^()]*)\)")


def solve_values(e: Emitter, M: list, b: list) -> list:
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
