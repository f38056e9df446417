"""verl 0.9's own reward managers and advantage functions with our compute_score
functions and our manager/estimator (rewardjudge.rl.verl_manager)."""

from __future__ import annotations

import asyncio
import math
import pickle
import textwrap

import numpy as np
import pytest
import torch

pytest.importorskip("verl")

from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.trainer.ppo.reward import load_reward_manager  # noqa: E402

from rewardjudge import ConfigError  # noqa: E402
from rewardjudge.errors import UnmaskedJudgeFailure  # noqa: E402
from rewardjudge.rl import verl_compute_score  # noqa: E402
from rewardjudge.rl.verl_manager import ESTIMATOR, EXTRA_KEYS  # noqa: E402

GRADERS = textwrap.dedent('''
    from rewardjudge import JudgeTimeoutError
    from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
    from rewardjudge.testing import ScriptedModel
    from rewardjudge.rl import verl_compute_score

    def judge(messages, params, schema):
        text = messages[-1]["content"]
        answer = text.split("Answer: ", 1)[1]
        if "slow" in answer:
            return JudgeTimeoutError("no answer in 60s")
        ref = text.split("Reference: ", 1)[1].split("\\n", 1)[0]
        return '{"reasoning": "r", "score": "PASS"}' if answer == ref else '{"reasoning": "r", "score": "FAIL"}'

    def make(model=None):
        return TemplatedPromptJudgeGrader("verl-judge", model or ScriptedModel(judge),
            "Reply as JSON: {{output_schema}}",
            "Q: {{last_user_turn_content}}\\nReference: {{metadata.ground_truth}}\\nAnswer: {{completion}}")

    GRADER = make()
    sync_score = verl_compute_score(make())
    async_score = verl_compute_score(make(), form="async")
    batch_score = verl_compute_score(make(), form="batch")
''')


@pytest.fixture(scope="module")
def tok():
    from rewardjudge.rl._policies import smollm2_tokenizer

    return smollm2_tokenizer()


@pytest.fixture()
def reward_file(tmp_path):
    path = tmp_path / "my_reward.py"
    path.write_text(GRADERS)
    return path


def config(path, fn, manager="naive", source="register", module=None):
    return OmegaConf.create({
        "reward": {"custom_reward_function": {"path": str(path), "name": fn, "reward_kwargs": {}},
                   "reward_manager": {"source": source, "name": manager,
                                      "module": {"path": module, "name": manager}},
                   "num_workers": 1, "reward_kwargs": {"max_resp_len": 64, "overlong_buffer_cfg": None},
                   "sandbox_fusion": None, "reward_model": {"enable": False}},
        "data": {"max_response_length": 64}, "trainer": {"experiment_name": "test"}})


def batch(tok, answers, truths, uids):
    """A DataProto as verl's reward loop hands it to a manager."""
    prompt = tok("question", add_special_tokens=False)["input_ids"]
    rows = [tok(a, add_special_tokens=False)["input_ids"] for a in answers]
    width = max(map(len, rows))
    responses = torch.tensor([r + [0] * (width - len(r)) for r in rows])
    prompts = torch.tensor([prompt] * len(rows))
    mask = torch.tensor([[1] * len(prompt) + [1] * len(r) + [0] * (width - len(r)) for r in rows])
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": mask,
                 "input_ids": torch.cat([prompts, responses], 1)},
        non_tensors={"data_source": np.array(["src"] * len(rows), dtype=object),
                     "reward_model": np.array([{"ground_truth": t} for t in truths], dtype=object),
                     "extra_info": np.array([{"question": "2+2?"} for _ in rows], dtype=object),
                     "uid": np.array(uids, dtype=object)})


ANSWERS = ["4", "5", "slow", "4", "slow", "slow", "7", "7"]
TRUTHS = ["4"] * 4 + ["7"] * 4
UIDS = ["a"] * 4 + ["b"] * 4


def run_manager(manager, data):
    """As verl's RewardLoopWorker does: every sample at once, on the manager's own loop."""
    async def go():
        return await asyncio.gather(*(manager.run_single(data[i:i + 1]) for i in range(len(data))))
    return manager.loop.run_until_complete(go())


def as_ours(cfg):
    cfg.reward.reward_manager.source = "importlib"
    cfg.reward.reward_manager.module.path = "pkg://rewardjudge.rl.verl_manager"
    cfg.reward.reward_manager.name = "RewardJudgeManager"
    return cfg


@pytest.mark.parametrize("fn", ["sync_score", "async_score"])
def test_our_manager_calls_both_forms_and_keeps_the_marker(tok, reward_file, fn):
    mgr = load_reward_manager(as_ours(config(reward_file, fn)), tok)
    outs = run_manager(mgr, batch(tok, ANSWERS, TRUTHS, UIDS))
    scores = [o["reward_score"] for o in outs]
    assert scores[:2] == [1.0, 0.0] and math.isnan(scores[2])  # unscored: a NaN marker, never 0
    assert all(set(o["reward_extra_info"]) == set(EXTRA_KEYS) for o in outs)  # same keys on every path
    assert [o["reward_extra_info"]["unscored"] for o in outs] == [0, 0, 1, 0, 1, 1, 0, 0]


