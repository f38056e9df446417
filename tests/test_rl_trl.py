"""trl_reward_func: the adapter alone, then inside a real trl GRPOTrainer on CPU."""

from __future__ import annotations

import math

import pytest

from rewardjudge import ConfigError, JudgeHTTPError, StringThread
from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
from rewardjudge.rl import trl_reward_func, trl_reward_funcs
from rewardjudge.testing import ScriptedModel

PASS = '{"reasoning": "ok", "score": "PASS"}'
FAIL = '{"reasoning": "no", "score": "FAIL"}'
SYSTEM = "Grade the answer. Reply as JSON: {{output_schema}}"
USER = "Question: {{last_user_turn_content}}\nReference: {{metadata.reference}}\nAnswer: {{completion}}"


def grader_for(judge, **kw):
    return TemplatedPromptJudgeGrader("answer-judge", judge, SYSTEM, USER, **kw)


def user_text(messages) -> str:
    return messages[-1]["content"]


async def test_standard_format_columns_reach_the_template_and_failures_are_none():
    def judge(messages, params, schema):
        text = user_text(messages)
        if "boom" in text:
            return JudgeHTTPError(503, "overloaded")
        return PASS if "Answer: 4" in text else FAIL

    model = ScriptedModel(judge)
    reward = trl_reward_func(grader_for(model))
    logged: dict[str, list[float]] = {}
    extra: dict[str, list] = {}
    out = await reward(prompts=["2+2?", "2+2?", "2+2?"], completions=["4", "5", "boom"],
                       completion_ids=[[1], [2], [3]], reference=["4", "4", "4"],
                       trainer_state=None, log_metric=lambda k, v: logged.setdefault(k, []).append(v),
                       log_extra=lambda k, v: extra.setdefault(k, []).extend(v))
    assert out == [1.0, 0.0, None]  # PASS, FAIL, judge down -> None (masked by TRL), never 0
    assert "Reference: 4" in user_text(model.calls[0]["messages"])  # dataset column -> metadata
    assert reward.__name__ == "answer-judge"
    assert logged["judge/answer-judge/unscored"] == [1.0]
    assert logged["judge/answer-judge/unscored/http"] == [1.0]
    assert all(math.isfinite(v[0]) for v in logged.values())  # NaN metrics are not logged
    assert extra["answer-judge/status"] == ["scored", "scored", "unscored"]
    assert "503" in extra["answer-judge/why"][2]


