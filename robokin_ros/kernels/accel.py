"""Optional numba accelerator of the generated kernels (:mod:`robokin_ros.kernels.fk_codegen`).

A generated kernel's straight-line body is wrapped in a loop over configurations and compiled
by numba; each configuration's entries (constants included) are written straight into the
configuration-major output, so a batch is one pass over the output with no numpy temporaries.

Compiling takes seconds (2-4 s for a 6-7-DOF arm, 15-20 s for the 60-link Talos), so compiled
code is cached on disk: the wrapper is written as a Python module named by the hash of its
source in :func:`cache_dir` and compiled with numba's ``cache=True``; later processes load it
in well under a second. The first batch of at least :data:`MIN_BATCH` configurations starts
compiling (or loading) a kernel in a background thread and runs on numpy meanwhile;
:func:`robokin_ros.prepare` does it at once (e.g. at start-up). Once loaded, every call of that kernel
(smaller batches, single configurations through
:meth:`robokin_ros.kernels.fk_codegen.CompiledFK.single`) uses it.

The forward-kinematics kernels (every link, and the ``frames=`` / ``layout=`` /
:func:`robokin_ros.link_positions` variants) are wrapped by :func:`vector_trig_wrapper_source`:
per block of configurations the joint angles' sines and cosines are computed first, in SIMD
lanes, instead of two libm calls per joint inside the loop (batched FK of a 6-DOF arm 2.5-3.5x
faster here). The pose + Jacobian kernels of IK and :func:`robokin_ros.jacobian` keep
:func:`wrapper_source`.

Each compiled module also holds a single-configuration entry (:func:`single_source`):
``single(q, ..., out) -> status`` over 1-D arrays, no loop and no copy, checking lengths and
finiteness in the same call; :class:`robokin_ros.Kinematics` and the public functions' single
calls go straight to it (one numba call, ~0.25 µs of dispatch here, plus the kernel).

The cache directory is private or not used: :func:`cache_dir` creates it with mode 0700 and
refuses one owned by another user or writable by group or others (numba unpickles its index
files, so whoever can write there can run code in this process), falling back to a private
directory under the system's temporary folder with a warning. What is loaded from it is
verified: a generated module is read with a size cap (no FIFOs, devices or symbolic links), must
equal the source it is named after byte for byte, and what runs is that source, not the file;
numba's compiled files of it must be regular files of the current user.

numba is optional: without it, with ``ROBOKIN_ACCEL=0`` in the environment, or with
:data:`enabled` set to False, the numpy kernels run. Results agree with them to 1e-12 (the same
operations in the same order; only ``cos``/``sin`` may differ, by at most 2.3e-16).
"""

from __future__ import annotations

import errno
import glob
import hashlib
import importlib.util
import logging
import math
import os
import re
import shutil
import stat
import sys
import tempfile
import threading
import types
import warnings
import weakref

from ..errors import KernelCheckError
from ..model.description import read_capped

#: Use the accelerator when numba is importable. Initially False when the environment variable
#: ``ROBOKIN_ACCEL`` is ``0``, ``off``, ``false`` or ``no``, else True.
enabled = os.environ.get("ROBOKIN_ACCEL", "1").strip().lower() not in ("0", "off", "false", "no")

#: Smallest batch that starts compiling (or loading from the disk cache) a kernel not loaded yet.
MIN_BATCH = 256

#: Bumped when the wrapper's layout changes (part of the hashed source).
_FORMAT = 4

_available: bool | None = None
_lock = threading.Lock()


def available() -> bool:
    """True when numba imports (tried once per process)."""
    global _available
    if _available is None:
        _available = importlib.util.find_spec("numba") is not None
        if not _available and enabled:
            logging.getLogger("robokin_ros").warning(
                "numba is not installed: the generated kernels run on numpy (slower batches; "
                "pip install numba, or rosdep key python3-numba)")
    return _available


def active() -> bool:
    """True when accelerated kernels are used: :data:`enabled` and numba importable."""
    return enabled and available()


