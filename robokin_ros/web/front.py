"""The web view's front: the port users reach, in front of viser's server, gating every request.

viser (1.1) has no public hook for checking a request before it answers it, so the view's gate
(:class:`~robokin_ros.web.access.ViewAccess`) runs in a front of our own instead: viser serves on a
loopback address of its own (a random ``127.x.y.z`` where the system routes all of 127/8 to this
machine, as Linux does; else ``127.0.0.1``) and an ephemeral port; the front listens on the
address and port the user asked for, reads each connection's request head (at most
:data:`MAX_HEAD_BYTES`, within :data:`HEAD_TIMEOUT` seconds), answers ``403 Forbidden`` to what
the gate refuses and ``400 Bad Request`` to what it cannot read, and otherwise passes the head on
to viser and pipes the bytes both ways (a websocket for as long as it lasts; a page request is
one request a connection, as viser's server answers it, with the token's cookie added to the
answer of a page asked for with the token in its URL). It depends on HTTP alone, not on viser's
insides: a viser release cannot silently open the gate.

viser's own port answers whoever finds it, as any loopback port does: a page in a browser would
have to guess a random loopback address and port (about 2^39 pairs under Linux); other
processes of this machine that look for it can reach it.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import http.client
import io
import secrets
import socket
import sys
import threading

#: Largest request (or response) head read, in bytes.
MAX_HEAD_BYTES = 64 * 1024
#: Seconds a connection has to send its request head (and viser to start its answer).
HEAD_TIMEOUT = 10.0
#: Headers that must appear at most once in a request (one reading of them for the gate and viser).
SINGLE_HEADERS = ("Host", "Upgrade", "Origin", "Connection")


def backend_host() -> str:
    """A loopback address for viser's server: a random ``127.x.y.z`` where it can be bound (the
    whole 127/8 is this machine's under Linux), else ``127.0.0.1``."""
    if sys.platform.startswith("linux"):
        candidate = "127.{}.{}.{}".format(*(1 + secrets.randbelow(254) for _ in range(3)))
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
                probe.bind((candidate, 0))
            return candidate
        except OSError:
            pass
    return "127.0.0.1"


def _response(status: http.HTTPStatus, text: str) -> bytes:
    body = text.encode()
    return (f"HTTP/1.1 {status.value} {status.phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


def read_request(head: bytes) -> tuple[str, http.client.HTTPMessage] | None:
    """``(target, headers)`` of a request head (its bytes up to and with the blank line), or None
    when it is not a ``GET`` request of HTTP/1.1 or later with each of :data:`SINGLE_HEADERS` at
    most once."""
    line, _, rest = head.partition(b"\r\n")
    parts = line.decode("latin-1").split(" ")
    if len(parts) != 3 or parts[0] != "GET" or not parts[2].startswith("HTTP/1.") or parts[2] == "HTTP/1.0":
        return None
    try:
        headers = http.client.parse_headers(io.BytesIO(rest))
    except (http.client.HTTPException, ValueError):
        return None
    if any(len(headers.get_all(name) or ()) > 1 for name in SINGLE_HEADERS):
        return None
    return parts[1], headers


class Front:
    """The front of one view: listens on ``(host, port)`` (0: any free port, :meth:`listen`) and
    passes what the view's gate admits (:meth:`~robokin_ros.web.access.ViewAccess.refusal`) to
    viser's server at ``backend``; runs in a thread of its own from :meth:`start` to :meth:`stop`."""

    def __init__(self, host: str, port: int, backend: tuple[str, int]):
        self.host, self.port, self.backend = host, port, backend
        self.access = None
        self._loop = asyncio.new_event_loop()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task] = set()   # the connections being served

    def listen(self) -> int:
        """Bind and listen (nothing is answered before :meth:`start`); returns the port bound.

        Raises:
            OSError: the address cannot be bound.
        """
        infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = infos[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(address)
            sock.listen(64)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._sock, self.port = sock, sock.getsockname()[1]
        return self.port

    def start(self, access) -> None:
        """Serve behind ``access``'s gate, in a thread of its own (after :meth:`listen`)."""
        self.access = access
        try:
            self._server = self._loop.run_until_complete(asyncio.start_server(
                self._connection, sock=self._sock, limit=MAX_HEAD_BYTES))
        except BaseException:
            self.close()
            raise
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"robokin view front :{self.port}",
                                        daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Release what :meth:`listen` took when :meth:`start` will not run (or failed)."""
        if self._sock is not None and self._server is None:
            self._sock.close()
        if not self._loop.is_running():
            self._loop.close()

    def stop(self) -> None:
        """Stop listening and close every connection (waits for the thread)."""
        if self._thread is None:
            self.close()
            return
        thread, self._thread = self._thread, None

        async def close() -> None:
            self._server.close()
            # every connection ended here, while the loop runs (one left pending when the loop
            # stops meets a closed loop later: a traceback on stderr after Ctrl-C, seen once)
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            for writer in list(self._writers):
                writer.close()
            await self._server.wait_closed()
            self._loop.stop()
        asyncio.run_coroutine_threadsafe(close(), self._loop)
        thread.join(timeout=5.0)
        if not thread.is_alive():
            self._loop.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, asyncio.TimeoutError):
            pass   # (a client gone, silent or too long: nothing to answer)
        finally:
            self._tasks.discard(task)
            self._writers.discard(writer)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        request = read_request(head)
        if request is None:
            writer.write(_response(http.HTTPStatus.BAD_REQUEST, "robokin web view: not a request it serves\n"))
            await writer.drain()
            return
        target, headers = request
        reason = self.access.refusal(target, headers)
        if reason:
            writer.write(_response(http.HTTPStatus.FORBIDDEN, f"robokin web view: {reason}\n"))
            await writer.drain()
            return
        upstream_reader, upstream = await asyncio.wait_for(
            asyncio.open_connection(*self.backend, limit=MAX_HEAD_BYTES), HEAD_TIMEOUT)
        try:
            upstream.write(head)
            await upstream.drain()
            if (headers.get("Upgrade") or "").lower() == "websocket":
                await asyncio.gather(_pipe(reader, upstream), _pipe(upstream_reader, writer))
                return
            if self.access.token_in_url(target):
                answer = await asyncio.wait_for(upstream_reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
                writer.write(answer[:-2] + self.access.set_cookie_header().encode() + b"\r\n\r\n")
            await _pipe(upstream_reader, writer)
        finally:
            upstream.close()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Copy ``source`` to ``sink`` until its end (then end ``sink``'s writing side)."""
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    finally:
        with contextlib.suppress(OSError):
            if sink.can_write_eof():
                sink.write_eof()
