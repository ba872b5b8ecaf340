"""Where the chunks run: this process, local worker processes, or Ray tasks on a cluster.

Every engine yields ``(index, ChunkResult)`` as chunks finish (any order) and computes each
with :func:`~robokin_ros.reach.chunks.run_chunk`, so the engines differ only in speed.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

from ..errors import ArgumentError
from .chunks import ChunkResult, ReachJob, run_chunk

#: Chunks queued per worker (local) or per cluster CPU (Ray) beyond the running ones: keeps the
#: workers busy without holding every pending result in memory.
QUEUE_PER_WORKER = 2


def run_here(job: ReachJob, chunks: Sequence[int]) -> Iterator[tuple[int, ChunkResult]]:
    """Chunks in this process, in order."""
    for index in chunks:
        yield run_chunk(job, index)


# The job of a local worker process, set once by the pool's initializer (tasks then carry an index).
_WORKER_JOB: ReachJob | None = None


def _install(job: ReachJob) -> None:
    global _WORKER_JOB
    _WORKER_JOB = job


def _worker_chunk(index: int) -> tuple[int, ChunkResult]:
    return run_chunk(_WORKER_JOB, index)


def run_processes(job: ReachJob, chunks: Sequence[int], workers: int) -> Iterator[tuple[int, ChunkResult]]:
    """Chunks in ``workers`` local processes (started with ``spawn``: no state inherited)."""
    if workers == 1 or len(chunks) <= 1:
        yield from run_here(job, chunks)
        return
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=min(workers, len(chunks)), mp_context=context, initializer=_install,
                             initargs=(job,)) as pool:
        yield from _bounded(lambda index: pool.submit(_worker_chunk, index), lambda f: f.result(),
                            _wait_futures, chunks, workers * (1 + QUEUE_PER_WORKER))


def _wait_futures(pending):
    done, rest = wait(pending, return_when=FIRST_COMPLETED)
    return list(done), list(rest)


def run_ray(job: ReachJob, chunks: Sequence[int], address: str | None) -> Iterator[tuple[int, ChunkResult]]:
    """Chunks as Ray tasks (one CPU each). Uses the Ray session of this process if one is
    initialised; else connects to ``address`` (``"auto"``: the cluster this machine belongs to;
    ``"local"``: a new single-machine cluster of all its cores; else ``host:port`` or
    ``ray://host:port``). The job goes into Ray's object store once; each worker process
    prepares it once (the kernels from the numba disk cache of its machine).

    Raises:
        ArgumentError: Ray is not installed (``pip install -r tools/requirements-ray.txt``).
    """
    try:
        import ray
    except ImportError:
        raise ArgumentError("ray", "Ray is not installed (pip install -r tools/requirements-ray.txt)") from None
    if not ray.is_initialized():
        ray.init(address=None if address == "local" else address, include_dashboard=False,
                 runtime_env={"env_vars": {"PYTHONPATH": _source_root()}} if address == "local" else None)
    job_ref = ray.put(job)
    task = ray.remote(num_cpus=1)(run_chunk)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    yield from _bounded(lambda index: task.remote(job_ref, index), ray.get,
                        lambda pending: ray.wait(pending, num_returns=1), chunks, cpus * (1 + QUEUE_PER_WORKER))


def _bounded(submit, result, wait_one, chunks: Sequence[int], limit: int) -> Iterator[tuple[int, ChunkResult]]:
    """Submit ``chunks`` keeping at most ``limit`` in flight; yield results as they finish."""
    queue = list(reversed(chunks))
    pending = []
    while queue or pending:
        while queue and len(pending) < limit:
            pending.append(submit(queue.pop()))
        done, pending = wait_one(pending)
        for handle in done:
            yield result(handle)


def _source_root() -> str:
    """The folder holding the ``robokin_ros`` package this process runs (for Ray workers)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
