"""Which kernels run: the per-robot generated ones (default) or the generic ones, on numba or numpy.

Without numba (``accelerated=False``) the generated kernels do not run at all: the numpy
recursions (the oracle) serve, as under ``"generic"``.

Both are settings of the current :class:`~robokin_ros.runtime.Runtime` (its ``kind`` and
``accelerated``), read by every entry point at call time (forward kinematics, ``joint_poses``
(/tf), Jacobians, IK, dynamics, collision). Change them for a block with :func:`use`, read them
with :func:`selected`::

    with robokin_ros.kernels.use("generic"):            # the generic kernels
        ...
    with robokin_ros.kernels.use(accelerated=False):    # no numba: the numpy oracle
        ...

A block changes the current context's runtime only (``contextvars``): other threads keep theirs,
and the threads a call starts inside the block take the block's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import NamedTuple

from ..errors import ArgumentError
from ..runtime import KINDS, current_runtime

__all__ = ["KINDS", "Selection", "selected", "use"]


class Selection(NamedTuple):
    """The kernels that run now (:func:`selected`)."""

    #: ``"generated"`` or ``"generic"``.
    kind: str
    #: The accelerator setting: compiled kernels run on numba where it is importable (whether it
    #: is: :func:`robokin_ros.kernels.accel.active`).
    accelerated: bool


def selected() -> Selection:
    """The kernels that run now: the current runtime's kind and accelerator setting."""
    runtime = current_runtime()
    return Selection(runtime.kind, runtime.accelerated)


@contextlib.contextmanager
def use(kind: str | None = None, *, accelerated: bool | None = None) -> Iterator[Selection]:
    """Run the block with ``"generated"`` or ``"generic"`` kernels and/or the numba accelerator on
    or off (None: unchanged): the current runtime with those settings
    (:meth:`~robokin_ros.runtime.Runtime.use`), then the previous one again (also on an
    exception; nested blocks restore in turn). This context only, not other threads.

    Yields:
        The setting inside the block (:func:`selected`).

    Raises:
        ArgumentError: another ``kind``, or an ``accelerated`` that is not a bool.
    """
    if kind is not None and kind not in KINDS:
        raise ArgumentError("kind", f"must be one of {KINDS}, got {kind!r}")
    if accelerated is not None and not isinstance(accelerated, bool):
        raise ArgumentError("accelerated", f"must be True, False or None, got {accelerated!r}")
    changes = {name: value for name, value in (("kind", kind), ("accelerated", accelerated)) if value is not None}
    with current_runtime().use(**changes):
        yield selected()
