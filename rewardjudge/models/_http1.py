"""A lean keep-alive HTTP/1.1 client for plain ``http://`` judge servers.

Why it exists (``bench/bench_throughput.py`` measures it): a judge server on
loopback or a LAN answers in ~0.1 s while the grader renders, posts and
parses thousands of requests per second on a couple of cores. aiohttp spends
~85 us of CPU per request on this machine; this client ~20 us, which is what
lets a grader stay near ``concurrency / latency`` at high concurrency.

Scope, kept small on purpose: one origin, ``POST`` with a body, replies
framed by Content-Length, chunked transfer encoding or connection close;
1xx interim replies skipped; keep-alive honoured (``Connection: close`` and
HTTP/1.0 replies close the connection). No TLS, proxies, redirects or
compression: ``https://`` URLs go through aiohttp (``OpenAIModel``'s
``transport`` option picks).

Errors raised: ``asyncio.TimeoutError`` when the whole exchange (connect
included) exceeds ``timeout``; ``ConnectionError`` (``HTTP1ProtocolError`` for
unreadable replies) when the connection fails, is dropped or closes before
the reply is complete. A failed connection is never reused.

>>> pool = HTTP1Pool("127.0.0.1", 8000)                      # doctest: +SKIP
>>> status, headers, body = await pool.post(b"/v1/chat/completions", b"{}", 60.0)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
from typing import Mapping

_MAX_HEAD = 64 * 1024


class HTTP1ProtocolError(ConnectionError):
    """The server's reply is not readable HTTP/1.1."""


class _Conn(asyncio.Protocol):
    """One connection; at most one request in flight (no pipelining)."""

    __slots__ = ("transport", "buf", "waiter", "closed", "keep_alive", "idle_since", "_status",
                 "_headers", "_mode", "_length", "_body", "_received")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.waiter: asyncio.Future | None = None
        self.closed = False
        self.keep_alive = True
        self.idle_since = 0.0
        self._reset()

    def _reset(self) -> None:
        self._status = 0
        self._headers: dict[str, str] | None = None
        self._mode = ""          # "length" | "chunked" | "eof"
        self._length = 0
        self._body = bytearray()
        self._received = False   # any byte of the current reply seen

    # -- asyncio callbacks --------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.waiter is None or self.waiter.done():
            # bytes nobody asked for: the connection's state is unknown
            self.closed = True
            self.transport.close()
            return
        self._received = True
        self.buf += data
        try:
            self._parse()
        except HTTP1ProtocolError as exc:
            self._fail(exc)

    def connection_lost(self, exc: BaseException | None) -> None:
        self.closed = True
        w = self.waiter
        if w is None or w.done():
            return
        if self._headers is not None and self._mode == "eof":
            self._finish(bytes(self._body) + bytes(self.buf))
            return
        if self._headers is None:
            what = "before any reply" if not self._received else "in the middle of the reply headers"
        elif self._mode == "length":
            what = f"after {len(self.buf)} of {self._length} body bytes"
        else:
            what = "in the middle of a chunked body"
        err = ConnectionResetError(f"server closed the connection {what}")
        if exc is not None:
            err.__cause__ = exc
        w.set_exception(err)

    # -- parsing ------------------------------------------------------------
    def _parse(self) -> None:
        buf = self.buf
        while self._headers is None:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > _MAX_HEAD:
                    raise HTTP1ProtocolError("reply headers exceed 64 KiB")
                return
            head = bytes(buf[:end]).decode("latin-1")
            del buf[:end + 4]
            lines = head.split("\r\n")
            parts = lines[0].split(" ", 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
                raise HTTP1ProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
            status = int(parts[1])
            if 100 <= status < 200:
                continue  # interim reply (100 Continue): the real one follows
            headers: dict[str, str] = {}
            for line in lines[1:]:
                name, sep, value = line.partition(":")
                if not sep:
                    raise HTTP1ProtocolError(f"malformed header line: {line[:80]!r}")
                name = name.strip().lower()
                value = value.strip()
                headers[name] = f"{headers[name]}, {value}" if name in headers else value
            self._status = status
            self._headers = headers
            conn = headers.get("connection", "").lower()
            self.keep_alive = ("close" not in conn) and (parts[0] != "HTTP/1.0" or "keep-alive" in conn)
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self._mode = "chunked"
            elif status in (204, 304):
                self._mode, self._length = "length", 0
            elif "content-length" in headers:
                try:
                    self._length = int(headers["content-length"])
                except ValueError:
                    raise HTTP1ProtocolError(
                        f"bad Content-Length {headers['content-length']!r}") from None
                if self._length < 0:
                    raise HTTP1ProtocolError("negative Content-Length")
                self._mode = "length"
            else:
                self._mode = "eof"
                self.keep_alive = False
        if self._mode == "length":
            if len(buf) >= self._length:
                body = bytes(buf[:self._length])
                del buf[:self._length]
                self._finish(body)
        elif self._mode == "chunked":
            self._parse_chunks()
        # "eof": the body ends when the connection closes (connection_lost)

    def _parse_chunks(self) -> None:
        buf = self.buf
        while True:
            if self._length > 0:  # inside a chunk: its data then CRLF
                if len(buf) < self._length + 2:
                    return
                self._body += buf[:self._length]
                if buf[self._length:self._length + 2] != b"\r\n":
                    raise HTTP1ProtocolError("chunk not followed by CRLF")
                del buf[:self._length + 2]
                self._length = 0
                continue
            if self._length < 0:  # after the last chunk: trailers up to an empty line
                while True:
                    end = buf.find(b"\r\n")
                    if end < 0:
                        return
                    line = bytes(buf[:end])
                    del buf[:end + 2]
                    if not line:
                        self._finish(bytes(self._body))
                        return
            end = buf.find(b"\r\n")
            if end < 0:
                if len(buf) > 1024:
                    raise HTTP1ProtocolError("chunk size line too long")
                return
            size_text = bytes(buf[:end]).split(b";", 1)[0].strip()
            del buf[:end + 2]
            try:
                size = int(size_text, 16)
            except ValueError:
                raise HTTP1ProtocolError(f"bad chunk size {size_text[:20]!r}") from None
            self._length = size if size > 0 else -1

    def _finish(self, body: bytes) -> None:
        w, status, headers = self.waiter, self._status, self._headers
        self._reset()
        if self.buf:  # bytes beyond the reply: do not trust this connection again
            self.keep_alive = False
        if w is not None and not w.done():
            w.set_result((status, headers, body))

    def _fail(self, exc: BaseException) -> None:
        self.closed = True
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)
        if self.transport is not None:
            self.transport.abort()


