"""Input paths, second audit: every reader of a role reads it through one alias table, a key an
adapter sets never silently replaces one the data holds, and the trainers' own shapes reach the judge."""

import json

import pytest

from rewardjudge import ConfigError
from rewardjudge.thread import ROLE_ALIASES, StringThread, message_turns, role_of

GEMINI = [{"role": "user", "content": "2+2?"}, {"role": "model", "content": "4"}]


def test_gemini_model_role_is_the_assistant_in_messages():
    assert message_turns(GEMINI) == [("user", "2+2?"), ("assistant", "4")]
    assert StringThread.from_messages(GEMINI).completion() == "4"


def test_gemini_model_role_is_the_assistant_in_spans():
    from rewardjudge.spans._otlp import Span, span_thread
    parts = [{"role": r["role"], "parts": [{"type": "text", "content": r["content"]}]} for r in GEMINI]
    span = Span(name="chat", trace_id="t", span_id="s",
                attributes={"gen_ai.input.messages": json.dumps(parts + [{"role": "user", "parts": [
                    {"type": "text", "content": "sure?"}]}])})
    assert span_thread(span).turns == [("user", "2+2?"), ("assistant", "4"), ("user", "sure?")]


def test_gemini_model_role_in_scorer_transcripts_and_chat_markup():
    from rewardjudge.scorers._builtins import format_messages
    from rewardjudge.serve._samples import split_chat_markup
    assert format_messages(GEMINI, "user") == [("user", "2+2?"), ("assistant", "4")]
    chatml = "<|im_start|>user\nQ<|im_end|>\n<|im_start|>model\nA<|im_end|>\n<|im_start|>user\nmore<|im_end|>\n"
    assert split_chat_markup(chatml) == [("user", "Q"), ("assistant", "A"), ("user", "more")]


@pytest.mark.parametrize("alias", sorted(ROLE_ALIASES))
def test_every_reader_takes_every_alias(alias):
    from rewardjudge.scorers._builtins import format_messages
    from rewardjudge.serve._samples import split_chat_markup
    role = ROLE_ALIASES[alias]
    assert message_turns([{"role": alias, "content": "x"}]) == [(role, "x")]
    assert format_messages([{"role": alias, "content": "x"}], "user") == [(role, "x")]
    assert split_chat_markup(f"<|im_start|>{alias}\nx<|im_end|>\n") == [(role, "x")]


def test_an_unknown_role_is_still_refused():
    assert role_of("critic") is None
    with pytest.raises(ConfigError, match="critic"):
        message_turns([{"role": "critic", "content": "x"}])


# ---- TRL: a dataset column whose name GRPOTrainer takes never reaches the judge


def _trl_grader():
    from rewardjudge.graders.templated_prompt_judge import TemplatedPromptJudgeGrader
    from rewardjudge.testing import ScriptedModel
    return TemplatedPromptJudgeGrader("g", ScriptedModel(default='{"reasoning": "ok", "score": "PASS"}'),
                                      "Grade. {{output_schema}}", "{{metadata.log_extra}} {{completion}}")


@pytest.fixture(scope="module")
def trl_trainer_with(tmp_path_factory):
    """A real GRPOTrainer over a dataset that has ``column`` (a tiny policy built from a config)."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from rewardjudge.rl._policies import smollm2_tokenizer, tiny_llama

    tok = smollm2_tokenizer()
    model = tiny_llama(tok, seed=0)

    def build(reward, column):
        ds = Dataset.from_list([{"prompt": f"What is {i}+{i}?", column: str(2 * i)} for i in range(4)])
        args = GRPOConfig(output_dir=str(tmp_path_factory.mktemp("trl")), use_cpu=True, bf16=False,
                          per_device_train_batch_size=4, num_generations=4, max_completion_length=4, max_steps=1,
                          save_strategy="no", report_to="none", disable_tqdm=True)
        return GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=ds, processing_class=tok)

    return build


@pytest.mark.parametrize("column", ["log_extra", "trainer_state", "completion"])
def test_trl_column_named_as_trainers_argument_is_refused_at_attach(trl_trainer_with, column):
    from rewardjudge.rl import trl_reward_func
    reward = trl_reward_func(_trl_grader())
    trainer = trl_trainer_with(reward, column)
    with pytest.raises(ConfigError, match=f"'{column}'.*rename it"):
        reward.attach(trainer)


def test_trl_column_named_as_trainers_argument_is_refused_at_first_call(trl_trainer_with):
    # no attach(): TRL's own first reward call attaches, and refuses; without the check the judge was shown
    # TRL's logging method where the column's value should be
    from rewardjudge.rl import trl_reward_func
    reward = trl_reward_func(_trl_grader())
    with pytest.raises(ConfigError, match="'log_extra'.*rename it"):
        trl_trainer_with(reward, "log_extra").train()
    assert reward.last_grades == []


def test_trl_columns_option_naming_a_taken_name_is_refused():
    from rewardjudge.rl import trl_reward_func
    with pytest.raises(ConfigError, match="'trainer_state'"):
        trl_reward_func(_trl_grader(), columns=["reference", "trainer_state"])


async def test_trl_eval_column_disagreeing_with_the_mode_is_refused():
    from rewardjudge.rl import trl_reward_func
    reward = trl_reward_func(_trl_grader(), mode="train")
    with pytest.raises(ConfigError, match="completion 1: metadata key 'eval'"):
        await reward(prompts=["q", "q"], completions=["a", "b"], log_extra=None, eval=[False, "held-out"])
