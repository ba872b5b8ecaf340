"""The generic compiled tier: the robot-agnostic kernels of :mod:`robokin_ros.kernels.generic_numba`
(FK, Jacobians) and :mod:`robokin_ros.kernels.generic_dynamics_numba` (dynamics), loaded once per
process and bound to one model's arrays (the dynamics ones by
:mod:`robokin_ros.kernels.generic_dynamics_tier`).

:class:`GenericKernels` loads them from numba's cache beside their files (compiled there once per
installation: ``make venv``, or by the first use on a machine without it, in a separate process
in the background while the numpy kernels answer). :func:`robot_arrays` lays a model out as they
read it (per model, cached); :func:`bound` gives a :class:`Bound` pair of callables for one
kernel of :mod:`robokin_ros.kernels.fk_codegen` (every link's poses, some links' poses in a
layout, one frame's Jacobian, frames' poses + Jacobians): ``single(q, out) -> status`` and the
``batch(qb, out, claims)`` that :func:`robokin_ros.kernels.parallel.run_rows` runs on threads.
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
import warnings
from typing import NamedTuple

import numpy as np

from .. import model_cache
from ..model import SCALAR_TYPES, RobotModel
from ..runtime import current_runtime, process_state
from . import accel, compile_process, compile_record, disk_cache
from .plan import fk_plan

#: The compiled module, its name and file (numba keys its cache on them).
MODULE = "robokin_ros.kernels.generic_numba"
PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "generic_numba.py")
#: The compiled dynamics module (:mod:`robokin_ros.kernels.generic_dynamics_numba`), its name and file.
DYNAMICS_MODULE = "robokin_ros.kernels.generic_dynamics_numba"
DYNAMICS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "generic_dynamics_numba.py")
#: Output layouts by name (:mod:`robokin_ros.kernels.generic_numba`'s codes).
LAYOUT_CODES = {"4x4": 0, "3x4": 1, "position": 2}
#: The functions loaded.
FUNCTIONS = ("poses_single", "poses_batch", "jacobian_single", "frames_single", "frames_batch")
#: The dynamics functions loaded (:mod:`robokin_ros.kernels.generic_dynamics_tier` binds them).
DYNAMICS_FUNCTIONS = ("rnea_single", "rnea_batch", "nonlinear_single", "nonlinear_batch", "gravity_single",
                      "gravity_batch", "crba_single", "crba_batch", "aba_single", "aba_batch")
#: Every compiled module of the tier: (name, file, functions, what its compile notices call it).
MODULES = ((MODULE, PATH, FUNCTIONS, "every robot (generic FK and Jacobians)"),
           (DYNAMICS_MODULE, DYNAMICS_PATH, DYNAMICS_FUNCTIONS, "every robot (generic dynamics)"))


def enabled() -> bool:
    """Whether the generic tier may serve: the current runtime's accelerator is on (and numba installed)."""
    return accel.active()


class RobotArrays:
    """A model as the generic kernels read it (see :mod:`robokin_ros.kernels.generic_numba`)."""

    def __init__(self, model: RobotModel):
        plan = fk_plan(model)
        n = model.n_links
        self.fdata = np.zeros((n, 36))
        self.idata = np.zeros((n, 4), np.int64)
        self.idata[:, 3] = -1
        self.idata[0, 2:] = model.n_v, model.n_q          # (the root's row holds n_v, n_q)
        self.idata[1:, 0] = plan.anchor[1:]
        for i in plan.fixed_links:
            self.fdata[i, 0:9] = plan.C[i, :3, :3].ravel()
            self.fdata[i, 27:30] = plan.C[i, :3, 3]
        for k, i in enumerate(plan.scalar_links):
            f = self.fdata[i]
            f[0:9], f[9:18], f[18:27] = (x[:, :, k, 0].ravel() for x in (plan.Rc, plan.A1, plan.A2))
            f[27:30], f[30:33] = plan.pc[:, k, 0], plan.Rc_u[:, k, 0]
            f[33], f[34] = plan.scalar_mult[k], plan.scalar_offset[k]
            self.idata[i, 1:3] = 1 if plan.revolute[k] else 2, plan.scalar_q[k]
        self.idata[plan.other_links, 1] = 3
        for i in range(1, n):
            j = i - 1
            src = int(model.velocity_source_joints[j])
            if src >= 0 and model.joint_types[j] in SCALAR_TYPES:
                self.idata[i, 3] = model.joint_v_index[src]
                self.fdata[i, 35] = model.mimic_multiplier[j] if model.is_mimic[j] else 1.0
        self.n_v = model.n_v

    def chain(self, links) -> np.ndarray | None:
        """The links whose poses ``links`` need (their anchors, closed; ascending, without the
        root), or None when a floating or planar joint moves one of them."""
        needed, anchor = set(), self.idata[:, 0]
        for link in links:
            link = int(link)
            while link > 0 and link not in needed:
                needed.add(link)
                link = int(anchor[link])
        chain = np.array(sorted(needed), np.int64)
        return None if np.any(self.idata[chain, 1] == 3) else chain


#: The registry kind (:mod:`robokin_ros.model_cache`) of :func:`robot_arrays`.
GENERIC_ARRAYS = "generic arrays"


