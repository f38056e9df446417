"""TorchModel: a tiny random Llama for the mechanics, the embedded model for the real path."""

from __future__ import annotations

import asyncio
import threading

import pytest

import torch

from rewardjudge import StringThread
from rewardjudge.errors import ConfigError, JudgeError
from rewardjudge.graders import ProbabilityJudgeGrader
from rewardjudge.models import GenerationParams, TorchModel
from rewardjudge.models._torch_setup import _cpu_has_bf16, _resolve_device_dtype

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
DIGITS = [str(d) for d in range(10)]


def tiny_tokenizer():
    """A byte-level BPE trained in milliseconds on a few sentences, with ChatML."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>", "<|im_start|>",
                                                                  "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(["The answer is 4. Grade: 3", "question answer grade judge user "
                             "assistant system"] * 20, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|im_start|>",
                                   eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHATML
    return fast


def tiny_llama(tok):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=1024, bos_token_id=tok.bos_token_id,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    return LlamaForCausalLM(config).eval()


@pytest.fixture(scope="module")
def tiny():
    tok = tiny_tokenizer()
    return tiny_llama(tok), tok


def ask(i: int) -> list[dict[str, str]]:
    # prompts of different lengths, so batches need padding
    return [{"role": "user", "content": "question " * i + "answer?"},
            {"role": "assistant", "content": "Grade: "}]


def manual_probs(model, tok, messages, choices_ids):
    text = tok.apply_chat_template(messages[:-1], tokenize=False, add_generation_prompt=True)
    ids = tok(text + messages[-1]["content"], add_special_tokens=False, return_tensors="pt").input_ids
    with torch.inference_mode():
        row = torch.log_softmax(model(ids).logits[0, -1].float(), -1)
    return [float(row[i].exp().sum()) for i in choices_ids]


async def test_distribution_is_the_exact_softmax(tiny):
    model, tok = tiny
    judge = TorchModel(model, tok)
    dist = await judge.grade_distribution(ask(3), DIGITS)
    ids = [judge.choice_token_ids(d) for d in DIGITS]
    # "4" and " 4" are both tokens here: both count as 4
    assert len(judge.choice_token_ids("4")) == 2
    assert [dist.probs[d] for d in DIGITS] == pytest.approx(manual_probs(model, tok, ask(3), ids), rel=1e-4)
    assert dist.top_k is None and dist.unseen_max is None
    assert dist.outside == pytest.approx(1 - sum(dist.probs.values()))
    await judge.aclose()


async def test_concurrent_requests_share_one_batch_and_match_single_runs(tiny):
    model, tok = tiny
    batched = TorchModel(model, tok)
    together = await asyncio.gather(*(batched.grade_distribution(ask(i), DIGITS) for i in range(6)))
    assert batched.batches["dist"] == 1 and together[0].raw["batch_size"] == 6
    single = TorchModel(model, tok, max_batch_size=1)
    alone = [await single.grade_distribution(ask(i), DIGITS) for i in range(6)]
    assert single.batches["dist"] == 6
    for a, b in zip(together, alone):  # left padding and positions do not change the answer
        assert [a.probs[d] for d in DIGITS] == pytest.approx([b.probs[d] for d in DIGITS], abs=1e-6)
    await batched.aclose()
    await single.aclose()


async def test_batches_respect_the_size_and_token_limits(tiny):
    model, tok = tiny
    judge = TorchModel(model, tok, max_batch_size=4)
    await asyncio.gather(*(judge.grade_distribution(ask(i), DIGITS) for i in range(10)))
    assert judge.batches["dist"] == 3  # 4 + 4 + 2
    small = TorchModel(model, tok, max_batch_tokens=60)  # ~25-35 tokens each: two per batch
    assert judge.max_batch_tokens == 2048  # the CPU default: batching pays only for short prompts
    await asyncio.gather(*(small.grade_distribution(ask(i), DIGITS) for i in range(4)))
    assert small.batches["dist"] == 2
    await judge.aclose()
    await small.aclose()


async def test_batched_greedy_generation_matches_single_runs(tiny):
    model, tok = tiny
    params = GenerationParams(max_tokens=6)
    batched = TorchModel(model, tok)
    together = await asyncio.gather(*(batched.chat(ask(i)[:1], params) for i in range(3)))
    assert batched.batches["gen"] == 1
    single = TorchModel(model, tok, max_batch_size=1)
    alone = [await single.chat(ask(i)[:1], params) for i in range(3)]
    assert [c.text for c in together] == [c.text for c in alone]
    c = together[0]
    assert c.structured is False and c.usage["prompt_tokens"] > 0
    assert c.finish_reason in ("length", "stop") and c.usage["completion_tokens"] <= 6
    await batched.aclose()
    await single.aclose()


async def test_stop_strings_cut_the_reply(tiny):
    model, tok = tiny
    judge = TorchModel(model, tok)
    full = await judge.chat(ask(1)[:1], GenerationParams(max_tokens=12))
    if len(full.text) < 2:
        pytest.fail(f"the tiny model should say something: {full.text!r}")
    stop = full.text[1:3] or full.text[1]
    cut = await judge.chat(ask(1)[:1], GenerationParams(max_tokens=12, stop=(stop,)))
    assert cut.text == full.text[:full.text.index(stop)] and cut.finish_reason == "stop"
    await judge.aclose()


async def test_work_runs_off_the_event_loop(tiny):
    model, tok = tiny
    started, release = threading.Event(), threading.Event()

    class Blocking(torch.nn.Module):
        # a forward that waits for the event loop: it would deadlock if run on the loop
        def __init__(self, inner):
            super().__init__()
            self.inner = inner
            self.config = inner.config

        def forward(self, **kw):
            started.set()
            release.wait(30)
            return self.inner(**kw)

    judge = TorchModel(Blocking(model), tok)
    task = asyncio.ensure_future(judge.grade_distribution(ask(1), DIGITS))
    while not started.is_set():
        await asyncio.sleep(0.005)
    release.set()
    dist = await asyncio.wait_for(task, 30)
    assert dist.valid_mass > 0
    await judge.aclose()


async def test_a_cancelled_request_does_not_stop_the_worker(tiny):
    model, tok = tiny
    judge = TorchModel(model, tok)
    doomed = asyncio.ensure_future(judge.grade_distribution(ask(2), DIGITS))
    await asyncio.sleep(0)
    doomed.cancel()
    dist = await judge.grade_distribution(ask(1), DIGITS)
    assert dist.valid_mass > 0 and doomed.cancelled()
    await judge.aclose()


async def test_errors(tiny):
    model, tok = tiny
    judge = TorchModel(model, tok)
    # a choice the tokenizer cannot write as one token is a usage error, with its spelling
    with pytest.raises(ConfigError, match="not one token"):
        await judge.grade_distribution(ask(1), ["zebra-crossing"])
    # a prompt longer than the context is a judge error: a grader leaves it unscored
    with pytest.raises(JudgeError, match="does not fit"):
        await judge.grade_distribution(ask(1200), DIGITS)
    # no messages at all is a usage error, for either kind of request
    with pytest.raises(ConfigError, match="at least one message"):
        await judge.grade_distribution([], DIGITS)
    with pytest.raises(ConfigError, match="at least one message"):
        await judge.chat([])
    grade = await ProbabilityJudgeGrader("p", judge, scale="binary").grade(
        StringThread([("user", "q " * 1200), ("assistant", "a")]))
    assert grade.status == "unscored" and "does not fit" in grade.error
    await judge.aclose()


async def test_probability_grader_on_a_torch_model(tiny):
    model, tok = tiny
    judge = TorchModel(model, tok, max_batch_tokens=1 << 16)
    grader = ProbabilityJudgeGrader("p", judge, scale="graded", min_valid_mass=0.0)
    grades = await grader.grade_batch([StringThread([("user", "q?"), ("assistant", a)])
                                       for a in ("yes", "no", "maybe")])
    assert judge.batches["dist"] == 1  # the batch went through one prefill
    for g in grades:
        assert g.status == "scored" and sum(g.distribution.values()) == pytest.approx(1.0)
        assert g.extra["top_k"] is None
    await judge.aclose()


RUBRIC = ("You are a judge. Grade the answer to the question. " * 8).strip()


def shared(i: int) -> list[dict[str, str]]:
    # one long system prompt shared by every prompt, then a question of its own
    return [{"role": "system", "content": RUBRIC},
            {"role": "user", "content": "question " * (i % 5) + f"answer {i}?"},
            {"role": "assistant", "content": "Grade: "}]


async def test_prefix_sharing_gives_the_same_probabilities(tiny):
    model, tok = tiny
    plain = TorchModel(model, tok, share_prefix=False)
    sharing = TorchModel(model, tok, max_batch_size=4)
    assert sharing.share_prefix and not plain.share_prefix
    want = await asyncio.gather(*(plain.grade_distribution(shared(i), DIGITS) for i in range(10)))
    got = await asyncio.gather(*(sharing.grade_distribution(shared(i), DIGITS) for i in range(10)))
    # the rubric's keys/values were computed once and reused by the three batches
    assert sharing.batches["dist"] == 3
    assert sharing.prefix_stats == {"computed": 1, "reused": 2}
    assert all(g.raw["prefix_tokens"] >= 32 for g in got) and want[0].raw["prefix_tokens"] == 0
    for a, b in zip(want, got):
        assert [b.probs[d] for d in DIGITS] == pytest.approx([a.probs[d] for d in DIGITS], abs=1e-3)
        assert b.usage == a.usage  # the prompt is still counted whole
    # a later request alone reuses the cached prefix too, and still matches
    late = await sharing.grade_distribution(shared(3), DIGITS)
    assert sharing.prefix_stats["reused"] == 3 and late.raw["prefix_tokens"] >= 32
    assert [late.probs[d] for d in DIGITS] == pytest.approx([want[3].probs[d] for d in DIGITS], abs=1e-3)
    await plain.aclose()
    await sharing.aclose()


async def test_prompts_without_a_long_common_prefix_run_whole(tiny):
    model, tok = tiny
    judge = TorchModel(model, tok)
    dists = await asyncio.gather(*(judge.grade_distribution(ask(i), DIGITS) for i in range(4)))
    assert judge.prefix_stats["computed"] == 0 and {d.raw["prefix_tokens"] for d in dists} == {0}
    await judge.aclose()


def test_prefix_sharing_is_off_for_sliding_window_models():
    from types import SimpleNamespace

    from rewardjudge.models._torch_setup import _full_attention_only

    assert _full_attention_only(SimpleNamespace(sliding_window=None))
    assert not _full_attention_only(SimpleNamespace(sliding_window=4096))
    assert not _full_attention_only(SimpleNamespace(layer_types=["full_attention", "sliding_attention"]))


async def test_the_next_batch_is_prepared_while_the_current_one_runs(tiny):
    model, tok = tiny
    events: list[tuple[str, int]] = []
    loop_thread = threading.get_ident()
    render_threads = set()
    first_forward_started, second_batch_rendered = threading.Event(), threading.Event()

    def template(messages):
        # A chat template given as a function: it records when each prompt is rendered.
        # The second batch's prompts wait (bounded) for the first forward to start, and the
        # first forward waits (bounded) for them: with preparation running beside the
        # forward, both waits end at once; prepared before any forward, both time out.
        render_threads.add(threading.get_ident())
        i = int(messages[0]["content"].split()[-1])
        if i >= 2:
            first_forward_started.wait(10)
        events.append(("render", i))
        if i >= 2:
            second_batch_rendered.set()
        return tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    class Recording(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner, self.config, self.calls = inner, inner.config, 0

        def forward(self, input_ids=None, attention_mask=None, position_ids=None, use_cache=None,
                    logits_to_keep=0):
            self.calls += 1
            events.append(("forward start", self.calls))
            first_forward_started.set()
            if self.calls == 1:
                second_batch_rendered.wait(10)
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask,
                             position_ids=position_ids, use_cache=use_cache,
                             logits_to_keep=logits_to_keep)
            events.append(("forward end", self.calls))
            return out

    judge = TorchModel(Recording(model), tok, chat_template=template, max_batch_size=2)
    msgs = [[{"role": "user", "content": f"question {i}"}] for i in range(4)]
    await asyncio.gather(*(judge.grade_distribution(m, DIGITS) for m in msgs))
    assert judge.batches["dist"] == 2
    # rendering never ran on the event loop, and batch 2 was rendered during forward 1
    assert loop_thread not in render_threads
    first_end = events.index(("forward end", 1))
    assert events.index(("forward start", 1)) < events.index(("render", 2)) < first_end
    await judge.aclose()


def test_load_a_checkpoint_folder_and_refuse_what_is_not_one(tiny, tmp_path):
    model, tok = tiny
    model.save_pretrained(tmp_path / "ckpt")
    tok.save_pretrained(tmp_path / "ckpt")
    judge = TorchModel.load(tmp_path / "ckpt", dtype="float32")
    assert judge.model.dtype == torch.float32 and judge.device.type in ("cpu", "cuda")
    assert judge.name == "torch:ckpt"
    (tmp_path / "weights.bin").write_bytes(b"x")
    (tmp_path / "empty").mkdir()
    for bad, fragment in [("HuggingFaceTB/SmolLM2-135M", "nothing is downloaded"),
                          (tmp_path / "weights.bin", "not a .gguf"),
                          (tmp_path / "empty", "no config.json")]:
        with pytest.raises(ConfigError, match=fragment):
            TorchModel.load(bad)


def test_dtype_choice():
    assert _resolve_device_dtype("cpu", "fp32")[1] == torch.float32
    assert _resolve_device_dtype("cpu", torch.float16)[1] == torch.float16
    # auto on CPU: bf16 only where the CPU computes it natively
    assert _resolve_device_dtype("cpu", "auto")[1] == (torch.bfloat16 if _cpu_has_bf16() else torch.float32)
    with pytest.raises(ConfigError, match="dtype"):
        _resolve_device_dtype("cpu", "int3")


# --------------------------------------------------------------------------
# the embedded SmolLM2-135M GGUF (converted once and cached; ~25 s the first time)
# --------------------------------------------------------------------------
ITEMS = [("What is the capital of France?", a) for a in
         ("Paris.", "The capital of France is Lyon.", "I like turtles.",
          "Paris is the capital of France, on the Seine.")]


@pytest.fixture(scope="module")
def embedded():
    judge = TorchModel.load(dtype="float32")
    yield judge
    judge._queue.put(None)  # the worker is a daemon; stop it anyway


async def test_embedded_model_loads_from_its_cache_and_judges(embedded):
    from rewardjudge.models import spawn_judge
    from rewardjudge.models import embedded_model_path
    from rewardjudge.models._torch_setup import converted_gguf_dir

    cached = converted_gguf_dir(embedded_model_path())
    assert (cached / "model.safetensors").is_file() and (cached / "config.json").is_file()
    async with spawn_judge(backend="torch", dtype="float32") as judge:  # loads from the cache
        assert isinstance(judge, TorchModel) and judge.name.startswith("torch:SmolLM2")
        grades = await ProbabilityJudgeGrader("p", judge, scale="detailed").grade_batch(
            [StringThread([("user", q), ("assistant", a)]) for q, a in ITEMS])
        reply = await judge.chat([{"role": "user", "content": "Say hi."}], GenerationParams(max_tokens=8))
    # after "Grade: " nearly all of this model's mass is on digits (measured ~0.99 on detailed)
    assert all(g.status == "scored" and g.extra["valid_mass"] > 0.9 for g in grades)
    assert reply.text.strip() and reply.usage["completion_tokens"] <= 8


async def test_prefix_sharing_on_the_embedded_judge_matches_full_prompts(embedded):
    plain = TorchModel(embedded.model, embedded.tokenizer, share_prefix=False)
    sharing = TorchModel(embedded.model, embedded.tokenizer)
    threads = [StringThread([("user", q), ("assistant", a)]) for q, a in ITEMS]
    want = await ProbabilityJudgeGrader("p", plain, scale="detailed").grade_batch(threads)
    got = await ProbabilityJudgeGrader("p", sharing, scale="detailed").grade_batch(threads)
    # the grader's instructions and grade descriptions are the shared prefix
    assert sharing.prefix_stats["computed"] == 1
    for a, b in zip(want, got):
        assert a.status == b.status == "scored"
        pa, pb = a.distribution, b.distribution
        assert max(abs(pa[g] - pb[g]) for g in pa) < 1e-3
        assert b.value == pytest.approx(a.value, abs=1e-3)
    await plain.aclose()
    await sharing.aclose()


@pytest.mark.judge
async def test_llama_cpp_and_torch_give_close_distributions(embedded):
    """The same items through llama.cpp's server (Q4_1 GGUF, top-20 logprobs) and through
    TorchModel (the GGUF dequantised to fp32, exact softmax). Measured over these 4 items
    x 3 scales: per-grade probabilities within 0.025, values within 0.023, valid mass within
    0.012. Tolerance: 0.06 on each, about 2.5x the largest difference seen. (Two scales
    here, to keep the test short.)"""
    from rewardjudge.models import spawn_judge

    threads = [StringThread([("user", q), ("assistant", a)]) for q, a in ITEMS]
    async with spawn_judge() as server:
        for scale in ("binary", "detailed"):
            # floor 0: on binary this model puts only ~0.45-0.49 on the digits
            via_http = await ProbabilityJudgeGrader("p", server, scale=scale,
                                                    min_valid_mass=0.0).grade_batch(threads)
            via_torch = await ProbabilityJudgeGrader("p", embedded, scale=scale,
                                                     min_valid_mass=0.0).grade_batch(threads)
            for a, b in zip(via_http, via_torch):
                assert a.status == b.status == "scored", (a.error, b.error)
                pa, pb = a.distribution, b.distribution
                assert max(abs(pa[g] - pb[g]) for g in pa) < 0.06, (scale, pa, pb)
                assert abs(a.value - b.value) < 0.06
                assert abs(a.extra["valid_mass"] - b.extra["valid_mass"]) < 0.06
