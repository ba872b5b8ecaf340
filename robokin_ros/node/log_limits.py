"""Bounds on what one message or request makes the node write: log lines and reply texts.

A description with ten thousand problems, or a megabyte link name, must not turn into megabytes
of log or of service reply. Each line is cut to :data:`MAX_LINE_CHARS`; a list of lines (the
problems of one description, its warnings) keeps its first :data:`MAX_LINES` and says how many
more there were; a service reply message is cut to :data:`MAX_REPLY_CHARS`. No rclpy.
"""

from __future__ import annotations

from collections.abc import Sequence

#: Characters of one log line (longer ones are cut, saying how long they were).
MAX_LINE_CHARS = 1000
#: Lines (problems, warnings) logged for one description; the rest are counted in one line.
MAX_LINES = 20
#: Characters of a service reply's ``error_code.message``.
MAX_REPLY_CHARS = 2000


def cap_text(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """``text`` cut to ``limit`` characters (plus a note of how long it was)."""
    if len(text) <= limit:
        return text
    return f'{text[:limit]}... (cut: {len(text)} characters)'


def cap_lines(lines: Sequence[str], max_lines: int = MAX_LINES, limit: int = MAX_LINE_CHARS) -> list[str]:
    """The first ``max_lines`` of ``lines``, each cut to ``limit`` characters, and then one line
    ``"... and K more"`` if there were more."""
    kept = [cap_text(line, limit) for line in lines[:max_lines]]
    if len(lines) > max_lines:
        kept.append(f'... and {len(lines) - max_lines} more')
    return kept


def cap_message(text: str, max_lines: int = MAX_LINES, limit: int = MAX_LINE_CHARS) -> str:
    """A multi-line ``text`` (e.g. an invalid URDF's every problem) with its lines capped by
    :func:`cap_lines`."""
    return '\n'.join(cap_lines(text.split('\n'), max_lines, limit))


def cap_notes(notes: Sequence[tuple[str, str]], max_lines: int = MAX_LINES) -> list[tuple[str, str]]:
    """Log notes ``(level, text)`` with at most ``max_lines`` warnings (then one warning counting
    the rest); every error and info note kept, every text cut by :func:`cap_message`."""
    kept, dropped = [], 0
    for level, text in notes:
        if level == 'warning':
            if dropped or sum(lvl == 'warning' for lvl, _ in kept) >= max_lines:
                dropped += 1
                continue
        kept.append((level, cap_message(text)))
    if dropped:
        kept.append(('warning', f'... and {dropped} more warnings about this description (not logged)'))
    return kept
