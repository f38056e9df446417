"""Declared verdict forms on what real judges write around a verdict that the stored
replies may not show: each stored source's replies (tests/data/real_judges) and each
field pipeline's replies (tests/test_verdict_forms_field.py) rewritten, one habit at
a time, and read by the form (``VerdictForm.read``, unsealed) and by the source's own
parser (restated in those two files).

The habits (``VARIATIONS``) come from judges seen in public runs and from chat servers:
markdown emphasis around the verdict, a verdict in a heading, punctuation, an emoji or
an end-of-turn token the server left in the text after it, full-width brackets, a
sentence after it on its line, CRLF line ends, the verdict moved into a code fence at
the end, a fraction or a scale in the brackets, a space before the closing bracket,
no-break spaces, the verdict written twice alike, and the prompt's own example echoed
before the judge's verdict.

Each rewritten reply is classed as in test_verdict_forms_field.py: ``agree`` (the same
verdict, or none in both), ``two`` (the form reads two different verdicts: the last,
the others listed), ``here`` (the form reads the judge's verdict, the parser nothing),
``there`` (the parser reads one, the form none) or ``disagree``. Every pair of
(variation, source) must be ``agree`` except where the tables below allow another
class, each with its reason; ``disagree`` only where the source reads something else
than the verdict the judge wrote (a list index in quoted code).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any, Callable, Iterator, NamedTuple

import pytest

import test_real_judges as real
import test_verdict_forms_field as field
from rewardjudge.readouts._forms import VerdictForm


class Base(NamedTuple):
    source: str                  # a stored source, or a field pipeline (its name there)
    form: VerdictForm
    parse: Callable[[str], Any]  # the source's parser, its reading as the form's value (None: none)
    reply: str
    start: int                   # the form's one verdict in ``reply``: where it stands
    stop: int                    # ... where it ends, a scale written after it (``8/10``) included
    value: Any


_SCALE_AFTER = re.compile(r"[ \t]{0,2}/[ \t]{0,2}\d{1,3}")


def _base(source: str, form: VerdictForm, parse: Callable[[str], Any], reply: str) -> "Base | None":
    """A reply where the form reads one verdict, as a base to rewrite."""
    d = form.read(reply)
    if not d.ok or d.others:
        return None
    scale = _SCALE_AFTER.match(reply, d.end)
    return Base(source, form, parse, reply, d.start, scale.end() if scale else d.end, d.value)


def _value_text(v: Any) -> str:
    return v if isinstance(v, str) else str(int(v)) if float(v).is_integer() else str(v)


def _line_start(r: str, s: int) -> int:
    return r.rfind("\n", 0, s) + 1


def _at_value(b: Base) -> "tuple[int, int] | None":
    """Where the verdict's value is written in ``b.reply`` (the last such text in its span)."""
    at = b.reply.rfind(_value_text(b.value), b.start, b.stop)
    return None if at < 0 else (at, at + len(_value_text(b.value)))


def _value_swapped(b: Base, new: str) -> "str | None":
    """``b.reply`` with the verdict's value written ``new`` (a score form with no scale after it), or None."""
    at = _at_value(b)
    if b.form.labels is not None or at is None or _SCALE_AFTER.match(b.reply, at[1]):
        return None
    return b.reply[:at[0]] + new + b.reply[at[1]:]


def _space_before_bracket(b: Base) -> "str | None":
    """``b.reply`` with a space between the value and the bracket that closes right after it, or None."""
    at = _at_value(b)
    if at is None or b.reply[at[1]:at[1] + 1] != "]":
        return None
    return b.reply[:at[1]] + " " + b.reply[at[1]:]


def _example(b: Base) -> str:
    """The form with another value than the judge's, as the prompt's example shows it."""
    if b.form.labels is not None:
        other = next(lab for lab in b.form.labels if lab != b.value)
        text = b.form.pattern.replace("{label}", other)
    else:
        lo, hi = b.form.bounds or (1.0, 10.0)
        text = b.form.pattern.replace("{score}", _value_text(hi if b.value != hi else lo))
    return text.replace("{other}", "5")


def _around(b: Base, before: str, after: str) -> str:
    return b.reply[:b.start] + before + b.reply[b.start:b.stop] + after + b.reply[b.stop:]


_TOKENS = {"eos": "</s>", "eot_id": "<|eot_id|>", "end_of_turn": "<end_of_turn>", "im_end": "<|im_end|>"}

