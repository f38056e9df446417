"""rewards_tensor, group_normalize and judge_health."""

from __future__ import annotations

import math

import pytest
import torch

from rewardjudge import ConfigError, Grade
from rewardjudge.rl import group_normalize, judge_health, rewards_tensor

NAN = float("nan")


def scored(v, **kw):
    return Grade(value=v, grader_key="g", status="scored", **kw)


def penalized(v=-1.0):
    return Grade(value=v, grader_key="g", status="penalized", error="malformed completion")


def unscored(error="JudgeHTTPError: judge HTTP 503", **kw):
    return Grade(value=None, grader_key="g", status="unscored", error=error, **kw)


def test_rewards_and_mask_keep_unscored_apart():
    rewards, mask = rt = rewards_tensor([scored(1.0), penalized(), unscored(), scored(0.0)])
    assert rewards.dtype == torch.float32 and mask.dtype == torch.bool
    assert rewards[[0, 1, 3]].tolist() == [1.0, -1.0, 0.0]
    assert math.isnan(rewards[2])  # NaN, never a fake 0
    assert mask.tolist() == [False, False, True, False]  # True = unscored
    assert rt.counts == {"scored": 2, "penalized": 1, "unscored": 1}
    assert rt.statuses == ["scored", "penalized", "unscored", "scored"]
    assert rt.rewards is rewards and rt.mask is mask


def test_fill_and_dtype_options():
    rewards, mask = rewards_tensor([unscored(), scored(0.5)], fill=0.0, dtype=torch.float64)
    assert rewards.tolist() == [0.0, 0.5] and rewards.dtype == torch.float64
    assert mask.tolist() == [True, False]  # the mask still says which 0 is not a reward


def test_empty_and_bad_input():
    rewards, mask = rewards_tensor([])
    assert rewards.shape == (0,) and mask.shape == (0,)
    with pytest.raises(ConfigError, match=r"grades\[1\] must be a Grade"):
        rewards_tensor([scored(1.0), 1.0])


def test_group_normalize_matches_grpo_on_a_full_group():
    r = torch.tensor([1.0, 0.0, 0.0, 1.0])
    adv = group_normalize(r, group_size=4, eps=0.0)
    std = r.std()  # unbiased, as TRL
    assert torch.allclose(adv, (r - 0.5) / std)


@pytest.mark.parametrize("values, masked, expected", [
    # the unscored entry is left out of the mean/std and gets advantage 0
    ([1.0, 0.0, NAN, 1.0], [False, False, True, False],
     [(1 - 2 / 3) / 0.57735, (0 - 2 / 3) / 0.57735, 0.0, (1 - 2 / 3) / 0.57735]),
    # a masked entry whose value is 0 (fill=0.0) must not pull the mean down either
    ([1.0, 0.0, 0.0, 1.0], [False, False, True, False],
     [(1 - 2 / 3) / 0.57735, (0 - 2 / 3) / 0.57735, 0.0, (1 - 2 / 3) / 0.57735]),
    # one usable reward: no baseline, advantage 0 for everyone
    ([1.0, NAN, NAN, NAN], [False, True, True, True], [0.0, 0.0, 0.0, 0.0]),
    # the whole group unscored (a judge outage): all 0, no NaN leaks into the loss
    ([NAN, NAN, NAN, NAN], [True, True, True, True], [0.0, 0.0, 0.0, 0.0]),
    # equal rewards: advantage 0, not 0/0 (eps is 0 here)
    ([0.5, 0.5, 0.5, 0.5], [False] * 4, [0.0, 0.0, 0.0, 0.0]),
])
def test_group_normalize_ignores_masked_entries(values, masked, expected):
    adv = group_normalize(torch.tensor(values), torch.tensor(masked), group_size=4, eps=0.0)
    assert not torch.isnan(adv).any()
    assert adv.tolist() == pytest.approx(expected, abs=1e-4)


def test_groups_are_independent_and_ids_need_not_be_contiguous():
    r = torch.tensor([1.0, 10.0, 0.0, 20.0, 5.0, NAN])
    ids = ["a", "b", "a", "b", "c", "c"]  # interleaved groups, as a shuffled batch might be
    adv = group_normalize(r, group_ids=ids, scale=False)
    assert adv.tolist() == pytest.approx([0.5, -5.0, -0.5, 5.0, 0.0, 0.0])
    # the same through an integer tensor of ids
    adv2 = group_normalize(r, group_ids=torch.tensor([7, 3, 7, 3, 1, 1]), scale=False)
    assert torch.equal(adv, adv2)