@pytest.mark.parametrize("prompt, completion, turns", [
    # conversational: roles kept, system included
    ([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
     [{"role": "assistant", "content": "hello"}],
     [("system", "be brief"), ("user", "hi"), ("assistant", "hello")]),
    # content parts: text parts joined with a newline
    ([{"role": "user", "content": [{"type": "text", "text": "look:"}, {"type": "text", "text": "what is it?"}]}],
     [{"role": "assistant", "content": [{"type": "text", "text": "a cat"}]}],
     [("user", "look:\nwhat is it?"), ("assistant", "a cat")]),
    # developer role is read as system; a tool call is shown to the judge
    ([{"role": "developer", "content": "rules"}, {"role": "user", "content": "q"}],
     [{"role": "assistant", "content": None, "tool_calls": [{"name": "f"}]},
      {"role": "tool", "content": "42"}, {"role": "assistant", "content": "it is 42"}],
     [("system", "rules"), ("user", "q"), ("assistant", "[tool call f()]"),
      ("tool", "42"), ("assistant", "it is 42")]),
    # standard prompt with a conversational completion
    ("plain prompt", [{"role": "assistant", "content": "x"}], [("user", "plain prompt"), ("assistant", "x")]),
])
def test_threads_from_both_formats(prompt, completion, turns):
    reward = trl_reward_func(grader_for(ScriptedModel()))
    [thread] = reward.threads([prompt], [completion], reference=["r"])
    assert thread.turns == turns
    assert thread.metadata == {"reference": "r"}


@pytest.mark.parametrize("kwargs, message", [
    # a column with the wrong length would mis-align references and completions
    ({"reference": ["a"]}, "one value per completion"),
    # a column the caller asked for but the dataset lacks
    ({"columns": ["answer"]}, "not passed"),
])
def test_bad_columns_are_config_errors(kwargs, message):
    columns = kwargs.pop("columns", None)
    reward = trl_reward_func(grader_for(ScriptedModel()), columns=columns)
    with pytest.raises(ConfigError, match=message):
        reward.threads(["q", "q"], ["a", "b"], **kwargs)


def test_unknown_role_is_a_config_error():
    reward = trl_reward_func(grader_for(ScriptedModel()))
    with pytest.raises(ConfigError, match="role 'narrator'"):
        reward.threads([[{"role": "narrator", "content": "x"}]], ["y"])


class _Model:
    def __init__(self):
        self.training = True


class _Trainer:
    def __init__(self):
        self.model = _Model()


@pytest.mark.parametrize("grader_mode, adapter_mode, trainer_training, column, expected", [
    (None, None, None, None, -1.0),        # nothing says eval: training penalty
    (None, None, None, True, 0.0),         # an `eval` dataset column decides per row
    (None, None, False, None, 0.0),        # attached trainer evaluating
    (None, None, True, True, ConfigError),  # an `eval` column that says otherwise than the trainer: refused
    (None, None, False, True, 0.0),        # ... one that agrees passes
    (None, "eval", True, None, 0.0),       # adapter mode beats the trainer's phase
    ("train", "eval", False, True, -1.0),  # the grader's own mode beats everything
])
async def test_penalty_mode_precedence(grader_mode, adapter_mode, trainer_training, column, expected):
    from pydantic import BaseModel

    class Answer(BaseModel):
        answer: str

    grader = grader_for(ScriptedModel(), completion_model=Answer, mode=grader_mode)
    reward = trl_reward_func(grader, mode=adapter_mode)
    if trainer_training is not None:
        trainer = _Trainer()
        trainer.model.training = trainer_training
        reward.attach(trainer)
    cols = {"reference": ["r"]}
    if column is not None:
        cols["eval"] = [column]
    if expected is ConfigError:
        with pytest.raises(ConfigError, match=r"completion 0: metadata key 'eval'.*train phase"):
            await reward(prompts=["q"], completions=["not json"], **cols)
        return
    out = await reward(prompts=["q"], completions=["not json"], **cols)
    assert out == [expected]
    assert reward.last_grades[0].status == "penalized"


def test_a_usage_error_is_raised_not_masked():
    grader = TemplatedPromptJudgeGrader("g", ScriptedModel(default=PASS), SYSTEM,
                                        "{{metadata.reference}} {{completion}}")
    reward = trl_reward_func(grader)
    import asyncio
    # no `reference` column: the strict template refuses to render
    with pytest.raises(ConfigError):
        asyncio.run(reward(prompts=["q"], completions=["a"]))


# --------------------------------------------------------------------------
# a real GRPOTrainer
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_policy():
    from rewardjudge.rl._policies import smollm2_tokenizer, tiny_llama

    tok = smollm2_tokenizer()
    return tiny_llama(tok, seed=0), tok


def test_grpo_trainer_steps_with_the_adapter_and_masks_judge_failures(tiny_policy, tmp_path):
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    model, tok = tiny_policy
    calls = {"n": 0}

    def judge(messages, params, schema):
        calls["n"] += 1
        if calls["n"] % 5 == 0:  # every fifth request: the judge is down
            return JudgeHTTPError(503, "overloaded")
        answer = user_text(messages).split("Answer:", 1)[1]
        return PASS if len(answer) % 2 else FAIL  # varying rewards, so advantages are not all 0

    from pydantic import BaseModel

    class Answer(BaseModel):
        answer: str

    reward = trl_reward_func(grader_for(ScriptedModel(judge)))
    # a random policy never writes this JSON: every completion is penalized, -1 when training and 0
    # when evaluating; its judge must never be asked (an empty script would raise)
    structure = trl_reward_func(TemplatedPromptJudgeGrader("structure", ScriptedModel(), SYSTEM, USER,
                                                           completion_model=Answer))
    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": f"What is {i}+{i}?"}],
                             "reference": str(2 * i)} for i in range(8)])
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, activation_checkpointing=False,
                      per_device_train_batch_size=8, num_generations=4, max_completion_length=12,
                      max_steps=2, logging_steps=1, save_strategy="no", report_to="none",
                      learning_rate=1e-2, seed=0, disable_tqdm=True,
                      per_device_eval_batch_size=4, num_generations_eval=4)
    before = {k: v.detach().clone() for k, v in model.named_parameters()}
    # the second judge stands beside the first gated on it (a plain one would be refused by attach)
    trainer = GRPOTrainer(model=model, reward_funcs=trl_reward_funcs(reward, [structure]), args=args,
                          train_dataset=ds, eval_dataset=ds.select(range(2)), processing_class=tok)
    reward.attach(trainer)
    structure.attach(trainer)
    trainer.train()

    assert trainer.state.global_step == 2
    changed = any(not torch.equal(before[k], v) for k, v in model.named_parameters())
    assert changed  # the optimiser stepped on the judge's rewards
    logs = [h for h in trainer.state.log_history if "judge/answer-judge/count" in h]
    assert len(logs) == 2  # judge health logged every step
    assert sum(h["judge/answer-judge/unscored"] for h in logs) > 0  # failures happened...
    for h in logs:  # ...and TRL's mean reward leaves them out: it equals the mean over usable grades
        assert h["rewards/answer-judge/mean"] == pytest.approx(h["judge/answer-judge/reward_mean"])

    assert all(h["rewards/structure/mean"] == -1.0 for h in logs)  # training penalty while training

    metrics = trainer.evaluate()
    assert metrics["eval_rewards/structure/mean"] == 0.0  # evaluation penalty: the phase followed the trainer
    # health logged per reward call (2 eval batches of 4); TRL averages the calls
    assert metrics["eval_judge/answer-judge/count"] == 4.0


