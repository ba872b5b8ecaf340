"""Hardened XML for robot descriptions: bounded size, no DTDs or entities, input line numbers.

A description may come from the network (``/robot_description``), so the parser refuses any
DTD (no entity expansion, no external entities), caps the input size, the number of elements
and their nesting depth (the tree costs ~45 times its input: a cap on elements bounds it before
it is built), and turns every decoding or syntax problem into a :class:`URDFError`. Each element
keeps the line of its start tag in the input text, so problems and warnings can point at the
user's file.

Every file robokin_ros reads on a user's behalf (descriptions, SRDFs, disk cache entries) goes
through :func:`read_capped`: it never waits on a FIFO, never reads past its cap, and can refuse
symbolic links, devices and files of other users.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.parsers import expat

from ..errors import URDFError, shorten

#: Default cap on a description's size in bytes; ``ROBOKIN_MAX_DESCRIPTION_BYTES`` overrides it.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
#: Default cap on the number of elements of a description (the largest URDF + SRDF of the corpus
#: has ~20,000); ``ROBOKIN_MAX_DESCRIPTION_ELEMENTS`` overrides it.
DEFAULT_MAX_ELEMENTS = 1_000_000
#: Deepest element nesting accepted (a URDF nests 5 deep).
MAX_DEPTH = 256
#: Longest markup accepted between a ``<`` and its ``>`` in bytes (a URDF tag holds a few
#: attributes, < 1 kB): the element cap does not bound one element's attributes, which expat
#: reads whole before any handler runs (5 M attributes in one tag: 20 s and 1.2 GB).
MAX_TAG_BYTES = 1024 * 1024
_LONG_TAG = re.compile(rb"<[^<>]{%d}" % MAX_TAG_BYTES)


def limit_in_force(given: int | None, variable: str, default: int) -> int:
    """A size limit: ``given`` if not None, else the environment ``variable``'s whole number, else
    ``default``.

    Raises:
        URDFError: the variable is set to something that is not a whole number.
    """
    if given is not None:
        return int(given)
    text = os.environ.get(variable, "").strip()
    try:
        return int(text) if text else default
    except ValueError:
        raise URDFError(f"{variable} = {shorten(text)} is not a whole number") from None


def max_description_bytes(max_bytes: int | None = None) -> int:
    """The size cap in force: ``max_bytes`` if given, else the environment's, else 64 MiB."""
    return limit_in_force(max_bytes, "ROBOKIN_MAX_DESCRIPTION_BYTES", DEFAULT_MAX_BYTES)


def max_description_elements(max_elements: int | None = None) -> int:
    """The element cap in force: ``max_elements`` if given, else the environment's, else 1,000,000."""
    return limit_in_force(max_elements, "ROBOKIN_MAX_DESCRIPTION_ELEMENTS", DEFAULT_MAX_ELEMENTS)


class _DTDRefused(Exception):
    pass


class _TooBig(Exception):
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


def parse_document(xml, max_bytes: int | None = None, max_elements: int | None = None) -> XMLDocument:
    """Parse ``xml`` (str or UTF-8 bytes) with DTDs refused, keeping element line numbers.

    Args:
        xml: the document.
        max_bytes: size cap; default :func:`max_description_bytes`.
        max_elements: element cap; default :func:`max_description_elements`. Parsing stops at
            the first element over it (or nested deeper than :data:`MAX_DEPTH`), so a hostile
            document costs at most the tree of that many elements.

    Raises:
        URDFError: not text, too large, too many or too deeply nested elements, a tag longer than
            :data:`MAX_TAG_BYTES`, not UTF-8, a lone
            surrogate, malformed XML (with line and column), or a DTD / entity declaration.
    """
    element_cap = max_description_elements(max_elements)
    text = _as_text(xml, max_description_bytes(max_bytes))
    if not text.strip():
        raise URDFError("the description is empty")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as e:
        line = text.count("\n", 0, e.start) + 1
        raise URDFError(f"line {line}: the description contains a lone surrogate "
                        f"(U+{ord(text[e.start]):04X} at character {e.start}), which is not valid text") from None
    long_tag = _LONG_TAG.search(data)
    if long_tag:
        line = data.count(b"\n", 0, long_tag.start()) + 1
        raise URDFError(f"line {line}: a tag longer than {MAX_TAG_BYTES} bytes "
                        "(MAX_TAG_BYTES: thousands of attributes in one element)")
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate("utf-8")
    lines: dict[int, int] = {}
    keep: list[ET.Element] = []   # ids are only unique while the elements live

    def refuse(*_):
        raise _DTDRefused()

    depth = [0]

    def start(tag, attrs):
        depth[0] += 1
        if len(keep) >= element_cap or depth[0] > MAX_DEPTH:
            raise _TooBig()
        element = builder.start(tag, attrs)
        lines[id(element)] = parser.CurrentLineNumber
        keep.append(element)

    def end(tag):
        depth[0] -= 1
        builder.end(tag)

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = builder.data
    parser.buffer_text = True
    try:
        parser.Parse(data, True)
    except _TooBig:
        if depth[0] > MAX_DEPTH:
            raise URDFError(f"line {parser.CurrentLineNumber}: elements nested more than {MAX_DEPTH} deep") from None
        raise URDFError(f"line {parser.CurrentLineNumber}: more than {element_cap} elements "
                        "(ROBOKIN_MAX_DESCRIPTION_ELEMENTS)") from None
    except _DTDRefused:
        raise URDFError("a <!DOCTYPE> or entity declaration is not allowed in a robot description "
                        "(entity expansion and external entities are refused)") from None
    except expat.ExpatError as e:
        raise URDFError(f"malformed XML at line {e.lineno}, column {e.offset}: "
                        f"{expat.errors.messages[e.code]}") from None
    return XMLDocument(builder.close(), lines)


