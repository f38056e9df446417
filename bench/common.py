"""Shared pieces of the benchmarks: a fake judge server in its own process,
CPU clocks, typical templates and samples, and result printing.

Every benchmark prints a table for people and one line ``BENCH {json}`` for
machines. Figures are ratios measured in one run: these machines are noisy
and shared, so absolute times are printed only as context.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent

# A typical judge prompt: a rubric, the output schema, the conversation and
# the answer (~40 lines once rendered).
SYSTEM_TEMPLATE = """You are a strict, fair grader of assistant answers.
Judge the answer against every criterion below; do not reward length or style.

Criteria:
{{#each criteria}}
- {{this}}
{{/each}}

Reply with a single JSON object that matches this schema, and nothing else:
{{output_schema}}"""

USER_TEMPLATE = """Conversation so far:
{{context_str_without_last_user}}

The user asked:
<question>
{{last_user_turn_content}}
</question>

The assistant answered:
<answer>
{{completion}}
</answer>

{{#if metadata.reference}}A reference answer: {{metadata.reference}}
{{/if}}Grade the answer now."""

CRITERIA = [
    "The answer is factually correct.",
    "The answer addresses what was asked, all of it.",
    "The answer does not invent facts, sources or numbers.",
    "The answer is safe and respectful.",
]

def line_graders(judge: Any, **options: Any) -> tuple[Any, Any]:
    """The templated graders asking for a verdict on a line: the cookbook's unstructured
    "Respond with PASS or FAIL" (a sealed label line) and a declared ``Rating: [[{score}]]``."""
    from rewardjudge import TemplatedPromptJudgeGrader

    system = "You grade answers against these criteria:\n" + "\n".join(f"- {c}" for c in CRITERIA)
    question = "Question: {{last_user_turn_content}}\nAnswer: {{completion}}\n"
    return (TemplatedPromptJudgeGrader("real-label", judge, system, question + "Respond with PASS or FAIL.",
                                       structured=False, **options),
            TemplatedPromptJudgeGrader("real-form", judge, "You rate answers from 1 to 10.",
                                       question + "Rate it as Rating: [[N]].", verdict_form="Rating: [[{score}]]",
                                       score_bounds=(1, 10), **options))


# Eight candidates behind opaque ids, one reply line per id.
MULTI_TEMPLATE = """You compare {{n}} candidate answers to one question.

<question>
{{question}}
</question>

{{#each candidates}}
<candidate id="{{this.id}}">
{{this.text}}
</candidate>
{{/each}}

For every candidate id, give a grade from 1 to 5 and one sentence of reasoning.
Reply as JSON: {{output_schema}}"""


def sample_thread(i: int = 0, *, typographic: bool = False):
    """A typical sample: a system turn, one earlier exchange, the question, the answer; pure
    ASCII, or (``typographic``) with a curly quote and an en dash in question and answer, as
    real text often has (the neutraliser and the screen take another path then)."""
    from rewardjudge import StringThread

    if typographic:
        question = f"And what\u2019s {i} + {i} \u2013 explain briefly?"
        answer = f"{i} + {i} = {2 * i} \u2013 adding a number to itself doubles it, so it\u2019s twice {i}. "
    else:
        question = f"And what is {i} + {i}? Explain briefly."
        answer = f"{i} + {i} = {2 * i}. Adding a number to itself doubles it, so the sum is twice {i}. "
    return StringThread([
        ("system", "You are a helpful assistant."),
        ("user", "What is the capital of France?"),
        ("assistant", "Paris."),
        ("user", question),
        ("assistant", answer + "This answer is padded to a typical length. " * 6),
    ], metadata={"reference": str(2 * i), "id": i})


# --------------------------------------------------------------------------
# the fake judge server, in its own process
# --------------------------------------------------------------------------
class ServerProcess:
    """``python -m rewardjudge.testing`` in a child process (it must not share
    the client's interpreter, or it would steal the client's core).

    ``cpu_s()`` reads the child's user+system CPU time from /proc, so a
    benchmark can check the server costs less than the client it measures.
    """

    def __init__(self, latency: float, *, reply: str | None = None):
        self.latency = latency
        self.reply = reply
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def __enter__(self) -> "ServerProcess":
        cmd = [sys.executable, "-m", "rewardjudge.testing", "--port", "0",
               "--latency", str(self.latency)]
        if self.reply is not None:
            cmd += ["--reply", self.reply]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, text=True, cwd=ROOT)
        line = self.proc.stdout.readline().strip()
        if not line.startswith("listening "):
            self.proc.kill()
            raise RuntimeError(f"fake server did not start: {line!r}")
        self.url = line.split(" ", 1)[1]
        return self

    def cpu_s(self) -> float:
        assert self.proc is not None
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime

    def __exit__(self, *exc: Any) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
            if self.proc.stdout:
                self.proc.stdout.close()


# --------------------------------------------------------------------------
# measuring and printing
# --------------------------------------------------------------------------
def cpu_per_call(fn, *, min_time: float = 0.15, min_calls: int = 20) -> float:
    """CPU seconds (this process) per call of ``fn()``, best of 3 rounds."""
    fn()  # warm caches (template compile, schema build)
    n = min_calls
    while True:
        t0 = time.process_time()
        for _ in range(n):
            fn()
        used = time.process_time() - t0
        if used >= min_time / 3 or n >= 1_000_000:
            break
        n *= 4
    best = used / n
    for _ in range(2):
        t0 = time.process_time()
        for _ in range(n):
            fn()
        best = min(best, (time.process_time() - t0) / n)
    return best


def print_table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]], *,
                fmt: Callable[[Any], str] | None = None) -> None:
    """A markdown table of ``rows`` under ``title``; ``fmt`` writes a cell (default ``_fmt``)."""
    cell = fmt or _fmt
    cells = [[str(h) for h in headers]] + [[cell(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    print(f"\n{title}")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(cells[0], widths)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in cells[1:]:
        print("| " + " | ".join(c.rjust(w) for c, w in zip(r, widths)) + " |")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        if v == 0:
            return "0"
        if abs(v) >= 100:
            return f"{v:.0f}"
        if abs(v) >= 1:
            return f"{v:.2f}"
        return f"{v:.3f}"
    return "-" if v is None else str(v)


def emit(name: str, results: dict[str, Any]) -> None:
    """Print the machine-readable line of one benchmark."""
    print("BENCH " + json.dumps({"bench": name, **results}, sort_keys=True), flush=True)
