"""TypedQuestionClient: a judge behind a typed-question provider (Jev on TypeSafe).

A typed-question provider does not read a prompt or write a reply. It is
asked a *typed question* about some content and answers with a probability
for each answer the question defines. This client builds the request the
Releval document shows, one request per result::

    {
      "model": "jev-latest",
      "state": {
        "query": "star wars",
        "result": {"title": "The Empire Strikes Back",
                   "fields": {"year": 1980, "genre": "Sci-Fi"}}
      },
      "questions": {
        "relevance": {
          "type": "score",
          "instructions": "How well does `result` match what the searcher is looking for with `query`?",
          "criteria": ["...one description per grade, lowest first..."]
        }
      }
    }

``state.query`` is a string, or the query's object when the query set has
several parameters; ``state.result.fields`` holds the result's mapped
fields. The instructions refer to the content by path in backticks
(`` `query` ``, `` `result` ``, `` `result.fields.price` ``).

**The response** this client reads (the provider's answer, one entry per
question asked)::

    {
      "model": "jev-latest",
      "answers": {"relevance": {"probabilities": [0.01, 0.02, 0.07, 0.3, 0.6]}},
      "usage": {"questions": 1}
    }

``answers.<name>.probabilities`` holds one probability per criterion, in the
criteria's order (lowest grade first): numbers in [0, 1] summing to at most
1 (what they leave is read as mass outside the grades). ``model``, ``usage``
(integer counters) and any other field of an answer (``score``...) are
optional and kept in ``TokenDistribution.raw``. A body of any other shape is
a ``JudgeResponseError``.

Transport: ``POST {base_url}{path}`` (default path ``/questions``) over httpx,
an ``Authorization: Bearer`` header when ``api_key`` is given, at most
``max_concurrency`` requests in flight per client and event loop, ``timeout``
seconds per attempt; connection errors, timeouts, unreadable bodies, 408,
409, 429 and 5xx are retried by the library's one retry loop
(``RetryPolicy``: exponential backoff with jitter, Retry-After honoured).

With ``ProbabilityJudgeGrader`` the client grades as any probability judge
does (the grader sees ``answers_typed_questions`` and asks the typed
question instead of building a chat prompt; see that grader)::

    jev = TypedQuestionClient("https://provider.example/v1", "jev-latest", api_key=KEY)
    grader = ProbabilityJudgeGrader("relevance", jev, scale="relevance-graded",
                                    completion_model=Movie, title_field="title")
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import time
from typing import Any, Mapping, Sequence

from ..errors import (ConfigError, JudgeConnectionError, JudgeError, JudgeHTTPError,
                      JudgeResponseError, JudgeTimeoutError)
from ._base import (Completion, GenerationParams, GradeDistributionUnsupported, InferenceModel,
                   Message, TokenDistribution, check_choices)
from ._openai_compat import parse_retry_after
from ._retry import RetryPolicy, retry_async

__all__ = ["TypedQuestionClient", "DEFAULT_QUESTION_NAME"]

DEFAULT_QUESTION_NAME = "relevance"
#: mass the provider's probabilities may exceed 1 by (float rounding) before the body is refused
_SUM_TOLERANCE = 1e-6


def _check_url(base_url: Any) -> str:
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")) \
            or any(c.isspace() for c in base_url):
        raise ConfigError(f"base_url must be an http(s) URL, got {base_url!r}")
    return base_url.rstrip("/")


def _check_json(value: Any, what: str) -> None:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{what} must be JSON (strings, numbers, booleans, null, lists and "
                          f"objects with string keys): {exc}") from None


class _LoopState:
    __slots__ = ("sem", "client")

    def __init__(self, limit: int):
        self.sem = asyncio.Semaphore(limit)
        self.client: Any = None


class TypedQuestionClient(InferenceModel):
    """A model client for typed-question providers (see the module docstring).

    Arguments: ``base_url`` (http(s)), ``model`` (sent as ``model``; default
    ``"jev-latest"``), ``path`` (default ``"/questions"``), ``api_key``,
    ``headers`` (extra request headers), ``question_name`` (the key under
    ``questions``; default ``"relevance"``), ``question_type`` (default
    ``"score"``), ``timeout`` (seconds per attempt), ``retry_policy`` /
    ``max_retries``, ``max_concurrency``, ``name`` (for logs and cache keys).

    It does not chat: ``chat`` raises ``ConfigError``, and
    ``grade_distribution`` ``GradeDistributionUnsupported`` (there is no
    prompt to read a token after). Ask it
    with ``ask`` (the provider's probabilities) or ``typed_distribution``
    (those probabilities as a ``TokenDistribution`` over grade choices).
    """

    #: graders that know typed questions ask them instead of sending a prompt
    answers_typed_questions = True

    def __init__(self, base_url: str, model: str = "jev-latest", *, path: str = "/questions",
                 api_key: str | None = None, headers: Mapping[str, str] | None = None,
                 question_name: str = DEFAULT_QUESTION_NAME, question_type: str = "score",
                 timeout: float = 60.0, retry_policy: RetryPolicy | None = None,
                 max_retries: int | None = None, max_concurrency: int = 16,
                 name: str | None = None):
        self.base_url = _check_url(base_url)
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"model must be a non-empty string, got {model!r}")
        if not isinstance(path, str) or not path.startswith("/"):
            raise ConfigError(f"path must start with '/', got {path!r}")
        for arg, value in (("question_name", question_name), ("question_type", question_type)):
            if not isinstance(value, str) or not value.strip():
                raise ConfigError(f"{arg} must be a non-empty string, got {value!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ConfigError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) \
                or max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be an int >= 1, got {max_concurrency!r}")
        if retry_policy is not None and max_retries is not None:
            raise ConfigError("pass retry_policy or max_retries, not both")
        self.retry_policy = retry_policy or (RetryPolicy(max_retries=max_retries)
                                             if max_retries is not None else RetryPolicy())
        self.model = model
        self.path = path
        self.question_name = question_name
        self.question_type = question_type
        self.timeout = float(timeout)
        self.max_concurrency = max_concurrency
        self.name = name or f"typed:{model}"
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        for k, v in (headers or {}).items():
            if not isinstance(k, str) or not isinstance(v, str) or "\n" in k + v or "\r" in k + v:
                raise ConfigError(f"header {k!r}: names and values must be single-line strings")
            self._headers[k] = v
        self._states: dict[int, tuple[Any, _LoopState]] = {}
        self._rng = random.Random()

    def __repr__(self) -> str:
        return f"TypedQuestionClient({self.base_url!r}, {self.model!r})"

    # -- the request ---------------------------------------------------------
    def build_request(self, state: Mapping[str, Any], instructions: str | Mapping[str, Any] | Sequence[Any],
                      criteria: Sequence[str | Mapping[str, Any]]) -> dict[str, Any]:
        """The request body for one result: ``model``, ``state`` and the one question.

        ``state`` is the content being judged (``{"query": ..., "result":
        {"title": ..., "fields": {...}}}`` for search relevance), sent as given.
        """
        if not isinstance(state, Mapping):
            raise ConfigError(f"state must be an object, got {type(state).__name__}")
        if isinstance(instructions, str):
            if not instructions.strip():
                raise ConfigError("instructions must not be empty")
        elif not isinstance(instructions, (Mapping, list, tuple)) or not instructions:
            raise ConfigError(f"instructions must be a non-empty string, object or array, "
                              f"got {instructions!r:.60}")
        if isinstance(criteria, (str, bytes)) or not isinstance(criteria, Sequence) or len(criteria) < 2:
            raise ConfigError("criteria must be a list of at least two descriptions, lowest grade first")
        body = {"model": self.model, "state": dict(state),
                "questions": {self.question_name: {
                    "type": self.question_type,
                    "instructions": instructions if isinstance(instructions, str)
                    else json.loads(json.dumps(instructions)),
                    "criteria": json.loads(json.dumps(list(criteria)))}}}
        _check_json(body, "the typed-question request")
        return body

    # -- transport -------------------------------------------------------------
    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        hit = self._states.get(id(loop))
        if hit is None or hit[0] is not loop:
            # a client is bound to the loop it was made on
            hit = self._states[id(loop)] = (loop, _LoopState(self.max_concurrency))
        return hit[1]

    async def _client(self, state: _LoopState) -> Any:
        if state.client is None:
            import httpx

            state.client = httpx.AsyncClient(headers=self._headers, timeout=self.timeout,
                                             follow_redirects=False)
        return state.client

    async def _attempt(self, state: _LoopState, body: bytes, n_choices: int) -> dict[str, Any]:
        import httpx

        client = await self._client(state)
        start = time.perf_counter()
        try:
            r = await client.post(self.base_url + self.path, content=body)
        except httpx.TimeoutException as exc:
            raise JudgeTimeoutError(f"typed-question provider timed out after {self.timeout}s") from exc
        except httpx.RequestError as exc:
            raise JudgeConnectionError(f"typed-question provider connection failed: {exc!r}") from exc
        latency = time.perf_counter() - start
        text = r.text
        if r.status_code != 200:
            raise JudgeHTTPError(r.status_code, text,
                                 retry_after=parse_retry_after(r.headers.get("Retry-After")))
        answer = self._parse(text, n_choices)
        answer["latency_s"] = latency
        return answer

    def _parse(self, text: str, n_choices: int) -> dict[str, Any]:
        """The probabilities of the one question asked, checked (see the module docstring)."""
        def bad(why: str) -> JudgeResponseError:
            return JudgeResponseError(f"typed-question reply {why}", body=text[:2000])

        try:
            data = json.loads(text)
        except ValueError:
            raise bad("is not JSON") from None
        if not isinstance(data, dict) or not isinstance(data.get("answers"), dict):
            raise bad("has no 'answers' object")
        answer = data["answers"].get(self.question_name)
        if not isinstance(answer, dict):
            raise bad(f"has no answer to the question {self.question_name!r} "
                      f"(answers: {sorted(data['answers'])[:10]})")
        probs = answer.get("probabilities")
        if not isinstance(probs, list) or len(probs) != n_choices:
            raise bad(f"must give {n_choices} probabilities (one per criterion) under "
                      f"answers.{self.question_name}.probabilities, got {json.dumps(probs)[:80]}")
        out: list[float] = []
        for i, p in enumerate(probs):
            if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p) \
                    or not -_SUM_TOLERANCE <= p <= 1 + _SUM_TOLERANCE:
                raise bad(f"probability {i} is not a number in [0, 1]: {p!r}")
            out.append(min(1.0, max(0.0, float(p))))
        if sum(out) > 1 + _SUM_TOLERANCE:
            raise bad(f"probabilities sum to {sum(out):.6f}, more than 1")
        usage = data.get("usage")
        usage = ({k: int(v) for k, v in usage.items()
                  if isinstance(v, int) and not isinstance(v, bool)}
                 if isinstance(usage, dict) else {})
        return {"probabilities": out, "usage": usage, "raw": data}

    # -- API ---------------------------------------------------------------------
    async def ask(self, state: Mapping[str, Any], instructions: Any,
                  criteria: Sequence[Any]) -> dict[str, Any]:
        """Ask one typed question about ``state``.

        Returns ``{"probabilities": [one per criterion], "usage", "raw" (the
        response body), "latency_s", "attempts", "request"}``; raises a
        ``JudgeError`` subclass when the provider fails (after retries).
        """
        request = self.build_request(state, instructions, criteria)
        body = json.dumps(request, ensure_ascii=False).encode()
        loop_state = self._state()
        async with loop_state.sem:
            answer, attempts = await retry_async(
                lambda n: self._attempt(loop_state, body, len(criteria)), self.retry_policy, self._rng)
        answer["attempts"] = attempts
        answer["request"] = request
        return answer

    async def typed_distribution(self, state: Mapping[str, Any], instructions: Any,
                                 criteria: Sequence[Any], choices: Sequence[str],
                                 params: GenerationParams | None = None) -> TokenDistribution:
        """The provider's answer as a ``TokenDistribution``: the probability of
        criterion ``i`` becomes that of ``choices[i]`` (the grade's digit), exact
        (``top_k`` None); what the probabilities leave is ``outside``. ``params``
        is accepted for the probability judges' signature; a typed question has
        no sampling settings."""
        choices = check_choices(choices)
        if len(choices) != len(criteria):
            raise ConfigError(f"{len(criteria)} criteria for {len(choices)} grades: give one "
                              f"criterion per grade")
        answer = await self.ask(state, instructions, criteria)
        return TokenDistribution(dict(zip(choices, answer["probabilities"])), top_k=None,
                                 usage=dict(answer["usage"]), latency_s=answer["latency_s"],
                                 attempts=answer["attempts"], raw=answer["raw"])

    async def chat(self, messages: Sequence[Message], params: GenerationParams | None = None, *,
                   json_schema: dict[str, Any] | None = None) -> Completion:
        raise ConfigError(f"{self!r} answers typed questions and does not chat: grade with "
                          f"ProbabilityJudgeGrader (it asks the typed question), or call ask()")

    async def grade_distribution(self, messages: Sequence[Message], choices: Sequence[str],
                                 params: GenerationParams | None = None) -> TokenDistribution:
        raise GradeDistributionUnsupported(f"{self!r} reads no prompt: a typed-question provider is asked "
                          f"typed_distribution(state, instructions, criteria, choices)")

    async def aclose(self) -> None:
        """Close this loop's HTTP client (clients of other loops are dropped)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        states, self._states = self._states, {}
        for key, (owner, state) in states.items():
            if state.client is not None and owner is loop:
                await state.client.aclose()

    def __getstate__(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["_states"] = {}
        return out
