"""Loading the generic IK loop (:mod:`robokin_ros.ik.generic_loop`): compiled once per installation.

The loop's numba functions live in :mod:`~robokin_ros.ik.generic_loop` (numba keys its cache on
that file); this module says with which argument types they compile (:func:`row_calls` serves
every generated loop too), whether the loop may serve (:func:`enabled`) and loads it once per
process (:data:`KERNELS`, an :class:`~robokin_ros.kernels.installed_kernels.InstalledKernels`:
``make venv`` compiles it, step 4b of ``tools/bootstrap_ros_env.sh``; else the first use does, in
a separate process in the background).
"""

from __future__ import annotations

import os

import numpy as np

from ..kernels import accel
from ..kernels.installed_kernels import InstalledKernels, InstalledModule
from . import generic_loop
from .chain_arrays import pack


def _calls() -> list:
    """``(function, args)`` compiling :func:`~robokin_ros.ik.generic_loop.run` and
    :func:`~robokin_ros.ik.generic_loop.run_many` for every chain (a one-joint chain's arrays:
    the types every call has)."""
    chain = pack({"origins": np.eye(4)[None], "kinds": [1], "axes": [[0.0, 0.0, 1.0]], "source": [0],
                  "multiplier": [1.0], "offset": [0.0], "column": [0], "free_q": [0], "lower": [-1.0], "upper": [1.0],
                  "wrap": [False], "restart_q": [0], "restart_lo": [0.0], "restart_width": [1.0],
                  "restart_step": [0.5], "weights": np.ones(6), "tolerances": [1e-10, 1e-10]})
    width = 2 * 1 + 12 + 7
    return [("run", (np.zeros(width), 1, 1.0, *chain)),
            ("run_many", (np.zeros((1, width)), np.zeros(1, np.int64), 1.0, 1.0, *chain)), *row_calls(1, 12)]


def row_calls(n_q: int, n_t: int) -> list:
    """``(function, args)`` compiling :func:`~robokin_ros.ik.loop_layout.start_rows` and
    :func:`~robokin_ros.ik.loop_layout.finish_rows` (in the generic loop and in every generated
    loop) with the types of every call: C-contiguous writeable arrays, for ``n_q`` coordinates and
    ``n_t`` target components."""
    width, one = 2 * n_q + n_t + 7, np.zeros(1)
    return [("start_rows", (np.zeros((1, width)), np.zeros((1, n_q)), np.zeros((1, n_t)), 0, 1, 0)),
            ("finish_rows", (np.zeros((1, width)), np.zeros(1, np.int64), np.zeros(1, np.int8),
                             (np.zeros((1, n_q)), np.zeros(1, np.int64), one, one.copy(), np.zeros(1, bool),
                              np.ones(1, bool))))]


#: The environment variable that turns the generic loop off (``0``, ``off``, ``false``, ``no``).
ENVIRONMENT = "ROBOKIN_GENERIC_IK"


def enabled() -> bool:
    """Whether the generic loop may serve (:data:`ENVIRONMENT` not off, the accelerator active)."""
    return (os.environ.get(ENVIRONMENT, "1").strip().lower() not in ("0", "off", "false", "no")
            and accel.active())


def _collect(modules: list) -> tuple:
    loop = modules[0]
    return loop.run, loop.run_many, loop.start_rows, loop.finish_rows


#: The process's generic IK loop: ``KERNELS.functions()`` is ``(run, run_many, start_rows,
#: finish_rows)`` once loaded, else None.
KERNELS = InstalledKernels([InstalledModule(generic_loop.__name__, os.path.abspath(generic_loop.__file__), _calls(),
                                            "every robot (the generic IK loop)")],
                           _collect, enabled, "the generic IK loop is (the numpy path serves)")
#: The record of the loop's compile, written once its functions are loaded.
RECORD = KERNELS.records[0]


def compiled() -> bool:
    """Whether the loop's functions are compiled in numba's cache for this very file,
    interpreter, numba and machine (our own record of it,
    :class:`~robokin_ros.kernels.compile_record.CompileRecord`; one left by an older copy of the
    file does not count: numba would compile again, in this process)."""
    return KERNELS.compiled()


def generic_kernels() -> InstalledKernels:
    """The process's generic IK loop (:data:`KERNELS`; what ``make venv`` loads, step 4b of
    ``tools/bootstrap_ros_env.sh``, as :func:`robokin_ros.kernels.generic_tier.generic_kernels`
    for the FK tier)."""
    return KERNELS
