"""Compile notices: who is told when kernels start and finish compiling for a robot.

Compiling a robot's kernels takes seconds (minutes for a humanoid's dynamics), once per machine.
The current runtime (:class:`robokin_ros.runtime.Runtime`) sends a :class:`Notice` when the first
kernel of a robot starts compiling while none of its kernels compiles, and when the last one
running ends: one pair per burst of compiles, however many kernels it holds, each also logged at
INFO by the ``robokin_ros.compile`` logger. Kernels read from the disk cache send nothing. Front
ends that talk to a person (the ``robokin`` commands) subscribe to say so::

    def tell(notice):
        print(notice.line(), file=sys.stderr)

    with robokin_ros.kernels.notices.subscribed(tell):
        ...
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from ..runtime import Notice, current_runtime

__all__ = ["Notice", "compiling", "subscribed"]


@contextlib.contextmanager
def subscribed(callback: Callable[[Notice], None]) -> Iterator[None]:
    """The current runtime's :meth:`~robokin_ros.runtime.Runtime.subscribed`."""
    with current_runtime().subscribed(callback):
        yield


@contextlib.contextmanager
def compiling(robot: str) -> Iterator[None]:
    """The current runtime's :meth:`~robokin_ros.runtime.Runtime.compiling`."""
    with current_runtime().compiling(robot):
        yield