def test_from_grades_end_to_end():
    grades = [scored(1.0), scored(0.0), unscored(), penalized(),
              scored(1.0), scored(1.0), scored(1.0), scored(1.0)]
    rewards, mask = rewards_tensor(grades)
    adv = group_normalize(rewards, mask, group_size=4)
    assert adv[2] == 0.0  # unscored
    assert adv[0] > 0 > adv[3]  # the PASS beats the penalized one
    assert adv[4:].tolist() == [0.0] * 4  # a group that all passed teaches nothing


@pytest.mark.parametrize("kwargs, message", [
    ({}, "exactly one of"),                                     # no grouping given
    ({"group_size": 4, "group_ids": [0] * 6}, "exactly one of"),  # both given
    ({"group_size": 4}, "do not split"),                        # 6 rewards, groups of 4
    ({"group_size": 0}, "positive int"),                        # nonsense size
    ({"group_ids": [0, 1]}, "2 entries for 6"),                 # ids misaligned
    ({"group_ids": [[0]] * 6}, "hashable"),                     # unhashable ids
])
def test_group_normalize_usage_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        group_normalize(torch.zeros(6), **kwargs)


def test_group_normalize_refuses_a_misshapen_mask():
    with pytest.raises(ConfigError, match="shaped like rewards"):
        group_normalize(torch.zeros(4), torch.zeros(3, dtype=torch.bool), group_size=2)


def test_judge_health_counts_rates_latency_tokens_distribution():
    grades = [
        scored(1.0, attempts=1, latency_s=0.1, usage={"prompt_tokens": 10, "completion_tokens": 5}),
        scored(0.0, attempts=2, latency_s=0.3, usage={"prompt_tokens": 10, "completion_tokens": 5,
                                                      "total_tokens": 15}),
        penalized(),
        unscored("invalid judge reply after 2 tries: no JSON object found", attempts=2, latency_s=0.5),
        unscored("JudgeTimeoutError: no answer", attempts=4),
    ]
    h = judge_health(grades, prefix="j/")
    assert (h["j/count"], h["j/scored"], h["j/penalized"], h["j/unscored"]) == (5, 2, 1, 2)
    assert h["j/unscored/invalid_reply"] == 1 and h["j/unscored/timeout"] == 1
    assert h["j/policy_parse_failure_rate"] == pytest.approx(1 / 5)
    assert h["j/judged"] == 4  # the penalized one never asked the judge
    assert h["j/judge_parse_failure_rate"] == pytest.approx(1 / 4)
    assert h["j/retry_rate"] == pytest.approx(3 / 4)
    assert h["j/attempts_mean"] == pytest.approx(9 / 4)
    assert h["j/latency_p50"] == pytest.approx(0.3)
    assert h["j/latency_p90"] == pytest.approx(0.46)  # linear interpolation, numpy's default
    assert h["j/tokens_total"] == 30 and h["j/tokens_prompt"] == 20
    assert h["j/reward_mean"] == pytest.approx(0.0)  # (1 + 0 - 1) / 3: unscored left out
    assert h["j/score_mean"] == pytest.approx(0.5)
    assert h["j/score_frac/0-0.1"] == 0.5 and h["j/score_frac/0.9-1"] == 0.5
    assert all(isinstance(v, float) for v in h.values())


def test_judge_health_keys_do_not_depend_on_the_batch():
    # a logger that averages metrics over steps (TRL) must not see keys come and go
    a = judge_health([scored(1.0, attempts=1, latency_s=0.1)])
    b = judge_health([unscored()])
    c = judge_health([])
    assert set(a) == set(b) == set(c)
    assert math.isnan(b["judge/score_mean"]) and math.isnan(c["judge/latency_p50"])


def test_judge_health_bins_and_errors():
    h = judge_health([scored(v) for v in (-2.0, 0.25, 3.0)], score_bins=(0.0, 0.5, 1.0))
    assert (h["judge/score_frac/below"], h["judge/score_frac/0-0.5"], h["judge/score_frac/above"]) == \
        pytest.approx((1 / 3, 1 / 3, 1 / 3))
    with pytest.raises(ConfigError, match="increasing"):
        judge_health([], score_bins=(1.0, 0.0))
    with pytest.raises(ConfigError, match="must be a Grade"):
        judge_health(["nope"])
