"""Optional numba accelerator of the generated kernels: the on/off switch and verified loading.

A generated kernel (:mod:`robokin_ros.kernels.fk_codegen`, :mod:`robokin_ros.kernels.dynamics_codegen`)
is wrapped into a numba module by :mod:`robokin_ros.kernels.numba_source`; :func:`load` and
:func:`load_function` compile it, or load numba's compiled code from the disk cache
(:mod:`robokin_ros.kernels.disk_cache`, never trusted: private, verified byte for byte), and check
what they load against its own source run uncompiled (:func:`check_single`, a reference at
:func:`check_configuration`).

Compiling takes seconds (2-4 s for a 6-7-DOF arm, 15-20 s for the 60-link Talos) and runs in a
separate process (:mod:`robokin_ros.kernels.compile_process`), never in the caller's; later
processes load it from the disk cache in well under a second. The first batch of at least
:data:`MIN_BATCH` configurations (the runtime's ``compile_after``) starts compiling (or loading) a
kernel in a background thread (:mod:`robokin_ros.kernels.lazy_accel`) and runs on the generic
compiled tier meanwhile (else the numpy recursions, the oracle);
:func:`robokin_ros.prepare` does it at once (e.g. at start-up). Once loaded, every call of that kernel (smaller batches,
single configurations) uses it.

numba is optional: without it, or with the current runtime's accelerator off
(:class:`robokin_ros.Runtime` ``(accelerated=False)``, ``ROBOKIN_ACCEL=0`` in the environment for
the default runtime, ``robokin_ros.kernels.use(accelerated=False)`` for a block), the numpy
recursions (the oracle) run; results agree with them to rounding.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import sys
import threading
import types
import warnings
import weakref

from ..errors import KernelCheckError
from ..runtime import COMPILE_AFTER, current_runtime, process_state
from . import compile_process, disk_cache
from .compile_record import CompileRecord

#: Configurations after which a kernel not loaded yet starts compiling: the default of the
#: runtime's ``compile_after`` (:data:`robokin_ros.runtime.COMPILE_AFTER`).
MIN_BATCH = COMPILE_AFTER

#: Most distinct generated modules a process loads (``ROBOKIN_MAX_KERNELS`` overrides it). numba
#: never frees loaded code (it keeps every module in LLVM's JIT engine: measured, a robot's FK
#: and IK-loop kernels stay, ~2 MB, after the model is gone), so the compiled code of every
#: distinct robot a process has seen stays; past this many modules further kernels are refused
#: (:func:`load_function` raises, the caller keeps the generic tier or the numpy oracle, with one warning) and
#: the process's compiled code stays within about :data:`MAX_MODULES` x 1 MB (an arm's kernel
#: module: 0.5-1.5 MB). Reloading a robot already seen loads nothing new (one module per source).
MAX_MODULES = 192

#: Most loaded functions shared through :attr:`LoadedModules.functions`; past it a loaded function is not
#: shared (a later load of the same source reads the disk cache again).
MAX_LOADED = 256



class LoadedModules:
    """The compiled modules this process has loaded (one per process, :func:`loaded`: numba keeps
    every module it loads until the process ends)."""

    def __init__(self):
        self.lock = threading.Lock()
        #: Loaded functions by module name (the hash of their generated source), so that every
        #: model with the same generated source shares one compiled function. Keyed by source, not
        #: by model: two models of the same robot (or one reloaded) share the entry. Weak: an entry
        #: lives while a kernel holding it does, and it holds at most :data:`MAX_LOADED` entries.
        self.functions: weakref.WeakValueDictionary[str, object] = weakref.WeakValueDictionary()
        #: The locks of the modules being loaded now, by module name (see :func:`load_function`).
        self.loading: dict[str, threading.Lock] = {}
        #: Names of the generated modules loaded (never freed; at most :func:`module_cap`).
        self.modules: set[str] = set()


def loaded() -> LoadedModules:
    """This process's :class:`LoadedModules` (held by :func:`robokin_ros.runtime.process_state`)."""
    return process_state("loaded kernel modules", LoadedModules)


