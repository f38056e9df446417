"""The one pipeline: shared steps every grader family is a configuration of.

sample -> screen -> context -> prompt (JudgePrompt) -> request (ask_until_parsed /
ask_distribution) -> readout -> Grade, scheduled by prompt group (grade_batch).
"""

from __future__ import annotations

import inspect
import json

import pytest

from rewardjudge import (BinaryJudgeOutput, CandidateJudgeGrader, Grade, ProbabilityJudgeGrader,
                         StringThread, TemplatedPromptJudgeGrader)
from rewardjudge.catalog import CriterionJudgeGrader
from rewardjudge.errors import ConfigError, JudgeHTTPError, TemplateVariableError
from rewardjudge.graders._base import Grader, JudgeFailure
from rewardjudge.graders._prompt import JudgePrompt
from rewardjudge.graders._schedule import balanced_chunks, groups, prompt_key
from rewardjudge.models._base import TokenDistribution
from rewardjudge.testing import ScriptedModel

PASS = '{"reasoning": "fine", "score": "PASS"}'


def thread(question: str, answer: str, **metadata) -> StringThread:
    return StringThread([("user", question), ("assistant", answer)], metadata=metadata)


def grade_three(messages, params, schema):
    """A candidate judge: grade 3 for every submission in the default prompt."""
    ids = [line.split('"')[1] for line in messages[-1]["content"].splitlines()
           if line.startswith("<submission id=")]
    return "\n".join(f'<candidate id="{i}"><reasoning>ok</reasoning><grade id="{i}">3</grade></candidate>'
                     for i in ids)


# --------------------------------------------------------------------------
# scheduling: one scheduler, groups by prompt
# --------------------------------------------------------------------------
def test_prompt_key_is_the_turns_before_the_completion_and_the_query():
    assert prompt_key(thread("q", "a")) == prompt_key(thread("q", "b"))
    assert prompt_key(thread("q", "a")) != prompt_key(thread("r", "a"))
    # a structured query tells prompts apart even when the turns agree
    assert prompt_key(thread("q", "a", query={"id": 1})) != prompt_key(thread("q", "a", query={"id": 2}))
    # other metadata does not
    assert prompt_key(thread("q", "a", eval=True)) == prompt_key(thread("q", "b"))


@pytest.mark.parametrize("n,size,expected", [
    (9, 8, [5, 4]),        # never 8 + 1: nobody judged alone by accident
    (8, 8, [8]),
    (17, 8, [6, 6, 5]),
    (3, 1, [1, 1, 1]),
    (0, 8, []),
])
def test_balanced_chunks(n, size, expected):
    chunks = balanced_chunks(list(range(n)), size)
    assert [len(c) for c in chunks] == expected
    assert [x for c in chunks for x in c] == list(range(n))   # order kept


def test_groups_keep_first_appearance_order():
    assert groups(["a1", "b1", "a2", "c1", "b2"], lambda s: s[0]) == [["a1", "a2"], ["b1", "b2"], ["c1"]]


class Recording(Grader):
    """A family that judges groups: records what the scheduler handed it."""

    judges_groups = True

    def __init__(self, fail_on: str | None = None, usage_error_on: str | None = None):
        super().__init__("rec")
        self.handed: list[list[str]] = []
        self.fail_on, self.usage_error_on = fail_on, usage_error_on

    async def grade(self, sample):
        return (await self.grade_group([sample]))[0]

    async def grade_group(self, samples):
        self.handed.append([s.completion() for s in samples])
        question = samples[0].last_user_content()
        if question == self.fail_on:
            raise RuntimeError("boom")
        if question == self.usage_error_on:
            raise ConfigError("bad template")
        return [Grade(value=float(len(s.completion())), grader_key=self.grader_key) for s in samples]


async def test_grade_batch_hands_whole_prompt_groups_in_order():
    grader = Recording()
    samples = [thread("p", "a"), thread("q", "bb"), thread("p", "ccc"), thread("q", "dddd")]
    grades = await grader.grade_batch(samples)
    assert sorted(grader.handed) == [["a", "ccc"], ["bb", "dddd"]]
    assert [g.value for g in grades] == [1.0, 2.0, 3.0, 4.0]   # one Grade per sample, in input order


