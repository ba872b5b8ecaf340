"""The generated dynamics kernel made callable: :class:`CompiledDynamics`, on one configuration
or a batch, through the fastest compiled tier loaded.

The emitted values (:mod:`robokin_ros.kernels.dynamics_source`) become straight-line code that
:mod:`robokin_ros.kernels.accel` compiles with numba (a batch loop plus a single-configuration
entry checking its inputs' shapes and finiteness in the same call) in a separate process in the
background, once :attr:`~robokin_ros.runtime.Settings.compile_after` configurations have gone
through it (one batch or single calls); :func:`robokin_ros.prepare` loads it at once. Until it
is loaded, the generic compiled tier (:mod:`robokin_ros.kernels.generic_dynamics_tier`: compiled
once per installation) runs the kernels it covers (RNEA, its nonlinear-effects and gravity
cases, CRBA and forward dynamics under a constant gravity); the generated kernel replaces it by
one assignment once loaded (:attr:`CompiledDynamics.ready_single`,
:attr:`CompiledDynamics.backend`). When neither runs, :meth:`CompiledDynamics.single` and
:meth:`CompiledDynamics.batch` give None and the caller runs the numpy recursions of
:mod:`robokin_ros.dynamics` (the oracle).
"""

from __future__ import annotations

import threading

import numpy as np

from ..model import RobotModel
from ..runtime import current_runtime
from . import accel, generic_tier, numba_source, parallel
from .dynamics_source import RECIPROCAL
from .emitter import Emitter, finish
from .fk_codegen import GENERATED, GENERIC, NUMPY
from .generic_dynamics_tier import bound as generic_bound
from .generic_dynamics_tier import dynamics_arrays
from .lazy_accel import LazyAccelerated


