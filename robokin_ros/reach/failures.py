"""How a map run that stopped early says what it kept: :class:`KeptChunks`, carried by
:class:`ReachInterrupted` (Ctrl-C) and :class:`ReachWorkerError` (a worker process or Ray task
lost). Calling :func:`~robokin_ros.reach.reachability_map` again with the same arguments reads
the kept chunks instead of solving them again."""

from __future__ import annotations

import dataclasses

from ..errors import RobokinError


@dataclasses.dataclass(frozen=True)
class KeptChunks:
    """The chunk files a stopped run leaves for the next one.

    Attributes:
        kept: chunks on disk (read back at the start, or solved and written before the stop).
        total: chunks of the map.
        directory: their folder (None: the run had no chunk folder, so nothing is kept).
    """

    kept: int
    total: int
    directory: str | None

    def __str__(self) -> str:
        if self.directory is None:
            return f"0 of {self.total} chunks kept (no chunk folder)"
        return f"{self.kept} of {self.total} chunks kept in {self.directory}"


class ReachInterrupted(KeyboardInterrupt):
    """Ctrl-C (``KeyboardInterrupt``) while a map was computed; still a ``KeyboardInterrupt``.

    Attributes:
        chunks: what was kept (:class:`KeptChunks`).
    """

    def __init__(self, chunks: KeptChunks):
        self.chunks = chunks
        super().__init__(f"interrupted: {chunks}")


class ReachWorkerError(RobokinError, RuntimeError):
    """A worker process ended abruptly (killed, out of memory) or a Ray task or the Ray cluster
    failed while a map was computed.

    Attributes:
        cause: what failed, a phrase. chunks: what was kept (:class:`KeptChunks`; None when
            raised by an engine, before the run added it).
    """

    def __init__(self, cause: str, chunks: KeptChunks | None = None):
        self.cause, self.chunks = cause, chunks
        super().__init__(cause if chunks is None else f"{cause}; {chunks}")
