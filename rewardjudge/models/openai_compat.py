"""OpenAIModel: an async client for OpenAI-compatible chat-completions servers.

Transport, chosen with numbers (NOTES.md and ``bench/bench_throughput.py``,
measured on a 2-core machine against a 100 ms fake server): httpx's default
pool spends ~14 ms of CPU per request and reaches ~0.10 of the
concurrency/latency limit at concurrency 64; aiohttp ~0.09 ms per request;
the lean keep-alive HTTP/1.1 client in ``_http1.py`` ~0.02 ms, which keeps a
grader (render, request, parse, Grade) near the limit at high concurrency.
So ``transport="auto"`` (the default) uses the lean client for ``http://``
judge servers and aiohttp for ``https://`` (TLS, remote APIs);
``transport="aiohttp"`` forces aiohttp. An ``httpx.AsyncClient`` may be
passed instead (proxies, custom TLS, ``httpx.MockTransport`` in tests); it is
used as given and not closed.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import time
from typing import Any, Literal, Sequence

from ..errors import (ConfigError, JudgeConnectionError, JudgeHTTPError,
                      JudgeResponseError, JudgeTimeoutError)
from .base import Completion, GenerationParams, InferenceModel, Message
from .base import (GradeDistributionUnsupported, TokenDistribution, check_choices,
                   match_choices)
from ._http1 import HTTP1Pool
from .retry import RetryPolicy, retry_async

StructuredStyle = Literal["json_schema", "json_object", "none"]
Transport = Literal["auto", "http1", "aiohttp"]
LogprobsEndpoint = Literal["auto", "chat", "completions"]
_STYLE_FALLBACK: dict[str, str] = {"json_schema": "json_object", "json_object": "none"}
_SCHEMA_WORDS = ("response_format", "json_schema", "schema", "grammar")


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


class _SchemaRejected(Exception):
    """The server refused the request's response_format, not the request."""


