"""Bad input: each case raises one documented error type (rewardjudge.errors)
with a message that says what to fix.

Every table row is (what is wrong, the call, the error class, words the
message must contain).
"""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from rewardjudge import (ConfigError, Grade, StringThread, TemplateContextError, TemplateError,
                         TemplateVariableError)
from rewardjudge.graders._outputs import JudgeOutput
from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
from rewardjudge.models import OpenAIModel, RetryPolicy
from rewardjudge.templates import Template
from rewardjudge.testing import ScriptedModel

URL = "http://127.0.0.1:9/v1"
REPLY = '{"reasoning": "ok", "score": "PASS"}'


def grader(**kw) -> TemplatedPromptJudgeGrader:
    args = {"grader_key": "g", "model": ScriptedModel(default=REPLY), "system_template": "",
            "user_template": "{{completion}}"}
    args.update(kw)
    return TemplatedPromptJudgeGrader(**args)


class NoScore(BaseModel):
    verdict: str


class UnboundedScore(BaseModel):
    score: float   # a judge could answer 1e308: the reward must be bounded


class NoToValue(JudgeOutput):
    score: int


TEMPLATES = [
    # a block opened and never closed (pybars3 would silently drop the rest)
    ("unclosed block", "Q: {{#if q}}{{q}}", "no matching '{{/if}}'"),
    # a mustache never closed (pybars3 would silently drop the rest)
    ("unclosed mustache", "Q: {{q", "no matching '}}'"),
    # a close tag that does not match the open block
    ("mismatched close", "{{#each xs}}{{this}}{{/if}}", "does not match the open block"),
    # a close tag with nothing open
    ("stray close", "text {{/if}}", "never opened"),
    # {{else if}} is not supported by pybars3: says how to write it instead
    # {{else}} outside a block
    ("stray else", "a {{else}} b", "outside any block"),
    # partials are not supported
    # raw blocks are not supported
    ("raw block", "{{{{raw}}}} {{x}} {{{{/raw}}}}", "raw blocks"),
    # a comment that pybars3 would end early
    # an empty mustache
    ("empty mustache", "x {{ }} y", "empty mustache"),
]


@pytest.mark.parametrize("name,source,words", TEMPLATES, ids=[t[0] for t in TEMPLATES])
def test_invalid_templates(name, source, words):
    with pytest.raises(TemplateError) as info:
        Template(source, name="user_template")
    msg = str(info.value)
    assert words in msg and "user_template" in msg
    assert info.value.line is not None and info.value.column is not None  # where to fix it


def test_invalid_template_fails_at_grader_construction_not_first_call():
    model = ScriptedModel()
    with pytest.raises(TemplateError, match="system_template"):
        grader(model=model, system_template="{{#if x}}never closed")
    assert model.calls == []


def test_template_source_must_be_text():
    with pytest.raises(TemplateError, match="must be a str, got NoneType"):
        grader(user_template=None)


def test_missing_template_variable_names_what_is_available():
    t = Template("Q: {{question}} A: {{completion}}")
    with pytest.raises(TemplateVariableError) as info:
        t.render({"completion": "4", "query": "2+2"})
    assert info.value.missing == ["question"] and "query" in str(info.value)


async def test_missing_variable_is_raised_by_grade_batch_after_the_rest():
    g = grader(user_template="{{completion}} {{metadata.reference}}")
    samples = [StringThread([("user", "q"), ("assistant", "a")], metadata={"reference": "r"}),
               StringThread([("user", "q"), ("assistant", "a")])]
    with pytest.raises(TemplateVariableError, match="metadata.reference"):
        await g.grade_batch(samples)
    assert len(g.model.calls) == 1  # the good sample was still graded


def test_callable_in_template_context_is_refused():
    with pytest.raises(TemplateContextError, match=r"context\.helpers\[0\] is callable"):
        Template("{{x}}").render({"x": 1, "helpers": [print]})


