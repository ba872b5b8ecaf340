"""Which kernels run: the per-robot generated ones (default) or the generic ones.

Every entry point reads :data:`use_generated` at call time: forward kinematics, ``joint_poses``
(/tf), Jacobians, IK and dynamics. The generic kernels are the generated ones' oracles; switch
with :func:`use` (a context manager) or by assigning ``robokin_ros.kinematics.use_generated_kernels``
(the documented switch, which sets this one). The numba accelerator of the generated kernels has
its own switch, :data:`robokin_ros.accel.enabled`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from ..errors import ArgumentError

#: True: run the per-robot generated kernels where the model allows them; False: the generic kernels.
use_generated = True

KINDS = ("generated", "generic")


@contextlib.contextmanager
def use(kind: str) -> Iterator[None]:
    """Run the block with ``"generated"`` or ``"generic"`` kernels, then restore the setting.

    The setting is process-wide (not per thread), like numpy's print options.

    Raises:
        ArgumentError: another ``kind``.
    """
    global use_generated
    if kind not in KINDS:
        raise ArgumentError("kind", f"must be one of {KINDS}, got {kind!r}")
    previous, use_generated = use_generated, kind == "generated"
    try:
        yield
    finally:
        use_generated = previous
