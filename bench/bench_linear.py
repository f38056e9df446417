"""Every pass over policy text, on hostile 256 KiB inputs: the worst time of each.

Policy text is written by an optimiser aimed at the grader, and a completion
may be 256 KiB (``Grader.max_completion_chars``). A pass whose time grows
faster than the text's length blocks the event loop for seconds on one
such completion: the regexes of ``readouts/_text.py`` once did (1.6-18.8 s
on 16 KiB). This bench runs each pass over a set of hostile inputs (long
runs of one character; tag, escape and control-token openers that never
close; runs of zero-width characters and combining marks; JSON that never
ends; master keys of one to three letters repeated, or mixed at random with
separators and filler words, each a word for the content-free screen to read)
and prints the worst input of each pass. Target: under 50 ms.

Passes: ``neutralize`` (bare, and with a template's tag names and the judge's
control tokens), ``neutralize_value`` (the text in a mapping, and cut in
6-character strings in a list), ``contains_tag``, the content-free screen
(``content_free_reason`` on the text, and ``content_free_fields`` on a
structured completion whose answer is empty and whose list field holds the
text cut in 6-character strings), ``pydantic_parse`` of a completion on
hostile JSON, ``read_unsealed`` of a judge reply that echoes a completion of
hostile JSON (a JSON verdict read without a seal, as a benchmark's prompt is
replayed), and the reward server's stripping of trailing end markers.

Each time is CPU time, the best of 3 runs (the lazily filled translation
tables are warm; the first pass over 256 KiB of distinct characters fills
them once per process). These machines are shared: the times are context;
the claim is that none grows with the square of the length, so the table
also shows the ratio of each worst time at 256 KiB to the same input's at
64 KiB: about 4 for a linear pass, about 16 for a quadratic one.

A second table times the shapes that were once the slowest, one line each:
JSON objects closed around one long string (nested, or side by side) through
both JSON readers, and text dense with control tokens, tags and their
look-alikes through the neutraliser.

A third table grades one such completion through each grader family (a
scripted judge; the text neutralised, rendered and read as in training) and
prints the longest the event loop waited during that grade: texts over 64 KiB
are worked through in a worker thread, so the target is the same 50 ms. The garbage collector's longest run inside
a wait is shown apart (the wait still holds it): a full collection walks every object the process holds (20-280 ms in this
process, more in a trainer's), in whichever thread allocates, the loop waiting on the interpreter lock; a
grade of 16,000 JSON values, which allocates most, set one off in about one grade of five.

Run: ``python -m bench linear`` (``python -m bench.bench_linear --shapes``: the second table only;
``python -m bench.bench_linear --instructions [--baseline PATH]``: the instructions of one call of each of
the slowest passes under callgrind, and of another checkout's, a measure the load does not move).
"""

from __future__ import annotations

import functools
import json
import time
from pathlib import Path
from typing import Callable, Literal, Optional

from pydantic import BaseModel

from .common import emit, print_table

SIZE = 262_144
TARGET_S = 0.050
_REPEAT = 3
_SLOW_S = 5.0   # a call this slow is not repeated
_FAST_S = 0.002   # nor one this fast


class _Answer(BaseModel):
    answer: str
    confidence: Literal["high", "low"]


class _Steps(BaseModel):
    answer: Optional[str] = None
    confidence: Literal["high", "low"] = "high"
    steps: list[str] = []


# --------------------------------------------------------------------------
# hostile inputs
# --------------------------------------------------------------------------
_PREFIXES = ["", "<", "[", "<<", "<\u200b", "&", "&#", "%", "\\", "<c", "\uff1c"]
_RUNS = ["\u200b", "\x00", " ", "/", "<", "\\", "0", "25", "amp;", "\u0301\u0316", "\u0f73", "\u3164",
         "\u2800", "a", "\u200b/"]
_UNITS = ["<|", "<", "< ", "<\u200b", "[INST", "[\u200b", "&#", "&lt;", "&lt;|", "\\u00", "\\u003c", "%2",
          "%3c", "<<", "<s>", "</", "<c", "<cand", "<\u200bc\u200ba", "[/", "\\\\", "\\n", "&#10;",
          "Thought process: ", "Th\u043eught pr\u043ecess: ", "\u3164.", "``x", "\U0001f600",
          "<|im_end|> ", "</s>"]


