"""The HTTP transport of OpenAIModel and TypedQuestionClient: one aiohttp session per
event loop, or a given httpx client. What it does on the wire:

* the URL and every header value are checked when the client is built
  (``ConfigError`` naming the argument; a CR/LF in a header is refused;
  header values are never echoed: they are often secrets);

* proxies: ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY`` are honoured, read
  as aiohttp's ``trust_env`` reads them, once per session (a loopback judge
  with a proxy variable set needs NO_PROXY, as with curl);
* TLS: ``verify`` is True (system CAs), False (no check: a self-signed test
  judge), a CA bundle path (file or directory: trust exactly those CAs) or
  an ``ssl.SSLContext``;
* replies: at most ``max_response_bytes`` are read (incrementally; a bigger
  reply is a ``JudgeResponseError``, not a memory spike);
* redirects are never followed: a redirected POST is a ``JudgeHTTPError``
  naming the ``Location``, so a misconfigured ``base_url`` is fixed instead
  of silently re-sent (as a GET, by some clients);
* connections: one aiohttp session per event loop, closed when that loop
  ends (``asyncio.run``, ``grade_batch_sync``, a test's loop) or when the
  model is garbage-collected on a running loop (a notebook cell re-run), so
  no ``Unclosed client session`` is left behind. Idle keep-alive
  connections are dropped after 4 s, before the usual 5 s server timeout
  (uvicorn, llama.cpp) could close one under a new request.

An ``httpx.AsyncClient`` passed as ``http_client`` (custom transports,
``httpx.MockTransport`` in tests) is used instead, as given, and never
closed; redirects are not followed there either.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import re
import ssl
import weakref
from typing import Any, Mapping
from urllib.parse import urlsplit

from ..errors import ConfigError, JudgeConnectionError, JudgeHTTPError, JudgeResponseError, JudgeTimeoutError
from ._retry import parse_retry_after

DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
_KEEPALIVE_S = 4.0
_aiohttp: Any = None


def _load_aiohttp() -> Any:
    global _aiohttp
    if _aiohttp is None:
        import aiohttp

        _aiohttp = aiohttp
    return _aiohttp


# -- checked when a client is built: a ConfigError naming the argument -------------
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_CTL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # control characters but HTAB
_HOST = re.compile(r"[A-Za-z0-9._~%!$&'()*+,;=-]+\Z")


def check_base_url(base_url: str) -> str:
    """``base_url`` without its trailing slash, or a ConfigError saying what is wrong."""
    got = f"got {base_url!r}"
    if any(c.isspace() or ord(c) < 0x20 or c == "\x7f" for c in base_url):
        raise ConfigError(f"base_url must not contain spaces or control characters, {got}")
    try:
        parts = urlsplit(base_url)
    except ValueError as exc:  # e.g. a bracketed host that is not an IPv6 address
        raise ConfigError(f"base_url is not a valid URL ({exc}), {got}") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"base_url must be an http(s) URL ending in /v1, {got}")
    if "@" in parts.netloc:
        raise ConfigError("base_url must not carry credentials (user:password@): pass api_key= "
                          "or headers= instead")
    if parts.query or parts.fragment or base_url.endswith(("?", "#")):
        raise ConfigError(f"base_url must not have a query or fragment (paths are appended to it), "
                          f"{got}")
    try:
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError as exc:
        raise ConfigError(f"base_url has an invalid port ({exc}); an IPv6 address goes in "
                          f"brackets: http://[::1]:8000/v1, {got}") from None
    problem = _host_problem(parts.hostname or "", "[" in parts.netloc, got)
    if problem:
        raise ConfigError(problem)
    return base_url.rstrip("/")


def _host_problem(host: str, bracketed: bool, got: str) -> str | None:
    if not host:
        return f"base_url has no host, {got}"
    if bracketed:
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            return f"base_url: {host!r} in brackets is not an IPv6 address"
    elif not _HOST.match(host) and not _international(host):
        return f"base_url: {host!r} is not a valid host name"
    return None


def _international(host: str) -> bool:
    """True for an international host name: non-ASCII, IDNA-encodable."""
    try:
        host.encode("idna")
    except UnicodeError:
        return False
    return not host.isascii()


def request_headers(api_key: Any, headers: Any) -> tuple[str | None, dict[str, str]]:
    """``(api key, every request header)``: ``api_key`` (None: ``OPENAI_API_KEY``) as a
    bearer token, then ``headers``; each checked."""
    if headers is not None and not isinstance(headers, Mapping):
        raise ConfigError(f"headers must be a mapping of header names to values, "
                          f"got {type(headers).__name__}")
    from_env = api_key is None
    key = os.environ.get("OPENAI_API_KEY") if from_env else api_key
    out = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        _check_header("api_key (from OPENAI_API_KEY)" if from_env else "api_key", "Authorization", key)
        out["Authorization"] = f"Bearer {key}"
    for name, value in (headers or {}).items():
        _check_header(f"headers[{name!r}]", name, value)
        out[name] = value
    return key, out


def _check_header(arg: str, name: Any, value: Any) -> None:
    """Refuse what would corrupt the request or be altered on the wire."""
    if not isinstance(name, str) or not _TOKEN.match(name):
        raise ConfigError(f"{arg}: {name!r} is not a valid HTTP header name")
    if not isinstance(value, str):
        raise ConfigError(f"{arg}: the value of header {name!r} must be a str, "
                          f"got {type(value).__name__}")
    if "\r" in value or "\n" in value:
        raise ConfigError(f"{arg} must not contain a line break (CR or LF) -- it would end the "
                          f"header and inject the rest into the request; a trailing newline read "
                          f"from a file? (header {name!r})")
    m = _CTL.search(value)
    if m:
        raise ConfigError(f"{arg} contains the control character {m.group()!r} at position "
                          f"{m.start()} (header {name!r})")
    if value != value.strip(" \t"):
        raise ConfigError(f"{arg} has leading or trailing whitespace, which HTTP drops "
                          f"(header {name!r})")
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise ConfigError(f"{arg} has characters outside Latin-1, which an HTTP header cannot "
                          f"carry (header {name!r})") from None


def ssl_option(verify: Any) -> "bool | ssl.SSLContext":
    """What aiohttp's ``ssl=`` takes for ``verify``, or a ConfigError."""
    if verify is True or verify is False or isinstance(verify, ssl.SSLContext):
        return verify
    if not isinstance(verify, (str, os.PathLike)):
        raise ConfigError(f"verify must be True, False, a CA bundle path or an ssl.SSLContext, "
                          f"got {verify!r}")
    path = os.fspath(verify)
    try:
        if os.path.isdir(path):
            return ssl.create_default_context(capath=path)
        if os.path.isfile(path):
            return ssl.create_default_context(cafile=path)
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise ConfigError(f"verify: cannot load the CA bundle {path!r}: {exc}") from None
    raise ConfigError(f"verify: no CA bundle file or directory at {path!r}")


