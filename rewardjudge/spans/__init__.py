"""Live evaluation of OpenTelemetry GenAI spans (docs/pipelines.md); names load on first use."""

from .._lazy import lazy_getattr as _lazy_getattr

#: the semantic-conventions release whose GenAI message attributes are read (unchanged through v1.41.0)
SEMCONV_VERSION = "1.37.0"

_LAZY = {**dict.fromkeys(["Span", "read_otlp_file", "span_thread"], "._otlp"),
         **dict.fromkeys(["JUDGE_V1", "JudgeConfig", "PipelineConfig", "SpanFilter", "trace_sampled"], "._pipeline"),
         **dict.fromkeys(["OtlpReceiver", "PipelineRun", "SpanJudge", "arun_pipeline", "read_results", "run_pipeline"],
                         "._runner")}

__all__ = sorted(["SEMCONV_VERSION", *_LAZY])

__getattr__ = _lazy_getattr(__name__, _LAZY, globals())
