"""Configuration-space operations on a model, Pinocchio-style free functions: checking, drawing,
clamping and naming configurations, moving them by a velocity, wrapping angles.

These are the only implementation. They read the data and indices of a
:class:`~robokin_ros.model.model_data.ModelData` (``q_lower``, ``q_upper``, ``q_names``,
``quaternion_slices``, ``mimic_terms``, ...), below :class:`~robokin_ros.model.RobotModel`, whose
methods of the same names (``model.check_q(q)``, ``model.clamp(q)``, ...) are a facade over them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from ..checks import QUATERNION_MIN_NORM, check_count, check_rng, numbers, real_array
from ..errors import ArgumentError, NonFiniteError, ShapeError, UnknownJointError
from ..spatial import quat_exp, quat_multiply, quat_xyzw_to_matrix
from .elements import SCALAR_TYPES, JointType
from .model_data import ModelData

Array = NDArray[np.float64]

__all__ = ["all_joint_values", "check_q", "clamp", "home_configuration", "integrate", "q_from_dict", "q_to_dict",
           "random_configuration", "within_limits", "wrap_angle"]


def check_q(model: ModelData, q, argument: str = "q", single: bool = False) -> Array:
    """``q`` as a plain float array ``(..., n_q)`` (an ``np.matrix`` becomes an ndarray), or
    exactly ``(n_q,)`` when ``single`` (then a ``1 x n_q`` matrix gives its row).

    Raises:
        ArgumentError: not real numbers (text, None, complex, objects); a floating joint's
            quaternion shorter than :data:`~robokin_ros.checks.QUATERNION_MIN_NORM`, naming the joint.
        ShapeError: not ``(..., n_q)``.
        NonFiniteError: NaN or inf entries, or a mimic joint whose value
            ``multiplier * source + offset`` overflows (naming the mimic joint and its source).
    """
    q = numbers(q, argument, vector=single)
    if q.ndim == 0 or q.shape[-1] != model.n_q or single and q.ndim != 1:
        raise ShapeError(argument, f"({model.n_q},)" if single else f"(..., {model.n_q})", q.shape)
    if not np.isfinite(q.sum()):  # one reduction in the common case; details only on failure
        # (not the BLAS sum of squares, twice as fast: OpenBLAS's threads then spin on the cores
        # that a batched call's threads need)
        finite = np.isfinite(q)
        if not finite.all():
            bad = sorted(set(np.nonzero(~finite)[-1].tolist()))
            raise NonFiniteError(argument, bad, [model.q_names[i] for i in bad])
    if model.mimic_terms:
        _check_mimics(model, q, argument)
    for s in model.quaternion_slices:   # floating joints: a (near) zero quaternion is no orientation
        with np.errstate(under="ignore"):
            norm = np.linalg.norm(q[..., s], axis=-1)
        if (norm < QUATERNION_MIN_NORM).any():
            joint = model.q_names[s.start].rsplit("/", 1)[0]
            raise ArgumentError(argument, f"the quaternion {list(model.q_names[s])} of floating joint {joint!r} "
                                          f"has norm {float(norm.min()):.3g} < {QUATERNION_MIN_NORM:g}: "
                                          "it is zero, no orientation")
    return q


def _check_mimics(model: ModelData, q: np.ndarray, argument: str) -> None:
    """Raise :class:`NonFiniteError` when a mimic joint's value overflows for finite ``q``."""
    if q.ndim == 1 and all(math.isfinite(m * q.item(i) + o) for _, i, m, o in model.mimic_terms):
        return   # one configuration: Python floats (inf on overflow) cost less than building arrays
    joints, index, mult, offset = (np.array(c) for c in zip(*model.mimic_terms))
    with np.errstate(over="ignore", invalid="ignore"):
        values = q[..., index] * mult + offset
    bad = np.flatnonzero(~np.isfinite(values.reshape(-1, len(joints))).all(axis=0))
    if bad.size:
        raise NonFiniteError(argument, index[bad].tolist(), [
            f"mimic joint {model.all_joint_names[joints[k]]!r} = {mult[k]:g} * "
            f"{model.q_names[index[k]]!r} + {offset[k]:g}" for k in bad])