async def test_a_group_that_raises_is_unscored_and_a_usage_error_is_raised_after_the_rest():
    grader = Recording(fail_on="p")
    grades = await grader.grade_batch([thread("p", "a"), thread("q", "b"), thread("p", "c")])
    assert [g.status for g in grades] == ["unscored", "scored", "unscored"]
    assert "boom" in grades[0].error

    grader = Recording(usage_error_on="p")
    with pytest.raises(ConfigError, match="bad template"):
        await grader.grade_batch([thread("p", "a"), thread("q", "b")])
    assert ["b"] in grader.handed          # the other group was still graded


async def test_per_sample_families_get_one_request_per_sample():
    model = ScriptedModel(default=PASS)
    grader = TemplatedPromptJudgeGrader("t", model, "", "{{completion}}")
    await grader.grade_batch([thread("p", "a"), thread("p", "b"), thread("p", "c")])
    assert len(model.calls) == 3


async def test_a_candidate_group_costs_one_request_through_grade_batch():
    model = ScriptedModel(grade_three)
    grader = CandidateJudgeGrader("c", model, batch_size=8, seed=0)
    samples = [thread(q, f"{q}{k}") for k in range(3) for q in ("p", "q")]   # interleaved prompts
    grades = await grader.grade_batch(samples)
    assert len(model.calls) == 2 and all(g.status == "scored" for g in grades)


# --------------------------------------------------------------------------
# the context hook: one signature in every family
# --------------------------------------------------------------------------
@pytest.mark.parametrize("family", [TemplatedPromptJudgeGrader, CandidateJudgeGrader, CriterionJudgeGrader])
def test_extract_template_context_has_the_seed_signature(family):
    params = list(inspect.signature(family.extract_template_context).parameters)
    assert params[-3:] == ["thread", "output_model", "template_variables"]


async def test_candidate_templates_read_the_one_thread_vocabulary():
    model = ScriptedModel(default="")
    template = ("{{#each turns}}[{{role}}] {{content}}\n{{/each}}{{context_str}}|{{last_content}}|"
                "{{#each candidates}}<submission id=\"{{id}}\">{{title}}</submission>{{/each}}")
    grader = CandidateJudgeGrader("c", model, template=template, max_rounds=1)
    await grader.grade_batch([thread("What is 2+2?", "4")])
    sent = model.calls[0]["messages"][-1]["content"]
    # the vocabulary covers the group's turns before the completion; the completion is a candidate
    assert "[user] What is 2+2?" in sent and "[user]\nWhat is 2+2?" in sent
    assert "|What is 2+2?|" in sent


# --------------------------------------------------------------------------
# the prompt step
# --------------------------------------------------------------------------
def test_judge_prompt_messages_prefix_and_images():
    p = JudgePrompt("", "Q: {{q}}", prefix="Grade: ")
    assert p.messages({"q": "x"}) == [{"role": "user", "content": "Q: x"},
                                      {"role": "assistant", "content": "Grade: "}]
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
    msgs = JudgePrompt("sys", "Look:").messages({}, [image])
    assert msgs[0] == {"role": "system", "content": "sys"}
    assert msgs[1]["content"] == [{"type": "text", "text": "Look:"}, image]


def test_judge_prompt_checks_variables_and_knows_its_tags():
    p = JudgePrompt("<rubric>{{rubric}}</rubric>", "<response>{{completion}}</response>")
    assert p.variables == ["rubric", "completion"]
    assert set(p.tags) == {"rubric", "response"}
    with pytest.raises(TemplateVariableError, match="rubric"):
        p.check({"completion"})
    p.check(None)            # unknown before a real sample: no check
    JudgePrompt("{{x}}", "y", strict=False).check(set())   # lenient templates are not checked


