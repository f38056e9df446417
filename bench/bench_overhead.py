"""CPU the grader adds per grade, judge excluded.

``TemplatedPromptJudgeGrader.grade(sample)`` (a typical judge prompt, 1 candidate) over a
``ScriptedModel`` (an in-process judge that answers at once), in the stages it calls:

* screen: ``screen``, the completion's content-free screen
* context: ``context_of``, the template context
* render: ``build_messages``, the system and user prompts
* seal: ``sealed_request``, the seal and its instruction
* read: ``_read_sealed``, the reply's sealed readout, the verdict validated
* grade: ``verdict_extra`` and ``scored``, the verdict dumped and the ``Grade`` built
  (``version`` cached; the uncached hash is shown apart)
* glue: the rest (coroutines, checks, the reply-retry loop): the whole grade less the
  stages, the ``ScriptedModel``'s own ``chat`` and an empty ``run_until_complete``
  ("grader only" is the whole grade less those two)

"alone": each stage in a loop of its own (CPU time, best of 3 rounds) over the arguments
the grader passed it, caches hot. "in grade": CPU-time timers (``process_time``) around the same
methods during whole grades (the fastest of 5 rounds of 1,024); the stages hold part of
the "timers' own cost", so glue is short by at most that. Each for a pure-ASCII sample and
for one with a curly quote and an en dash in question and answer, 4,096 distinct samples
cycled (the grader remembers renders whose inputs repeat).

Beside them, 8 candidates rendered through one ``Template`` with ``{{#each}}``, sealed,
and their 8 verdicts read (alone). The transport (request body built, HTTP reply parsed)
is no part of a grade over a ``ScriptedModel``: it is shown apart.

Microseconds measured in this run, and shares of a 100 ms judge call: the ratio is the
claim, the microseconds are context.

Run: ``python -m bench.bench_overhead``.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections import defaultdict
from contextlib import contextmanager

from pydantic import BaseModel, Field

from .common import (CRITERIA, MULTI_TEMPLATE, SYSTEM_TEMPLATE, USER_TEMPLATE, cpu_per_call, emit,
                     print_table, sample_thread)

JUDGE_LATENCY_S = 0.1
_DISTINCT = 4096
_SEAL = "0123456789abcdef"

#: the grader's methods that make each stage of one grade
_STAGE_METHODS = {"screen": ("screen",), "context": ("context_of",), "render": ("build_messages",),
                  "seal": ("sealed_request",), "read": ("_read_sealed",), "grade": ("verdict_extra", "scored")}
_STAGES = tuple(_STAGE_METHODS)
_JUDGE, _LOOP = "- of it, ScriptedModel.chat", "- of it, the event loop"
_ONLY, _TIMERS = "= whole grade, grader only", "timers' own cost"
_ROWS = (*_STAGES, "sum of stages", "glue", _ONLY, "whole grade", _JUDGE, _LOOP, "version (uncached)", _TIMERS)


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


def _payload(messages, params, schema) -> bytes:
    # the body OpenAIModel sends: model, messages, sampling params, response_format
    payload = {"model": "fake-judge", "messages": messages, **params.as_dict(),
               "response_format": {"type": "json_schema",
                                   "json_schema": {"name": "reply", "schema": schema, "strict": True}}}
    return json.dumps(payload).encode()


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


async def _nothing():
    return None


# --------------------------------------------------------------------------
# one candidate: a grader over a ScriptedModel
# --------------------------------------------------------------------------
@contextmanager
def _wrapped(grader, model, wrap):
    """The grader's stage methods and the judge's ``chat`` replaced, on the instances, by
    ``wrap(name, stage, method)`` for the block (``chat`` is the stage ``"judge"``)."""
    names = [(name, stage) for stage, group in _STAGE_METHODS.items() for name in group]
    for name, stage in names:
        grader.__dict__[name] = wrap(name, stage, getattr(grader, name))
    model.__dict__["chat"] = wrap("chat", "judge", model.chat)
    try:
        yield
    finally:
        for name, _ in names:
            del grader.__dict__[name]
        del model.__dict__["chat"]


def _record(grader, model, loop, samples) -> dict[str, list]:
    """Each stage method's ``(args, kwargs)`` over one grade of every sample."""
    calls: dict[str, list] = defaultdict(list)

    def wrap(name, stage, method):
        log = calls[name]
        if name == "chat":
            async def recorded_chat(*args, **kw):
                log.append((args, kw))
                return await method(*args, **kw)
            return recorded_chat

        def recorded(*args, **kw):
            log.append((args, kw))
            return method(*args, **kw)
        return recorded

    with _wrapped(grader, model, wrap):
        for sample in samples:
            model.calls.clear()
            grade = loop.run_until_complete(grader.grade(sample))
            assert grade.status == "scored", grade
    assert all(len(v) == len(samples) for v in calls.values()), {k: len(v) for k, v in calls.items()}
    return calls


