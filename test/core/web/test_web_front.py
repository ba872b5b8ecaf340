"""The web view's front (robokin_ros/web/front.py): the gate runs in our own code on HTTP, before
viser's server, which listens on a loopback address of its own. Skipped without viser."""

from __future__ import annotations

import ipaddress
import socket
import sys
import urllib.error
import urllib.request

import pytest

from robokin_ros.web import front
from robokin_ros.web.access import serve

viser = pytest.importorskip("viser", reason="the web view needs viser (tools/requirements-web.txt)")
from websockets.exceptions import InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

SUBPROTOCOL = f"viser-v{viser.__version__}"


@pytest.fixture
def served():
    view = serve(viser, "127.0.0.1", 0)
    yield view
    view.server.stop()


def raw(port: int, data: bytes) -> bytes:
    """What the front answers to ``data`` sent on one connection (until it closes)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_the_port_users_reach_is_the_fronts_and_viser_listens_on_a_loopback_address_of_its_own(served):
    access, backend = served.access, served.server.front.backend
    assert served.server.get_port() == access.port != 0
    assert ipaddress.ip_address(backend[0]).is_loopback and backend[1] != access.port
    if sys.platform.startswith("linux"):
        assert backend[0] != "127.0.0.1"   # a random 127.x.y.z: a page cannot guess it
    assert isinstance(served.server, viser.ViserServer)


def test_page_and_websocket_pass_the_gate_and_the_token_becomes_a_cookie(served):
    access = served.access
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"http://127.0.0.1:{access.port}/", timeout=10)
    assert refused.value.code == 403 and b"a valid token is needed" in refused.value.read()
    page = urllib.request.urlopen(access.url(), timeout=10)
    assert page.status == 200 and b"<html" in page.read().lower()
    assert page.headers["Set-Cookie"] == (f"{access.cookie_name}={access.token}; Path=/; HttpOnly; "
                                          "SameSite=Strict")
    cookie = {"Cookie": f"{access.cookie_name}={access.token}"}
    with connect(f"ws://127.0.0.1:{access.port}/", origin=f"http://127.0.0.1:{access.port}",
                 additional_headers=cookie, subprotocols=[SUBPROTOCOL], open_timeout=10) as ws:
        assert ws.recv(timeout=10)   # viser's first message came through the front
    with pytest.raises(InvalidStatus) as other_origin:
        connect(f"ws://127.0.0.1:{access.port}/", origin="http://evil.example", additional_headers=cookie,
                subprotocols=[SUBPROTOCOL], open_timeout=10)
    assert other_origin.value.response.status_code == 403


@pytest.mark.parametrize("head", [
    b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    b"GET / HTTP/1.0\r\n\r\n",
    b"GET /\r\n\r\n",
    b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    b"GET / HTTP/1.1\r\nUpgrade: websocket\r\nUpgrade: h2c\r\n\r\n",
])
def test_what_the_front_cannot_read_as_one_get_request_is_a_bad_request(served, head):
    assert raw(served.access.port, head).startswith(b"HTTP/1.1 400 Bad Request\r\n")


def test_a_head_over_the_limit_is_closed_unanswered(served):
    head = b"GET / HTTP/1.1\r\nX: " + b"a" * (front.MAX_HEAD_BYTES + 10)
    with socket.create_connection(("127.0.0.1", served.access.port), timeout=10) as sock:
        try:
            sock.sendall(head)
            answer = sock.recv(65536)
        except ConnectionResetError:
            answer = b""
    assert answer == b""


def test_a_refused_request_never_reaches_viser(served, monkeypatch):
    """The gate decides before any byte goes to viser's port."""
    opened = []
    real = front.asyncio.open_connection

    async def counting(*args, **kwargs):
        opened.append(args)
        return await real(*args, **kwargs)

    monkeypatch.setattr(front.asyncio, "open_connection", counting)
    port = served.access.port
    assert raw(port, f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()).startswith(b"HTTP/1.1 403")
    assert raw(port, f"GET /?token=wrong HTTP/1.1\r\nHost: evil.example:{port}\r\n\r\n".encode()).startswith(
        b"HTTP/1.1 403")
    assert opened == []
    assert raw(port, f"GET /?token={served.access.token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
               ).startswith(b"HTTP/1.1 200")
    assert opened == [served.server.front.backend]


def test_stopping_the_server_stops_its_front():
    view = serve(viser, "127.0.0.1", 0)
    port = view.access.port
    view.server.stop()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
