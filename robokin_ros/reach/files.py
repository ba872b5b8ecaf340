"""The files of reachability maps, written and read without trusting what is on disk.

:func:`replace_file` writes a file whole or not at all: a private temporary file made by
``tempfile.mkstemp`` in the target's folder (an unpredictable name, opened ``O_EXCL |
O_NOFOLLOW``: a link planted there is never written through), then ``os.replace`` (which
replaces a link at the target, never follows it).

:class:`NpzReader` reads the arrays of an ``.npz`` file (a zip of ``.npy`` files) with every size
checked before anything is inflated or allocated: the file is read through
:func:`~robokin_ros.model.description.read_capped` (regular files only, so a FIFO cannot hang
it; at most ``max_file_bytes``), and each array's ``.npy`` header (shape, dtype) is read and
checked against what the caller expects before its data is: a zip bomb or a header claiming a
huge shape costs a few kilobytes, not gigabytes. No pickles (object arrays are refused).
"""

from __future__ import annotations

import io
import math
import os
import struct
import tempfile
import zipfile
import zlib

import numpy as np

from ..model.description import read_capped

#: Largest ``.npy`` header read (numpy writes 128 bytes or a few more).
MAX_HEADER_BYTES = 4096

#: The error classes a malformed zip or ``.npy`` entry raises while it is read.
_MALFORMED = (zipfile.BadZipFile, zlib.error, EOFError, struct.error, NotImplementedError, RuntimeError,
              ValueError, KeyError, SyntaxError, TypeError, OverflowError)


def replace_file(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary file from ``tempfile.mkstemp`` in the
    same folder (mode 0600), then ``os.replace``; no temporary file is left behind on failure.

    Raises:
        OSError: the folder is not writable, or ``path`` is a directory.
    """
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, path)
    except BaseException:
        try:
            os.remove(temporary)
        except OSError:
            pass
        raise


class NpzReader:
    """The arrays of an ``.npz`` file, each read only after its size and type are checked.

    Args:
        path: the file.
        max_file_bytes: the file's size cap (it is never read past it).
        private: True: refuse a symbolic link and a file not owned by this user or writable by
            group or others (files of a private folder); False: any regular file.

    Raises:
        OSError: unreadable, not a regular file, too large, a link or not private (``strerror``
            says which).
        ValueError: not a zip archive.
    """

    def __init__(self, path: str, max_file_bytes: int, *, private: bool = False):
        data = read_capped(path, max_file_bytes, follow_symlinks=not private, own=private)
        try:
            self._zip = zipfile.ZipFile(io.BytesIO(data))
            infos = self._zip.infolist()
        except _MALFORMED as error:
            raise ValueError(f"not an .npz archive ({error})") from None
        self._entries = {info.filename[:-4]: info for info in infos if info.filename.endswith(".npy")}

    @property
    def names(self) -> list[str]:
        """The arrays the file holds."""
        return list(self._entries)

    def header(self, name: str) -> tuple[tuple[int, ...], np.dtype]:
        """``(shape, dtype)`` of array ``name`` from its ``.npy`` header (its data unread).

        Raises:
            ValueError: absent, malformed, or an object or structured dtype.
        """
        shape, dtype, _, _ = self._header(name)
        return shape, dtype

    def array(self, name: str, shape: tuple[int, ...] | None = None, kinds: str = "biuf",
              max_bytes: int = 1 << 16) -> np.ndarray:
        """Array ``name``, checked before its data is read: dtype kind among ``kinds`` (numpy's
        letters: b bool, i/u integers, f floats, U text), ``shape`` when given, at most
        ``max_bytes`` of data.

        Raises:
            ValueError: absent, malformed, truncated, or not what was expected (the message
                names the array).
        """
        found, dtype, fortran, header_end = self._header(name)
        if dtype.kind not in kinds:
            raise ValueError(f"{name!r} has dtype {dtype}, expected kind {kinds!r}")
        if shape is not None and found != tuple(shape):
            raise ValueError(f"{name!r} has shape {found}, expected {tuple(shape)}")
        nbytes = math.prod(found) * dtype.itemsize
        if nbytes > max_bytes:
            raise ValueError(f"{name!r} would take {nbytes} bytes, more than the limit of {max_bytes}")
        info = self._entries[name]
        try:
            with self._zip.open(info) as f:
                f.read(header_end)   # (the header, checked above)
                out = np.empty(nbytes, dtype=np.uint8)
                view, filled = memoryview(out), 0
                while filled < nbytes:
                    count = f.readinto(view[filled:])
                    if not count:
                        raise ValueError(f"{name!r} is truncated ({filled} of {nbytes} bytes)")
                    filled += count
        except _MALFORMED as error:
            raise ValueError(f"{name!r} is unreadable ({error})") from None
        return out.view(dtype).reshape(found, order="F" if fortran else "C")

    def _header(self, name: str) -> tuple[tuple[int, ...], np.dtype, bool, int]:
        """Shape, dtype, Fortran order and the header's length of array ``name``."""
        info = self._entries.get(name)
        if info is None:
            raise ValueError(f"no array {name!r}")
        try:
            with self._zip.open(info) as f:
                version = np.lib.format.read_magic(f)
                read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
                if version not in read:
                    raise ValueError(f".npy version {version}")
                shape, fortran, dtype = read[version](f, max_header_size=MAX_HEADER_BYTES)
                header_end = f.tell()
        except _MALFORMED as error:
            raise ValueError(f"{name!r} has no readable .npy header ({error})") from None
        if dtype.hasobject or dtype.fields is not None or dtype.kind not in "biufU":
            raise ValueError(f"{name!r} has dtype {dtype} (only plain numbers and text are read)")
        if any(not isinstance(n, int) or n < 0 for n in shape):
            raise ValueError(f"{name!r} has shape {shape}")
        return tuple(shape), dtype, bool(fortran), header_end
