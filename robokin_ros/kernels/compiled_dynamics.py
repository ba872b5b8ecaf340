"""The generated dynamics kernel made callable: :class:`CompiledDynamics`, on one configuration
or a batch, through the fastest tier loaded.

The emitted values (:mod:`robokin_ros.kernels.dynamics_source`) become Python source run on
floats (one configuration) and on numpy arrays of shape ``(B,)`` (batches, in chunks of
:data:`CHUNK`); temporaries are renamed onto a small set of registers once they are dead, so a
batched call frees each intermediate as soon as it is last used.

Where numba is installed, :mod:`robokin_ros.kernels.accel` compiles each kernel (a batch loop
plus a single-configuration entry checking its inputs' shapes and finiteness in the same call)
in a separate process in the background, once :attr:`~robokin_ros.runtime.Settings.compile_after`
configurations have gone through it (one batch or single calls); :func:`robokin_ros.prepare`
loads it at once. Until it is loaded, the generic compiled tier
(:mod:`robokin_ros.kernels.generic_dynamics_tier`: compiled once per installation) runs the
kernels it covers (RNEA, its nonlinear-effects and gravity cases, CRBA and forward dynamics
under a constant gravity), else the numpy / Python-float code; the generated kernel replaces
it by one assignment once loaded (:attr:`CompiledDynamics.ready_single`, :attr:`CompiledDynamics.backend`).
"""

from __future__ import annotations

import math
import threading

import numpy as np

from ..model import RobotModel
from ..runtime import current_runtime
from . import accel, generic_tier, numba_source, parallel
from .dynamics_source import RECIPROCAL, reciprocal
from .emitter import Emitter, allocate_registers, kernel_source, outputs
from .fk_codegen import GENERATED, GENERIC, NUMPY
from .generic_dynamics_tier import bound as generic_bound
from .generic_dynamics_tier import dynamics_arrays
from .lazy_accel import LazyAccelerated

#: Configurations per chunk of a batched generated kernel (larger chunks amortise numpy's
#: per-operation overhead; the temporaries stay cache-sized).
CHUNK = 4096


