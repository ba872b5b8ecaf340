"""The optional numba kernel behind a generated kernel: loaded on demand, in the background.

:class:`LazyAccelerated` is the state machine shared by the FK kernels
(:class:`~robokin_ros.kernels.fk_codegen.CompiledFK`) and the dynamics kernels
(:class:`~robokin_ros.kernels.dynamics_codegen.CompiledDynamics`): not loaded → loading in a
background thread (which waits, without the GIL, for the compile in a separate process of
:mod:`~robokin_ros.kernels.compile_process`, then loads the result from the disk cache;
callers go on with the generic compiled tier, else the numpy oracle, meanwhile) → loaded, or
failed (one warning, the generic tier or the oracle kept for good).
Subclasses say how to load (:meth:`_load`) and when to start (:attr:`counts_calls`).

The background threads are the current runtime's (:meth:`robokin_ros.runtime.Runtime.start_background`):
a process that exits while a background compile runs can die in LLVM (SIGSEGV, SIGABRT) as the
interpreter finalises, so :meth:`~robokin_ros.runtime.Runtime.close` (the node's, on shutdown)
lets none start any more and waits, with a bound, for those running; a runtime made with
``background_compiles=False`` starts none (``prepare`` still loads at once).
"""

from __future__ import annotations

import threading
import warnings

from ..runtime import Runtime, current_runtime
from . import accel


def stop_background_loads(timeout: float) -> bool:
    """The current runtime's :meth:`~robokin_ros.runtime.Runtime.stop_background` (for callers
    that did not make a runtime of their own)."""
    return current_runtime().stop_background(timeout)


def resume_background_loads() -> None:
    """The current runtime's :meth:`~robokin_ros.runtime.Runtime.resume_background`."""
    current_runtime().resume_background()


def running_background_loads() -> list[threading.Thread]:
    """The current runtime's background loads running now (threads named ``"robokin_ros accel"``)."""
    return current_runtime().running_background()


class LazyAccelerated:
    """Holds a generated kernel's numba counterpart once loaded (:attr:`accelerated`)."""

    #: False: a batch of at least :data:`robokin_ros.kernels.accel.MIN_BATCH` configurations starts
    #: loading; True: that many configurations in all (one batch or many single calls) do.
    counts_calls = False
    #: What the warning of a failed load calls the kernel.
    kind = "numba kernel"
    #: Held while a load starts (two threads asking at once start one).
    _starting = threading.Lock()

    def __init__(self):
        self._accelerated = None   # the numba kernel once loaded
        self._accel_failed = False
        self._compiling: threading.Thread | None = None
        self._uses = 0             # configurations seen before the kernel is loaded (counts_calls)

    def _load(self):
        """Load (compile, or read from the disk cache) and check the numba kernel; raise on failure."""
        raise NotImplementedError

    def _installed(self, kernel) -> None:
        """Called with the loaded kernel before it is used (subclasses keep more of it)."""

    def accelerate(self) -> bool:
        """Load the numba-compiled kernel now (compiling it unless the disk cache has it).

        Returns:
            True when the accelerated kernel is in use: :func:`robokin_ros.kernels.accel.active` and
            loading worked (a failure warns once and keeps numpy).
        """
        if not accel.active():
            return False
        if self._accelerated is None and not self._accel_failed:
            try:
                kernel = self._load()
            except Exception as error:  # noqa: BLE001 - an optional accelerator must not break a call
                self._accel_failed = True
                warnings.warn(f"robokin_ros.accel: {self.kind} unavailable, using numpy ({error!r})", RuntimeWarning,
                              stacklevel=2)
            else:
                self._installed(kernel)
                self._accelerated = kernel
        return self._accelerated is not None

    def _kernel(self, batch: int):
        """The accelerated kernel to use for ``batch`` configurations, or None (numpy); starts
        loading it in a background thread when :attr:`counts_calls` says it is time."""
        runtime = current_runtime()
        if not runtime.accelerated:
            return None
        if self._accelerated is None and self._compiling is None:
            if self.counts_calls:
                self._uses += batch
            if (self._uses if self.counts_calls else batch) >= runtime.settings.compile_after and accel.available():
                self._start_loading(runtime)
        return self._accelerated

    def _start_loading(self, runtime: Runtime | None = None) -> None:
        """Start :meth:`accelerate` in one of ``runtime``'s background threads, unless one is
        started already or the runtime starts none (stopped, or ``background_compiles=False``).
        ``runtime``: None for the current one."""
        with self._starting:
            if self._compiling is None:
                self._compiling = (runtime or current_runtime()).start_background(self.accelerate)
