"""How many cores are free for a batched call right now: threads that never lose to one.

A batched call split over threads waits, at its end, for the slowest thread. When other
processes hold every core but one, a worker thread queues behind them for a scheduler time
slice (milliseconds) while the calling thread finishes its own rows and waits: measured on a
2-core machine with one core held, 10,000-configuration FK ran 3-5x slower on two threads than
on one. So a call asks first how many cores nobody else is running on.

Linux counts the threads runnable on the whole machine at every moment (the fourth field of
``/proc/loadavg``, ``running/total``; the reading thread among them): the cores free now are
the cores this process may use less those held by others (not by this process's own worker
threads and compile processes, which the caller counts), at least one. The file is opened once
and read again in place (``os.pread``: 1.6 µs a reading on a 2-core virtual machine; opening it
for every reading cost 14 µs, 30 µs inside a batched call, a tenth of a 0.3 ms 10,000-configuration
FK); a call reads it only when its batch is large enough to be split. A reading that shows
another thread runnable is taken again after yielding the core once (``os.sched_yield``): a
thread just woken on this core (one of this process's own finishing a call, which the scheduler
has not moved to the idle core yet) runs then and is gone from the second reading, while a
process holding another core is in both. Read once, a quiet 2-core machine looked busy to 6-16 %
of the batched calls right after other threads of the process ended, which then ran on one thread;
a reading with its second one and the yield costs 7.4 µs (1.6 µs when the first shows no other
thread). Elsewhere (no ``/proc/loadavg``, or no ``os.pread``) every core counts as free.
"""

from __future__ import annotations

import os
import threading
import weakref

#: Where Linux tells the threads runnable now.
LOADAVG = "/proc/loadavg"


def available_cores() -> int:
    """The cores this process may run on (``os.sched_getaffinity``; ``os.cpu_count`` elsewhere)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:   # not on Linux
        return max(1, os.cpu_count() or 1)


def runnable_others(text: str) -> int | None:
    """Threads of other processes runnable now, from ``/proc/loadavg``'s text (its fourth field
    ``running/total`` counts the reading thread too), or None when the text is not of that form."""
    fields = text.split()
    if len(fields) < 4 or "/" not in fields[3]:
        return None
    try:
        running = int(fields[3].split("/", 1)[0])
    except ValueError:
        return None
    return max(0, running - 1)


class FreeCores:
    """The cores free for a batched call now (:meth:`now`). Holds ``path`` open from the first
    reading until the object is collected."""

    def __init__(self, path: str = LOADAVG):
        self._path = path
        self._readable = os.path.isfile(path) and hasattr(os, "pread")
        self._fd: int | None = None
        self._lock = threading.Lock()

    def _read(self) -> str:
        if self._fd is None:
            with self._lock:
                if self._fd is None:
                    fd = os.open(self._path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                    weakref.finalize(self, os.close, fd)
                    self._fd = fd
        return os.pread(self._fd, 128, 0).decode("ascii", "replace")

    def now(self, own: int = 0) -> int:
        """The cores this process may use that no other process runs on now (at least 1; all of
        them where the machine does not tell). ``own``: runnable threads of this process's own
        besides the calling one (busy workers, niced compile processes), not counted as others."""
        cores = available_cores()
        if not self._readable or cores == 1:
            return cores
        try:
            others = self._others(own)
            if others is not None and others > 0:
                # Busy, or a thread just woken on this core (one of this process's that ends a
                # call, e.g. a worker going back to its queue): it runs once this thread yields,
                # and then is no longer counted; a process holding another core still is.
                os.sched_yield()
                again = self._others(own)
                others = others if again is None else min(others, again)
        except OSError:
            self._readable = False
            return cores
        return cores if others is None else max(1, cores - others)

    def _others(self, own: int) -> int | None:
        others = runnable_others(self._read())
        return None if others is None else max(0, others - own)