def robot_arrays(model: RobotModel) -> RobotArrays:
    """The model's :class:`RobotArrays` (built on first use, kept per model)."""
    return model_cache.cached(model, GENERIC_ARRAYS, None, RobotArrays, (model,))


class Bound(NamedTuple):
    """One kernel of the generic tier bound to a model's arrays."""

    #: ``single(q (n_q,), out) -> status`` (0 written, 1 a non-finite input, 2 a wrong size).
    single: object
    #: ``batch(qb (B, n_q), out (B, size), claims)``: a batch kernel of
    #: :func:`robokin_ros.kernels.parallel.run_rows`.
    batch: object


def _pick(functions: dict, what: str, arrays: RobotArrays, argument) -> Bound | None:
    """:class:`Bound` of ``what`` (``"poses"``: ``argument = (links, layout)``; ``"jacobian"``:
    a link index; ``"frames"``: link indices) on ``arrays``, or None (a floating or planar joint)."""
    if what == "poses":
        links, layout = argument
        chain = arrays.chain(links)
        if chain is None:
            return None
        head = (arrays.fdata, arrays.idata, chain, np.array(links, np.int64), int(layout))
        return Bound(functools.partial(functions["poses_single"], *head),
                     functools.partial(functions["poses_batch"], *head))
    links = (argument,) if what == "jacobian" else tuple(argument)
    chain = arrays.chain(links)
    if chain is None:
        return None
    if what == "jacobian":
        return Bound(functools.partial(functions["jacobian_single"], arrays.fdata, arrays.idata, chain, int(argument)),
                     None)
    head = (arrays.fdata, arrays.idata, chain, np.array(links, np.int64))
    return Bound(functools.partial(functions["frames_single"], *head),
                 functools.partial(functions["frames_batch"], *head))


#: What :func:`bound` gives for kernels the tier does not cover (a floating or planar joint).
NOT_COVERED = Bound(None, None)


def bound(arrays: RobotArrays, what: str, argument) -> Bound | None:
    """The generic tier's kernel ``what`` (see :func:`_pick`) on a model's ``arrays``
    (:func:`robot_arrays`); None while it is not loaded (loading starts here: at once from
    numba's cache, else a compile in the background) or turned off (:func:`enabled`);
    :data:`NOT_COVERED` when a floating or planar joint moves the links asked for."""
    functions = generic_kernels().functions()
    if functions is None:
        return None
    return _pick(functions, what, arrays, argument) or NOT_COVERED


class GenericKernels:
    """The generic kernels loaded from numba's cache beside their file (compiled there first, in
    a separate process, when it lacks them): :meth:`functions`."""

    def __init__(self):
        self._lock = threading.Lock()
        self._loaded: dict | None = None
        self._started = False

    def functions(self) -> dict | None:
        """The compiled functions by name, or None (turned off, numba missing, not loaded yet, or
        failed). The first call loads them when numba's cache has them (a fraction of a second,
        in the calling thread), else starts compiling them in a separate process in the
        background and loading them once compiled (callers run numpy meanwhile)."""
        if self._loaded is not None:
            return self._loaded if enabled() else None
        if not enabled() or self._started:
            return None
        with self._lock:
            if self._started:
                return self._loaded
            self._started = True
        if compiled():
            self.load()
        elif current_runtime().start_background(self.load) is None:   # (the runtime starts none now)
            self._started = False
        return self._loaded

    def load(self) -> bool:
        """Load them now, compiling them first (in a separate process) unless numba's cache has
        them: what ``make venv`` runs once per installation. True when loaded; a failure warns
        once (the numpy kernels serve)."""
        if self._loaded is not None:
            return True
        try:
            disk_cache.check_numba_cache_dir()
            if not compiled():
                for name, path, _, label in MODULES:
                    with open(path, encoding="utf-8") as file:
                        source = file.read()
                    compile_process.compile_module(path, name, source, [("warm_up", ())], label)
            functions = {}
            for name, _, names, _ in MODULES:
                module = importlib.import_module(name)
                module.warm_up()   # loads every signature from numba's cache
                functions.update({function: getattr(module, function) for function in names})
            for function in functions.values():
                function.disable_compile()   # another type refuses (TypeError): never compiles here
        except Exception as error:  # noqa: BLE001 - an optional accelerator must not break a call
            warnings.warn(f"robokin_ros.accel: the generic compiled kernels are unavailable, using numpy ({error!r})",
                          RuntimeWarning, stacklevel=2)
            return False
        try:
            for record in RECORDS:
                record.write()
        except OSError as error:   # (loaded all the same; the next process compiles in a separate one first)
            warnings.warn(f"robokin_ros.accel: cannot record the generic kernels as compiled ({error!r})",
                          RuntimeWarning, stacklevel=2)
        self._started, self._loaded = True, functions
        return True


#: The records of this tier's compile (:mod:`robokin_ros.kernels.compile_record`), one per module,
#: written once loaded.
RECORDS = tuple(compile_record.CompileRecord(path) for _, path, _, _ in MODULES)


def compiled() -> bool:
    """Whether numba's cache holds the generic kernels compiled from these very files, interpreter,
    numba and machine (our own records of it, written after they loaded)."""
    return all(record.holds() for record in RECORDS)


def generic_kernels() -> GenericKernels:
    """This process's generic kernels (one per process: :func:`robokin_ros.runtime.process_state`)."""
    return process_state("generic kernels", GenericKernels)
