"""What bounds one IK call's work: its :class:`Budget` (time, cancel token, restart sequence,
collision test) and the :class:`CancelToken` a caller holds to stop the solves given it."""

from __future__ import annotations

import hashlib
import threading
import time

import numpy as np

#: Restarts of a call take consecutive points of an R2 low-discrepancy sequence (Roberts 2018)
#: from a random start among this many: consecutive restarts cover the bounds evenly and cost
#: no random draw (measured: ~3 % fewer iterations than uniform draws, and a draw cost as much
#: as an iteration).
RESTART_OFFSETS = 1 << 20


def request_offset(parts) -> int:
    """A whole number in ``[0, RESTART_OFFSETS)`` that depends only on the request ``parts``
    (arrays or lists of numbers, or None): a BLAKE2b digest of their float64 bytes, so the same
    request gives the same number in any process, whatever came before (no global state)."""
    digest = hashlib.blake2b(digest_size=8)
    for part in parts:
        digest.update(b"none" if part is None else np.ascontiguousarray(part, dtype=float).tobytes())
        digest.update(b"|")
    return int.from_bytes(digest.digest(), "little") % RESTART_OFFSETS


class CancelToken:
    """Stops the solves it is given (``solve_ik(..., cancel=token)``,
    ``solve_constrained(..., cancel=token)``): once :meth:`cancel` is called, each of them ends at
    its next budget check (every iteration when stacked in numpy, every
    :data:`~robokin_ros.ik.compiled_loop.CHUNK` iterations on the compiled loop, every
    :data:`~robokin_ros.ik.compiled_loop.BATCH_QUOTA` of a thread in a compiled batch) as if its time
    budget were spent (status ``"timeout"``, the best iterate so far). Solves given another token,
    or none, go on. Thread-safe; a cancelled token stays cancelled (make a new one per batch of
    solves to cancel together).
    """

    __slots__ = ("_event",)

    def __init__(self):
        self._event = threading.Event()

    def cancel(self) -> None:
        """Ask every solve given this token to stop (from any thread)."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` has been called."""
        return self._event.is_set()


class Budget:
    """Per-call time budget and cancel token, start of the sequence of restart configurations
    (chosen on first use: most calls never restart), the test a converged configuration must
    pass (``accept``: None, or the ``avoid_collisions`` test of
    :func:`~robokin_ros.ik.collision_gate.collision_test`) and the threads a batch may use.

    The restarts start at a point of the sequence chosen by ``rng``: a whole number picks it
    (Knuth's multiplicative hash), a ``numpy.random.Generator`` draws it; None (the default) takes
    it from the request itself (:func:`request_offset` of ``request``, e.g. the targets and the
    seed), so the same request gives the same answer, bit for bit, in a fresh process and in a
    long-running one. Each problem of a batch restarts along its own stretch of the sequence
    from there (:meth:`Solver.restart_base <robokin_ros.ik.solver.Solver.restart_base>`), so
    its answer depends neither on the other problems nor on the order or thread they run in.

    Args:
        timeout: [s] per problem, or None. n: problems sharing the budget (the time is pooled).
        rng: see :class:`~robokin_ros.ik.options.IKOptions`. accept: the collision test or None.
        cancel: a :class:`CancelToken` or None. request: what identifies the request (arrays,
            lists of numbers or None), hashed when ``rng`` is None. threads: the cap on a
            batch's threads (:func:`robokin_ros.kernels.parallel.thread_count`).
    """

    def __init__(self, timeout: float | None, n: int, rng, accept=None, cancel: CancelToken | None = None,
                 request: tuple = (), threads: int | None = None):
        self.deadline = None if timeout is None else time.perf_counter() + timeout * n
        self._rng, self._first, self._request = rng, -1, request
        self.accept, self.threads = accept, threads
        self._cancel = None if cancel is None else cancel._event

    def first_restart(self) -> int:
        """Index of the call's first restart in the R2 sequence (see
        :meth:`Solver.restart <robokin_ros.ik.solver.Solver.restart>`), chosen on first use."""
        if self._first < 0:
            if isinstance(self._rng, (int, np.integer)) and not isinstance(self._rng, bool):
                self._first = int(self._rng) * 2654435761 % RESTART_OFFSETS  # Knuth's multiplicative hash
            elif self._rng is None:
                self._first = request_offset(self._request)
            else:
                self._first = int(np.random.default_rng(self._rng).integers(RESTART_OFFSETS))
        return self._first

    def timed_out(self) -> bool:
        """The time budget is spent or the call's token is cancelled."""
        return (self._cancel is not None and self._cancel.is_set()
                or self.deadline is not None and time.perf_counter() > self.deadline)