class OpenAIModel(InferenceModel):
    """A judge behind an OpenAI-compatible ``/v1/chat/completions`` endpoint.

    ``base_url`` ends in ``/v1`` as for the ``openai`` package. At most
    ``max_concurrency`` requests are in flight per model. Each attempt has
    ``timeout`` seconds; connection errors, timeouts, unreadable bodies, 408,
    409, 429 and 5xx are retried up to ``max_retries`` times with exponential
    backoff and jitter (Retry-After honoured); other 4xx are not retried.

    ``structured_output`` says how a JSON schema is requested:
    ``"json_schema"`` (OpenAI, vLLM), ``"json_object"`` (llama.cpp's server:
    ``{"type": "json_object", "schema": ...}``) or ``"none"``. When a server
    rejects the request *because of* its response_format (its error body
    names it), the model falls back to the next style and resends at once:
    that is a request-shape problem, not an outage, and costs no retry.

    ``transport``: ``"auto"`` (default: a lean keep-alive HTTP/1.1 client for
    ``http://`` servers, aiohttp for ``https://``), ``"http1"`` or
    ``"aiohttp"``; ignored when ``http_client`` (an ``httpx.AsyncClient``) is
    given.

    >>> model = OpenAIModel("http://127.0.0.1:8000/v1", "judge")  # doctest: +SKIP
    >>> async with model: reply = await model.chat([{"role": "user", "content": "hi"}])  # doctest: +SKIP
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 max_concurrency: int = 64, timeout: float = 60.0, max_retries: int = 3,
                 retry_policy: RetryPolicy | None = None,
                 structured_output: StructuredStyle = "json_schema",
                 http_client: Any = None, extra_body: dict[str, Any] | None = None,
                 seed_rng: random.Random | None = None, transport: Transport = "auto",
                 chat_template: Any = None, max_top_logprobs: int = 20,
                 logprobs_endpoint: LogprobsEndpoint = "auto"):
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must be an http(s) URL ending in /v1, got {base_url!r}")
        if not model:
            raise ConfigError("model (the judge model's name on the server) is required")
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) \
                or max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be an int >= 1 (requests in flight), "
                              f"got {max_concurrency!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ConfigError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        if structured_output not in ("json_schema", "json_object", "none"):
            raise ConfigError(f"structured_output must be json_schema, json_object or none, "
                              f"got {structured_output!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.name = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.max_concurrency = max_concurrency
        self.timeout = timeout
        self.retry_policy = retry_policy or RetryPolicy(max_retries=max_retries)
        self.structured_output: str = structured_output
        self.extra_body = dict(extra_body or {})
        self._http_client = http_client
        self._rng = seed_rng or random.Random()
        if transport not in ("auto", "http1", "aiohttp"):
            raise ConfigError(f"transport must be 'auto', 'http1' or 'aiohttp', got {transport!r}")
        if transport == "http1" and not self.base_url.startswith("http://"):
            raise ConfigError("transport='http1' speaks plain http:// only; use 'aiohttp' or "
                              "'auto' for https:// URLs")
        self.transport = ("http1" if self.base_url.startswith("http://") else "aiohttp"
                          ) if transport == "auto" else transport
        self._session = None
        self._pool: HTTP1Pool | None = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sem: asyncio.Semaphore | None = None
        self._headers = {"Content-Type": "application/json"}
        if self.api_key:
            self._headers["Authorization"] = f"Bearer {self.api_key}"
        self._init_logprobs(chat_template, max_top_logprobs, logprobs_endpoint)

    def __repr__(self) -> str:
        return f"OpenAIModel({self.base_url!r}, {self.model!r})"

    # -- plumbing ---------------------------------------------------------
    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # A model may be used from several event loops over its life (a
            # notebook, a trainer's background loop): state is per loop.
            self._loop = loop
            self._sem = asyncio.Semaphore(self.max_concurrency)
            self._session = None
            if self._pool is not None:
                self._pool.close()  # its connections belong to the old loop
                self._pool = None

    def _aiohttp_session(self):
        if self._session is None or self._session.closed:
            import aiohttp

            connector = aiohttp.TCPConnector(limit=self.max_concurrency, ttl_dns_cache=300,
                                             keepalive_timeout=30)
            self._session = aiohttp.ClientSession(connector=connector, headers=self._headers,
                                                  json_serialize=json.dumps)
        return self._session

    def _http1_pool(self) -> HTTP1Pool:
        loop = asyncio.get_running_loop()
        if self._pool is not None and self._pool_loop is not loop:
            self._pool.close()  # made on another event loop: its connections are unusable here
            self._pool = None
        if self._pool is None:
            from urllib.parse import urlsplit

            self._pool_loop = loop

            parts = urlsplit(self.base_url)
            self._path_prefix = (parts.path or "").rstrip("/")
            headers = {**self._headers, "Accept": "application/json", "User-Agent": "rewardjudge"}
            self._pool = HTTP1Pool(parts.hostname or "127.0.0.1", parts.port or 80,
                                   limit=self.max_concurrency, headers=headers)
        return self._pool

    async def _post_http1(self, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        pool = self._http1_pool()
        try:
            return await pool.post((self._path_prefix + path).encode("latin-1"), body, self.timeout)
        except asyncio.TimeoutError as exc:
            raise JudgeTimeoutError(f"judge timed out after {self.timeout}s") from exc
        except OSError as exc:  # ConnectionError and the protocol errors derive from it
            raise JudgeConnectionError(f"judge connection failed: {exc!r}") from exc

    async def _post(self, path: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        url = self.base_url + path
        if self._http_client is not None:
            import httpx

            try:
                r = await self._http_client.post(url, content=body, headers=self._headers,
                                                 timeout=self.timeout)
                return r.status_code, dict(r.headers), r.content
            except httpx.TimeoutException as exc:
                raise JudgeTimeoutError(f"judge timed out after {self.timeout}s: {exc!r}") from exc
            except httpx.TransportError as exc:
                raise JudgeConnectionError(f"judge connection failed: {exc!r}") from exc
        if self.transport == "http1":
            return await self._post_http1(path, body)
        import aiohttp

        session = self._aiohttp_session()
        try:
            async with session.post(url, data=body,
                                    timeout=aiohttp.ClientTimeout(total=self.timeout)) as r:
                return r.status, dict(r.headers), await r.read()
        except asyncio.TimeoutError as exc:
            raise JudgeTimeoutError(f"judge timed out after {self.timeout}s") from exc
        except aiohttp.ClientError as exc:
            raise JudgeConnectionError(f"judge connection failed: {exc!r}") from exc
        except OSError as exc:
            raise JudgeConnectionError(f"judge connection failed: {exc!r}") from exc

    def _response_format(self, schema: dict[str, Any], style: str) -> dict[str, Any] | None:
        if style == "json_schema":
            return {"type": "json_schema",
                    "json_schema": {"name": str(schema.get("title") or "reply"), "schema": schema,
                                    "strict": True}}
        if style == "json_object":
            return {"type": "json_object", "schema": schema}
        return None

    async def _attempt(self, payload: dict[str, Any], style: str | None) -> Completion:
        body = json.dumps(payload).encode()
        start = time.perf_counter()
        status, headers, raw = await self._post("/chat/completions", body)
        latency = time.perf_counter() - start
        if status != 200:
            text = raw.decode("utf-8", "replace")
            if style not in (None, "none") and status in (400, 422, 500, 501) and any(
                    w in text.lower() for w in _SCHEMA_WORDS):
                raise _SchemaRejected(text)
            retry_after = parse_retry_after(headers.get("Retry-After") or headers.get("retry-after"))
            if status == 404 and not self.base_url.endswith("/v1"):
                # the commonest set-up mistake: the server's root instead of its /v1 API
                text = f"{text} (hint: base_url usually ends in /v1, got {self.base_url!r})"
            raise JudgeHTTPError(status, text, retry_after=retry_after)
        return _parse_chat_body(raw, latency, structured=style not in (None, "none"))

    # -- API --------------------------------------------------------------
    async def chat(self, messages: Sequence[Message], params: GenerationParams | None = None, *,
                   json_schema: dict[str, Any] | None = None) -> Completion:
        self._bind_loop()
        payload: dict[str, Any] = {"model": self.model, "messages": list(messages),
                                   **(params or GenerationParams()).as_dict(), **self.extra_body}
        assert self._sem is not None
        async with self._sem:
            while True:
                style = self.structured_output if json_schema is not None else None
                if style is not None:
                    rf = self._response_format(json_schema, style)
                    if rf is None:
                        payload.pop("response_format", None)
                    else:
                        payload["response_format"] = rf

                async def attempt(_n: int) -> Completion:
                    return await self._attempt(payload, style)

                try:
                    completion, attempts = await retry_async(attempt, self.retry_policy, self._rng)
                except _SchemaRejected:
                    self.structured_output = _STYLE_FALLBACK.get(style or "none", "none")
                    continue
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
            from .chat_template import ChatTemplate

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
        self._bind_loop()
        assert self._sem is not None

        async def attempt(_n: int) -> TokenDistribution:
            start = time.perf_counter()
            status, headers, raw = await self._post(path, body)
            latency = time.perf_counter() - start
            if status != 200:
                retry_after = parse_retry_after(headers.get("Retry-After") or headers.get("retry-after"))
                raise JudgeHTTPError(status, raw.decode("utf-8", "replace"), retry_after=retry_after)
            return _parse_distribution(raw, endpoint, choices, latency)

        async with self._sem:
            dist, attempts = await retry_async(attempt, self.retry_policy, self._rng)
        dist.attempts = attempts
        return dist

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()
        session, self._session = self._session, None
        if session is not None and not session.closed:
            try:
                await session.close()
            except RuntimeError:
                pass  # its loop is gone; nothing left to release


def _parse_distribution(raw: bytes, endpoint: str, choices: list[str],
                        latency: float) -> TokenDistribution:
    """Read the first generated position's top logprobs from a chat or completions body."""
    text = raw.decode("utf-8", "replace")
    try:
        data = json.loads(text)
        choice = data["choices"][0]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
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
    except (ValueError, KeyError, IndexError, TypeError) as exc:
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
