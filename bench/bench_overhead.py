"""CPU the grader adds per grade, judge excluded.

Stages of one grade, each timed on its own (CPU time of this process, best
of 3 rounds), for a typical judge prompt with 1 candidate
(``TemplatedPromptJudgeGrader``) and for 8 candidates rendered through one
``Template`` with an ``{{#each}}`` block and answered with 8 verdicts:

* context: the template context built from the sample
* render: the system and user prompts rendered (plain-data conversion included)
* seal: the request's seal (a keyed hash over every message) and its instruction
* request: the chat-completions JSON body built and encoded
* reply: the HTTP body parsed into a ``Completion``
* verdict: the judge's JSON verdict parsed and validated into the output model
* grade: the ``Grade`` built (``version`` cached; the uncached hash is shown apart)
* whole grade: ``grader.grade(sample)`` end to end over a ``ScriptedModel``
  (an in-process judge that answers at once), event-loop work included;
  the two rows after it say how much of that is the ``ScriptedModel``'s own
  ``chat`` on the request the grader sends (it records the call, counts prompt
  words, and finds the seal in the request to write it on its reply) and one
  ``run_until_complete`` of an empty coroutine, and the row after those is
  what is left: the grader's own CPU.

Every sample and context is a different one (4096 of them, cycled): the
grader remembers renders whose inputs repeat (the system prompt), so one
sample graded over and over would show a cost no real batch has.

Figures are printed as microseconds measured in this run and as a share of a
100 ms judge call: the ratio is the claim, the microseconds are context.

Run: ``python -m bench.bench_overhead``.
"""

from __future__ import annotations

import asyncio
import json
from typing import Literal

from pydantic import BaseModel, Field

from .common import (CRITERIA, MULTI_TEMPLATE, SYSTEM_TEMPLATE, USER_TEMPLATE, cpu_per_call, emit,
                     print_table, sample_thread)

JUDGE_LATENCY_S = 0.1


class CandidateVerdict(BaseModel):
    id: str = Field(description="The candidate's id, as given")
    reasoning: str = Field(description="One sentence of reasoning")
    score: int = Field(ge=1, le=5, description="1 (very poor) to 5 (excellent)")


class MultiVerdict(BaseModel):
    grades: list[CandidateVerdict]

    def to_value(self) -> float:
        return sum(g.score for g in self.grades) / len(self.grades)


def _chat_reply(content: str) -> bytes:
    from rewardjudge.testing import _completion_body

    return _completion_body(content, "fake-judge", 400, chat=True)


_SEAL = "0123456789abcdef"
_SEALED: dict[str, str] = {}


def _read_verdict(text: str, model):
    """The verdict model read from a judge reply as the graders read it: the
    reply sealed as an obedient judge writes it (made once per text), then the
    sealed readout."""
    from rewardjudge.readouts._seal import json_instruction, read_sealed
    from rewardjudge.testing import seal_reply

    sealed = _SEALED.get(text)
    if sealed is None:
        sealed = _SEALED[text] = seal_reply(text, [{"role": "user", "content": json_instruction(_SEAL)}])
    return read_sealed(sealed, _SEAL, check=model.model_validate).value


def _payload(messages, params, schema) -> bytes:
    # the body OpenAIModel sends: model, messages, sampling params, response_format
    payload = {"model": "fake-judge", "messages": messages, **params.as_dict(),
               "response_format": {"type": "json_schema",
                                   "json_schema": {"name": "reply", "schema": schema, "strict": True}}}
    return json.dumps(payload).encode()


def stages_one() -> dict[str, float]:
    from rewardjudge.core.structured_output import render_schema  # noqa: F401 (warm import)
    from rewardjudge.grade import Grade
    from rewardjudge._hash import canonical_hash as config_hash
    from rewardjudge.graders._outputs import output_value
    from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
    from rewardjudge.models._openai_compat import _parse_chat_body
    from rewardjudge.testing import DEFAULT_REPLY, ScriptedModel

    model = ScriptedModel(default=DEFAULT_REPLY)
    grader = TemplatedPromptJudgeGrader("bench", model, SYSTEM_TEMPLATE, USER_TEMPLATE,
                                        template_variables={"criteria": CRITERIA})
    samples = [sample_thread(i) for i in range(_DISTINCT)]
    contexts = [grader.extract_template_context(s, grader.output_model, grader.template_variables)
                for s in samples]
    next_sample, next_context = _cycle(samples), _cycle(contexts)
    sample, ctx = samples[7], contexts[7]
    messages = grader.build_messages(ctx)
    # the request the judge gets: the seal instruction last, the wire schema
    sent, wire_schema, *_ = grader.sealed_request(messages, [ctx["completion"]])
    next_messages = _cycle([grader.build_messages(c) for c in contexts])
    reply = _chat_reply(DEFAULT_REPLY)
    verdict = _read_verdict(DEFAULT_REPLY, grader.output_model)

    def make_grade():
        return Grade(value=output_value(verdict), grader_key=grader.grader_key,
                     reasoning=verdict.reasoning, status="scored", raw_reply=DEFAULT_REPLY,
                     usage={"prompt_tokens": 400}, attempts=1, latency_s=0.1,
                     grader_version=grader.version, extra={"verdict": verdict.model_dump(mode="json")})

    loop = asyncio.new_event_loop()

    def whole():
        model.calls.clear()
        loop.run_until_complete(grader.grade(next_sample()))

    def scripted():
        # the scripted judge's own work on the request the grader sends (sealing its
        # reply included): the judge's, not the grader's
        model.calls.clear()
        _drive(model.chat(sent, grader.params, json_schema=wire_schema))

    async def nothing():
        return None

    try:
        out = {
            "context": cpu_per_call(lambda: grader.extract_template_context(
                next_sample(), grader.output_model, grader.template_variables)),
            "render": cpu_per_call(lambda: grader.build_messages(next_context())),
            "seal": cpu_per_call(lambda: grader.sealed_request(next_messages(), ())),
            "request": cpu_per_call(lambda: _payload(sent, grader.params, wire_schema)),
            "reply": cpu_per_call(lambda: _parse_chat_body(reply, 0.1, structured=True)),
            "verdict": cpu_per_call(lambda: output_value(_read_verdict(DEFAULT_REPLY,
                                                                        grader.output_model))),
            "grade": cpu_per_call(make_grade),
            "whole grade": cpu_per_call(whole),
            "- of it, ScriptedModel.chat": cpu_per_call(scripted),
            "- of it, the event loop": cpu_per_call(lambda: loop.run_until_complete(nothing())),
            "version (uncached)": cpu_per_call(lambda: config_hash(grader.config())[:16]),
        }
        out["= whole grade, grader only"] = (out["whole grade"] - out["- of it, ScriptedModel.chat"]
                                             - out["- of it, the event loop"])
        return out
    finally:
        loop.close()


