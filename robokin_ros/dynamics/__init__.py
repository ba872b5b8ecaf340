"""Rigid-body dynamics of kinematic trees, batched: RNEA, CRBA, ABA, gravity, centre of mass.

Featherstone's algorithms in their branched form (outward passes use the parent λ(i), inward
passes sum over the children μ(i), CRBA fills H only where one joint supports the other), written
in the world frame (Pinocchio's WORLD convention): every spatial quantity is expressed in world
axes about the world origin, so passes between links are plain sums. Spatial vectors are
[linear; angular]; the operators are defined in :mod:`robokin_ros.kernels.spatial_algebra`.

Modelling choices:
- Links joined by fixed joints form one rigid body; their inertials are merged into the nearest
  moving ancestor (links fixed to the root do not move and carry no dynamics). Links without an
  ``<inertial>`` are massless; a model with no inertial at all raises :class:`ModelError`.
- A mimic joint moves by ``multiplier × source velocity``; the torque on the source is its own
  plus ``multiplier ×`` the follower's, so ``tau = Jᵀ f`` with the columns of
  :mod:`robokin_ros.kinematics.geometric_jacobians`.
- Floating joints: ``v = [linear; angular]`` in the child frame (Pinocchio's convention).
  Planar joints: ``v = [ẋ, ẏ, θ̇]`` in the joint frame, as ``q``.
- External wrenches ``f_ext (..., n_links, 6)`` are ``[force; torque]`` applied to each link,
  in world axes, torque about the world origin (Pinocchio takes them in each joint's frame).
- Joint friction and damping (URDF ``<dynamics>``) and rotor inertia are ignored.

Generated kernels: for models without floating or planar joints, :func:`rnea`,
:func:`gravity_torques`, :func:`nonlinear_effects`, :func:`coriolis_torques`, :func:`crba`,
:func:`aba` and :func:`center_of_mass` run per-robot straight-line code from
:mod:`robokin_ros.kernels.dynamics_codegen` (no per-body Python loop, for one configuration and
for batches). Until a robot's own kernel is compiled and loaded (in the background), the generic
compiled tier (:mod:`robokin_ros.kernels.generic_dynamics_tier`, compiled once per installation)
runs RNEA, the gravity torques, the nonlinear / Coriolis effects, CRBA and ABA under standard or
zero gravity; another gravity vector and the centre of mass run the numpy recursions below
meanwhile. Those recursions are the oracle of both compiled tiers and run whenever neither does:
numba off or missing, a runtime of kind ``"generic"`` (:mod:`robokin_ros.runtime`), external
wrenches, the generic kernels not loaded yet.
Each of these calls opens with the single-configuration lane
(:mod:`robokin_ros.kernels.single_lane`): one configuration given as a 1-D float64 ``q`` with
the default gravity goes to its kernel's compiled single entry once numba has loaded it
(:mod:`robokin_ros.accel`, :func:`prepare`), which checks lengths and finiteness (mimic joint
values included) itself; anything else, or a refused input, takes the general path (which
raises the typed errors naming the culprit).

Internally arrays are component-first and batch-last (a spatial vector per body is ``(6, n, B)``)
so every arithmetic operation runs over a contiguous batch; Python loops run over depth levels.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..checks import is_single_vector
from ..errors import ModelError
from ..kernels.dynamics_codegen import (
    built_single,
    compiled_center_of_mass,
    compiled_crba,
    compiled_forward_dynamics,
    compiled_rnea,
)
from ..kernels.plan import dynamics_tree, dynamics_tree_with_inertia
from ..kernels.preparation import DEFAULT_DYNAMICS
from ..kernels.preparation import prepare as _prepare_kernels
from ..kernels.single_lane import single_result
from ..kernels.spatial_algebra import apply_inertia, cross, rotate
from ..model import RobotModel
from ..runtime import current_runtime
from .recursions import (
    GRAVITY,
    aba_articulated,
    aba_by_solve,
    body_frames,
    body_inertias,
    body_motion_columns,
    body_velocities,
    check_gravity,
    check_inputs,
    chunked,
    columns_to_v,
    crba_generic,
    inward_sums,
    joint_motion,
    rnea_generic,
)

Array = NDArray[np.float64]

_NO_GRAVITY = (0.0, 0.0, 0.0)


def _generated(model: RobotModel, factory, q, vectors: dict, g: Array | None) -> Array | None:
    """The generated kernel ``factory()`` (a :mod:`robokin_ros.kernels.dynamics_codegen` kernel)
    on checked inputs through its compiled tier that runs now, shaped ``batch + output``; None
    when generated kernels are switched off (:mod:`robokin_ros.kernels.selection`), the model has
    none, or no compiled tier runs it (the caller runs the numpy recursion, the oracle)."""
    if not current_runtime().generated:
        return None
    kernel = factory()
    if kernel is None:
        return None
    qb, x, _, batch = check_inputs(model, q, vectors)
    inputs = [qb, *x.values()]
    if kernel.gravity_input:
        inputs.append(np.broadcast_to(g, (len(qb), 3)))
    if not batch:
        return kernel.single(*(a[0] for a in inputs))
    result = kernel.batch(*inputs)
    return None if result is None else result.reshape(batch + kernel.shape)


def _out(x: Array, batch: tuple) -> Array:
    """``(k, B)`` internal result as ``(..., k)``."""
    return np.ascontiguousarray(x.T).reshape(batch + x.shape[:1])


def rnea(model: RobotModel, q, v, a, gravity=GRAVITY, f_ext=None) -> Array:
    """Inverse dynamics by the recursive Newton–Euler algorithm: ``tau = M(q) a + h(q, v) - Jᵀ f_ext``.

    Args:
        model: the robot (needs inertials).
        q: configurations ``(..., n_q)``; v: velocities ``(..., n_v)``; a: accelerations
            ``(..., n_v)`` [rad/s², m/s²]. Batch dimensions broadcast together.
        gravity: ``(3,)`` [m/s²] in the world (root) frame.
        f_ext: optional external wrenches ``(..., n_links, 6)`` [N, N m] on each link:
            [force; torque], world axes, torque about the world origin.

    Returns:
        Joint forces ``tau (..., n_v)`` [N m, N].

    Raises:
        ModelError: the model has no inertial. ShapeError, NonFiniteError: bad inputs.
    """
    if f_ext is None and gravity is GRAVITY and is_single_vector(q, model.n_q):
        tau = single_result(built_single(model, "rnea"), None, q, v, a)
        if tau is not None:
            return tau
    tree = dynamics_tree_with_inertia(model)
    g = check_gravity(gravity)
    if f_ext is None:
        tau = _generated(model, lambda: compiled_rnea(model, True, True, g), q, {"v": v, "a": a}, g)
        if tau is not None:
            return tau
    qb, x, f, batch = check_inputs(model, q, {"v": v, "a": a}, f_ext)
    return _out(chunked(lambda qc, vc, ac, fc: rnea_generic(model, tree, qc, vc, ac, f_ext=fc, gravity=g),
                        qb, x["v"], x["a"], f), batch)


def gravity_torques(model: RobotModel, q, gravity=GRAVITY) -> Array:
    """Joint forces holding the robot still against gravity, ``g(q) (..., n_v)`` [N m, N].

    Raises:
        ModelError: the model has no inertial. ShapeError, NonFiniteError: bad ``q``.
    """
    if gravity is GRAVITY and is_single_vector(q, model.n_q):
        tau = single_result(built_single(model, "gravity_torques"), None, q)
        if tau is not None:
            return tau
    tree = dynamics_tree_with_inertia(model)
    g = check_gravity(gravity)
    tau = _generated(model, lambda: compiled_rnea(model, False, False, g), q, {}, g)
    if tau is not None:
        return tau
    qb, _, _, batch = check_inputs(model, q, {})
    zero = np.zeros((model.n_v, 1))
    return _out(chunked(lambda qc: rnea_generic(model, tree, qc, zero, zero, gravity=g), qb), batch)


def nonlinear_effects(model: RobotModel, q, v, gravity=GRAVITY) -> Array:
    """Coriolis, centrifugal and gravity forces ``h(q, v) = C(q, v) v + g(q)`` ``(..., n_v)``.

    Raises:
        ModelError: the model has no inertial. ShapeError, NonFiniteError: bad inputs.
    """
    call = "nonlinear_effects" if gravity is GRAVITY else "coriolis_torques" if gravity is _NO_GRAVITY else None
    if call is not None and is_single_vector(q, model.n_q):
        h = single_result(built_single(model, call), None, q, v)
        if h is not None:
            return h
    tree = dynamics_tree_with_inertia(model)
    g = check_gravity(gravity)
    h = _generated(model, lambda: compiled_rnea(model, True, False, g), q, {"v": v}, g)
    if h is not None:
        return h
    qb, x, _, batch = check_inputs(model, q, {"v": v})
    zero = np.zeros((model.n_v, 1))
    return _out(chunked(lambda qc, vc: rnea_generic(model, tree, qc, vc, zero, gravity=g), qb, x["v"]), batch)


def coriolis_torques(model: RobotModel, q, v) -> Array:
    """Coriolis and centrifugal forces ``C(q, v) v (..., n_v)`` (no gravity).

    Raises:
        ModelError: the model has no inertial. ShapeError, NonFiniteError: bad inputs.
    """
    return nonlinear_effects(model, q, v, gravity=_NO_GRAVITY)


def crba(model: RobotModel, q) -> Array:
    """Joint-space inertia matrix by the composite-rigid-body algorithm.

    Args:
        q: configurations ``(..., n_q)``.

    Returns:
        ``M (..., n_v, n_v)`` [kg m², kg], symmetric positive (semi-)definite, both triangles filled.

    Raises:
        ModelError: the model has no inertial. ShapeError, NonFiniteError: bad ``q``.
    """
    if is_single_vector(q, model.n_q):
        M = single_result(built_single(model, "crba"), None, q)
        if M is not None:
            return M
    tree = dynamics_tree_with_inertia(model)
    M = _generated(model, lambda: compiled_crba(model), q, {}, None)
    if M is not None:
        return M
    qb, _, _, batch = check_inputs(model, q, {})
    return chunked(lambda qc: crba_generic(model, tree, qc), qb, axis=0).reshape(batch + (model.n_v, model.n_v))


def aba(model: RobotModel, q, v, tau, gravity=GRAVITY, f_ext=None) -> Array:
    """Forward dynamics by the articulated-body algorithm: ``a = M⁻¹ (tau + Jᵀ f_ext - h)``.

    Models with mimic joints (a constraint ABA cannot express) solve ``M a = tau - h`` with
    :func:`crba` and :func:`rnea` instead; so does the generated kernel (generated CRBA and RNEA
    and a sparse ``Lᵀ D L`` factorisation of ``M``, in one function), used when the model has
    one and ``f_ext`` is None.

    Args:
        q: ``(..., n_q)``; v: ``(..., n_v)``; tau: joint forces ``(..., n_v)`` [N m, N].
        gravity, f_ext: as in :func:`rnea`.

    Returns:
        Accelerations ``a (..., n_v)``.

    Raises:
        ModelError: no inertial, or a joint that moves no mass (M singular).
        ShapeError, NonFiniteError: bad inputs.
    """
    if f_ext is None and gravity is GRAVITY and is_single_vector(q, model.n_q):
        acc = single_result(built_single(model, "aba"), None, q, v, tau)
        if acc is not None:
            return acc
    tree = dynamics_tree_with_inertia(model)
    if tree.massless_coordinates:
        raise ModelError(f"coordinates {list(tree.massless_coordinates)} move no mass: the mass matrix is singular")
    g = check_gravity(gravity)
    if f_ext is None:
        acc = _generated(model, lambda: compiled_forward_dynamics(model, g), q, {"v": v, "tau": tau}, g)
        if acc is not None:
            return acc
    qb, x, f, batch = check_inputs(model, q, {"v": v, "tau": tau}, f_ext)
    kernel = aba_by_solve if tree.has_mimic else aba_articulated
    return _out(chunked(lambda *args: kernel(model, tree, *args, g), qb, x["v"], x["tau"], f), batch)


def prepare(model: RobotModel, calls=DEFAULT_DYNAMICS) -> bool:
    """Compile (or load from the disk cache) the numba kernels of ``calls`` now (default
    gravity): :func:`robokin_ros.prepare` ``(model, fk=False, dynamics=calls)``.

    Args:
        calls: names among ``rnea``, ``gravity_torques``, ``nonlinear_effects``,
            ``coriolis_torques``, ``crba``, ``aba``, ``center_of_mass``.

    Returns:
        True when every kernel is accelerated (see :func:`robokin_ros.prepare`).

    Raises:
        ModelError: the model has no inertial. ArgumentError: an unknown name in ``calls``.
    """
    return _prepare_kernels(model, fk=False, dynamics=calls)


def total_mass(model: RobotModel) -> float:
    """Mass of every link, the root included [kg]."""
    return float(model.link_masses.sum())


def _com_parts(model: RobotModel, q):
    tree = dynamics_tree(model)
    if total_mass(model) <= 0.0:
        raise ModelError(f"model {model.name!r} has no mass: its centre of mass is undefined")
    qb, _, _, batch = check_inputs(model, q, {})
    R, p = body_frames(model, tree, qb)
    h = tree.mass[:, None] * (rotate(R, tree.com.T[:, :, None]) + p)      # (3, nb, B)
    return tree, R, p, h, batch


def center_of_mass(model: RobotModel, q) -> Array:
    """Centre of mass of the whole robot (every link, the root included) in the world frame.

    Args:
        q: configurations ``(..., n_q)``.

    Returns:
        ``(..., 3)`` [m].

    Raises:
        ModelError: the model has no mass. ShapeError, NonFiniteError: bad ``q``.
    """
    if is_single_vector(q, model.n_q):
        c = single_result(built_single(model, "center_of_mass"), None, q)
        if c is not None:
            return c
    if total_mass(model) <= 0.0:
        raise ModelError(f"model {model.name!r} has no mass: its centre of mass is undefined")
    c = _generated(model, lambda: compiled_center_of_mass(model), q, {}, None)
    if c is not None:
        return c
    _, _, _, h, batch = _com_parts(model, q)
    return _out(h.sum(axis=1) / total_mass(model), batch)


def center_of_mass_jacobian(model: RobotModel, q) -> Array:
    """Jacobian of :func:`center_of_mass`: ``ċ = J v``.

    Returns:
        ``(..., 3, n_v)`` [m per unit v], world axes.

    Raises:
        ModelError: the model has no mass. ShapeError, NonFiniteError: bad ``q``.
    """
    tree, R, p, h, batch = _com_parts(model, q)
    S = body_motion_columns(model, tree, R, p)
    hs = inward_sums(tree, h)                                                   # subtree first moments
    cb = tree.col_body
    J = (tree.subtree_mass[cb, None] * S[:3] + cross(S[3:], hs[:, cb])) / total_mass(model)   # (3, nc, B)
    J = columns_to_v(model, tree, np.moveaxis(J, 0, -1))                           # (n_v, B, 3)
    return np.ascontiguousarray(J.transpose(1, 2, 0)).reshape(batch + (3, model.n_v))


def kinetic_energy(model: RobotModel, q, v) -> Array:
    """Kinetic energy ``½ vᵀ M(q) v`` ``(...)`` [J].

    Raises:
        ModelError: the model has no inertial. ShapeError, NonFiniteError: bad inputs.
    """
    tree = dynamics_tree_with_inertia(model)
    qb, x, _, batch = check_inputs(model, q, {"v": v})
    R, p = body_frames(model, tree, qb)
    S = body_motion_columns(model, tree, R, p)
    V = body_velocities(tree, joint_motion(tree, S, x["v"].T[tree.col_v] * tree.col_scale[:, None], qb.shape[0]))
    mass, h, I_o = body_inertias(tree, R, p)
    return 0.5 * np.einsum("inb,inb->b", V, apply_inertia(mass, h, I_o, V)).reshape(batch)
