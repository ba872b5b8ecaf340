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
from collections.abc import Iterator

__all__ = ["PeerOutput", "peer_stderr"]

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
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    try:
        saved = os.dup(2)
    except OSError:
        yield output
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield output
        finally:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            _sort(sink.read().decode(errors="replace"), output)


def _sort(text: str, output: PeerOutput) -> None:
    """The peer's lines of ``text`` into ``output``; the others on to stderr."""
    for line in text.splitlines():
        if line.startswith(PEER_PREFIXES) or not line.strip():
            output.lines.append(line)
        else:
            print(line, file=sys.stderr)