class CompiledDynamics(LazyAccelerated):
    """A generated dynamics kernel callable on one configuration or a batch.

    ``single(*inputs)`` takes 1-D arrays (``q``, then the kernel's other inputs) and returns an
    array of shape :attr:`shape`; ``batch(*inputs)`` takes ``(B, k)`` arrays and returns
    ``(B,) + shape``. :attr:`gravity_input`: whether the gravity vector is the last input;
    :attr:`input_sizes`: the length of each input. Both use the numba-compiled kernel once it is
    loaded (:meth:`accelerate`), else the generic compiled tier's kernel of the same call
    (:meth:`generic`) where there is one, else give None (the caller runs the oracle).
    """

    counts_calls = True   # a controller's single calls add up to a batch
    kind = "numba dynamics kernel"

    def __init__(self, model: RobotModel, e: Emitter, values: list, shape: tuple, label: str,
                 input_sizes: tuple, gravity_input: bool = False, generic: tuple | None = None):
        self.generated = finish(e, values, np.zeros(shape))
        self.label = label   # (what it computes: e.g. "crba")
        self.shape, self.gravity_input, self.input_sizes = shape, gravity_input, tuple(input_sizes)
        self._size = self.size = self.generated.template.size
        # once loaded: the numba single entry, and the same without type dispatch (accel.direct_entry)
        self.accelerated_single = self.direct_single = None
        #: The compiled ``single(*inputs, out) -> status`` that runs now: :attr:`accelerated_single`
        #: once loaded, else the generic tier's once bound (:meth:`generic`), else None. Replaced
        #: by one assignment when the generated kernel loads.
        self.ready_single = None
        # the generic tier's kernel: (arrays, call, gravity) of generic_dynamics_tier.bound until
        # bound, then its Bound
        self._generic_request = None if generic is None else (dynamics_arrays(model), *generic)
        self._generic: generic_tier.Bound | None = None
        self._swap = threading.Lock()
        self._mimic_terms, self._robot = model.mimic_terms, model.name   # (the name: compile notices)
        super().__init__()

    def wrapper_source(self) -> str:
        """The numba module of this kernel: :func:`robokin_ros.kernels.numba_source.wrapper_source`'s batch
        ``kernel(x_1 (B, k_1), ..., out (B, size), claims)`` and
        :func:`robokin_ros.kernels.numba_source.single_source`'s ``single(x_1, ..., x_k, out) -> status``
        over 1-D float64 inputs and an output of :attr:`shape` (0: ``out`` filled; 1: a non-finite
        input or mimic joint value; 2: a wrong length)."""
        body = [RECIPROCAL.sub(r"(1.0 / (\1))", line) for line in self.generated.body]   # numpy error model: ±inf
        return numba_source.wrapper_source(body, self.generated.values, self.input_sizes) + \
            numba_source.single_source(body, self.generated.values, self.input_sizes, self.shape, self._mimic_terms)

    def _load(self):
        kernel = accel.load(self.wrapper_source(), self.input_sizes, self.shape, robot=self._robot)
        self._check_single(kernel.py_func.__globals__["single"])
        return kernel

    def _check_single(self, single) -> None:
        """Raise :class:`robokin_ros.errors.KernelCheckError` unless the compiled single entry
        agrees with its own source run uncompiled (:func:`robokin_ros.kernels.accel.check_single`)."""
        accel.check_single(single, self.input_sizes, self.shape)

    def _installed(self, kernel) -> None:
        single = kernel.py_func.__globals__["single"]
        with self._swap:
            self.accelerated_single = single
            self.direct_single = accel.direct_entry(single)
            self.ready_single = single

    @property
    def backend(self) -> str:
        """What runs now: :data:`~robokin_ros.kernels.fk_codegen.GENERATED` (the robot's own
        compiled kernel), :data:`~robokin_ros.kernels.fk_codegen.GENERIC` (the generic compiled
        tier, while the robot's own compiles) or :data:`~robokin_ros.kernels.fk_codegen.NUMPY`
        (neither: the caller runs the numpy recursions, the oracle)."""
        if self.accelerated_single is not None and accel.active():
            return GENERATED
        return GENERIC if self.generic() is not None else NUMPY

    def load_in_background(self) -> None:
        """Start loading the generated numba kernel in a background thread now (compiling it in
        a separate process unless the disk cache has it), unless it is loaded, loading, failed,
        or the accelerator is off; calls meanwhile run the generic tier (:meth:`generic`)."""
        if accel.active() and self.accelerated_single is None:
            self._start_loading()

    def generic(self) -> generic_tier.Bound | None:
        """The generic compiled tier's kernel computing what this kernel computes
        (:func:`robokin_ros.kernels.generic_dynamics_tier.bound`), or None: the accelerator
        switched off, the tier not loaded yet (its loading starts here), or not covering this
        kernel (a gravity input, the centre of mass)."""
        bound = self._generic
        if bound is None and self._generic_request is not None and accel.active():
            bound = generic_bound(*self._generic_request)
            if bound is None:
                return None
            with self._swap:
                self._generic, self._generic_request = bound, None
                if self.ready_single is None:
                    self.ready_single = bound.single
        return bound if bound is not None and bound.single is not None and accel.active() else None

    def single_entry(self):
        """The compiled ``single(*inputs, out) -> status`` once loaded (see
        :meth:`wrapper_source`), else None; counts as one configuration towards loading it (the
        single-configuration lane, :func:`robokin_ros.kernels.single_lane.single_result`, calls
        it; :meth:`single` does not count)."""
        return None if self._kernel(1) is None else self.accelerated_single

    def single(self, *inputs: np.ndarray) -> np.ndarray | None:
        """Kernel output for one configuration (1-D inputs, checked by the caller) on the
        compiled tier that runs now; None when none runs (the caller runs the oracle)."""
        kernel = self._accelerated if current_runtime().accelerated else None   # (counts nothing)
        if kernel is not None:
            out = np.empty((1, self._size))
            accel.call_kernel(kernel, np.concatenate(inputs).reshape(1, -1), out, self.input_sizes)
            return out.reshape(self.shape)
        generic = self.generic()
        if generic is None:
            return None
        out = np.empty(self.shape)
        try:
            return out if generic.single(*(np.ascontiguousarray(x, np.float64) for x in inputs), out) == 0 else None
        except TypeError:   # (an argument numba has no signature for: the oracle)
            return None

    def batch(self, *inputs: np.ndarray, threads: int | None = None) -> np.ndarray | None:
        """Outputs ``(B,) + shape`` for ``(B, k)`` checked inputs: the generated numba kernel, else
        the generic tier's, on :func:`~robokin_ros.kernels.parallel.run_rows`' threads
        (bit-identical for every count); None when neither runs (the caller runs the oracle)."""
        B = inputs[0].shape[0]
        kernel = self._kernel(B)
        if kernel is None:
            generic = self.generic()
            kernel = None if generic is None else generic.batch
            if kernel is None:
                return None
        out = np.empty((B, self._size))
        parallel.run_rows(kernel, inputs, out, threads)
        return out.reshape((B,) + self.shape)
