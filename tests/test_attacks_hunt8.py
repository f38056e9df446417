"""Attack hunt 8: span messages nested too deep sank their whole batch, and regressions for what
held (candidate blocks under encodings and duplicates, template syntax in scorer values, server
bodies with odd group keys and duplicate samples, reasoning channels of a judge reply)."""

from __future__ import annotations

import copy

import pytest

from rewardjudge.errors import ConfigError

from test_pipeline_spans import doc_pipeline, judge, make_request  # noqa: F401 (skips without the extra)
from rewardjudge.spans import run_pipeline, span_thread
from rewardjudge.spans._otlp import INPUT_MESSAGES, OUTPUT_MESSAGES, SYSTEM_INSTRUCTIONS, spans_of


# -- 1. a span whose message attribute is text the instrumentation recorded as it was (a model's
# output starting with '[' is read as JSON messages) nested a few hundred deep raised RecursionError
# out of span_thread: not the ConfigError the runner catches, so the receiver dropped the whole batch
# of spans (64 by default) and run_pipeline failed outright
def _deep(depth: int, opener: str = "[") -> str:
    closer = {"[": "]", '{"messages":': "}", '{"role": "assistant", "content":': "}"}[opener]
    return opener * depth + '"x"' + closer * depth


@pytest.mark.parametrize("key", [INPUT_MESSAGES, OUTPUT_MESSAGES, SYSTEM_INSTRUCTIONS])
@pytest.mark.parametrize("depth", [500, 5000, 100_000])
def test_span_messages_nested_too_deep_are_an_unreadable_span(key, depth):
    span = next(s for s in spans_of(make_request(1)) if s.name.startswith("chat"))
    span.attributes[key] = _deep(depth)
    with pytest.raises(ConfigError, match="nest too deep"):
        span_thread(span)


def test_one_deep_span_leaves_its_batch_mates_judged():
    spans = [s for s in spans_of(make_request(3)) if s.name.startswith("chat")]
    spans[1] = copy.deepcopy(spans[1])
    spans[1].attributes[OUTPUT_MESSAGES] = _deep(3000)
    run = run_pipeline(doc_pipeline(), spans, judge(), batch_size=64)
    status = {(r["trace_id"], r["span_id"]): r["status"] for r in run.results}
    assert len(status) == len(spans)
    assert status.pop((spans[1].trace_id, spans[1].span_id)) == "unscored"
    assert set(status.values()) == {"scored"}
