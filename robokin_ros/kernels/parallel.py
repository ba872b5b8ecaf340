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

How many threads: the current runtime's :meth:`~robokin_ros.runtime.Runtime.thread_count` (its
cap, else every core this process may use, never more than the cores other processes leave free
now); batches smaller than :data:`MIN_PARALLEL_ROWS` run on the calling thread alone (starting
threads would cost more than it saves). The worker threads are the runtime's.
"""

from __future__ import annotations

import itertools
import threading
import time

import numpy as np

from ..free_cores import available_cores
from ..runtime import current_runtime, whole_number

__all__ = ["CHUNK_ROWS", "CLAIM_ROWS", "MIN_PARALLEL_ROWS", "available_cores", "check_threads", "kernel_input",
           "run_chunks", "run_rows", "thread_count"]

#: Configurations per chunk handed to a thread by :func:`run_chunks`.
CHUNK_ROWS = 1024
#: Rows a thread takes at a time inside a batch kernel (:func:`run_rows`; a multiple of the
#: vectorised sines' block, :data:`robokin_ros.kernels.numba_source.BLOCK`).
CLAIM_ROWS = 128
#: Smallest batch that is split over threads.
MIN_PARALLEL_ROWS = 4096


def check_threads(threads: int | None) -> None:
    """Refuse a per-call ``threads`` cap that is not None or a whole number >= 1 (whatever path
    the call then takes).

    Raises:
        ArgumentError: naming ``threads``.
    """
    if threads is not None:
        whole_number("threads", threads)


def thread_count(threads: int | None = None) -> int:
    """Threads a batched call uses now: the current runtime's
    :meth:`~robokin_ros.runtime.Runtime.thread_count` (``threads``: a per-call cap).

    Raises:
        ArgumentError: ``threads`` is not None or a whole number >= 1.
    """
    return current_runtime().thread_count(threads)


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
    runtime = current_runtime()
    chunks = -(-rows // chunk_rows)
    workers = 1 if rows < min_rows else min(runtime.thread_count(threads), chunks)
    if workers <= 1:
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

    with runtime.alongside(workers - 1, take):   # a task that starts late finds no chunk left and returns at once
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
    if rows >= MIN_PARALLEL_ROWS:
        runtime = current_runtime()
        workers = min(runtime.thread_count(threads), -(-rows // CLAIM_ROWS))
        if workers > 1:   # (one that starts late finds fewer rows, or none, left)
            with runtime.alongside(workers - 1, kernel, *inputs, out, claims):
                kernel(*inputs, out, claims)   # (returns once every row is written)
            return
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