def module_cap() -> int:
    """Most distinct generated modules this process loads: ``ROBOKIN_MAX_KERNELS`` when set to a
    whole number >= 0, else :data:`MAX_MODULES`."""
    try:
        return max(0, int(os.environ.get("ROBOKIN_MAX_KERNELS", MAX_MODULES)))
    except ValueError:
        return MAX_MODULES


def loaded_modules() -> int:
    """Distinct generated modules this process has loaded (their code stays; see :data:`MAX_MODULES`)."""
    state = loaded()
    with state.lock:
        return len(state.modules)


@functools.cache
def available() -> bool:
    """True when numba imports (tried once per process; a warning when it does not)."""
    found = importlib.util.find_spec("numba") is not None
    if not found:
        logging.getLogger("robokin_ros").warning(
            "numba is not installed: the numpy recursions serve (slower; "
            "pip install numba, or rosdep key python3-numba)")
    return found


def active() -> bool:
    """True when compiled kernels run: the current runtime's accelerator setting and numba importable."""
    return current_runtime().accelerated and available()


def __getattr__(name: str):
    if name == "enabled":   # the former switch, read-only: the current runtime's setting
        return current_runtime().accelerated
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def check_configuration(n_q: int) -> list[float]:
    """A fixed configuration with distinct, generic values (no symmetry hides a wrong entry)."""
    return [0.31 + 0.173 * k - 0.9 * (k % 3) for k in range(n_q)]


def direct_entry(dispatcher):
    """The compiled C entry of a numba dispatcher with one signature: it unboxes its arguments as
    that signature says, without numba's type dispatch (about 100 ns less per call). Unboxing
    refuses another type or dtype (TypeError) but NOT another layout or shape: call it only with
    arguments known to be plain C-contiguous float64 arrays of the signature's dimensions
    (:func:`robokin_ros.checks.is_single_vector`). None when the dispatcher has several signatures.
    """
    signatures = dispatcher.signatures
    return dispatcher.overloads[signatures[0]].entry_point if len(signatures) == 1 else None


def python_entry(single):
    """The uncompiled Python function of a generated module's compiled ``single`` entry
    (numba's public ``py_func``: the very source the compiled code was built from), run by the
    interpreter: the reference :func:`check_single` and :func:`load` check compiled code against."""
    return single.py_func


def _reference(single, input_sizes: tuple[int, ...], shape: tuple[int, ...], x: list):
    """``single``'s uncompiled entry (:func:`python_entry`) on the inputs ``x`` side by side: the
    flattened output, or None when it refuses them (a status other than 0, a division by zero)."""
    import numpy as np

    bounds = np.cumsum((0,) + tuple(input_sizes))
    out = np.empty(shape)
    try:
        with np.errstate(all="ignore"):
            status = python_entry(single)(*[np.array(x[a:b], np.float64) for a, b in zip(bounds[:-1], bounds[1:])],
                                          out)
    except ArithmeticError:
        return None
    return out.reshape(-1) if status == 0 else None


def check_single(single, input_sizes: tuple[int, ...], shape: tuple[int, ...]) -> None:
    """Raise :class:`KernelCheckError` unless the compiled ``single`` entry (see
    :func:`robokin_ros.kernels.numba_source.single_source`) agrees to 1e-9 with its own source
    run by the interpreter (:func:`python_entry`) at :func:`check_configuration`.

    Raises:
        KernelCheckError: another status than 0, or another result.
    """
    import numpy as np

    x = check_configuration(sum(input_sizes))
    bounds = np.cumsum((0,) + tuple(input_sizes))
    out = np.empty(shape)
    status = single(*[np.array(x[a:b]) for a, b in zip(bounds[:-1], bounds[1:])], out)
    expected = _reference(single, input_sizes, shape, x)
    if status != 0 or expected is None or not np.allclose(out.reshape(-1), expected, rtol=1e-9, atol=1e-9,
                                                          equal_nan=True):
        raise KernelCheckError(f"the compiled single entry disagrees with its Python source (status {status})")


