"""Every TRL path a user is likely to take: each scale_rewards and loss type run by
TRL's own GRPOTrainer with ~30% judge failures, attach's refusals, the outage guard
in a real run, pickling through TRL's async GRPO check, calls from plain code, one
warning per run and no unclosed session at exit."""

from __future__ import annotations

import asyncio
import math
import pickle
import subprocess
import sys
import textwrap
import types
import warnings
import zlib

import pytest

from rewardjudge import ConfigError, JudgeHTTPError
from rewardjudge.errors import JudgeOutage
from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
from rewardjudge.rl import trl_reward_func, trl_reward_funcs
from rewardjudge.testing import FakeJudgeServer, ScriptedModel

PASS = '{"reasoning": "ok", "score": "PASS"}'
FAIL = '{"reasoning": "no", "score": "FAIL"}'
SYSTEM = "Grade the answer. Reply as JSON: {{output_schema}}"
USER = "Question: {{last_user_turn_content}}\nReference: {{metadata.reference}}\nAnswer: {{completion}}"
SCALE_REWARDS = ["group", "batch", "none"]
LOSS_TYPES = ["grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "luspo", "vespo"]
ADVANTAGE_DIFFS: dict[tuple[str, str], float] = {}  # measured, printed with -s


def grader_for(judge, **kw):
    return TemplatedPromptJudgeGrader("answer-judge", judge, SYSTEM, USER, **kw)


def length_reward(prompts, completions, **kw):  # module level: it pickles
    return [min(len(c[0]["content"]), 40) / 40 for c in completions]


@pytest.fixture(scope="module")
def tiny_policy():
    from rewardjudge.rl._policies import smollm2_tokenizer, tiny_llama

    tok = smollm2_tokenizer()
    return tiny_llama(tok, seed=0), tok


def _dataset(n):
    from datasets import Dataset

    return Dataset.from_list([{"prompt": [{"role": "user", "content": f"What is {i}+{i}?"}],
                               "reference": str(2 * i)} for i in range(n)])


def _config(tmp_path, **kw):
    from trl import GRPOConfig

    base = dict(output_dir=str(tmp_path), use_cpu=True, bf16=False, activation_checkpointing=False,
                per_device_train_batch_size=16, num_generations=4, max_completion_length=8,
                max_steps=1, logging_steps=1, save_strategy="no", report_to="none",
                learning_rate=1e-3, seed=0, disable_tqdm=True)
    base.update(kw)
    return GRPOConfig(**base)


def _lone_survivor_judge():
    """Group 0 ("What is 0+0?"): only its first completion is scored, so one usable
    sample is left; elsewhere ~30% of completions (by a hash of the answer) fail."""
    seen = {"n": 0}

    def judge(messages, params, schema):
        text = messages[-1]["content"]
        answer = text.split("Answer:", 1)[1]
        if "What is 0+0?" in text:
            seen["n"] += 1
            if seen["n"] > 1:
                return JudgeHTTPError(503, "overloaded")
        elif zlib.crc32(answer.encode()) % 10 < 3:
            return JudgeHTTPError(503, "overloaded")
        return PASS if len(answer) % 2 else FAIL

    return judge


# TRL computes advantages (scale_rewards) before, and apart from, the loss (loss_type): each loss type
# runs once, the scale_rewards values taking turns, so every value of both is run by TRL's own code
SETTINGS = [(SCALE_REWARDS[i % 3], loss) for i, loss in enumerate(LOSS_TYPES)]


@pytest.mark.parametrize("scale_rewards, loss_type", SETTINGS)
def test_unscored_rows_have_advantage_0_and_no_loss_under_every_setting(tiny_policy, tmp_path,
                                                                       scale_rewards, loss_type):
    import torch
    from trl import GRPOTrainer

    model, tok = tiny_policy
    reward = trl_reward_func(grader_for(ScriptedModel(_lone_survivor_judge())))
    funcs = trl_reward_funcs(reward, [length_reward])
    seen = {}

    class Recording(GRPOTrainer):  # observe TRL's own output, change nothing
        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            failed = torch.tensor([g.status == "unscored" for g in reward.last_grades])
            # TRL's own loss over the failed rows alone (every other row's tokens masked out)
            probe = dict(out)
            probe["completion_mask"] = out["completion_mask"] * failed.unsqueeze(1).to(out["completion_mask"])
            loss = self.compute_loss(self.model, probe)
            grads = torch.autograd.grad(loss, [p for p in self.model.parameters() if p.requires_grad],
                                        allow_unused=True)
            seen.update(adv=out["advantages"].detach().clone(), failed=failed, loss=loss.detach(),
                        grad=max((float(g.abs().max()) for g in grads if g is not None), default=0.0))
            return out

    extra = {"importance_sampling_level": "sequence"} if loss_type == "luspo" else {}
    trainer = Recording(model=model, reward_funcs=funcs, processing_class=tok, train_dataset=_dataset(4),
                        args=_config(tmp_path, scale_rewards=scale_rewards, loss_type=loss_type,
                                     reward_weights=[1.0, 0.5], **extra))
    reward.attach(trainer)  # the gated set passes attach's check
    trainer.train()

    adv, failed = seen["adv"], seen["failed"]
    grades = reward.last_grades
    assert 3 < int(failed.sum()) < len(grades)  # group 0's three, and ~30% elsewhere
    assert torch.all(adv[failed] == 0)
    assert seen["loss"] == 0 and seen["grad"] == 0  # a failed row adds nothing to the gradient
    # the advantages of the group without its failed rows, as TRL's formula for scale_rewards gives them
    combined = torch.tensor([(g.value if g.value is not None else math.nan) + 0.5 * o
                             for g, o in zip(grades, length_reward(None, trainer._logs["completion"]))])
    usable = combined[~failed]
    expected = torch.zeros_like(combined)
    for start in range(0, len(combined), 4):
        idx = [i for i in range(start, start + 4) if not failed[i]]
        if not idx:
            continue
        r = combined[idx]
        centred = r - r.mean()
        if scale_rewards == "group":
            centred = centred / (r.std() + 1e-4) if len(idx) > 1 else torch.zeros_like(r)
        elif scale_rewards == "batch":
            centred = centred / (usable.std() + 1e-4)
        expected[idx] = centred
    diff = float((adv - expected).abs().max())
    ADVANTAGE_DIFFS[(scale_rewards, loss_type)] = diff
    print(f"scale_rewards={scale_rewards} loss_type={loss_type}: max |advantage diff| {diff:.2e}")
    assert diff <= 1e-6
    lone = [i for i in range(4) if not failed[i]]
    assert len(lone) == 1 and adv[lone[0]] == 0  # a group left with one usable sample: advantage 0


def test_attach_refuses_ungated_plain_functions_and_normalize_then_sum(tiny_policy, tmp_path):
    from trl import GRPOTrainer

    model, tok = tiny_policy
    reward = trl_reward_func(grader_for(ScriptedModel(default=PASS)))
    trainer = GRPOTrainer(model=model, reward_funcs=[reward, length_reward], processing_class=tok,
                          train_dataset=_dataset(4), args=_config(tmp_path))
    with pytest.raises(ConfigError, match=r"'length_reward'.*trl_reward_funcs"):
        reward.attach(trainer)
    funcs = trl_reward_funcs(reward, [length_reward])
    trainer = GRPOTrainer(model=model, reward_funcs=funcs, processing_class=tok, train_dataset=_dataset(4),
                          args=_config(tmp_path, multi_objective_aggregation="normalize_then_sum"))
    with pytest.raises(ConfigError, match="sum_then_normalize"):
        reward.attach(trainer)


def test_an_unattached_judge_is_attached_by_its_trainers_first_call(tiny_policy, tmp_path):
    # no attach(): GRPOTrainer's first reward call attaches it (its log_metric is bound to the trainer),
    # so the phase follows the trainer; an ungated function beside it is refused there
    # (test_rl_trl.py::test_judge_failures_leave_the_baseline_with_several_reward_functions)
    from trl import GRPOTrainer

    model, tok = tiny_policy
    funcs = trl_reward_funcs(grader_for(ScriptedModel(default=PASS)), [length_reward])
    trainer = GRPOTrainer(model=model, reward_funcs=funcs, processing_class=tok, train_dataset=_dataset(4),
                          args=_config(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # attached: no "not attached" warning
        trainer.train()
    assert funcs[0]._trainer is trainer


def test_an_unattached_reward_warns_once_when_a_trainer_calls_it():
    reward = trl_reward_func(grader_for(ScriptedModel(default=PASS)))
    kw = dict(prompts=["q"], completions=["a"], reference=["r"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert reward(**kw) == [1.0]  # plain code, no trainer: nothing to warn about

        async def as_trl_calls():
            for _ in range(3):
                assert await reward(**kw, trainer_state=object()) == [1.0]

        asyncio.run(as_trl_calls())
    said = [w for w in caught if "not attached" in str(w.message)]
    assert len(said) == 1 and "attach(trainer)" in str(said[0].message)


def test_reward_functions_are_coroutine_functions_for_trl_and_lists_for_plain_code():
    from trl.trainer.utils import is_async_callable

    judge = ScriptedModel(default=PASS)
    funcs = trl_reward_funcs(grader_for(judge), [length_reward])
    assert all(is_async_callable(f) for f in funcs)  # TRL awaits them on its loop
    kw = dict(prompts=["q", "q"], completions=[[{"role": "assistant", "content": "ab"}]] * 2,
              reference=["r", "r"])
    assert funcs[0](**kw) == [1.0, 1.0]  # a direct call outside a loop: the list
    assert funcs[1](**kw) == [0.05, 0.05]
    assert len(judge.calls) == 2  # the gated function read the batch the judge graded

    async def inside_a_loop():
        pending = funcs[0](**kw)
        assert asyncio.iscoroutine(pending)
        return await pending

    assert asyncio.run(inside_a_loop()) == [1.0, 1.0]


def test_the_outage_guard_stops_a_real_run_and_can_be_turned_off(tiny_policy, tmp_path):
    from trl import GRPOTrainer

    model, tok = tiny_policy
    dead = ScriptedModel(lambda messages, params, schema: JudgeHTTPError(503, "down"))
    reward = trl_reward_func(grader_for(dead), outage_steps=2)
    trainer = GRPOTrainer(model=model, reward_funcs=reward, processing_class=tok, train_dataset=_dataset(2),
                          args=_config(tmp_path, per_device_train_batch_size=8, max_steps=5))
    reward.attach(trainer)
    with pytest.raises(JudgeOutage, match=r"judge outage.*2 consecutive steps.*http 8") as caught:
        trainer.train()
    assert trainer.state.global_step == 1  # the second step's rewards stopped the run
    assert caught.value.health["judge/unscored_rate"] == 1.0

    off = trl_reward_func(grader_for(dead), outage_threshold=None)
    for _ in range(4):  # no guard: the caller decides
        assert off(prompts=["q"], completions=["a"], reference=["r"]) == [None]


def test_reward_functions_pass_trl_async_grpo_pickling_and_grade_in_another_process():
    from trl.experimental.async_grpo.async_rollout_worker import AsyncRolloutWorker

    from rewardjudge.models import OpenAIModel

    with FakeJudgeServer(lambda req: PASS) as server:
        funcs = trl_reward_funcs(grader_for(OpenAIModel(server.url, "fake", max_retries=0)), [length_reward])

        # TRL's own check, AsyncRolloutWorker.start(): it pickles the loop kwargs before spawning
        class Spawned(Exception):
            pass

        def process(target, args, name, daemon):
            raise Spawned  # stop where TRL would start the child

        worker = AsyncRolloutWorker.__new__(AsyncRolloutWorker)  # its __init__ needs vLLM
        worker.__dict__.update(_process=None, _heartbeat_value=types.SimpleNamespace(value=0.0),
                               _loop_kwargs={"reward_funcs": funcs}, _mp_ctx=types.SimpleNamespace(Process=process),
                               _loop_cls=None, rollout_buffer=None, _model_version_value=None,
                               _stop_event_mp=None, _child_ready_event=None, _failed_event=None,
                               _exception_info_queue=None, metrics_queue=None)
        with pytest.raises(Spawned):
            worker.start()

        # the pickled set grades in a fresh process, called there from plain code
        child = textwrap.dedent("""
            import pickle, sys
            sys.path.insert(0, "tests")  # length_reward pickles by reference to this module
            funcs = pickle.load(sys.stdin.buffer)
            kw = dict(prompts=["q"], completions=[[{"role": "assistant", "content": "abcd"}]], reference=["r"])
            print(funcs[0](**kw), funcs[1](**kw))
        """)
        done = subprocess.run([sys.executable, "-c", child], input=pickle.dumps(funcs), capture_output=True,
                              timeout=120, cwd=str(__import__("pathlib").Path(__file__).parent.parent))
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split() == ["[1.0]", "[0.1]"]
    assert "Unclosed" not in done.stderr.decode()


RUN_WITH_HTTP_JUDGE = """
import zlib
from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
from rewardjudge.models import OpenAIModel
from rewardjudge.rl import trl_reward_func
from rewardjudge.rl._policies import smollm2_tokenizer, tiny_llama
from rewardjudge.testing import Fault, FakeJudgeServer
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

def responder(req):
    answer = req["messages"][-1]["content"].split("Answer:", 1)[1]
    if zlib.crc32(answer.encode()) %% 10 < 3:
        return Fault.http(400)
    return '{"reasoning": "ok", "score": "%%s"}' %% ("PASS" if len(answer) %% 2 else "FAIL")

def main():  # in a function: the judge client is dropped while TRL's loop still runs
    server = FakeJudgeServer(responder).__enter__()
    tok = smollm2_tokenizer()
    reward = trl_reward_func(TemplatedPromptJudgeGrader(
        "answer-judge", OpenAIModel(server.url, "fake", max_retries=0), %(system)r, %(user)r))
    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": f"What is {i}+{i}?"}], "reference": str(2 * i)}
                            for i in range(4)])
    args = GRPOConfig(output_dir=%(out)r, use_cpu=True, bf16=False, activation_checkpointing=False,
                      per_device_train_batch_size=16, num_generations=4, max_completion_length=8, max_steps=3,
                      logging_steps=1, save_strategy="no", report_to="none", seed=0, disable_tqdm=True)
    trainer = GRPOTrainer(model=tiny_llama(tok), reward_funcs=reward, args=args, train_dataset=ds, processing_class=tok)
    reward.attach(trainer)
    trainer.train()
    print("steps", trainer.state.global_step, "unscored", sum(h.get("judge/answer-judge/unscored", 0)
                                                              for h in trainer.state.log_history))


main()
import gc
gc.collect()
"""


def test_one_warning_per_run_and_no_unclosed_session_at_exit(tmp_path):
    script = RUN_WITH_HTTP_JUDGE % {"system": SYSTEM, "user": USER, "out": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=str(__import__("pathlib").Path(__file__).parent.parent),
                          env={**__import__("os").environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    words = done.stdout.split()
    assert words[words.index("steps") + 1] == "3"
    assert float(words[words.index("unscored") + 1]) >= 3  # failures on each of the 3 steps
    assert "All reward functions returned None" not in done.stderr  # TRL's multi-line warning, per step
    assert done.stderr.count("Some completions got no reward") == 1  # said once for the run
    assert "Unclosed client session" not in done.stderr and "Unclosed connector" not in done.stderr
