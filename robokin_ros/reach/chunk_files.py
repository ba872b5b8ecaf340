"""The chunk files of resuming, trusted no more than the kernel cache
(:mod:`robokin_ros.kernels.disk_cache`).

A map's chunks go into ``<chunk_dir>/<key>/`` (the key hashes the URDF text and the parameters).
Both folders must be private: directories (not symbolic links) of this user that nobody else
can write, created with mode 0700; any other is refused with a warning and the map is computed
without chunk files (nothing to resume from). Each chunk file (an ``.npz``) carries the format,
the map's key, the chunk's index and an HMAC-SHA256 of all of them and of its arrays, keyed by a
random secret of this user kept in the private kernel cache directory
(:func:`~robokin_ros.kernels.disk_cache.cache_dir`): a chunk planted by someone who cannot read
that secret, or a chunk of another map, index or size, is recomputed, never used; so is a
truncated or corrupt one, a symbolic link, a FIFO or anything but a regular file of this user
(read without blocking, never followed), and a file larger than its chunk can be (its arrays'
sizes are checked before anything is inflated: :class:`~robokin_ros.reach.files.NpzReader`).
Chunk files are written by :func:`~robokin_ros.reach.files.replace_file` (``mkstemp``, then
``os.replace``): whole or absent, never through a planted link.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import os
import secrets
import shutil
import stat
import tempfile
import warnings

import numpy as np

from ..kernels.disk_cache import cache_dir, private_directory_problem, read_entry, remove_entry
from .chunks import ChunkResult
from .files import NpzReader, replace_file

#: The ``format`` entry of a chunk file.
CHUNK_FORMAT = "robokin reach chunk 2"
#: File name of the secret that keys the chunks' digests (in the kernel cache directory).
SECRET_NAME = "reach-chunk-secret"
SECRET_BYTES = 32
#: Bytes a chunk file may hold beyond its two arrays (zip and ``.npy`` headers, the small entries).
CHUNK_OVERHEAD_BYTES = 16_384


def chunk_secret() -> bytes:
    """This user's secret that keys chunk digests (``SECRET_BYTES`` random bytes in the kernel
    cache directory, made on first use; one that is not a private regular file of this user is
    replaced).

    Raises:
        OSError: the cache directory cannot hold it.
    """
    folder = cache_dir()
    path = os.path.join(folder, SECRET_NAME)
    for _ in range(3):
        found = read_entry(path, SECRET_BYTES)
        if found is not None and len(found) == SECRET_BYTES:
            return found
        if found is not None or os.path.lexists(path):
            remove_entry(path)   # short, foreign, a link or not a file
        made = secrets.token_bytes(SECRET_BYTES)
        fd, temporary = tempfile.mkstemp(dir=folder, prefix=SECRET_NAME + ".", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(made)
            os.link(temporary, path)   # made whole, and only if no other process made one first
            return made
        except FileExistsError:
            continue   # another process won: read its secret
        finally:
            os.remove(temporary)
    raise OSError(f"cannot make the chunk secret {path}")


def _folder_problem(path: str) -> str | None:
    """Why ``path`` is not a private folder of this user (never following a link), or None."""
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            return "a symbolic link"
    except OSError as e:
        return e.strerror or str(e)
    return private_directory_problem(path)


class ChunkFolder:
    """The private folder of one map's chunk files (see the module docstring).

    Attributes:
        directory: the folder. key: the map's key. secret: the key of the digests.
    """

    def __init__(self, directory: str, key: str, secret: bytes):
        self.directory, self.key, self._secret = directory, key, secret

    @classmethod
    def open(cls, chunk_dir: str, key: str) -> ChunkFolder | None:
        """The folder ``chunk_dir/key`` (both made with mode 0700 when absent); None, with a
        ``RuntimeWarning`` saying why, when either is not a private folder of this user or the
        digest secret cannot be had."""
        where, problem, secret = chunk_dir, None, None
        try:
            os.makedirs(chunk_dir, mode=0o700, exist_ok=True)
            problem = _folder_problem(chunk_dir)
            if problem is None:
                where = os.path.join(chunk_dir, key)
                try:
                    os.mkdir(where, 0o700)
                except FileExistsError:
                    pass
                problem = _folder_problem(where)
            if problem is None:
                secret = chunk_secret()
        except OSError as e:
            problem = f"cannot be used ({e.strerror or e})"
        if problem is not None:
            warnings.warn(f"robokin_ros.reach: the chunk folder {where!r} is not used ({problem}); the map is "
                          "computed without chunk files, so an interrupted run cannot resume (a chunk folder must "
                          "be a directory of this user that nobody else can write: remove it or chmod 700 it)",
                          RuntimeWarning, stacklevel=3)
            return None
        return cls(os.path.join(chunk_dir, key), key, secret)

    def path(self, index: int) -> str:
        """The file of chunk ``index``."""
        return os.path.join(self.directory, f"chunk-{index:07d}.npz")

    def digest(self, index: int, solved: np.ndarray, manipulability: np.ndarray) -> str:
        """HMAC-SHA256 (hex) of the format, key, index, shape and arrays of a chunk."""
        mac = hmac.new(self._secret, digestmod=hashlib.sha256)
        mac.update(f"{CHUNK_FORMAT}\n{self.key}\n{index}\n{solved.shape}\n".encode())
        mac.update(np.ascontiguousarray(solved, dtype=bool).tobytes())
        mac.update(np.ascontiguousarray(manipulability, dtype="<f8").tobytes())
        return mac.hexdigest()

    def write(self, index: int, result: ChunkResult) -> None:
        """Write chunk ``index`` (atomically, see :func:`~robokin_ros.reach.files.replace_file`)."""
        buffer = io.BytesIO()
        np.savez(buffer, format=np.array(CHUNK_FORMAT), key=np.array(self.key), index=np.array(index, np.int64),
                 solved=result.solved, manipulability=result.manipulability,
                 digest=np.array(self.digest(index, result.solved, result.manipulability)))
        replace_file(self.path(index), buffer.getvalue())

    def read(self, index: int, n_voxels: int, n_orientations: int) -> ChunkResult | None:
        """Chunk ``index`` of ``n_voxels`` × ``n_orientations`` from its file; None when there
        is no file.

        Raises:
            ValueError: a file that is not to be trusted (the message says why): recompute it.
        """
        name = os.path.basename(self.path(index))
        size = n_voxels * n_orientations + 8 * n_voxels
        try:
            reader = NpzReader(self.path(index), size + CHUNK_OVERHEAD_BYTES, private=True)
            header = [str(reader.array(entry, (), "U", 4096)) for entry in ("format", "key", "digest")]
            if header[:2] != [CHUNK_FORMAT, self.key]:
                raise ValueError("of another format or map")
            if int(reader.array("index", (), "iu", 8)) != index:
                raise ValueError("of another chunk")
            solved = reader.array("solved", (n_voxels, n_orientations), "b", size)
            manipulability = reader.array("manipulability", (n_voxels,), "f", size).astype(np.float64)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            raise ValueError(f"{name}: {getattr(error, 'strerror', None) or error}") from None
        if not hmac.compare_digest(header[2], self.digest(index, solved, manipulability)):
            raise ValueError(f"{name}: its digest does not match its content")
        return ChunkResult(solved, manipulability)

    def remove(self) -> None:
        """Delete the folder and every file in it (links are removed, never followed)."""
        shutil.rmtree(self.directory, ignore_errors=True)