def _with_rest(out: dict[str, float]) -> dict[str, float]:
    """``out`` with the sum of its stages, the grader's share of the whole grade and the glue."""
    out["sum of stages"] = sum(out[s] for s in _STAGES)
    out[_ONLY] = out["whole grade"] - out[_JUDGE] - out[_LOOP]
    out["glue"] = out[_ONLY] - out["sum of stages"]
    return out


def _alone(grader, model, loop, samples, calls) -> dict[str, float]:
    """Each stage in a loop of its own over the arguments the grader passed it (CPU time)."""
    from rewardjudge._hash import canonical_hash

    def replay(name, method):
        following = _cycle(calls[name])

        def call():
            args, kw = following()
            return method(*args, **kw)
        return call

    out = {}
    for stage, names in _STAGE_METHODS.items():
        steps = [replay(n, getattr(grader, n)) for n in names]

        def stage_calls(steps=steps):
            for step in steps:
                step()
        out[stage] = cpu_per_call(steps[0] if len(steps) == 1 else stage_calls)
    chat = replay("chat", model.chat)
    next_sample = _cycle(samples)

    def judge():
        model.calls.clear()
        _drive(chat())

    def whole():
        model.calls.clear()
        loop.run_until_complete(grader.grade(next_sample()))

    out.update({"whole grade": cpu_per_call(whole), _JUDGE: cpu_per_call(judge),
                _LOOP: cpu_per_call(lambda: loop.run_until_complete(_nothing())),
                "version (uncached)": cpu_per_call(lambda: canonical_hash(grader.config())[:16])})
    return _with_rest(out)


def _in_grade(grader, model, loop, samples, *, rounds: int = 5, n: int = 1024) -> dict[str, float]:
    """Each stage timed inside whole grades (CPU-time timers around the grader's methods),
    from the round of least time; the whole grade and the empty loop untimed, best round."""
    clock = time.process_time
    spent = dict.fromkeys((*_STAGES, "judge"), 0.0)

    def wrap(name, stage, method):
        if name == "chat":
            async def timed_chat(*args, **kw):
                t0 = clock()
                try:
                    return await method(*args, **kw)
                finally:
                    spent[stage] += clock() - t0
            return timed_chat

        def timed(*args, **kw):
            t0 = clock()
            try:
                return method(*args, **kw)
            finally:
                spent[stage] += clock() - t0
        return timed

    timers = _timer_cost(wrap)
    next_sample = _cycle(samples)

    def per_grade(make) -> float:
        t0 = clock()
        for _ in range(n):
            model.calls.clear()
            loop.run_until_complete(make())
        return (clock() - t0) / n

    whole = empty = timed_whole = math.inf
    best: dict[str, float] = {}
    for _ in range(rounds):
        whole = min(whole, per_grade(lambda: grader.grade(next_sample())))
        empty = min(empty, per_grade(_nothing))
        spent.update(dict.fromkeys(spent, 0.0))
        with _wrapped(grader, model, wrap):
            total = per_grade(lambda: grader.grade(next_sample()))
        if total < timed_whole:
            timed_whole, best = total, {k: v / n for k, v in spent.items()}
    out = {**{s: best[s] for s in _STAGES}, "whole grade": whole, _JUDGE: best["judge"], _LOOP: empty,
           _TIMERS: timers}
    return _with_rest(out)


def _timer_cost(wrap) -> float:
    """CPU the timers of ``_in_grade`` add to one grade: ``wrap`` around a method that does
    nothing, less that method, for each method timed (a synchronous one per method, an
    asynchronous one for the judge's ``chat``)."""
    def noop(*args, **kw):
        return None

    async def anoop(*args, **kw):
        return None

    timed, timed_chat = wrap("noop", _STAGES[0], noop), wrap("chat", "judge", anoop)
    per_method = cpu_per_call(timed) - cpu_per_call(noop)
    per_chat = cpu_per_call(lambda: _drive(timed_chat())) - cpu_per_call(lambda: _drive(anoop()))
    return sum(map(len, _STAGE_METHODS.values())) * per_method + per_chat


def _grader():
    from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
    from rewardjudge.testing import DEFAULT_REPLY, ScriptedModel

    model = ScriptedModel(default=DEFAULT_REPLY)
    grader = TemplatedPromptJudgeGrader("bench", model, SYSTEM_TEMPLATE, USER_TEMPLATE,
                                        template_variables={"criteria": CRITERIA})
    return grader, model


