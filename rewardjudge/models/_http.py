"""The HTTP transport of OpenAIModel and TypedQuestionClient (see docs/judges.md, "Transport"):
one aiohttp session per event loop, closed when that loop ends, or a given httpx client used as
given and never closed. Redirects are never followed; replies are capped at
``max_response_bytes``; idle keep-alive connections are dropped after 4 s (before a server's 5 s)."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import ipaddress
import json
import math
import os
import random
import re
import ssl
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional, TypeVar
from urllib.parse import urlsplit

import orjson
from pydantic import ConfigDict, Field, StrictInt, model_validator

from .._option_types import Options, Real
from ..errors import (ConfigError, JudgeConnectionError, JudgeError, JudgeHTTPError, JudgeResponseError,
                      JudgeTimeoutError)

T = TypeVar("T")
DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
_KEEPALIVE_S = 4.0


#: orjson leaves to ``json`` what it would write otherwise than ``json.dumps`` does (subclasses of
#: the plain types, dataclasses, dates); what it cannot write at all (integers past 64 bits, lone
#: surrogates, keys that are not text) raises ``TypeError``
_ORJSON_EXACT = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def json_body(data: Any) -> bytes:
    """``data`` as a request body: the JSON ``json.dumps(data)`` writes, in orjson's compact UTF-8
    form (an eighth of the CPU for a judge prompt's few kilobytes); ``json.dumps`` where orjson
    would write other values (a NaN: orjson's ``null`` for ``json``'s ``NaN``) or refuses."""
    try:
        body = orjson.dumps(data, option=_ORJSON_EXACT)
    except TypeError:
        return json.dumps(data).encode()
    if b"null" in body and _non_finite(data):
        return json.dumps(data).encode()
    return body


#: every digit as ``0``: a run of 19 is one orjson may read otherwise than ``json`` (an integer past
#: 64 bits becomes a float); a translation and a find cost a tenth of a regular expression's search
_DIGITS_AS_0 = bytes.maketrans(b"0123456789", b"0" * 10)
_LONG_RUN = b"0" * 19


def json_value(raw: bytes, text: str) -> Any:
    """``json.loads(text)`` of a reply body (``text``: ``raw`` decoded, bad bytes replaced), by
    orjson where it reads the same values (a fifth of the CPU): ``json`` reads a body orjson refuses
    (NaN, a lone surrogate, bytes that are not UTF-8) or one with a long run of digits. A leading
    byte-order mark (a proxy's) is no part of the value."""
    if raw[:3] == b"\xef\xbb\xbf":
        raw, text = raw[3:], text[1:]
    if _LONG_RUN not in raw.translate(_DIGITS_AS_0):
        with contextlib.suppress(orjson.JSONDecodeError):
            return orjson.loads(raw)
    return json.loads(text)


def _non_finite(value: Any) -> bool:
    """True when ``value`` (plain data) holds a NaN or an infinity: a walk of its containers that
    looks only at the floats and passes over text, integers and ``None`` first (a chat request's
    messages, text for the most part, are most of it)."""
    todo = [value]
    pop, extend = todo.pop, todo.extend
    while todo:
        v = pop()
        t = type(v)
        if t is str or t is int or v is None or t is bool:
            continue
        if t is float:
            if not math.isfinite(v):
                return True
        elif isinstance(v, dict):
            extend(v.values())
        elif isinstance(v, (list, tuple)):
            extend(v)
    return False


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date)."""
    if not value:
        return None
    with contextlib.suppress(ValueError):
        return max(0.0, float(value))
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value.strip()).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class RetryPolicy(Options):
    """How ``HTTPTransport.request``, the one retry loop, retries a ``JudgeError`` whose
    ``retryable`` is True: ``max_retries`` retries after the first attempt (so at most
    ``max_retries + 1`` attempts). The wait before retry ``k`` (1-based) is a uniform draw in
    ``[0, min(max_delay, base_delay * 2**(k-1))]`` (full jitter), or the server's Retry-After
    when it gives one (capped by ``max_retry_after``)."""

    model_config = ConfigDict(frozen=True)

    max_retries: StrictInt = Field(3, ge=0, description="must be an int >= 0")
    base_delay: Real = Field(0.5, ge=0, description="must be a number of seconds >= 0")
    max_delay: Real = Field(20.0, ge=0, description="must be a number of seconds >= 0")
    max_retry_after: Real = Field(60.0, ge=0, description="must be a number of seconds >= 0")

    def delay(self, retry: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.max_retry_after)
        return random.uniform(0.0, min(self.max_delay, self.base_delay * (2 ** (retry - 1))))


class Retries(Options):
    """A judge client's retry options: ``max_retries`` (None: ``RetryPolicy``'s 3) or a whole
    ``retry_policy``, not both (one of them would be ignored)."""

    model_config = ConfigDict(frozen=True)

    max_retries: Optional[StrictInt] = Field(None, ge=0, description="must be an int >= 0 (or None: 3)")
    retry_policy: Optional[RetryPolicy] = Field(None, description="must be a RetryPolicy (or None)")

    @model_validator(mode="after")
    def _one_of(self) -> "Retries":
        if self.retry_policy is not None and self.max_retries is not None:
            raise ConfigError("pass retry_policy or max_retries, not both")
        return self

    def policy(self) -> RetryPolicy:
        if self.retry_policy is not None:
            return self.retry_policy
        return RetryPolicy() if self.max_retries is None else RetryPolicy(max_retries=self.max_retries)


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
    _check_host(parts.hostname or "", "[" in parts.netloc, got)
    return base_url.rstrip("/")


def _check_host(host: str, bracketed: bool, got: str) -> None:
    if not host:
        raise ConfigError(f"base_url has no host, {got}")
    try:
        if bracketed:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        elif not _HOST.match(host) and (host.isascii() or not host.encode("idna")):  # international
            raise ValueError
    except ValueError:  # UnicodeError included
        kind = "in brackets is not an IPv6 address" if bracketed else "is not a valid host name"
        raise ConfigError(f"base_url: {host!r} {kind}") from None


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


@dataclass(eq=False, slots=True)
class LoopState:
    """One event loop's concurrency limit and aiohttp session."""

    sem: asyncio.Semaphore
    session: Any = None
    keeper: Any = None
    urls: dict[str, Any] = field(default_factory=dict)
    proxy: Any = None
    proxy_auth: Any = None


