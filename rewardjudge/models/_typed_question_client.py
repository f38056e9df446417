"""TypedQuestionClient: a judge behind a typed-question provider (Jev; docs/probability.md): one
``POST {base_url}{path}`` per result; the reply's ``answers.<name>.probabilities`` (one per criterion,
lowest grade first, summing to at most 1) is read; transport and retries are ``_http.py``'s."""

from __future__ import annotations

import json
from functools import partial
from typing import Any, Mapping, Optional, Sequence

from pydantic import Field, StrictInt, StrictStr

from .._option_types import Number
from .._validate import finite_number
from ..errors import ConfigError, JudgeResponseError
from ._base import (Completion, GenerationParams, GradeDistributionUnsupported, InferenceModel,
                   Message, TokenDistribution, check_choices)
from ._http import DEFAULT_MAX_RESPONSE_BYTES, HTTPTransport, Retries, json_value

__all__ = ["TypedQuestionClient", "DEFAULT_QUESTION_NAME", "request_problems"]

DEFAULT_QUESTION_NAME = "relevance"
#: mass the provider's probabilities may exceed 1 by (float rounding) before the body is refused
_SUM_TOLERANCE = 1e-6
_TEXT = r"\S"  # a non-empty string: something besides whitespace


def request_problems(body: Any, question_type: str | None = None) -> list[str]:
    """What is wrong with a typed-question request body (none when it has the documented shape);
    ``question_type``: the one question type accepted (None: any non-empty string)."""
    if not isinstance(body, dict):
        return ["the body is not an object"]
    questions = body.get("questions")
    problems = [msg for bad, msg in (
        (not isinstance(body.get("model"), str) or not body["model"], "'model' must be a non-empty string"),
        (not isinstance(body.get("state"), dict), "'state' must be an object"),
        (not isinstance(questions, dict) or not questions, "'questions' must be a non-empty object")) if bad]
    for name, q in questions.items() if isinstance(questions, dict) else ():
        if not isinstance(q, dict):
            problems.append(f"questions.{name} must be an object")
            continue
        kind, instructions = q.get("type"), q.get("instructions")
        problems += [f"questions.{name}.{msg}" for bad, msg in (
            (kind != question_type if question_type else not isinstance(kind, str) or not kind,
             f"type must be {question_type!r}" if question_type else "type must be a non-empty string"),
            (not isinstance(instructions, (str, dict, list))
             or not (instructions.strip() if isinstance(instructions, str) else instructions),
             "instructions must be a non-empty string, object or array"),
            (not isinstance(q.get("criteria"), list) or len(q["criteria"]) < 2,
             "criteria must list at least two criteria, lowest grade first")) if bad]
    return problems


class TypedQuestionOptions(Retries):
    """``TypedQuestionClient``'s arguments, checked."""

    base_url: StrictStr = Field(description="must be an http(s) URL")   # and _http.check_base_url's rules
    model: StrictStr = Field("jev-latest", pattern=_TEXT, description="must be a non-empty string")
    path: StrictStr = Field("/questions", pattern="^/", description="must start with '/'")
    api_key: Any = None      # checked as a header value (not echoed)
    headers: Any = None
    question_name: StrictStr = Field(DEFAULT_QUESTION_NAME, pattern=_TEXT,
                                     description="must be a non-empty string")
    question_type: StrictStr = Field("score", pattern=_TEXT, description="must be a non-empty string")
    timeout: Number = Field(60.0, gt=0, description="must be a number of seconds > 0")
    max_concurrency: StrictInt = Field(16, ge=1, description="must be an int >= 1")
    name: Optional[StrictStr] = Field(None, description="must be a str (or None)")


