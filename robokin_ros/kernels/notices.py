"""Compile notices: who is told when kernels start and finish compiling for a robot.

Compiling a robot's kernels takes seconds (minutes for a humanoid's dynamics), once per machine.
Front ends that talk to a person (the ``robokin`` commands) subscribe here to say so::

    def tell(notice):
        print(notice.line(), file=sys.stderr)

    with robokin_ros.kernels.notices.subscribed(tell):
        ...

A notice is sent when the first kernel of a robot starts compiling while none of its kernels
compiles, and when the last one running ends (:class:`Notice`): one pair per burst of compiles,
however many kernels it holds. Kernels read from the disk cache send nothing.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import NamedTuple


class Notice(NamedTuple):
    """A robot's kernels started (``started``) or finished compiling."""

    #: The robot's name (its URDF name).
    robot: str
    #: True: the first kernel of a burst started compiling; False: the last one ended.
    started: bool
    #: At the end: kernels compiled in the burst (0 at the start).
    kernels: int = 0
    #: At the end: the burst's duration [s] (0 at the start).
    seconds: float = 0.0

    def line(self) -> str:
        """The notice as one line for a person."""
        if self.started:
            return f"compiling kernels for {self.robot} (first run; cached afterwards)…"
        plural = "s" if self.kernels != 1 else ""
        return f"compiled {self.kernels} kernel{plural} for {self.robot} in {self.seconds:.1f} s"


_lock = threading.Lock()
_subscribers: list[Callable[[Notice], None]] = []
#: robot -> [kernels compiling now, kernels compiled in the burst, its start time]
_bursts: dict[str, list] = {}


@contextlib.contextmanager
def subscribed(callback: Callable[[Notice], None]) -> Iterator[None]:
    """Call ``callback(notice)`` for every :class:`Notice` sent while the block runs (from the
    thread that compiles: keep it short, and thread-safe)."""
    with _lock:
        _subscribers.append(callback)
    try:
        yield
    finally:
        with _lock:
            _subscribers.remove(callback)


def _send(notice: Notice) -> None:
    with _lock:
        callbacks = list(_subscribers)
    for callback in callbacks:
        callback(notice)


@contextlib.contextmanager
def compiling(robot: str) -> Iterator[None]:
    """Around one kernel's compile for ``robot``: sends the burst's start and end notices."""
    with _lock:
        burst = _bursts.setdefault(robot, [0, 0, time.monotonic()])
        first = burst[0] == 0
        if first:
            burst[1], burst[2] = 0, time.monotonic()
        burst[0] += 1
    if first:
        _send(Notice(robot, True))
    try:
        yield
    finally:
        with _lock:
            burst[0] -= 1
            burst[1] += 1
            last = burst[0] == 0
            if last:
                del _bursts[robot]
        if last:
            _send(Notice(robot, False, burst[1], time.monotonic() - burst[2]))
