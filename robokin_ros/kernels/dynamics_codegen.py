"""Per-robot specialised dynamics, built and kept per model: the accessors of the generated
kernels (RNEA and its gravity / nonlinear-effects cases, CRBA, forward dynamics, the centre of
mass) and the registry keys they are kept under (:mod:`robokin_ros.model_cache`).

Each kernel is emitted by :mod:`robokin_ros.kernels.dynamics_source` and made callable by
:class:`~robokin_ros.kernels.compiled_dynamics.CompiledDynamics` (numba once loaded, the generic
compiled tier meanwhile, else numpy), with the numpy recursions of :mod:`robokin_ros.dynamics`
as oracle. Models with floating or planar joints get no generated kernel (the numpy recursions
handle them).
"""

from __future__ import annotations

import numpy as np

from .. import model_cache
from ..model import RobotModel
from .compiled_dynamics import CompiledDynamics
from .dynamics_source import (
    Inputs,
    com_values,
    crba_values,
    emit_bodies,
    gravity_symbols,
    rnea_values,
    solve_values,
)
from .emitter import Emitter, supported
from .plan import dynamics_tree

#: Gravity vectors folded into the generated code as constants; any other is an input.
_CONSTANT_GRAVITIES = ((0.0, 0.0, -9.81), (0.0, 0.0, 0.0))

#: The generic tier's call (:mod:`robokin_ros.kernels.generic_dynamics_tier`) of each RNEA case
#: ``(with_v, with_a)``.
_GENERIC_RNEA = {(True, True): "rnea", (True, False): "nonlinear", (False, False): "gravity"}


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
        bodies, inputs, zeros = emit_bodies(model, e), Inputs(e, model), [0.0] * model.n_v
        v = inputs.read(model.n_v) if with_v else zeros
        a = inputs.read(model.n_v) if with_a else zeros
        tau = rnea_values(e, bodies, model.n_v, v, a, gravity_symbols(inputs, constant))
        sizes = (model.n_q,) + (model.n_v,) * (int(with_v) + int(with_a)) + ((3,) if constant is None else ())
        call = _GENERIC_RNEA.get((with_v, with_a)) if constant is not None else None
        return CompiledDynamics(model, e, tau, (model.n_v,), f"rnea v={with_v} a={with_a} g={constant}", sizes,
                                gravity_input=constant is None, generic=None if call is None else (call, constant))

    return _cached(model, _rnea_key(with_v, with_a, constant), build)


def compiled_crba(model: RobotModel) -> CompiledDynamics | None:
    """The generated CRBA of ``model``: ``q -> M (n_v, n_v)`` (None for floating / planar joints)."""

    def build():
        e = Emitter()
        return CompiledDynamics(model, e, crba_values(e, emit_bodies(model, e), model.n_v), (model.n_v, model.n_v),
                                "crba", (model.n_q,), generic=("crba", None))

    return _cached(model, "crba", build)


def compiled_forward_dynamics(model: RobotModel, gravity) -> CompiledDynamics | None:
    """The generated forward dynamics of ``model``: ``(q, v, tau[, gravity]) -> a (n_v,)``
    solving ``M a = tau - h`` with the generated CRBA, RNEA and a sparse ``Lᵀ D L``
    factorisation, in one function sharing the joint transforms (None for floating / planar
    joints). ``gravity`` as in :func:`compiled_rnea`."""
    constant = _constant_gravity(gravity)

    def build():
        e = Emitter()
        bodies, inputs = emit_bodies(model, e), Inputs(e, model)
        v, tau = inputs.read(model.n_v), inputs.read(model.n_v)
        h = rnea_values(e, bodies, model.n_v, v, [0.0] * model.n_v, gravity_symbols(inputs, constant))
        M = crba_values(e, bodies, model.n_v)
        a = solve_values(e, M, [e.sub(t, x) for t, x in zip(tau, h)])
        sizes = (model.n_q, model.n_v, model.n_v) + ((3,) if constant is None else ())
        return CompiledDynamics(model, e, a, (model.n_v,), f"forward dynamics g={constant}", sizes,
                                gravity_input=constant is None, generic=None if constant is None else ("aba", constant))

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
        values = com_values(e, emit_bodies(model, e), float(tree.mass[0]), tree.mass[0] * tree.com[0], total)
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
