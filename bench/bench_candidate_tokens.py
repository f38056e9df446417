"""Prompt tokens per grade and requests: CandidateJudgeGrader at batch sizes 1, 4 and 8.

The same 32 samples (4 prompts x 8 completions, a GRPO-style group each) are
graded with ``batch_size`` 1, 4 and 8. Prompts are counted with the embedded
judge's real tokenizer and chat template (SmolLM2-135M-Instruct's GGUF, read
with ``llama_cpp.Llama(vocab_only=True)``), by a judge stand-in that answers
every candidate honestly, so every size sends exactly one request per chunk.
One batch-8 prompt is then sent to the spawned llama.cpp server as a check:
its ``usage.prompt_tokens`` must equal the local count.

Run: ``python bench/bench_candidate_tokens.py`` (``--no-server-check`` skips
the spawned server). Prints a table and one ``BENCH {json}`` line.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from pathlib import Path
from typing import Any, Sequence

if __package__ in (None, ""):  # run as a script: make `bench` and `rewardjudge` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import emit, print_table  # noqa: E402
from rewardjudge import StringThread  # noqa: E402
from rewardjudge.graders import CandidateJudgeGrader  # noqa: E402
from rewardjudge.models import GenerationParams, InferenceModel  # noqa: E402
from rewardjudge.models._base import Completion  # noqa: E402
from rewardjudge.models import embedded_model_path  # noqa: E402

BATCH_SIZES = (1, 4, 8)
SYSTEM = "You are a helpful assistant. Answer accurately and concisely."
QUESTIONS = {
    "What causes the seasons on Earth?": [
        "The tilt of Earth's axis, about 23.4 degrees, changes how directly sunlight hits each "
        "hemisphere over the year. When a hemisphere leans toward the Sun it gets more direct light "
        "and longer days: summer.",
        "Seasons happen because Earth is closer to the Sun in summer and farther away in winter.",
        "Axial tilt. Summer in the hemisphere tilted toward the Sun, winter in the other.",
        "Earth's orbit is elliptical, but that is not the main cause: the 23.4 degree axial tilt "
        "changes the Sun's angle and day length, so energy per square metre varies by season.",
        "Because of the weather patterns that move around the globe every year.",
        "The tilt of the axis. Also the distance matters a lot, perihelion is in July.",
        "Seasons are caused by axial tilt: sunlight spreads over a larger area when it arrives at a "
        "low angle, which cools that hemisphere, and days are shorter.",
        "I am not sure, maybe the Moon?",
    ],
    "How do I reverse a list in Python?": [
        "Use `my_list.reverse()` to reverse in place, or `my_list[::-1]` for a reversed copy.",
        "`reversed(my_list)` returns an iterator; wrap it in `list()` if you need a list.",
        "You can't reverse lists in Python; convert to a tuple first.",
        "my_list.sort(reverse=True) reverses the list.",
        "Three ways: `lst.reverse()` (in place, returns None), `lst[::-1]` (new list), and "
        "`list(reversed(lst))` (new list from an iterator). Pick in-place for large lists.",
        "for i in range(len(l)): l[i] = l[-i]",
        "Slicing with a negative step: `lst[::-1]`.",
        "Use the reverse() method. Note it returns None, so `x = lst.reverse()` sets x to None.",
    ],
    "Summarise the causes of the French Revolution in two sentences.": [
        "Royal debt from wars and a rigid tax system that spared nobles and clergy pushed France "
        "toward bankruptcy. Enlightenment ideas and bread shortages turned fiscal crisis into revolt.",
        "The French Revolution was caused by Napoleon wanting to become emperor.",
        "Financial crisis, social inequality between the three estates, and new political ideas. "
        "Bad harvests in 1788 made bread expensive and angered the poor.",
        "It started in 1789.",
        "Debt, unfair taxes, famine and Enlightenment thought combined; when Louis XVI called the "
        "Estates-General, the Third Estate broke away and declared itself the National Assembly.",
        "Causes: money problems. And people were unhappy.",
        "The monarchy's bankruptcy forced reforms that the privileged orders blocked, while high "
        "bread prices and new ideas of popular sovereignty mobilised the Third Estate.",
        "The storming of the Bastille caused the French Revolution.",
    ],
    "Is 91 a prime number? Explain.": [
        "No. 91 = 7 x 13, so it has divisors other than 1 and itself.",
        "Yes, 91 is prime because it is odd and not divisible by 3 or 5.",
        "No, 91 is 7 times 13.",
        "91 is not prime: checking primes up to sqrt(91) ~ 9.5, 7 divides it (7 x 13 = 91).",
        "Yes.",
        "It's composite. 91/7 = 13.",
        "91 is prime since it doesn't end in an even digit.",
        "No. A prime has exactly two divisors; 91 has four: 1, 7, 13 and 91.",
    ],
}


def samples() -> list[StringThread]:
    """4 prompts x 8 completions, grouped by prompt in the input order of a GRPO batch."""
    return [StringThread([("system", SYSTEM), ("user", q), ("assistant", a)])
            for q, answers in QUESTIONS.items() for a in answers]


class TokenCountingJudge(InferenceModel):
    """An honest stand-in judge that counts tokens as the embedded model would.

    The prompt is formatted with the GGUF's own chat template and tokenized
    with its vocabulary; the reply gives every candidate a grade with one
    sentence of reasoning and is counted the same way.
    """

    name = "smollm2-tokenizer"

    def __init__(self) -> None:
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.llm = llama_cpp.Llama(model_path=str(embedded_model_path()), vocab_only=True, verbose=False)
        self.formatter = Jinja2ChatFormatter(template=self.llm.metadata["tokenizer.chat_template"],
                                             eos_token="<|im_end|>", bos_token="<|im_start|>",
                                             add_generation_prompt=True)
        self.requests: list[int] = []   # candidates per request
        self.sent: list[list[dict[str, str]]] = []

    def count_prompt(self, messages: Sequence[dict[str, str]]) -> int:
        prompt = self.formatter(messages=list(messages)).prompt
        return len(self.llm.tokenize(prompt.encode(), add_bos=False, special=True))

    def count(self, text: str) -> int:
        return len(self.llm.tokenize(text.encode(), add_bos=False, special=False))

    async def chat(self, messages, params: GenerationParams | None = None, *, json_schema=None) -> Completion:
        ids = re.findall(r'<submission id="([a-z0-9]+)">', messages[-1]["content"])
        self.requests.append(len(ids))
        self.sent.append([dict(m) for m in messages])
        reply = "\n".join(f'<candidate id="{cid}">\n<reasoning>Accurate on the main point but '
                          f'misses a detail.</reasoning>\n<grade id="{cid}">{k % 5}</grade>\n</candidate>'
                          for k, cid in enumerate(ids))
        return Completion(text=reply, usage={"prompt_tokens": self.count_prompt(messages),
                                             "completion_tokens": self.count(reply)})


async def _server_check(messages: list[dict[str, str]]) -> int:
    """``usage.prompt_tokens`` of the spawned embedded judge for ``messages``."""
    from rewardjudge.models import spawn_judge

    async with spawn_judge(context_length=4096) as judge:
        reply = await judge.chat(messages, GenerationParams(max_tokens=1, temperature=0.0))
    return int(reply.usage["prompt_tokens"])


async def run(server_check: bool = True) -> dict[str, Any]:
    data = samples()
    judge = TokenCountingJudge()
    rows: dict[int, dict[str, Any]] = {}
    check_messages: list[dict[str, str]] | None = None
    for size in BATCH_SIZES:
        judge.requests.clear()
        judge.sent.clear()
        grades = await CandidateJudgeGrader("bench", judge, batch_size=size, seed=0).grade_batch(data)
        assert all(g.status == "scored" for g in grades), "the honest stand-in must judge everyone"
        prompt = sum(g.usage["prompt_tokens"] for g in grades)
        completion = sum(g.usage["completion_tokens"] for g in grades)
        rows[size] = {"requests": len(judge.requests), "grades": len(grades),
                      "prompt_tokens": prompt, "prompt_tokens_per_grade": prompt / len(grades),
                      "completion_tokens_per_grade": completion / len(grades)}
        if size == max(BATCH_SIZES):
            check_messages = judge.sent[0]
    base = rows[1]["prompt_tokens_per_grade"]
    for row in rows.values():
        row["vs_batch_1"] = row["prompt_tokens_per_grade"] / base
    result: dict[str, Any] = {"samples": len(data), "groups": len(QUESTIONS),
                              "group_size": len(data) // len(QUESTIONS),
                              "tokenizer": embedded_model_path().name,
                              "by_batch_size": {str(k): v for k, v in rows.items()}}
    if server_check and check_messages is not None:
        local = judge.count_prompt(check_messages)
        served = await _server_check(check_messages)
        result["server_check"] = {"local_prompt_tokens": local, "server_prompt_tokens": served,
                                  "equal": local == served}
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--no-server-check", action="store_true",
                   help="do not spawn the embedded judge to confirm the token count")
    args = p.parse_args(argv)
    result = asyncio.run(run(server_check=not args.no_server_check))
    rows = [(size, r["requests"], r["prompt_tokens"], r["prompt_tokens_per_grade"], r["vs_batch_1"],
             r["completion_tokens_per_grade"])
            for size, r in ((int(k), v) for k, v in result["by_batch_size"].items())]
    print_table(f"CandidateJudgeGrader on {result['samples']} samples ({result['groups']} prompts x "
                f"{result['group_size']} completions), tokens of {result['tokenizer']}",
                ["batch_size", "requests", "prompt tokens", "prompt tokens/grade", "vs batch 1",
                 "reply tokens/grade (scripted)"], rows)
    check = result.get("server_check")
    if check:
        print(f"\nserver check (one batch-8 prompt): local {check['local_prompt_tokens']} tokens, "
              f"llama.cpp server usage.prompt_tokens {check['server_prompt_tokens']}"
              f" -> {'equal' if check['equal'] else 'DIFFERENT'}")
    emit("candidate_tokens", result)
    return result


if __name__ == "__main__":
    main()
