"""Hardened XML for robot descriptions: bounded size, no DTDs or entities, input line numbers.

A description may come from the network (``/robot_description``), so the parser refuses any
DTD (no entity expansion, no external entities), caps the input size, and turns every decoding
or syntax problem into a :class:`URDFError`. Each element keeps the line of its start tag in the
input text, so problems and warnings can point at the user's file.
"""

from __future__ import annotations

import os
import stat
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.parsers import expat

from ..errors import URDFError, shorten

#: Default cap on a description's size in bytes; ``ROBOKIN_MAX_DESCRIPTION_BYTES`` overrides it.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024


def max_description_bytes(max_bytes: int | None = None) -> int:
    """The size cap in force: ``max_bytes`` if given, else the environment's, else 64 MiB."""
    if max_bytes is not None:
        return int(max_bytes)
    text = os.environ.get("ROBOKIN_MAX_DESCRIPTION_BYTES", "").strip()
    try:
        return int(text) if text else DEFAULT_MAX_BYTES
    except ValueError:
        raise URDFError(f"ROBOKIN_MAX_DESCRIPTION_BYTES = {shorten(text)} is not a whole number") from None


class _DTDRefused(Exception):
    pass


class XMLDocument:
    """A parsed document: its root element and the input line of every element.

    Attributes:
        root: the root element.
    """

    def __init__(self, root: ET.Element, lines: dict[int, int]):
        self.root = root
        self._lines = lines

    def line(self, element: ET.Element) -> int | None:
        """1-based line of ``element``'s start tag in the input, or None if unknown."""
        return self._lines.get(id(element))


def _as_text(xml, max_bytes: int) -> str:
    if isinstance(xml, (bytes, bytearray, memoryview)):
        data = bytes(xml)
        if len(data) > max_bytes:
            raise URDFError(f"the description is {len(data)} bytes, more than the limit of {max_bytes} bytes "
                            "(ROBOKIN_MAX_DESCRIPTION_BYTES)")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            raise URDFError(f"line {line}: the description is not UTF-8 text (byte 0x{data[e.start]:02x} "
                            f"at offset {e.start})") from None
    if not isinstance(xml, str):
        raise URDFError(f"a URDF must be text, got {type(xml).__name__}")
    # A str has at most 4 UTF-8 bytes per character: only measure when it could be over the cap.
    if len(xml) * 4 > max_bytes and len(xml.encode("utf-8", errors="surrogatepass")) > max_bytes:
        raise URDFError(f"the description is more than the limit of {max_bytes} bytes "
                        "(ROBOKIN_MAX_DESCRIPTION_BYTES)")
    return xml


def parse_document(xml, max_bytes: int | None = None) -> XMLDocument:
    """Parse ``xml`` (str or UTF-8 bytes) with DTDs refused, keeping element line numbers.

    Args:
        xml: the document.
        max_bytes: size cap; default :func:`max_description_bytes`.

    Raises:
        URDFError: not text, too large, not UTF-8, a lone surrogate, malformed XML (with line and
            column), or a DTD / entity declaration.
    """
    text = _as_text(xml, max_description_bytes(max_bytes))
    if not text.strip():
        raise URDFError("the description is empty")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as e:
        line = text.count("\n", 0, e.start) + 1
        raise URDFError(f"line {line}: the description contains a lone surrogate "
                        f"(U+{ord(text[e.start]):04X} at character {e.start}), which is not valid text") from None
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate("utf-8")
    lines: dict[int, int] = {}
    keep: list[ET.Element] = []   # ids are only unique while the elements live

    def refuse(*_):
        raise _DTDRefused()

    def start(tag, attrs):
        element = builder.start(tag, attrs)
        lines[id(element)] = parser.CurrentLineNumber
        keep.append(element)

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.buffer_text = True
    try:
        parser.Parse(data, True)
    except _DTDRefused:
        raise URDFError("a <!DOCTYPE> or entity declaration is not allowed in a robot description "
                        "(entity expansion and external entities are refused)") from None
    except expat.ExpatError as e:
        raise URDFError(f"malformed XML at line {e.lineno}, column {e.offset}: "
                        f"{expat.errors.messages[e.code]}") from None
    return XMLDocument(builder.close(), lines)


def read_description_file(path, max_bytes: int | None = None) -> str:
    """Text of a description file, read with the size cap (safe on /dev/zero and huge files).

    Raises:
        URDFError: unreadable path (incl. a NUL in it), a directory, a FIFO or socket, too
            large, or not UTF-8.
    """
    cap = max_description_bytes(max_bytes)
    try:
        kind = os.stat(Path(path)).st_mode
        if stat.S_ISFIFO(kind) or stat.S_ISSOCK(kind):   # reading would wait for a writer
            raise ValueError(f"not a regular file (a {'FIFO' if stat.S_ISFIFO(kind) else 'socket'})")
        with open(Path(path), "rb") as f:
            data = f.read(cap + 1)
    except (OSError, ValueError) as e:   # ValueError: embedded NUL in the path
        reason = getattr(e, "strerror", None) or str(e)
        raise URDFError(f"cannot read {shorten(path, 200)}: {reason}") from None
    if len(data) > cap:
        raise URDFError(f"cannot read {shorten(path, 200)}: larger than the limit of {cap} bytes "
                        "(ROBOKIN_MAX_DESCRIPTION_BYTES)")
    return _as_text(data, cap)


def read_description(path, max_bytes: int | None = None) -> str:
    """Text of a URDF or SRDF file; a ``.xacro`` file is expanded with xacro.

    Raises:
        URDFError: unreadable file (see :func:`read_description_file`), xacro missing for a
            ``.xacro`` file, or xacro failing (its message kept).
    """
    if str(path).endswith(".xacro"):
        try:
            import xacro
        except ImportError:
            raise URDFError(f"{shorten(path, 200)} is a .xacro file, but xacro is not installed "
                            "(pip install xacro, or the ROS package xacro)") from None
        try:
            return xacro.process_file(str(path)).toxml()
        except Exception as e:  # noqa: BLE001 - xacro's errors share no base class
            raise URDFError(f"xacro failed on {shorten(path, 200)}: {e}") from None
    return read_description_file(path, max_bytes)
