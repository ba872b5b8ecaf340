"""Argument checks shared by the public functions: rigid transforms, ``out=`` arrays, numbers.

Each public function checks its arguments once, at its boundary, with these; the kernels below
it take checked arrays. Configurations are checked by :meth:`RobotModel.check_q`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from .errors import ArgumentError, InvalidTargetError, ModelError, NonFiniteError, ShapeError

Array = NDArray[np.float64]

#: Largest ``|R^T R - I|`` entry and ``|det R - 1|`` accepted in a rigid transform's rotation block
#: (a builder placement or an IK target): loose enough for rotations read from 6-digit text.
ROTATION_TOLERANCE = 1e-6


def _rigid_defects(T: Array) -> tuple[Array, Array, Array]:
    """Per transform of ``T (..., 4, 4)``: max ``|RᵀR - I|``, ``det R`` and max last-row error."""
    R = T[..., :3, :3]
    orthogonality = np.abs(np.swapaxes(R, -1, -2) @ R - np.eye(3)).max(axis=(-2, -1))
    determinant = np.linalg.det(R)
    bottom = np.abs(T[..., 3, :] - (0.0, 0.0, 0.0, 1.0)).max(axis=-1)
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
    T = np.asarray(T, dtype=float)
    if T.shape != (4, 4):
        raise ShapeError(argument, "(4, 4)", T.shape)
    if not np.all(np.isfinite(T)):
        raise NonFiniteError(argument, np.flatnonzero(~np.isfinite(T)).tolist())
    if _not_rigid(*_rigid_defects(T)):
        raise ModelError(f"{argument} is not a rigid transform (orthonormal rotation with det +1, "
                         "last row 0 0 0 1)")
    return T


def check_rigid_targets(T: Array) -> None:
    """Raise :class:`InvalidTargetError` unless every ``T (..., 4, 4)`` (finite) is a rigid transform."""
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


def finite_configuration(n_q: int, q) -> list | None:
    """``q`` as a list of floats when it is one finite float64 configuration ``(n_q,)``, else
    None (then the caller runs the full checks of :meth:`RobotModel.check_q`): the check of the
    one-configuration fast paths, a few hundred nanoseconds."""
    if type(q) is np.ndarray and q.shape == (n_q,) and q.dtype == np.float64:
        values = q.tolist()
        if math.isfinite(sum(values)):
            return values
    return None


def is_real(value) -> bool:
    """True for a finite int or float (numpy scalars included, bools excluded)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
        and math.isfinite(value)


def is_whole(value) -> bool:
    """True for a finite whole number (see :func:`is_real`)."""
    return is_real(value) and float(value).is_integer()