CONFIGS = [
    # OpenAIModel
    ("negative concurrency", lambda: OpenAIModel(URL, "m", max_concurrency=-4), "max_concurrency must be an int >= 1"),
    ("zero concurrency", lambda: OpenAIModel(URL, "m", max_concurrency=0), "max_concurrency must be an int >= 1"),
    ("concurrency as text", lambda: OpenAIModel(URL, "m", max_concurrency="8"), "max_concurrency must be an int >= 1"),
    ("URL without scheme", lambda: OpenAIModel("localhost:8000/v1", "m"), "http(s) URL ending in /v1"),
    ("URL not a str", lambda: OpenAIModel(None, "m"), "http(s) URL ending in /v1"),
    ("no model name", lambda: OpenAIModel(URL, ""), "model (the judge model's name on the server) is required"),
    ("zero timeout", lambda: OpenAIModel(URL, "m", timeout=0), "timeout must be a number of seconds > 0"),
    ("timeout as text", lambda: OpenAIModel(URL, "m", timeout="30"), "timeout must be a number of seconds > 0"),
    ("negative retries", lambda: OpenAIModel(URL, "m", max_retries=-1), "max_retries must be an int >= 0"),
    ("retries as text", lambda: RetryPolicy(max_retries="3"), "max_retries must be an int >= 0"),
    ("negative delay", lambda: RetryPolicy(base_delay=-1), "base_delay must be a number of seconds >= 0"),
    ("unknown structured output", lambda: OpenAIModel(URL, "m", structured_output="xml"), "json_schema, json_object or none"),
    ("header value with CR/LF", lambda: OpenAIModel(URL, "m", api_key="k\r\nX-Evil: 1"), "api_key"),
    ("temperature as text in a grader", lambda: grader(temperature="hot"), "got 'hot'"),
    ("reply retries as text", lambda: grader(reply_retries="1"), "reply_retries must be >= 0"),
    ("top_p out of range", lambda: grader(top_p=7), "top_p must be a number in (0, 1]"),
    ("seed as text", lambda: grader(seed="x"), "seed must be an int"),
    ("unbounded float score", lambda: grader(output_model=UnboundedScore), "must be bounded"),
    # grader settings
    ("empty grader key", lambda: grader(grader_key=""), "grader_key must be a non-empty str"),
    ("unknown mode", lambda: grader(mode="training"), "mode must be 'train', 'eval' or None"),
    ("NaN penalty", lambda: grader(train_penalty=float("nan")), "train_penalty must be a finite number"),
    ("infinite penalty", lambda: grader(train_penalty=float("-inf")), "train_penalty must be a finite number"),
    ("penalty as text", lambda: grader(eval_penalty="0"), "eval_penalty must be a finite number"),
    ("penalty as bool", lambda: grader(eval_penalty=False), "eval_penalty must be a finite number"),
    ("temperature too high", lambda: grader(temperature=3.0), "temperature must be a number in [0, 2]"),
    ("negative temperature", lambda: grader(temperature=-0.1), "temperature must be a number in [0, 2]"),
    ("temperature as text", lambda: grader(temperature="hot"), "temperature must be a number in [0, 2]"),
    ("zero max_tokens", lambda: grader(max_tokens=0), "max_tokens must be an int >= 1"),
    ("negative reply retries", lambda: grader(reply_retries=-1), "reply_retries must be >= 0"),
    ("model that is not a judge", lambda: grader(model="gpt-4o"), "model must be an InferenceModel"),
    # output models
    ("output model not pydantic", lambda: grader(output_model=dict), "output_model must be a pydantic BaseModel subclass"),
    ("output model without a value", lambda: grader(output_model=NoScore), "needs a to_value() method or a numeric 'score' field"),
    ("JudgeOutput without to_value", lambda: grader(output_model=NoToValue), "must define to_value()"),
    ("completion model not pydantic", lambda: grader(completion_model=str), "completion_model must be a pydantic BaseModel subclass"),
    # samples and grades
    ("unknown role", lambda: StringThread([("bot", "hi")]), "expected one of"),
    ("content not text", lambda: StringThread([("user", 5)]), "content must be a str"),
    ("turn not a pair", lambda: StringThread(["hello"]), "must be a (role, content) pair"),
    ("message without role", lambda: StringThread.from_messages([{"content": "x"}]), "with 'role' and 'content'"),
    ("NaN grade", lambda: Grade(value=float("nan"), grader_key="g"), "use status='unscored'"),
    ("unknown grade status", lambda: Grade(value=1.0, grader_key="g", status="ok"), "Grade.status must be one of"),
]


@pytest.mark.parametrize("name,make,words", CONFIGS, ids=[c[0] for c in CONFIGS])
def test_invalid_configs(name, make, words):
    with pytest.raises(ConfigError) as info:
        make()
    assert words in str(info.value)


@pytest.mark.parametrize("bad", [
    "a completion as a plain string",  # not a thread
    {"role": "user", "content": "x"},  # a message dict, not a thread
    None,
])
async def test_bad_samples_raise_config_error(bad):
    g = grader()
    with pytest.raises(ConfigError, match="a sample must be a StringThread"):
        await g.grade_batch([StringThread([("user", "q"), ("assistant", "a")]), bad])
    assert g.model.calls == []  # checked before any judge call


def test_both_retry_options_are_refused_by_every_judge_client():
    # max_retries beside a whole retry_policy would be silently ignored by one of them
    from rewardjudge.models import TypedQuestionClient

    for client in (lambda **kw: OpenAIModel("http://127.0.0.1:9/v1", "judge", **kw),
                   lambda **kw: TypedQuestionClient("http://127.0.0.1:9/v1", **kw)):
        with pytest.raises(ConfigError, match="pass retry_policy or max_retries, not both"):
            client(max_retries=1, retry_policy=RetryPolicy(max_retries=5))
        assert client(max_retries=1).retry_policy.max_retries == 1
        assert client(retry_policy=RetryPolicy(max_retries=5)).retry_policy.max_retries == 5
        assert client().retry_policy == RetryPolicy()
