"""The on-disk cache of the numba kernels, never trusted: a private directory, verified entries.

:func:`cache_dir` is the directory of the generated modules, numba's compiled code of them and
the collision-pair cache. It is private or not used: created with mode 0700, and one owned by
another user or writable by group or others is refused (numba unpickles its index files, so
whoever can write there can run code in this process), falling back to a private directory under
the system's temporary folder with a warning. ``NUMBA_CACHE_DIR``, where numba then keeps its
compiled code, must be private too (:func:`check_numba_cache_dir`).

What :mod:`robokin_ros.kernels.accel` loads from it goes through :func:`store_module`: the
generated module on disk is read with a size cap (no FIFOs, devices or symbolic links) and must
equal its source byte for byte, else it and its compiled code are deleted and it is rewritten;
numba's files of it that are not regular files of the current user are deleted, never unpickled.
:func:`prune` keeps the directory bounded (:data:`MAX_CACHE_ENTRIES` modules), deleting the least
recently used first: every process's first load of a module marks it used (a ``.used`` file
beside it; the module's own stamp is numba's cache key and stays as written).
"""

from __future__ import annotations

import errno
import glob
import os
import shutil
import stat
import tempfile
import threading
import warnings

from ..model.description import read_capped
from ..runtime import process_state

#: Largest cache entry read (a generated module of a 60-link humanoid is ~1 MB).
MAX_ENTRY_BYTES = 16 * 1024 * 1024

#: Most generated modules kept in :func:`cache_dir` (the least recently used are deleted first
#: with their compiled code; ~1 MB each on disk, an arm's kernels 5-10 modules: a day of trying
#: thirty robots fits); ``ROBOKIN_CACHE_MAX_ENTRIES`` overrides it.
MAX_CACHE_ENTRIES = 512

#: Suffix of the marker a module's use touches (:func:`mark_used`).
USED_SUFFIX = ".used"

#: File name prefix of the generated modules (``robokin_kernel_<hash>.py``).
MODULE_PREFIX = "robokin_kernel_"



class Fallback:
    """The private directory used instead of a refused one (made once per process), and the
    refused directories already warned about (one warning each per process)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.folder: str | None = None
        self.warned: set[str] = set()


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


def fallback_state() -> Fallback:
    """This process's :class:`Fallback` (held by :func:`robokin_ros.runtime.process_state`)."""
    return process_state("cache directory fallback", Fallback)


def cache_dir() -> str:
    """Directory of the generated modules, numba's compiled code and the collision-pair cache:
    ``$ROBOKIN_CACHE_DIR``, else ``$XDG_CACHE_HOME/robokin_ros``, else ``~/.cache/robokin_ros``;
    created with mode 0700. One owned by another user or writable by group or others (or that
    cannot be created) is not used: a private ``robokin_ros-<uid>`` in the temporary folder
    serves instead (else a fresh one for this process), with a warning naming the reason.

    Raises:
        OSError: not even a private temporary directory can be made.
    """
    requested = _requested_cache_dir()
    problem = _private_dir(requested)
    if problem is None:
        return requested
    fallback = fallback_state()
    with fallback.lock:
        if fallback.folder is None or private_directory_problem(fallback.folder) is not None:
            shared = os.path.join(tempfile.gettempdir(), f"robokin_ros-{os.getuid()}")
            fallback.folder = shared if _private_dir(shared) is None else tempfile.mkdtemp(prefix="robokin_ros-")
        if requested not in fallback.warned:
            fallback.warned.add(requested)
            warnings.warn(f"robokin_ros: the cache directory {requested!r} is not used ({problem}); using "
                          f"{fallback.folder!r} instead (a cache directory must be owned by this user and writable by "
                          "nobody else, since its files can run code here: chmod 700 it, or set ROBOKIN_CACHE_DIR)",
                          RuntimeWarning, stacklevel=2)
        return fallback.folder


def check_numba_cache_dir() -> None:
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


def _compiled_files(folder: str, name: str) -> list[str]:
    return glob.glob(os.path.join(glob.escape(folder), "__pycache__", glob.escape(name) + ".*"))


def purge(folder: str, name: str) -> None:
    """Delete the generated module ``name`` in ``folder`` and numba's compiled code of it."""
    for path in [os.path.join(folder, name + ".py"), os.path.join(folder, name + USED_SUFFIX)] + \
            _compiled_files(folder, name):
        remove_entry(path)


def mark_used(folder: str, name: str) -> None:
    """Mark the module ``name`` used now (its ``.used`` marker's stamp; :func:`prune` deletes the
    least recently used first). A marker that cannot be written is left alone."""
    path = os.path.join(folder, name + USED_SUFFIX)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except OSError:
        return
    try:
        os.utime(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


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


def store_module(folder: str, name: str, source: str) -> str:
    """Make ``folder/name.py`` hold exactly ``source`` and leave only this user's compiled code of
    it; returns the module's path. An entry that differs (truncated, edited, planted, a link or
    not a file) is never trusted, nor its compiled code: both are deleted (with a warning) and
    the module rewritten. An equal entry is kept as it is (numba's cache index keys on the
    file's stamp). The caller runs ``source``, not the file (which may change after the check).

    Raises:
        OSError: the directory is not writable, or a foreign compiled file cannot be deleted.
    """
    path = os.path.join(folder, name + ".py")
    data = source.encode()
    if read_entry(path, len(data)) != data:
        if os.path.lexists(path):
            warnings.warn(f"robokin_ros.accel: cache entry {path} does not match its source; rebuilt",
                          RuntimeWarning, stacklevel=4)
            purge(folder, name)
        write_entry(path, data)
    _check_compiled_files(folder, name)
    mark_used(folder, name)
    return path


def prune(folder: str, keep: str) -> None:
    """Keep at most ``ROBOKIN_CACHE_MAX_ENTRIES`` (default :data:`MAX_CACHE_ENTRIES`) generated
    modules in ``folder``, deleting the least recently used (:func:`mark_used`; a module never
    marked by its write) but ``keep``."""
    try:
        limit = int(os.environ.get("ROBOKIN_CACHE_MAX_ENTRIES", MAX_CACHE_ENTRIES))
    except ValueError:
        limit = MAX_CACHE_ENTRIES
    modules = glob.glob(os.path.join(glob.escape(folder), MODULE_PREFIX + "*.py"))
    if len(modules) <= limit:
        return

    def age(path):
        stamps = []
        for used in (path, path[:-3] + USED_SUFFIX):
            try:
                stamps.append(os.path.getmtime(used))
            except OSError:
                pass
        return max(stamps, default=0.0)

    for path in sorted(modules, key=age)[:len(modules) - max(limit, 1)]:
        name = os.path.basename(path)[:-3]
        if name != keep:
            purge(folder, name)
