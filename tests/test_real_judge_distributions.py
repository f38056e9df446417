"""A declared distribution over named tokens reads real judges' next-token
probabilities as the benchmark reads them.

tests/data/real_judges/alpaca_eval_weighted.jsonl holds the first-token top
logprobs gpt-4-1106-preview returned for AlpacaEval 2.0's
``weighted_alpaca_eval_gpt4_turbo`` annotator (SOURCES.md names the files and
commit): the prompt asks for the identifier of the better output, ``m`` (the
output shown first) or ``M``, and the annotator reads the probability of
``m`` renormalised over ``m`` and ``M``. Each row's ``expected`` is that
parser's preference (``2 - p``: 1 prefers the first output, 2 the second) in
the order the judge saw the outputs. A ``ProbabilityJudgeGrader`` with
``tokens={"m": 1.0, "M": 0.0}`` is served each stored distribution over the
completions endpoint: its grade is ``2 - expected`` wherever at least
``min_valid_mass`` of the judge's probability fell on the two tokens, and
unscored on at most 1% of the replies.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "real_judges" / "alpaca_eval_weighted.jsonl"
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def _rows() -> list[dict[str, Any]]:
    with open(DATA, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def alpaca_logprob_preference(top_logprobs: list[dict[str, Any]]) -> float:
    """alpaca_eval src/alpaca_eval/completion_parsers.py, logprob_parser with the annotator's
    numerator_token "m", denominator_tokens ["m", "M"], is_binarize False: the tokens matched
    exactly; ``2 - p(m) / (p(m) + p(M))`` (NaN where neither is listed)."""
    found = {t["token"]: t["logprob"] for t in top_logprobs if t["token"] in ("m", "M")}
    if not found:
        return math.nan
    p_m, p_big = (math.exp(found.get(tok, -math.inf)) for tok in ("m", "M"))
    return 2 - p_m / (p_m + p_big)


def test_data_matches_the_sources_parser():
    """``expected`` is the parser's reading of the stored logprobs; the stored ``preference``
    is it, or (AlpacaEval shows the two outputs in a random order) its mirror ``3 - expected``."""
    rows = _rows()
    assert len(rows) >= 300
    mirrored = 0
    for row in rows:
        assert row["reply"] and len(row["top_logprobs"]) == 5
        expected = alpaca_logprob_preference(row["top_logprobs"])
        assert math.isclose(expected, row["expected"], abs_tol=1e-12), row["origin"]
        same = math.isclose(row["preference"], expected, abs_tol=1e-6)
        mirrored += not same
        assert same or math.isclose(row["preference"], 3 - expected, abs_tol=1e-6), row["origin"]
    assert 0 < mirrored < len(rows)


async def test_named_token_grader_reads_the_judges_distribution():
    from rewardjudge import OpenAIModel, ProbabilityJudgeGrader, StringThread
    from rewardjudge.testing import FakeJudgeServer, Fault

    rows = _rows()
    thread = StringThread([("user", "Name a prime."), ("assistant", "7")], metadata={"reference": "2"})
    agree, unscored, notes = 0, 0, []
    with FakeJudgeServer() as server:
        async with OpenAIModel(server.url, "judge", api_key="k", chat_template=CHATML) as judge:
            grader = ProbabilityJudgeGrader(
                "alpaca_eval_weighted", judge, tokens={"m": 1.0, "M": 0.0},
                answer_prefix="Best model identifier: ",
                system_template="Select the model that produced the best output. Answer m or M.",
                user_template='{"model_identifier": "m", "output": {{completion}}}\n'
                              '{"model_identifier": "M", "output": {{metadata.reference}}}')
            for row in rows:
                server.enqueue(Fault.reply(row["reply"], logprobs=[
                    {t["token"]: t["logprob"] for t in row["top_logprobs"]}]))
                grade = await grader.grade(thread)
                on_tokens = sum(math.exp(t["logprob"]) for t in row["top_logprobs"]
                                if t["token"].strip() in ("m", "M"))
                if grade.status != "scored":
                    # only where most of the judge's probability fell on neither token
                    assert on_tokens < grader.min_valid_mass, (row["origin"], grade)
                    unscored += 1
                    notes.append(f"  unscored: {row['origin']}: {row['top_logprobs']}")
                elif math.isclose(grade.value, 2 - row["expected"], abs_tol=1e-6):
                    agree += 1
                else:
                    notes.append(f"  disagree: {row['origin']}: source {row['expected']}, grade {grade.value}")
    summary = (f"alpaca_eval_weighted: {len(rows)} distributions; agree {agree}/{len(rows) - unscored} "
               f"scored; unscored {unscored} ({unscored / len(rows):.2%})")
    print("\n" + summary + ("\n" + "\n".join(notes) if notes else ""))
    assert agree == len(rows) - unscored, summary + "\n" + "\n".join(notes)
    assert unscored / len(rows) <= 0.01, summary