class LoopState:
    """One event loop's concurrency limit and aiohttp session."""

    __slots__ = ("sem", "session", "keeper", "urls", "proxy", "proxy_auth", "__weakref__")

    def __init__(self, limit: int):
        self.sem = asyncio.Semaphore(limit)
        self.session: Any = None
        self.keeper: Any = None
        self.urls: dict[str, Any] = {}
        self.proxy: Any = None
        self.proxy_auth: Any = None


async def _close_when_loop_ends(session: Any):
    """Closes ``session`` when the loop finalises its async generators.

    Advanced once, this generator is registered with the running loop;
    ``asyncio.run`` (and every ``asyncio.Runner``) calls
    ``loop.shutdown_asyncgens()`` before closing the loop, which runs this
    ``finally`` on that loop. If the model is garbage-collected first, the
    loop's finaliser hook schedules the same on the running loop.
    """
    try:
        yield
    finally:
        if not session.closed:
            await session.close()


def _too_big(cap: int, what: str) -> JudgeResponseError:
    err = JudgeResponseError(f"judge reply is larger than max_response_bytes={cap} ({what}); "
                             f"raise max_response_bytes if replies this large are expected")
    err.retryable = False  # the same request would get the same reply
    return err


async def _capped(chunks: Any, whole: bool, cap: int, close: Any) -> bytes:
    """The bytes of ``chunks``, at most ``cap`` of them: beyond that a ``JudgeResponseError``
    (``whole``) or the body cut there (``close()``: the rest is never read)."""
    buf = bytearray()
    async for chunk in chunks:
        buf += chunk
        if len(buf) > cap:
            if close is not None:
                close()  # the connection is not reused
            if whole:
                raise _too_big(cap, f"more than {len(buf)} bytes read")
            return bytes(buf[:cap])
    return bytes(buf)


