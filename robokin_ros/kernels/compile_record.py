"""Our own record that numba's disk cache holds a module's functions compiled.

numba keeps compiled code in files of its own (an index and object files, their format its
private matter) and offers no public way to ask whether a function would load from them or
compile. Where that decides which thread may call a function first (a compile holds the GIL for
seconds), the caller writes a :class:`CompileRecord` once the functions are loaded, and reads it
back before the next first call: it names everything numba's cached code depends on (the
module's file: path, bytes, the modification time and size numba checks; the interpreter, numba
and llvmlite versions; the machine numba compiles for; ``NUMBA_CACHE_DIR``), so a changed file,
upgrade or machine reads as not compiled.

The record sits beside numba's files where numba keeps them beside the module (the
``__pycache__`` folder next to it: deleting that folder deletes both), else in the kernel cache
directory (:func:`robokin_ros.kernels.disk_cache.cache_dir`). numba's files deleted alone leave a
record that holds: the next first call then compiles in its thread once (and numba's cache is
whole again).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

from . import disk_cache

#: The format of a record's content.
RECORD_FORMAT = 1
#: Largest record read.
MAX_RECORD_BYTES = 64 * 1024


class CompileRecord:
    """The record of the compile of the module at ``path`` (numba, ``cache=True``)."""

    def __init__(self, path: str):
        self.path = os.path.abspath(path)
        self.name = os.path.splitext(os.path.basename(self.path))[0]

    def key(self) -> bytes:
        """What the module's cached code depends on, as JSON (see the module's docstring).

        Raises:
            OSError: the module's file cannot be read.
            ImportError: numba or llvmlite is missing.
        """
        import llvmlite
        import numba
        from llvmlite import binding

        info = os.stat(self.path)
        with open(self.path, "rb") as file:
            digest = hashlib.sha256(file.read()).hexdigest()
        key = {"format": RECORD_FORMAT, "path": self.path, "sha256": digest, "mtime_ns": info.st_mtime_ns,
               "size": info.st_size, "python": sys.version, "numba": numba.__version__,
               "llvmlite": llvmlite.__version__, "cpu": binding.get_host_cpu_name(),
               "features": binding.get_host_cpu_features().flatten(),
               "numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR", "")}
        return json.dumps(key, sort_keys=True).encode()

    def location(self) -> str:
        """The record's file: in the ``__pycache__`` folder beside the module when numba keeps
        its code there (``NUMBA_CACHE_DIR`` unset, the folder writable), else in the kernel cache
        directory (named after the module's path)."""
        folder = os.path.join(os.path.dirname(self.path), "__pycache__")
        beside = folder if os.path.isdir(folder) else os.path.dirname(self.path)
        if not os.environ.get("NUMBA_CACHE_DIR") and os.access(beside, os.W_OK):
            return os.path.join(folder, f"{self.name}.robokin-compiled")
        digest = hashlib.sha256(self.path.encode()).hexdigest()[:16]
        return os.path.join(disk_cache.cache_dir(), f"{self.name}-{digest}.robokin-compiled")

    def holds(self) -> bool:
        """The record is there and names this very module, interpreter, numba and machine."""
        try:
            return disk_cache.read_entry(self.location(), MAX_RECORD_BYTES) == self.key()
        except (OSError, ImportError):
            return False

    def write(self) -> None:
        """Record that the module's functions are compiled in numba's cache (call once they
        are loaded from it, or compiled into it).

        Raises:
            OSError: the record cannot be written.
        """
        path = self.location()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        disk_cache.write_entry(path, self.key())

    def remove(self) -> None:
        """Delete the record (the next first call compiles, or loads, in a separate process first)."""
        disk_cache.remove_entry(self.location())