def test_an_image_part_names_the_row_unless_the_grader_reads_images():
    reward = trl_reward_func(grader_for(ScriptedModel()))
    prompt = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x.png"}},
                                           {"type": "text", "text": "what is it?"}]}]
    with pytest.raises(ConfigError, match=r"row 1: prompts\[1\]\[0\] content part 0 is an image"):
        reward.threads(["q", prompt], ["a", "b"])
    grader = grader_for(ScriptedModel())
    grader.reads_images = True
    [thread] = trl_reward_func(grader).threads([prompt], ["a cat"])
    assert thread.turns == [("user", "what is it?"), ("assistant", "a cat")]
    assert thread.images == [(0, {"type": "image_url", "image_url": {"url": "x.png"}})]


def _grpo_step(tiny_policy, tmp_path, reward_funcs, weights, seed=0):
    """One real GRPOTrainer step; returns TRL's own advantages for it."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    model, tok = tiny_policy
    recorded = []

    class Recording(GRPOTrainer):  # observe TRL's own output, change nothing
        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            recorded.append(out["advantages"].detach().clone())
            return out

    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": f"What is {i}+{i}?"}],
                             "reference": str(2 * i)} for i in range(4)])
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, activation_checkpointing=False,
                      per_device_train_batch_size=16, num_generations=4, max_completion_length=10,
                      max_steps=1, logging_steps=1, save_strategy="no", report_to="none",
                      learning_rate=1e-3, seed=seed, disable_tqdm=True, reward_weights=weights)
    trainer = Recording(model=model, reward_funcs=reward_funcs, args=args, train_dataset=ds,
                        processing_class=tok)
    trainer.train()
    return recorded[0]


def test_judge_failures_leave_the_baseline_with_several_reward_functions(tiny_policy, tmp_path):
    """The judge plus a plain Python reward with reward_weights, ~30% judge failures:
    TRL's own advantages give failed rows 0 and the others those of their group
    without the failed rows."""
    import torch

    def judge(messages, params, schema):
        answer = user_text(messages).split("Answer:", 1)[1]
        if sum(map(ord, answer)) % 10 < 3:  # ~30% of completions: the judge is down for them
            return JudgeHTTPError(503, "overloaded")
        return PASS if len(answer) % 2 else FAIL

    seen = []

    def length_reward(prompts, completions, **kw):
        out = [min(len(c[0]["content"]), 40) / 40 for c in completions]
        seen.append(out)
        return out

    reward = trl_reward_func(grader_for(ScriptedModel(judge)))
    funcs = trl_reward_funcs(reward, [length_reward])
    assert [f.__name__ for f in funcs] == ["answer-judge", "length_reward"]
    adv = _grpo_step(tiny_policy, tmp_path, funcs, [1.0, 0.5])
    grades = reward.last_grades
    failed = torch.tensor([g.status == "unscored" for g in grades])
    assert 0 < int(failed.sum()) < len(grades)  # failures happened, and not everywhere
    assert torch.all(adv[failed] == 0)  # a failed row contributes nothing
    combined = torch.tensor([(g.value if g.value is not None else math.nan) + 0.5 * o
                             for g, o in zip(grades, seen[-1])])
    expected = torch.zeros_like(combined)
    for start in range(0, len(combined), 4):  # groups of num_generations, failed rows removed
        idx = [i for i in range(start, start + 4) if not failed[i]]
        if len(idx) > 1:
            r = combined[idx]
            expected[idx] = (r - r.mean()) / (r.std() + 1e-4)
    assert torch.allclose(adv[~failed], expected[~failed], atol=1e-4)

    # without the gate TRL would add the other reward to a failed row (a judge failure moving the policy):
    # the trainer's first call refuses, attach() or not
    plain = trl_reward_func(grader_for(ScriptedModel(judge)))
    with pytest.raises(ConfigError, match=r"'length_reward'.*trl_reward_funcs"):
        _grpo_step(tiny_policy, tmp_path, [plain, length_reward], [1.0, 0.5])


async def test_gated_functions_grade_each_batch_once():
    model = ScriptedModel(default=PASS)
    funcs = trl_reward_funcs(grader_for(model), [lambda prompts, completions, **kw: [0.5] * len(prompts)])
    kw = dict(prompts=["q", "q"], completions=["a", "b"], reference=["r", "r"])
    import asyncio
    outs = await asyncio.gather(*(f(**kw) for f in funcs))
    assert outs == [[1.0, 1.0], [0.5, 0.5]]
    assert len(model.calls) == 2  # one judge request per completion, shared by both functions
