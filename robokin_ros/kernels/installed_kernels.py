"""Kernels of any robot, compiled once per installation: the one loader of the generic tiers.

The generic FK, Jacobian and dynamics kernels (:mod:`robokin_ros.kernels.generic_tier`) and the
generic IK loop (:mod:`robokin_ros.ik.generic_loop_loading`) are numba modules of the package
itself (``cache=True``: numba keeps their code beside their files). :class:`InstalledKernels`
loads them: at once in the calling thread when our own record says numba's cache holds them
(:class:`~robokin_ros.kernels.compile_record.CompileRecord`, a fraction of a second), else by
compiling them first in a separate process (:mod:`robokin_ros.kernels.compile_process`) in one
of the current runtime's background threads while callers run their slower tier. ``make venv``
calls :meth:`InstalledKernels.load` once per installation.
"""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import NamedTuple

from ..runtime import current_runtime
from . import compile_process, compile_record, disk_cache


class InstalledModule(NamedTuple):
    """One numba module of the package compiled once per installation."""

    #: Its import name (numba's cache records the module of the code it holds).
    name: str
    #: Its file.
    path: str
    #: ``(function, args)`` pairs whose calls compile (in the separate process) or load (here) it.
    calls: Sequence[tuple[str, tuple]]
    #: What its compile notices call it.
    label: str


class InstalledKernels:
    """The functions of ``modules``, loaded once per process (:meth:`functions`).

    Args:
        modules: the modules, compiled and loaded in this order.
        collect: ``collect(loaded modules)`` -> what :meth:`functions` returns once loaded.
        enabled: whether they may serve now (e.g. the current runtime's accelerator on).
        what: names them in the warning of a failed load.
    """

    def __init__(self, modules: Sequence[InstalledModule], collect: Callable[[list], object],
                 enabled: Callable[[], bool], what: str):
        self.modules = tuple(modules)
        self.records = tuple(compile_record.CompileRecord(m.path) for m in self.modules)
        self._collect, self._enabled, self._what = collect, enabled, what
        self._lock = threading.Lock()
        self._loaded = None
        self._started = False

    def compiled(self) -> bool:
        """Whether numba's cache holds every module compiled from these very files, interpreter,
        numba and machine (our own records of it, written once they loaded)."""
        return all(record.holds() for record in self.records)

    def functions(self):
        """What ``collect`` made of the loaded modules, or None (not enabled, not loaded yet, or
        failed). The first call loads them when :meth:`compiled` (in the calling thread: call it
        before a time budget starts), else starts compiling and loading them in one of the
        current runtime's background threads."""
        if not self._enabled():
            return None
        if self._loaded is not None or self._started:
            return self._loaded
        with self._lock:
            if self._started:
                return self._loaded
            self._started = True
        if self.compiled():
            self.load()
        elif current_runtime().start_background(self.load) is None:   # (the runtime starts none now)
            self._started = False
        return self._loaded

    def load(self) -> bool:
        """Load them now, compiling them first (in a separate process) unless :meth:`compiled`:
        what ``make venv`` runs. True when loaded (and recorded as compiled); a failure warns once
        (the slower tier serves)."""
        if self._loaded is not None:
            return True
        try:
            disk_cache.check_numba_cache_dir()
            if not self.compiled():
                for module in self.modules:
                    with open(module.path, encoding="utf-8") as file:
                        source = file.read()
                    compile_process.compile_module(module.path, module.name, source, list(module.calls), module.label)
            loaded = []
            for module in self.modules:
                imported = importlib.import_module(module.name)
                for function, args in module.calls:   # loads every signature from numba's cache
                    getattr(imported, function)(*args)
                loaded.append(imported)
            functions = self._collect(loaded)
        except Exception as error:  # noqa: BLE001 - an optional accelerator must not break a call
            warnings.warn(f"robokin_ros.accel: {self._what} unavailable ({error!r})", RuntimeWarning, stacklevel=2)
            return False
        try:
            for record in self.records:
                record.write()
        except OSError as error:   # (loaded all the same; the next process compiles in a separate one first)
            warnings.warn(f"robokin_ros.accel: cannot record {self._what} as compiled ({error!r})", RuntimeWarning,
                          stacklevel=2)
        self._started, self._loaded = True, functions
        return True