def _requested_cache_dir() -> str:
    explicit = os.environ.get("ROBOKIN_CACHE_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "robokin_ros")


def private_directory_problem(path: str) -> str | None:
    """Why the directory ``path`` (followed if a link) is not private, or None when it is one
    owned by the current user and writable by nobody else."""
    try:
        info = os.stat(path)
    except OSError as e:
        return e.strerror or str(e)
    if not stat.S_ISDIR(info.st_mode):
        return "not a directory"
    if info.st_uid != os.getuid():
        return f"owned by uid {info.st_uid}, not by this user (uid {os.getuid()})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"writable by group or others (mode {stat.S_IMODE(info.st_mode):o})"
    return None


def _private_dir(path: str) -> str | None:
    """``path`` created (mode 0700) if absent; the reason it cannot serve as a cache, or None."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as e:
        return f"cannot be created ({e.strerror or e})"
    return private_directory_problem(path)


_fallback: str | None = None
_warned: set[str] = set()


def cache_dir() -> str:
    """Directory of the generated modules, numba's compiled code and the collision-pair cache:
    ``$ROBOKIN_CACHE_DIR``, else ``$XDG_CACHE_HOME/robokin_ros``, else ``~/.cache/robokin_ros``;
    created with mode 0700. One owned by another user or writable by group or others (or that
    cannot be created) is not used: a private ``robokin_ros-<uid>`` in the temporary folder
    serves instead (else a fresh one for this process), with a warning naming the reason.

    Raises:
        OSError: not even a private temporary directory can be made.
    """
    global _fallback
    requested = _requested_cache_dir()
    problem = _private_dir(requested)
    if problem is None:
        return requested
    with _lock:
        if _fallback is None or private_directory_problem(_fallback) is not None:
            shared = os.path.join(tempfile.gettempdir(), f"robokin_ros-{os.getuid()}")
            _fallback = shared if _private_dir(shared) is None else tempfile.mkdtemp(prefix="robokin_ros-")
        if requested not in _warned:
            _warned.add(requested)
            warnings.warn(f"robokin_ros: the cache directory {requested!r} is not used ({problem}); using "
                          f"{_fallback!r} instead (a cache directory must be owned by this user and writable by "
                          "nobody else, since its files can run code here: chmod 700 it, or set ROBOKIN_CACHE_DIR)",
                          RuntimeWarning, stacklevel=2)
        return _fallback


#: Largest cache entry read (a generated module of a 60-link humanoid is ~1 MB).
MAX_ENTRY_BYTES = 16 * 1024 * 1024


def read_entry(path: str, max_bytes: int = MAX_ENTRY_BYTES) -> bytes | None:
    """Bytes of the cache entry ``path``, or None when it is absent or not to be trusted: not a
    regular file of the current user (a FIFO, device, directory or symbolic link), or larger
    than ``max_bytes`` (never read whole)."""
    try:
        return read_capped(path, max_bytes, follow_symlinks=False, own=True)
    except OSError:
        return None


def remove_entry(path: str) -> None:
    """Delete whatever is at ``path`` (a file, a link, or a directory and its contents), if anything."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.remove(path)
    except OSError:
        pass


def write_entry(path: str, data: bytes) -> None:
    """Write a cache entry atomically: a private temporary file in the same directory, then
    ``os.replace``; whatever was at ``path`` (even a directory) is replaced, and no temporary
    file is left behind on failure.

    Raises:
        OSError: the directory is not writable.
    """
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        try:
            os.replace(tmp, path)
        except OSError as e:
            if e.errno not in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST):
                raise
            remove_entry(path)   # a directory where the entry belongs
            os.replace(tmp, path)
    except BaseException:
        remove_entry(tmp)
        raise


