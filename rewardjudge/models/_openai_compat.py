"""OpenAIModel: an async client for OpenAI-compatible chat-completions servers.

One HTTP transport: aiohttp, for ``http://`` and ``https://`` judges alike
(measured in ``bench/bench_throughput.py``: grades/s within a few percent of
a bare aiohttp client from concurrency 1 to 512). What it does on the wire:

* proxies: ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``NO_PROXY`` are honoured, read
  as aiohttp's ``trust_env`` reads them, once per session (a loopback judge
  with a proxy variable set needs NO_PROXY, as with curl);
* TLS: ``verify`` is True (system CAs), False (no check: a self-signed test
  judge), a CA bundle path (file or directory: trust exactly those CAs) or
  an ``ssl.SSLContext``;
* replies: at most ``max_response_bytes`` are read (incrementally; a bigger
  reply is a ``JudgeResponseError``, not a memory spike);
* redirects are never followed, for http:// and https:// alike: a POST
  that is redirected is a ``JudgeHTTPError`` naming the ``Location``, so a
  misconfigured ``base_url`` is fixed instead of silently re-sent (as a
  GET, by some clients);
* the URL and every header value are checked when the model is built
  (``ConfigError`` naming the argument; a CR/LF in a header is refused);
* connections: one aiohttp session per event loop, closed when that loop
  ends (``asyncio.run``, ``grade_batch_sync``, a test's loop) or when the
  model is garbage-collected on a running loop (a notebook cell re-run), so
  no ``Unclosed client session`` is left behind. Idle keep-alive
  connections are dropped after 4 s, before the usual 5 s server timeout
  (uvicorn, llama.cpp) could close one under a new request.

An ``httpx.AsyncClient`` passed as ``http_client`` (custom transports,
``httpx.MockTransport`` in tests) is used instead, as given, and never
closed by the model; redirects are not followed there either.
"""

from __future__ import annotations

import asyncio
import copy
import email.utils
import ipaddress
import json
import logging
import os
import random
import re
import ssl
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence
from urllib.parse import urlsplit

from ..errors import (ConfigError, JudgeConnectionError, JudgeError, JudgeHTTPError,
                      JudgeResponseError, JudgeTimeoutError)
from ._base import Completion, GenerationParams, InferenceModel, Message
from ._base import (GradeDistributionUnsupported, TokenDistribution, check_choices,
                   match_choices)
from ._retry import RetryPolicy, retry_async

log = logging.getLogger("rewardjudge")

StructuredStyle = Literal["json_schema", "json_object", "none"]
LogprobsEndpoint = Literal["auto", "chat", "completions"]
#: strongest first: each falls back to the next
_STYLES = ("json_schema", "json_object", "none")
_RANK = {s: i for i, s in enumerate(_STYLES)}

DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
#: requests sent in a weaker structured-output form before the stronger one is tried again
DEFAULT_REPROBE_AFTER = 1000
_KEEPALIVE_S = 4.0


def parse_retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - time.time())


# --------------------------------------------------------------------------
# construction-time checks: URL, headers, TLS
# --------------------------------------------------------------------------
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+\Z")
_CTL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # control characters but HTAB
_HOST = re.compile(r"[A-Za-z0-9._~%!$&'()*+,;=-]+\Z")


def _check_base_url(base_url: Any) -> str:
    """``base_url`` without its trailing slash, or a ConfigError saying what is wrong."""
    usage = f"base_url must be an http(s) URL ending in /v1, got {base_url!r}"
    if not isinstance(base_url, str):
        raise ConfigError(usage)
    if any(c.isspace() or ord(c) < 0x20 or c == "\x7f" for c in base_url):
        raise ConfigError(f"base_url must not contain spaces or control characters, got {base_url!r}")
    try:
        parts = urlsplit(base_url)
    except ValueError as exc:  # e.g. a bracketed host that is not an IPv6 address
        raise ConfigError(f"base_url is not a valid URL ({exc}), got {base_url!r}") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise ConfigError(usage)
    if "@" in parts.netloc:
        raise ConfigError("base_url must not carry credentials (user:password@): pass api_key= "
                          "or headers= instead")
    if parts.query or parts.fragment or base_url.endswith(("?", "#")):
        raise ConfigError(f"base_url must not have a query or fragment (paths are appended to it), "
                          f"got {base_url!r}")
    try:
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError as exc:
        raise ConfigError(f"base_url has an invalid port ({exc}); an IPv6 address goes in "
                          f"brackets: http://[::1]:8000/v1, got {base_url!r}") from None
    host = parts.hostname or ""
    if not host:
        raise ConfigError(f"base_url has no host, got {base_url!r}")
    if "[" in parts.netloc:
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            raise ConfigError(f"base_url: {host!r} in brackets is not an IPv6 address") from None
    elif not _HOST.match(host) and not host.isascii():
        try:
            host.encode("idna")
        except UnicodeError:
            raise ConfigError(f"base_url: {host!r} is not a valid host name") from None
    elif not _HOST.match(host):
        raise ConfigError(f"base_url: {host!r} is not a valid host name")
    return base_url.rstrip("/")