class HTTP1Pool:
    """Keep-alive connections to one ``host:port``.

    ``limit`` caps the idle connections kept; the caller bounds concurrency.
    Connections idle longer than ``idle_timeout`` seconds are closed instead of
    reused: servers close idle keep-alive connections after a few seconds
    (uvicorn: 5), and reusing one they are closing fails the request.
    """

    def __init__(self, host: str, port: int, *, limit: int = 100, idle_timeout: float = 4.0,
                 headers: Mapping[str, str] | None = None):
        self.host = host
        self.port = port
        self.limit = limit
        self.idle_timeout = idle_timeout
        host_header = host if port == 80 else f"{host}:{port}"
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        self._head_tail = f"Host: {host_header}\r\n{extra}".encode("latin-1")
        self._idle: list[_Conn] = []
        self._busy: set[_Conn] = set()
        self._closed = False

    async def _acquire(self, loop: asyncio.AbstractEventLoop, deadline: float) -> _Conn:
        idle = self._idle
        now = loop.time()
        while idle:
            conn = idle.pop()
            if conn.closed or conn.transport is None or conn.transport.is_closing():
                continue
            if now - conn.idle_since > self.idle_timeout:
                # LIFO: everything still in the list is older still
                for old in [conn, *idle]:
                    if old.transport is not None:
                        old.transport.close()
                idle.clear()
                break
            return conn
        remaining = deadline - now
        if remaining <= 0:
            raise asyncio.TimeoutError()
        _, conn = await asyncio.wait_for(
            loop.create_connection(_Conn, self.host, self.port), remaining)
        return conn

    async def post(self, path: bytes, body: bytes, timeout: float) -> tuple[int, dict[str, str], bytes]:
        """POST ``body`` to ``path``; return ``(status, headers, body)``.

        Header names in the returned dict are lower-case.
        """
        if self._closed:
            raise ConnectionError("the HTTP connection pool is closed")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        conn = await self._acquire(loop, deadline)
        waiter = conn.waiter = loop.create_future()
        timer = loop.call_at(deadline, _expire, waiter)
        self._busy.add(conn)
        ok = False
        try:
            conn.transport.write(b"POST %s HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n%s" % (
                path, self._head_tail, len(body), body))
            result = await waiter
            ok = True
            return result
        finally:
            timer.cancel()
            self._busy.discard(conn)
            conn.waiter = None
            if ok and conn.keep_alive and not conn.closed and not self._closed \
                    and len(self._idle) < self.limit:
                conn.idle_since = loop.time()
                self._idle.append(conn)
            else:
                # failed, cancelled or told to close: never reuse
                conn.closed = True
                if conn.transport is not None:
                    conn.transport.abort() if not ok else conn.transport.close()

    def close(self) -> None:
        """Close every connection (in-flight requests fail with ConnectionError)."""
        self._closed = True
        for conn in [*self._idle, *self._busy]:
            conn.closed = True
            if conn.transport is not None:
                try:
                    conn.transport.abort()
                except RuntimeError:
                    pass  # its loop is closed; nothing left to release
        self._idle.clear()
        self._busy.clear()


def _expire(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_exception(asyncio.TimeoutError())