def with_stores(body, values, indent: str, early: bool) -> list[str]:
    """The straight-line ``body`` (lines ``    name = expr``) re-indented by ``indent``, with the
    stores ``o[k] = values[k]``: all after it, or (``early``) each variable's right after its
    last assignment (an output's variable is never reassigned after it: its value stays live
    to the end), constants after the body.

    Early stores let each output value die once stored instead of staying live, spilled to
    the stack, until the end: Talos' batched FK of every link 1.4x faster here (0.88 -> 0.60
    µs per configuration into a reused array). They write ``out`` while inputs are still being
    read, so ``out`` must not overlap the inputs.
    """
    last = {}
    if early:
        for n, line in enumerate(body):
            last[line.strip().split(" = ", 1)[0]] = n
    after: dict[int, list[str]] = {}
    tail = []
    for k, x in enumerate(values):
        if isinstance(x, float):
            tail.append(f"{indent}    o[{k}] = {x!r}")
        elif x in last:
            after.setdefault(last[x], []).append(f"{indent}    o[{k}] = {x}")
        else:
            tail.append(f"{indent}    o[{k}] = {x}")
    lines = []
    for n, line in enumerate(body):
        lines.append(indent + line)
        lines += after.get(n, [])
    return lines + tail


def wrapper_source(body, values, n_q: int, early_stores: bool = False) -> str:
    """numba module source defining ``kernel(qb (B, n_q), out (B, len(values)))``.

    Args:
        body: the generated lines (indented by 4), reading ``q[i]``, ``cos`` and ``sin``.
        values: per output entry, a float constant or the name of the variable holding it.
        n_q: configuration size.
        early_stores: store each output as soon as it is computed (see :func:`with_stores`).
    """
    lines = ["# generated by robokin_ros.accel; safe to delete (rebuilt on demand)",
             f"# format {_FORMAT}",
             "from math import cos, inf, nan, sin",
             "import numba",
             "",
             "",
             "@numba.njit(cache=True, nogil=True, error_model='numpy')",
             "def kernel(qb, out):",
             f"    if qb.shape[1] != {n_q} or out.shape[1] != {len(values)} or out.shape[0] != qb.shape[0]:",
             "        raise ValueError('kernel: bad shapes')",
             "    for b in range(qb.shape[0]):",
             "        q = qb[b]",
             "        o = out[b]"]
    lines += with_stores(body, values, "    ", early_stores)
    return "\n".join(lines) + "\n"


#: Configurations per block of :func:`vector_trig_wrapper_source` (its scratch: 3 x n_trig x BLOCK floats).
BLOCK = 128

_REGISTER = re.compile(r"\br\d+\b")
_TRIG_CALL = re.compile(r"(cos|sin)\((r\d+)\)")

#: Vectorisable sin and cos of a contiguous row (fdlibm's ``__kernel_sin`` / ``__kernel_cos``
#: polynomials after a three-part Cody-Waite reduction by pi/2, quadrant chosen without
#: branches, so LLVM runs it in SIMD lanes; within 2e-16 of libm for |x| < 1e5, and libm's own
#: values elsewhere, NaN and inf included).
_SINCOS_SOURCE = """
_P1, _P2, _P3 = 1.57079632673412561417e+00, 6.07710050630396597660e-11, 2.02226624871116645580e-21
_INVPIO2 = 6.36619772367581382433e-01
_S1, _S2, _S3 = -1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04
_S4, _S5, _S6 = 2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10
_C1, _C2, _C3 = 4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05
_C4, _C5, _C6 = -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11


@numba.njit(cache=True, nogil=True, error_model='numpy')
def sincos(x, c, s):
    for i in range(x.shape[0]):
        xi = x[i]
        n = np.floor(xi * _INVPIO2 + 0.5)
        r = ((xi - n * _P1) - n * _P2) - n * _P3
        z = r * r
        sr = r + r * z * (_S1 + z * (_S2 + z * (_S3 + z * (_S4 + z * (_S5 + z * _S6)))))
        hz = 0.5 * z
        w = 1.0 - hz
        cr = w + (((1.0 - w) - hz) + z * z * (_C1 + z * (_C2 + z * (_C3 + z * (_C4 + z * (_C5 + z * _C6))))))
        k = n - 4.0 * np.floor(n * 0.25)
        odd = k == 1.0 or k == 3.0
        sv = cr if odd else sr
        cv = sr if odd else cr
        s[i] = -sv if k >= 2.0 else sv
        c[i] = -cv if (k == 1.0 or k == 2.0) else cv
    for i in range(x.shape[0]):
        if not abs(x[i]) < 1e5:
            c[i] = cos(x[i])
            s[i] = sin(x[i])
"""


