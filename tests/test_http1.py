"""The lean HTTP/1.1 client (rewardjudge.models._http1) against scripted raw replies."""

from __future__ import annotations

import asyncio

import pytest

from rewardjudge.models._http1 import HTTP1Pool, HTTP1ProtocolError


class RawServer:
    """A loopback server that answers each request with the next scripted item:
    bytes (then wait for the next request), ``("close", bytes)`` (write, then
    close), ``None`` (close without a reply) or ``"hang"`` (never answer)."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests: list[bytes] = []
        self.connections = 0

    async def __aenter__(self):
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc):
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader, writer):
        self.connections += 1
        try:
            while self.replies:
                head = await reader.readuntil(b"\r\n\r\n")
                length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0]
                             .split(b":")[1])
                body = await reader.readexactly(length)
                self.requests.append(head + body)
                reply = self.replies.pop(0)
                if reply is None:
                    break
                if reply == "hang":
                    await reader.read()
                    break
                close = isinstance(reply, tuple)
                writer.write(reply[1] if close else reply)
                await writer.drain()
                if close:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"

REPLIES = [
    # Content-Length framing
    (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}", 200, b'{"a":1}'),
    # chunked, with a chunk extension and a trailer
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\n{\"a\r\n4\r\n\":1}\r\n0\r\nT: 1\r\n\r\n",
     200, b'{"a":1}'),
    # a 100 Continue before the real reply
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nhi", 201, b"hi"),
    # an error status keeps its body and headers
    (b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 3\r\nContent-Length: 4\r\n\r\nslow", 429, b"slow"),
    # 204: no body even without Content-Length
    (b"HTTP/1.1 204 No Content\r\n\r\n", 204, b""),
]


@pytest.mark.parametrize("raw,status,body", REPLIES)
async def test_reply_framings(raw, status, body):
    async with RawServer([raw, OK]) as srv:
        pool = HTTP1Pool("127.0.0.1", srv.port, headers={"Authorization": "Bearer k"})
        got = await pool.post(b"/v1/x", b'{"q": 1}', 5.0)
        assert got[0] == status and got[2] == body
        # the connection is reused for the next request
        assert (await pool.post(b"/v1/x", b"{}", 5.0))[2] == b"ok"
        assert srv.connections == 1
        assert srv.requests[0].startswith(b"POST /v1/x HTTP/1.1\r\nHost: 127.0.0.1:")
        assert b"Authorization: Bearer k\r\n" in srv.requests[0] and srv.requests[0].endswith(b'{"q": 1}')
        pool.close()


async def test_header_names_are_lower_case():
    async with RawServer([REPLIES[3][0]]) as srv:
        pool = HTTP1Pool("127.0.0.1", srv.port)
        status, headers, _ = await pool.post(b"/", b"", 5.0)
        assert headers["retry-after"] == "3"
        pool.close()


@pytest.mark.parametrize("raw", [
    b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",   # told to close
    b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",                        # HTTP/1.0 default
])
async def test_connection_close_is_not_reused(raw):
    async with RawServer([raw, OK]) as srv:
        pool = HTTP1Pool("127.0.0.1", srv.port)
        assert (await pool.post(b"/", b"", 5.0))[2] == b"ok"
        assert (await pool.post(b"/", b"", 5.0))[2] == b"ok"
        assert srv.connections == 2
        pool.close()


async def test_body_until_close():
    async with RawServer([("close", b"HTTP/1.1 200 OK\r\n\r\nuntil-close")]) as srv:
        pool = HTTP1Pool("127.0.0.1", srv.port)
        assert (await pool.post(b"/", b"", 5.0))[2] == b"until-close"
        pool.close()


@pytest.mark.parametrize("raw,exc", [
    # closed before a single byte
    (None, ConnectionResetError),
    # a body shorter than announced
    (b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\nshort", ConnectionResetError),
    # not HTTP at all
    (b"SSH-2.0-OpenSSH\r\n\r\n", HTTP1ProtocolError),
    # a Content-Length that is not a number
    (b"HTTP/1.1 200 OK\r\nContent-Length: lots\r\n\r\n", HTTP1ProtocolError),
    # a broken chunk size
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", HTTP1ProtocolError),
])
async def test_broken_replies_raise_connection_errors(raw, exc):
    async with RawServer([raw if raw is None else ("close", raw)]) as srv:
        pool = HTTP1Pool("127.0.0.1", srv.port)
        with pytest.raises(exc):
            await pool.post(b"/", b"", 5.0)
        assert not pool._idle  # a failed connection is never reused
        pool.close()


async def test_timeout_and_refused():
    async with RawServer(["hang"]) as srv:  # reads the request, never answers
        pool = HTTP1Pool("127.0.0.1", srv.port)
        with pytest.raises(asyncio.TimeoutError):
            await pool.post(b"/", b"", 0.2)
        pool.close()
        port = srv.port
    with pytest.raises(ConnectionError):
        await HTTP1Pool("127.0.0.1", port).post(b"/", b"", 2.0)


async def test_idle_connections_expire():
    async with RawServer([OK, OK]) as srv:
        pool = HTTP1Pool("127.0.0.1", srv.port, idle_timeout=0.0)
        await pool.post(b"/", b"", 5.0)
        await asyncio.sleep(0.01)
        await pool.post(b"/", b"", 5.0)
        assert srv.connections == 2  # the idle one was dropped, not reused
        pool.close()


async def test_closed_pool_refuses():
    pool = HTTP1Pool("127.0.0.1", 1)
    pool.close()
    with pytest.raises(ConnectionError, match="closed"):
        await pool.post(b"/", b"", 1.0)
