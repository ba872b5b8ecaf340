"""What a peer library writes to the process's C-level stderr, kept off the terminal and told in
one line (issue 41: ``robokin bench`` on the H1_2 humanoid printed 110 lines of Pinocchio's urdfdom
``Error:`` messages above its table; the peer's parser writes them from C++, past ``sys.stderr``).

:func:`peer_stderr` redirects file descriptor 2 to a temporary file around the peer's call only;
lines written there meanwhile that are not the peer's (this process's own notices, from other
threads) are passed on afterwards. :meth:`PeerOutput.summary` is the one line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import sys
import tempfile
import threading
from collections.abc import Iterator

__all__ = ["STDERR_LOCK", "PeerOutput", "peer_stderr"]

#: Held by a thread printing a line on stderr (the compile notices of other threads) and while fd 2
#: is switched, so that no line is cut in two by the switch (its text on one side, its newline on
#: the other: two lines joined, seen under load).
STDERR_LOCK = threading.Lock()

#: How a line of the peer's C-level output begins (urdfdom's console bridge: ``Error:``,
#: ``Warning:``, then indented ``at line N in file.cpp``).
PEER_PREFIXES = ("Error:", "Warning:", "Info:", "Debug:", "  ", "\t")


@dataclasses.dataclass
class PeerOutput:
    """The lines a peer wrote to stderr during :func:`peer_stderr`.

    Attributes:
        peer: its name, for the summary.
        lines: its lines (empty: it wrote nothing).
    """

    peer: str
    lines: list[str] = dataclasses.field(default_factory=list)

    def messages(self) -> list[str]:
        """Its messages: the lines that start one (``Error: ...``), without their indented ``at line`` follow-ups."""
        return [line for line in self.lines if not line.startswith(("  ", "\t")) and line.strip()]

    def summary(self) -> str | None:
        """One line: how many messages the peer printed and the first one (None when none)."""
        messages = self.messages()
        if not messages:
            return None
        first = " ".join(messages[0].split())
        return f"{self.peer} printed {len(messages)} message(s) while loading (hidden; the first: {first!r})"


@contextlib.contextmanager
def peer_stderr(peer: str) -> Iterator[PeerOutput]:
    """Capture what is written to file descriptor 2 inside the block (a C library's output
    included) into the :class:`PeerOutput` it yields; lines that are not the peer's
    (:data:`PEER_PREFIXES`) go on to stderr afterwards. Where fd 2 cannot be redirected, nothing is
    captured."""
    output = PeerOutput(peer)
    try:
        saved = os.dup(2)
    except OSError:
        yield output
        return
    with tempfile.TemporaryFile() as sink:
        _switch(sink.fileno())
        try:
            yield output
        finally:
            _switch(saved)
            os.close(saved)
            sink.seek(0)
            _sort(sink.read().decode(errors="replace"), output)


def _switch(fd: int) -> None:
    """Point fd 2 at ``fd``, this process's buffered output written out first (under
    :data:`STDERR_LOCK`: no line is half written)."""
    with STDERR_LOCK:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os.dup2(fd, 2)


def _sort(text: str, output: PeerOutput) -> None:
    """The peer's lines of ``text`` into ``output``; the others on to stderr."""
    for line in text.splitlines():
        if line.startswith(PEER_PREFIXES) or not line.strip():
            output.lines.append(line)
        else:
            with STDERR_LOCK:
                print(line, file=sys.stderr, flush=True)