def read_capped(path, max_bytes: int, *, devices: bool = False, follow_symlinks: bool = True,
                own: bool = False) -> bytes:
    """Bytes of the file at ``path``, at most ``max_bytes`` of them, opened without blocking.

    The file is opened first (non-blocking, so a FIFO does not wait for a writer) and judged by
    ``fstat`` of what was opened, so it cannot be swapped between the check and the read.

    Args:
        path: the file.
        max_bytes: size cap; a longer file is refused, never read whole.
        devices: also read character and block devices (up to the cap: ``/dev/zero`` is refused
            as too large); else only regular files.
        follow_symlinks: False refuses a symbolic link as the last path component (``O_NOFOLLOW``).
        own: refuse a file not owned by the current user or writable by group or others.

    Raises:
        OSError: with ``strerror`` saying why: absent or unreadable, a NUL in the path, a
            directory, "not a regular file (a FIFO)" (or socket, device), a symbolic link, not
            private, or "larger than the limit of N bytes" (``errno.EFBIG``).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except ValueError as e:   # embedded NUL in the path
        raise OSError(errno.EINVAL, str(e)) from None
    except OSError as e:
        if e.errno == errno.ELOOP and not follow_symlinks:
            raise OSError(errno.ELOOP, "a symbolic link (refused here)") from None
        raise
    with os.fdopen(fd, "rb", buffering=0) as f:
        info = os.fstat(fd)
        kind = info.st_mode
        if stat.S_ISDIR(kind):
            raise OSError(errno.EISDIR, "Is a directory")
        device = stat.S_ISCHR(kind) or stat.S_ISBLK(kind)
        if not (stat.S_ISREG(kind) or (devices and device)):
            what = ("FIFO" if stat.S_ISFIFO(kind) else "socket" if stat.S_ISSOCK(kind)
                    else "device" if device else "special file")
            raise OSError(errno.EINVAL, f"not a regular file (a {what})")
        if own and (info.st_uid != os.getuid() or kind & (stat.S_IWGRP | stat.S_IWOTH)):
            raise OSError(errno.EPERM, f"not private (owner uid {info.st_uid}, mode {stat.S_IMODE(kind):o})")
        if stat.S_ISREG(kind) and info.st_size > max_bytes:
            raise OSError(errno.EFBIG, f"larger than the limit of {max_bytes} bytes")
        os.set_blocking(fd, True)
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = f.read(min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise OSError(errno.EFBIG, f"larger than the limit of {max_bytes} bytes")
    return data


def read_description_file(path, max_bytes: int | None = None) -> str:
    """Text of a description file, read with the size cap (safe on /dev/zero and huge files).

    Raises:
        URDFError: unreadable path (incl. a NUL in it), a directory, a FIFO or socket, too
            large, or not UTF-8.
    """
    cap = max_description_bytes(max_bytes)
    try:
        data = read_capped(Path(path), cap, devices=True)
    except OSError as e:
        reason = e.strerror or str(e)
        if e.errno == errno.EFBIG:
            reason += " (ROBOKIN_MAX_DESCRIPTION_BYTES)"
        raise URDFError(f"cannot read {shorten(path, 200)}: {reason}") from None
    return _as_text(data, cap)


def read_description(path, max_bytes: int | None = None) -> str:
    """Text of a URDF or SRDF file; a ``.xacro`` file is expanded with xacro.

    Raises:
        URDFError: unreadable file (see :func:`read_description_file`), xacro missing for a
            ``.xacro`` file, or xacro failing (its message kept).
    """
    if str(path).endswith(".xacro"):
        read_description_file(path, max_bytes)   # the same checks before xacro opens it
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
