"""Grader base: cached version, bounded grade_batch."""

from __future__ import annotations

import asyncio

import pytest

from rewardjudge import ConfigError, Grade, StringThread
from rewardjudge.graders._base import Grader


class Counting(Grader):
    """Grades the completion's length; counts config() calls and concurrency
    (in private attributes: runtime state that must not drop the version cache)."""

    def __init__(self, limit=None, **kw):
        super().__init__("counting", **kw)
        self._config_calls = 0
        self._in_progress = 0
        self._peak = 0
        if limit is not None:
            self.model = type("M", (), {"max_concurrency": limit})()

    def config(self):
        self._config_calls += 1
        return super().config()

    async def grade(self, sample):
        sample = self.check_sample(sample)
        if sample.completion() == "boom":
            raise ConfigError("bad sample")
        self._in_progress += 1
        self._peak = max(self._peak, self._in_progress)
        await asyncio.sleep(0.001)
        self._in_progress -= 1
        return Grade(value=len(sample.completion()), grader_key=self.grader_key,
                     grader_version=self.version)


def thread(text: str) -> StringThread:
    return StringThread([("user", "q"), ("assistant", text)])


async def test_version_is_computed_once_per_config():
    g = Counting()
    grades = await g.grade_batch([thread("a" * i) for i in range(20)])
    assert {x.grader_version for x in grades} == {g.version}
    assert g._config_calls == 1


def test_setting_an_attribute_recomputes_version():
    g = Counting()
    before = g.version
    g.train_penalty = -2.0
    assert g.version != before and g._config_calls == 2
    g.invalidate_version()  # after an in-place change nobody could see
    g.version
    assert g._config_calls == 3


async def test_batch_is_bounded_by_the_models_concurrency_and_keeps_order():
    g = Counting(limit=3)
    grades = await g.grade_batch([thread("a" * i) for i in range(30)])
    assert [x.value for x in grades] == [float(i) for i in range(30)]
    assert g._peak == 3


async def test_batch_without_a_model_limit_runs_all_at_once():
    g = Counting()
    await g.grade_batch([thread("x") for _ in range(10)])
    assert g._peak == 10


@pytest.mark.parametrize("limit", [None, 2])
async def test_usage_error_is_raised_after_every_other_sample(limit):
    g = Counting(limit=limit)
    samples = [thread("a"), thread("boom"), *[thread("b") for _ in range(6)]]
    with pytest.raises(ConfigError, match="bad sample"):
        await g.grade_batch(samples)
    assert g._in_progress == 0 and g._peak >= 1


def test_an_unknown_option_is_a_config_error_naming_the_nearest_option():
    # options beyond the seed's arguments are the fields of one pydantic model per family
    from rewardjudge import CandidateJudgeGrader, OpenAIModel, TemplatedPromptJudgeGrader
    from rewardjudge.graders import CandidateOptions, TemplatedOptions

    judge = OpenAIModel("http://127.0.0.1:9/v1", "judge")
    with pytest.raises(ConfigError, match=r"'temprature' is not an option.*'temperature'.*TemplatedOptions"):
        TemplatedPromptJudgeGrader("k", judge, "s", "u", temprature=0.1)
    with pytest.raises(ConfigError, match=r"'batchsize' is not an option.*'batch_size'.*CandidateOptions"):
        CandidateJudgeGrader("k", judge, batchsize=4)
    g = TemplatedPromptJudgeGrader("k", judge, "s", "{{completion}}", reply_retries=3, train_penalty=-2)
    assert isinstance(g.options, TemplatedOptions) and g.options.reply_retries == g.reply_retries == 3
    assert g.train_penalty == -2.0 and isinstance(g.train_penalty, float)
    assert "batch_size" in CandidateOptions.model_fields


def test_an_option_model_built_directly_raises_config_error_naming_the_field():
    # the option models are public: built by hand or from a dict, a bad value is the same
    # ConfigError a constructor raises, never pydantic's ValidationError
    from rewardjudge import OpenAIModel
    from rewardjudge.graders import TemplatedOptions
    from rewardjudge.models import OpenAIModelOptions
    from rewardjudge.scorers import ScorerConfig

    judge = OpenAIModel("http://127.0.0.1:9/v1", "judge")
    with pytest.raises(ConfigError, match=r"train_penalty must be a finite number.*got 'x'"):
        TemplatedOptions(grader_key="k", model=judge, train_penalty="x")
    with pytest.raises(ConfigError, match=r"train_penalty .*got inf"):
        TemplatedOptions(grader_key="k", model=judge, train_penalty=float("inf"))
    with pytest.raises(ConfigError, match=r"'temprature' is not an option.*'temperature'"):
        TemplatedOptions.model_validate({"grader_key": "k", "model": judge, "temprature": 0.1})
    with pytest.raises(ConfigError, match=r"config: unknown key\(s\) \['bogus'\]"):
        ScorerConfig.model_validate({"model": "m", "prompt_template": "x", "bogus": 1})
    with pytest.raises(ConfigError, match="config must be an object, got list"):
        ScorerConfig.model_validate([1])
    with pytest.raises(ConfigError, match="model"):
        OpenAIModelOptions(base_url="http://127.0.0.1:9/v1", model="")
    assert TemplatedOptions(grader_key="k", model=judge, train_penalty=-2).train_penalty == -2.0