def split_trig(body) -> tuple[list[str], list[str]]:
    """``body`` with each ``cos`` / ``sin`` of a value computed from ``q`` alone replaced by a
    read of ``tc[j, i]`` / ``ts[j, i]``, and the expressions (over ``q``, the body's own
    operations in its order, so the values are bit-identical) of those arguments, by ``j``."""
    over_q: dict[str, str] = {}   # register -> its current value as an expression over q only
    arguments: list[str] = []
    slot: dict[str, int] = {}
    lines = []
    for line in body:
        target, expr = line.strip().split(" = ", 1)
        call = _TRIG_CALL.fullmatch(expr)
        if call is not None and call.group(2) in over_q:
            argument = over_q[call.group(2)]
            if argument not in slot:
                slot[argument] = len(arguments)
                arguments.append(argument)
            lines.append(f"    {target} = {'tc' if call.group(1) == 'cos' else 'ts'}[{slot[argument]}, i]")
            over_q.pop(target, None)
            continue
        registers = _REGISTER.findall(expr)
        if "(" not in expr and all(r in over_q for r in registers):
            over_q[target] = "(" + _REGISTER.sub(lambda m: over_q[m.group(0)], expr) + ")"
        else:
            over_q.pop(target, None)
        lines.append(line)
    return lines, arguments


def vector_trig_wrapper_source(body, values, n_q: int) -> str:
    """Like :func:`wrapper_source`, with the ``cos`` / ``sin`` calls taken out of the loop: per
    block of :data:`BLOCK` configurations, every joint angle is computed first, then its sines
    and cosines in SIMD lanes (:data:`_SINCOS_SOURCE`; libm's scalar calls were half of an
    arm's FK), then the straight-line body reads them, storing each output as soon as it is
    computed (:func:`with_stores`). Falls back to :func:`wrapper_source` (early stores too)
    when the body has no trigonometry of ``q``."""
    lines, arguments = split_trig(body)
    if not arguments:
        return wrapper_source(body, values, n_q, early_stores=True)
    head = ["# generated by robokin_ros.accel; safe to delete (rebuilt on demand)",
            f"# format {_FORMAT} vector trig",
            "from math import cos, inf, nan, sin",
            "import numba",
            "import numpy as np",
            _SINCOS_SOURCE,
            "",
            "@numba.njit(cache=True, nogil=True, error_model='numpy')",
            "def kernel(qb, out):",
            f"    if qb.shape[1] != {n_q} or out.shape[1] != {len(values)} or out.shape[0] != qb.shape[0]:",
            "        raise ValueError('kernel: bad shapes')",
            "    B = qb.shape[0]",
            f"    scratch = np.empty((3, {len(arguments)}, min(B, {BLOCK})))",
            "    ta, tc, ts = scratch[0], scratch[1], scratch[2]",
            f"    for start in range(0, B, {BLOCK}):",
            f"        m = min({BLOCK}, B - start)",
            "        for i in range(m):",
            "            q = qb[start + i]"]
    head += [f"            ta[{j}, i] = {a}" for j, a in enumerate(arguments)]
    head += [f"        for j in range({len(arguments)}):",
             "            sincos(ta[j, :m], tc[j, :m], ts[j, :m])",
             "        for i in range(m):",
             "            q = qb[start + i]",
             "            o = out[start + i]"]
    head += with_stores(lines, values, "        ", early=True)
    return "\n".join(head) + "\n"


_Q_READ = re.compile(r"\bq\[(\d+)\]")