_DISTINCT = 4096


def _cycle(items):
    """A function returning the next of ``items``, round and round."""
    state = [0]

    def following():
        state[0] = (state[0] + 1) % len(items)
        return items[state[0]]

    return following


def _drive(coro):
    """Run a coroutine that never suspends (ScriptedModel.chat without delay), loop-free."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise RuntimeError("the coroutine suspended")


def stages_eight() -> dict[str, float]:
    from rewardjudge.core.structured_output import render_schema
    from rewardjudge.graders._outputs import output_value
    from rewardjudge.models._base import GenerationParams
    from rewardjudge.models._openai_compat import _parse_chat_body
    from rewardjudge.readouts._seal import Sealer, json_instruction, seal_messages
    from rewardjudge.templates import Template

    template = Template(MULTI_TEMPLATE, name="multi")
    question = sample_thread(3).last_user_content()
    answers = [sample_thread(i).completion() for i in range(8)]
    ids = [f"c{i:02d}x" for i in range(8)]
    verdict_text = json.dumps({"grades": [
        {"id": cid, "reasoning": "Correct and complete, with a brief explanation.", "score": 4}
        for cid in ids]})
    reply = _chat_reply(verdict_text)
    params = GenerationParams(temperature=0.0, max_tokens=512)
    schema = MultiVerdict.model_json_schema()

    def context():
        return {"n": 8, "question": question, "output_schema": render_schema(MultiVerdict),
                "candidates": [{"id": cid, "text": a} for cid, a in zip(ids, answers)]}

    ctx = context()
    messages = [{"role": "user", "content": template.render(ctx)}]
    # distinct contexts: the same question over other answers each time
    pool = [sample_thread(i).completion() for i in range(_DISTINCT // 8 + 8)]
    distinct = [{**ctx, "candidates": [{"id": cid, "text": pool[k + j]} for j, cid in enumerate(ids)]}
                for k in range(_DISTINCT // 8)]
    next_context = _cycle(distinct)
    rendered = _cycle([[{"role": "user", "content": template.render(c)}] for c in distinct])
    sealer = Sealer(_SEAL * 2)

    def seal():
        sent = rendered()
        return seal_messages(sent, json_instruction(sealer.value(sent)))

    return {
        "context": cpu_per_call(context),
        "render": cpu_per_call(lambda: template.render(next_context())),
        "seal": cpu_per_call(seal),
        "request": cpu_per_call(lambda: _payload(messages, params, schema)),
        "reply": cpu_per_call(lambda: _parse_chat_body(reply, 0.1, structured=True)),
        "verdict": cpu_per_call(lambda: output_value(_read_verdict(verdict_text, MultiVerdict))),
    }


_STAGES = ("context", "render", "seal", "request", "reply", "verdict", "grade")


def _pct(seconds: float) -> str:
    return f"{100 * seconds / JUDGE_LATENCY_S:.3f}%"


def main(argv: list[str] | None = None) -> dict:
    one = stages_one()
    eight = stages_eight()
    per_grade_1 = sum(v for k, v in one.items() if k in _STAGES)
    per_grade_8 = sum(eight.values())
    rows = []
    for stage in one:
        e = eight.get(stage)
        rows.append([stage, one[stage] * 1e6, None if e is None else e * 1e6,
                     _pct(one[stage]), None if e is None else _pct(e)])
    rows.append(["sum of stages", per_grade_1 * 1e6, per_grade_8 * 1e6,
                 _pct(per_grade_1), _pct(per_grade_8)])
    print_table("Grader CPU per grade, judge excluded (us measured in this run, and as a "
                "percentage of one 100 ms judge call)",
                ["stage", "1 cand. us", "8 cand. us", "1 cand. % of 100 ms", "8 cand. % of 100 ms"], rows)
    out = {"us_1_candidate": {k: round(v * 1e6, 2) for k, v in one.items()},
           "us_8_candidates": {k: round(v * 1e6, 2) for k, v in eight.items()},
           "share_of_100ms_1": per_grade_1 / JUDGE_LATENCY_S,
           "share_of_100ms_8": per_grade_8 / JUDGE_LATENCY_S,
           "whole_grade_share_of_100ms": one["whole grade"] / JUDGE_LATENCY_S,
           "version_cache_speedup": one["version (uncached)"] / max(one["grade"], 1e-12)}
    emit("overhead", out)
    return out


if __name__ == "__main__":
    main()
