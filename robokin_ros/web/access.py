"""Who may open a web view: the address it listens on, a per-run token and the page's own origin.

A viser server answers anyone who reaches its port, and a browser on the same machine reaches
127.0.0.1 from any web page it shows. So every view is served behind a gate (as Jupyter does):

- a random token, made per run, in the URL the command prints (``http://127.0.0.1:8080/?token=...``);
  the page served for it sets a cookie (``HttpOnly``, ``SameSite=Strict``, named after the port)
  that its own later requests and its websocket carry;
- a websocket is accepted only from the page's own origin: its ``Origin`` header must be
  ``http://`` + the ``Host`` it asked for;
- bound to a loopback address, the ``Host`` must be a loopback name with the view's port (a
  DNS-rebinding page names its own host);
- anything else gets ``403 Forbidden`` before viser sees it (no page, no scene, no message).

:func:`serve` checks the address first (a port outside 0-65535, an address that is not this
machine's: :class:`~robokin_ros.errors.ArgumentError`, never a hang in viser's thread), takes the
next free port when the one asked for is busy (and says so), starts viser's server on a loopback
address of its own and the gate in front of it (:class:`~robokin_ros.web.front.Front`: our own
code on HTTP, not viser's insides). Bound to an address other machines reach, it warns: the
token travels in clear (no TLS).
"""

from __future__ import annotations

import dataclasses
import errno
import functools
import hmac
import ipaddress
import secrets
import socket
import urllib.parse
from http.cookies import CookieError, SimpleCookie

from ..errors import ArgumentError

#: Ports tried after a busy one before giving up.
PORT_TRIES = 100
#: Names a loopback-bound view answers to (the ``Host`` header's host part).
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "[::1]"})


def is_loopback(host: str) -> bool:
    """``host`` (an address or ``localhost``) reaches only this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bind_probe(host: str, port: int) -> None:
    """Bind (and close) a socket at ``(host, port)`` as the server will (address reuse on).

    Raises:
        OSError: the address cannot be bound (busy port, not this machine's address, no such name).
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        probe.bind(address)


def check_address(host: str, port: int, names: tuple[str, str] = ("host", "port")) -> int:
    """The port to serve on: ``port``, or the next free one when it is busy (0: any free port).

    Args:
        host: address or name to listen on. port: the port asked for (0-65535).
        names: how the host and port options are called in messages (``--host``, ``--port``).

    Raises:
        ArgumentError: a port outside 0-65535, a host that is not an address of this machine (or
            does not resolve), or no free port among :data:`PORT_TRIES` from ``port``.
    """
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ArgumentError(names[1], f"must be a whole number in [0, 65535], got {port!r}")
    if not isinstance(host, str) or not host or any(c.isspace() for c in host):
        raise ArgumentError(names[0], f"must be an address or host name, got {host!r}")
    for candidate in range(port, min(port + PORT_TRIES, 65536)) if port else (0,):
        try:
            _bind_probe(host, candidate)
            return candidate
        except socket.gaierror as e:
            raise ArgumentError(names[0], f"{host!r} is not an address ({e.strerror or e})") from None
        except OverflowError as e:
            raise ArgumentError(names[1], str(e)) from None
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise ArgumentError(names[0], f"cannot listen on {host!r} ({e.strerror or e})") from None
    raise ArgumentError(names[1], f"ports {port} to {candidate} of {host!r} are all busy")


@dataclasses.dataclass(frozen=True)
class ViewAccess:
    """The gate of one served view.

    Attributes:
        host: the address it listens on. port: its port.
        token: the per-run secret (URL-safe text).
    """

    host: str
    port: int
    token: str = dataclasses.field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)

    @property
    def cookie_name(self) -> str:
        """The token's cookie (cookies are not per port: the port is in the name)."""
        return f"robokin-view-{self.port}"

    @property
    def loopback(self) -> bool:
        """Listening only on this machine."""
        return is_loopback(self.host)

    def url(self) -> str:
        """The URL to print: the page with its token (``localhost`` for a wildcard address)."""
        host = self.host if self.host not in ("0.0.0.0", "::", "") else "localhost"
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}/?token={self.token}"

    def warning(self) -> str:
        """One line for a view other machines reach ('' for a loopback address)."""
        if self.loopback:
            return ""
        return (f"the web view listens on {self.host}, reachable from other machines: anyone with its URL "
                "(token included) can move it, and the token travels unencrypted (no TLS)")

    def _host_allowed(self, host_header: str) -> bool:
        if not host_header:
            return False
        if not self.loopback:
            return True
        name, _, port = host_header.lower().rpartition(":")
        return name in LOOPBACK_NAMES and port == str(self.port)

    def _token_of(self, path: str, headers) -> tuple[str, bool]:
        """``(token offered, whether it came in the URL)``."""
        offered = urllib.parse.parse_qs(urllib.parse.urlsplit(path).query).get("token", [""])[-1]
        if offered:
            return offered, True
        for line in (headers.get_all("Cookie") or []) if hasattr(headers, "get_all") else [headers.get("Cookie", "")]:
            try:
                morsel = SimpleCookie(line or "").get(self.cookie_name)
            except CookieError:
                continue
            if morsel is not None:
                return morsel.value, False
        return "", False

    def refusal(self, path: str, headers) -> str:
        """Why a request (its target ``path`` and ``headers``: a mapping with ``get``) is refused,
        or '' when it may pass."""
        host = headers.get("Host") or ""
        if not self._host_allowed(host):
            return f"Host {host[:100]!r} is not an address of this view"
        if (headers.get("Upgrade") or "").lower() == "websocket":
            origin = headers.get("Origin") or ""
            if origin.lower() != f"http://{host.lower()}":
                return f"Origin {origin[:100]!r} is not this view's page"
        offered, _ = self._token_of(path, headers)
        if not hmac.compare_digest(offered.encode(), self.token.encode()):
            return "a valid token is needed: open the URL the view printed (it ends with ?token=...)"
        return ""

    def token_in_url(self, path: str) -> bool:
        """The request target ``path`` carries a token (the answer then sets :meth:`set_cookie_header`)."""
        return bool(urllib.parse.parse_qs(urllib.parse.urlsplit(path).query).get("token"))

    def set_cookie_header(self) -> str:
        """The ``Set-Cookie`` header line (without its line end) that hands the token to the page."""
        return f"Set-Cookie: {self.cookie_name}={self.token}; Path=/; HttpOnly; SameSite=Strict"


