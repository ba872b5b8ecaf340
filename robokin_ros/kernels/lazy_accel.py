"""The optional numba kernel behind a generated kernel: loaded on demand, in the background.

:class:`LazyAccelerated` is the state machine shared by the FK kernels
(:class:`~robokin_ros.kernels.fk_codegen.CompiledFK`) and the dynamics kernels
(:class:`~robokin_ros.kernels.dynamics_codegen.CompiledDynamics`): not loaded → loading in a
background thread (which waits, without the GIL, for the compile in a separate process of
:mod:`~robokin_ros.kernels.compile_process`, then loads the result from the disk cache;
callers go on with numpy meanwhile) → loaded, or failed (one warning, numpy kept for good).
Subclasses say how to load (:meth:`_load`) and when to start (:attr:`counts_calls`).

A process that exits while a background compile runs can die in LLVM (SIGSEGV, SIGABRT) as the
interpreter finalises: :func:`stop_background_loads` lets none start any more and waits, with a
bound, for those running (the node calls it on shutdown); :func:`resume_background_loads` lets
them start again (kernels asked meanwhile start loading on their next call).
"""

from __future__ import annotations

import threading
import time
import warnings
import weakref

from . import accel

_lock = threading.Lock()
#: Background loads started and maybe still running.
_loads: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
#: True between :func:`stop_background_loads` and :func:`resume_background_loads`.
_stopped = False


def stop_background_loads(timeout: float) -> bool:
    """Start no more background loads (until :func:`resume_background_loads`) and wait up to
    ``timeout`` [s] for the running ones to end.

    Returns:
        True when none is running any more (the process may exit normally); False when one still
        is after ``timeout`` (exiting through interpreter finalisation could then crash in numba:
        leave with ``os._exit``).
    """
    global _stopped
    with _lock:
        _stopped = True
        running = list(_loads)
    deadline = time.monotonic() + timeout
    for thread in running:
        thread.join(max(0.0, deadline - time.monotonic()))
    return not running_background_loads()


def resume_background_loads() -> None:
    """Let background loads start again after :func:`stop_background_loads` (a no-op otherwise)."""
    global _stopped
    with _lock:
        _stopped = False


def running_background_loads() -> list[threading.Thread]:
    """The background loads running now (threads named ``"robokin_ros accel"``)."""
    with _lock:
        return [thread for thread in _loads if thread.is_alive()]


class LazyAccelerated:
    """Holds a generated kernel's numba counterpart once loaded (:attr:`accelerated`)."""

    #: False: a batch of at least :data:`robokin_ros.kernels.accel.MIN_BATCH` configurations starts
    #: loading; True: that many configurations in all (one batch or many single calls) do.
    counts_calls = False
    #: What the warning of a failed load calls the kernel.
    kind = "numba kernel"

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
        if not accel.enabled:
            return None
        if self._accelerated is None and self._compiling is None and not _stopped:
            if self.counts_calls:
                self._uses += batch
            if (self._uses if self.counts_calls else batch) >= accel.MIN_BATCH and accel.available():
                self._start_loading()
        return self._accelerated

    def _start_loading(self) -> None:
        """Start :meth:`accelerate` in a background thread, unless one is started already or
        :func:`stop_background_loads` holds them."""
        with _lock:
            if _stopped or self._compiling is not None:
                return
            thread = threading.Thread(target=self.accelerate, name="robokin_ros accel", daemon=True)
            _loads.add(thread)
            thread.start()
            self._compiling = thread