def home_configuration(model: ModelData) -> Array:
    """Zeros clamped into the limits, identity quaternions for floating joints ``(n_q,)``."""
    q = np.clip(np.zeros(model.n_q), model.q_lower, model.q_upper)
    for s in model.quaternion_slices:
        q[s] = (0.0, 0.0, 0.0, 1.0)
    return q


def random_configuration(model: ModelData, n: int | None = None, rng=None) -> Array:
    """Configurations uniform within the limits: ``(n, n_q)``, or ``(n_q,)`` when ``n`` is None.

    Continuous joints are drawn from [-pi, pi]; unbounded prismatic / planar translations from
    [-1, 1] m; floating joints get positions in [-1, 1] m and uniform random quaternions.

    Args:
        model: the robot.
        n: None or a whole number >= 0 with ``n * n_q <= checks.MAX_ELEMENTS``.
        rng: None, a whole number >= 0 (seed) or a ``numpy.random.Generator``.

    Raises:
        ArgumentError: another ``n`` (text, float, negative, too many) or ``rng``.
    """
    if n is not None:
        check_count(n, "n", per_item=model.n_q)
    rng = np.random.default_rng(check_rng(rng))
    shape = (1 if n is None else int(n), model.n_q)
    lo = np.where(np.isfinite(model.q_lower), model.q_lower, -1.0)
    hi = np.where(np.isfinite(model.q_upper), model.q_upper, 1.0)
    for j in model.active_joints:
        t, i = JointType(model.joint_types[j]), model.joint_q_index[j]
        if t == JointType.CONTINUOUS or (t == JointType.PLANAR):
            k = i if t == JointType.CONTINUOUS else i + 2
            lo[k], hi[k] = -np.pi, np.pi
    # lo + u (hi - lo) overflows for limits near ±1e308: draw halfway and scale by 2 instead
    q = 2.0 * rng.uniform(0.5 * lo, 0.5 * hi, size=shape)
    q = np.clip(q, lo, hi)
    for s in model.quaternion_slices:
        quat = rng.normal(size=(shape[0], 4))
        q[:, s] = quat / np.linalg.norm(quat, axis=-1, keepdims=True)
    return q[0] if n is None else q


def clamp(model: ModelData, q) -> Array:
    """``q (..., n_q)`` clipped into the limits (floating quaternions renormalised)."""
    q = np.clip(check_q(model, q), model.q_lower, model.q_upper)
    for s in model.quaternion_slices:
        q[..., s] /= np.linalg.norm(q[..., s], axis=-1, keepdims=True)
    return q


def within_limits(model: ModelData, q, tolerance: float = 0.0) -> NDArray[np.bool_]:
    """``(...)`` bool: every coordinate of ``q (..., n_q)`` within its limits (± tolerance)."""
    q = check_q(model, q)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float, np.integer, np.floating)) \
            or not math.isfinite(tolerance) or tolerance < 0:
        raise ArgumentError("tolerance", f"must be a finite number >= 0, got {tolerance!r}")
    return np.all((q >= model.q_lower - tolerance) & (q <= model.q_upper + tolerance), axis=-1)


def q_from_dict(model: ModelData, values: Mapping[str, float], base=None, strict: bool = False) -> Array:
    """Configuration ``(n_q,)`` from joint name -> value (as in a JointState).

    Joints missing from ``values`` keep ``base`` (default: home). Values for mimic joints
    are ignored (they follow their source). Multi-coordinate (floating, planar) joints use the
    labels of ``model.q_names`` (``"base/x"``, ..., ``"base/qw"``). With ``strict``, an unknown
    name raises :class:`UnknownJointError` and a floating / planar joint's own name
    :class:`ArgumentError` (listing its labels); without, both are ignored (a value under a
    floating / planar joint's own name must still be a finite number).

    Raises:
        ArgumentError: ``values`` is not a mapping, or a value of a known name is not a number.
        NonFiniteError: a value of a known name is NaN or infinite.
        UnknownJointError: with ``strict``, a name the model does not have.
    """
    if not isinstance(values, Mapping):
        raise ArgumentError("values", f"must be a mapping of joint name -> value, got {type(values).__name__}")
    q = home_configuration(model) if base is None else check_q(model, base, "base", single=True).copy()
    index = {n: i for i, n in enumerate(model.q_names)}
    for name, value in values.items():
        i = index.get(name)
        if i is not None:
            q[i] = _finite_value(name, value)
        elif strict:
            _check_unused_name(model, name)
        elif name in model.all_joint_names:
            _finite_value(name, value)   # a floating / planar joint's own name: ignored, but not garbage
    return q


