"""Which kernels run: the per-robot generated ones (default) or the generic ones, on numba or numpy.

Two switches, read by every entry point at call time (forward kinematics, ``joint_poses`` (/tf),
Jacobians, IK, dynamics, collision): :data:`use_generated` here (the generic kernels are the
generated ones' oracles) and :data:`robokin_ros.kernels.accel.enabled` (the numba accelerator of
the generated kernels). Set them for a block with :func:`use`, read them with :func:`selected`::

    with robokin_ros.kernels.use("generic"):            # the generic kernels
        ...
    with robokin_ros.kernels.use(accelerated=False):    # the generated kernels on numpy
        ...

The setting is process-wide (not per thread, like numpy's print options): a block in one thread
changes what other threads run meanwhile. Assigning ``robokin_ros.kinematics.use_generated_kernels``
or ``robokin_ros.accel.enabled`` still works but is deprecated (a DeprecationWarning names
:func:`use`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import NamedTuple

from ..errors import ArgumentError
from . import accel

#: True: run the per-robot generated kernels where the model allows them; False: the generic
#: kernels. Set it with :func:`use`.
use_generated = True

KINDS = ("generated", "generic")


class Selection(NamedTuple):
    """The kernels that run now (:func:`selected`)."""

    #: ``"generated"`` or ``"generic"``.
    kind: str
    #: The accelerator switch: generated kernels run on numba where it is importable (whether it
    #: is: :func:`robokin_ros.kernels.accel.active`).
    accelerated: bool


def selected() -> Selection:
    """The kernels that run now: their kind and the accelerator switch."""
    return Selection(KINDS[0] if use_generated else KINDS[1], accel.enabled)


@contextlib.contextmanager
def use(kind: str | None = None, *, accelerated: bool | None = None) -> Iterator[Selection]:
    """Run the block with ``"generated"`` or ``"generic"`` kernels and/or the numba accelerator on
    or off (None: unchanged), then restore the previous setting (also on an exception; nested
    blocks restore in turn). Process-wide, not per thread.

    Yields:
        The setting inside the block (:func:`selected`).

    Raises:
        ArgumentError: another ``kind``, or an ``accelerated`` that is not a bool.
    """
    global use_generated
    if kind is not None and kind not in KINDS:
        raise ArgumentError("kind", f"must be one of {KINDS}, got {kind!r}")
    if accelerated is not None and not isinstance(accelerated, bool):
        raise ArgumentError("accelerated", f"must be True, False or None, got {accelerated!r}")
    previous_kind, previous_accelerated = use_generated, accel.enabled
    if kind is not None:
        use_generated = kind == "generated"
    if accelerated is not None:
        accel.enabled = accelerated
    try:
        yield selected()
    finally:   # restores only what the block set
        if kind is not None:
            use_generated = previous_kind
        if accelerated is not None:
            accel.enabled = previous_accelerated