@functools.cache
def gated_server_class(viser):
    """``viser.ViserServer`` with a :class:`~robokin_ros.web.front.Front` before it: its
    ``get_port`` is the front's (the port users reach) and ``stop`` stops both."""

    class GatedViserServer(viser.ViserServer):
        """A viser server on a private loopback port, reached through its front (``front``)."""

        front = None

        def get_port(self) -> int:
            return self.front.port if self.front is not None else super().get_port()

        def stop(self) -> None:
            try:
                if self.front is not None:
                    self.front.stop()
            finally:
                super().stop()

    return GatedViserServer


@dataclasses.dataclass(frozen=True)
class ServedView:
    """A started, gated viser server.

    Attributes:
        server: the ``viser.ViserServer``. access: its gate (URL with the token).
        requested_port: the port asked for (``access.port`` differs when it was busy).
    """

    server: object
    access: ViewAccess
    requested_port: int

    def port_note(self) -> str:
        """One line when the port asked for was busy and another was taken ('' otherwise)."""
        if self.requested_port in (0, self.access.port):
            return ""
        return f"port {self.requested_port} is busy: serving on port {self.access.port} instead"


def serve(viser, host: str, port: int, names: tuple[str, str] = ("host", "port")) -> ServedView:
    """Start a viser server on ``host``:``port`` (the next free port when busy) behind a gate.

    Args:
        viser: the viser module. names: the host and port options' names in messages.

    Raises:
        ArgumentError: see :func:`check_address`.
        OSError: the front cannot listen (the server is stopped).
    """
    from .front import Front, backend_host

    chosen = check_address(host, port, names)
    inner = backend_host()
    server = gated_server_class(viser)(host=inner, port=0, verbose=False)
    try:
        backend = (inner, viser.ViserServer.get_port(server))
        for _ in range(PORT_TRIES):
            front = Front(host, chosen, backend)
            try:
                front.listen()
                break
            except OSError as e:   # taken since it was checked: the next free one
                front.close()
                if e.errno != errno.EADDRINUSE or not chosen:
                    raise
                chosen = check_address(host, chosen + 1, names)
        access = ViewAccess(host, front.port)
        server.front = front
        front.start(access)
    except BaseException:
        server.stop()
        raise
    return ServedView(server, access, port)
