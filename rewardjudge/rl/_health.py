"""judge_health: a batch of Grades summarised as flat metrics for a logger; OutageGuard."""

from __future__ import annotations

import bisect
import math
import re
import statistics
from collections import Counter
from typing import Any, Optional, Sequence

from pydantic import ConfigDict, Field, StrictInt

from .._option_types import Options, Real
from ..errors import ConfigError, JudgeOutage
from ..grade import Grade

__all__ = ["OutageGuard", "OutageOptions", "checked_grades", "judge_health", "total_tokens", "unscored_kind"]

#: unscored kind -> how an unscored grade's ``error`` starts (the judge error's class name, or the readout's reason)
_KIND_PREFIXES = {"timeout": ("JudgeTimeoutError",), "http": ("JudgeHTTPError",),
                  "connection": ("JudgeConnectionError", "JudgeStartupError"),
                  "invalid_reply": ("JudgeResponseError", "invalid judge reply"),
                  "no_sealed_verdict": ("no sealed verdict",), "cut_off": ("cut off",)}
#: the kinds where the judge answered but wrote no verdict that can be read
_REPLY_KINDS = ("invalid_reply", "no_sealed_verdict", "cut_off")
UNSCORED_KINDS = (*_KIND_PREFIXES, "other")
#: how a candidate judge's unscored grade opens: the rounds it was asked in, the last round's number
_ROUNDS = re.compile(r"not judged after \d+ round\(s\): (?:round \d+: )?")


def checked_grades(grades: Sequence[Grade]) -> list[Grade]:
    """``grades`` as a list; ConfigError naming the first entry that is not a Grade."""
    grades = list(grades)
    bad = next((i for i, g in enumerate(grades) if not isinstance(g, Grade)), None)
    if bad is not None:
        raise ConfigError(f"grades[{bad}] must be a Grade, got {type(grades[bad]).__name__}")
    return grades


def unscored_kind(error: str | None) -> str:
    """Why an unscored grade with this ``error`` is unscored: one of ``UNSCORED_KINDS``."""
    text = (error or "").strip()
    if m := _ROUNDS.match(text):   # a candidate's grade: its last round's failure says why
        text = text[m.end():]
    return next((kind for kind, prefixes in _KIND_PREFIXES.items() if text.startswith(prefixes)), "other")


def _latency_percentiles(latencies: list[float]) -> dict[str, float]:
    """p50, p90 and p99, linearly interpolated (as numpy's default)."""
    if len(latencies) < 2:  # the stdlib wants two points; one is every percentile, none is undefined
        return {f"latency_p{q}": latencies[0] if latencies else math.nan for q in (50, 90, 99)}
    cuts = statistics.quantiles(latencies, n=100, method="inclusive")
    return {f"latency_p{q}": cuts[q - 1] for q in (50, 90, 99)}


def _rate(k: float, d: float) -> float:
    return k / d if d else math.nan


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else math.nan


def total_tokens(grade: Grade) -> Any:
    """The judge tokens a grade used: ``total_tokens``, else prompt plus completion."""
    return grade.usage.get("total_tokens", grade.usage.get("prompt_tokens", 0) + grade.usage.get("completion_tokens", 0))


DEFAULT_SCORE_BINS = tuple(i / 10 for i in range(11))


def judge_health(grades: Sequence[Grade], *, prefix: str = "judge/",
                 score_bins: Sequence[float] = DEFAULT_SCORE_BINS) -> dict[str, float]:
    """Flat ``{prefix + name: float}`` metrics of one batch, every key always present (NaN: undefined):
    counts and rates by status and unscored kind, forgeries, retries, latency, tokens, scores and
    their shares over ``score_bins``.

    >>> from rewardjudge import Grade
    >>> h = judge_health([Grade(1.0, "g", attempts=1, latency_s=0.2), Grade(None, "g", error="JudgeTimeoutError: x")])
    >>> h["judge/unscored"], h["judge/unscored/timeout"], h["judge/score_frac/0.9-1"]
    (1.0, 1.0, 1.0)
    """
    grades = checked_grades(grades)
    if not isinstance(prefix, str):
        raise ConfigError("prefix must be a str")
    edges = [float(e) for e in score_bins]
    if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:])):
        raise ConfigError(f"score_bins must be at least two increasing edges, got {list(score_bins)!r}")
    out = {**_counts(grades), **_costs(grades)}
    # a labels-only scorer's grade is scored with a label and no value: counted, never averaged
    out["reward_mean"] = _mean([g.value for g in grades if g.status != "unscored" and g.value is not None])
    out.update(_scores([float(g.value) for g in grades if g.status == "scored" and g.value is not None], edges))
    return {prefix + k: v for k, v in out.items()}


