"""The problems and warnings found in one description document, each with its input line, and
the reading of numbers from its attributes (what the URDF reader reports through)."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

from ..errors import LoadWarning, shorten
from .description import XMLDocument

__all__ = ["Report"]


class Report:
    """Problems (reject) and warnings (keep loading) found in one document, with input lines."""

    def __init__(self, doc: XMLDocument):
        self.doc = doc
        self.problems: list[str] = []
        self.warnings: list[LoadWarning] = []

    def problem(self, element: ET.Element | None, message: str) -> None:
        line = None if element is None else self.doc.line(element)
        self.problems.append(message if line is None else f"line {line}: {message}")

    def warn(self, element: ET.Element, message: str) -> None:
        name = element.get("name")
        label = f"<{element.tag}>" if name is None else f"<{element.tag} name={shorten(name)}>"
        self.warnings.append(LoadWarning(self.doc.line(element), label, message))

    def numbers(self, element: ET.Element | None, key: str, n: int, what: str, default=0.0,
                warn_only: bool = False) -> list[float] | None:
        """``n`` finite numbers from attribute ``key``; ``default`` filled if absent.

        Returns None (after a problem or warning) when the attribute is malformed.
        """
        text = None if element is None else element.get(key)
        if text is None:
            return [default] * n
        tokens = text.split()
        if len(tokens) != n:
            complaint = f"{what} = {shorten(text)} must have {n} number{'s' if n > 1 else ''}"
        else:
            try:
                values = [float(t) for t in tokens]
            except ValueError:
                complaint = f"{what} = {shorten(text)} is not {n} numbers" if n > 1 else \
                    f"{what} = {shorten(text)} is not a number"
            else:
                if all(map(math.isfinite, values)):
                    return values
                complaint = f"{what} = {shorten(text)} is not finite"
        if warn_only:
            self.warn(element, complaint)
        else:
            self.problem(element, complaint)
        return None

    def number(self, element: ET.Element | None, key: str, what: str, default=None, allow_inf=False):
        """One finite number from attribute ``key`` (``"inf"`` too if ``allow_inf``), else ``default``."""
        text = None if element is None else element.get(key)
        if text is None:
            return default
        try:   # the common case, fast
            value = float(text)
        except ValueError:
            pass
        else:
            if math.isfinite(value) or (allow_inf and value == math.inf):
                return value
        values = self.numbers(element, key, 1, what)
        return default if values is None else values[0]
