"""OpenAIModel: an async client for OpenAI-compatible chat-completions servers (docs/judges.md).

The transport and its one retry loop are ``_http.py``; the structured-output form a server takes
is learned per model (``_response_format.py``)."""

from __future__ import annotations

import math
from functools import partial
from typing import Any, Callable, Literal, Mapping, Optional, Sequence, Union

from pydantic import Field, StrictInt, StrictStr

from .._option_types import Number

from ..errors import ConfigError, JudgeError, JudgeHTTPError, JudgeResponseError
from ._base import (Completion, GenerationParams, GradeDistributionUnsupported, InferenceModel, Message,
                    TokenDistribution, check_choices, match_choices)
from ._chat_template import ChatTemplate
from ._http import DEFAULT_MAX_RESPONSE_BYTES, HTTPTransport, Retries, json_body, json_value
from ._response_format import RANK, STYLES, SchemaRejected, StyleLearner, refuses_response_format
from ._response_format import response_format_json

StructuredStyle = Literal["json_schema", "json_object", "none"]
LogprobsEndpoint = Literal["auto", "chat", "completions"]
#: requests sent in a weaker structured-output form before the stronger one is tried again
DEFAULT_REPROBE_AFTER = 1000


class OpenAIModelOptions(Retries):
    """``OpenAIModel``'s options: the fields after ``base_url`` and ``model`` are its
    keyword options, checked here (the URL, headers and TLS in ``_http.py``)."""

    base_url: StrictStr = Field(description="must be an http(s) URL ending in /v1")
    model: StrictStr = Field(min_length=1,
                             description="(the judge model's name on the server) is required")
    api_key: Any = None            # checked by _http.request_headers (not echoed)
    max_concurrency: StrictInt = Field(64, ge=1, description="must be an int >= 1 (requests in flight)")
    timeout: Number = Field(60.0, gt=0, description="must be a number of seconds > 0")
    structured_output: StructuredStyle = Field("json_schema",
                                               description="must be json_schema, json_object or none")
    structured_output_reprobe: Optional[StrictInt] = Field(
        DEFAULT_REPROBE_AFTER, ge=1, description="must be an int >= 1 (requests) or None")
    http_client: Any = None
    extra_body: Optional[Mapping[Any, Any]] = Field(None, description="must be a dict")
    headers: Any = None            # checked by _http.request_headers (not echoed)
    verify: Any = True             # checked by _http.ssl_option
    max_response_bytes: StrictInt = Field(DEFAULT_MAX_RESPONSE_BYTES, ge=1024,
                                          description="must be an int >= 1024")
    chat_template: Optional[Union[StrictStr, Callable[..., Any]]] = Field(
        None, description="must be a Jinja source string or a callable f(messages) -> prompt")
    max_top_logprobs: StrictInt = Field(20, ge=1, description="must be an int >= 1")
    logprobs_endpoint: LogprobsEndpoint = Field("auto", description="must be auto, chat or completions")
    grammar_field: Optional[StrictStr] = Field(None, min_length=1,
                                               description="must be a request body field name or None")


