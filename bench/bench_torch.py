"""TorchModel's probability grades: pipeline and prefix sharing, against bare forwards.

Two measurements, on the device found (CUDA when present, else CPU):

1. **Proxy: preparation hidden behind the forward.** A stand-in model whose
   forward takes a fixed time (it sleeps, so the preparation thread is free
   to run; 2x and 5x the time to prepare one batch, measured first) grades
   prompts of ~1,100 tokens. Printed: the wall time of
   ``grade_distribution`` over all prompts divided by the sum of the forward
   times (the target: within 1.05), for TorchModel and for today's path
   (every prompt rendered and tokenised first, then one batch at a time,
   the whole vocabulary's log-probabilities copied back per batch).
2. **A random-weight Llama built from a config** over prompts made of one
   shared rubric (``--prefix`` tokens) and a part of their own
   (``--suffix LO HI`` tokens): grades/s of today's path, a bare left-padded
   full forward of the same prompts (pre-tokenised tensors already on the
   device, ``logits_to_keep=1``), a bare prefix-shared forward (the rubric's
   keys/values computed once, each batch runs only its suffixes), and
   TorchModel with and without prefix sharing, side by side. On CUDA the
   fraction of the bf16 matmul peak (measured here with an 8192^3 matmul) is
   printed from the FLOPs each path needs; on CPU only the ratios mean anything.

Defaults follow the device: on CUDA a 1.1B Llama (hidden 2048, 16 layers, 32
heads / 8 KV, intermediate 8192, vocab 32000), 512 prompts, prefix 900,
suffixes 150-330 tokens, batch 64 (the prompts of issue 15); on CPU a small
Llama, 48 prompts, prefix 300, suffixes 50-110, batch 8.

Run: ``python -m bench torch`` or ``python bench/bench_torch.py [--size tiny|small|1b]
[--prompts N] [--prefix P] [--suffix LO HI] [--batch B] [--repeats R] [--no-proxy]
[--no-model]``.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import os
import random
import sys
import time
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import emit, print_table  # noqa: E402

DIGITS = [str(d) for d in range(10)]
WORDS = ("the answer question grade judge correct wrong complete helpful clear concise reason "
         "because value number result sum product total rubric criterion evidence claim source "
         "fact error detail part step method explain check verify compare score level each every "
         "user assistant system model reply response text content item list table example case "
         "first second third final short long good bad better worse best worst fair strict").split()
CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

SIZES = {  # hidden, layers, heads, kv heads, intermediate
    "tiny": (64, 2, 4, 2, 128),
    "small": (256, 4, 4, 2, 688),
    "1b": (2048, 16, 32, 8, 8192),
}


# --------------------------------------------------------------------------
# prompts and the model
# --------------------------------------------------------------------------
def make_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    rng = random.Random(0)
    text = [" ".join(rng.choice(WORDS) for _ in range(40)) for _ in range(200)]
    # a small vocabulary: most words stay two or three tokens, like prose in a real tokenizer
    tok.train_from_iterator(text, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|pad|>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|im_start|>",
                                   eos_token="<|im_end|>", pad_token="<|pad|>")
    fast.chat_template = CHATML
    return fast


def _text(rng: random.Random, tok, n_tokens: int) -> str:
    words: list[str] = []
    per_word = len(tok(" ".join(WORDS), add_special_tokens=False)["input_ids"]) / len(WORDS)
    while True:
        words += [rng.choice(WORDS) for _ in range(max(1, int((n_tokens - 0) / per_word / 4)))]
        if len(tok(" ".join(words), add_special_tokens=False)["input_ids"]) >= n_tokens:
            return " ".join(words)


def make_prompts(tok, n: int, prefix: int, lo: int, hi: int, seed: int = 0) -> list[list[dict]]:
    """``n`` judge prompts: one shared rubric of ~``prefix`` tokens, then ~lo-hi tokens of their own."""
    rng = random.Random(seed)
    rubric = "Grade the answer against this rubric. " + _text(rng, tok, prefix)
    out = []
    for i in range(n):
        own = _text(rng, tok, rng.randint(lo, hi))
        out.append([{"role": "system", "content": rubric},
                    {"role": "user", "content": f"Answer {i}: {own}\nGrade it from 0 to 9."},
                    {"role": "assistant", "content": "Grade: "}])
    return out


def make_llama(size: str, tok, device, dtype):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    hidden, layers, heads, kv, inter = SIZES[size]
    config = LlamaConfig(vocab_size=32000, hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, num_key_value_heads=kv, intermediate_size=inter,
                         max_position_embeddings=4096, pad_token_id=tok.pad_token_id,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(0)
    with torch.device(device):
        model = LlamaForCausalLM(config).to(dtype)
    return model.eval()


class FixedTimeModel:
    """A stand-in causal LM whose forward takes ``seconds`` (sleeping: the GIL is free)."""

    def __init__(self, seconds: float, vocab: int, device):
        import torch

        self.seconds = seconds
        self.vocab = vocab
        self.config = SimpleNamespace(max_position_embeddings=1 << 16, _name_or_path="fixed-time")
        self._param = torch.nn.Parameter(torch.zeros(1, device=device))
        self.forward_s = 0.0
        self.calls = 0

    def eval(self):
        return self

    def parameters(self):
        yield self._param

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, use_cache=None,
                logits_to_keep=0):
        import torch

        t0 = time.perf_counter()
        time.sleep(self.seconds)
        logits = torch.zeros((input_ids.shape[0], 1, self.vocab), device=input_ids.device)
        self.calls += 1
        self.forward_s += time.perf_counter() - t0
        return SimpleNamespace(logits=logits)

    __call__ = forward


# --------------------------------------------------------------------------
# the paths compared
# --------------------------------------------------------------------------
def _sync(device) -> None:
    import torch

    if device.type == "cuda":
        torch.cuda.synchronize()


def _chunks(lengths: list[int], batch: int, max_tokens: int) -> list[list[int]]:
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    out: list[list[int]] = []
    chunk: list[int] = []
    for i in order:
        longest = max([lengths[j] for j in chunk] + [lengths[i]])
        if chunk and (len(chunk) >= batch or longest * (len(chunk) + 1) > max_tokens):
            out.append(chunk)
            chunk = []
        chunk.append(i)
    if chunk:
        out.append(chunk)
    return out


def today_path(model, judge, prompts, batch: int, max_tokens: int) -> list[list[float]]:
    """TorchModel as it was before issue 15 (``torch_model.py`` at a560b7b), inline: every
    prompt rendered and tokenised first (on the event loop), then per batch a left-padded
    full forward and the whole vocabulary's log-probabilities copied back."""
    import torch

    encoded = [judge.encode_prompt(m) for m in prompts]
    choice_ids = [judge.choice_token_ids(d) for d in DIGITS]
    dev = next(model.parameters()).device
    results: list[list[float]] = [[] for _ in prompts]
    for chunk in _chunks([len(e) for e in encoded], batch, max_tokens):
        width = max(len(encoded[i]) for i in chunk)
        ids = torch.full((len(chunk), width), judge.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for r, i in enumerate(chunk):
            ids[r, width - len(encoded[i]):] = torch.tensor(encoded[i])
            mask[r, width - len(encoded[i]):] = 1
        ids, mask = ids.to(dev), mask.to(dev)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        with torch.inference_mode():
            logits = model(input_ids=ids, attention_mask=mask, position_ids=positions,
                           use_cache=False, logits_to_keep=1).logits[:, -1, :]
            logprobs = torch.log_softmax(logits.float(), dim=-1).cpu()
        for r, i in enumerate(chunk):
            results[i] = [float(logprobs[r][t].exp().sum()) for t in choice_ids]
    return results


def bare_full(model, tensors) -> float:
    """Seconds for left-padded full forwards over pre-built device tensors."""
    import torch

    dev = next(model.parameters()).device
    _sync(dev)
    t0 = time.perf_counter()
    keep = []
    with torch.inference_mode():
        for ids, mask, positions in tensors:
            keep.append(model(input_ids=ids, attention_mask=mask, position_ids=positions,
                              use_cache=False, logits_to_keep=1).logits[:, -1, :])
    _sync(dev)
    return time.perf_counter() - t0


def bare_shared(model, prefix, tensors) -> float:
    """Seconds for the prefix's keys/values computed once, then suffix-only forwards."""
    import torch

    from rewardjudge.models._torch_setup import expanded_cache, output_layers

    dev = next(model.parameters()).device
    _sync(dev)
    t0 = time.perf_counter()
    keep = []
    with torch.inference_mode():
        out = model(input_ids=prefix, use_cache=True, logits_to_keep=1)
        layers = output_layers(out)
        arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        skip = prefix.shape[1]
        for ids, mask, positions in tensors:
            n = ids.shape[0]
            cache = expanded_cache(layers, n, model.config)
            attn = torch.cat([torch.ones((n, skip), dtype=mask.dtype, device=dev), mask], 1)
            keep.append(model(input_ids=ids, attention_mask=attn, position_ids=positions + skip,
                              use_cache=True, logits_to_keep=1, **{arg: cache}).logits[:, -1, :])
    _sync(dev)
    return time.perf_counter() - t0


def padded_tensors(seqs: list[list[int]], batch: int, max_tokens: int, pad: int, device):
    import torch

    out = []
    for chunk in _chunks([len(s) for s in seqs], batch, max_tokens):
        width = max(len(seqs[i]) for i in chunk)
        ids = torch.full((len(chunk), width), pad, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for r, i in enumerate(chunk):
            ids[r, width - len(seqs[i]):] = torch.tensor(seqs[i])
            mask[r, width - len(seqs[i]):] = 1
        ids, mask = ids.to(device), mask.to(device)
        out.append((ids, mask, (mask.cumsum(-1) - 1).clamp(min=0)))
    return out


async def ours(judge, prompts) -> list[list[float]]:
    dists = await asyncio.gather(*(judge.grade_distribution(m, DIGITS) for m in prompts))
    return [[d.probs[c] for c in DIGITS] for d in dists]


# --------------------------------------------------------------------------
# FLOPs and the peak
# --------------------------------------------------------------------------
def _flops(model, full: list[int], prefix: int = 0) -> float:
    """FLOPs a path needs: 2 x (layer parameters) per token computed, 4 x hidden x layers per
    (query, key) pair of causal attention, and the LM head at one position per prompt.
    ``full`` are whole prompt lengths; with ``prefix`` > 0 the prefix is computed once and
    every prompt computes only its tokens after it."""
    cfg = model.config
    layer_params = sum(p.numel() for p in model.model.layers.parameters())
    per_token = 2 * layer_params
    attn = 4 * cfg.hidden_size * cfg.num_hidden_layers
    head = 2 * cfg.hidden_size * cfg.vocab_size
    total = 0.0
    if prefix:
        total += prefix * per_token + attn * prefix * (prefix + 1) / 2 + head
    for n in full:
        s = n - prefix
        total += s * per_token + attn * (s * prefix + s * (s + 1) / 2) + head
    return total


def bf16_peak(device) -> float | None:
    import torch

    if device.type != "cuda":
        return None
    a = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=device, dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    n = 20
    for _ in range(n):
        a @ b
    torch.cuda.synchronize()
    return 2 * 8192 ** 3 * n / (time.perf_counter() - t0)


# --------------------------------------------------------------------------
# the two measurements
# --------------------------------------------------------------------------
def run_proxy(args, device) -> dict[str, Any]:
    from rewardjudge.models import TorchModel

    tok = make_tokenizer()
    prompts = make_prompts(tok, args.proxy_prompts, 900, 150, 330, seed=1)
    probe = TorchModel(FixedTimeModel(0.0, 32000, device), tok, share_prefix=False)
    # what preparing one batch costs here (render + tokenise), to size the fixed forward
    t0 = time.perf_counter()
    for m in prompts[:64]:
        probe.encode_prompt(m)
    prep_per_prompt = (time.perf_counter() - t0) / 64
    batch = args.proxy_batch
    prep_batch = prep_per_prompt * batch
    rows, out = [], {"proxy_prompts": len(prompts), "proxy_batch": batch,
                     "proxy_prepare_per_batch_s": prep_batch}
    for ratio in args.proxy_ratios:
        forward_s = max(0.005, ratio * prep_batch)
        fake = FixedTimeModel(forward_s, 32000, device)
        judge = TorchModel(fake, tok, max_batch_size=batch, max_batch_tokens=1 << 30,
                           share_prefix=False)
        today = TorchModel(fake, tok, share_prefix=False)  # only for its template and tokenizer
        paths = [("today's path (prepare all, then forward)",
                  lambda: today_path(fake, today, prompts, batch, 1 << 30)),
                 ("TorchModel (prepare beside the forward)",
                  lambda: asyncio.run(ours(judge, prompts)))]
        for name, fn in paths:
            fn()  # warm-up
            best = None
            for _ in range(args.repeats):
                fake.forward_s, fake.calls = 0.0, 0
                t0 = time.perf_counter()
                fn()
                wall = time.perf_counter() - t0
                if best is None or wall / fake.forward_s < best[2] / best[1]:
                    best = (fake.calls, fake.forward_s, wall)
            calls, fwd, wall = best
            rows.append([f"{ratio:g}x", f"{forward_s * 1000:.0f} ms", name, calls, fwd, wall, wall / fwd,
                         wall / (calls * forward_s)])
            key = "today" if name.startswith("today") else "ours"
            out[f"proxy_{ratio:g}x_{key}_wall_over_forwards"] = wall / fwd
            out[f"proxy_{ratio:g}x_{key}_wall_over_nominal"] = wall / (calls * forward_s)
    print_table(f"Proxy: a forward of fixed time (a multiple of preparing one batch of {batch}: "
                f"{prep_batch * 1000:.1f} ms), {len(prompts)} prompts of ~1,100 tokens, on {device}",
                ["forward / prep", "forward", "path", "forwards", "sum of forwards s", "wall s",
                 "wall / forwards", "wall / nominal"], rows)
    print("sum of forwards: time measured inside them (a sleep that wakes late, waiting for the "
          "GIL or a core, counts); nominal: forwards x the fixed time")
    return out


def run_model(args, device) -> dict[str, Any]:
    import torch

    from rewardjudge.models import TorchModel
    from rewardjudge.models._torch_setup import _resolve_device_dtype

    _, dtype = _resolve_device_dtype(str(device), args.dtype)
    tok = make_tokenizer()
    model = make_llama(args.size, tok, device, dtype)
    prompts = make_prompts(tok, args.prompts, args.prefix, args.suffix[0], args.suffix[1])
    batch, max_tokens = args.batch, 1 << 30
    sharing = TorchModel(model, tok, max_batch_size=batch, max_batch_tokens=max_tokens)
    plain = TorchModel(model, tok, max_batch_size=batch, max_batch_tokens=max_tokens,
                       share_prefix=False)
    seqs = [sharing.encode_prompt(m) for m in prompts]
    lengths = [len(s) for s in seqs]
    p = len(os.path.commonprefix(seqs))
    full_t = padded_tensors(seqs, batch, max_tokens, tok.pad_token_id, device)
    suffix_t = padded_tensors([s[p:] for s in seqs], batch, max_tokens, tok.pad_token_id, device)
    prefix_t = torch.tensor([seqs[0][:p]], device=device)
    peak = bf16_peak(device)
    n = len(prompts)
    flops_full, flops_shared = _flops(model, lengths), _flops(model, lengths, p)

    paths = [
        ("today's path", lambda: today_path(model, sharing, prompts, batch, max_tokens), flops_full),
        ("bare full forward", lambda: bare_full(model, full_t), flops_full),
        ("bare prefix-shared forward", lambda: bare_shared(model, prefix_t, suffix_t), flops_shared),
        ("TorchModel, no prefix sharing", lambda: asyncio.run(ours(plain, prompts)), flops_full),
        ("TorchModel (ours)", lambda: asyncio.run(ours(sharing, prompts)), flops_shared),
    ]
    results = {name: fn() for name, fn, _ in paths}  # warm-up: kernels, allocator, prefix cache
    # Rounds over every path in turn, best kept per path: a shared machine's load then
    # weighs on every path alike instead of on whichever ran during a busy spell.
    best = {name: float("inf") for name, _, _ in paths}
    for _ in range(args.repeats):
        for name, fn, _ in paths:
            t0 = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - t0)
    rates = {name: n / secs for name, secs in best.items()}
    # the probabilities of today's path and ours agree (prefix sharing changes no answer)
    diff = max(abs(a - b) for ra, rb in zip(results["today's path"], results["TorchModel (ours)"])
               for a, b in zip(ra, rb))
    rows = []
    for name, _, flops in paths:
        r = rates[name]
        rows.append([name, r, r / rates["bare full forward"], r / rates["today's path"],
                     f"{flops * r / n / peak:.1%}" if peak else "-"])
    dt = str(dtype).replace("torch.", "")
    print_table(f"Probability grades/s, random-weight Llama '{args.size}' on {device} ({dt}), "
                f"{n} prompts: shared prefix {p} tokens, {min(lengths)}-{max(lengths)} tokens in all "
                f"(mean {sum(lengths) / n:.0f}), batch {batch}",
                ["path", "grades / s", "x bare full", "x today", "of bf16 peak"], rows)
    if peak:
        print(f"bf16 peak measured here (8192^3 matmul): {peak / 1e12:.0f} TFLOP/s")
    print(f"largest probability difference, today's path vs ours: {diff:.2e}")
    out = {"size": args.size, "device": str(device), "dtype": dt, "prompts": n, "batch": batch,
           "prefix_tokens": p, "mean_tokens": sum(lengths) / n, "max_prob_diff": diff,
           "peak_tflops": peak / 1e12 if peak else None}
    for name, key in [("today's path", "today"), ("bare full forward", "bare_full"),
                      ("bare prefix-shared forward", "bare_shared"),
                      ("TorchModel, no prefix sharing", "ours_no_sharing"),
                      ("TorchModel (ours)", "ours")]:
        out[f"{key}_grades_per_s"] = rates[name]
    out["ours_no_sharing_over_bare_full"] = rates["TorchModel, no prefix sharing"] / rates["bare full forward"]
    out["ours_over_bare_shared"] = rates["TorchModel (ours)"] / rates["bare prefix-shared forward"]
    out["ours_over_today"] = rates["TorchModel (ours)"] / rates["today's path"]
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    import torch

    cuda = torch.cuda.is_available()
    p = argparse.ArgumentParser(prog="bench_torch", description=__doc__.splitlines()[0])
    p.add_argument("--size", choices=sorted(SIZES), default="1b" if cuda else "small")
    p.add_argument("--prompts", type=int, default=512 if cuda else 48)
    p.add_argument("--prefix", type=int, default=900 if cuda else 300, help="shared tokens")
    p.add_argument("--suffix", type=int, nargs=2, default=[150, 330] if cuda else [50, 110],
                   metavar=("LO", "HI"), help="tokens of each prompt's own part")
    p.add_argument("--batch", type=int, default=64 if cuda else 8)
    p.add_argument("--dtype", default="auto")
    p.add_argument("--repeats", type=int, default=2, help="timed runs per path (best kept)")
    p.add_argument("--proxy-prompts", type=int, default=256)
    p.add_argument("--proxy-batch", type=int, default=16)
    p.add_argument("--proxy-ratios", type=float, nargs="+", default=[2.0, 5.0],
                   help="proxy forward time, as multiples of preparing one batch")
    p.add_argument("--no-proxy", action="store_true")
    p.add_argument("--no-model", action="store_true")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    device = torch.device("cuda" if cuda else "cpu")
    out: dict[str, Any] = {"device": str(device), "cpus": os.cpu_count()}
    if not args.no_proxy:
        out.update(run_proxy(args, device))
    if not args.no_model:
        out.update(run_model(args, device))
    emit("torch", {k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()})
    return out


if __name__ == "__main__":
    main()
