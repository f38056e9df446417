"""Fuzz judge replies over real loopback HTTP: every grader family against mutated server replies.

A raw asyncio server answers each request with one seeded mutation of a valid chat or completions
body (fields dropped, renamed, retyped, nested; nulls, huge numbers, NaN and Infinity literals; odd
statuses and Retry-After values, truncated, dripped, reset, mislabelled or falsely gzipped bodies).
The server never knows the request's seal, so no chat reply holds a sealed verdict: each grade must
come back unscored or penalized. A probability grade may be scored only where the mutation left a
valid distribution (``valid_distribution``). Nothing may raise, no grade may be a "grader error" (an
exception that is no judge error escaped the model), and every unscored grade counts in ``judge_health``
under a kind of failure.

    python -m bench.bench_fuzz_replies --cases 5000 --seed 7
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gzip
import json
import math
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from rewardjudge import StringThread
from rewardjudge.attacks import default_targets
from rewardjudge.models import OpenAIModel, RetryPolicy
from rewardjudge.rl._health import unscored_kind

TIMEOUT_S = 0.4
OFF_THE_GRADES = "of the judge's probability fell on the grades"
CHOICES = ("1", "2", "3", "4", "5")
CONTENTS = ('{"reasoning": "Checked.", "score": "PASS"}', '{"reason": "ok", "verdict": true}', "PASS",
            "VERDICT 0123456789abcdef0123: PASS", '<candidate id="c1">5</candidate>', "[[5]]", "", " ",
            "Rating: [[10]]", '{"seal": "0000000000000000", "score": "PASS", "seal_end": "0000000000000000"}')
ODD_VALUES: tuple[Any, ...] = (None, "", "x", 0, -1, 1e308, 10 ** 400, float("nan"), float("inf"),
                               float("-inf"), True, [], {}, [None], {"": None}, "\u0000", "4" * 5000)
STATUSES = (204, 301, 302, 304, 400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504, 599)
RETRY_AFTER = (None, "", "-1", "NaN", "inf", "1e999", "abc", "0.01", "99999999",
               "Wed, 21 Oct 2015 07:28:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT", "Mon, 32 Foo 2020")
CONTENT_TYPES = ("application/json", "text/html", "text/plain", None, "application/json; charset=latin-1",
                 "text/event-stream")


def chat_body(rng: random.Random) -> dict[str, Any]:
    lp = [{"token": t, "logprob": -float(i + 1), "top_logprobs": [{"token": t, "logprob": -1.0}]}
          for i, t in enumerate(["PASS", "\n"])]
    return {"id": "r", "object": "chat.completion", "created": 1, "model": "judge",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": rng.choice(CONTENTS)},
                         "finish_reason": "stop", "logprobs": {"content": lp}}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52}}


def completions_body(rng: random.Random) -> dict[str, Any]:
    top = {c: math.log(p) for c, p in zip(CHOICES, (0.05, 0.1, 0.2, 0.4, 0.2))}
    return {"id": "r", "object": "text_completion", "created": 1, "model": "judge",
            "choices": [{"index": 0, "text": "4", "finish_reason": "length",
                         "logprobs": {"tokens": ["4"], "token_logprobs": [top["4"]], "top_logprobs": [top],
                                      "text_offset": [0]}}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 1, "total_tokens": 41}}


def _paths(value: Any, at: tuple = ()) -> list[tuple]:
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, at + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, at + (i,))
    return out


def mutate(rng: random.Random, body: dict[str, Any]) -> tuple[Any, list[str]]:
    """``body`` with one to three random edits of its tree, and what each was."""
    done: list[str] = []
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(_paths(body)[1:] or [()])
        if not path:
            break
        parent = body
        for p in path[:-1]:
            parent = parent[p]
        key, value = path[-1], parent[path[-1]]
        op = rng.choice(("drop", "rename", "retype", "retype", "nest_list", "nest_object", "dup"))
        done.append(f"{op} {'/'.join(map(str, path))}")
        if op == "drop" or (op == "rename" and isinstance(parent, list)):
            del parent[key]
        elif op == "rename":
            parent[rng.choice((str(key).upper(), f"{key}_", "", str(key)[:-1]))] = parent.pop(key)
        elif op == "retype":
            parent[key] = copy.deepcopy(rng.choice(ODD_VALUES))
        elif op == "nest_list":
            parent[key] = [value]
        elif op == "nest_object":
            parent[key] = {str(key): value}
        elif isinstance(parent, list):
            parent.append(copy.deepcopy(value))
        else:
            parent[f"{key}2"] = copy.deepcopy(value)
    return body, done


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    #: whole | no_length | short | drip | slow | reset | reset_mid
    mode: str = "whole"
    #: the parsed body, where it is one a probability grade may be read from
    data: Any = None
    what: str = ""


def make_reply(rng: random.Random, completions: bool) -> Reply:
    body = completions_body(rng) if completions else chat_body(rng)
    r = rng.random()
    data: Any = body
    what: list[str] = []
    if r < 0.6:
        data, what = mutate(rng, body)
    elif r < 0.7:
        data = rng.choice(({"error": {"code": rng.choice((429, "429", 500, None, 1e400, 200, [503], 400)),
                                      "message": rng.choice(("busy", None, 7, "maximum context length"))}},
                           {"error": rng.choice(("x", 1, [1], True))}, [body], "text", 4, None, {},
                           {"choices": {}}, {"choices": [None]}, {"choices": "x"}))
        what = ["replaced"]
    text = json.dumps(data).encode()
    if r >= 0.7 and r < 0.85:   # a body that is no JSON of a reply
        text = rng.choice((b"", b"<html><body>502 Bad Gateway</body></html>", text[: rng.randrange(len(text))],
                           b"data: " + text + b"\n\ndata: [DONE]\n\n", b"\xef\xbb\xbf" + text,
                           b"\xff\xfe" + text, b"[" * 5000, b'{"a":' * 3000, text + b"garbage",
                           b"\x00" * 10, text.replace(b'"', b"'")))
        # a byte-order mark before the body is no part of its value: the body stays readable
        data, what = (data if text.startswith(b"\xef\xbb\xbf{") else None), ["raw"]
    status = 200 if rng.random() < 0.75 else rng.choice(STATUSES)
    headers = {}
    ctype = rng.choice(CONTENT_TYPES)
    if ctype:
        headers["Content-Type"] = ctype
    if rng.random() < 0.3:
        retry = rng.choice(RETRY_AFTER)
        if retry is not None:
            headers["Retry-After"] = retry
    if status in (301, 302) and rng.random() < 0.5:
        headers["Location"] = rng.choice(("/elsewhere", "http://127.0.0.1:1/v1", "\u00e9"))
    if rng.random() < 0.08:
        headers["Content-Encoding"] = "gzip"
        if rng.random() < 0.5:
            text = gzip.compress(text)
        else:
            data = None
    mode = rng.choices(("whole", "no_length", "short", "drip", "slow", "reset", "reset_mid"),
                       (70, 8, 6, 6, 2, 4, 4))[0]
    if mode in ("short", "reset", "reset_mid") or status != 200:
        data = None
    return Reply(status, text, headers, mode, data, f"{status} {mode} {headers} {' '.join(what)}")


def valid_distribution(data: Any) -> bool:
    """True when ``data`` is a completions body whose chosen choice still holds a distribution over
    the grade tokens a reader may honestly use: logprobs <= 0, probabilities summing to at most 1."""
    try:
        choices = data["choices"]
        choice = next((c for c in choices if isinstance(c, dict) and c.get("index") == 0), choices[0])
        top = choice["logprobs"]["top_logprobs"][0]
        # an alternative whose logprob is no number <= 0 is left out by the reader (hunt 22)
        pairs = [v for k, v in top.items() if k.strip() in CHOICES and type(v) in (int, float) and -1e18 < v <= 0]
    except Exception:
        return False
    return bool(pairs) and sum(math.exp(v) for v in pairs) <= 1 + 1e-9


class FuzzServer:
    """A loopback HTTP/1.1 server answering every request with ``self.reply`` as it says."""

    def __init__(self) -> None:
        self.reply = Reply()
        self.requests = 0
        self._server: asyncio.AbstractServer | None = None

    async def __aenter__(self) -> "FuzzServer":
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc) -> None:
        self._server.close()
        await self._server.wait_closed()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                self.requests += 1
                if not await self._answer(writer, self.reply):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError, asyncio.CancelledError):
            pass   # the client went, or the server closes while a slow reply drips
        finally:
            writer.close()

    async def _answer(self, w: asyncio.StreamWriter, r: Reply) -> bool:
        """Write ``r``; False when the connection is to be closed."""
        if r.mode == "reset":
            w.transport.abort()
            return False
        body = r.body
        lines = [f"HTTP/1.1 {r.status} Fuzz"] + [f"{k}: {v}" for k, v in r.headers.items()]
        if r.mode == "short":
            lines.append(f"Content-Length: {len(body) + 100}")
        elif r.mode != "no_length":
            lines.append(f"Content-Length: {len(body)}")
        else:
            lines.append("Connection: close")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
        if r.mode == "reset_mid":
            w.write(head + body[: len(body) // 2])
            await w.drain()
            w.transport.abort()
            return False
        if r.mode in ("drip", "slow"):
            w.write(head)
            step = max(1, len(body) // 4)
            for i in range(0, len(body), step):
                await asyncio.sleep(0.01 if r.mode == "drip" else TIMEOUT_S / 2)
                w.write(body[i:i + step])
                await w.drain()
            return True
        w.write(head + body)
        await w.drain()
        return r.mode == "whole" and r.status not in (204, 304)


SAMPLE = StringThread([("user", "What is the capital of France?"), ("assistant", "Paris.")])
GROUP = [StringThread([("user", "What is the capital of France?"), ("assistant", a)])
         for a in ("Paris.", "Lyon.", "Paris, France.")]
TEMPLATE = "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}<|assistant|>"


def families() -> dict[str, Callable[[OpenAIModel], Any]]:
    targets = default_targets()
    return {name: t.build for name, t in targets.items()}


async def run_fuzz(cases: int, seed: int, on_case: Callable[[int, str, Reply, list], None] | None = None
                   ) -> tuple[list[str], dict[str, int]]:
    """``(problems, counts)`` of ``cases`` fuzzed grades: a problem names the case, family and reply."""
    rng = random.Random(seed)
    fams = families()
    names = sorted(fams)
    problems: list[str] = []
    counts: dict[str, int] = {}
    policy = RetryPolicy(max_retries=1, base_delay=0.0, max_delay=0.0, max_retry_after=0.02)
    async with FuzzServer() as server:
        for case in range(cases):
            name = rng.choice(names)
            probability = name.startswith("Probability")
            server.reply = reply = make_reply(rng, probability)
            model = OpenAIModel(server.url, "judge", timeout=TIMEOUT_S, retry_policy=policy, max_concurrency=4,
                                chat_template=TEMPLATE, logprobs_endpoint="completions")
            grader = fams[name](model)
            samples = GROUP if name.startswith("Candidate") else [SAMPLE]
            try:
                async with model:
                    grades = await asyncio.wait_for(grader.grade_batch(samples), 30)
            except Exception as exc:   # noqa: BLE001 - what the fuzz looks for
                problems.append(f"case {case} {name}: raised {type(exc).__name__}: {exc!s:.200} <- {reply.what}")
                continue
            for g in grades:
                counts[g.status] = counts.get(g.status, 0) + 1
                if g.status == "unscored":
                    kind = unscored_kind(g.error)
                    counts[f"unscored/{kind}"] = counts.get(f"unscored/{kind}", 0) + 1
                    # "other": no kind judge_health counts; a probability judge whose mass fell off the
                    # grades wrote a reply with no verdict in it, the one such reason known
                    if "grader error" in (g.error or "") or kind == "other" and OFF_THE_GRADES not in g.error:
                        problems.append(f"case {case} {name}: {g.error:.200} <- {reply.what}")
                if g.status == "scored" and not (probability and valid_distribution(reply.data)):
                    problems.append(f"case {case} {name}: scored {g.value} <- {reply.what} {reply.body[:300]!r}")
            if on_case is not None:
                on_case(case, name, reply, grades)
    return problems, counts


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(prog="python -m bench.bench_fuzz_replies", description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv if argv is not None else [])
    t0 = time.perf_counter()
    problems, counts = asyncio.run(run_fuzz(args.cases, args.seed))
    seconds = time.perf_counter() - t0
    print(f"{args.cases} cases, seed {args.seed}: {seconds:.1f} s ({args.cases / seconds:.0f} cases/s)")
    for k in sorted(counts):
        print(f"  {k:32} {counts[k]}")
    print(f"{len(problems)} problem(s)")
    for line in problems[:50]:
        print("  " + line)
    return {"cases": args.cases, "problems": len(problems), "seconds": seconds}


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
