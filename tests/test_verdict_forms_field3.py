"""Declared verdict forms against more of the field's judges (field round 12): what the round's new real
sources showed, each case restating the source's parser (tests/test_real_judges.py) and relating the
declared form's unsealed reading to it as tests/test_verdict_forms_field.py does (``agree``, ``two``,
``here only``, ``there only``, ``neither``).
"""

from __future__ import annotations

import pytest

import test_real_judges as real
from rewardjudge.readouts._forms import VerdictForm
from test_verdict_forms_field import test_declared_form_reads_as_the_pipeline_does as _relate

#: MT-Bench's single prompt: 'strictly following this format: "[[rating]]"'
BRACKETS = VerdictForm("[[{score}]]", bounds=(1, 10))
#: MT-Bench's pairwise prompt: '"[[A]]" if assistant A is better, "[[B]]" if assistant B is better, "[[C]]" for a tie'
PAIR_AB = VerdictForm("[[{label}]]", labels=("A", "B", "C"))

#: the source, its form and its parser: FastChat's run_judge_single
LLAMA = ("mt-bench llama", BRACKETS, real.fastchat_single)

CASES = [
    # a Llama-3.1-8B-Instruct judge told "Do not provide any explanation. Output only a rating ... "[[rating]]""
    # with 8 new tokens (jtbwedgwood/FastChat): one reply in five is the rating in single brackets and nothing
    # else, which FastChat's fallback reads
    *((*LLAMA, reply, "agree") for reply in ("[[4]]", "[4]", "[8]\n", " [6].")),
    # ... the whole reply only: a bracketed number in a line, or opening a longer reply, may be an index
    *((*LLAMA, reply, "there only") for reply in ("[4] is the index of the answer.", "The answer cites [4]")),
    # a pairwise reply that is the label in single brackets alone: FastChat's pair parser wants "[[A]]"
    ("mt-bench pair", PAIR_AB, real.fastchat_pair, "[B]", "here only"),
]


@pytest.mark.parametrize("pipeline,form,parse,reply,relation", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_declared_form_reads_as_the_pipeline_does(pipeline, form, parse, reply, relation):
    _relate(pipeline, form, parse, reply, relation)


@pytest.mark.parametrize("form,reply", [
    (BRACKETS, "[4]\n\nThe answer is thin."),       # the whole reply, not its first line,
    (BRACKETS, "Notes\n[4]"),                       # nor its last,
    (BRACKETS, "  \n\n[4]"),                        # one space or line break before it at most,
    (BRACKETS, "[4]]"),                             # brackets taken in pairs
    (PAIR_AB, "[A] [B]"),
])
def test_a_whole_reply_in_single_brackets_only(form, reply):
    assert not form.read(reply).ok


@pytest.mark.parametrize("form,reply", [(BRACKETS, "[4]"), (PAIR_AB, "[A]")])
def test_a_whole_reply_in_single_brackets_is_never_read_on_a_sealed_line(form, reply):
    assert form.read_line(reply) is None


def test_a_whole_reply_in_single_brackets_that_copies_the_policy_is_skipped():
    assert not BRACKETS.read("[9]", ["[9]"]).ok and not PAIR_AB.read("[A]", ["[A]"]).ok
