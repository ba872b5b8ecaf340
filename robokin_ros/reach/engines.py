"""Where the chunks run: this process, local worker processes, or Ray tasks on a cluster.

Every engine yields ``(index, ChunkResult)`` as chunks finish (any order) and computes each
with :func:`~robokin_ros.reach.chunks.run_chunk`, so the engines differ only in speed.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from ..errors import ArgumentError
from ..runtime import Runtime, using
from .chunks import ChunkResult, ReachJob, run_chunk
from .failures import ReachWorkerError

#: Chunks queued per worker (local) or per cluster CPU (Ray) beyond the running ones: keeps the
#: workers busy without holding every pending result in memory.
QUEUE_PER_WORKER = 2
#: Seconds a Ray cluster address (``host:port`` or ``ray://host:port``) has to accept a TCP
#: connection before the run starts; else the run fails at once, naming the address.
RAY_CONNECT_TIMEOUT_S = 5.0


def run_here(job: ReachJob, chunks: Sequence[int]) -> Iterator[tuple[int, ChunkResult]]:
    """Chunks in this process, in order."""
    for index in chunks:
        yield run_chunk(job, index)


# The job of a local worker process, set once by the pool's initializer (tasks then carry an index).
_WORKER_JOB: ReachJob | None = None


def _install(job: ReachJob) -> None:
    global _WORKER_JOB
    _WORKER_JOB = job
    # Ctrl-C in a terminal reaches the whole process group: the parent stops the run and says
    # what it kept; the workers finish their chunk quietly (no traceback each).
    signal.signal(signal.SIGINT, signal.SIG_IGN)


#: A worker process's runtime: one core per worker (the pool is the parallelism; a chunk's IK
#: batch would otherwise use every core).
ONE_THREAD = Runtime(threads=1, background_compiles=False)


def _worker_chunk(index: int) -> tuple[int, ChunkResult]:
    with using(ONE_THREAD):
        return run_chunk(_WORKER_JOB, index)


def run_processes(job: ReachJob, chunks: Sequence[int], workers: int) -> Iterator[tuple[int, ChunkResult]]:
    """Chunks in ``workers`` local processes (started with ``spawn``: no state inherited).
    Stopped early (Ctrl-C, closed), it cancels the queued chunks and waits for the running ones.

    Raises:
        ReachWorkerError: a worker process ended abruptly (killed, out of memory, or a script
            without an ``if __name__ == "__main__":`` guard).
    """
    if workers == 1 or len(chunks) <= 1:
        yield from run_here(job, chunks)
        return
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=min(workers, len(chunks)), mp_context=context, initializer=_install,
                               initargs=(job,))
    try:
        yield from _bounded(lambda index: pool.submit(_worker_chunk, index), lambda f: f.result(),
                            _wait_futures, chunks, workers * (1 + QUEUE_PER_WORKER))
    except BrokenProcessPool:
        raise ReachWorkerError("a worker process ended abruptly (killed, out of memory, or a script that starts "
                               'workers without an `if __name__ == "__main__":` guard)') from None
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _wait_futures(pending):
    done, rest = wait(pending, return_when=FIRST_COMPLETED)
    return list(done), list(rest)


def run_ray(job: ReachJob, chunks: Sequence[int], address: str | None) -> Iterator[tuple[int, ChunkResult]]:
    """Chunks as Ray tasks (one CPU each). Uses the Ray session of this process if one is
    initialised; else connects to ``address`` (``"auto"``: the cluster this machine belongs to;
    ``"local"``: a new single-machine cluster of all its cores; else ``host:port`` or
    ``ray://host:port``, which must accept a connection within :data:`RAY_CONNECT_TIMEOUT_S`).
    The job goes into Ray's object store once; each worker process prepares it once (the
    kernels from the numba disk cache of its machine).

    Raises:
        ArgumentError: Ray is not installed (``pip install -r tools/requirements-ray.txt``), or
            the cluster cannot be reached.
        ReachWorkerError: a task or the cluster failed during the run.
    """
    try:
        import ray
    except ImportError:
        raise ArgumentError("ray", "Ray is not installed (pip install -r tools/requirements-ray.txt)") from None
    if not ray.is_initialized():
        check_ray_address(address)
        try:
            ray.init(address=None if address == "local" else address, include_dashboard=False,
                     runtime_env={"env_vars": {"PYTHONPATH": _source_root()}} if address == "local" else None)
        except (ConnectionError, RuntimeError, ValueError, TimeoutError) as error:
            raise ArgumentError("ray", f"cannot connect to the Ray cluster {address!r} "
                                       f"({_first_line(error)})") from None
    job_ref = ray.put(job)
    task = ray.remote(num_cpus=1)(run_chunk)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    try:
        yield from _bounded(lambda index: task.remote(job_ref, index), ray.get,
                            lambda pending: ray.wait(pending, num_returns=1), chunks, cpus * (1 + QUEUE_PER_WORKER),
                            cancel=lambda pending: [ray.cancel(ref) for ref in pending])
    except ray.exceptions.RayError as error:
        raise ReachWorkerError(f"a Ray task failed ({type(error).__name__}: {_first_line(error)})") from None


def _first_line(error: BaseException) -> str:
    """The first line of an error's message (at most 200 characters), or its type's name."""
    text = str(error).strip()
    return text.splitlines()[0][:200] if text else type(error).__name__


def check_ray_address(address: str | None) -> None:
    """Refuse at once a ``host:port`` or ``ray://host:port`` address that does not accept a TCP
    connection within :data:`RAY_CONNECT_TIMEOUT_S` (Ray itself retries for minutes); ``None``,
    ``"auto"`` and ``"local"`` pass.

    Raises:
        ArgumentError: malformed, or nothing accepts a connection there.
    """
    if address in (None, "auto", "local"):
        return
    where = address[len("ray://"):] if address.startswith("ray://") else address
    host, _, port = where.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ArgumentError("ray", f"{address!r} is not auto, local, HOST:PORT or ray://HOST:PORT")
    try:
        socket.create_connection((host, int(port)), timeout=RAY_CONNECT_TIMEOUT_S).close()
    except OSError as error:
        reason = "no answer" if isinstance(error, TimeoutError) else error.strerror or str(error)
        raise ArgumentError("ray", f"no Ray cluster reachable at {address} ({reason} within "
                                   f"{RAY_CONNECT_TIMEOUT_S:g} s)") from None


def _bounded(submit, result, wait_one, chunks: Sequence[int], limit: int,
             cancel=None) -> Iterator[tuple[int, ChunkResult]]:
    """Submit ``chunks`` keeping at most ``limit`` in flight; yield results as they finish.
    Stopped early, ``cancel(pending)`` is called on the chunks still in flight."""
    queue = list(reversed(chunks))
    pending = []
    try:
        while queue or pending:
            while queue and len(pending) < limit:
                pending.append(submit(queue.pop()))
            done, pending = wait_one(pending)
            for handle in done:
                yield result(handle)
    finally:
        if pending and cancel is not None:
            cancel(pending)


def _source_root() -> str:
    """The folder holding the ``robokin_ros`` package this process runs (for Ray workers)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