#: name -> the reply rewritten (None: the habit does not apply to this form)
VARIATIONS: dict[str, Callable[[Base], "str | None"]] = {
    # markdown emphasis around the verdict, or around its whole line ("**Rating: [[7]]**", "*[[A>B]]*")
    "bold": lambda b: _around(b, "**", "**"),
    "italic": lambda b: _around(b, "*", "*"),
    "bold line": lambda b: (b.reply[:_line_start(b.reply, b.start)] + "**"
                            + b.reply[_line_start(b.reply, b.start):b.stop] + "**" + b.reply[b.stop:]),
    # the verdict in a heading of its own ("### Final verdict: [[B>A]]")
    "heading": lambda b: (None if b.reply[_line_start(b.reply, b.start):].startswith("#") else
                          b.reply[:_line_start(b.reply, b.start)].rstrip() + "\n\n### Final verdict: "
                          + b.reply[b.start:b.stop] + b.reply[b.stop:]),
    # the verdict's line a list item ("- Rating: [[7]]")
    "bullet": lambda b: (None if b.reply[_line_start(b.reply, b.start):].startswith(("-", "#")) else
                         b.reply[:_line_start(b.reply, b.start)] + "- " + b.reply[_line_start(b.reply, b.start):]),
    # punctuation or an emoji right after the verdict
    "full stop": lambda b: _around(b, "", "."),
    "exclamation": lambda b: _around(b, "", "!"),
    "emoji": lambda b: _around(b, "", " \U0001f44d"),
    # an end-of-turn token the server left in the text: after the reply, or right after the verdict that ends it
    **{f"{name} after the reply": (lambda tok: lambda b: b.reply + tok)(tok) for name, tok in _TOKENS.items()},
    **{f"{name} after the verdict": (lambda tok: lambda b: b.reply[:b.stop] + tok)(tok)
       for name, tok in _TOKENS.items()},
    # full-width brackets, as CJK input methods write them ("［［7］］")
    "full-width brackets": lambda b: (None if "[" not in b.reply[b.start:b.stop] else
                                      b.reply[:b.start] + b.reply[b.start:b.stop].translate(
                                          {ord("["): "\uff3b", ord("]"): "\uff3d"}) + b.reply[b.stop:]),
    # a short sentence after the verdict on its line
    "sentence after": lambda b: _around(b, "", " The answer is solid overall."),
    "crlf": lambda b: None if "\n" not in b.reply else b.reply.replace("\n", "\r\n"),
    # the verdict moved from where it stood into a code fence at the end
    "fence at the end": lambda b: ((b.reply[:b.start] + b.reply[b.stop:]).rstrip() + "\n\n```\n"
                                   + b.reply[b.start:b.stop] + "\n```"),
    # a score with a fraction, or out of ten ("[[7.5]]", "[[7/10]]")
    "fraction": lambda b: (_value_swapped(b, _value_text(b.value) + ".5")
                           if b.form.labels is None and float(b.value).is_integer()
                           and b.value != (b.form.bounds or (0, 0))[1] else None),
    "out of ten": lambda b: _value_swapped(b, _value_text(b.value) + "/10"),
    "out of, in words": lambda b: _value_swapped(b, f"{_value_text(b.value)} out of {_value_text(max(b.form.bounds))}")
    if b.form.bounds else None,
    # a space before the form's colon (French typography's "Note : 7", "GRADE : C", '"score" : 7')
    "space before the colon": lambda b: (None if not re.search(r"[\w'\"]:", b.reply[b.start:b.stop]) else
                                         b.reply[:b.start] + re.sub(r"(?<=[\w'\"]):", " :", b.reply[b.start:b.stop], 1)
                                         + b.reply[b.stop:]),
    # a space before the closing bracket ("[[7 ]]")
    "space before the bracket": _space_before_bracket,
    # no-break spaces in the verdict's text, and before it
    "no-break spaces": lambda b: (None if " " not in b.reply[b.start:b.stop] else
                                  b.reply[:b.start] + b.reply[b.start:b.stop].replace(" ", "\u00a0")
                                  + b.reply[b.stop:]),
    "no-break space before": lambda b: b.reply[:b.start].rstrip(" ") + "\u00a0" + b.reply[b.start:],
    # the verdict written twice alike (a judge that restates it): no disagreement
    "twice": lambda b: b.reply + "\n\n" + b.reply[b.start:b.stop],
    # the prompt's example quoted before the judge's own verdict ('e.g. "Rating: [[5]]"')
    "example echoed": lambda b: ("As the instructions ask, I end with the verdict in the given format, "
                                 f'e.g. "{_example(b)}".\n\n{b.reply}'),
}


