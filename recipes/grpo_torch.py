"""GRPO in plain torch: a small policy writes structured JSON, an LLM judge grades it.

The policy answers questions as ``{"answer": ..., "confidence": ...}`` (the
seed cookbook's ``AnalysisOutput``); a ``TemplatedPromptJudgeGrader`` parses
that JSON, puts the answer, the confidence and the dataset's reference answer
into its judge prompt, and asks the judge for PASS/FAIL. Each step samples
``--group-size`` completions per prompt, grades them in one concurrent batch,
turns the grades into rewards and a mask (``rewards_tensor``), computes GRPO
advantages that ignore unscored completions (``group_normalize``), takes one
policy-gradient step, prints one line (reward mean, share of groups whose
rewards differ, unscored rate, judge p50 latency, loss) and appends the full
metrics, judge health included (``judge_health``), to a JSONL file
(``--metrics``, default ``OUTPUT_DIR/metrics.jsonl``; ``OUTPUT_DIR`` defaults
to ``runs/grpo_torch-<time>``).

Decoding (``--decoding``):

* ``constrained`` (default): the JSON scaffold is fixed; the policy writes
  the answer text (tokens that cannot break the JSON string) and picks the
  confidence among the schema's values. Every completion parses, so the
  judge sees every one: the mode for a tiny or untrained policy.
* ``free``: the policy writes the whole completion; malformed JSON is
  penalized without asking the judge (the cookbook's -1 training penalty).

Launch commands:

    # CPU, the embedded judge (SmolLM2-135M on llama.cpp's server), a tiny random policy
    python recipes/grpo_torch.py --steps 4
    # CPU, the scripted judge (no server; PASS when the reference, or half its letter pairs, is in
    # the answer: partial credit that an untrained policy sometimes earns), 10% judge failures
    python recipes/grpo_torch.py --judge scripted --judge-fail-rate 0.1 --steps 4
    # CPU, free-form JSON from the tiny policy after a supervised warm-up on gold answers
    python recipes/grpo_torch.py --judge scripted --decoding free --sft-steps 60 --steps 4
    # CPU, SmolLM2-135M-Instruct itself as the policy
    python recipes/grpo_torch.py --policy smollm2 --steps 2
    # GPU, a real judge server (vLLM, SGLang, OpenAI...) and a real policy checkpoint
    python recipes/grpo_torch.py --device cuda --policy /models/Qwen2.5-0.5B-Instruct \\
        --judge-url http://judge:8000/v1 --judge-model Qwen/Qwen2.5-7B-Instruct \\
        --steps 200 --prompts-per-step 16 --group-size 8 --max-new-tokens 64 --lr 1e-6
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import random
import sys
import time
from dataclasses import dataclass
from typing import Any

import torch

from rewardjudge import JudgeHTTPError, StringThread
from rewardjudge.core.structured_output import render_schema
from rewardjudge.demo import JUDGE_SYSTEM_PROMPT, AnalysisOutput
from rewardjudge.graders.templated_prompt_judge import BinaryJudgeOutput, TemplatedPromptJudgeGrader
from rewardjudge.rl import OutageGuard, group_normalize, judge_health, rewards_tensor

QUESTIONS = [
    ("What is the capital of France?", "Paris"),
    ("What is 2 + 2?", "4"),
    ("Which planet is known as the red planet?", "Mars"),
    ("What is the chemical symbol for gold?", "Au"),
    ("How many legs does a spider have?", "8"),
    ("What is the largest ocean on Earth?", "Pacific"),
    ("Who wrote Romeo and Juliet?", "Shakespeare"),
    ("What gas do plants absorb from the air?", "carbon dioxide"),
]

INSTRUCTIONS = f"Answer the question. Output must be valid JSON:\n{render_schema(AnalysisOutput)}"

JUDGE_USER_TEMPLATE = """Question:
{{last_user_turn_content}}

Reference answer:
{{metadata.reference}}

Model answer:
{{answer}}

Confidence: {{confidence}}