def _finite_value(name: str, value) -> float:
    """``value`` of ``q_from_dict``'s entry ``name`` as a finite float, else the typed error."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ArgumentError("values", f"{name!r} = {str(value)[:60]!r} is not a number") from None
    if not math.isfinite(number):
        raise NonFiniteError("values", [name], [name])
    return number


def _check_unused_name(model: ModelData, name) -> None:
    """Raise for a ``q_from_dict`` name that sets no coordinate: unknown, or a floating /
    planar joint's own name (its coordinates have one label each, see ``model.q_names``)."""
    try:
        j = model.joint_index(name)
    except UnknownJointError:
        raise UnknownJointError(name, model.q_names) from None
    if model.joint_nq[j] > 1:
        labels = [n for n in model.q_names if n.startswith(f"{name}/")]
        raise ArgumentError("values", f"{name!r} is a {JointType(model.joint_types[j]).name.lower()} joint with "
                                      f"{len(labels)} coordinates: give them as {labels}")


def q_to_dict(model: ModelData, q) -> dict[str, float]:
    """Joint name -> value for a single configuration ``(n_q,)``."""
    q = check_q(model, q, single=True)
    return {n: float(v) for n, v in zip(model.q_names, q)}


def all_joint_values(model: ModelData, q) -> dict[str, float]:
    """Every 1-DOF joint's value, mimic joints included, for one configuration ``(n_q,)``."""
    q = check_q(model, q, single=True)
    out = {}
    for j in range(model.n_joints):
        if JointType(model.joint_types[j]) not in SCALAR_TYPES:
            continue
        s = model.mimic_source[j] if model.is_mimic[j] else j
        value = model.mimic_multiplier[j] * q[model.joint_q_index[s]] + model.mimic_offset[j]
        out[model.all_joint_names[j]] = float(value)
    return out


def integrate(model: ModelData, q, v) -> Array:
    """Move configurations ``q (..., n_q)`` by ``v (..., n_v)`` (one unit of time).

    Scalar and planar coordinates add; a floating joint moves its position by ``R v_linear``
    (the velocity is in the child frame) and its quaternion by ``exp(ω_local)`` on the right,
    renormalised. First order in ``v`` for floating joints, which is what IK steps need.

    Raises:
        ShapeError: ``q`` or ``v`` of the wrong length, or batches that do not broadcast.
        NonFiniteError: NaN or inf in ``q`` or ``v``. ArgumentError: not real numbers.
    """
    q = check_q(model, q)
    v = real_array(v, "v", (model.n_v,), labels=model.v_names)
    try:
        shape = np.broadcast_shapes(q.shape[:-1], v.shape[:-1])
    except ValueError:
        raise ShapeError("q, v", "batch dimensions that broadcast together", (q.shape, v.shape)) from None
    out = np.array(np.broadcast_to(q, shape + (model.n_q,)))
    v = np.broadcast_to(v, shape + (model.n_v,))
    for j in model.active_joints:
        i, k, nq = model.joint_q_index[j], model.joint_v_index[j], model.joint_nq[j]
        if model.joint_types[j] != JointType.FLOATING:
            out[..., i:i + nq] += v[..., k:k + nq]
            continue
        quat = out[..., i + 3:i + 7]
        out[..., i:i + 3] += (quat_xyzw_to_matrix(quat) @ v[..., k:k + 3, None])[..., 0]
        out[..., i + 3:i + 7] = quat_multiply(quat, quat_exp(v[..., k + 3:k + 6]))
    return out


def wrap_angle(angle):
    """Angles wrapped into (-π, π] (floats or arrays)."""
    return math.pi - (math.pi - angle) % (2.0 * math.pi)
