"""pydantic_parse: lenient about where the JSON sits, strict about what it holds."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict

from rewardjudge.core.structured_output import OutputParserException, pydantic_parse, render_schema
from rewardjudge.readouts import json_objects


class Answer(BaseModel):
    answer: str
    confidence: Literal["high", "medium", "low"]


@pytest.mark.parametrize("text", [
    '{"answer": "Paris", "confidence": "high"}',                          # bare object
    '  \n{"answer": "Paris", "confidence": "high"}\n',                    # whitespace around
    '```json\n{"answer": "Paris", "confidence": "high"}\n```',           # markdown fence
    'Sure! Here it is: {"answer": "Paris", "confidence": "high"} Done.',  # prose around
    '{"note": 1} then {"answer": "Paris", "confidence": "high"}',        # first object invalid, second valid
])
def test_tolerant_wrappers(text):
    assert pydantic_parse(text, Answer) == Answer(answer="Paris", confidence="high")


def test_brackets_inside_the_strings_of_a_long_completion_never_hide_its_object():
    # long texts are scanned under a cheap depth bound that counts brackets inside strings too: an
    # answer holding a hundred of them was skipped, and the object nested in it read in its place
    outer = {"answer": "[" * 100, "confidence": "low", "meta": {"answer": "inner", "confidence": "high"}}
    text = "Some notes first. " * 300 + json.dumps(outer)
    assert [s.value for s in json_objects(text)] == [outer]
    assert pydantic_parse(text.replace(', "meta": {"answer": "inner", "confidence": "high"}', ""), Answer).answer == "[" * 100


def test_braces_inside_strings():
    out = pydantic_parse('{"answer": "a } tricky { one", "confidence": "low"}', Answer)
    assert out.answer == "a } tricky { one"


@pytest.mark.parametrize("text, reason", [
    ("Paris", "no JSON object found"),                                 # prose only
    ('{"answer": "Paris", "confidence": "very-high"}', "confidence"),  # schema: bad enum value
    ('{"answer": "Paris"}', "confidence"),                             # schema: missing field
    ('{"answer": "Paris", "confidence": "high",}', "invalid JSON"),    # trailing comma
    ('["answer"]', "no JSON object found"),                            # a list, not an object
])
def test_failures_say_what_failed(text, reason):
    with pytest.raises(OutputParserException) as info:
        pydantic_parse(text, Answer)
    assert reason in info.value.reason
    assert info.value.text == text


def test_strict_extra_keys_when_model_forbids():
    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")
        x: int

    with pytest.raises(OutputParserException):
        pydantic_parse('{"x": 1, "y": 2}', Strict)


def test_non_str_input():
    with pytest.raises(OutputParserException):
        pydantic_parse(None, Answer)  # type: ignore[arg-type]


def test_render_schema_mentions_fields_and_values():
    from pydantic import Field

    class Doc(BaseModel):
        answer: str = Field(description="The answer")
        confidence: Literal["high", "low"]
        score: int = Field(ge=1, le=5)
        tags: list[str] = []

    text = render_schema(Doc)
    assert '"answer": string' in text and "The answer" in text
    assert '"high" | "low"' in text
    assert "integer (>= 1, <= 5)" in text
    assert '"tags": [string, ...]' in text and "optional" in text