def stages_one(*, typographic: bool = False) -> tuple[dict[str, float], dict[str, float], dict[str, float]]:
    """``(alone, in grade, transport)`` of one-candidate grades."""
    from rewardjudge.models._openai_compat import _parse_chat_body

    grader, model = _grader()
    samples = [sample_thread(i, typographic=typographic) for i in range(_DISTINCT)]
    loop = asyncio.new_event_loop()
    try:
        calls = _record(grader, model, loop, samples)
        alone = _alone(grader, model, loop, samples, calls)
        in_grade = _in_grade(grader, model, loop, samples)
    finally:
        loop.close()
    (sent, params), kw = calls["chat"][7]
    reply = _chat_reply(calls["_read_sealed"][7][0][-1])   # the reply text: the last argument
    transport = {"request": cpu_per_call(lambda: _payload(sent, params, kw["json_schema"])),
                 "reply": cpu_per_call(lambda: _parse_chat_body(reply, 0.1, structured=True))}
    return alone, in_grade, transport


# --------------------------------------------------------------------------
# eight candidates: one Template, one sealed reply of 8 verdicts
# --------------------------------------------------------------------------
def _read_verdicts(sealed: str, model):
    """The verdict model read from a sealed judge reply, as the graders read one."""
    from rewardjudge.readouts._seal import read_sealed

    return read_sealed(sealed, _SEAL, check=model.model_validate).value


def stages_eight() -> tuple[dict[str, float], dict[str, float]]:
    """``(stages, transport)`` of 8 candidates in one request (alone)."""
    from rewardjudge.core.structured_output import render_schema
    from rewardjudge.graders._outputs import output_value
    from rewardjudge.models._base import GenerationParams
    from rewardjudge.models._openai_compat import _parse_chat_body
    from rewardjudge.readouts._seal import Sealer, json_instruction, seal_messages
    from rewardjudge.templates import Template
    from rewardjudge.testing import seal_reply

    template = Template(MULTI_TEMPLATE, name="multi")
    question = sample_thread(3).last_user_content()
    answers = [sample_thread(i).completion() for i in range(8)]
    ids = [f"c{i:02d}x" for i in range(8)]
    verdict_text = json.dumps({"grades": [
        {"id": cid, "reasoning": "Correct and complete, with a brief explanation.", "score": 4}
        for cid in ids]})
    sealed = seal_reply(verdict_text, [{"role": "user", "content": json_instruction(_SEAL)}])
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

    stages = {"context": cpu_per_call(context),
              "render": cpu_per_call(lambda: template.render(next_context())),
              "seal": cpu_per_call(seal),
              "read": cpu_per_call(lambda: output_value(_read_verdicts(sealed, MultiVerdict)))}
    stages["sum of stages"] = sum(stages.values())
    transport = {"request": cpu_per_call(lambda: _payload(messages, params, schema)),
                 "reply": cpu_per_call(lambda: _parse_chat_body(reply, 0.1, structured=True))}
    return stages, transport


# --------------------------------------------------------------------------
# the tables
# --------------------------------------------------------------------------
def _pct(seconds: float | None) -> str | None:
    return None if seconds is None else f"{100 * seconds / JUDGE_LATENCY_S:.3f}%"


def _us(figures: dict[str, float]) -> dict[str, float]:
    return {k: round(v * 1e6, 2) for k, v in figures.items()}


def main(argv: list[str] | None = None) -> dict:
    ascii_alone, ascii_in, transport_1 = stages_one()
    typo_alone, typo_in, _ = stages_one(typographic=True)
    eight, transport_8 = stages_eight()
    columns = (ascii_alone, ascii_in, typo_alone, typo_in, eight)
    rows = [[row, *(None if c.get(row) is None else c[row] * 1e6 for c in columns),
             _pct(ascii_in.get(row)), _pct(eight.get(row))] for row in _ROWS]
    print_table("Grader CPU per grade, judge excluded (us measured in this run, and as a percentage "
                "of one 100 ms judge call): each stage alone, and timed inside whole grades",
                ["stage", "ASCII alone", "ASCII in grade", "typographic alone", "typographic in grade",
                 "8 cand. alone", "ASCII in grade, % of 100 ms", "8 cand. alone, % of 100 ms"], rows)
    print_table("Transport, not in the whole grade (a ScriptedModel takes the messages as they are): "
                "us alone",
                ["step", "1 cand. us", "8 cand. us"],
                [[k, transport_1[k] * 1e6, transport_8[k] * 1e6] for k in transport_1])
    out = {"us_1_candidate": _us(ascii_alone), "us_1_candidate_in_grade": _us(ascii_in),
           "us_1_candidate_typographic": _us(typo_alone),
           "us_1_candidate_typographic_in_grade": _us(typo_in),
           "us_8_candidates": _us(eight),
           "us_transport": {"1_candidate": _us(transport_1), "8_candidates": _us(transport_8)},
           "share_of_100ms_1": ascii_in[_ONLY] / JUDGE_LATENCY_S,
           "share_of_100ms_8": eight["sum of stages"] / JUDGE_LATENCY_S,
           "whole_grade_share_of_100ms": ascii_alone["whole grade"] / JUDGE_LATENCY_S,
           "version_cache_speedup": ascii_alone["version (uncached)"] / max(ascii_alone["grade"], 1e-12)}
    emit("overhead", out)
    return out


if __name__ == "__main__":
    main()