async def test_a_jinja2_templated_grader_sends_what_the_handlebars_one_sends():
    hb_model, j_model = ScriptedModel(default=PASS), ScriptedModel(default=PASS)
    hb = TemplatedPromptJudgeGrader("t", hb_model, "Judge.", "Q: {{last_user_turn_content}}\nA: {{completion}}")
    jj = TemplatedPromptJudgeGrader("t", j_model, "Judge.", "Q: {{ last_user_turn_content }}\nA: {{ completion }}",
                                    engine="jinja2")
    sample = thread("2+2? <b>", "4 <|im_end|>")
    g1, g2 = await hb.grade(sample), await jj.grade(sample)
    assert hb_model.calls[0]["messages"] == j_model.calls[0]["messages"]
    assert g1.value == g2.value == 1.0
    assert jj.config()["engine"] == "jinja2" and hb.version != jj.version


def test_a_template_of_the_other_engine_is_refused_at_construction():
    with pytest.raises(ConfigError):
        TemplatedPromptJudgeGrader("t", ScriptedModel(), "", "{% if x %}y{% endif %}")
    with pytest.raises(ConfigError):
        TemplatedPromptJudgeGrader("t", ScriptedModel(), "", "{{#if completion}}y{{/if}}", engine="jinja2")


# --------------------------------------------------------------------------
# the request step
# --------------------------------------------------------------------------
class GrammarModel(ScriptedModel):
    accepts_grammar = True

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.grammars: list[str | None] = []

    async def chat(self, messages, params=None, *, json_schema=None, grammar=None):
        self.grammars.append(grammar)
        return await super().chat(messages, params, json_schema=json_schema)


async def test_ask_until_parsed_sends_a_grammar_only_when_given():
    model = GrammarModel(default="ok")
    grader = Recording()
    await grader.ask_until_parsed(model, [{"role": "user", "content": "x"}], None, str, grammar="root ::= \"ok\"")
    await grader.ask_until_parsed(ScriptedModel(default="ok"), [{"role": "user", "content": "x"}], None, str)
    assert model.grammars == ['root ::= "ok"']


async def test_ask_until_parsed_failure_keeps_the_judge_error():
    error = JudgeHTTPError(413, "too long", attempts=2)
    failure = await Recording().ask_until_parsed(ScriptedModel([error]), [{"role": "user", "content": "x"}],
                                                 None, str)
    assert isinstance(failure, JudgeFailure) and failure.error is error and failure.attempts == 2
    grade = await Recording().failed(failure)
    assert grade.status == "unscored" and grade.value is None and "413" in grade.error


class DistModel(ScriptedModel):
    continues_prefix = True

    def __init__(self, result):
        super().__init__()
        self.result = result
        self.asked: list = []

    async def grade_distribution(self, messages, choices, params=None):
        self.asked.append((list(messages), list(choices)))
        if isinstance(self.result, Exception):
            raise self.result
        return self.result


async def test_ask_distribution_is_the_one_probability_request():
    ok = DistModel(TokenDistribution({"0": 0.1, "1": 0.9}))
    dist = await Recording().ask_distribution(ok, [{"role": "user", "content": "x"}], ["0", "1"])
    assert dist.probs == {"0": 0.1, "1": 0.9}
    down = DistModel(JudgeHTTPError(503, "down", attempts=3))
    failure = await Recording().ask_distribution(down, [], ["0", "1"])
    assert isinstance(failure, JudgeFailure) and failure.attempts == 3


async def test_probability_grader_unscored_on_a_failed_distribution_request():
    grader = ProbabilityJudgeGrader("p", DistModel(JudgeHTTPError(503, "down", attempts=3)),
                                    scale="binary")
    grade = await grader.grade(thread("q", "a"))
    assert grade.status == "unscored" and grade.value is None and grade.attempts == 3
    assert "down" in grade.error


async def test_templated_expected_value_asks_through_the_distribution_step():
    model = DistModel(TokenDistribution({"PASS": 0.75, "FAIL": 0.25}))
    model._items = [PASS]
    grader = TemplatedPromptJudgeGrader("t", model, "", "{{completion}}", output_model=BinaryJudgeOutput,
                                        expected_value=True)
    grade = await grader.grade(thread("q", "a"))
    assert grade.value == pytest.approx(0.75) and grade.extra["sampled_value"] == 1.0
    (messages, choices), = model.asked
    assert messages[-1]["role"] == "assistant" and messages[-1]["content"].endswith('"score": "')
    assert sorted(choices) == ["FAIL", "PASS"]
    assert json.loads(grade.raw_reply)["score"] == "PASS"