class CompiledDynamics(LazyAccelerated):
    """A generated dynamics kernel callable on one configuration or a batch.

    ``single(*inputs)`` takes 1-D arrays (``q``, then the kernel's other inputs) and returns an
    array of shape :attr:`shape`; ``batch(*inputs)`` takes ``(B, k)`` arrays and returns
    ``(B,) + shape``. :attr:`gravity_input`: whether the gravity vector is the last input;
    :attr:`input_sizes`: the length of each input. Both use the numba-compiled kernel once it is
    loaded (:meth:`accelerate`), else the generic compiled tier's kernel of the same call
    (:meth:`generic`) where there is one, else the numpy / Python-float code.
    """

    counts_calls = True   # a controller's single calls add up to a batch
    kind = "numba dynamics kernel"

    def __init__(self, model: RobotModel, e: Emitter, values: list, shape: tuple, label: str,
                 input_sizes: tuple, gravity_input: bool = False, generic: tuple | None = None):
        values = allocate_registers(e, [e.plain(x) for x in values])
        names, slots, template = outputs(values, np.zeros(shape))
        self.generated = kernel_source(e, values, names, slots, template)
        namespace: dict = {"inf": math.inf, "nan": math.nan,   # constants that overflowed print as these
                           "recip": reciprocal}
        exec(compile(self.generated.source, f"<robokin {label} {model.name!r}>", "exec"), namespace)  # noqa: S102
        self._batch, self._single = namespace["kernel_batch"], namespace["kernel_all"]
        self.shape, self.gravity_input, self.input_sizes = shape, gravity_input, tuple(input_sizes)
        self._size = self.size = template.size
        # Batched results are assembled from the non-zero entries only (variables and non-zero
        # constants, in flat order), copied as runs of consecutive entries.
        flat = template.reshape(-1)
        nonzero = np.union1d(slots, np.flatnonzero(flat)).astype(np.int64)
        self._rows = np.searchsorted(nonzero, slots)           # row of each returned entry
        self._constants = [(k, flat[s]) for k, s in enumerate(nonzero) if s not in set(slots.tolist())]
        cuts = np.flatnonzero(np.diff(nonzero) != 1) + 1
        starts, stops = np.r_[0, cuts], np.r_[cuts, nonzero.size]
        self._runs = [(int(nonzero[a]), int(a), int(b - a)) for a, b in zip(starts, stops) if b > a]
        self._n_nonzero = nonzero.size
        self._dense = nonzero.size == self._size
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
        kernel = accel.load(self.wrapper_source(), self.input_sizes, self._size,
                            reference=lambda x: self._single(x, math.cos, math.sin), robot=self._robot)
        self._check_single(kernel.py_func.__globals__["single"])
        return kernel

    def _check_single(self, single) -> None:
        """Raise :class:`robokin_ros.errors.KernelCheckError` unless the compiled single entry
        agrees with the Python-float kernel (:func:`robokin_ros.kernels.accel.check_single`)."""
        accel.check_single(single, self.input_sizes, self.shape, lambda x: self._single(x, math.cos, math.sin))

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
        tier, while the robot's own compiles) or :data:`~robokin_ros.kernels.fk_codegen.NUMPY`."""
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
        it; :meth:`single` and :meth:`single_flat` do not count)."""
        return None if self._kernel(1) is None else self.accelerated_single

    def single(self, *inputs: np.ndarray) -> np.ndarray:
        """Kernel output for one configuration (1-D inputs, checked by the caller)."""
        kernel = self._accelerated if current_runtime().accelerated else None   # (counts nothing)
        if kernel is not None:
            out = np.empty((1, self._size))
            accel.call_kernel(kernel, np.concatenate(inputs).reshape(1, -1), out, self.input_sizes)
            return out.reshape(self.shape)
        result = self._generic_single(inputs)
        return result if result is not None else self.single_flat([x for a in inputs for x in a.tolist()])

    def _generic_single(self, inputs) -> np.ndarray | None:
        """The generic tier's result for one configuration (1-D inputs), or None (no generic
        kernel, or its entry refused the inputs)."""
        generic = self.generic()
        if generic is None:
            return None
        out = np.empty(self.shape)
        try:
            return out if generic.single(*inputs, out) == 0 else None
        except TypeError:   # (not C-contiguous float64 vectors)
            return None

    def single_flat(self, inputs: list) -> np.ndarray:
        """Kernel output for one configuration given as one list of floats (inputs concatenated)."""
        kernel = self._accelerated if current_runtime().accelerated else None   # (counts nothing)
        if kernel is not None:
            out = np.empty((1, self._size))
            accel.call_kernel(kernel, np.array([inputs], np.float64), out, self.input_sizes)
            return out.reshape(self.shape)
        if self._generic_request is not None or self._generic is not None:
            flat = np.array(inputs, np.float64)
            result = self._generic_single(np.split(flat, np.cumsum(self.input_sizes)[:-1]))
            if result is not None:
                return result
        return np.array(self._single(inputs, math.cos, math.sin)).reshape(self.shape)

    def batch(self, *inputs: np.ndarray, threads: int | None = None) -> np.ndarray:
        """Outputs ``(B,) + shape`` for ``(B, k)`` checked inputs: the generated numba kernel, else
        the generic tier's, on :func:`~robokin_ros.kernels.parallel.run_rows`' threads
        (bit-identical for every count); else numpy in chunks of :data:`CHUNK`."""
        B = inputs[0].shape[0]
        kernel = self._kernel(B)
        if kernel is None:
            generic = self.generic()
            kernel = None if generic is None else generic.batch
        if kernel is not None:
            out = np.empty((B, self._size))
            parallel.run_rows(kernel, inputs, out, threads)
            return out.reshape((B,) + self.shape)
        out = np.empty((B, self._size)) if self._dense else np.zeros((B, self._size))
        scratch = np.empty((self._n_nonzero, min(B, CHUNK)))
        for k, value in self._constants:
            scratch[k] = value
        for start in range(0, B, CHUNK):
            stop = min(B, start + CHUNK)
            view = scratch[:, :stop - start]
            x = np.concatenate([a[start:stop].T for a in inputs])   # (n inputs, chunk), component-first
            for row, entry in zip(self._rows, self._batch(x, np.cos, np.sin)):
                view[row] = entry
            if self._dense:
                out[start:stop] = view.T
            else:
                block, entries = out[start:stop], view.T.copy()
                for first, k, length in self._runs:
                    block[:, first:first + length] = entries[:, k:k + length]
        return out.reshape((B,) + self.shape)