class OpenAIModel(InferenceModel):
    """A judge behind an OpenAI-compatible ``/v1/chat/completions`` endpoint: retries, structured
    output and transport in docs/judges.md, logprobs in docs/probability.md (``chat_template``:
    Jinja source, ``ChatTemplate`` or ``f(messages) -> prompt``; ``logprobs_endpoint`` "auto":
    completions after an assistant prefix, else chat). ``options`` holds every argument.
    >>> model = OpenAIModel("http://127.0.0.1:8000/v1", "judge")  # doctest: +SKIP
    >>> async with model: reply = await model.chat([{"role": "user", "content": "hi"}])  # doctest: +SKIP
    """

    def __init__(self, base_url: str, model: str, **options: Any):
        opts = self.options = OpenAIModelOptions(base_url=base_url, model=model, **options)
        self._http = HTTPTransport(opts.base_url, opts.api_key, opts.headers, opts.verify, opts.timeout,
                                   opts.max_concurrency, opts.max_response_bytes, opts.http_client)
        self.base_url, self.api_key = self._http.base_url, self._http.api_key
        self.model = self.name = opts.model
        self.verify, self.timeout = opts.verify, opts.timeout
        self.max_concurrency, self.max_response_bytes = opts.max_concurrency, opts.max_response_bytes
        self.retry_policy = opts.policy()
        self._structured_output: str = opts.structured_output
        self.structured_output_reprobe = opts.structured_output_reprobe
        self._styles = StyleLearner(self.base_url)
        self.extra_body = dict(opts.extra_body or {})
        if self.extra_body.get("stream"):
            raise ConfigError("extra_body must not ask for a stream ('stream': true): a judge's reply is read whole")
        self.grammar_field = opts.grammar_field
        self.chat_template: Callable[[list[Message]], str] | None = (
            ChatTemplate(opts.chat_template) if isinstance(opts.chat_template, str) else opts.chat_template)
        self.max_top_logprobs = opts.max_top_logprobs
        self.logprobs_endpoint = opts.logprobs_endpoint

    def __repr__(self) -> str:
        return f"OpenAIModel({self.base_url!r}, {self.model!r})"

    @property
    def structured_output(self) -> str:
        """The form the next schema request takes: the one asked for, or a weaker one learned."""
        return self._styles.current(self._structured_output)

    @property
    def learned_styles(self) -> dict[str, str]:
        """``{base_url: the strongest form not known to be refused}`` once this model's
        server has refused a form; ``{}`` while nothing is learned."""
        ceiling = self._styles.ceiling
        return {} if ceiling == STYLES[0] else {self.base_url: ceiling}

    def reset_structured_output(self) -> None:
        """Forget which response_format forms this model's server refused."""
        self._styles.reset()

    @property
    def accepts_grammar(self) -> bool:
        """True when ``chat(..., grammar=...)`` sends a GBNF grammar (``grammar_field`` is set)."""
        return self.grammar_field is not None

    async def chat(self, messages: Sequence[Message], params: GenerationParams | None = None, *,
                   json_schema: dict[str, Any] | None = None, grammar: str | None = None) -> Completion:
        """The judge's reply. ``grammar``: a GBNF grammar the reply must follow, sent in
        the ``grammar_field`` of the body (only where ``accepts_grammar``). A request refused
        *because of* its ``json_schema`` form is re-sent at once in the next weaker form."""
        if grammar is not None and self.grammar_field is None:
            raise ConfigError(f"{self!r} sends no grammar: set grammar_field (the body field "
                              f"its server reads a GBNF grammar from, e.g. 'grammar')")
        data = {"model": self.model, "messages": list(messages),
                **(params or GenerationParams()).as_dict(), **self.extra_body}
        if grammar is not None:
            data[self.grammar_field] = grammar
        if json_schema is not None:
            data.pop("response_format", None)   # the style chosen per request replaces it
        # the body is encoded before the request and the payload not kept while it is
        # in flight (the garbage collector walks what hundreds of requests hold)
        encoded = json_body(data)
        del data
        refused = -1  # the rank of the weakest style refused during this call
        while True:   # every try in this one coroutine (see HTTPTransport.request)
            style, probe, body = self._styled(encoded, json_schema, refused)
            structured = style not in (None, "none")
            try:
                completion, attempts = await self._http.request(
                    "/chat/completions", body, partial(_parse_chat_body, structured=structured),
                    self.retry_policy, _schema_refusal if structured else None)
            except SchemaRejected as exc:
                # a request-shape problem, not an outage: resend now, weaker, no retry spent
                self._styles.refused(style, str(exc), self.structured_output_reprobe)
                refused = RANK[style]
                continue
            except BaseException:
                if probe:
                    self._styles.probe_ended(style, accepted=False)
                raise
            if probe:
                self._styles.probe_ended(style, accepted=True)
            completion.attempts = attempts
            return completion

    def _styled(self, body: bytes, schema: dict[str, Any] | None, refused: int
                ) -> tuple[str | None, bool, bytes]:
        """``(style, probe, body)``: ``body`` (a JSON object) with ``schema`` in the form this
        server takes, stronger than the ``refused`` rank (no schema: style None)."""
        if schema is None:
            return None, False, body
        style, probe = self._styles.choose(self._structured_output, self.structured_output_reprobe)
        if RANK[style] <= refused:
            style, probe = STYLES[refused + 1], False
        rf = response_format_json(schema, style)
        return style, probe, body if rf is None else b"".join((body[:-1], b', "response_format": ', rf, b"}"))

    @property
    def continues_prefix(self) -> bool:  # type: ignore[override]
        """A trailing assistant prefix needs the completions endpoint and a chat template."""
        return self.logprobs_endpoint != "chat" and self.chat_template is not None

    async def grade_distribution(self, messages: Sequence[Message], choices: Sequence[str],
                                 params: GenerationParams | None = None) -> TokenDistribution:
        """Probabilities of ``choices`` as the next token, from the server's top logprobs: one request
        of one token, ``max_top_logprobs`` alternatives, no ``response_format``, temperature 1."""
        choices = check_choices(choices)
        endpoint, path, body = self._logprobs_request([dict(m) for m in messages], params)
        dist, attempts = await self._http.request(
            path, body, partial(_parse_distribution, endpoint=endpoint, choices=choices), self.retry_policy)
        dist.attempts = attempts
        return dist

    def _logprobs_request(self, msgs: list[dict[str, Any]],
                          params: GenerationParams | None) -> tuple[str, str, bytes]:
        """``(endpoint, path, body)`` of a one-token request for top logprobs."""
        continues = bool(msgs) and msgs[-1].get("role") == "assistant"
        endpoint = self.logprobs_endpoint
        if endpoint == "auto":
            endpoint = "completions" if continues else "chat"
        if endpoint == "chat" and continues:
            raise ConfigError("a chat endpoint does not continue a trailing assistant message "
                              "(llama.cpp starts a new turn): use logprobs_endpoint='auto' or "
                              "'completions' with a chat_template")
        payload: dict[str, Any] = {"model": self.model, **self.extra_body, "max_tokens": 1,
                                   "temperature": 1.0, "top_p": 1.0}
        payload.pop("response_format", None)
        if params is not None and params.seed is not None:
            payload["seed"] = params.seed
        if endpoint == "chat":
            payload.update(messages=msgs, logprobs=True, top_logprobs=self.max_top_logprobs)
            return endpoint, "/chat/completions", json_body(payload)
        if self.chat_template is None:
            raise GradeDistributionUnsupported(
                f"{self!r}: reading probabilities after an assistant prefix needs the "
                f"completions endpoint and the model's chat template: pass chat_template= "
                f"(spawn_judge sets it from the GGUF)")
        payload.update(prompt=self.chat_template(msgs), logprobs=self.max_top_logprobs)
        return endpoint, "/completions", json_body(payload)

    async def aclose(self) -> None:
        """Close the HTTP sessions (``HTTPTransport.aclose``); safe to call twice, reopened if used."""
        await self._http.aclose()


