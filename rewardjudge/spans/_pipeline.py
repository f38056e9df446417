"""A ``judge-v1`` pipeline: which spans, how many traces, which pinned scorer versions (docs/pipelines.md)."""

from __future__ import annotations

import fnmatch
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Optional

from pydantic import BeforeValidator, Field, PrivateAttr, StrictStr, model_validator

from .._option_types import JSON_FORM, Flag, Options, Real, Whole
from ..errors import ConfigError
from ..scorers import ScorerBinding, ScorerConfig
from ..scorers._config import pinned
from ._otlp import OUTPUT_MESSAGES, Span, message_attributes

__all__ = ["JUDGE_V1", "DEFAULT_FILTER", "JudgeConfig", "PipelineConfig", "SpanFilter", "source_of", "trace_sampled"]

JUDGE_V1 = "judge-v1"
#: GenAI inference and agent spans (``gen_ai.operation.name``)
DEFAULT_FILTER = {"attributes": {"gen_ai.operation.name": ["chat", "text_completion", "generate_content",
                                                           "invoke_agent"]}}
_CALL = re.compile(r"""^\s*(attr|format_input_transcript|format_output_transcript)\s*\(\s*(?:"([^"]*)"|'([^']*)')\s*\)\s*$""")
_CALL_KIND = {"attr": "metadata", "format_input_transcript": "input_messages",
              "format_output_transcript": "output_messages"}


def source_of(value: Any, variable: str = "?") -> str:
    """A binding source for a mapping value written in the document's names."""
    if not isinstance(value, str):
        raise ConfigError(f"mapping for {variable!r} must be a string such as 'attr(\"key\")' or "
                          f"'transcript', got {value!r:.60}")
    m = _CALL.match(value)
    if m:
        key = m.group(2) if m.group(2) is not None else m.group(3)
        if not key:
            raise ConfigError(f"mapping for {variable!r}: {m.group(1)}() needs an attribute key")
        return f"{_CALL_KIND[m.group(1)]}:{key}"
    if value.lstrip().startswith(("attr(", "format_input_transcript(", "format_output_transcript(")):
        raise ConfigError(f"mapping for {variable!r}: {value!r:.80} is not understood; write one quoted key, "
                          f"e.g. attr(\"app.product\") or format_input_transcript(\"gen_ai.input.messages\")")
    return value.strip()


_RANDOM_BITS = 56


def trace_sampled(trace_id: str, rate: float) -> bool:
    """Whether a trace is in a sample of ``rate`` by its id alone (OpenTelemetry's consistent sampling).

    >>> trace_sampled("4bf92f3577b34da6a3ce929d0e0e4736", 1.0), trace_sampled("4bf92f3577b34da6a3ce929d0e0e4736", 0.0)
    (True, False)
    """
    if not 0.0 < rate < 1.0:
        return rate >= 1.0
    randomness = int(trace_id[-14:] or "0", 16)
    return randomness >= round((1.0 - rate) * (1 << _RANDOM_BITS))


class SpanFilter(Options):
    """Which spans a pipeline judges: ``span_name`` globs, ``attributes``, ``has_messages`` (docs/pipelines.md)."""

    where = "filter"
    model_config = JSON_FORM

    span_name: Annotated[tuple[StrictStr, ...], BeforeValidator(lambda v: (v,) if isinstance(v, str) else v or ())] = (
        Field((), description="must be a glob or a list of globs"))
    attributes: Annotated[dict[str, Any], BeforeValidator(lambda v: v or {})] = Field(
        {}, description='must be an object: key -> value, [values] or "*"')
    has_messages: Flag = True

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "SpanFilter":
        """The filter of a JSON object; None: ``DEFAULT_FILTER``."""
        return super().from_dict(DEFAULT_FILTER if data is None else data)

    def __call__(self, span: Span) -> bool:
        if self.span_name and not any(fnmatch.fnmatchcase(span.name, g) for g in self.span_name):
            return False
        for key, want in self.attributes.items():
            got = span.get(key)
            if got is None if want == "*" else got not in want if isinstance(want, list) else got != want:
                return False
        return not self.has_messages or OUTPUT_MESSAGES in message_attributes(span)