async def test_probability_templates_read_the_one_thread_vocabulary():
    model = DistModel(TokenDistribution({"0": 0.2, "1": 0.8}))
    grader = ProbabilityJudgeGrader("p", model, scale="binary",
                                    user_template="Q: {{last_user_turn_content}}\nA: {{completion}}\n"
                                                  "{{question}}\n{{content}}")
    grade = await grader.grade(thread("2+2? <|im_end|>", "4"))
    (messages, _), = model.asked
    assert messages[-2]["content"].startswith("Q: 2+2? [|im_end|>\nA: 4\n")   # neutralised
    assert messages[-1] == {"role": "assistant", "content": "Grade: "}   # read right after it
    assert grade.value == pytest.approx(0.8)
    with pytest.raises(TemplateVariableError, match="rubric"):
        ProbabilityJudgeGrader("p", model, user_template="{{rubric}}")


def test_every_family_inherits_the_one_context_hook():
    for family in (TemplatedPromptJudgeGrader, CandidateJudgeGrader, ProbabilityJudgeGrader):
        assert "extract_template_context" not in vars(family)
    ctx = TemplatedPromptJudgeGrader.extract_template_context(thread("q", "a"), BinaryJudgeOutput,
                                                              {"rubric": "r"})
    assert ctx["last_user_turn_content"] == "q" and ctx["completion"] == "a" and ctx["rubric"] == "r"
    assert "score" in ctx["output_schema"]


async def test_a_grader_that_implements_no_step_is_a_usage_error():
    class Empty(Grader):
        pass

    with pytest.raises(ConfigError, match="neither judge"):
        await Empty("e").grade_batch([thread("q", "a")])


async def test_every_prompting_family_takes_a_jinja2_prompt():
    probability = ProbabilityJudgeGrader(
        "p", DistModel(TokenDistribution({"0": 0.5, "1": 0.5})), scale="binary",
        engine="jinja2", system_template="Grades {{ scale_min }}-{{ scale_max }}.",
        user_template="{% for t in context_turns %}{{ t.content }}{% endfor %} -> {{ completion }}")
    await probability.grade(thread("q?", "a!"))
    (messages, _), = probability.model.asked
    assert messages == [{"role": "system", "content": "Grades 0-1."}, {"role": "user", "content": "q? -> a!"},
                        {"role": "assistant", "content": "Grade: "}]

    model = ScriptedModel(default="")
    candidate = CandidateJudgeGrader(
        "c", model, engine="jinja2", max_rounds=1, system_template="",
        template="{{ query }}{% for c in candidates %}<submission id=\"{{ c.id }}\">{{ c.title }}</submission>"
                 "{% endfor %}")
    await candidate.grade_batch([thread("q?", "a!")])
    assert model.calls[0]["messages"][-1]["content"].startswith('q?<submission id="')


async def test_a_cached_grammar_judge_serves_the_candidate_grader():
    """CachedModel over a judge that takes a grammar (a spawned llama.cpp judge):
    the grammar reaches the judge, is part of the cache key, and a repeat is a hit."""
    from rewardjudge import CachedModel

    inner = GrammarModel(grade_three)
    cached = CachedModel(inner)
    grades = await CandidateJudgeGrader("c", cached, seed=0).grade_batch([thread("q", "a")])
    assert [g.status for g in grades] == ["scored"]
    assert len(inner.grammars) == 1 and "root" in inner.grammars[0]
    messages = [{"role": "user", "content": "x"}]
    assert cached.key(messages, grammar="root ::= \"a\"") != cached.key(messages, grammar="root ::= \"b\"")
    assert cached.key(messages) != cached.key(messages, grammar="root ::= \"a\"")
    await cached.chat(messages, grammar='root ::= "ok"')
    await cached.chat(messages, grammar='root ::= "ok"')
    assert cached.stats["hits"] == 1 and inner.grammars[-1] == 'root ::= "ok"'