def _unreadable(exc: Exception, text: str) -> JudgeResponseError:
    if text.lstrip().startswith(("data:", "event:")):   # the same request streams again: not retried
        err = JudgeResponseError("the judge server streamed its reply (server-sent events) to a request "
                                 "that asked for none: it must answer 'stream': false whole", body=text[:2000])
        err.retryable = False
        return err
    return JudgeResponseError(f"unreadable judge body ({type(exc).__name__}: {exc})", body=text[:2000])


def _read_body(raw: bytes) -> tuple[str, dict[str, Any], Any, dict[str, int]]:
    """``(text, data, the choice of index 0, usage)`` of a reply body; a JudgeResponseError, or the
    JudgeHTTPError an error object in the body names (``_body_error``)."""
    text = raw.decode("utf-8", "replace")
    try:
        data = json_value(raw, text)
        error = _body_error(data, text)
        if error is not None:
            raise error
        choices = data["choices"]
        # with several choices (``n`` > 1) a proxy may list them in any order
        choice = next((c for c in choices if isinstance(c, dict) and c.get("index") == 0), choices[0])
    except (ValueError, KeyError, IndexError, TypeError, RecursionError) as exc:
        raise _unreadable(exc, text) from None
    usage_in = data.get("usage")
    usage_in = usage_in if isinstance(usage_in, dict) else {}
    # a count that is no number of a plausible size (NaN, 1e400, an integer of 400 digits) is left out:
    # int() of it raises, and so do isfinite() and float() of a huge integer
    usage = {k: int(v) for k in ("prompt_tokens", "completion_tokens", "total_tokens")
             if _is_number(v := usage_in.get(k)) and -_HUGE < v < _HUGE}
    return text, data, choice, usage


def _body_error(data: Any, text: str) -> "JudgeError | None":
    """The error a 200 body holds instead of a reply (OpenRouter writes one there once a provider fails
    after the status line went out), at its top or in its first choice: a ``JudgeHTTPError`` of the
    status its ``code`` names (so a 429 is retried and an over-context 400 is a refusal), else a
    ``JudgeResponseError`` with its message. None when the body holds no error."""
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    choices = data.get("choices")
    if not error and isinstance(choices, list) and choices and isinstance(choices[0], dict):
        error = choices[0].get("error")
    if not error:
        return None
    code = error.get("code") if isinstance(error, dict) else None
    if type(code) is int and 400 <= code <= 599:
        return JudgeHTTPError(code, f"(in a 200 reply's body) {text[:2000]}")
    return JudgeResponseError(f"the judge server sent an error in a 200 reply: {text[:300]}", body=text[:2000])


def _schema_refusal(status: int, text: str) -> SchemaRejected | None:
    """A structured request's error reply that refuses its response_format (resent weaker)."""
    return SchemaRejected(text) if refuses_response_format(status, text) else None


