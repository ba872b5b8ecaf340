"""Bounded argparse types of the ``robokin`` options, the one-line usage error, help text
without docstring markup and the capped error text.

Every numeric option has a type here with its bounds: a value outside them is a usage error
(exit 2, one line), never a traceback, an endless run or a MemoryError later.
"""

from __future__ import annotations

import argparse
import math
import re
import sys

#: Largest IK ``--timeout`` [s].
MAX_TIMEOUT = 3600.0
#: Largest ``workspace -n`` (configurations; 24 bytes of output each).
MAX_WORKSPACE_SAMPLES = 10**7
#: Largest ``bench -n`` (configurations held at once, with their poses and Jacobians).
MAX_BENCH_BATCH = 10**6
#: Largest ``ik --solutions``.
MAX_SOLUTIONS = 64
#: ``show --size`` range [inches per view].
SIZE_RANGE = (0.5, 50.0)
#: Lines of an error message printed before "... and K more lines"; characters per line.
MAX_ERROR_LINES, MAX_LINE_CHARS = 20, 500


#: A Sphinx role in a docstring: ``:func:`~a.b.name``` (group 1: ``~``, group 2: the target).
_ROLE = re.compile(r":[a-z]+:`(~?)([^`]+)`")


def plain(text: str) -> str:
    """``text`` without reStructuredText markup, as help shows it: a role becomes its target (the
    last name after ``~``), a double-backquoted literal a single-quoted one."""
    text = _ROLE.sub(lambda m: m[2].rsplit(".", 1)[-1] if m[1] else m[2], text)
    return text.replace("``", "'")


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr (then exit 2) and whose help
    shows no docstring markup (:func:`plain`); its subcommands' parsers are Parsers too."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def format_help(self) -> str:
        return plain(super().format_help())


def value_counts(*allowed: int, what: str) -> type[argparse.Action]:
    """argparse action of an ``nargs="+"`` option that takes only ``allowed`` numbers of values
    (``what``: the forms, for the message); any other count is a usage error (exit 2)."""
    class Counted(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            if len(values) not in allowed:
                counts = " or ".join(str(n) for n in allowed)
                raise argparse.ArgumentError(self, f"takes {what} ({counts} values), got {len(values)}")
            setattr(namespace, self.dest, values)
    return Counted


def real(low: float, high: float, *, low_open: bool = False):
    """argparse type: a finite float in ``[low, high]`` (``(low, high]`` when ``low_open``)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value) or value > high or value < low or (low_open and value == low):
            raise argparse.ArgumentTypeError(f"{text!r} is outside {'(' if low_open else '['}{low:g}, {high:g}]")
        return value
    return parse


def finite(text: str) -> float:
    """argparse type: a finite float."""
    return real(-sys.float_info.max, sys.float_info.max)(text)


def tolerance(text: str) -> float:
    """argparse type: a float >= 0, ``inf`` allowed (a freed axis)."""
    return math.inf if text.strip().lower() in ("inf", "+inf", "infinity") else real(0.0, sys.float_info.max)(text)


def count(low: int, high: int):
    """argparse type: a whole number in ``[low, high]``, written as an integer or as ``1e5``."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
            if not number.is_integer():
                raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
            value = int(number)
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text} is outside [{low}, {high:g}]")
        return value
    return parse


def capped(text: str) -> str:
    """``text`` cut to :data:`MAX_ERROR_LINES` lines of at most :data:`MAX_LINE_CHARS` characters,
    ending with ``... and K more lines`` when lines were left out."""
    lines = text.splitlines() or [""]
    shown = [line if len(line) <= MAX_LINE_CHARS else f"{line[:MAX_LINE_CHARS]}... ({len(line)} characters)"
             for line in lines[:MAX_ERROR_LINES]]
    if len(lines) > MAX_ERROR_LINES:
        shown.append(f"... and {len(lines) - MAX_ERROR_LINES} more lines")
    return "\n".join(shown)
