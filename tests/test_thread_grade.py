"""StringThread and Grade."""

from __future__ import annotations

import math

import pytest

from rewardjudge import ConfigError, Grade, StringThread


def test_thread_accessors():
    t = StringThread([("system", "S"), ("user", "Q1"), ("assistant", "A1"), ("user", "Q2"),
                      ("assistant", "A2")], metadata={"eval": True})
    assert t.last_content() == "A2" and t.completion() == "A2"
    assert t.last_user_content() == "Q2"
    assert t.context_turns()[-1] == ("user", "Q2")
    assert t.messages()[0] == {"role": "system", "content": "S"}
    assert t.metadata == {"eval": True}
    assert StringThread.from_messages(t.messages(), t.metadata) == t


def test_thread_without_completion():
    t = StringThread([("user", "Q")])
    assert t.completion() == "" and t.context_turns() == [("user", "Q")]


@pytest.mark.parametrize("turns", [
    [("robot", "x")],       # unknown role
    [("user", 3)],          # content not a str
    [("user",)],            # not a pair
])
def test_thread_rejects_bad_turns(turns):
    with pytest.raises(ConfigError):
        StringThread(turns)


def test_grade_status_inferred_for_seed_api():
    assert Grade(value=1.0, grader_key="g", reasoning="ok").status == "scored"
    assert Grade(value=None, grader_key="g").status == "unscored"


@pytest.mark.parametrize("kwargs", [
    {"value": 1.0, "status": "unscored"},      # unscored must carry no value
    {"value": None, "status": "scored"},       # scored needs a value
    {"value": None, "status": "penalized"},    # penalized needs a value
    {"value": math.nan},                       # NaN is never a value
    {"value": 1.0, "status": "maybe"},         # unknown status
])
def test_grade_rejects_inconsistent_states(kwargs):
    with pytest.raises(ConfigError):
        Grade(grader_key="g", **kwargs)


def test_grade_reward_and_details():
    g = Grade(value=None, grader_key="g", error="HTTP 503", attempts=4, raw_reply="x")
    assert math.isnan(g.reward)
    assert g.details["attempts"] == 4 and g.details["error"] == "HTTP 503"