def _stored_bases(per_source: int = 6) -> Iterator[Base]:
    """Each stored source's replies where its parser and the form read the same one verdict: an even stride (not
    those read only as the whole reply, "[4]" under ``[[{score}]]``, which any text around it undoes)."""
    for source in sorted(real.SOURCES):
        form, parse, as_value = real.SOURCES[source]
        rows = [r for r in real._rows(source) if r["expected"] is not None]
        step, taken = max(1, len(rows) // (3 * per_source)), 0
        for row in rows[::step] + [r for i, r in enumerate(rows) if i % step]:
            b = _base(source, form, lambda r, p=parse, a=as_value: a(p(r)), row["reply"])
            if b is not None and b.value == as_value(row["expected"]) and real._in_context(form, row["reply"], b.value):
                yield b
                taken += 1
                if taken == per_source:
                    break


def _field_bases() -> Iterator[Base]:
    """The field pipelines' replies where the parser and the form agree on one verdict."""
    for pipeline, form, parse, reply, relation in field.CASES:
        b = _base(pipeline, form, parse, reply)
        if relation == "agree" and b is not None:
            yield b


BASES = list(_stored_bases()) + list(_field_bases())


def _relation(b: Base, text: str) -> "tuple[str, Any, Any]":
    d = b.form.read(text)
    try:
        theirs = b.parse(text)
    except (ValueError, KeyError, IndexError):
        theirs = None
    ours = d.value if d.ok else None
    if b.source == "auto-j pair" and d.ok:       # Auto-J lower-cases what it reads: its classes, whatever the case
        ours = ours.lower()
    if d.ok and d.others:
        kind = "two"
    elif d.ok and real._integer_part(ours, theirs):
        kind = "integer part"    # an int-only parser's reading of the fraction the judge wrote ("[[7.5]]" is 7)
    elif ours == theirs:
        kind = "agree"
    elif theirs is None:
        kind = "here"
    elif ours is None:
        kind = "there"
    else:
        kind = "disagree"
    return kind, ours, theirs


# ----------------------------------------------------------- what each source reads of each habit
#: parsers that take the whole reply, or its first or last line, as the verdict (``int(reply)``, ``json.loads``,
#: ``ast.literal_eval``, the reply exactly a class, the first line split in two, the first character): anything
#: written around the verdict leaves them with none
#: Vicuna's review prompts with the two scores on the first line, sent to gpt-4 (QLoRA, Quilt-LLaVA) and gpt-3.5-turbo
#: (FastChat)
RELATIVE = {"qlora_relative", "quilt_llava_reviews", "vicuna_gpt35_reviews"}
#: the three-class review prompts ("in a new line, choose between the answers ... by outputting the number 1 or 2"),
#: read from the last line (QLoRA with gpt-4; Peer Rank and Discussion with claude-1 and gpt-3.5-turbo)
THREECLASS = {"qlora_threeclass", "prd_claude_threeclass", "prd_gpt35_threeclass"}
#: the replies a source decodes whole as one JSON object (WildBench's score object, h2o-LLM-eval's A/B test,
#: AlpacaEval's function-call rankings)
JSON_REPLY = {"wildbench", "h2o_llm_eval", "alpaca_eval_fn", "alpaca_eval_cot_fn", "alpaca_eval fn"}
WHOLE = {"alpaca_eval", "wildbench", "llmbar_rating", "xstest", *THREECLASS, "ice_score", "judgebench vanilla",
         "lighteval simpleqa", "pandalm", "judgelm", "llava_two_scores", "alpacaeval m/M", "g-eval"} | RELATIVE
WHOLE |= JSON_REPLY
#: LLMBar's Vanilla patterns, ``(?:^|\n) ?Output \(a\)``: its Vanilla prompt and its Swap synthesis prompt
VANILLA = {"llmbar_vanilla", "llmbar_swap"}
#: the frameworks' JSON decoders (promptfoo's and RAGAS's first object, DeepEval's first ``{`` to last ``}``, MLflow's
#: json.loads before its ``score: n`` + ``justification:`` rule): a mark written inside the object breaks it
JSON = {"deepeval", "mlflow", "promptfoo", "ragas"}
WHOLE |= JSON
#: parsers that read the reply's last letter (LangChain's criteria, promptfoo's closedqa): anything after it is none
LAST_LETTER = {"langchain criteria", "promptfoo closedqa"}
#: ... and those that want nothing after the verdict but the end (prometheus-eval 0.1.20) or a bracket or a space
#: (0.1.19), a dict they decode (FLASK), the box between line breaks (NeMo-RL's GenRM), ``Output (a)`` opening a
#: line (LLMBar's Vanilla)
ENDS = {"prometheus", "prometheus 0.1.19", "prometheus relative", "flask", "genrm"}
#: FastChat's, arena-hard's, korean-mt-bench's, OpenCompass's, PAIR's, RewardBench's, lighteval MixEval's bracket
#: regexes: digits (or labels) right against the brackets
BRACKETS = {"arena-hard v2", "arena_bench_single", "arena_hard", "arena_hard_gpt4_1106", "arena_hard_gpt4_32k",
            "arena_hard_v2_gemini_flash",
            "ja_vicuna_pair", "komt_bench", "korean_mt_bench_pair", "korean_mt_bench_single", "lighteval mixeval",
            "mt-bench", "mt-bench-101", "mt_bench_pair", "mt_bench_single", "mt_bench_single_forks", "mt_bench_llama31",
            "mt_bench_bengali", "mt_bench_pair_finnish", "opencompass arena-hard",
            "opencompass mt-bench", "pair", "pfmt_bench_fin_ja", "rewardbench", "wildvision", "langchain pair",
            "langchain score", "zh_mt_bench_gpt35", "zh_mt_bench_gpt4", "zh_mt_bench_china", "mt_bench_single_lumiopen",
            "mt_bench_gpt4o_multilingual"}
#: Shaberi's ``FINAL SCORE:\s*([0-9.]+)``, read as ``round(float(...))``
SHABERI = {"shaberi_elyza", "shaberi_mt", "shaberi_tengu"}
#: the tokens a chat server may leave in the text
_TOKEN_VARIATIONS = [f"{name} after {where}" for name in _TOKENS for where in ("the reply", "the verdict")]

#: variation -> relation -> the sources where the form's reading relates to the parser's so (else: agree)
EXPECTED: dict[str, dict[str, set[str]]] = {
    # emphasis: the form reads the verdict inside it (``_EMPH``, a bare form's line head and tail)
    **{name: {"here": WHOLE | ENDS | VANILLA}
       for name in ("bold", "italic", "bold line")},
    # a heading: a spaced-off or enclosed form reads it anywhere; a bare form after a name and a colon (``_HEADING``)
    "heading": {"here": WHOLE | {"flask"} | VANILLA,
                # "### Final verdict: Result: 4": a bracketed head's word without its brackets starts a line
                # (``_bracket_heads``); prometheus-eval's absolute parser reads "Result:" anywhere
                "there": {"prometheus"}},
    # a list's bullet: before a bare form's name only ("- N" is read there only: a bullet before a lone verdict
    # may be a sum's term, "- 4"), and a bracketed head's word; "- Result: B", which prometheus-eval's relative parser wants at a line's start
    "bullet": {"here": {"alpaca_eval", "judgebench vanilla", "prometheus relative"} | VANILLA | JSON_REPLY,
               "there": {"openai evals"}},
    "full stop": {"here": WHOLE - {"alpacaeval m/M", "g-eval"} - RELATIVE | ENDS - {"flask"}},
    # a bare form's line holds the verdict alone (emphasis, a full stop, a scale): "4!", "m 👍", "N. 👍" and a
    # verdict alone under its head ("**Score:**\n\n8/10!") are read there only
    **{name: {"here": {"alpaca_eval", "judgebench vanilla"} | JSON_REPLY | ENDS - {"prometheus 0.1.19"}
              | ({"prometheus 0.1.19"} if name == "exclamation" else set()),
              "there": {"alpacaeval m/M", "g-eval", "openai evals", "score colon"}}
       for name in ("exclamation", "emoji")},
    "sentence after": {"here": {"alpaca_eval", "judgebench vanilla"} | JSON_REPLY | ENDS - {"prometheus 0.1.19"},
                       "there": {"alpacaeval m/M", "g-eval", "openai evals", "score colon"}},
    # an end-of-turn token ends the verdict's line (``_plain``)
    **{name: {"here": {"alpaca_eval", "ice_score", "judgebench vanilla", "lighteval simpleqa", "llmbar_rating",
                       "openai evals", "prometheus", "prometheus relative", *THREECLASS, "xstest"} | JSON_REPLY}
       for name in _TOKEN_VARIATIONS if name.endswith("the reply")},
    **{name: {"here": WHOLE - {"alpacaeval m/M", "g-eval"} | ENDS | {"openai evals", "ultrafeedback"}}
       for name in _TOKEN_VARIATIONS if name.endswith("the verdict")},
    # full-width brackets are read by none of the sources' bracket regexes, nor here; the parsers that read a word
    # or number after a name read the value inside them
    "full-width brackets": {"there": {"judgebench skywork", "prometheus", "ultrafeedback"},
                            # "［RESULT］\nResponse B": the candidate's name alone on the reply's last line is read here
                            "here": {"prometheus relative"}},
    # PandaLM's first line is "2\r"; the Flow judge wants one whitespace character each side of the digit
    "crlf": {"here": {"lighteval flow", "pandalm"}},
    # the verdict moved into a fence: the whole-reply parsers, those that want it to end the reply or its line,
    # Inspect's 2024 rule (the last line), UltraFeedback's "Rationale:" on the next line
    "fence at the end": {"here": WHOLE | ENDS - {"prometheus 0.1.19", "prometheus relative"}
                         | {"inspect 2024", "ultrafeedback"}},
    # a fraction: digits-only parsers read none, int-only ones the integer part (Shaberi's round() the nearest)
    "fraction": {"here": {"arena_bench_single", "ice_score", "lighteval flow", "llmbar_rating", "mt-bench-101", "pair",
                          "prometheus", "prometheus 0.1.19"},
                 "integer part": {"alignbench", "genrm", "ultrafeedback", "vibe_eval", "writingbench", "shaberi rakuda"}
                    | SHABERI},
    # out of ten: ``[[7/10]]`` is none in every bracket form and parser; after a name, or alone, the score is read
    # (``_SCALE``), as in words ("4 out of 5"); GenRM's parser reads the first digits in the box, which a box
    # form does not
    "out of ten": {"here": {"flask", "ice_score", "judgelm", "llava_two_scores", "llmbar_rating", "prometheus",
                            "prometheus 0.1.19", "wildbench"} | RELATIVE,
                   "there": {"genrm"}},
    "out of, in words": {"here": {"flask", "ice_score", "judgelm", "llava_two_scores", "llmbar_rating", "prometheus",
                                  "wildbench"} | RELATIVE,
                         "there": {"genrm"}},
    # a space before a colon after a word or a quote (``_run``): the parsers whose literal text holds "Rating:"
    # read none; Inspect's ``GRADE\s*:`` and json.loads read it
    "space before the colon": {"here": {"alignbench", "atla", "auto-j", "opencompass mt-bench", "prometheus",
                                        "prometheus relative", "score colon", "ultrafeedback", "vibe_eval",
                                        "writingbench"} | SHABERI},
    # up to two spaces inside the brackets (``_INNER_SPACE``), which the bracket regexes do not take; prometheus-eval's
    # "[RESULT: B]" and "[Response B]" want the bracket right after the letter
    "space before the bracket": {"here": BRACKETS | {"prometheus", "prometheus relative"}},
    # a no-break space is a space (``_plain``): parsers whose literal text holds a space read none
    "no-break spaces": {"here": {"alignbench", "alpaca_eval", "auto-j", "auto-j pair", "flask", "genrm",
                                 "judgebench vanilla", "judgelm", "llava_two_scores", "llmbar_cot", "llmbar_swap_cot",
                                 "mmlu-pro", "offsetbias", "ultrafeedback"} | VANILLA
                        | SHABERI | RELATIVE | JSON_REPLY},
    # ... and before "Result: B" at a line's start, which prometheus-eval's relative parser wants at the very start
    "no-break space before": {"here": {"alpaca_eval", "alpacaeval m/M", "flask", "g-eval", "lighteval simpleqa",
                                       "prometheus relative", "xstest"} | JSON_REPLY},
    # the same verdict twice is one verdict here; arena-bench wants exactly one, the whole-reply parsers the reply
    "twice": {"here": {"alpaca_eval", "arena_bench_single", "ice_score", "judgebench vanilla", "lighteval simpleqa",
                       "llmbar_rating", "xstest"} | JSON_REPLY},
    # the prompt's example echoed: two verdicts (the last read, the example listed), but for a bare form, whose
    # example inside a sentence is none, and the parsers that then read nothing
    "example echoed": {"two": {b.source for b in BASES} - {"alpacaeval m/M", "g-eval", "ice_score", "judgelm",
                                                           "lighteval simpleqa", "llava_two_scores", "llmbar_rating",
                                                           "pandalm", "xstest", "openai evals",
                                                           *THREECLASS} - RELATIVE,
                       "here": {"alpacaeval m/M", "g-eval", "ice_score", "judgelm", "lighteval simpleqa",
                                "llava_two_scores", "llmbar_rating", "pandalm", "xstest"} | RELATIVE},
}


#: ... and what the frameworks' parsers (test_verdict_forms_field.py) read of each habit, beyond the groups above
FRAMEWORKS: dict[str, dict[str, set[str]]] = {
    # emphasis or a full stop after the last letter; TruLens's "Score:" with the number on the next line, now bold;
    # AlpacaEval's chatgpt annotator wants "Output (a)" at a line's start (a space at most before it), as LLMBar's
    # Vanilla parser, and exactly one in the reply
    **{name: {"here": LAST_LETTER | {"trulens", "alpacaeval chatgpt"}} for name in ("bold", "italic", "bold line")},
    "full stop": {"here": LAST_LETTER},
    # a bullet before a lone verdict is read there only (as OpenAI evals'); JSON decoders fail on "- " inside
    "bullet": {"here": JSON | {"alpacaeval chatgpt"}, "there": LAST_LETTER | {"langchain qa", "phoenix", "trulens"}},
    # "yes\r" between the tags: FastChat drops "\n" only, so \w+ stops at the "\r"
    "crlf": {"here": {"arena category"}},
    # more on the verdict's line: Phoenix's substring, LangChain QA's first word, TruLens's numbers read it there
    **{name: {"here": JSON | {"langchain criteria"}, "there": {"langchain qa", "phoenix", "trulens"}}
       for name in ("exclamation", "emoji", "sentence after")},
    # an end-of-turn token: the last letter is ">", the first or last word "CORRECT</s>", a "Score:" line's next
    # line no number, JSON no longer JSON
    **{name: {"here": LAST_LETTER | {"langchain qa", "mlflow", "trulens"}}
       for name in _TOKEN_VARIATIONS if name.endswith("the reply")},
    **{name: {"here": LAST_LETTER | {"langchain qa", "trulens"}}
       for name in _TOKEN_VARIATIONS if name.endswith("the verdict")},
    "fence at the end": {"here": LAST_LETTER | {"langchain qa"}},
    # "### Final verdict: GRADE: INCORRECT": a bare form's second name; LangChain's grade regex reads it
    "heading": {"here": {"alpacaeval chatgpt"}, "there": {"langchain qa"}},
    # one digit (FastChat's tags), an exact "1".."10" (LangChain), ``(\d+)`` before "justification" (MLflow), an
    # int (RAGAS); TruLens's int(float(n)) the integer part
    "fraction": {"here": {"arena category", "langchain score", "mlflow", "ragas"}, "integer part": {"trulens"}},
    **{name: {"here": JSON | {"trulens"}} for name in ("out of ten", "out of, in words")},
    **{name: {"here": JSON | {"alpacaeval chatgpt"}} for name in ("no-break spaces", "no-break space before")},
    # '"SCORE" : PASS' and "score : 4" are none for Lynx's and MLflow's literal colons
    "space before the colon": {"here": {"lynx", "mlflow"}},
    # the verdict again after MLflow's JSON: not JSON, and '"score": 5' no "score: n" line; a second "Output (a)"
    # line: two matches, none for AlpacaEval's chatgpt annotator
    "twice": {"here": {"mlflow", "alpacaeval chatgpt"}},
    # the example echoed: none for the last-letter parsers' bare Y/N (inside a sentence) nor for theirs; Phoenix's
    # bare rails likewise here, its substring reads two rails there (none)
    "example echoed": {"here": {"phoenix"}},
}
#: ... and what the reward-model and video judges' parsers read (test_verdict_forms_field.py): FairEval's last two lines
#: and Video-ChatGPT's ``ast.literal_eval`` take nothing around the verdict, RewardBench 2's ratings a whole number
#: that ends the reply (``\b([1-9]|10)\b\s*$``)
_LAST_LINES = {"faireval", "video-chatgpt"}
_RB2 = "rewardbench 2 ratings"
LATER: dict[str, dict[str, set[str]]] = {
    **{name: {"here": _LAST_LINES | {_RB2}}
       for name in ("bold", "italic", "bold line", "full stop", "fence at the end", *_TOKEN_VARIATIONS)},
    **{name: {"here": _LAST_LINES} for name in ("exclamation", "emoji", "sentence after", "twice")},
    # "- 9": a bullet before a lone verdict is read there only; the dict after "- " is no literal
    "bullet": {"here": {"video-chatgpt"}, "there": {_RB2}},
    # "### Final verdict: Rating: 6": a second name before the bare verdict, read there only
    "heading": {"here": _LAST_LINES, "there": {_RB2}},
    # "9.5" ends in the word "5", "8/10" and "8 out of 10" in "10": RewardBench 2 reads that; int() fails on
    # "2.5" written in quotes and drops the fraction of 4.5
    "fraction": {"disagree": {_RB2}, "integer part": {"video-chatgpt"}, "here": {"video-chatgpt"}},
    **{name: {"disagree": {_RB2}, "here": _LAST_LINES} for name in ("out of ten", "out of, in words")},
    "no-break space before": {"here": {"video-chatgpt"}},
    # RM-R1's and the Self-Taught Evaluator's literal "[[A]]"
    "space before the bracket": {"here": {"rm-r1", "self-taught evaluator"}},
    # "FINAL\u00a0SCORE: 7", "FINAL SCORE : 7": no FINAL SCORE for Shaberi's Rakuda parser, which then averages the
    # per-aspect "n/10" ratings of the reply instead
    "no-break spaces": {"here": {"video-chatgpt"}, "disagree": {"shaberi rakuda"}},
    "space before the colon": {"disagree": {"shaberi rakuda"}},
}
for _name, _kinds in LATER.items():
    for _kind, _sources in _kinds.items():
        FRAMEWORKS.setdefault(_name, {})[_kind] = FRAMEWORKS.get(_name, {}).get(_kind, set()) | _sources
for _name, _kinds in FRAMEWORKS.items():
    for _kind, _sources in _kinds.items():
        EXPECTED.setdefault(_name, {})[_kind] = EXPECTED.get(_name, {}).get(_kind, set()) | _sources
EXPECTED["example echoed"]["two"] -= LAST_LETTER | {_RB2}     # a bare form's example inside a sentence is none


def _relations(name: str) -> "dict[tuple[str, str], Counter]":
    """(source, relation) -> Counter of (the form's reading, the parser's) over the rewritten bases; the form
    never reads a verdict other than the one the judge wrote."""
    counts: dict[tuple[str, str], Counter] = {}
    rewrite = VARIATIONS[name]
    for b in BASES:
        text = rewrite(b)
        if text is None:
            continue
        kind, ours, theirs = _relation(b, text)
        written = b.value + 0.5 if name == "fraction" else b.value
        assert ours in (None, written.lower() if b.source == "auto-j pair" else written), (name, b.source, text)
        counts.setdefault((b.source, kind), Counter())[(ours, theirs)] += 1
    return counts


def test_every_source_and_pipeline_has_bases():
    """Six replies of each stored source, and every field pipeline's agreeing replies, are rewritten."""
    per_source = Counter(b.source for b in _stored_bases())
    assert {s for s in real.SOURCES if per_source[s] == 6} == set(real.SOURCES)
    assert len({b.source for b in _field_bases()} - set(real.SOURCES)) >= 30


@pytest.mark.parametrize("name", sorted(VARIATIONS))
def test_a_habit_reads_as_the_source_reads_it(name):
    """Each rewritten reply relates to the source's reading as ``EXPECTED`` says (else the two agree), and
    every relation ``EXPECTED`` names is seen: the table is what the form does, not a bound on it."""
    seen = _relations(name)
    allowed = EXPECTED.get(name, {})
    wrong = {key: dict(c) for key, c in seen.items() if key[1] != "agree" and key[0] not in allowed.get(key[1], ())}
    assert not wrong, wrong
    missing = {(src, kind) for kind, sources in allowed.items() for src in sources if (src, kind) not in seen}
    assert not missing, missing
    read = sum(n for c in seen.values() for (ours, _), n in c.items() if ours is not None)
    total = sum(sum(c.values()) for c in seen.values())
    print(f"\n{name}: the form reads the judge's verdict in {read} of {total} rewritten replies")
