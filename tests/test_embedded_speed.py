"""Issue 15, the embedded judge in seconds: bounded verdicts, a fitted reply budget, the
server's structured-output form known at spawn, and the candidate protocol as a grammar; issue
25: the sealed verdict line (a label, a declared form) as a grammar.

No timings are asserted: what is checked is what makes replies short and readable."""

from __future__ import annotations

import json
import logging

import pytest

from rewardjudge import StringThread
from rewardjudge.errors import ConfigError
from rewardjudge.graders._candidate_judge import CandidateJudgeGrader
from rewardjudge.readouts._candidate_blocks import candidate_grammar, read_candidate_reply
from rewardjudge.graders._outputs import (REASONING_MAX_CHARS, BinaryJudgeOutput, GradedJudgeOutput,
                                         fitted_max_tokens)
from rewardjudge.readouts._forms import VerdictForm, _offered
from rewardjudge.readouts._gbnf import NUMBER, verdict_line_grammar
from rewardjudge.readouts._seal import read_sealed

SEAL = "0123456789abcdef"


def read_alone(reply: str, model):
    """A sealed reply's verdict (the seal written on it, as an obedient judge would)."""
    body = reply.strip()[1:-1]
    sealed = f'{{"seal": "{SEAL}", {body}, "seal_end": "{SEAL}"}}'
    return read_sealed(sealed, SEAL, check=model.model_validate).value
from rewardjudge.graders.templated_prompt_judge import SEAL_TOKENS, TemplatedPromptJudgeGrader
from rewardjudge.models import OpenAIModel
from rewardjudge.models._base import Completion
from rewardjudge.models._spawn import JudgeServer, server_command
from rewardjudge.scales import Scale
from rewardjudge.testing import ScriptedModel, request_seal


# -- 1. bounded reasoning, fitted max_tokens ---------------------------------------------
@pytest.mark.parametrize("model", [BinaryJudgeOutput, GradedJudgeOutput])
def test_the_schema_states_the_reasoning_bound(model):
    prop = model.model_json_schema()["properties"]["reasoning"]
    assert prop["type"] == "string" and prop["maxLength"] == REASONING_MAX_CHARS


@pytest.mark.parametrize("model, score", [(BinaryJudgeOutput, '"PASS"'), (GradedJudgeOutput, "3")])
def test_a_longer_reasoning_is_cut_not_refused(model, score):
    long = "The answer names the right city and explains why. " * 40
    verdict = read_alone(f'{{"reasoning": "{long}", "score": {score}}}', model)
    assert len(verdict.reasoning) <= REASONING_MAX_CHARS
    assert long.startswith(verdict.reasoning[:-1]) and verdict.reasoning.endswith("\u2026")
    assert verdict.to_value() in (1.0, 0.75)
    # a reasoning within the bound is kept as written
    short = model.model_validate({"reasoning": "Fine.", "score": json.loads(score)})
    assert short.reasoning == "Fine."


def test_a_raw_line_break_inside_the_reasoning_is_read():
    """llama-cpp-python's schema grammar lets a raw line break into a JSON string."""
    verdict = read_alone('{ "reasoning": "Right:\n" ,"score" :"PASS"}', BinaryJudgeOutput)
    assert verdict.score == "PASS" and verdict.reasoning == "Right:\n"