class HTTPTransport:
    """POSTs to ``base_url`` + a path; ``(status, headers, body)`` or a retryable JudgeError."""

    def __init__(self, base_url: str, headers: dict[str, str], verify: Any, timeout: float,
                 max_concurrency: int, max_response_bytes: int, http_client: Any = None):
        self.base_url, self.headers, self.verify = base_url, headers, verify
        self.timeout, self.max_concurrency = timeout, max_concurrency
        self.max_response_bytes, self.http_client = max_response_bytes, http_client
        self.ssl = ssl_option(verify)
        self._states: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopState]" = \
            weakref.WeakKeyDictionary()
        self._last_state: Any = None

    def __getstate__(self) -> dict[str, Any]:
        # a copy for another process (Ray, multiprocessing): settings only; sessions and
        # limits belong to this process's loops, a CA bundle's context is rebuilt from its path
        state = self.__dict__.copy()
        state.update(_states=None, _last_state=None)
        if not isinstance(self.verify, ssl.SSLContext):
            state["ssl"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._states = weakref.WeakKeyDictionary()
        if self.ssl is None:
            self.ssl = ssl_option(self.verify)

    def loop_state(self) -> LoopState:
        """The running loop's state: a model may serve several event loops over its life
        (asyncio.run per call, a trainer's background loop); limits and connections are
        per loop."""
        loop = asyncio.get_running_loop()
        last = self._last_state   # (loop, state) of the previous call, both weakly held
        if last is not None and last[0]() is loop:
            state = last[1]()
            if state is not None:
                return state
        state = self._states.get(loop)
        if state is None:
            state = self._states[loop] = LoopState(self.max_concurrency)
        self._last_state = (weakref.ref(loop), weakref.ref(state))
        return state

    async def _session(self, state: LoopState) -> Any:
        aiohttp = _load_aiohttp()
        from aiohttp.helpers import get_env_proxy_for_url

        # The proxy variables are read here, once per session, with aiohttp's own
        # reading of them (the one trust_env=True uses). trust_env=True itself would
        # redo it on every request, in two thread-pool hops (proxy lookup and a
        # ~/.netrc read) that cost more CPU than the rest of the request, and a netrc
        # entry for the judge's host beside our Authorization header raises ValueError.
        try:
            state.proxy, state.proxy_auth = get_env_proxy_for_url(self._url(state, ""))
        except LookupError:  # no proxy variable for this scheme, or NO_PROXY matches
            state.proxy = state.proxy_auth = None
        connector = aiohttp.TCPConnector(limit=self.max_concurrency, ssl=self.ssl,
                                         keepalive_timeout=_KEEPALIVE_S, ttl_dns_cache=300)
        session = aiohttp.ClientSession(connector=connector, headers=self.headers,
                                        timeout=aiohttp.ClientTimeout(total=self.timeout),
                                        cookie_jar=aiohttp.DummyCookieJar())
        keeper = _close_when_loop_ends(session)
        await keeper.__anext__()
        state.session, state.keeper = session, keeper
        return session

    def _url(self, state: LoopState, path: str) -> Any:
        url = state.urls.get(path)
        if url is None:
            from yarl import URL

            url = state.urls[path] = URL(self.base_url + path)
        return url

    async def post(self, state: LoopState, path: str, body: bytes,
                   attempt: int = 1) -> tuple[int, Any, bytes]:
        """POST ``body``; ``(status, headers, body)`` or a retryable JudgeError."""
        if self.http_client is not None:
            return await self._post_httpx(path, body)
        aiohttp = _aiohttp or _load_aiohttp()
        session = state.session
        if session is None or session.closed:
            session = await self._session(state)
        try:
            async with session.post(self._url(state, path), data=body, allow_redirects=False,
                                    proxy=state.proxy, proxy_auth=state.proxy_auth) as r:
                return r.status, r.headers, await self._read(r, r.status == 200)
        except asyncio.TimeoutError as exc:  # before OSError: TimeoutError is one since 3.11
            raise JudgeTimeoutError(f"judge timed out after {self.timeout}s") from exc
        except aiohttp.ClientConnectorCertificateError as exc:
            err = JudgeConnectionError(
                f"judge TLS certificate not trusted ({exc.certificate_error}): pass verify= a CA "
                f"bundle path or an ssl.SSLContext that trusts it (verify=False skips the check)")
            err.retryable = False  # it will not be trusted on the next try either
            raise err from exc
        except aiohttp.ClientConnectorError as exc:  # refused, unreachable, DNS: back off
            raise JudgeConnectionError(f"judge connection failed: {exc!r}") from exc
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            err = JudgeConnectionError(f"judge connection failed: {exc!r}")
            if attempt == 1:
                # An established connection failed under the request. The usual cause is
                # a kept-alive connection the server had just closed (its idle timeout, or
                # a close after its last reply without saying so): a new connection serves
                # the retry at once (RFC 9112 9.3.1; a judge request is safe to repeat).
                # Later failures back off as usual.
                err.retry_after = 0.0  # type: ignore[attr-defined]
            raise err from exc
        except (aiohttp.ClientError, OSError) as exc:
            raise JudgeConnectionError(f"judge connection failed: {exc!r}") from exc

    def _read(self, r: Any, whole: bool) -> Any:
        """An awaitable of the reply body, at most ``max_response_bytes`` of it: beyond that
        a ``JudgeResponseError`` (``whole``) or the body cut there (error replies)."""
        cap = self.max_response_bytes
        length = r.content_length
        if length is not None and "Content-Encoding" not in r.headers:
            if length <= cap:
                return r.read()  # framed by Content-Length: never more than announced
            if whole:
                r.close()
                raise _too_big(cap, f"Content-Length {length}")
        return _capped(r.content.iter_any(), whole, cap, r.close)

    async def _post_httpx(self, path: str, body: bytes) -> tuple[int, Any, bytes]:
        import httpx

        cap = self.max_response_bytes
        try:
            async with self.http_client.stream(
                    "POST", self.base_url + path, content=body, headers=self.headers,
                    timeout=self.timeout, follow_redirects=False) as r:
                whole = r.status_code == 200
                length = r.headers.get("Content-Length", "")
                if whole and length.isdigit() and int(length) > cap:
                    raise _too_big(cap, f"Content-Length {length}")
                return r.status_code, r.headers, await _capped(r.aiter_bytes(), whole, cap, None)
        except httpx.TimeoutException as exc:
            raise JudgeTimeoutError(f"judge timed out after {self.timeout}s: {exc!r}") from exc
        except httpx.RequestError as exc:
            raise JudgeConnectionError(f"judge connection failed: {exc!r}") from exc

    def error(self, status: int, headers: Any, text: str) -> JudgeHTTPError:
        """The JudgeHTTPError a non-200 reply is, with a hint for the usual set-up mistakes."""
        if status == 404 and not self.base_url.endswith("/v1"):
            # the commonest set-up mistake: the server's root instead of its /v1 API
            text = f"{text} (hint: base_url usually ends in /v1, got {self.base_url!r})"
        elif 300 <= status < 400:
            text = (f"{text} (the judge server redirects to {headers.get('Location')!r}; a POST "
                    f"is not followed: set base_url to where the API is)")
        return JudgeHTTPError(status, text, retry_after=parse_retry_after(headers.get("Retry-After")))

    async def aclose(self) -> None:
        """Close the session of the running loop (and ask other running loops to close
        theirs). Sessions of loops that are not running close when their loop ends."""
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        for loop, state in list(self._states.items()):
            keeper = state.keeper
            if keeper is None:
                continue
            if loop is current:
                state.keeper = state.session = None
                await keeper.aclose()
            elif loop.is_running() and not loop.is_closed():
                state.keeper = state.session = None
                fut = asyncio.run_coroutine_threadsafe(keeper.aclose(), loop)
                if current is not None:
                    try:
                        await asyncio.wait_for(asyncio.wrap_future(fut), 5.0)
                    except Exception:  # that loop is busy or ending: it will close it itself
                        pass
            # a loop that is not running closes it in its shutdown_asyncgens()
