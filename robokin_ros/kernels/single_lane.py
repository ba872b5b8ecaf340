"""The single-configuration lane: one configuration through a generated kernel's compiled entry.

Every public call with a compiled single-configuration entry (``forward_kinematics``,
``jacobian``, the dynamics calls) opens with the same three steps: the guard
:func:`robokin_ros.checks.is_single_vector` on ``q``, one registry lookup of the model's kernel
(its owner's typed accessor), and :func:`single_result`, which owns the rest: whether the
accelerator and the generated kernels are on, the output's allocation, the call, and the entry's
status. When it gives None (the kernel is not loaded yet, the entry refused an input: a wrong
length, a NaN, an argument numba has no signature for) the public function goes on with its
general, checked path, which computes the result or raises the typed error naming the culprit.
"""

from __future__ import annotations

import numpy as np

from ..runtime import current_runtime


def single_result(kernel, out, *inputs) -> np.ndarray | None:
    """``kernel``'s compiled single-configuration entry on ``inputs`` (1-D arrays, ``q`` first),
    written into ``out`` (None: a new array of ``kernel.shape``).

    ``inputs[0]`` must have passed :func:`robokin_ros.checks.is_single_vector` (the caller's
    guard): a call of ``q`` alone into a new array then skips numba's type dispatch
    (:func:`robokin_ros.kernels.accel.direct_entry`). Other inputs and a given ``out`` go through
    the dispatch, which refuses another type, dtype or layout.

    Until the entry is loaded the call counts as one configuration towards loading it in the
    background (see :class:`~robokin_ros.kernels.lazy_accel.LazyAccelerated`) and runs on the
    generic compiled tier's entry where the kernel has one bound (``ready_single``).

    Args:
        kernel: a generated kernel (:class:`~robokin_ros.kernels.fk_codegen.CompiledFK`,
            :class:`~robokin_ros.kernels.dynamics_codegen.CompiledDynamics`), or None (the model
            has none, or it is not built yet).
        out: None or the array to write into (shape checked by the entry; a wrong type, dtype,
            layout or a read-only array is refused by numba's dispatch).
        inputs: the entry's inputs.

    Returns:
        The result (``out`` when given), or None: no kernel, not loaded, switched off
        (the current runtime's ``accelerated`` and ``kind``: :mod:`robokin_ros.runtime`), or the
        entry refused the inputs. The caller then takes its general path.
    """
    if kernel is None:
        return None
    settings = current_runtime().settings
    if settings.kind != "generated" or not settings.accelerated:
        return None
    entry = kernel.accelerated_single
    if entry is None:
        kernel.single_entry()   # counts the call towards loading the robot's own entry (in the background)
        entry = getattr(kernel, "ready_single", None)   # meanwhile the generic compiled tier's, where bound
        if entry is None:
            return None
        result = np.empty(kernel.shape) if out is None else out
    elif out is None:
        result = np.empty(kernel.shape)
        if len(inputs) == 1:   # q, guarded by the caller: no dispatch needed
            entry = kernel.direct_single or entry
    else:
        result = out
    try:
        if entry(*inputs, result) == 0:
            return result
    except TypeError:   # an argument numba's dispatch has no signature for
        pass
    return None