def _parse_distribution(raw: bytes, latency: float, *, endpoint: str,
                        choices: list[str]) -> TokenDistribution:
    """Read the first generated position's top logprobs from a chat or completions body."""
    text, data, choice, usage = _read_body(raw)
    pairs = _top_alternatives(choice.get("logprobs") if isinstance(choice, dict) else None, endpoint)
    if not pairs:   # one reply without them (a proxy's provider) is a judge failure, not a usage error
        err = JudgeResponseError(f"the judge server returned no top logprobs on {endpoint} (does it "
                                 f"support logprobs?): {text[:300]}", body=text[:2000])
        err.retryable = False   # a server that never returns them must not cost every grade its retries
        raise err
    seen = [math.exp(v) for _, v in pairs if math.isfinite(v)]
    if math.fsum(seen) > 1.001:   # probabilities past 1 (rounding aside): no softmax wrote them
        raise JudgeResponseError(f"the judge server's top logprobs on {endpoint} add up to a probability of "
                                 f"{math.fsum(seen):.3g}, past 1: {text[:300]}", body=text[:2000])
    return TokenDistribution(match_choices(pairs, choices), top_k=len(pairs),
                             unseen_max=min(seen) if seen else 1.0, usage=usage,
                             latency_s=latency, raw=data)


def _parse_chat_body(raw: bytes, latency: float, *, structured: bool) -> Completion:
    """The reply of one chat attempt (a 200 body), or the JudgeResponseError it is."""
    text, data, choice, usage = _read_body(raw)
    try:
        message = choice["message"]
        content = message.get("content")
    except (KeyError, TypeError, AttributeError) as exc:
        raise _unreadable(exc, text) from None
    if isinstance(content, list):   # parts (Mistral's reasoning models): the text ones, never thinking
        content = "".join(p["text"] for p in content
                          if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str))
    if content is None or content == "":
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal.strip():
            raise JudgeResponseError(f"the judge refused to answer: {refusal[:300]}", body=text[:2000])
        content = ""   # no text (its tokens spent on reasoning or a tool call): no verdict, or cut off
    if not isinstance(content, str):
        raise JudgeResponseError("judge reply has no text content", body=text[:2000])
    tokens, top = _token_logprobs(choice.get("logprobs"))
    return Completion(text=content, usage=usage, latency_s=latency,
                      finish_reason=choice.get("finish_reason"), top_logprobs=top, tokens=tokens,
                      structured=structured, raw=data)


def _token_logprobs(lp: Any) -> tuple[list[str], list[dict[str, float]]]:
    """Per generated token: its text, and ``{alternative: logprob}`` (the chat form; the token's own
    logprob where it lists no alternatives)."""
    items = lp.get("content") if isinstance(lp, dict) else None
    items = [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
    top: list[dict[str, float]] = []
    for item in items:
        alts = dict(_alternatives(item.get("top_logprobs"), "chat"))
        if not alts and _is_logprob(item.get("logprob")):
            alts[str(item.get("token", ""))] = float(item["logprob"])
        top.append(alts)
    return [str(item.get("token", "")) for item in items], top


def _alternatives(listed: Any, endpoint: str) -> list[tuple[str, float]]:
    """``(token, logprob)`` of one generated position's alternatives (chat: a list of ``{token, logprob}``;
    completions: ``{token: logprob}``), each pair as listed (two token ids may decode to one text). A
    logprob that is no number (null, text) is left out: float() of it raised out of grade."""
    if endpoint == "chat":
        items = [(a.get("token"), a.get("logprob")) for a in listed if isinstance(a, dict)] \
            if isinstance(listed, list) else []
    else:
        items = list(listed.items()) if isinstance(listed, dict) else []
    return [(t, float(v)) for t, v in items if isinstance(t, str) and _is_logprob(v)]


def _top_alternatives(lp: Any, endpoint: str) -> list[tuple[str, float]]:
    """The first generated position's alternatives (``_alternatives``); any other shape gives none."""
    try:
        first = lp["content"][0]["top_logprobs"] if endpoint == "chat" else lp["top_logprobs"][0]
    except (KeyError, IndexError, TypeError, AttributeError):
        return []
    return _alternatives(first, endpoint)


#: no count or logprob a server means is this large; a larger integer overflows float()
_HUGE = 1e18


def _is_number(value: Any) -> bool:
    return type(value) in (int, float)


def _is_logprob(value: Any) -> bool:
    """A number a logprob can be: at most 0 (a probability over 1 is none), a huge integer and NaN
    not (float() of the one raises, the other compares false)."""
    return (type(value) is float or type(value) is int and value > -_HUGE) and value <= 0