def _check_header(arg: str, name: Any, value: Any) -> None:
    """Refuse what would corrupt the request or be altered on the wire (values are not echoed:
    they are often secrets)."""
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


def _ssl_option(verify: Any) -> "bool | ssl.SSLContext":
    if verify is True or verify is False:
        return verify
    if isinstance(verify, ssl.SSLContext):
        return verify
    if isinstance(verify, (str, os.PathLike)):
        path = os.fspath(verify)
        try:
            if os.path.isdir(path):
                return ssl.create_default_context(capath=path)
            if os.path.isfile(path):
                return ssl.create_default_context(cafile=path)
        except (ssl.SSLError, OSError, ValueError) as exc:
            raise ConfigError(f"verify: cannot load the CA bundle {path!r}: {exc}") from None
        raise ConfigError(f"verify: no CA bundle file or directory at {path!r}")
    raise ConfigError(f"verify must be True, False, a CA bundle path or an ssl.SSLContext, "
                      f"got {verify!r}")


# --------------------------------------------------------------------------
# structured output: which response_format each server takes
# --------------------------------------------------------------------------
class _SchemaRejected(Exception):
    """The server refused the request's response_format, not the request."""


_RF_FIELD = re.compile(r"(response_format|json_schema|guided_(json|grammar|decoding)|"
                       r"structured_outputs?|grammar)\b", re.I)
_RF_TEXT = re.compile(r"response[_ ]?format|json[_ ]schema|structured[_ ]outputs?|"
                      r"guided[_ ](json|grammar|decoding)|grammar", re.I)
#: keys of an error body that say what went wrong; everything else (input, body, request,
#: ctx...) may echo the request, which holds a response_format whatever the error
_MESSAGE_KEYS = frozenset({"error", "errors", "message", "msg", "detail", "details",
                           "description", "reason", "title"})
_FIELD_KEYS = frozenset({"param", "loc", "field", "path", "parameter"})
#: a field locator written into a message (llama-cpp-python puts pydantic's error dicts
#: into its message text: ``{'type': ..., 'loc': ('body', 'response_format', 'type'), ...}``)
_TEXT_LOCATOR = re.compile(r"""['"](?:loc|param|field)['"]\s*:\s*"""
                           r"""(\([^)]*\)|\[[^\]]*\]|'[^']*'|"[^"]*")""")


def _strip_echoes(text: str) -> str:
    """``text`` without its bracketed spans: an error message names the field it is about
    outside brackets, and quotes the request (``input_value={...}``) inside them."""
    out: list[str] = []
    depth = 0
    start = 0
    for i, c in enumerate(text):
        if c in "{[":
            if depth == 0:
                out.append(text[start:i])
            depth += 1
        elif c in "}]" and depth:
            depth -= 1
            if depth == 0:
                start = i + 1
    if depth == 0:
        out.append(text[start:])
    return " ".join(out)


def _error_parts(obj: Any, texts: list[str], fields: list[str], depth: int = 0) -> None:
    if depth > 8:
        return
    if isinstance(obj, str):
        texts.append(obj)
    elif isinstance(obj, list):
        for item in obj[:50]:
            _error_parts(item, texts, fields, depth + 1)
    elif isinstance(obj, dict):
        for key, value in list(obj.items())[:50]:
            k = str(key).lower()
            if k in _FIELD_KEYS:
                items = value if isinstance(value, list) else [value]
                fields.extend(str(v) for v in items[:20] if isinstance(v, (str, int)))
            elif k in _MESSAGE_KEYS:
                _error_parts(value, texts, fields, depth + 1)


def refuses_response_format(status: int, body: str) -> bool:
    """True when an error reply is about the request's ``response_format`` itself.

    The status must be one a server gives a request shape it cannot take
    (400, 422, 500, 501) and the error must name the structured-output field:
    in a field locator (OpenAI's ``param``, FastAPI's ``loc``) or in the
    message, outside any quoted copy of the request. A validation error about
    ``max_tokens`` that echoes the whole request (``response_format``
    included) is not.

    >>> refuses_response_format(500, '{"error": "response_format json_schema not supported"}')
    True
    >>> refuses_response_format(422, '{"detail": [{"loc": ["body", "max_tokens"], "msg": "bad",'
    ...                         ' "input": {"response_format": {"type": "json_schema"}}}]}')
    False
    """
    if status not in (400, 422, 500, 501):
        return False
    texts: list[str] = []
    fields: list[str] = []
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        texts.append(body)
    else:
        _error_parts(data, texts, fields)
    for text in texts:
        for locator in _TEXT_LOCATOR.findall(text[:20000]):
            fields.extend(locator.strip("()[]").split(","))
    if any(_RF_FIELD.match(f.strip(" '\"")) for f in fields):
        return True
    return any(_RF_TEXT.search(_strip_echoes(t)) for t in texts)


