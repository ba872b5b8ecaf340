"""Every core in one call: a batched compiled kernel run over chunks of configurations on threads.

The compiled kernels (numba, ``nogil=True``) release the GIL, so threads run them side by side.
:func:`run_chunks` splits a batch into chunks handed out one at a time (dynamic scheduling: a
thread that finishes early takes the next chunk, so uneven chunks leave no straggler); the
calling thread works too. Rows of uneven cost (IK problems, collision checks) go in chunks of a
fixed size; rows that all cost the same (:func:`run_rows`: FK, Jacobians, dynamics) in "guided"
chunks, large first and small last. Every configuration is computed by the same code whatever
the chunk or thread, so results are bit-identical for every thread count.

How many threads (:func:`thread_count`): the call's ``threads=`` keyword, else the environment
variable ``ROBOKIN_THREADS``, else the process's default (:func:`set_default_threads`: the node
keeps a core for its /tf thread), else every core this process may run on
(``os.sched_getaffinity``); batches smaller than :data:`MIN_PARALLEL_ROWS` run on the calling
thread alone (starting threads would cost more than it saves).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..errors import ArgumentError

#: Configurations per chunk handed to a thread (the fewest of a guided chunk).
CHUNK_ROWS = 1024
#: Smallest batch that is split over threads.
MIN_PARALLEL_ROWS = 4096
#: The environment variable capping the threads of a call without ``threads=``.
ENVIRONMENT = "ROBOKIN_THREADS"

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_default_threads: int | None = None


def available_cores() -> int:
    """The cores this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` elsewhere)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:   # not on Linux
        return max(1, os.cpu_count() or 1)


def set_default_threads(threads: int | None) -> None:
    """Threads of the batched calls of this process that give no ``threads=`` while
    ``ROBOKIN_THREADS`` is unset (None: every core again). A process whose other threads must
    keep a core (the node's /tf thread) caps its calls here.

    Raises:
        ArgumentError: ``threads`` is not None or a whole number >= 1.
    """
    global _default_threads
    _default_threads = None if threads is None else thread_count(threads)


def thread_count(threads: int | None = None) -> int:
    """Threads a batched call uses: ``threads`` when given, else ``ROBOKIN_THREADS`` when set,
    else the process's default (:func:`set_default_threads`), else :func:`available_cores`.

    Raises:
        ArgumentError: ``threads`` (or ``ROBOKIN_THREADS``) is not a whole number >= 1.
    """
    name, value = "threads", threads
    if value is None:
        name, value = ENVIRONMENT, os.environ.get(ENVIRONMENT, "").strip()
        if not value:
            return _default_threads or available_cores()
        try:
            value = int(value)
        except ValueError:
            raise ArgumentError(name, f"must be a whole number >= 1, got {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ArgumentError(name, f"must be a whole number >= 1, got {value!r}")
    return value


def _executor(workers: int) -> ThreadPoolExecutor:
    """The shared pool, grown to at least ``workers`` threads."""
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < workers:
            old, _pool, _pool_size = _pool, ThreadPoolExecutor(workers, thread_name_prefix="robokin_ros"), workers
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def _guided_starts(rows: int, workers: int, chunk_rows: int) -> list[int]:
    """Chunk starts of ``range(rows)``, each chunk ``1 / (2 workers)`` of the rows left (at least
    ``chunk_rows``; OpenMP's "guided" schedule): few large chunks first, small ones last."""
    starts, start = [], 0
    while start < rows:
        starts.append(start)
        start += max(chunk_rows, (rows - start) // (2 * workers))
    return starts


def run_chunks(rows: int, work, threads: int | None = None, *, chunk_rows: int = CHUNK_ROWS,
               min_rows: int = MIN_PARALLEL_ROWS, guided: bool = False) -> None:
    """``work(start, stop)`` over consecutive chunks of ``range(rows)``, on :func:`thread_count`
    threads (the caller's among them) when there are at least ``min_rows`` rows, else as one
    ``work(0, rows)``. Chunks of ``chunk_rows`` rows are handed out one at a time (a thread that
    finishes early takes the next).

    Args:
        rows: the batch size.
        work: computes rows ``start:stop`` alone (e.g. a compiled kernel that releases the GIL
            on slices of its inputs and outputs).
        threads: the cap (see :func:`thread_count`).
        chunk_rows, min_rows: :data:`CHUNK_ROWS` and :data:`MIN_PARALLEL_ROWS` unless the
            rows cost more (IK problems: smaller chunks, fewer rows to pay for the threads).
        guided: for rows that all cost the same: chunks of ``1 / (2 threads)`` of the rows left,
            at least ``chunk_rows`` (:func:`_guided_starts`). Every chunk is a trip through the
            GIL, and a thread waiting for it waits for the operating system to wake it (15-50 µs
            measured on a 2-core virtual machine): fewer, larger chunks pay less; the small last
            ones keep a thread that started late from being the straggler.

    Raises:
        ArgumentError: a bad ``threads``. Whatever ``work`` raises (the first, after every
            chunk has run).
    """
    chunks = -(-rows // chunk_rows)
    workers = min(thread_count(threads), chunks)
    if workers <= 1 or rows < min_rows:
        work(0, rows)
        return
    bounds = _guided_starts(rows, workers, chunk_rows) if guided else list(range(0, rows, chunk_rows))
    chunks, ends = len(bounds), dict(zip(bounds, bounds[1:] + [rows]))
    starts = iter(bounds)   # next() on it is atomic under the GIL
    done = itertools.count(1)
    finished = threading.Event()
    errors: list[BaseException] = []

    def take() -> None:
        for start in starts:
            try:
                work(start, ends[start])
            except BaseException as error:  # noqa: BLE001 - re-raised in the caller
                errors.append(error)
            if next(done) == chunks:
                finished.set()

    pool = _executor(workers - 1)
    for _ in range(workers - 1):
        pool.submit(take)   # a task that starts late finds no chunk left and returns at once
    take()
    _wait(finished)
    if errors:
        raise errors[0]


#: [s] How long the calling thread polls for the last chunks of other threads before it sleeps.
TAIL_POLL = 300e-6


def _wait(finished: threading.Event) -> None:
    """Wait for ``finished``: polling first for up to :data:`TAIL_POLL` (the GIL free between
    polls), then asleep. A thread put to sleep is woken by the operating system 15-50 µs after
    the event on a 2-core virtual machine, as much as the last chunk of a 1 ms batch."""
    deadline = time.perf_counter() + TAIL_POLL
    while not finished.is_set():
        if time.perf_counter() > deadline:
            finished.wait()
            return
        time.sleep(0)   # (releases the GIL: the other threads return from their kernels)


def run_rows(kernel, inputs: tuple, out, threads: int | None = None, join: bool = False) -> None:
    """``kernel(*inputs, out)`` of a batch kernel (each row computed alone, the GIL released)
    over slices of the rows of its ``(B, ...)`` ``inputs`` and ``out``, by :func:`run_chunks`
    with ``guided`` chunks (its rows cost the same: FK, Jacobians, dynamics). ``join``: the
    kernel takes the ``(B, k)`` inputs side by side in one float64 array, joined chunk by chunk
    on the chunk's thread."""
    if join:
        def rows(a: int, b: int) -> None:
            kernel(np.concatenate([x[a:b] for x in inputs], axis=1, dtype=np.float64), out[a:b])
    else:
        def rows(a: int, b: int) -> None:
            kernel(*[x[a:b] for x in inputs], out[a:b])
    run_chunks(out.shape[0], rows, threads, guided=True)