class JudgeConfig(Options):
    """One ``pipeline_configs[]`` entry: a copy of a scorer version's config, checked, and its mapping."""

    where = "pipeline_config"
    model_config = JSON_FORM

    config: Annotated[ScorerConfig, BeforeValidator(ScorerConfig.from_dict)]
    scorer_version: StrictStr = Field(description="must be the pinned config's version id (a string)")
    mapping: Annotated[dict[str, Any], BeforeValidator(lambda v: {} if v is None else v)] = Field(
        {}, description="must be an object: variable -> source")
    scorer: Optional[StrictStr] = Field(None, description="must be the registry slug (a string) or null")
    scorer_name: Optional[StrictStr] = Field(None, description="must be a string or null (the slug or 'scorer')")
    scorer_version_number: Optional[Whole] = Field(None, description="must be a whole number or null")
    type: Literal["judge-v1"] = Field(JUDGE_V1, description=f"must be {JUDGE_V1!r}")
    _binding: ScorerBinding = PrivateAttr()

    @model_validator(mode="after")
    def _pinned(self) -> "JudgeConfig":
        pinned(self.config, self.scorer_version, f"pipeline config for {self.label!r} pins scorer_version",
               "the copy was edited; pin the version again")
        self._binding = ScorerBinding(self.config, {k: source_of(v, k) for k, v in self.mapping.items()},
                                      scorer_name=self.label, scorer_slug=self.scorer)
        return self

    @classmethod
    def pin(cls, scorer: Any, mapping: Mapping[str, str] | None = None, *,
            version: int | str | None = None) -> "JudgeConfig":
        """Pin a ``Scorer`` (its current version, or ``version``: a number or id) with ``mapping``."""
        config, number = scorer.config, scorer.version_number
        if version is not None:
            found = [v for v in scorer.history if v.number == version or v.id == version]
            if not found:
                raise ConfigError(f"scorer {scorer.slug or scorer.name!r} has no version {version!r}")
            config, number = found[-1].config, found[-1].number
        return cls(ScorerConfig.from_dict(config.to_dict()), config.version_id, dict(mapping or {}),
                   scorer=scorer.slug, scorer_name=scorer.name, scorer_version_number=number)

    @property
    def binding(self) -> ScorerBinding:
        return self._binding

    @property
    def label(self) -> str:
        return self.scorer or self.scorer_name or "scorer"


class PipelineConfig(Options):
    """A ``judge-v1`` live evaluation: ``name``, ``pipeline_configs``, ``filter``, ``sampling_rate``."""

    where = "pipeline"
    model_config = JSON_FORM

    name: StrictStr = Field(pattern=r"\S", description="must be a non-empty string (the pipeline's name)")
    pipeline_configs: list[Annotated[JudgeConfig, BeforeValidator(JudgeConfig.from_dict)]] = Field(
        min_length=1, description="must be a non-empty list of pipeline configs (pinned scorer versions)")
    filter: Annotated[SpanFilter, BeforeValidator(SpanFilter.from_dict)] = Field(None, validate_default=True)
    sampling_rate: Real = Field(1.0, ge=0, le=1, description="must be a number in [0, 1]")
    type: Literal["judge-v1"] = Field(JUDGE_V1, description=f"must be {JUDGE_V1!r}, the only pipeline type")

    @model_validator(mode="after")
    def _pinned_once(self) -> "PipelineConfig":
        pins = [(c.label, c.scorer_version) for c in self.pipeline_configs]
        twice = next((p for i, p in enumerate(pins) if p in pins[:i]), None)
        if twice:
            raise ConfigError(f"scorer {twice[0]!r} version {twice[1][:12]} is pinned twice")
        return self

    def wants(self, span: Span) -> bool:
        """The span passes the filter and its trace is in the sample."""
        return trace_sampled(span.trace_id, self.sampling_rate) and self.filter(span)

    @classmethod
    def load(cls, path: str | Path) -> "PipelineConfig":
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read pipeline {path}: {exc}") from None
        return cls.from_dict(data)

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