Is this answer correct, complete, and well-articulated?"""

CONFIDENCES = ("high", "medium", "low")

#: the plain-text task (``make_grader(judge, structured=False)``): the policy answers in
#: words and the judge reads the completion as it is; no JSON to get wrong
PLAIN_INSTRUCTIONS = "Answer the question in a few words."

PLAIN_JUDGE_USER_TEMPLATE = """Question:
{{last_user_turn_content}}

Reference answer:
{{metadata.reference}}

Model answer:
{{completion}}

Is this answer correct, complete, and well-articulated?"""


def make_grader(judge, structured: bool = True) -> TemplatedPromptJudgeGrader:
    """The cookbook's grader, with the reference answer from metadata:
    ``structured`` parses the completion as ``AnalysisOutput`` JSON (malformed
    JSON is penalized without asking the judge); otherwise the judge reads
    the completion as plain text."""
    return TemplatedPromptJudgeGrader(
        grader_key="analysis-grader", model=judge, system_template=JUDGE_SYSTEM_PROMPT,
        user_template=JUDGE_USER_TEMPLATE if structured else PLAIN_JUDGE_USER_TEMPLATE,
        output_model=BinaryJudgeOutput, temperature=0.0,
        completion_model=AnalysisOutput if structured else None, max_tokens=200)


def _bigrams(text: str) -> set[str]:
    text = text.lower()
    return {text[i:i + 2] for i in range(len(text) - 1)} or {text}


def lenient_verdict(reference: str, answer: str) -> tuple[bool, str]:
    """The scripted judge's rubric: PASS when the reference is in the answer,
    or (partial credit, so that an untrained policy gets a reward that differs
    between its samples) when at least half of the reference's letter pairs
    appear in it."""
    if reference.lower() in answer.lower():
        return True, "reference found"
    want = _bigrams(reference)
    found = sum(b in answer.lower() for b in want)
    return 2 * found >= len(want), f"{found} of {len(want)} reference letter pairs found"


def scripted_judge(fail_rate: float, seed: int):
    """A judge without a model, grading by ``lenient_verdict``; ``fail_rate``
    of the requests fail with HTTP 503 (unscored grades)."""
    from rewardjudge.testing import ScriptedModel

    rng = random.Random(seed)

    def reply(messages, params, schema):
        if rng.random() < fail_rate:
            return JudgeHTTPError(503, "scripted outage")
        text = messages[-1]["content"]
        reference = text.split("Reference answer:\n", 1)[1].split("\n", 1)[0]
        answer = text.split("Model answer:\n", 1)[1]
        for tail in ("\n\nConfidence:", "\n\nIs this answer"):
            if tail in answer:
                answer = answer.rsplit(tail, 1)[0]
                break
        ok, why = lenient_verdict(reference, answer)
        return json.dumps({"reasoning": why, "score": "PASS" if ok else "FAIL"})

    return ScriptedModel(reply, name="scripted-judge")


# --------------------------------------------------------------------------
# per-step metrics: one readable line on stdout, the full record in a JSONL file
# --------------------------------------------------------------------------
def group_reward_stats(rewards: torch.Tensor, mask: torch.Tensor, group_size: int) -> dict[str, float]:
    """Within-group spread of the usable rewards (unscored ones left out): the
    mean of the groups' standard deviations and the share of groups with some
    spread (the groups that give a learning signal)."""
    stds = []
    for g in range(0, rewards.numel(), group_size):
        r = rewards[g:g + group_size][~mask[g:g + group_size]]
        stds.append(float(r.std(unbiased=False)) if r.numel() > 1 else 0.0)
    return {"reward/group_std_mean": sum(stds) / len(stds) if stds else float("nan"),
            "reward/groups_varied": sum(s > 0.0 for s in stds) / len(stds) if stds else float("nan")}


def _fmt(value: Any, spec: str) -> str:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if value != value else format(value, spec)


def step_line(step: int, steps: int, *, reward: Any, unscored: Any, p50: Any, loss: Any,
              varied: Any = None, grad_norm: Any = None, seconds: Any = None) -> str:
    """One readable line per step, e.g. ``step 1/4  reward 0.375  varied 50%
    unscored 12%  judge-p50 0.84s  loss -0.0123  (9.1s)``: ``varied`` is the share
    of groups whose rewards differ (the groups that give a learning signal)."""
    pct = lambda v: _fmt(None if v is None else 100 * float(v), ".0f") + "%"  # noqa: E731
    line = f"step {step}/{steps}  reward {_fmt(reward, '.3f')}"
    if varied is not None:
        line += f"  varied {pct(varied)}"
    line += f"  unscored {pct(unscored)}  judge-p50 {_fmt(p50, '.2f')}s  loss {_fmt(loss, '.4f')}"
    if grad_norm is not None:
        line += f"  grad-norm {_fmt(grad_norm, '.3f')}"
    if seconds is not None:
        line += f"  ({_fmt(seconds, '.1f')}s)"
    return line


def default_output_dir(recipe: str) -> str:
    return os.path.join("runs", f"{recipe}-{time.strftime('%Y%m%d-%H%M%S')}")


class MetricsFile:
    """Appends one JSON record per step to ``path`` (NaN written as null)."""

    def __init__(self, path: str):
        self.path = path
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        self._file = open(path, "a")

    def write(self, record: dict[str, Any]) -> None:
        clean = {k: (None if isinstance(v, float) and v != v else v) for k, v in record.items()}
        self._file.write(json.dumps(clean) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


# --------------------------------------------------------------------------
# policy and sampling
# --------------------------------------------------------------------------
def load_policy(name: str, device: str, dtype: torch.dtype):
    from rewardjudge.rl._policies import smollm2_policy, smollm2_tokenizer, tiny_llama

    if name == "tiny":
        tok = smollm2_tokenizer()
        model = tiny_llama(tok, hidden_size=64, layers=2)
    elif name == "smollm2":
        tok, model = smollm2_tokenizer(), smollm2_policy()
    else:  # a local checkpoint directory (or a hub name where the hub is reachable)
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(name)
        model = AutoModelForCausalLM.from_pretrained(name)
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
    return model.to(device=device, dtype=dtype), tok


@dataclass
class Segment:
    """A run of completion positions: ``forced`` token ids, or ``slots``
    sampled tokens from ``allowed`` (a vocab mask) that may end early with
    ``stop`` (then the remaining slots are filled with ``pad``)."""

    forced: list[int] | None = None
    slots: int = 0
    allowed: torch.Tensor | None = None
    stop: int | None = None
    pad: int | None = None


class Sampler:
    """Samples completions token by token with a KV cache, and recomputes
    their log-probabilities under the same constraints for the update."""

    def __init__(self, model, tok, decoding: str, max_new_tokens: int, temperature: float):
        self.model, self.tok, self.decoding = model, tok, decoding
        self.max_new_tokens, self.temperature = max_new_tokens, temperature
        vocab = model.get_input_embeddings().weight.shape[0]
        device = model.device
        self.eos = tok.eos_token_id
        # transformers >= 5.2x names the KV cache argument `cache`; older ones `past_key_values`
        self._cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters \
            else "past_key_values"
        if decoding == "constrained":
            # answer tokens may not close or escape the JSON string
            texts = tok.batch_decode([[i] for i in range(len(tok))])
            special = set(tok.all_special_ids)
            ok = [i not in special and not any(c in '"\\' or ord(c) < 32 for c in t)
                  for i, t in enumerate(texts)]
            ok += [False] * (vocab - len(ok))
            answer = torch.tensor(ok, device=device)
            answer[self.eos] = True  # ends the answer early
            firsts = [tok.encode(c, add_special_tokens=False) for c in CONFIDENCES]
            if len({f[0] for f in firsts}) != len(firsts):
                raise SystemExit("the confidence values must start with distinct tokens")
            self.choice_rest = {f[0]: f[1:] for f in firsts}
            choice = torch.zeros(vocab, dtype=torch.bool, device=device)
            choice[[f[0] for f in firsts]] = True
            enc = lambda s: tok.encode(s, add_special_tokens=False)  # noqa: E731
            self.segments = [Segment(forced=enc('{"answer": "')),
                             Segment(slots=max_new_tokens, allowed=answer, stop=self.eos, pad=self.eos),
                             Segment(forced=enc('", "confidence": "')),
                             Segment(slots=1, allowed=choice)]
        else:
            self.segments = [Segment(slots=max_new_tokens, allowed=None, stop=self.eos, pad=self.eos)]

    @staticmethod
    def _cache(output):
        cache = getattr(output, "cache", None)
        return output.past_key_values if cache is None else cache

    def prompt_ids(self, question: str) -> list[int]:
        messages = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": question}]
        ids = self.tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        return list(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)

    def _masked_logits(self, logits: torch.Tensor, allowed: torch.Tensor | None) -> torch.Tensor:
        logits = logits.float() / self.temperature
        return logits if allowed is None else logits.masked_fill(~allowed, float("-inf"))

    @torch.no_grad()
    def sample(self, prompt: list[int], n: int, gen: torch.Generator):
        """``n`` completions of ``prompt``: (token ids [n, T], kind [n, T]) where
        kind is -1 for forced/padding tokens, else the index of the segment
        whose mask the token was sampled from."""
        device = self.model.device
        ids = torch.tensor([prompt] * n, device=device)
        out = self.model(input_ids=ids, use_cache=True)
        past, logits = self._cache(out), out.logits[:, -1]
        tokens, kinds = [], []
        done = torch.zeros(n, dtype=torch.bool, device=device)

        def feed(nxt: torch.Tensor, kind: torch.Tensor):
            nonlocal past, logits
            tokens.append(nxt)
            kinds.append(kind)
            o = self.model(input_ids=nxt[:, None], use_cache=True, **{self._cache_arg: past})
            past, logits = self._cache(o), o.logits[:, -1]

        for s, seg in enumerate(self.segments):
            if seg.forced is not None:
                for t in seg.forced:
                    feed(torch.full((n,), t, device=device), torch.full((n,), -1, device=device))
                continue
            done[:] = False
            for _ in range(seg.slots):
                probs = torch.softmax(self._masked_logits(logits, seg.allowed), -1)
                nxt = torch.multinomial(probs, 1, generator=gen).squeeze(1)
                kind = torch.full((n,), s, device=device)
                if seg.pad is not None:
                    nxt = torch.where(done, torch.full_like(nxt, seg.pad), nxt)
                    kind = torch.where(done, torch.full_like(kind, -1), kind)
                feed(nxt, kind)
                if seg.stop is not None:
                    done |= nxt == seg.stop
                    if bool(done.all()):
                        break
        if self.decoding == "constrained":  # the chosen confidence's remaining tokens, then '"}'
            rests = [self.choice_rest[int(t)] for t in tokens[-1]]
            tail = [r + self.tok.encode('"}', add_special_tokens=False) for r in rests]
            width = max(map(len, tail))
            for j in range(width):
                col = [t[j] if j < len(t) else self.eos for t in tail]
                tokens.append(torch.tensor(col, device=device))
                kinds.append(torch.full((n,), -1, device=device))
        return torch.stack(tokens, 1), torch.stack(kinds, 1)

    def text(self, completion: torch.Tensor) -> str:
        ids = [int(t) for t in completion]
        if self.decoding == "free" and self.eos in ids:
            ids = ids[:ids.index(self.eos)]
        return self.tok.decode([i for i in ids if i != self.eos], skip_special_tokens=True)

    def logprobs(self, prompt: list[int], completions: torch.Tensor, kinds: torch.Tensor) -> torch.Tensor:
        """Log-probabilities [n, T] of the sampled tokens (0 where forced)."""
        n = completions.shape[0]
        p = torch.tensor([prompt] * n, device=completions.device)
        full = torch.cat([p, completions], 1)
        logits = self.model(input_ids=full).logits[:, p.shape[1] - 1:-1]
        out = torch.zeros(completions.shape, device=completions.device)
        for s, seg in enumerate(self.segments):
            sel = kinds == s
            if seg.forced is not None or not bool(sel.any()):
                continue
            lp = torch.log_softmax(self._masked_logits(logits, seg.allowed), -1)
            picked = lp.gather(-1, completions[..., None]).squeeze(-1)
            out = torch.where(sel, picked, out)
        return out


def warmup_sft(model, tok, steps: int, lr: float = 3e-3, seed: int = 0) -> float:
    """Supervised warm-up on gold JSON answers, so that a tiny random policy
    emits (mostly) valid JSON before GRPO starts; returns the last loss.
    Only the completion tokens are trained on."""
    if steps <= 0:
        return float("nan")
    rows = []
    for q, ref in QUESTIONS:
        messages = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": q}]
        prompt = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        answer = AnalysisOutput(answer=ref, confidence="high").model_dump_json() + tok.eos_token
        p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
        a_ids = tok(answer, add_special_tokens=False)["input_ids"]
        rows.append((p_ids + a_ids, [-100] * len(p_ids) + a_ids))
    width = max(len(r[0]) for r in rows)
    device = model.device
    ids = torch.tensor([r[0] + [tok.pad_token_id] * (width - len(r[0])) for r in rows], device=device)
    labels = torch.tensor([r[1] + [-100] * (width - len(r[1])) for r in rows], device=device)
    attn = torch.tensor([[1] * len(r[0]) + [0] * (width - len(r[0])) for r in rows], device=device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    loss = torch.tensor(float("nan"))
    for _ in range(steps):
        opt.zero_grad()
        loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
        loss.backward()
        opt.step()
    return loss.item()


# --------------------------------------------------------------------------
# the loop
# --------------------------------------------------------------------------
async def train(args: argparse.Namespace, judge) -> list[dict[str, Any]]:
    torch.manual_seed(args.seed)
    device = args.device if args.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[args.dtype]
    model, tok = load_policy(args.policy, device, dtype)
    if args.sft_steps:
        loss = await asyncio.to_thread(warmup_sft, model, tok, args.sft_steps)
        print(f"warm-up: {args.sft_steps} supervised steps, loss {loss:.4f}", flush=True)
    sampler = Sampler(model, tok, args.decoding, args.max_new_tokens, args.temperature)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    grader = make_grader(judge)
    gen = torch.Generator(device=device).manual_seed(args.seed)
    order = list(range(len(QUESTIONS)))
    history: list[dict[str, Any]] = []
    metrics = MetricsFile(args.metrics)
    print(f"metrics: {args.metrics}", flush=True)

    def rollout(batch):
        model.eval()
        rolls = []
        for q, ref in batch:
            prompt = sampler.prompt_ids(q)
            comp, kinds = sampler.sample(prompt, args.group_size, gen)
            rolls.append((q, ref, prompt, comp, kinds))
        return rolls

    def update(rolls, advantages: torch.Tensor) -> float:
        model.train()
        optimizer.zero_grad()
        total_tokens = sum(int((k >= 0).sum()) for *_, k in rolls)
        loss_value = 0.0
        for g, (_, _, prompt, comp, kinds) in enumerate(rolls):
            adv = advantages[g * args.group_size:(g + 1) * args.group_size].to(device)
            lp = sampler.logprobs(prompt, comp, kinds)
            # on-policy, one update per batch: the PPO ratio is 1, so the clipped
            # objective reduces to the policy gradient, token-averaged over the batch
            loss = -(adv[:, None] * lp * (kinds >= 0)).sum() / max(total_tokens, 1)
            loss.backward()
            loss_value += loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss_value

    guard = OutageGuard()  # a judge down for 3 steps in a row stops the run (JudgeOutage), not trains on nothing
    try:
        for step in range(args.steps):
            started = time.perf_counter()
            start = step * args.prompts_per_step
            batch = [QUESTIONS[order[(start + i) % len(order)]] for i in range(args.prompts_per_step)]
            # torch work stays off the event loop: the judge client lives on it
            rolls = await asyncio.to_thread(rollout, batch)
            threads = [StringThread([("system", INSTRUCTIONS), ("user", q), ("assistant", sampler.text(c))],
                                    metadata={"reference": ref, "eval": False})
                       for q, ref, _, comp, _ in rolls for c in comp]
            grades = await grader.grade_batch(threads)
            guard.observe(grades)
            rewards, mask = rewards_tensor(grades)
            advantages = group_normalize(rewards, mask, group_size=args.group_size)
            loss = await asyncio.to_thread(update, rolls, advantages)
            record = {"step": step + 1, "loss": loss, "step_s": time.perf_counter() - started,
                      **group_reward_stats(rewards, mask, args.group_size), **judge_health(grades)}
            history.append(record)
            metrics.write(record)
            print(step_line(record["step"], args.steps, reward=record["judge/reward_mean"],
                            varied=record["reward/groups_varied"],
                            unscored=record["judge/unscored_rate"], p50=record["judge/latency_p50"],
                            loss=loss, seconds=record["step_s"]), flush=True)
            if args.show:
                for t, g in list(zip(threads, grades))[:args.show]:
                    print(f"  {g.status:<9} {g.value!s:<5} {t.completion()[:100]!r}", flush=True)
    finally:
        metrics.close()
    return history


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--policy", default="tiny",
                   help="tiny (random 2-layer Llama, SmolLM2 tokenizer), smollm2 (SmolLM2-135M-Instruct "
                        "from the embedded GGUF) or a checkpoint directory")
    p.add_argument("--judge", choices=["embedded", "scripted"], default="embedded",
                   help="the spawned SmolLM2 judge or a scripted one (ignored with --judge-url)")
    p.add_argument("--judge-url", help="an OpenAI-compatible judge server, .../v1")
    p.add_argument("--judge-model", default="judge", help="the model name on --judge-url")
    p.add_argument("--judge-fail-rate", type=float, default=0.0, help="scripted judge: share of 503s")
    p.add_argument("--decoding", choices=["constrained", "free"], default="constrained")
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:1 or auto")
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    p.add_argument("--sft-steps", type=int, default=0,
                   help="supervised warm-up steps on gold JSON answers before GRPO (a tiny random "
                        "policy needs ~40 to write JSON in --decoding free)")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--prompts-per-step", type=int, default=2)
    p.add_argument("--group-size", type=int, default=4)
    p.add_argument("--max-new-tokens", type=int, default=16)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--output-dir", help="where the run writes its files (default: runs/grpo_torch-<time>)")
    p.add_argument("--metrics", "--log-jsonl", dest="metrics",
                   help="append each step's full metrics (judge health included) to this JSONL file "
                        "(default: OUTPUT_DIR/metrics.jsonl)")
    p.add_argument("--show", type=int, default=0, help="print this many graded completions per step")
    return p.parse_args(argv)


async def amain(argv: list[str] | None = None) -> list[dict[str, Any]]:
    args = parse_args(argv)
    args.output_dir = args.output_dir or default_output_dir("grpo_torch")
    args.metrics = args.metrics or os.path.join(args.output_dir, "metrics.jsonl")
    if args.judge_url:
        from rewardjudge.models import OpenAIModel

        async with OpenAIModel(args.judge_url, args.judge_model) as judge:
            return await train(args, judge)
    if args.judge == "scripted":
        return await train(args, scripted_judge(args.judge_fail_rate, args.seed))
    from rewardjudge.models import spawn_judge

    async with spawn_judge() as judge:
        return await train(args, judge)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    return asyncio.run(amain(argv))


if __name__ == "__main__":
    main(sys.argv[1:])
