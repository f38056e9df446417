"""OpenAIModel: an async client for OpenAI-compatible chat-completions servers.

Transport, chosen with numbers (NOTES.md, measured on a 2-core machine at
concurrency 64 against a 100 ms fake server): httpx's default pool spends
~14 ms of CPU per request and reaches ~0.10 of the concurrency/latency limit;
aiohttp reaches ~0.9 at ~0.7 ms. So the default transport is aiohttp. An
``httpx.AsyncClient`` may be passed instead (proxies, custom TLS,
``httpx.MockTransport`` in tests); it is used as given and not closed.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import time
from typing import Any, Literal, Sequence

from ..errors import (ConfigError, JudgeConnectionError, JudgeError, JudgeHTTPError,
                      JudgeResponseError, JudgeTimeoutError)
from .base import Completion, GenerationParams, InferenceModel, Message
from .retry import RetryPolicy, retry_async

StructuredStyle = Literal["json_schema", "json_object", "none"]
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

    >>> model = OpenAIModel("http://127.0.0.1:8000/v1", "judge")  # doctest: +SKIP
    >>> async with model: reply = await model.chat([{"role": "user", "content": "hi"}])  # doctest: +SKIP
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 max_concurrency: int = 64, timeout: float = 60.0, max_retries: int = 3,
                 retry_policy: RetryPolicy | None = None,
                 structured_output: StructuredStyle = "json_schema",
                 http_client: Any = None, extra_body: dict[str, Any] | None = None,
                 seed_rng: random.Random | None = None):
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must be an http(s) URL ending in /v1, got {base_url!r}")
        if not model:
            raise ConfigError("model (the judge model's name on the server) is required")
        if max_concurrency < 1:
            raise ConfigError("max_concurrency must be >= 1")
        if timeout <= 0:
            raise ConfigError("timeout must be > 0")
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
        self._session = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sem: asyncio.Semaphore | None = None
        self._headers = {"Content-Type": "application/json"}
        if self.api_key:
            self._headers["Authorization"] = f"Bearer {self.api_key}"

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

    def _aiohttp_session(self):
        if self._session is None or self._session.closed:
            import aiohttp

            connector = aiohttp.TCPConnector(limit=self.max_concurrency, ttl_dns_cache=300,
                                             keepalive_timeout=30)
            self._session = aiohttp.ClientSession(connector=connector, headers=self._headers,
                                                  json_serialize=json.dumps)
        return self._session

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

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            try:
                await session.close()
            except RuntimeError:
                pass  # its loop is gone; nothing left to release


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