def single_source(body, values, input_sizes: tuple[int, ...], shape: tuple[int, ...], mimic_terms=(),
                  early_stores: bool = False) -> str:
    """numba source (to append to a :func:`wrapper_source` or :func:`vector_trig_wrapper_source`
    module) of ``single(x_0, ..., x_k, out) -> status``: one configuration, straight-line, no
    copy of the inputs, no allocation. Sines and cosines are libm's scalar calls: for one
    configuration they beat :func:`vector_trig_wrapper_source`'s SIMD blocks (whose scratch
    costs an allocation; UR5 FK 0.36 vs 0.45 µs per call here, Talos no faster either).

    The inputs are 1-D C-contiguous float64 arrays of ``input_sizes`` (the body's ``q[i]``
    reads them in order, concatenated); ``out`` is a C-contiguous float64 array of ``shape``,
    every entry written. Compiled eagerly for exactly these types (any other argument raises
    TypeError instead of compiling a specialisation). Status: 0 ``out`` filled; 1 a NaN or inf
    input, or a mimic joint value ``multiplier * q[index] + offset`` (``mimic_terms``, as
    :attr:`RobotModel.mimic_terms`) that overflows; 2 a wrong length or shape (``out`` untouched
    unless 0). With ``early_stores`` (:func:`with_stores`) ``out`` must not overlap an input;
    without, it may (every input is read before ``out`` is written).
    """
    args = ["q"] + [f"x{k}" for k in range(1, len(input_sizes))]
    starts = [sum(input_sizes[:k]) for k in range(len(input_sizes))]

    def reads(line: str) -> str:
        def read(match):
            i = int(match.group(1))
            k = max(k for k, start in enumerate(starts) if start <= i)
            return f"{args[k]}[{i - starts[k]}]"
        return _Q_READ.sub(read, line)

    checks = [f"{x}.shape[0] != {n}" for x, n in zip(args, input_sizes)]
    checks += [f"out.shape[{k}] != {n}" for k, n in enumerate(shape)]
    out_type = "float64[" + ", ".join([":"] * (len(shape) - 1) + ["::1"]) + "]"
    signature = f"int64({', '.join(['float64[::1]'] * len(args) + [out_type])})"
    size = math.prod(shape)
    lines = ["", "", f"@numba.njit({signature!r}, cache=True, nogil=True, error_model='numpy')",
             f"def single({', '.join(args)}, out):",
             f"    if {' or '.join(checks)}:",
             "        return 2",
             "    s = 0.0"]
    for x, n in zip(args, input_sizes):
        lines += [f"    for k in range({n}):", f"        s += {x}[k] * 0.0"]   # inf * 0 and nan * 0 are nan
    lines += [f"    s += ({multiplier!r} * q[{index}] + {offset!r}) * 0.0" for _, index, multiplier, offset
              in mimic_terms]
    lines += ["    if s != 0.0:", "        return 1",
              "    o = out" if len(shape) == 1 else f"    o = out.reshape({size})"]
    lines += with_stores([reads(line) for line in body], values, "", early_stores)
    lines.append("    return 0")
    return "\n".join(lines) + "\n"


def check_single(single, input_sizes: tuple[int, ...], shape: tuple[int, ...], reference) -> None:
    """Raise :class:`KernelCheckError` unless the compiled ``single`` entry (see
    :func:`single_source`) agrees to 1e-9 with ``reference`` (a list of the concatenated inputs'
    floats -> the flattened output's values) at :func:`check_configuration`.

    Raises:
        KernelCheckError: another status than 0, or another result.
    """
    import numpy as np

    x = check_configuration(sum(input_sizes))
    bounds = np.cumsum((0,) + tuple(input_sizes))
    out = np.empty(shape)
    status = single(*[np.array(x[a:b]) for a, b in zip(bounds[:-1], bounds[1:])], out)
    expected = np.reshape(np.asarray(reference(x), np.float64), shape)
    if status != 0 or not np.allclose(out, expected, rtol=1e-9, atol=1e-9, equal_nan=True):
        raise KernelCheckError(f"the compiled single entry disagrees with the Python kernel (status {status})")