def _import_function(path: str, name: str, source: str, entry: str, calls):
    """Run the generated module ``source`` (stored at ``path``) and load its function ``entry``
    and those ``calls`` name from numba's disk cache, by calling each ``function(*args)``."""
    module = types.ModuleType(name)
    module.__file__ = path
    code = compile(source, path, "exec")   # the verified text runs, not whatever the file holds by now
    sys.modules[name] = module   # numba's disk cache resolves the function's module by name ...
    try:
        exec(code, module.__dict__)  # noqa: S102 - our own generated source, checked above
        for function, args in calls:
            getattr(module, function)(*args)   # loaded from the cache (compiled there just before)
    finally:
        del sys.modules[name]    # ... only while loading: nothing accumulates per model
    return getattr(module, entry)


def load(source: str, input_sizes, shape: tuple[int, ...], robot: str = ""):
    """The compiled ``kernel`` of a
    :func:`robokin_ros.kernels.numba_source.wrapper_source` module with its
    :func:`~robokin_ros.kernels.numba_source.single_source` entry (compiled now, in a separate
    process, unless the disk cache has it), or None when the accelerator is not :func:`active`.

    What is loaded is verified: the module on disk must equal ``source`` (else it is rebuilt),
    and the compiled batch kernel's output at a fixed configuration must agree to 1e-9 with the
    module's ``single`` entry run uncompiled by the interpreter (:func:`python_entry`; else the
    entry is purged and rebuilt once). ``input_sizes``: the kernel's inputs' widths (an int: one
    input); ``shape``: one configuration's output. ``robot`` names it in the compile notices.

    Raises:
        OSError: the cache directory is not writable, or ``NUMBA_CACHE_DIR`` is not private.
        KernelCheckError: the kernel disagrees with its source after a rebuild, or its compile
            failed.
    """
    import math

    import numpy as np

    from .parallel import kernel_input

    sizes = (input_sizes,) if isinstance(input_sizes, int) else tuple(input_sizes)
    size = math.prod(shape)
    calls = [("kernel", (*(kernel_input(np.zeros((1, n))) for n in sizes), np.empty((1, size)), np.ones(3, np.int64)))]
    return load_function(source, "kernel", calls, lambda kernel: _agrees(kernel, sizes, tuple(shape)), robot)


def in_cache(source: str) -> bool:
    """Whether the generated module ``source`` has been compiled into numba's disk cache and
    loaded from it (:func:`load_function` would load it without compiling): its
    :class:`~robokin_ros.kernels.compile_record.CompileRecord` holds."""
    name = disk_cache.MODULE_PREFIX + hashlib.sha256(source.encode()).hexdigest()[:24]
    path = os.path.join(disk_cache.cache_dir(), name + ".py")
    return os.path.isfile(path) and CompileRecord(path).holds()


def _gate(name: str) -> threading.Lock:
    """The lock of one module's load (two threads never compile the same module at once)."""
    state = loaded()
    with state.lock:
        return state.loading.setdefault(name, threading.Lock())


def load_function(source: str, entry: str, calls, check=None, robot: str = ""):
    """The compiled function ``entry`` of a generated numba module ``source`` (any module of
    ``@numba.njit(cache=True)`` functions), or None when the accelerator is not :func:`active`.
    Unless numba's disk cache has them, its functions compile first in a separate process
    (:func:`robokin_ros.kernels.compile_process.compile_module`: the caller's thread waits
    without the GIL; never in this process), then load from the cache here. Loaded functions
    are shared by every caller with the same source (one entry per source) and freed with the
    last reference.

    Args:
        source: the module's text; its sha256 names the cache entry.
        entry: the name of the function to return.
        calls: ``(function name, args)`` pairs: each function is called once with ``args``
            (the types it will be called with; picklable), which compiles (in the separate
            process) or loads (here) it.
        check: optional; called with the function, False when it computes a wrong answer (the
            entry is then purged and rebuilt once).
        robot: names the robot in the compile notices (:mod:`robokin_ros.kernels.notices`).

    Raises:
        OSError: the cache directory is not writable, or ``NUMBA_CACHE_DIR`` is not private.
        KernelCheckError: ``check`` fails after a rebuild, or the compile failed.
    """
    if not active():
        return None
    name = disk_cache.MODULE_PREFIX + hashlib.sha256(source.encode()).hexdigest()[:24]
    state = loaded()
    with state.lock:
        function = state.functions.get(name)
    if function is not None:
        return function
    folder = disk_cache.cache_dir()
    disk_cache.check_numba_cache_dir()
    with _gate(name):
        try:
            function = state.functions.get(name) or _build(folder, name, source, entry, calls, check=check,
                                                           robot=robot)
        finally:
            with state.lock:
                state.loading.pop(name, None)
    return function


