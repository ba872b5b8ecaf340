"""A worker thread for the node's slow one-off jobs (parsing and loading a robot description),
so the thread publishing /tf never waits for them. No rclpy."""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Callable


class LatestJobWorker:
    """Runs jobs one at a time on its own thread, in order; a job submitted while another waits
    to start replaces it (a description superseded before it was loaded is never loaded).

    Args:
        name: the thread's name.
        on_error: gets what a job raised (the job is expected to catch its own failures; this is
            for bugs), so the thread survives it.
    """

    def __init__(self, name: str, on_error: Callable[[BaseException], None]):
        self._on_error = on_error
        self._wake = threading.Condition()
        self._pending: Callable[[], None] | None = None
        self._busy = False
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` after the job in progress (replacing one still waiting), in a copy of the
        caller's context (its ``contextvars``: the node's runtime); ignored once stopped."""
        context = contextvars.copy_context()
        with self._wake:
            if not self._stopping:
                self._pending = functools.partial(context.run, job)
                self._wake.notify()

    @property
    def stopped(self) -> bool:
        """:meth:`stop` was called."""
        return self._stopping

    def idle(self) -> bool:
        """No job running or waiting."""
        with self._wake:
            return self._pending is None and not self._busy

    def stop(self, timeout: float) -> bool:
        """Drop a waiting job and wait up to ``timeout`` [s] for the running one.

        Returns:
            True when the thread has ended.
        """
        with self._wake:
            self._stopping, self._pending = True, None
            self._wake.notify()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            with self._wake:
                while self._pending is None and not self._stopping:
                    self._wake.wait()
                if self._stopping:
                    return
                job, self._pending, self._busy = self._pending, None, True
            try:
                job()
            except Exception as e:  # noqa: BLE001 - a failed job must not end the worker
                self._on_error(e)
            finally:
                with self._wake:
                    self._busy = False