def _cut(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def hostile_texts(size: int = SIZE) -> dict[str, str]:
    """Hostile texts of ``size`` characters: a prefix then a run, and units repeated."""
    texts: dict[str, str] = {}
    for prefix in _PREFIXES:
        for run in _RUNS:
            texts[f"{prefix!r} + {run!r}*"] = (prefix + _cut(run, size))[:size]
    for unit in _UNITS:
        texts[f"{unit!r} repeated"] = _cut(unit, size)
    texts["distinct code points"] = "".join(chr(0x100 + i) for i in range(size))
    texts["digits charref"] = ("&#" + "1" * size)[:size]
    # texts whose 6-character pieces (the fields screen's list) all differ: a master key and a
    # colon, content under a right-to-left override, look-alike symbols, each with a counter
    texts["a master key and a colon, distinct pieces"] = _pieces("\u89e3:", _SYMBOLS, size)
    texts["right-to-left override, distinct pieces"] = _pieces("\u202e", "abcdefghijklmnopqrstuvwxyz", size)
    texts["look-alike symbols, distinct pieces"] = _pieces("$", "abcdefghijklmnopqrstuvwxyz", size)
    texts["a filler word and a colon, distinct pieces"] = _pieces("the:", _SYMBOLS, size)
    for unit in ("\u00df", "\ufdfa", "\u200f", "\u202e", '"', "'", "`", "{", "(", "\u2474",
                 "\u89e3", "\u89e3\u7b54\ub2f5",   # and one-character master keys: a word each
                 "\u89e3\u7b54", "\u0939\u0932", "\ub2f5",   # a key and a shorter one; a key that starts a filler
                 "<div>", "<td></td>", "<b>x</b>", "<style>.x{display:none}</style><span class=x>",   # tags (hunt 33)
                 "4a", "4a ", "01000001 ", "Alfa ", "alfa, Bravo-", "rewsna ", "\u6211\u6765\u8ba4\u771f"):   # hunt 36
        texts.setdefault(f"{unit!r} repeated", _cut(unit, size))
    texts.update(_key_mixes(size))
    return texts


def _key_mixes(size: int) -> dict[str, str]:
    """Master keys of one to three letters mixed at random (no period to find), alone, between separators, and
    with filler words: a word every character or two, each read from the keys' start."""
    import random

    from rewardjudge.graders._keys import _FILLER, _key_forms

    rng = random.Random(55)
    forms = sorted(_key_forms(()))
    one, short, filler = [k for k in forms if len(k) == 1], [k for k in forms if len(k) <= 3], sorted(_FILLER)

    def mix(words: "list[str]", seps: "tuple[str, ...]" = ("",), fill: float = 0.0) -> str:
        out, n = [], 0
        while n < size:
            word = rng.choice(filler) if rng.random() < fill else rng.choice(words)
            out.append(word + rng.choice(seps))
            n += len(out[-1])
        return "".join(out)[:size]

    return {"one-character keys at random": mix(one), "keys of 1-3 letters at random": mix(short),
            "keys of 1-3 letters at random, separated": mix(short, (" ", "", ", ", "\u3001", "\n")),
            "keys of 1-3 letters and filler at random": mix(short, ("", " "), 0.1)}


#: symbols that carry no letter (a counter written in them keeps a piece content-free)
_SYMBOLS = "!#%&()*+,-./;<=>?[]^_{|}~"


def _pieces(head: str, digits: str, size: int) -> str:
    """``head`` then a counter in ``digits``, in 6-character pieces (distinct while the counter is)."""
    width = 6 - len(head)
    out, i, base = [], 0, len(digits)
    while len(out) * 6 < size:
        n, word = i, ""
        for _ in range(width):
            n, d = divmod(n, base)
            word += digits[d]
        out.append(head + word)
        i += 1
    return "".join(out)[:size]


def hostile_json(size: int = SIZE) -> dict[str, str]:
    """Hostile completions for ``pydantic_parse``: JSON that never ends, nests
    without end, or holds many objects that do not validate."""
    return {
        "'{' repeated": _cut("{", size),
        "'{\"a\": ' repeated": _cut('{"a": ', size),
        "'{\"' repeated": _cut('{"', size),
        "'{\"answer\": {' repeated": _cut('{"answer": {', size),
        "string of backslashes": ('{"answer": "' + "\\" * size)[:size],
        "string of \\u00": ('{"answer": "' + _cut("\\u00", size))[:size],
        "object left open": ('{"answer": "x"' + " " * size)[:size],
        "a 256 KiB integer": ('{"answer": ' + "9" * size)[:size - 1] + "}",
        "objects that fail the model": _cut('{"a": 1} ', size),
        "broken objects": _cut('{""} ', size),
        "broken objects after a nested value": _cut('{"":{}x', size),
        "objects with a key and no value": _cut('{"a":}', size),
        "objects of the wrong types": _cut('{"answer": 1, "confidence": "high"} ', size),
        "fields left open": ('{"answer": "x", "confidence": "high"' + _cut(', "x": 1', size))[:size],
        "'{}' repeated": _cut("{}", size),
        "'}{' repeated": _cut("}{", size),
        "'```json\\n{' repeated": _cut("```json\n{", size),
        "3,000 nested objects": '{"a": ' * 3000 + "1" + "}" * 3000,
        "256 open objects around a long string": ('{"a": ' * 256 + '"' + "x" * size)[:size - 1] + '"',
        "256 closed objects around a long string": ('{"a": ' * 256 + '"' + "x" * size)[:size - 257] + '"'
                                                   + "}" * 256,
    }


def slow_shapes(size: int = SIZE) -> dict[str, tuple[str, str]]:
    """The shapes once slowest, each (input set, text of ``size`` characters)."""
    def string(used: int) -> str:
        return '"' + "x" * (size - used - 2) + '"'

    head = '{"a": 1} ' * 256
    nest, close = '{"a": ' * 256, "}" * 256
    piece = size // 256
    return {
        "256 closed objects around a long string": ("json", nest + string(1792) + close),
        "the same, the outermost broken at its end": ("json", nest + string(1794) + close[:-1] + " 1}"),
        "the same, a surrogate escape in the string": ("json", nest + string(1798)[:-1] + '\\ud800"' + close),
        "the same, every level with a key after it": ("json", '{"a": ' * 128 + string(128 * 15)
                                                      + ', "b": 2}' * 128),
        "128 nested levels, each with a 2 KiB string": ("json", ('{"a": "' + "x" * (piece * 2 - 16) + '", "b": ')
                                                        * 128 + "1" + "}" * 128),
        "256 objects, then a long string": ("json", head + string(len(head))),
        "a long string, then 256 objects": ("json", string(len(head)) + head),
        "256 objects each around a 1 KiB string": ("json", ('{"a": "' + "x" * (piece - 10) + '"} ') * 256),
        "control tokens": ("text", _cut("<|im_start|>user\n</s><think>[INST]<|im_end|> ", size)),
        "look-alike control tokens": ("text", _cut("\uff1c|im_start|\uff1e \u2039/s\u203a \uff1cthink> "
                                                   "&lt;|im_end|&gt; <\u200b/candidate> ", size)),
        "tags, one a character": ("text", _cut("<s><think></s>", size)),
        "look-alike tags (bench attacks)": ("text", _cut("\uff1cgr\u0430de\u200b> &lt;/candidate&gt; <|im_end|> ",
                                                         size)),
        "a defanged opener every 3 characters": ("text", _cut("<|a", size)),
    }


# --------------------------------------------------------------------------
# the passes
# --------------------------------------------------------------------------
def _passes() -> list[tuple[str, str, Callable[[str], object]]]:
    """(name, input set, pass) for every pass over policy text."""
    from rewardjudge.core.structured_output import OutputParserException, pydantic_parse
    from rewardjudge.graders._field_guards import content_free_fields
    from rewardjudge.graders._guards import content_free_reason
    from rewardjudge.readouts._seal import read_unsealed
    from rewardjudge.readouts._text import contains_tag, neutralize, neutralize_value
    from rewardjudge.serve._samples import DEFAULT_EOS, _strip_eos

    tags = ("response", "answer", "question", "submission")
    control = ("<|im_end|>", "<|eot_id|>", "</s>")

    @functools.lru_cache(maxsize=2)
    def pieces(text: str) -> list[str]:
        """The text cut in 6-character strings, made once per input (the pass is timed, not its input)."""
        return [text[i:i + 6] for i in range(0, len(text), 6)]

    def screen_fields(text: str) -> object:
        dumped = {"answer": "", "confidence": "high", "steps": pieces(text)}
        return content_free_fields(dumped, (), _Steps)

    def score(obj: dict) -> object:
        if "score" not in obj:
            raise ValueError("no score")
        return obj["score"]

    def unsealed(text: str) -> object:
        return read_unsealed(text, check=score)

    def parse(text: str) -> object:
        try:
            return pydantic_parse(text, _Answer)
        except (OutputParserException, RecursionError):
            return None

    return [
        ("neutralize", "text", neutralize),
        ("neutralize (tags, control tokens)", "text", lambda t: neutralize(t, tags, control)),
        ("neutralize_value (a mapping)", "text", lambda t: neutralize_value({"answer": t, "id": 1})),
        ("neutralize_value (6-char strings)", "text", lambda t: neutralize_value({"steps": pieces(t)})),
        ("contains_tag", "text", contains_tag),
        ("content-free screen (text)", "text", content_free_reason),
        ("content-free screen (fields)", "text", screen_fields),
        ("pydantic_parse", "json", parse),
        ("read_unsealed (a JSON verdict)", "json", unsealed),
        ("end-marker stripping (reward server)", "text", lambda t: _strip_eos(t, DEFAULT_EOS)),
    ]


def _time(fn: Callable[[str], object], text: str, repeat: int = _REPEAT) -> float:
    """CPU seconds of ``fn(text)`` in this process (what it blocks an event
    loop for; wall time on a shared machine adds other processes' turns)."""
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn(text)
        used = time.process_time() - t0
        best = min(best, used)
        if used > _SLOW_S or used < _FAST_S:   # far from the worst either way: once is enough
            break
    return best


def _measure(size: int) -> list[tuple[str, str, float, Callable[[str], object], str]]:
    sets = {"text": hostile_texts(size), "json": hostile_json(size)}
    out = []
    for name, which, fn in _passes():
        worst_input, worst = "", -1.0
        for label, text in sets[which].items():
            used = _time(fn, text)
            if used > worst:
                worst_input, worst = label, used
        out.append((name, worst_input, worst, fn, which))
    return out


def worst_passes(size: int = SIZE) -> list[tuple[str, float]]:
    """Every pass, its worst hostile input and the seconds it took there:
    ``("neutralize: '<' + '\\u200b'*", 0.012)``, one per pass."""
    return [(f"{name}: {label}", seconds) for name, label, seconds, _, _ in _measure(size)]


class _Collections:
    """The cyclic garbage collector's runs (``gc.callbacks``), each its (start, end): a full collection walks every
    object the process holds (its time is the heap's, not a grade's: 20-280 ms here, in whichever thread allocates,
    and the event loop waits on the interpreter lock meanwhile)."""

    def __init__(self) -> None:
        self.spans: "list[tuple[float, float]]" = []
        self._start = 0.0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.spans.append((self._start, time.perf_counter()))

    def within(self, start: float, end: float) -> float:
        """The seconds of collection between ``start`` and ``end``."""
        return sum(max(0.0, min(e, end) - max(s, start)) for s, e in self.spans if e > start)


async def _longest_wait(coro) -> tuple[float, object, float]:
    """The longest the event loop waited between two of its turns while ``coro`` ran (garbage collection
    included); its result; and the longest collection inside one wait (shown apart)."""
    import asyncio
    import gc

    longest, collected, done = [0.0], [0.0], [False]
    collections = _Collections()

    async def tick() -> None:
        last = time.perf_counter()
        while not done[0]:
            await asyncio.sleep(0)
            now = time.perf_counter()
            pause = collections.within(last, now)
            longest[0], collected[0], last = max(longest[0], now - last), max(collected[0], pause), now

    gc.callbacks.append(collections)
    ticker = asyncio.ensure_future(tick())
    await asyncio.sleep(0)
    try:
        result = await coro
    finally:
        done[0] = True
        await ticker
        gc.callbacks.remove(collections)
    return longest[0], result, collected[0]


def _loop_graders() -> dict[str, object]:
    import re

    from rewardjudge import catalog
    from rewardjudge.graders import CandidateJudgeGrader, TemplatedPromptJudgeGrader
    from rewardjudge.testing import ScriptedModel

    fail = '{"reasoning": "It names the wrong city.", "score": "FAIL"}'

    def candidates(messages, params, schema):
        ids = re.findall(r'<submission id="([a-z0-9]{14})">', messages[-1]["content"])
        return "\n".join(f'<candidate id="{i}"><grade id="{i}">0</grade></candidate>' for i in ids)

    return {
        "templated": TemplatedPromptJudgeGrader(
            "t", ScriptedModel(default=fail), "Grade the answer. Reply as JSON: {{output_schema}}",
            "Question: {{last_user_turn_content}}\nAnswer: {{completion}}", reply_retries=0),
        "catalog": catalog.grader("helpfulness", ScriptedModel(default=fail), reply_retries=0),
        "candidate": CandidateJudgeGrader("c", ScriptedModel(candidates), max_rounds=1),
    }


def loop_waits(size: int = SIZE) -> list[tuple[str, str, float, float]]:
    """Per grader family and hostile text: the longest event-loop wait (seconds) during one grade (garbage
    collection included), and the longest collection in a wait (``_longest_wait``)."""
    import asyncio

    from rewardjudge import StringThread

    def thread(text: str) -> StringThread:
        return StringThread([("user", "What is the capital of France?"), ("assistant", text)])

    async def run() -> list[tuple[str, str, float, float]]:
        out = []
        for name, grader in _loop_graders().items():
            await grader.grade(thread("Paris."))   # warm: templates compiled, tables filled
            for label, text in hostile_texts(size).items():
                wait, _, collected = await _longest_wait(grader.grade(thread(text[:size - 64] + " Paris.")))
                out.append((name, label, wait, collected))
            # hunt 26: under the inline size, but a value every 4 characters (each walked per value)
            dense = json.dumps({"answer": "Paris.", "extra": [[]] * 16_000})
            wait, _, collected = await _longest_wait(grader.grade(thread(dense)))
            out.append((name, "JSON values, 64 KB", wait, collected))
        return out

    return asyncio.run(run())


def print_shapes(size: int = SIZE) -> dict:
    """One line per slow shape: the ms of each pass it goes through (``--shapes``: only these)."""
    passes = {name: fn for name, _, fn in _passes()}
    by_set = {"json": ("read_unsealed (a JSON verdict)", "pydantic_parse"),
              "text": ("neutralize (tags, control tokens)", "neutralize")}
    rows, results = [], {}
    for label, (which, text) in slow_shapes(size).items():
        times = [_time(passes[name], text) * 1e3 for name in by_set[which]]
        rows.append([label, *by_set[which], *times])
        results[f"shape: {label}"] = {"ms": [round(t, 2) for t in times]}
    print_table(f"The shapes once slowest, per {size // 1024} KiB (best of {_REPEAT}; ms of each pass)",
                ["shape", "pass", "second pass", "ms", "ms (second)"], rows)
    return results


#: (pass, input) of the slowest passes, counted by ``--instructions``
COUNTED = [("content-free screen (fields)", label) for label in (
    "right-to-left override, distinct pieces", "look-alike symbols, distinct pieces",
    "a master key and a colon, distinct pieces", "distinct code points", "keys of 1-3 letters and filler at random",
    "keys of 1-3 letters at random")] + [
    ("content-free screen (text)", "'\u89e3\u7b54\ub2f5' repeated"),
    ("content-free screen (text)", "'\u89e3' repeated"), ("content-free screen (text)", "'\u89e3\u7b54' repeated"),
    ("content-free screen (text)", "'\u0939\u0932' repeated"),
    ("content-free screen (text)", "one-character keys at random"),
    ("content-free screen (text)", "keys of 1-3 letters at random"),
    ("content-free screen (text)", "keys of 1-3 letters at random, separated"),
    ("content-free screen (text)", "keys of 1-3 letters and filler at random"), ("neutralize", "'%3c' repeated"),
    ("neutralize (tags, control tokens)", "'<s>' repeated")]


def _count_child(name: str, label: str) -> None:
    """Under callgrind: one call of the pass ``name`` on the input ``label``, counted alone (warm)."""
    import os
    import subprocess

    fn, text = dict((n, f) for n, _, f in _passes())[name], hostile_texts()[label]
    fn(text)
    fn(text)
    for args in (["-z"], ["-i", "on"]):
        subprocess.run(["callgrind_control", *args, str(os.getpid())], stdout=subprocess.DEVNULL, check=True)
    fn(text)
    for args in (["-i", "off"], ["-d", "counted"]):
        subprocess.run(["callgrind_control", *args, str(os.getpid())], stdout=subprocess.DEVNULL, check=True)


def _instructions(tree: str, name: str, label: str) -> float:
    """Millions of instructions of one call of a pass with ``tree``'s ``rewardjudge`` (callgrind)."""
    import glob
    import os
    import re
    import subprocess
    import sys
    import tempfile

    # ``tree``'s rewardjudge imported first (run in it: ``-c`` reads the working folder first), then this
    # checkout's bench (``tree`` may hold an older one)
    child = (f"import sys, rewardjudge; sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r}); "
             f"from bench.bench_linear import _count_child; _count_child({name!r}, {label!r})")
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "PYTHONPATH": tree}
        subprocess.run(["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={folder}/out.%p",
                        sys.executable, "-c", child],
                       env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        totals = [int(t) for f in glob.glob(f"{folder}/out.*")
                  for t in re.findall(r"^(?:totals|summary):\s*(\d+)", open(f, errors="replace").read(), re.M)]
    return max(totals, default=0) / 1e6


def print_instructions(argv: list[str]) -> dict:
    """``--instructions [--baseline PATH]``: the instructions of each ``COUNTED`` pass (and of another
    checkout's, a ``git worktree`` of an earlier commit): a measure the machine's load does not move."""
    trees = {"this": str(Path(__file__).resolve().parent.parent)}
    if "--baseline" in argv:
        trees = {"baseline": argv[argv.index("--baseline") + 1], **trees}
    rows, results = [], {}
    for name, label in COUNTED:
        counts = [_instructions(tree, name, label) for tree in trees.values()]
        rows.append([name, label, *counts])
        results[f"{name}: {label}"] = {"Minstr": [round(c, 1) for c in counts]}
    print_table("Instructions of one call of the slowest passes over 256 KiB (millions, callgrind)",
                ["pass", "input", *trees], rows)
    return results


def main(argv: list[str] | None = None) -> dict:
    if argv and "--shapes" in argv:
        return print_shapes()
    if argv and "--instructions" in argv:
        return print_instructions(argv)
    measured = _measure(SIZE)
    quarter = {"text": hostile_texts(SIZE // 4), "json": hostile_json(SIZE // 4)}
    rows, results = [], {}
    for name, label, seconds, fn, which in measured:
        small = quarter[which].get(label)
        ratio = seconds / max(_time(fn, small), 1e-6) if small is not None and seconds > 0.002 else None
        ok = seconds < TARGET_S
        rows.append([name, label, seconds * 1e3, ratio, "ok" if ok else "OVER"])
        results[name] = {"worst_input": label, "ms": round(seconds * 1e3, 2),
                         "ratio_to_quarter_size": None if ratio is None else round(ratio, 1)}
    print_table(f"Worst time of every pass over hostile {SIZE // 1024} KiB inputs (best of {_REPEAT}; "
                f"target {TARGET_S * 1e3:.0f} ms; ratio: the same input at 4x the size of a quarter, "
                f"~4 when linear, ~16 when quadratic)",
                ["pass", "worst input", "ms", "ratio 256K/64K", f"< {TARGET_S * 1e3:.0f} ms"], rows)
    results.update(print_shapes())
    waits = loop_waits(SIZE)
    worst: dict[str, tuple[str, float]] = {}
    collected: dict[str, float] = {}
    for name, label, wait, pause in waits:
        if wait > worst.get(name, ("", -1.0))[1]:
            worst[name] = (label, wait)
        collected[name] = max(collected.get(name, 0.0), pause)
    print_table(f"Longest event-loop wait during one grade of a hostile {SIZE // 1024} KiB completion "
                f"(scripted judge; the worst input of each family; the garbage collector's runs included, "
                f"the longest one in a wait shown apart: a full collection's time is the process heap's)",
                ["grader", "worst input", "ms", f"< {TARGET_S * 1e3:.0f} ms", "collection ms"],
                [[n, label, w * 1e3, "ok" if w < TARGET_S else "OVER", collected[n] * 1e3]
                 for n, (label, w) in worst.items()])
    emit("linear", {"size": SIZE, "target_ms": TARGET_S * 1e3, "passes": results,
                    "loop_wait_ms": {n: round(w * 1e3, 2) for n, (_, w) in worst.items()},
                    "collection_ms": {n: round(c * 1e3, 2) for n, c in collected.items()}})
    return results


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