def test_max_tokens_is_fitted_to_the_output_model_by_default():
    fitted = fitted_max_tokens(BinaryJudgeOutput)
    # room for the whole bounded reasoning at 2 characters a token, and well under 512
    assert REASONING_MAX_CHARS // 2 < fitted < 256
    model = ScriptedModel(['{"reasoning": "ok", "score": "PASS"}'])
    grader = TemplatedPromptJudgeGrader("g", model, "", "{{completion}}")
    # plus the seal field's room (a verdict cut before its seal is never read)
    assert grader.params.max_tokens == fitted + SEAL_TOKENS
    graded = TemplatedPromptJudgeGrader("g", model, "", "{{completion}}", GradedJudgeOutput)
    assert graded.params.max_tokens == fitted_max_tokens(GradedJudgeOutput) + SEAL_TOKENS
    unsealed = TemplatedPromptJudgeGrader("g", model, "", "{{completion}}", seal=False)
    assert unsealed.params.max_tokens == fitted
    # an explicit value, None, or an unbounded model keep what they say
    assert TemplatedPromptJudgeGrader("g", model, "", "{{completion}}", max_tokens=64).params.max_tokens == 64
    assert TemplatedPromptJudgeGrader("g", model, "", "{{completion}}", max_tokens=None).params.max_tokens is None

    from pydantic import BaseModel, Field

    class Unbounded(BaseModel):
        reasoning: str
        score: int = Field(ge=0, le=1)

    assert fitted_max_tokens(Unbounded) is None
    assert TemplatedPromptJudgeGrader("g", model, "", "{{completion}}", Unbounded).params.max_tokens == 512
    # not schema-constrained: the reply is not bounded by the schema either
    assert TemplatedPromptJudgeGrader("g", model, "", "{{completion}}",
                                      structured=False).params.max_tokens == 512


async def test_the_fitted_budget_and_bounded_schema_are_sent():
    model = ScriptedModel(['{"reasoning": "ok", "score": "PASS"}'])
    grader = TemplatedPromptJudgeGrader("g", model, "", "{{completion}}")
    grade = await grader.grade(StringThread([("user", "q"), ("assistant", "a")]))
    assert grade.status == "scored"
    call = model.calls[0]
    assert call["params"].max_tokens == fitted_max_tokens(BinaryJudgeOutput) + SEAL_TOKENS
    assert call["json_schema"]["properties"]["reasoning"]["maxLength"] == REASONING_MAX_CHARS


# -- 2. the llama.cpp judge's form, known at spawn ------------------------------------------
def test_spawned_llama_cpp_model_uses_json_object_and_grammars():
    model = JudgeServer("llama_cpp", "/models/judge.bin").model()
    assert model.structured_output == "json_object"
    assert model.accepts_grammar and model.grammar_field == "grammar"
    other = JudgeServer("vllm", "some/model").model()
    assert other.structured_output == "json_schema" and not other.accepts_grammar