def _build(folder: str, name: str, source: str, entry: str, calls, *, check, robot: str):
    """:func:`load_function` past its lookups: compile (in a separate process) unless cached,
    load, check; on a failure purge and do it once more."""
    state = loaded()
    with state.lock:
        if name not in state.modules and len(state.modules) >= module_cap():
            raise KernelCheckError(f"this process has loaded {len(state.modules)} compiled kernel modules, its "
                                   "limit (ROBOKIN_MAX_KERNELS; numba never frees them): not loading another")
    for attempt in range(2):
        path = disk_cache.store_module(folder, name, source)
        record = CompileRecord(path)   # our record that numba's cache holds the module (not numba's files)
        if not record.holds():   # a failed compile is not retried
            compile_process.compile_module(path, name, source, calls, robot or "a robot")
        try:
            with state.lock:   # loading runs LLVM's linker in this process: one at a time
                state.modules.add(name)
                function = _import_function(path, name, source, entry, calls)
        except OSError:
            raise
        except Exception as error:  # noqa: BLE001 - e.g. numba unpickling garbage compiled code
            if attempt == 1:
                raise
            warnings.warn(f"robokin_ros.accel: cache entry {name} failed to load ({error!r}); rebuilt",
                          RuntimeWarning, stacklevel=3)
            disk_cache.purge(folder, name)
            continue
        if check is None or check(function):
            break
        disk_cache.purge(folder, name)
        if attempt == 1:
            raise KernelCheckError(f"the compiled function {name} disagrees with its reference after a rebuild")
        warnings.warn(f"robokin_ros.accel: compiled function {name} disagreed with its reference; rebuilt",
                      RuntimeWarning, stacklevel=3)
    try:
        record.write()   # loaded from numba's cache: the next first call loads it without a compile process
    except OSError:   # (an unwritable record: the next first call starts the process again, which loads fast)
        pass
    with state.lock:
        if len(state.functions) < MAX_LOADED:
            state.functions[name] = function
    disk_cache.prune(folder, keep=name)
    return function


def _agrees(kernel, sizes: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Whether the compiled batch ``kernel`` agrees with its module's uncompiled ``single`` entry
    (:func:`_reference`) at :func:`check_configuration`."""
    import math

    import numpy as np

    q = check_configuration(sum(sizes))
    out = np.empty((1, math.prod(shape)))
    call_kernel(kernel, np.array([q], np.float64), out, sizes)
    expected = _reference(kernel.py_func.__globals__["single"], sizes, shape, q)
    return expected is not None and bool(np.allclose(out[0], expected, rtol=1e-9, atol=1e-9, equal_nan=True))


def call_kernel(kernel, x, out, sizes=None) -> None:
    """A batch ``kernel`` of :func:`load` on this thread alone: rows ``x (B, sum(sizes))`` (the
    inputs side by side, ``sizes`` their widths; None: one input) into ``out (B, size)``."""
    import numpy as np

    from .parallel import kernel_input

    inputs = [x] if sizes is None or len(sizes) == 1 else np.split(x, np.cumsum(sizes)[:-1], axis=1)
    kernel(*(kernel_input(a) for a in inputs), out, np.array([0, max(len(x), 1), 0], np.int64))