class TypedQuestionClient(InferenceModel):
    """A typed-question provider's client (docs/probability.md): asked with ``ask`` or
    ``typed_distribution``, it does not chat; ``question_name`` is the key under ``questions``."""

    #: graders that know typed questions ask them instead of sending a prompt
    answers_typed_questions = True

    def __init__(self, base_url: str, model: str = "jev-latest", **options: Any):
        o = self.options = TypedQuestionOptions(base_url=base_url, model=model, **options)
        self.retry_policy = o.policy()
        self.timeout, self.max_concurrency = float(o.timeout), o.max_concurrency
        self._http = HTTPTransport(base_url, o.api_key or "", o.headers,   # "": no OPENAI_API_KEY here
                                   True, self.timeout, o.max_concurrency, DEFAULT_MAX_RESPONSE_BYTES)
        self.base_url = self._http.base_url
        self.model, self.path, self.name = model, o.path, o.name or f"typed:{model}"
        self.question_name, self.question_type = o.question_name, o.question_type

    def __repr__(self) -> str:
        return f"TypedQuestionClient({self.base_url!r}, {self.model!r})"

    def build_request(self, state: Mapping[str, Any], instructions: str | Mapping[str, Any] | Sequence[Any],
                      criteria: Sequence[str | Mapping[str, Any]]) -> dict[str, Any]:
        """The request body for one result (``state``: the content judged, sent as given) as plain JSON;
        a ``ConfigError`` names what ``request_problems`` finds."""
        body = {"model": self.model, "state": dict(state) if isinstance(state, Mapping) else state,
                "questions": {self.question_name: {"type": self.question_type, "instructions": instructions,
                                                   "criteria": criteria}}}
        try:
            body = json.loads(json.dumps(body, allow_nan=False))   # a copy; tuples become lists
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"the typed-question request must be JSON (strings, numbers, booleans, "
                              f"null, lists and objects with string keys): {exc}") from None
        problems = request_problems(body)
        if problems:
            raise ConfigError(f"invalid typed-question request: {'; '.join(problems)}")
        return body

    def _answer(self, n_choices: int, raw: bytes, latency: float) -> dict[str, Any]:
        text = raw.decode("utf-8", "replace")

        def bad(why: str) -> JudgeResponseError:
            return JudgeResponseError(f"typed-question reply {why}", body=text[:2000])

        try:
            data = json_value(raw, text)
        except ValueError:
            raise bad("is not JSON") from None
        if not isinstance(data, dict) or not isinstance(data.get("answers"), dict):
            raise bad("has no 'answers' object")
        answer = data["answers"].get(self.question_name)
        if not isinstance(answer, dict):
            raise bad(f"has no answer to the question {self.question_name!r} "
                      f"(answers: {sorted(data['answers'])[:10]})")
        out = self._probabilities(answer.get("probabilities"), n_choices, bad)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return {"probabilities": out, "usage": {k: int(v) for k, v in usage.items() if type(v) is int},
                "raw": data, "latency_s": latency}

    def _probabilities(self, probs: Any, n_choices: int, bad: Any) -> list[float]:
        if not isinstance(probs, list) or len(probs) != n_choices:
            raise bad(f"must give {n_choices} probabilities (one per criterion) under "
                      f"answers.{self.question_name}.probabilities, got {json.dumps(probs)[:80]}")
        for i, p in enumerate(probs):
            if not finite_number(p) or not -_SUM_TOLERANCE <= p <= 1 + _SUM_TOLERANCE:
                raise bad(f"probability {i} is not a number in [0, 1]: {p!r}")
        out = [min(1.0, max(0.0, float(p))) for p in probs]
        if sum(out) > 1 + _SUM_TOLERANCE:
            raise bad(f"probabilities sum to {sum(out):.6f}, more than 1")
        return out

    async def ask(self, state: Mapping[str, Any], instructions: Any,
                  criteria: Sequence[Any]) -> dict[str, Any]:
        """``{"probabilities": [one per criterion], "usage", "raw", "latency_s", "attempts", "request"}``
        for one typed question about ``state``, or a ``JudgeError`` after retries."""
        request = self.build_request(state, instructions, criteria)
        body = json.dumps(request, ensure_ascii=False).encode()
        answer, attempts = await self._http.request(self.path, body, partial(self._answer, len(criteria)),
                                                    self.retry_policy)
        answer.update(attempts=attempts, request=request)
        return answer

    async def typed_distribution(self, state: Mapping[str, Any], instructions: Any,
                                 criteria: Sequence[Any], choices: Sequence[str],
                                 params: GenerationParams | None = None) -> TokenDistribution:
        """The answer as an exact ``TokenDistribution``: criterion ``i``'s probability is ``choices[i]``'s."""
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
        """Close this client's HTTP sessions (see ``OpenAIModel.aclose``)."""
        await self._http.aclose()