def test_spawned_llama_cpp_generates_on_half_the_cores(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    cmd = JudgeServer("llama_cpp", "/models/judge.bin").command
    assert cmd[cmd.index("--n_threads") + 1] == "1" and cmd[cmd.index("--n_threads_batch") + 1] == "2"
    cmd = JudgeServer("llama_cpp", "/models/judge.bin", n_threads=3).command
    assert cmd[cmd.index("--n_threads") + 1] == "3" and cmd[cmd.index("--n_threads_batch") + 1] == "3"
    cmd = server_command("llama_cpp", "/m", "127.0.0.1", 1, served_name="j", n_threads=1, n_threads_batch=4)
    assert cmd[cmd.index("--n_threads_batch") + 1] == "4"


async def test_json_object_first_request_goes_out_as_json_object(fake_server, caplog):
    """A model set up as spawn_judge sets it up never sends json_schema, so the llama.cpp
    500 is never met and nothing is learned by failing."""
    model = OpenAIModel(fake_server.url, "judge", structured_output="json_object",
                        grammar_field="grammar")
    fake_server.responder = lambda req: '{"reasoning": "ok", "score": "PASS"}'
    with caplog.at_level(logging.WARNING, logger="rewardjudge"):
        await model.chat([{"role": "user", "content": "v?"}],
                         json_schema=BinaryJudgeOutput.model_json_schema())
    await model.aclose()
    body = fake_server.requests[-1]
    assert body["response_format"]["type"] == "json_object"
    assert body["response_format"]["schema"]["properties"]["reasoning"]["maxLength"] == REASONING_MAX_CHARS
    assert len(fake_server.requests) == 1 and "refused" not in caplog.text


# -- 3. the candidate protocol as a grammar ---------------------------------------------------
def test_candidate_grammar_names_every_id_in_order_and_the_scale():
    g = candidate_grammar(["ab2cd3", "ef4gh5"], Scale.GRADED)
    lines = g.splitlines()
    assert lines[0] == "root ::= c0 c1"
    assert '<candidate id=\\"ab2cd3\\">' in lines[1] and '<candidate id=\\"ef4gh5\\">' in lines[2]
    # each block's grade is sealed with the block's own id
    assert '<grade id=\\"ab2cd3\\">\" grade' in lines[1] and '<grade id=\\"ef4gh5\\">\" grade' in lines[2]
    assert lines[-1] == 'grade ::= "0" | "1" | "2" | "3" | "4"'
    assert "{15,199}" in g  # 16 to 200 characters of reasoning, no angle brackets
    with pytest.raises(ConfigError):
        candidate_grammar(['a"b'], Scale.GRADED)
    with pytest.raises(ConfigError):
        candidate_grammar([], Scale.GRADED)


async def test_grammar_is_sent_with_the_request_body(fake_server):
    model = OpenAIModel(fake_server.url, "judge", grammar_field="grammar")
    await model.chat([{"role": "user", "content": "x"}], grammar='root ::= "ok"')
    assert fake_server.requests[-1]["grammar"] == 'root ::= "ok"'
    plain = OpenAIModel(fake_server.url, "judge")
    with pytest.raises(ConfigError, match="grammar_field"):
        await plain.chat([{"role": "user", "content": "x"}], grammar='root ::= "ok"')
    await model.aclose()
    await plain.aclose()


class _GrammarModel(ScriptedModel):
    """Answers with the blocks a grammar-held judge writes, for the ids in its grammar."""

    accepts_grammar = True

    def __init__(self):
        super().__init__([])
        self.grammars: list[str] = []

    async def chat(self, messages, params=None, *, json_schema=None, grammar=None):
        import re

        self.grammars.append(grammar)
        ids = re.findall(r'<candidate id=\\"([a-z0-9]+)\\">', grammar or "")
        text = "".join(f'<candidate id="{i}">\n<reasoning>Reasonable answer here.</reasoning>\n'
                       f'<grade id="{i}">3</grade>\n</candidate>\n' for i in ids)
        return Completion(text=text, usage={"prompt_tokens": 10, "completion_tokens": 5})


async def test_candidate_grader_sends_its_protocol_grammar_where_the_model_takes_one():
    model = _GrammarModel()
    grader = CandidateJudgeGrader("c", model, batch_size=4, seed=0, max_tokens_per_candidate=96)
    samples = [StringThread([("user", "Capital of France?"), ("assistant", a)])
               for a in ("Paris.", "Lyon.", "Paris!")]
    grades = await grader.grade_batch(samples)
    assert [g.status for g in grades] == ["scored"] * 3 and len(model.grammars) == 1
    ids = grades[0].extra["requests"][0]["ids"]
    assert all(f'id=\\"{i}\\"' in model.grammars[0] for i in ids)
    # the reasoning bound fits the per-candidate token budget (96 - 56 tokens of tags and ids,
    # 3 chars each); a budget too small for any reasoning keeps the 16-character floor
    assert "{15,119}" in model.grammars[0]
    await CandidateJudgeGrader("c", model, max_tokens_per_candidate=48).grade_batch(samples[:1])
    assert "{15,15}" in model.grammars[-1]


async def test_candidate_grader_sends_no_grammar_to_other_models():
    model = ScriptedModel(['<candidate id="x">'])  # ScriptedModel.chat takes no grammar
    grader = CandidateJudgeGrader("c", model, max_rounds=1)
    grades = await grader.grade_batch([StringThread([("user", "q"), ("assistant", "a")])])
    assert grades[0].status == "unscored" and len(model.calls) == 1


# -- 4. the sealed verdict line as a grammar -------------------------------------------------
def test_the_verdict_line_grammar_forces_the_sealed_line_after_bounded_reasoning():
    assert verdict_line_grammar(SEAL, '"PASS" | "FAIL"', REASONING_MAX_CHARS, 512).splitlines() == [
        f'root ::= reason "\\nVERDICT {SEAL}: " ("PASS" | "FAIL")', r"reason ::= [^\x00-\x20] [^\x00-\x1f]{15,299}"]
    # the reasoning fits the reply budget (3 characters a token past 56 for the line), never under 16
    assert "{15,131}" in verdict_line_grammar(SEAL, '"x"', 300, 100)
    assert "{15,15}" in verdict_line_grammar(SEAL, '"x"', 300, 20)
    assert VerdictForm("Rating: [[{score}]]", bounds=(1, 10)).grammar() == \
        '"Rating: [[" (' + " | ".join(f'"{k}"' for k in range(1, 11)) + ') "]]"'
    assert VerdictForm("[[{label}]]", labels=("A>B", "B>A")).grammar() == '"[[" ("A>B" | "B>A") "]]"'
    assert VerdictForm("{other} {score}", bounds=(1, 3)).grammar() == NUMBER + ' " " ("1" | "2" | "3")'
    assert VerdictForm('"score": "{score}"').grammar() == '"\\"score\\": \\"" ' + NUMBER + ' "\\""'
    assert _offered((0, 1)) == ["0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9", "1"]
    assert _offered((0.5, 3.5)) == ["1", "2", "3"] and _offered((0, 10 ** 6)) == []


@pytest.mark.parametrize("pattern,bounds", [("Rating: [[{score}]]", (1, 10)), ("[[{score}]]", (0, 1)),
                                            ("[RESULT] {score}", (1, 5)), ("{score}", (-2, 2)),
                                            ('"score": "{score}"', (0, 100))])
def test_every_score_the_grammar_offers_is_read_back_within_bounds(pattern, bounds):
    form = VerdictForm(pattern, bounds=bounds)
    for v in _offered(form.bounds):
        assert form.read_line(" " + pattern.replace("{score}", v)) == float(v)


class _LineModel(ScriptedModel):
    """A judge held to a verdict-line grammar: a sentence, then the grammar's line with ``verdict``."""

    accepts_grammar = True

    def __init__(self, verdict: str):
        super().__init__([], seal=False)
        self.verdict, self.grammars = verdict, []

    async def chat(self, messages, params=None, *, json_schema=None, grammar=None):
        seal = request_seal(messages)
        self.grammars.append((seal, grammar))
        return Completion(text=f"A short, correct answer.\nVERDICT {seal}: {self.verdict}",
                          usage={"prompt_tokens": 10, "completion_tokens": 5})


@pytest.mark.parametrize("options,verdict,expected,value", [
    ({"structured": False}, "PASS", '"PASS" | "FAIL"', 1.0),
    ({"verdict_form": "Rating: [[{score}]]", "score_bounds": (1, 10)}, "Rating: [[7]]",
     '"Rating: [[" (' + " | ".join(f'"{k}"' for k in range(1, 11)) + ') "]]"', 7.0),
    ({"verdict_form": "[[{label}]]", "label_values": {"A>B": 1.0, "B>A": 0.0}}, "[[B>A]]",
     '"[[" ("A>B" | "B>A") "]]"', 0.0)])
async def test_a_verdict_line_grader_sends_its_sealed_line_grammar(options, verdict, expected, value):
    model = _LineModel(verdict)
    grader = TemplatedPromptJudgeGrader("line", model, "Grade the answer.", "{{completion}}", **options)
    grade = await grader.grade(StringThread([("user", "Capital of France?"), ("assistant", "Paris.")]))
    assert (grade.status, grade.value) == ("scored", value)
    (seal, grammar), = model.grammars
    assert grammar == verdict_line_grammar(seal, expected, REASONING_MAX_CHARS, grader.params.max_tokens)


async def test_json_and_unsealed_graders_send_no_line_grammar():
    model = _LineModel("PASS")
    sample = StringThread([("user", "q"), ("assistant", "a")])
    for options in ({}, {"structured": False, "seal": False},
                    {"verdict_form": "[[{score}]]", "score_bounds": (1, 10), "seal": False}):
        await TemplatedPromptJudgeGrader("line", model, "Grade.", "{{completion}}", reply_retries=0,
                                         **options).grade(sample)
    assert [g for _, g in model.grammars] == [None, None, None]


# -- on the real embedded judge -----------------------------------------------------------------
@pytest.mark.judge
async def test_the_candidate_grammar_gives_valid_blocks_on_the_embedded_judge():
    from rewardjudge.models import spawn_judge

    samples = [StringThread([("user", "What is the capital of France?"), ("assistant", a)])
               for a in ("Paris.", "Lyon.", "Paris, on the Seine.", "I do not know.")]
    async with spawn_judge() as judge:
        assert judge.accepts_grammar and judge.structured_output == "json_object"
        grader = CandidateJudgeGrader("e2e", judge, batch_size=4, seed=0, max_rounds=1)
        grades = await grader.grade_batch(samples)
        # without the grammar the same judge writes <submission>/<response> blocks: 0 valid
        ids = grades[0].extra["requests"][0]["ids"]
        assert read_candidate_reply(grades[0].raw_reply, ids, Scale.GRADED).verdicts.keys() == set(ids)
    assert [g.status for g in grades] == ["scored"] * 4
    for g in grades:
        assert Scale.GRADED.contains(g.extra["grade"]) and g.extra["rounds"] == 1
        assert g.reasoning and 16 <= len(g.reasoning) <= 200


@pytest.mark.judge
async def test_bounded_verdicts_on_the_embedded_judge():
    from rewardjudge import catalog
    from rewardjudge.models import spawn_judge

    samples = [StringThread([("user", q), ("assistant", a)]) for q, a in
               [("Explain photosynthesis briefly.", "Plants turn light, water and CO2 into sugar."),
                ("What is 17 * 23?", "401"), ("Write a haiku about rain.", "Rain taps on the roof")]]
    async with spawn_judge() as judge:
        for output in ("binary", "graded"):
            grader = catalog.grader("completeness", judge, output=output)
            for sample in samples:
                grade = await grader.grade(sample)
                assert grade.status == "scored", grade.error
                assert grade.usage["completion_tokens"] <= grader.params.max_tokens
                assert len(grade.reasoning) <= REASONING_MAX_CHARS


@pytest.mark.judge
async def test_verdict_lines_are_scored_on_the_embedded_judge():
    """The label form of an unstructured prompt and declared forms: without the line's grammar
    this judge echoed the instruction's example line (0 of 12 scored in ``bench embedded``)."""
    from rewardjudge.models import spawn_judge

    samples = [StringThread([("user", q), ("assistant", a)]) for q, a in
               [("What is the capital of France?", "Paris."), ("What is 17 * 23?", "391"),
                ("Give one tip to sleep better.", "Go to bed at the same time every day.")]]
    ask = "Question: {{last_user_turn_content}}\nAnswer: {{completion}}\n"
    async with spawn_judge() as judge:
        graders = [TemplatedPromptJudgeGrader("label", judge, "You grade answers.", ask + "Respond with PASS or FAIL.",
                                              structured=False, reply_retries=0),
                   TemplatedPromptJudgeGrader("rating", judge, "You rate answers from 1 to 10.",
                                              ask + "Rate it as Rating: [[N]].", verdict_form="Rating: [[{score}]]",
                                              score_bounds=(1, 10), reply_retries=0),
                   TemplatedPromptJudgeGrader("verdict", judge, "You judge answers.", ask + "Say [[good]] or [[bad]].",
                                              verdict_form="[[{label}]]", label_values={"good": 1.0, "bad": 0.0},
                                              reply_retries=0)]
        for grader in graders:
            for sample in samples:
                grade = await grader.grade(sample)
                assert grade.status == "scored", (grader.grader_key, grade.error, grade.raw_reply)
                assert grade.raw_reply.splitlines()[-1].startswith("VERDICT ")
                assert grade.usage["completion_tokens"] <= grader.params.max_tokens
