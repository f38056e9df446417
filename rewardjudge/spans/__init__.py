"""Live evaluation of OpenTelemetry GenAI spans: ``judge-v1`` pipelines.

A pipeline (``PipelineConfig``) pins scorer versions (``JudgeConfig``: a copy
of one version's config, its ``scorer_version`` and a variable mapping),
selects spans (``SpanFilter``), samples whole traces by trace id
(``trace_sampled``), and writes one result per span and scorer version,
linked to the trace and span ids.

* ``read_otlp_file(path)``: the spans of an OTLP file (JSON or protobuf), read
  with ``opentelemetry-proto`` (``pip install 'rewardjudge[pipeline]'``).
* ``arun_pipeline`` / ``run_pipeline``: judge spans into an output folder
  (resumable) or into memory.
* ``OtlpReceiver``: an OTLP/HTTP receiver (``POST /v1/traces``) that judges
  what it receives (``rewardjudge pipeline receive``).
* ``SEMCONV_VERSION``: the GenAI semantic conventions read
  (``gen_ai.input.messages``, ``gen_ai.output.messages``,
  ``gen_ai.system_instructions``).

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
