"""Live evaluation of OpenTelemetry GenAI spans: ``judge-v1`` pipelines (docs/pipelines.md).

A ``PipelineConfig`` pins scorer versions (``JudgeConfig``), selects spans (``SpanFilter``) and samples traces
(``trace_sampled``); spans come from ``read_otlp_file`` or an ``OtlpReceiver`` (``rewardjudge[pipeline]``).

>>> from rewardjudge.spans import trace_sampled
>>> trace_sampled("4bf92f3577b34da6a3ce929d0e0e4736", 1.0)
True
"""

from ._otlp import SEMCONV_VERSION, Span, read_otlp_file, span_thread
from ._pipeline import JUDGE_V1, JudgeConfig, PipelineConfig, SpanFilter, trace_sampled
from ._receiver import OtlpReceiver
from ._runner import PipelineRun, SpanJudge, arun_pipeline, read_results, run_pipeline

__all__ = ["JUDGE_V1", "JudgeConfig", "OtlpReceiver", "PipelineConfig", "PipelineRun", "SEMCONV_VERSION",
           "Span", "SpanFilter", "SpanJudge", "arun_pipeline", "read_otlp_file", "read_results", "run_pipeline",
           "span_thread", "trace_sampled"]