#: Most generated modules kept in :func:`cache_dir` (the oldest are deleted first with their
#: compiled code); ``ROBOKIN_CACHE_MAX_ENTRIES`` overrides it.
MAX_CACHE_ENTRIES = 128

#: Loaded kernels by module name, shared by every model with the same generated source and
#: freed with the last of them.
_KERNELS: weakref.WeakValueDictionary[str, object] = weakref.WeakValueDictionary()


def check_configuration(n_q: int) -> list[float]:
    """A fixed configuration with distinct, generic values (no symmetry hides a wrong entry)."""
    return [0.31 + 0.173 * k - 0.9 * (k % 3) for k in range(n_q)]


def _compiled_files(folder: str, name: str) -> list[str]:
    return glob.glob(os.path.join(glob.escape(folder), "__pycache__", glob.escape(name) + ".*"))


def _purge(folder: str, name: str) -> None:
    """Delete a generated module and numba's compiled code of it."""
    for path in [os.path.join(folder, name + ".py")] + _compiled_files(folder, name):
        remove_entry(path)


def _foreign(path: str, kind=stat.S_ISREG) -> bool:
    """True when ``path`` exists but is not of ``kind`` (a regular file; never a link) or not the
    current user's. (Its mode does not matter: the private cache directory keeps others out.)"""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return False
    return not kind(info.st_mode) or info.st_uid != os.getuid()


def _check_compiled_files(folder: str, name: str) -> None:
    """Delete a ``__pycache__`` that is not a directory of this user, and numba's files of
    ``name`` that are not regular files of this user (numba unpickles them).

    Raises:
        OSError: such a directory or file could not be deleted.
    """
    pycache = os.path.join(folder, "__pycache__")
    for path, kind in [(pycache, stat.S_ISDIR)] + [(p, stat.S_ISREG) for p in _compiled_files(folder, name)]:
        if _foreign(path, kind):
            remove_entry(path)
            if os.path.lexists(path):
                raise OSError(errno.EPERM, f"{path} is not this user's and cannot be deleted")


def _prune(folder: str, keep: str) -> None:
    """Keep at most ``ROBOKIN_CACHE_MAX_ENTRIES`` (default :data:`MAX_CACHE_ENTRIES`) modules."""
    try:
        limit = int(os.environ.get("ROBOKIN_CACHE_MAX_ENTRIES", MAX_CACHE_ENTRIES))
    except ValueError:
        limit = MAX_CACHE_ENTRIES
    modules = glob.glob(os.path.join(folder, "robokin_kernel_*.py"))
    if len(modules) <= limit:
        return

    def age(path):
        try:
            return os.path.getmtime(path)
        except OSError:
            return 0.0

    for path in sorted(modules, key=age)[:len(modules) - max(limit, 1)]:
        name = os.path.basename(path)[:-3]
        if name != keep:
            _purge(folder, name)


def _import_function(folder: str, name: str, source: str, entry: str, warm_up):
    """Write (if absent or different) and run a generated module; compile or load its function
    ``entry`` by calling ``warm_up`` on it."""
    path = os.path.join(folder, name + ".py")
    data = source.encode()
    on_disk = read_entry(path, len(data))
    if on_disk != data:
        if os.path.lexists(path):   # truncated, edited, planted or not a file: never trust it, nor its compiled code
            warnings.warn(f"robokin_ros.accel: cache entry {path} does not match its source; rebuilt",
                          RuntimeWarning, stacklevel=3)
            _purge(folder, name)
        write_entry(path, data)   # numba's cache index keys on the file's stamp: written once
    _check_compiled_files(folder, name)
    module = types.ModuleType(name)
    module.__file__ = path
    code = compile(source, path, "exec")   # the verified text runs, not whatever the file holds by now
    sys.modules[name] = module   # numba's disk cache resolves the function's module by name ...
    try:
        exec(code, module.__dict__)  # noqa: S102 - our own generated source, checked above
        function = getattr(module, entry)
        warm_up(function)   # compile (or load) and cache now
    finally:
        del sys.modules[name]    # ... only while compiling: nothing accumulates per model
    return function


