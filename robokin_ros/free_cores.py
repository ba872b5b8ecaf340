"""How many cores are free for a batched call right now: threads that never lose to one.

A batched call split over threads waits, at its end, for the slowest thread. When other
processes hold every core but one, a worker thread queues behind them for a scheduler time
slice (milliseconds) while the calling thread finishes its own rows and waits: measured on a
2-core machine with one core held, 10,000-configuration FK ran 3-5x slower on two threads than
on one. So a call asks first how many cores nobody else is running on.

Linux counts the threads runnable on the whole machine at every moment (the fourth field of
``/proc/loadavg``, ``running/total``; the reading thread among them): the cores free now are
the cores this process may use less those held by others (not by this process's own worker
threads and compile processes, which the caller counts), at least one. Reading it costs a few
microseconds; a call reads it only when its batch is large enough to be split. Elsewhere (no
``/proc/loadavg``) every core counts as free.
"""

from __future__ import annotations

import os

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
    """The cores free for a batched call now (:meth:`now`)."""

    def __init__(self, path: str = LOADAVG):
        self._path = path
        self._readable = os.path.isfile(path)

    def now(self, own: int = 0) -> int:
        """The cores this process may use that no other process runs on now (at least 1; all of
        them where the machine does not tell). ``own``: runnable threads of this process's own
        besides the calling one (busy workers, niced compile processes), not counted as others."""
        cores = available_cores()
        if not self._readable or cores == 1:
            return cores
        try:
            with open(self._path, encoding="ascii") as file:
                others = runnable_others(file.read(128))
        except OSError:
            self._readable = False
            return cores
        return cores if others is None else max(1, cores - max(0, others - own))