async def _close_when_loop_ends(session: Any):
    """Closes ``session`` when the loop finalises its async generators (advanced once, it is
    registered with the loop: ``asyncio.run`` runs this ``finally`` in ``shutdown_asyncgens``,
    and the loop's finaliser hook does if the model is garbage-collected first)."""
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
    """POSTs to ``base_url`` (checked: ``check_base_url``) + a path, with the headers
    ``request_headers`` makes of ``api_key`` and ``headers``; the one retry loop is ``request``."""

    def __init__(self, base_url: str, api_key: Any, headers: Any, verify: Any, timeout: float,
                 max_concurrency: int, max_response_bytes: int, http_client: Any = None):
        self.base_url = check_base_url(base_url)
        self.api_key, self.headers = request_headers(api_key, headers)
        self.verify = verify
        self.timeout, self.max_concurrency = timeout, max_concurrency
        self.max_response_bytes, self.http_client = max_response_bytes, http_client
        self.ssl = ssl_option(verify)
        #: why no request may be sent any more (a spawned judge's server stopped), said as a ConfigError
        self.stopped: str | None = None
        self._states: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopState]" = \
            weakref.WeakKeyDictionary()

    def __getstate__(self) -> dict[str, Any]:
        # a copy for another process: settings only (a CA bundle's context is rebuilt from its path)
        return {**self.__dict__, "_states": None,
                "ssl": self.ssl if isinstance(self.verify, ssl.SSLContext) else None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _states=weakref.WeakKeyDictionary())
        if self.ssl is None:
            self.ssl = ssl_option(self.verify)

    def loop_state(self) -> LoopState:
        """The running loop's state (limits and connections are per loop: a model may serve several
        over its life, asyncio.run per call, a trainer's background loop)."""
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        if state is None:
            state = self._states[loop] = LoopState(asyncio.Semaphore(self.max_concurrency))
        return state

    async def _session(self, state: LoopState) -> Any:
        import aiohttp
        from aiohttp.helpers import get_env_proxy_for_url

        # The proxy variables are read once per session, as trust_env=True reads them: that would
        # redo it on every request in two thread-pool hops (costing more CPU than the request), and
        # a ~/.netrc entry for the judge's host beside our Authorization header raises ValueError.
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

    async def request(self, path: str, body: bytes, read: Callable[[bytes, float], T], policy: RetryPolicy,
                      refused: Callable[[int, str], Exception | None] | None = None) -> tuple[T, int]:
        """``(read(body, latency) of a 200 reply, attempts)``: the one retry loop, within the running
        loop's ``max_concurrency``. Any other reply is what ``refused(status, text)`` makes of it,
        else its ``error``. A ``JudgeError`` that ``read`` or the POST raises is retried while it is
        ``retryable`` and ``policy`` allows; else it is raised with ``attempts`` set. Every attempt
        runs in this one coroutine, the POST included: hundreds of requests may be in flight, and
        each coroutine a request holds is resumed at every step and walked by the garbage collector."""
        if self.stopped:
            raise ConfigError(self.stopped)
        state = self.loop_state()
        n = 0
        async with state.sem:
            while True:
                n += 1
                start = time.perf_counter()
                try:
                    if self.http_client is not None:
                        status, headers, raw = await self._post_httpx(path, body)
                    else:
                        session = state.session
                        if session is None or session.closed:
                            session = await self._session(state)
                        try:
                            r = await session.post(self._url(state, path), data=body, allow_redirects=False,
                                                   proxy=state.proxy, proxy_auth=state.proxy_auth)
                            try:
                                status, headers = r.status, r.headers
                                raw = await self._read(r, status == 200)
                            finally:
                                r.release()   # what ``async with`` does on exit, without its two coroutines
                        except Exception as exc:   # a JudgeError is no transport failure: re-raised as is
                            failure = self._failure(exc, n)
                            if failure is None:
                                raise
                            raise failure from exc
                    if status != 200:
                        text = raw.decode("utf-8", "replace")
                        raise (refused and refused(status, text)) or self.error(status, headers, text)
                    return read(raw, time.perf_counter() - start), n
                except JudgeError as exc:
                    exc.attempts = n
                    if not exc.retryable or n > policy.max_retries:
                        raise
                    await asyncio.sleep(policy.delay(n, getattr(exc, "retry_after", None)))

    def _failure(self, exc: Exception, attempt: int) -> JudgeError | None:
        """The JudgeError an aiohttp POST's exception is (None: not a transport failure)."""
        import aiohttp

        if isinstance(exc, asyncio.TimeoutError):  # before OSError: TimeoutError is one since 3.11
            return JudgeTimeoutError(f"judge timed out after {self.timeout}s")
        if isinstance(exc, aiohttp.ClientConnectorCertificateError):
            err = JudgeConnectionError(
                f"judge TLS certificate not trusted ({exc.certificate_error}): pass verify= a CA "
                f"bundle path or an ssl.SSLContext that trusts it (verify=False skips the check)")
            err.retryable = False  # it will not be trusted on the next try either
            return err
        if not isinstance(exc, (aiohttp.ClientError, OSError)):
            return None
        err = JudgeConnectionError(f"judge connection failed: {exc!r}")
        if attempt == 1 and isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)) \
                and not isinstance(exc, aiohttp.ClientConnectorError):  # refused, unreachable, DNS: back off
            # usually a kept-alive connection the server had just closed: a new connection
            # serves the retry at once (RFC 9112 9.3.1); later failures back off as usual
            err.retry_after = 0.0  # type: ignore[attr-defined]
        return err

    def _read(self, r: Any, whole: bool) -> Any:
        """An awaitable of the reply body, at most ``max_response_bytes`` of it (see ``_capped``)."""
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
        """Close the running loop's session and ask other running loops to close theirs (others close
        when their loop ends)."""
        try:
            current = asyncio.get_running_loop()
        except RuntimeError:
            current = None
        for loop, state in list(self._states.items()):
            keeper = state.keeper
            if keeper is None or (loop is not current and (loop.is_closed() or not loop.is_running())):
                continue   # a loop that is not running closes it in its shutdown_asyncgens()
            state.keeper = state.session = None
            if loop is current:
                await keeper.aclose()
            else:
                fut = asyncio.run_coroutine_threadsafe(keeper.aclose(), loop)
                if current is not None:  # that loop busy or ending: it will close it itself
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(asyncio.wrap_future(fut), 5.0)