def _counts(grades: list[Grade]) -> dict[str, float]:
    """Counts and rates by status, unscored kind, forgery and judge attempts."""
    n = len(grades)
    by_status = {s: sum(g.status == s for g in grades) for s in ("scored", "penalized", "unscored")}
    judged = [g for g in grades if g.attempts > 0]
    out = {"count": float(n), **{s: float(k) for s, k in by_status.items()},
           **{f"{s}_rate": _rate(k, n) for s, k in by_status.items()}}
    kinds = [unscored_kind(g.error) for g in grades if g.status == "unscored"]
    out.update({f"unscored/{kind}": float(kinds.count(kind)) for kind in UNSCORED_KINDS})
    forgeries = sum(1 for g in grades if g.extra.get("forgery"))
    out.update(policy_parse_failure_rate=_rate(by_status["penalized"], n),
               judge_parse_failure_rate=_rate(sum(kinds.count(k) for k in _REPLY_KINDS), len(judged)),
               forgeries=float(forgeries), forgery_rate=_rate(forgeries, n), judged=float(len(judged)),
               retry_rate=_rate(sum(g.attempts > 1 for g in judged), len(judged)),
               attempts_mean=_rate(sum(g.attempts for g in judged), len(judged)))
    return out


def _costs(grades: list[Grade]) -> dict[str, float]:
    """Latency percentiles and token sums."""
    latencies = [g.latency_s for g in grades if g.latency_s is not None]
    out = _latency_percentiles(latencies)
    total = sum(int(total_tokens(g)) for g in grades)
    out.update(latency_mean=_mean(latencies),
               tokens_prompt=float(sum(int(g.usage.get("prompt_tokens", 0)) for g in grades)),
               tokens_completion=float(sum(int(g.usage.get("completion_tokens", 0)) for g in grades)),
               tokens_total=float(total), tokens_per_judged=_rate(total, sum(g.attempts > 0 for g in grades)))
    return out


def _scores(values: list[float], edges: list[float]) -> dict[str, float]:
    """Statistics of the scored values and their distribution over the bins between ``edges``."""
    out = {"score_mean": _mean(values), "score_std": statistics.pstdev(values) if values else math.nan,
           "score_min": min(values) if values else math.nan, "score_max": max(values) if values else math.nan}
    counts = Counter(min(bisect.bisect_right(edges, v) - 1, len(edges) - 2) for v in values
                     if edges[0] <= v <= edges[-1])
    for i, (lo, hi) in enumerate(zip(edges, edges[1:])):
        out[f"score_frac/{lo:g}-{hi:g}"] = _rate(counts[i], len(values))
    out["score_frac/below"] = _rate(sum(v < edges[0] for v in values), len(values))
    out["score_frac/above"] = _rate(sum(v > edges[-1] for v in values), len(values))
    return out


class OutageOptions(Options):
    """An outage guard's setting (TRL's reward function, the reward server, verl's ``algorithm.rewardjudge``)."""
    model_config = ConfigDict(frozen=True)

    outage_threshold: Optional[Real] = Field(0.5, ge=0, lt=1,
                                             description="must be a share in [0, 1) or None (off)")
    outage_steps: StrictInt = Field(3, ge=1, description="must be a positive int")


class OutageGuard:
    """``observe(grades)`` once per step raises ``JudgeOutage`` when the unscored share is over
    ``threshold`` (None: off) for ``steps`` consecutive steps.

    >>> from rewardjudge import Grade
    >>> guard = OutageGuard(threshold=0.5, steps=2)
    >>> guard.observe([Grade(None, "g", error="JudgeTimeoutError: x")])
    >>> guard.observe([Grade(None, "g", error="JudgeTimeoutError: x")])
    Traceback (most recent call last):
    ...
    rewardjudge.errors.JudgeOutage: judge outage: ...
    """

    def __init__(self, threshold: float | None = 0.5, steps: int = 3):
        o = OutageOptions(outage_threshold=threshold, outage_steps=steps)
        self.threshold, self.steps = o.outage_threshold, o.outage_steps
        self.streak = 0
        self.rates: list[float] = []  # unscored share of the steps in the current streak

    def observe(self, grades: Sequence[Grade]) -> None:
        """Count one step's grades; raise ``JudgeOutage`` on the ``steps``-th step over the threshold."""
        if self.threshold is None or not grades:
            return
        rate = sum(g.status == "unscored" for g in grades) / len(grades)
        if rate <= self.threshold:
            self.streak, self.rates = 0, []
            return
        self.streak += 1
        self.rates.append(rate)
        if self.streak >= self.steps:
            health = judge_health(grades)
            kinds = ", ".join(f"{k} {int(health[f'judge/unscored/{k}'])}" for k in UNSCORED_KINDS
                              if health[f"judge/unscored/{k}"])
            example = next((g.error for g in grades if g.status == "unscored" and g.error), "")
            raise JudgeOutage(
                f"judge outage: unscored share {', '.join(f'{r:.0%}' for r in self.rates)} over "
                f"{self.streak} consecutive steps (threshold {self.threshold:.0%}); unscored by kind: {kinds}; "
                f"e.g. {example[:200]!r}. Check the judge (URL, model, load), or raise the threshold / "
                f"turn the guard off (outage_threshold=None) to train on.", health=health)