@dataclass
class _Learned:
    ceiling: str                 # the strongest style not known to be refused
    since: int = 0               # requests sent below the requested style since the last probe
    probing: bool = False        # a request is trying the stronger style again
    logged: set[tuple[str, str]] = field(default_factory=set)


class _ServerStyles:
    """What each judge server (``base_url``) has refused, shared by every model in the process.

    A refusal lowers the server's ceiling by one style and is logged once per
    server and step. Every ``reprobe_after`` requests sent below the style a
    model asks for, one request tries that style again: accepted, the
    ceiling is lifted (a server upgraded in place, a load balancer that
    briefly routed to an older replica); refused, it stays down, silently.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_url: dict[str, _Learned] = {}

    def current(self, url: str, requested: str) -> str:
        learned = self._by_url.get(url)
        if learned is None or _RANK[requested] >= _RANK[learned.ceiling]:
            return requested
        return learned.ceiling

    def choose(self, url: str, requested: str, reprobe_after: int | None) -> tuple[str, bool]:
        """The style for the next request, and whether it is a probe."""
        learned = self._by_url.get(url)
        if learned is None or _RANK[requested] >= _RANK[learned.ceiling]:
            return requested, False
        with self._lock:
            if reprobe_after and learned.since >= reprobe_after and not learned.probing:
                learned.probing = True
                learned.since = 0
                return requested, True
            learned.since += 1
            return learned.ceiling, False

    def refused(self, url: str, style: str, detail: str, reprobe_after: int | None) -> None:
        weaker = _STYLES[_RANK[style] + 1]
        with self._lock:
            learned = self._by_url.setdefault(url, _Learned(ceiling=_STYLES[0]))
            learned.probing = False
            if _RANK[weaker] > _RANK[learned.ceiling]:
                learned.ceiling = weaker
                learned.since = 0
            first = (style, weaker) not in learned.logged
            learned.logged.add((style, weaker))
        if first:
            again = f"tried again after {reprobe_after} requests" if reprobe_after else "not retried"
            log.warning("judge server %s refused response_format %r (%s); sending %r to it from "
                        "now on (%s; OpenAIModel.reset_structured_output() forgets this)", url,
                        style, " ".join(detail.split())[:200], weaker, again)

    def probe_ended(self, url: str, style: str, accepted: bool) -> None:
        with self._lock:
            learned = self._by_url.get(url)
            if learned is None:
                return
            learned.probing = False
            if not accepted:
                return
            if _RANK[style] == 0:
                del self._by_url[url]
            elif _RANK[style] < _RANK[learned.ceiling]:
                learned.ceiling = style
        log.warning("judge server %s accepts response_format %r again", url, style)

    def reset(self, url: str) -> None:
        with self._lock:
            self._by_url.pop(url, None)


_SERVER_STYLES = _ServerStyles()


# --------------------------------------------------------------------------
# per-event-loop state: the concurrency limit and the aiohttp session
# --------------------------------------------------------------------------
class _LoopState:
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


_aiohttp: Any = None


def _load_aiohttp() -> Any:
    global _aiohttp
    if _aiohttp is None:
        import aiohttp

        _aiohttp = aiohttp
    return _aiohttp


def _too_big(cap: int, what: str) -> JudgeResponseError:
    err = JudgeResponseError(f"judge reply is larger than max_response_bytes={cap} ({what}); "
                             f"raise max_response_bytes if replies this large are expected")
    err.retryable = False  # the same request would get the same reply
    return err


# (id(schema), style) -> (schema, a deep copy of it, its response_format as JSON text);
# see OpenAIModel._response_format_json
_RF_JSON: "dict[tuple[int, str], tuple[Any, Any, str | None]]" = {}
_RF_JSON_SIZE = 256


class OpenAIModel(InferenceModel):
    """A judge behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    ``base_url`` ends in ``/v1`` as for the ``openai`` package. At most
    ``max_concurrency`` requests are in flight per model and event loop. Each
    attempt has ``timeout`` seconds; connection errors, timeouts, unreadable
    bodies, 408, 409, 429 and 5xx are retried up to ``max_retries`` times with
    exponential backoff and jitter (Retry-After honoured); other 4xx and 3xx
    (redirects are not followed) are not retried.

    ``structured_output`` says how a JSON schema is requested:
    ``"json_schema"`` (OpenAI, vLLM), ``"json_object"`` (llama.cpp's server:
    ``{"type": "json_object", "schema": ...}``) or ``"none"``. When a server
    refuses a request *because of* its response_format (status 400, 422, 500
    or 501 and an error that names the field: see
    ``refuses_response_format``), the request is re-sent at once in the next
    weaker form, without counting as a retry; the weaker form is remembered
    for that server (``base_url``, across models in the process) and logged
    once on the ``"rewardjudge"`` logger. Every ``structured_output_reprobe``
    requests one tries the stronger form again (None: never);
    ``reset_structured_output()`` forgets what was learned.

    ``grammar_field``: the body field through which the server takes a GBNF
    grammar (``"grammar"`` on llama-cpp-python's server); when set,
    ``chat(..., grammar=...)`` constrains a reply to it (the candidate judge
    sends its reply protocol this way). None (default): no grammar is sent.

    Transport options (see the module docstring): ``verify`` (True, False, a
    CA bundle path or an ``ssl.SSLContext``), ``headers`` (extra request
    headers), ``max_response_bytes`` (default 4 MiB), ``http_client`` (an
    ``httpx.AsyncClient`` used as given instead of aiohttp).

    >>> model = OpenAIModel("http://127.0.0.1:8000/v1", "judge")  # doctest: +SKIP
    >>> async with model: reply = await model.chat([{"role": "user", "content": "hi"}])  # doctest: +SKIP
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 max_concurrency: int = 64, timeout: float = 60.0, max_retries: int = 3,
                 retry_policy: RetryPolicy | None = None,
                 structured_output: StructuredStyle = "json_schema",
                 structured_output_reprobe: int | None = DEFAULT_REPROBE_AFTER,
                 http_client: Any = None, extra_body: dict[str, Any] | None = None,
                 headers: Mapping[str, str] | None = None, verify: Any = True,
                 max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
                 seed_rng: random.Random | None = None,
                 chat_template: Any = None, max_top_logprobs: int = 20,
                 logprobs_endpoint: LogprobsEndpoint = "auto", grammar_field: str | None = None):
        self.base_url = _check_base_url(base_url)
        if not model or not isinstance(model, str):
            raise ConfigError("model (the judge model's name on the server) is required")
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) \
                or max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be an int >= 1 (requests in flight), "
                              f"got {max_concurrency!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ConfigError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        if structured_output not in _RANK:
            raise ConfigError(f"structured_output must be json_schema, json_object or none, "
                              f"got {structured_output!r}")
        if structured_output_reprobe is not None and (
                isinstance(structured_output_reprobe, bool)
                or not isinstance(structured_output_reprobe, int) or structured_output_reprobe < 1):
            raise ConfigError(f"structured_output_reprobe must be an int >= 1 (requests) or None, "
                              f"got {structured_output_reprobe!r}")
        if isinstance(max_response_bytes, bool) or not isinstance(max_response_bytes, int) \
                or max_response_bytes < 1024:
            raise ConfigError(f"max_response_bytes must be an int >= 1024, got {max_response_bytes!r}")
        if extra_body is not None and not isinstance(extra_body, Mapping):
            raise ConfigError(f"extra_body must be a dict, got {type(extra_body).__name__}")
        if grammar_field is not None and (not isinstance(grammar_field, str) or not grammar_field):
            raise ConfigError(f"grammar_field must be a request body field name or None, "
                              f"got {grammar_field!r}")
        if headers is not None and not isinstance(headers, Mapping):
            raise ConfigError(f"headers must be a mapping of header names to values, "
                              f"got {type(headers).__name__}")
        self.model = model
        self.name = model
        from_env = api_key is None
        self.api_key = os.environ.get("OPENAI_API_KEY") if from_env else api_key
        self._headers: dict[str, str] = {"Content-Type": "application/json",
                                         "Accept": "application/json"}
        if self.api_key:
            _check_header("api_key (from OPENAI_API_KEY)" if from_env else "api_key",
                          "Authorization", self.api_key)
            self._headers["Authorization"] = f"Bearer {self.api_key}"
        for name, value in (headers or {}).items():
            _check_header(f"headers[{name!r}]", name, value)
            self._headers[name] = value
        self._ssl = _ssl_option(verify)
        self.verify = verify
        self.max_response_bytes = max_response_bytes
        self.max_concurrency = max_concurrency
        self.timeout = timeout
        self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries)
        self._structured_output: str = structured_output
        self.structured_output_reprobe = structured_output_reprobe
        self.extra_body = dict(extra_body or {})
        self.grammar_field = grammar_field
        self._http_client = http_client
        self._rng = seed_rng or random.Random()
        self._states: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState]" = \
            weakref.WeakKeyDictionary()
        self._last_state: Any = None
        self._init_logprobs(chat_template, max_top_logprobs, logprobs_endpoint)

    def __repr__(self) -> str:
        return f"OpenAIModel({self.base_url!r}, {self.model!r})"

    def __getstate__(self) -> dict[str, Any]:
        # a copy for another process (Ray, multiprocessing): settings only; sessions and
        # limits belong to this process's loops, a CA bundle's context is rebuilt from its path
        state = self.__dict__.copy()
        state["_states"] = None
        state["_last_state"] = None
        if not isinstance(self.verify, ssl.SSLContext):
            state["_ssl"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._states = weakref.WeakKeyDictionary()
        self._last_state = None
        if self._ssl is None:
            self._ssl = _ssl_option(self.verify)

    # -- structured output ----------------------------------------------------
    @property
    def structured_output(self) -> str:
        """The form the next schema request takes: the one asked for, or a weaker one this
        server (``base_url``) has refused it for."""
        return _SERVER_STYLES.current(self.base_url, self._structured_output)

    @structured_output.setter
    def structured_output(self, style: str) -> None:
        if style not in _RANK:
            raise ConfigError(f"structured_output must be json_schema, json_object or none, "
                              f"got {style!r}")
        self._structured_output = style

    def reset_structured_output(self) -> None:
        """Forget which response_format forms this model's server refused (for every model
        on the same ``base_url``): the next request uses ``structured_output`` as given."""
        _SERVER_STYLES.reset(self.base_url)

    def _response_format(self, schema: dict[str, Any], style: str) -> dict[str, Any] | None:
        if style == "json_schema":
            return {"type": "json_schema",
                    "json_schema": {"name": str(schema.get("title") or "reply"), "schema": schema,
                                    "strict": True}}
        if style == "json_object":
            return {"type": "json_object", "schema": schema}
        return None

    def _response_format_json(self, schema: dict[str, Any], style: str) -> str | None:
        """``json.dumps(self._response_format(schema, style))``, remembered: a
        grader sends one schema with every request, and encoding it costs half
        the body. An entry is used only while the schema is the same object,
        equal to the copy taken when it was encoded (a schema changed in place
        is encoded again)."""
        key = (id(schema), style)
        hit = _RF_JSON.get(key)
        if hit is not None and hit[0] is schema and hit[1] == schema:
            return hit[2]
        rf = self._response_format(schema, style)
        text = None if rf is None else json.dumps(rf)
        if len(_RF_JSON) >= _RF_JSON_SIZE:
            _RF_JSON.clear()
        _RF_JSON[key] = (schema, copy.deepcopy(schema), text)
        return text

    @property
    def accepts_grammar(self) -> bool:
        """True when ``chat(..., grammar=...)`` sends a GBNF grammar (``grammar_field`` is set:
        ``"grammar"`` for llama-cpp-python's server, which ``spawn_judge`` sets)."""
        return self.grammar_field is not None

    # -- transport ------------------------------------------------------------
    def _loop_state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        last = self._last_state   # (loop, state) of the previous call, both weakly held
        if last is not None and last[0]() is loop:
            state = last[1]()
            if state is not None:
                return state
        try:
            state = self._states[loop]
        except KeyError:
            # a model may serve several event loops over its life (asyncio.run per call,
            # a trainer's background loop): limits and connections are per loop
            state = self._states[loop] = _LoopState(self.max_concurrency)
        self._last_state = (weakref.ref(loop), weakref.ref(state))
        return state

    async def _session(self, state: _LoopState) -> Any:
        session = state.session
        if session is None or session.closed:
            aiohttp = _load_aiohttp()
            from aiohttp.helpers import get_env_proxy_for_url

            # The proxy variables are read here, once per session, with aiohttp's own
            # reading of them (the one trust_env=True uses). trust_env=True itself would
            # redo it on every request, in two thread-pool hops (proxy lookup and a
            # ~/.netrc read) that cost more CPU than the rest of the request, and a netrc
            # entry for the judge's host beside our Authorization header raises ValueError.
            try:
                state.proxy, state.proxy_auth = get_env_proxy_for_url(
                    self._url(state, "/chat/completions"))
            except LookupError:  # no proxy variable for this scheme, or NO_PROXY matches
                state.proxy = state.proxy_auth = None
            connector = aiohttp.TCPConnector(limit=self.max_concurrency, ssl=self._ssl,
                                             keepalive_timeout=_KEEPALIVE_S, ttl_dns_cache=300)
            session = aiohttp.ClientSession(
                connector=connector, headers=self._headers,
                timeout=aiohttp.ClientTimeout(total=self.timeout),
                cookie_jar=aiohttp.DummyCookieJar())
            keeper = _close_when_loop_ends(session)
            await keeper.__anext__()
            state.session, state.keeper = session, keeper
        return session

    def _url(self, state: _LoopState, path: str) -> Any:
        url = state.urls.get(path)
        if url is None:
            from yarl import URL

            url = state.urls[path] = URL(self.base_url + path)
        return url

    async def _post(self, state: _LoopState, path: str, body: bytes,
                    attempt: int = 1) -> tuple[int, Any, bytes]:
        """POST ``body``; ``(status, headers, body)`` or a retryable JudgeError."""
        if self._http_client is not None:
            return await self._post_httpx(path, body)
        aiohttp = _aiohttp or _load_aiohttp()
        session = state.session
        if session is None or session.closed:
            session = await self._session(state)
        try:
            async with session.post(self._url(state, path), data=body, allow_redirects=False,
                                    proxy=state.proxy, proxy_auth=state.proxy_auth) as r:
                status, headers = r.status, r.headers
                length = r.content_length
                if length is not None and length <= self.max_response_bytes \
                        and "Content-Encoding" not in headers:
                    # _read's first case, without its coroutine: a framed body within the cap
                    return status, headers, await r.read()
                return status, headers, await self._read(r, status == 200)
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

    async def _read(self, r: Any, whole: bool) -> bytes:
        """The reply body, at most ``max_response_bytes`` of it: beyond that a
        ``JudgeResponseError`` (``whole``) or the body cut there (error replies)."""
        cap = self.max_response_bytes
        length = r.content_length
        if length is not None and "Content-Encoding" not in r.headers:
            if length <= cap:
                return await r.read()  # framed by Content-Length: never more than announced
            if whole:
                r.close()
                raise _too_big(cap, f"Content-Length {length}")
        buf = bytearray()
        content = r.content
        while True:
            chunk = await content.readany()
            if not chunk:
                return bytes(buf)
            buf += chunk
            if len(buf) > cap:
                r.close()  # the rest is never read; the connection is not reused
                if whole:
                    raise _too_big(cap, f"more than {len(buf)} bytes read")
                return bytes(buf[:cap])

    async def _post_httpx(self, path: str, body: bytes) -> tuple[int, Any, bytes]:
        import httpx

        cap = self.max_response_bytes
        try:
            async with self._http_client.stream(
                    "POST", self.base_url + path, content=body, headers=self._headers,
                    timeout=self.timeout, follow_redirects=False) as r:
                whole = r.status_code == 200
                length = r.headers.get("Content-Length", "")
                if whole and length.isdigit() and int(length) > cap:
                    raise _too_big(cap, f"Content-Length {length}")
                buf = bytearray()
                async for chunk in r.aiter_bytes():
                    buf += chunk
                    if len(buf) > cap:
                        if whole:
                            raise _too_big(cap, f"more than {len(buf)} bytes read")
                        del buf[cap:]
                        break
                return r.status_code, r.headers, bytes(buf)
        except httpx.TimeoutException as exc:
            raise JudgeTimeoutError(f"judge timed out after {self.timeout}s: {exc!r}") from exc
        except httpx.RequestError as exc:
            raise JudgeConnectionError(f"judge connection failed: {exc!r}") from exc

    def _http_error(self, status: int, headers: Any, text: str) -> JudgeHTTPError:
        retry_after = parse_retry_after(headers.get("Retry-After"))
        if status == 404 and not self.base_url.endswith("/v1"):
            # the commonest set-up mistake: the server's root instead of its /v1 API
            text = f"{text} (hint: base_url usually ends in /v1, got {self.base_url!r})"
        elif 300 <= status < 400:
            text = (f"{text} (the judge server redirects to {headers.get('Location')!r}; a POST "
                    f"is not followed: set base_url to where the API is)")
        return JudgeHTTPError(status, text, retry_after=retry_after)

    async def _attempt(self, state: _LoopState, body: bytes, style: str | None,
                       attempt: int) -> Completion:
        start = time.perf_counter()
        status, headers, raw = await self._post(state, "/chat/completions", body, attempt)
        return self._completion(status, headers, raw, style, time.perf_counter() - start)

    def _completion(self, status: int, headers: Any, raw: bytes, style: str | None,
                    latency: float) -> Completion:
        """The reply of one attempt, or the error it is."""
        if status != 200:
            text = raw.decode("utf-8", "replace")
            if style is not None and style != "none" and refuses_response_format(status, text):
                raise _SchemaRejected(text)
            raise self._http_error(status, headers, text)
        return _parse_chat_body(raw, latency, structured=style not in (None, "none"))

    def _payload(self, messages: list, fields: dict[str, Any], grammar: str | None) -> dict[str, Any]:
        """The request body of ``chat`` (without ``response_format``)."""
        out: dict[str, Any] = {"model": self.model, "messages": messages, **fields, **self.extra_body}
        if grammar is not None:
            out[self.grammar_field] = grammar
        return out

    async def _attempts(self, state: _LoopState, body: bytes,
                        style: str | None) -> tuple[Completion, int]:
        """``retry_async`` over ``_attempt``, the first attempt made here directly:
        most requests need no retry, and hundreds may be in flight, each holding
        its chain of coroutines (no ``_attempt`` coroutine, no closure cells)."""
        try:
            start = time.perf_counter()
            status, headers, raw = await self._post(state, "/chat/completions", body, 1)
            return self._completion(status, headers, raw, style, time.perf_counter() - start), 1
        except JudgeError as exc:
            first = exc
        return await self._retry(first, state, body, style)

    async def _retry(self, first: JudgeError, state: _LoopState, body: bytes,
                     style: str | None) -> tuple[Completion, int]:
        async def attempt(n: int) -> Completion:
            if n == 1:   # retry_async sees the first failure as if it had made the attempt
                raise first
            return await self._attempt(state, body, style, n)

        return await retry_async(attempt, self.retry_policy, self._rng)

    # -- API --------------------------------------------------------------
    async def chat(self, messages: Sequence[Message], params: GenerationParams | None = None, *,
                   json_schema: dict[str, Any] | None = None, grammar: str | None = None) -> Completion:
        """The judge's reply. ``grammar``: a GBNF grammar the reply must follow, sent in
        the ``grammar_field`` of the body (only where ``accepts_grammar``)."""
        state = self._loop_state()
        messages = list(messages)
        fields = (params or GenerationParams()).as_dict()
        if grammar is not None and self.grammar_field is None:
            raise ConfigError(f"{self!r} sends no grammar: set grammar_field (the body field "
                              f"its server reads a GBNF grammar from, e.g. 'grammar')")

        # the body is encoded before the request and the payload not kept while it is
        # in flight (the garbage collector walks what hundreds of requests hold)
        async with state.sem:
            if json_schema is None:
                body = json.dumps(self._payload(messages, fields, grammar)).encode()
                completion, attempts = await self._attempts(state, body, None)
                completion.attempts = attempts
                return completion
            refused = -1  # the rank of the weakest style refused during this call
            while True:
                style, probe = _SERVER_STYLES.choose(self.base_url, self._structured_output,
                                                     self.structured_output_reprobe)
                if _RANK[style] <= refused:
                    style, probe = _STYLES[refused + 1], False
                data = self._payload(messages, fields, grammar)
                data.pop("response_format", None)   # the style chosen here replaces one in extra_body
                rf = self._response_format_json(json_schema, style)
                text = json.dumps(data)
                body = (text if rf is None else f'{text[:-1]}, "response_format": {rf}}}').encode()
                data = text = None
                try:
                    completion, attempts = await self._attempts(state, body, style)
                except _SchemaRejected as exc:
                    # a request-shape problem, not an outage: resend now, weaker, no retry spent
                    _SERVER_STYLES.refused(self.base_url, style, str(exc),
                                           self.structured_output_reprobe)
                    refused = _RANK[style]
                    continue
                except BaseException:
                    if probe:
                        _SERVER_STYLES.probe_ended(self.base_url, style, accepted=False)
                    raise
                if probe:
                    _SERVER_STYLES.probe_ended(self.base_url, style, accepted=True)
                completion.attempts = attempts
                return completion

    # -- grade distributions (logprobs) ----------------------------------------
    # Constructor arguments: ``chat_template`` (a Jinja source string, a
    # ``ChatTemplate`` or any ``f(messages) -> prompt``; needed only for the
    # completions endpoint), ``max_top_logprobs`` (the server's top-k cap:
    # OpenAI allows 20) and ``logprobs_endpoint`` ("auto": chat, or
    # completions when the messages end with an assistant prefix to continue;
    # "chat"; "completions").
    def _init_logprobs(self, chat_template: Any, max_top_logprobs: int, endpoint: str) -> None:
        if endpoint not in ("auto", "chat", "completions"):
            raise ConfigError(f"logprobs_endpoint must be auto, chat or completions, got {endpoint!r}")
        if isinstance(max_top_logprobs, bool) or not isinstance(max_top_logprobs, int) \
                or max_top_logprobs < 1:
            raise ConfigError(f"max_top_logprobs must be an int >= 1, got {max_top_logprobs!r}")
        if isinstance(chat_template, str):
            from ._chat_template import ChatTemplate

            chat_template = ChatTemplate(chat_template)
        elif chat_template is not None and not callable(chat_template):
            raise ConfigError("chat_template must be a Jinja source string or a callable "
                              "f(messages) -> prompt")
        self.chat_template = chat_template
        self.max_top_logprobs = max_top_logprobs
        self.logprobs_endpoint = endpoint

    @property
    def continues_prefix(self) -> bool:  # type: ignore[override]
        """A trailing assistant prefix needs the completions endpoint and a chat template."""
        return self.logprobs_endpoint != "chat" and self.chat_template is not None

    async def grade_distribution(self, messages: Sequence[Message], choices: Sequence[str],
                                 params: GenerationParams | None = None) -> TokenDistribution:
        """Probabilities of ``choices`` as the next token, from the server's top logprobs.

        One request of one token with ``max_top_logprobs`` alternatives; no
        ``response_format`` (a constrained step's probabilities are the
        grammar's, not the judge's), temperature 1 and top_p 1. A choice
        outside the returned top-k gets 0.0 (``unseen_max`` bounds it).
        See ``InferenceModel.grade_distribution`` for the contract.
        """
        choices = check_choices(choices)
        msgs = [dict(m) for m in messages]
        continues = bool(msgs) and msgs[-1].get("role") == "assistant"
        endpoint = self.logprobs_endpoint
        if endpoint == "auto":
            endpoint = "completions" if continues else "chat"
        if endpoint == "chat" and continues:
            raise ConfigError("a chat endpoint does not continue a trailing assistant message "
                              "(llama.cpp starts a new turn): use logprobs_endpoint='auto' or "
                              "'completions' with a chat_template")
        k = self.max_top_logprobs
        payload: dict[str, Any] = {"model": self.model, **self.extra_body, "max_tokens": 1,
                                   "temperature": 1.0, "top_p": 1.0}
        payload.pop("response_format", None)
        if params is not None and params.seed is not None:
            payload["seed"] = params.seed
        if endpoint == "chat":
            path = "/chat/completions"
            payload.update(messages=msgs, logprobs=True, top_logprobs=k)
        else:
            if self.chat_template is None:
                raise GradeDistributionUnsupported(
                    f"{self!r}: reading probabilities after an assistant prefix needs the "
                    f"completions endpoint and the model's chat template: pass chat_template= "
                    f"(spawn_judge sets it from the GGUF)")
            path = "/completions"
            payload.update(prompt=self.chat_template(msgs), logprobs=k)
        body = json.dumps(payload).encode()
        state = self._loop_state()

        async def attempt(n: int) -> TokenDistribution:
            start = time.perf_counter()
            status, headers, raw = await self._post(state, path, body, n)
            latency = time.perf_counter() - start
            if status != 200:
                raise self._http_error(status, headers, raw.decode("utf-8", "replace"))
            return _parse_distribution(raw, endpoint, choices, latency)

        async with state.sem:
            dist, attempts = await retry_async(attempt, self.retry_policy, self._rng)
        dist.attempts = attempts
        return dist

    async def aclose(self) -> None:
        """Close the HTTP session of the running loop (and ask other running loops to close
        theirs). Safe to call twice; the model opens a new session if used again. Sessions
        of loops that are not running close when their loop ends."""
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


def _parse_distribution(raw: bytes, endpoint: str, choices: list[str],
                        latency: float) -> TokenDistribution:
    """Read the first generated position's top logprobs from a chat or completions body."""
    text = raw.decode("utf-8", "replace")
    try:
        data = json.loads(text)
        choice = data["choices"][0]
    except (ValueError, KeyError, IndexError, TypeError, RecursionError) as exc:
        raise JudgeResponseError(f"unreadable judge body ({type(exc).__name__}: {exc})",
                                 body=text[:2000]) from None
    lp = choice.get("logprobs") if isinstance(choice, dict) else None
    pairs: list[tuple[str, float]] = []
    try:
        if endpoint == "chat":
            first = lp["content"][0]
            for alt in first.get("top_logprobs") or []:
                pairs.append((str(alt["token"]), float(alt["logprob"])))
        else:
            first = lp["top_logprobs"][0]
            pairs = [(str(t), float(v)) for t, v in first.items()]
    except (KeyError, IndexError, TypeError, ValueError):
        pairs = []
    if not pairs:
        raise GradeDistributionUnsupported(
            f"the judge server returned no top logprobs on {endpoint} (does it support "
            f"logprobs?): {text[:300]}")
    usage_in = data.get("usage") or {}
    usage = {k: int(usage_in[k]) for k in ("prompt_tokens", "completion_tokens", "total_tokens")
             if isinstance(usage_in.get(k), (int, float))}
    import math

    seen = [math.exp(v) for _, v in pairs if math.isfinite(v)]
    return TokenDistribution(match_choices(pairs, choices), top_k=len(pairs),
                             unseen_max=min(seen) if seen else 1.0, usage=usage,
                             latency_s=latency, raw=data)


def _parse_chat_body(raw: bytes, latency: float, *, structured: bool) -> Completion:
    text = raw.decode("utf-8", "replace")
    try:
        data = json.loads(text)
        choice = data["choices"][0]
        message = choice["message"]
        content = message.get("content")
    except (ValueError, KeyError, IndexError, TypeError, RecursionError) as exc:
        raise JudgeResponseError(f"unreadable judge body ({type(exc).__name__}: {exc})",
                                 body=text[:2000]) from None
    if not isinstance(content, str):
        raise JudgeResponseError("judge reply has no text content", body=text[:2000])
    usage_in = data.get("usage") or {}
    usage = {k: int(usage_in[k]) for k in ("prompt_tokens", "completion_tokens", "total_tokens")
             if isinstance(usage_in.get(k), (int, float))}
    tokens: list[str] = []
    top: list[dict[str, float]] = []
    lp = choice.get("logprobs")
    if isinstance(lp, dict) and isinstance(lp.get("content"), list):
        for item in lp["content"]:
            if not isinstance(item, dict):
                continue
            tokens.append(str(item.get("token", "")))
            alts = {}
            for alt in item.get("top_logprobs") or []:
                if isinstance(alt, dict) and "token" in alt and "logprob" in alt:
                    alts[str(alt["token"])] = float(alt["logprob"])
            if not alts and "logprob" in item:
                alts[str(item.get("token", ""))] = float(item["logprob"])
            top.append(alts)
    return Completion(text=content, usage=usage, latency_s=latency,
                      finish_reason=choice.get("finish_reason"), top_logprobs=top, tokens=tokens,
                      structured=structured, raw=data)
