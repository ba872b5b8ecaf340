"""Every core in one call: a batched compiled kernel run over chunks of configurations on threads.

The compiled kernels (numba, ``nogil=True``) release the GIL, so threads run them side by side.
:func:`run_chunks` splits a batch into chunks handed out one at a time (dynamic scheduling: a
thread that finishes early takes the next chunk, so uneven chunks leave no straggler); the
calling thread works too: rows of uneven cost (IK problems, collision checks), whose chunks run
Python too. A batch kernel of rows that all cost the same (FK, Jacobians, dynamics) runs on every
thread at once instead (:func:`run_rows`), the threads taking rows inside the compiled kernel
(:mod:`robokin_ros.kernels.claims`), meeting neither in Python nor at the GIL between chunks.
Every configuration is computed by the same code whatever the chunk or thread, so results are
bit-identical for every thread count.

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

#: Configurations per chunk handed to a thread by :func:`run_chunks`.
CHUNK_ROWS = 1024
#: Rows a thread takes at a time inside a batch kernel (:func:`run_rows`; a multiple of the
#: vectorised sines' block, :data:`robokin_ros.kernels.numba_source.BLOCK`).
CLAIM_ROWS = 128
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


def run_chunks(rows: int, work, threads: int | None = None, *, chunk_rows: int = CHUNK_ROWS,
               min_rows: int = MIN_PARALLEL_ROWS) -> None:
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
            Every chunk is a trip through the GIL (a thread waiting for it waits for the
            operating system to wake it: 15-50 µs measured on a 2-core virtual machine), so
            rows that cost the same take :func:`run_rows` instead.

    Raises:
        ArgumentError: a bad ``threads``. Whatever ``work`` raises (the first, after every
            chunk has run).
    """
    chunks = -(-rows // chunk_rows)
    workers = min(thread_count(threads), chunks)
    if workers <= 1 or rows < min_rows:
        work(0, rows)
        return
    bounds = list(range(0, rows, chunk_rows))
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


def run_rows(kernel, inputs: tuple, out, threads: int | None = None) -> None:
    """``kernel(*inputs, out, claims)`` of a batch kernel (:mod:`robokin_ros.kernels.numba_source`:
    each row computed alone, the GIL released) on :func:`thread_count` threads at once when the
    batch has at least :data:`MIN_PARALLEL_ROWS` rows (else on the calling thread alone): the
    threads take :data:`CLAIM_ROWS` rows at a time inside the kernel
    (:mod:`robokin_ros.kernels.claims`), and the call returns once every row of ``out`` is
    written. ``inputs``: ``(B, k)`` arrays (as :func:`kernel_input` gives them)."""
    rows = out.shape[0]
    inputs = tuple(kernel_input(x) for x in inputs)
    claims = np.array([0, CLAIM_ROWS, 0], np.int64)
    workers = min(thread_count(threads), -(-rows // CLAIM_ROWS)) if rows >= MIN_PARALLEL_ROWS else 1
    if workers > 1:
        pool = _executor(workers - 1)
        for _ in range(workers - 1):   # (one that starts late finds fewer rows, or none, left)
            pool.submit(kernel, *inputs, out, claims)
    kernel(*inputs, out, claims)


def kernel_input(x) -> np.ndarray:
    """``x`` as a batch kernel's input: C-contiguous float64, read-only (a view: the kernels are
    compiled for read-only inputs, so a read-only array from the caller, e.g. a broadcast, and
    a writeable one take the same compiled code; any other type would compile anew)."""
    x = np.ascontiguousarray(x, np.float64)
    if x.flags.writeable:
        x = x.view()
        x.flags.writeable = False
    return x
