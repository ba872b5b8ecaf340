"""The generic compiled tier: the robot-agnostic kernels of :mod:`robokin_ros.kernels.generic_numba`
(FK, Jacobians) and :mod:`robokin_ros.kernels.generic_dynamics_numba` (dynamics), loaded once per
process and bound to one model's arrays (the dynamics ones by
:mod:`robokin_ros.kernels.generic_dynamics_tier`).

:func:`generic_kernels` (:mod:`robokin_ros.kernels.installed_kernels`) loads them from numba's
cache beside their files (compiled there once per installation: ``make venv``, or by the first
use on a machine without it, in a separate process in the background while the numpy
recursions, the oracle, answer). :func:`robot_arrays` lays a model out as they
read it (per model, cached); :func:`bound` gives a :class:`Bound` pair of callables for one
kernel of :mod:`robokin_ros.kernels.fk_codegen` (every link's poses, some links' poses in a
layout, one frame's Jacobian, frames' poses + Jacobians): ``single(q, out) -> status`` and the
``batch(qb, out, claims)`` that :func:`robokin_ros.kernels.parallel.run_rows` runs on threads.
"""

from __future__ import annotations

import functools
import os
from typing import NamedTuple

import numpy as np

from .. import model_cache
from ..model import SCALAR_TYPES, RobotModel
from ..runtime import process_state
from . import accel
from .installed_kernels import InstalledKernels, InstalledModule
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


def _collect(modules: list) -> dict:
    """The loaded modules' functions by name, none of which may compile here again (another
    argument type is refused: TypeError)."""
    functions = {}
    for module, (_, _, names, _) in zip(modules, MODULES):
        functions.update({name: getattr(module, name) for name in names})
    for function in functions.values():
        function.disable_compile()
    return functions


def _installed() -> InstalledKernels:
    return InstalledKernels([InstalledModule(name, path, [("warm_up", ())], label) for name, path, _, label in MODULES],
                            _collect, enabled, "the generic compiled kernels are (numpy serves)")


def generic_kernels() -> InstalledKernels:
    """This process's generic kernels (one per process: :func:`robokin_ros.runtime.process_state`):
    ``functions()`` gives them by name once loaded."""
    return process_state("generic kernels", _installed)


def compiled() -> bool:
    """Whether numba's cache holds the generic kernels compiled from these very files."""
    return generic_kernels().compiled()
