"""Argument checks shared by the public functions: arrays of numbers (vectors, points, gravity,
bounds, targets), rigid transforms, ``out=`` arrays, counts, random generators, numbers.

Each public function checks its arguments once, at its boundary, with these; the kernels below
it take checked arrays. Configurations are checked by :meth:`RobotModel.check_q`, which uses
:func:`numbers`. Every check raises a :class:`~robokin_ros.errors.RobokinError` subclass naming
the argument; none lets numpy's own ``ValueError`` / ``TypeError`` / ``MemoryError`` through.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .errors import ArgumentError, InvalidTargetError, ModelError, NonFiniteError, ShapeError

Array = NDArray[np.float64]

#: Most float64 elements a call may be asked to allocate for one result (800 MB): larger counts
#: are refused with an :class:`ArgumentError` before numpy tries (and fails with a MemoryError).
MAX_ELEMENTS = 10**8

#: Smallest norm accepted for a floating joint's quaternion in ``q``: anything shorter has no
#: direction left to normalise (its square underflows; FK would give NaN).
QUATERNION_MIN_NORM = 1e-9

#: Largest ``|R^T R - I|`` entry and ``|det R - 1|`` accepted in a rigid transform's rotation block
#: (a builder placement or an IK target): loose enough for rotations read from 6-digit text.
ROTATION_TOLERANCE = 1e-6


def numbers(value, argument: str, vector: bool = False) -> Array:
    """``value`` as a plain float64 ndarray; an ``np.matrix`` (or any ndarray subclass) becomes a
    plain ndarray, so shapes and products keep their array meaning. With ``vector`` (an argument
    that is one vector, such as a point or bounds), a ``1 x n`` or ``n x 1`` matrix gives its ``(n,)``.

    Raises:
        ArgumentError: None, text (even text of numbers), complex numbers (the imaginary part
            would be lost), or anything else that is not real numbers (objects, ragged lists, dicts).
    """
    if type(value) is np.ndarray and value.dtype == np.float64:
        return value
    try:
        a = np.asarray(value)
    except (TypeError, ValueError, OverflowError):
        a = None
    if a is not None and a.dtype.kind == "c":
        raise ArgumentError(argument, "must be real numbers, got complex values (the imaginary part would be lost)")
    if a is not None and (a.dtype.kind in "biuf" or a.dtype.kind == "O" and all(map(_is_number, a.flat))):
        if vector and isinstance(value, np.matrix) and 1 in value.shape:
            a = a.reshape(-1)
        try:
            return np.asarray(a.view(np.ndarray), dtype=float)
        except OverflowError:  # Python ints beyond float range
            pass
    raise ArgumentError(argument, f"must be real numbers, got {type(value).__name__} {str(value)[:60]!r}")


def _is_number(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def real_array(value, argument: str, tail: tuple[int, ...], *, batch: bool = True,
               labels: tuple[str, ...] | None = None) -> Array:
    """``value`` as a finite float64 array of shape ``(..., *tail)`` (``batch``) or exactly ``tail``.

    Args:
        value: what the caller passed.
        argument: its name, for the messages.
        tail: the trailing shape, e.g. ``(n_v,)`` for velocities, ``(3,)`` for a point.
        batch: whether leading batch dimensions are allowed.
        labels: names of the entries of the last axis (``model.v_names``), for the messages.

    Raises:
        ArgumentError: not real numbers (see :func:`numbers`). ShapeError: another shape.
        NonFiniteError: NaN or inf entries (their last-axis indices or labels).
    """
    a = numbers(value, argument, vector=not batch and len(tail) == 1)
    k = len(tail)
    if batch and (a.ndim < k or a.shape[a.ndim - k:] != tail):
        raise ShapeError(argument, "(..., " + ", ".join(map(str, tail)) + ")", a.shape)
    if not batch and a.shape != tail:
        raise ShapeError(argument, str(tail), a.shape)
    if not np.isfinite(a).all():
        bad = sorted(set(np.nonzero(~np.isfinite(a))[-1].tolist())) if a.ndim else [0]
        raise NonFiniteError(argument, bad, None if labels is None else [labels[i] for i in bad])
    return a


def check_count(n, argument: str, per_item: int = 1, minimum: int = 0) -> int:
    """``n`` as an int: a whole number ``>= minimum`` whose result, ``n * per_item`` float64
    elements, stays within :data:`MAX_ELEMENTS`.

    Raises:
        ArgumentError: not a whole number (bools, floats, text), below ``minimum``, or too large.
    """
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise ArgumentError(argument, f"must be a whole number >= {minimum}, got {str(n)[:60]!r}")
    if n < minimum:
        raise ArgumentError(argument, f"must be a whole number >= {minimum}, got {n!r}")
    if int(n) * max(per_item, 1) > MAX_ELEMENTS:
        raise ArgumentError(argument, f"{n} asks for {int(n) * max(per_item, 1):.3g} values ({per_item} each), "
                                      f"more than the {MAX_ELEMENTS:.0e} one call may allocate (split it into chunks)")
    return int(n)


def sequence(value, argument: str, one: bool = False) -> tuple:
    """``value`` as a tuple of its items (with ``one``, a single str gives a 1-tuple).

    Raises:
        ArgumentError: not iterable, or a str where one is not allowed.
    """
    if isinstance(value, str):
        if one:
            return (value,)
        raise ArgumentError(argument, f"must be a sequence, got the str {value[:60]!r}")
    try:
        return tuple(value)
    except TypeError:
        raise ArgumentError(argument, f"must be a sequence, got {type(value).__name__} {str(value)[:60]!r}") from None


def check_rng(rng, argument: str = "rng"):
    """``rng`` unchanged when it is None, a whole number ``>= 0`` or a ``numpy.random.Generator``
    (what the random draws of the package take).

    Raises:
        ArgumentError: anything else (text, floats, bools, negative numbers).
    """
    if rng is None or isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)) and rng >= 0:
        return rng
    raise ArgumentError(argument, f"must be None, a whole number >= 0 or a numpy.random.Generator, "
                                  f"got {type(rng).__name__} {str(rng)[:60]!r}")


def _rigid_defects(T: Array) -> tuple[Array, Array, Array]:
    """Per transform of ``T (..., 4, 4)``: max ``|RᵀR - I|``, ``det R`` and max last-row error."""
    # entry by entry over the batch (numpy's batched 3 x 3 products and det cost 10x more)
    c = [[T[..., k, j] for k in range(3)] for j in range(3)]   # c[j][k] = R[k, j]
    orthogonality = np.zeros(T.shape[:-2])
    for i in range(3):
        for j in range(i, 3):
            gram = c[i][0] * c[j][0] + c[i][1] * c[j][1] + c[i][2] * c[j][2]   # (R^T R)[i, j]
            orthogonality = np.maximum(orthogonality, np.abs(gram - (i == j)))
    (x0, y0, z0), (x1, y1, z1), (x2, y2, z2) = c   # det R = c0 . (c1 x c2)
    determinant = x0 * (y1 * z2 - z1 * y2) + y0 * (z1 * x2 - x1 * z2) + z0 * (x1 * y2 - y1 * x2)
    b = [T[..., 3, k] for k in range(4)]   # (a reduction over the row's 4 entries costs 5x more)
    bottom = np.maximum(np.maximum(np.abs(b[0]), np.abs(b[1])), np.maximum(np.abs(b[2]), np.abs(b[3] - 1.0)))
    return orthogonality, determinant, bottom


def _not_rigid(orthogonality: Array, determinant: Array, bottom: Array) -> Array:
    return (orthogonality > ROTATION_TOLERANCE) | (np.abs(determinant - 1.0) > ROTATION_TOLERANCE) | (bottom > 0)


def rigid_transform(T, argument: str) -> Array:
    """``T`` as a float ``(4, 4)`` rigid transform (a model's placement).

    Raises:
        ShapeError: not ``(4, 4)``. NonFiniteError: NaN or inf entries.
        ModelError: the rotation block is not orthonormal with determinant +1 (within
            :data:`ROTATION_TOLERANCE`), or the last row is not ``(0, 0, 0, 1)``.
    """
    T = numbers(T, argument)
    if T.shape != (4, 4):
        raise ShapeError(argument, "(4, 4)", T.shape)
    if not np.all(np.isfinite(T)):
        raise NonFiniteError(argument, np.flatnonzero(~np.isfinite(T)).tolist())
    if _not_rigid(*_rigid_defects(T)):
        raise ModelError(f"{argument} is not a rigid transform (orthonormal rotation with det +1, "
                         "last row 0 0 0 1)")
    return T


def check_rigid_targets(T: Array) -> None:
    """Raise :class:`InvalidTargetError` unless every ``T (..., 4, 4)`` (finite float64, read by
    :func:`numbers`) is a rigid transform.

    Raises:
        ArgumentError: ``T`` is not real numbers (complex, text, objects).
    """
    T = numbers(T, "targets")
    orthogonality, determinant, bottom = _rigid_defects(T)
    bad = _not_rigid(orthogonality, determinant, bottom)
    if bad.any():
        where = [tuple(int(k) for k in i) for i in np.argwhere(bad)] if bad.ndim else [()]
        first = tuple(int(k) for k in np.argwhere(bad)[0]) if bad.ndim else ()
        raise InvalidTargetError(where, f"the first has max |R^T R - I| = {float(orthogonality[first]):.3g}, "
                                        f"det R = {float(determinant[first]):.3g}, last row "
                                        f"{np.asarray(T[first][3]).tolist()} (tolerance {ROTATION_TOLERANCE:g})")


def check_out(out, shape: tuple[int, ...]) -> None:
    """``out`` must be a writeable, C-contiguous float64 ndarray of exactly ``shape``.

    Raises:
        ShapeError: another shape. ArgumentError: not an array, not float64, not C-contiguous
            or read-only.
    """
    if not isinstance(out, np.ndarray):
        raise ArgumentError("out", f"must be a numpy array, got {type(out).__name__}")
    if out.shape != shape:
        raise ShapeError("out", str(shape), out.shape)
    if out.dtype != np.float64:
        raise ArgumentError("out", f"must have dtype float64, got {out.dtype}")
    if not out.flags.c_contiguous:
        raise ArgumentError("out", "must be C-contiguous")
    if not out.flags.writeable:
        raise ArgumentError("out", "is read-only")


#: numpy's float64 dtype (a singleton: an identity test is the cheapest dtype check).
FLOAT64 = np.dtype(np.float64)


def is_single_vector(x, n: int) -> bool:
    """True when ``x`` is exactly one vector ``(n,)`` as the compiled single-configuration entries
    take it: a plain ``np.ndarray`` (no subclass), float64, C-contiguous. The one guard of the
    single-configuration lanes; anything else (lists, batches, other dtypes,
    strided views) goes the general, checked way. Values are not looked at (finiteness is the
    entries' own check)."""
    # strides == (8,): one dimension, contiguous (a cheaper probe than shape and flags)
    return type(x) is np.ndarray and x.dtype is FLOAT64 and x.strides == (8,) and x.size == n


def finite_configuration(model, q) -> list | None:
    """``q`` as a list of floats when it is one finite float64 configuration ``(n_q,)`` of
    ``model`` whose mimic joint values are finite too, else None (then the caller runs the full
    checks of :meth:`RobotModel.check_q`): the check of the one-configuration fast paths, a few
    hundred nanoseconds. A floating joint's quaternion must be at least :data:`QUATERNION_MIN_NORM` long."""
    if is_single_vector(q, model.n_q):
        values = q.tolist()
        if math.isfinite(sum(values)) and finite_mimics(model, values) and all(
                sum(x * x for x in values[s]) >= QUATERNION_MIN_NORM ** 2 for s in model.quaternion_slices):
            return values
    return None


def finite_mimics(model, values: list) -> bool:
    """True when every mimic joint's value ``multiplier * source + offset`` is finite for the
    configuration ``values`` (a list of ``n_q`` finite floats)."""
    terms = model.mimic_terms
    return not terms or math.isfinite(sum(m * values[i] + o for _, i, m, o in terms))


def is_real(value, finite: bool = True) -> bool:
    """True for an int or float (numpy scalars included, bools excluded), finite unless
    ``finite`` is False (then inf and NaN count too)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_)) \
        and (not finite or math.isfinite(value))


def is_whole(value) -> bool:
    """True for a finite whole number (see :func:`is_real`)."""
    return is_real(value) and float(value).is_integer()