@pytest.mark.parametrize("manager, fn", [
    ("naive", "sync_score"), ("naive", "async_score"), ("dapo", "sync_score"), ("dapo", "async_score"),
    ("gdpo", "sync_score"), ("gdpo", "async_score"),
])
def test_verls_own_managers_fail_loudly_at_the_first_judge_failure(tok, reward_file, manager, fn):
    # verl's default (naive + grpo) would turn the group NaN and drop the step with one WARN
    mgr = load_reward_manager(config(reward_file, fn, manager), tok)
    outs = run_manager(mgr, batch(tok, ANSWERS[:2], TRUTHS[:2], UIDS[:2]))
    assert [o["reward_score"] for o in outs] == [1.0, 0.0]  # the judge's verdicts pass through
    with pytest.raises(UnmaskedJudgeFailure) as err:
        run_manager(mgr, batch(tok, ["slow"], ["4"], ["a"]))
    message = str(err.value)
    assert "JudgeTimeoutError" in message  # why the judge failed
    assert "reward.reward_manager.module.path=pkg://rewardjudge.rl.verl_manager" in message
    assert "algorithm.adv_estimator=rewardjudge_grpo" in message


@pytest.mark.parametrize("fn", ["sync_score", "async_score"])
def test_verls_rate_limited_manager_is_refused_at_the_first_call(tok, reward_file, fn):
    # rate_limited makes anything compute_score raises (and a call over reward.timeout) reward 0.0
    mgr = load_reward_manager(config(reward_file, fn, "rate_limited"), tok)
    for answers in (["4"], ["slow"]):  # a scored sample and a judge failure alike
        with pytest.raises(UnmaskedJudgeFailure) as err:
            run_manager(mgr, batch(tok, answers, ["4"], ["a"]))
        message = str(err.value)
        assert "rate_limited" in message and "reward 0.0" in message
        assert "reward.reward_manager.name=RewardJudgeManager" in message
        assert "algorithm.adv_estimator=rewardjudge_grpo" in message


def test_verls_own_grpo_with_the_nan_marker_poisons_the_group():
    # why the marker must not reach plain grpo: verl's own function turns the whole group NaN
    r = torch.tensor([[1.0], [0.0], [math.nan], [1.0]])
    adv, _ = core_algos.compute_grpo_outcome_advantage(r, torch.ones_like(r), np.array(["a"] * 4))
    assert torch.isnan(adv).all()


def test_estimator_equals_verls_grpo_without_the_unscored_rows(tok, reward_file):
    mgr = load_reward_manager(as_ours(config(reward_file, "sync_score")), tok)
    scores = torch.tensor([o["reward_score"] for o in run_manager(mgr, batch(tok, ANSWERS, TRUTHS, UIDS))])
    rewards = torch.zeros(8, 3)
    rewards[:, -1] = scores
    mask = torch.ones(8, 3)
    fn = core_algos.get_adv_estimator_fn(ESTIMATOR)  # registered by importing verl_manager
    adv, _ = fn(token_level_rewards=rewards, response_mask=mask, index=np.array(UIDS), config=None)
    unscored = torch.isnan(scores)
    assert torch.all(adv[unscored] == 0) and torch.isfinite(adv).all()
    keep = (~unscored).nonzero(as_tuple=True)[0]
    ref, _ = core_algos.compute_grpo_outcome_advantage(rewards[keep], mask[keep], np.array(UIDS)[keep.numpy()])
    assert torch.equal(adv[keep], ref)


def test_remote_manager_takes_the_spec_form_and_refuses_a_live_grader(tok, reward_file, tmp_path):
    from rewardjudge.testing import FakeJudgeServer

    live = verl_compute_score(__import__("rewardjudge.testing").testing and _grader(reward_file))
    with pytest.raises(ConfigError, match="verl_compute_score\\('SPEC', judge="):
        pickle.dumps(live)
    ray = pytest.importorskip("ray")
    with FakeJudgeServer(lambda req: '{"reasoning": "r", "score": "PASS"}') as judge:
        spec_file = tmp_path / "spec_reward.py"
        spec_file.write_text(f"from rewardjudge.rl import verl_compute_score\n"
                             f"compute_score = verl_compute_score({str(reward_file) + ':make'!r}, "
                             f"judge={judge.url!r}, judge_model='fake-judge')\n")
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            mgr = load_reward_manager(config(spec_file, "compute_score", "remote"), tok)
            outs = run_manager(mgr, batch(tok, ["4", "5"], ["4", "4"], ["a", "a"]))
        finally:
            ray.shutdown()
    assert [o["reward_score"] for o in outs] == [1.0, 1.0]  # graded in the Ray actor by the fake judge
    assert judge.request_count == 2


def _grader(path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("graders_for_pickle", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.make()


def test_batch_form_called_per_sample_names_the_managers_to_use(tok, reward_file):
    mgr = load_reward_manager(config(reward_file, "batch_score"), tok)
    with pytest.raises(ConfigError, match="verl 0.9 has no batch reward manager"):
        run_manager(mgr, batch(tok, ["4"], ["4"], ["a"]))