def _check_numba_cache_dir() -> None:
    """numba keeps compiled code in ``NUMBA_CACHE_DIR`` instead when it is set: it must be private too.

    Raises:
        OSError: it is set and not a private directory.
    """
    numba_dir = os.environ.get("NUMBA_CACHE_DIR")
    if numba_dir:
        problem = _private_dir(numba_dir)
        if problem is not None:
            raise OSError(errno.EPERM, f"NUMBA_CACHE_DIR {numba_dir!r} is {problem}: numba would unpickle "
                                       "files others can plant there")


def load(source: str, n_q: int, size: int, reference=None):
    """The compiled ``kernel`` of a :func:`wrapper_source` (compiled now unless the disk cache
    has it), or None when the accelerator is not :func:`active`.

    What is loaded is verified: the module on disk must equal ``source`` (else it is rebuilt),
    and with ``reference`` (the numpy kernel: a list of ``n_q`` floats -> the ``size`` output
    values) the compiled kernel's output at a fixed configuration must agree with it to 1e-9
    (else the entry is purged and rebuilt once).

    Raises:
        OSError: the cache directory is not writable, or ``NUMBA_CACHE_DIR`` is not private.
        KernelCheckError: the kernel disagrees with ``reference`` after a rebuild.
    """
    import numpy as np

    def warm_up(kernel):
        kernel(np.zeros((1, n_q)), np.empty((1, size)))

    check = None if reference is None else (lambda kernel: _agrees(kernel, reference, n_q, size))
    return load_function(source, "kernel", warm_up, check)


def load_function(source: str, entry: str, warm_up, check=None):
    """The compiled function ``entry`` of a generated numba module ``source`` (any module of
    ``@numba.njit(cache=True)`` functions; compiled now unless the disk cache has it), or None
    when the accelerator is not :func:`active`. Loaded functions are shared by every caller
    with the same source (one entry per source) and freed with the last reference.

    Args:
        source: the module's text; its sha256 names the cache entry.
        entry: the name of the function to return.
        warm_up: called with the function once, with arguments of the types it will be called
            with: compiles (or loads) it.
        check: optional; called with the function, False when it computes a wrong answer (the
            entry is then purged and rebuilt once).

    Raises:
        OSError: the cache directory is not writable, or ``NUMBA_CACHE_DIR`` is not private.
        KernelCheckError: ``check`` fails after a rebuild.
    """
    if not active():
        return None
    name = "robokin_kernel_" + hashlib.sha256(source.encode()).hexdigest()[:24]
    with _lock:
        function = _KERNELS.get(name)
    if function is not None:
        return function
    folder = cache_dir()
    _check_numba_cache_dir()
    with _lock:
        function = _KERNELS.get(name)
        if function is not None:
            return function
        for attempt in range(2):
            try:
                function = _import_function(folder, name, source, entry, warm_up)
            except OSError:
                raise
            except Exception as error:  # noqa: BLE001 - e.g. numba unpickling garbage compiled code
                if attempt == 1:
                    raise
                warnings.warn(f"robokin_ros.accel: cache entry {name} failed to load ({error!r}); rebuilt",
                              RuntimeWarning, stacklevel=2)
                _purge(folder, name)
                continue
            if check is None or check(function):
                break
            _purge(folder, name)
            if attempt == 1:
                raise KernelCheckError(f"the compiled function {name} disagrees with its reference after a rebuild")
            warnings.warn(f"robokin_ros.accel: compiled function {name} disagreed with its reference; rebuilt",
                          RuntimeWarning, stacklevel=2)
        _KERNELS[name] = function
        _prune(folder, keep=name)
    return function


def _agrees(kernel, reference, n_q: int, size: int) -> bool:
    import numpy as np

    q = check_configuration(n_q)
    out = np.empty((1, size))
    kernel(np.array([q], np.float64), out)
    expected = np.asarray(reference(q), np.float64)
    return bool(np.allclose(out[0], expected, rtol=1e-9, atol=1e-9, equal_nan=True))
