"""judge-v1 pipelines over OpenTelemetry GenAI spans (rewardjudge.spans, `rewardjudge pipeline`).

Spans are built with opentelemetry-proto (the OTLP project's own classes) and
written as the collector's file exporter writes them; the receiver is driven
by a real HTTP client over loopback.
"""

from __future__ import annotations

import asyncio
import base64
import gzip
import json
import random

import pytest

pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")

import aiohttp  # noqa: E402
from google.protobuf import json_format  # noqa: E402
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2  # noqa: E402

from rewardjudge.cli import build_parser  # noqa: E402
from rewardjudge.errors import ConfigError, JudgeHTTPError  # noqa: E402
from rewardjudge.scorers import Scorer, ScorerRegistry  # noqa: E402
from rewardjudge.spans import (JudgeConfig, OtlpReceiver, PipelineConfig, SpanJudge,  # noqa: E402
                               read_otlp_file, read_results, run_pipeline, span_thread, trace_sampled)
from rewardjudge.spans._otlp import spans_of  # noqa: E402
from rewardjudge.testing import FakeJudgeServer, ScriptedModel  # noqa: E402
from scorer_document import DOCUMENT_SCORER as DOC_SCORER  # noqa: E402

REPLY = '{"reason": "answers the question", "score": 4}'


def _set(attrs, key, value):
    kv = attrs.add()
    kv.key = key
    if isinstance(value, bool):
        kv.value.bool_value = value
    elif isinstance(value, int):
        kv.value.int_value = value
    elif isinstance(value, list):
        for v in value:
            kv.value.array_value.values.add().string_value = v
    else:
        kv.value.string_value = value


def make_request(traces, *, rng=None, spans_per_trace=2, product="Widget", question="How do I reset it?"):
    """An ExportTraceServiceRequest: ``traces`` traces of GenAI chat spans
    (messages as the v1.37 JSON attributes), plus one non-GenAI span each."""
    rng = rng or random.Random(0)
    req = trace_service_pb2.ExportTraceServiceRequest()
    rs = req.resource_spans.add()
    _set(rs.resource.attributes, "service.name", "support-bot")
    ss = rs.scope_spans.add()
    ss.scope.name = "test"
    for t in range(traces):
        trace_id = rng.randbytes(16)
        root = ss.spans.add()
        root.trace_id, root.span_id, root.name = trace_id, rng.randbytes(8), "HTTP POST /chat"
        for k in range(spans_per_trace):
            s = ss.spans.add()
            s.trace_id, s.span_id, s.parent_span_id = trace_id, rng.randbytes(8), root.span_id
            s.name, s.kind = "chat mistral-small-latest", 3
            s.start_time_unix_nano, s.end_time_unix_nano = 1_700_000_000_000_000_000, 1_700_000_001_000_000_000
            _set(s.attributes, "gen_ai.operation.name", "chat")
            if product is not None:
                _set(s.attributes, "app.product", product)
            _set(s.attributes, "gen_ai.system_instructions",
                 json.dumps([{"type": "text", "content": "You are a support agent."}]))
            _set(s.attributes, "gen_ai.input.messages", json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": f"{question} ({t}.{k})"}]}]))
            _set(s.attributes, "gen_ai.output.messages", json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": "Hold the button 5 s."}],
                  "finish_reason": "stop"}]))
    return req


def otlp_json(req) -> dict:
    """OTLP/JSON as the specification writes it: ids in hex, not protobuf-JSON base64."""
    data = json_format.MessageToDict(req)
    for rs in data["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in s:
                        s[key] = base64.b64decode(s[key]).hex()
    return data


def doc_pipeline(rate=1.0, mapping=None, **kw) -> PipelineConfig:
    scorer = Scorer.from_dict(DOC_SCORER)
    jc = JudgeConfig.pin(scorer, {"product": 'attr("app.product")'} if mapping is None else mapping)
    return PipelineConfig("support-live", [jc], sampling_rate=rate, **kw)


def judge(**kw) -> ScriptedModel:
    return ScriptedModel(default=REPLY, name="mistral-small-latest", **kw)


def span_ids(spans):
    return sorted((s.trace_id, s.span_id) for s in spans)


# --------------------------------------------------------------------------
# OTLP files
# --------------------------------------------------------------------------
def test_otlp_files_json_and_protobuf_read_the_same_spans(tmp_path):
    reqs = [make_request(2, rng=random.Random(i)) for i in range(3)]
    expected = span_ids(s for r in reqs for s in spans_of(r))
    # the collector's file exporter: JSON lines; protobuf with 4-byte big-endian length prefixes
    (tmp_path / "t.jsonl").write_text("".join(json.dumps(otlp_json(r)) + "\n" for r in reqs))
    with open(tmp_path / "t.binpb", "wb") as f:
        for r in reqs:
            body = r.SerializeToString()
            f.write(len(body).to_bytes(4, "big") + body)
    (tmp_path / "one.json").write_text(json.dumps(otlp_json(reqs[0]), indent=2))   # one object, pretty
    (tmp_path / "one.pb").write_bytes(reqs[0].SerializeToString())                 # one bare message
    with gzip.open(tmp_path / "t.jsonl.gz", "wt") as f:
        f.write("".join(json.dumps(otlp_json(r)) + "\n" for r in reqs))
    assert span_ids(read_otlp_file(tmp_path / "t.jsonl")) == expected
    assert span_ids(read_otlp_file(tmp_path / "t.binpb")) == expected
    assert span_ids(read_otlp_file(tmp_path / "t.jsonl.gz")) == expected
    one = span_ids(spans_of(reqs[0]))
    assert span_ids(read_otlp_file(tmp_path / "one.json")) == one
    assert span_ids(read_otlp_file(tmp_path / "one.pb")) == one
    # without a telling name the first bytes decide (a bare message starts with byte 0x0a, '\n')
    (tmp_path / "noext").write_bytes(reqs[0].SerializeToString())
    assert span_ids(read_otlp_file(tmp_path / "noext")) == one


def test_span_values_and_thread():
    req = make_request(1)
    span = next(s for s in spans_of(req)
                if s.name.startswith("chat"))
    assert len(span.trace_id) == 32 and len(span.span_id) == 16 and len(span.parent_span_id) == 16
    assert span.get("service.name") == "support-bot"      # resource attribute as a fallback
    thread = span_thread(span)
    assert thread.turns[0] == ("system", "You are a support agent.")
    assert thread.turns[1][0] == "user" and thread.completion() == "Hold the button 5 s."
    assert thread.metadata["trace_id"] == span.trace_id and thread.metadata["app.product"] == "Widget"


def test_messages_on_the_details_event_are_read():
    req = make_request(1, spans_per_trace=1)
    s = req.resource_spans[0].scope_spans[0].spans[1]
    attrs = {kv.key: kv.value.string_value for kv in s.attributes}
    del s.attributes[:]
    _set(s.attributes, "gen_ai.operation.name", "chat")
    ev = s.events.add()
    ev.name = "gen_ai.client.inference.operation.details"
    for k in ("gen_ai.input.messages", "gen_ai.output.messages"):
        _set(ev.attributes, k, attrs[k])
    span = list(spans_of(req))[1]
    assert doc_pipeline().wants(span)
    assert span_thread(span).completion() == "Hold the button 5 s."


def test_bad_otlp_json_names_the_line(tmp_path):
    good = json.dumps(otlp_json(make_request(1)))
    (tmp_path / "t.jsonl").write_text(good + "\n" + good.replace('"traceId": "', '"traceId": "zz') + "\n")
    with pytest.raises(ConfigError, match="line 2"):
        list(read_otlp_file(tmp_path / "t.jsonl"))


# --------------------------------------------------------------------------
# the pipeline config: pinned versions, mapping
# --------------------------------------------------------------------------
def test_document_example_scorer_runs_on_spans():
    p = doc_pipeline()
    spans = list(spans_of(make_request(2)))
    model = judge()
    run = run_pipeline(p, spans, model)
    assert run.spans_read == 6 and run.spans_selected == 4 and len(run.results) == 4
    r = run.results[0]
    assert r["status"] == "scored" and r["score_value"] == 4.0 and r["explanation"] == "answers the question"
    assert r["scorer_version"] == Scorer.from_dict(DOC_SCORER).version and r["judge_model"] == "mistral-small-latest"
    assert {(x["trace_id"], x["span_id"]) for x in run.results} == set(span_ids(s for s in spans if s.name[:4] == "chat"))
    prompt = model.calls[0]["messages"][0]["content"]
    assert "Product: Widget" in prompt
    assert model.calls[0]["params"].temperature == 0 and model.calls[0]["params"].seed == 42


def test_unmapped_and_absent_variables_render_empty():
    spans = [s for s in spans_of(
        make_request(1, product=None)) if s.name.startswith("chat")]
    for mapping in ({}, {"product": 'attr("app.product")'}):
        model = judge()
        run = run_pipeline(doc_pipeline(mapping=mapping), spans, model)
        assert "Product: \n" in model.calls[0]["messages"][0]["content"] + "\n"
        assert run.results[0]["missing_variables"] == ["product"]


def test_mapping_in_the_documents_names():
    scorer = Scorer("Answer quality", {
        "model": "mistral-small-latest", "output_spec": {"type": "boolean"},
        "prompt_template": "{{ convo }}\n---\n{{ asked }}\n---\n{{ said }}\n---\n{{ transcript }}\n{{ attr('service.name') }}"})
    jc = JudgeConfig.pin(scorer, {"convo": "transcript",
                                  "asked": 'format_input_transcript("gen_ai.input.messages")',
                                  "said": "format_output_transcript('gen_ai.output.messages')"})
    assert jc.binding.mapping == {"convo": "transcript", "asked": "input_messages:gen_ai.input.messages",
                                  "said": "output_messages:gen_ai.output.messages"}
    spans = [s for s in spans_of(make_request(1))
             if s.name.startswith("chat")][:1]
    model = ScriptedModel(default='{"reason": "ok", "verdict": true}', name="mistral-small-latest")
    run = run_pipeline(PipelineConfig("p", [jc]), spans, model)
    text = model.calls[0]["messages"][0]["content"]
    convo, asked, said, transcript = text.split("\n---\n")[:4]
    assert convo.startswith("system: You are a support agent.\nuser: How do I reset it?")
    assert asked.startswith("user: How do I reset it?") and said == "assistant: Hold the button 5 s."
    assert transcript.startswith(convo) and "support-bot" in text
    assert run.results[0]["score_label"] == "true" and run.results[0]["score_value"] is None


def test_a_pipeline_pins_a_copy_of_one_version(tmp_path):
    reg = ScorerRegistry(tmp_path / "scorers")
    s = reg.create_from_dict(DOC_SCORER)
    p = PipelineConfig("live", [JudgeConfig.pin(reg.get(s.slug), {"product": 'attr("app.product")'})])
    reg.update(s.slug, config={**DOC_SCORER["config"], "prompt_template": "v2 {{ product }}"})
    assert len(reg.versions(s.slug)) == 2
    data = json.loads(json.dumps(p.to_dict()))
    assert data["type"] == "judge-v1"
    (c,) = data["pipeline_configs"]
    assert c["scorer_version"] == reg.version(s.slug, 1).id and c["scorer_version_number"] == 1
    assert c["config"]["prompt_template"] == DOC_SCORER["config"]["prompt_template"]  # the later edit stays out
    again = PipelineConfig.from_dict(data)
    assert again.pipeline_configs[0].binding.version == c["scorer_version"]
    c["config"]["prompt_template"] += " edited"
    with pytest.raises(ConfigError, match="edited"):
        PipelineConfig.from_dict(data)
    # a typo in the mapping fails when the pipeline is made, not as an empty prompt
    with pytest.raises(ConfigError, match="does not use 'prodcut'"):
        JudgeConfig.pin(reg.get(s.slug), {"prodcut": 'attr("app.product")'})
    with pytest.raises(ConfigError, match="only pipeline type"):
        PipelineConfig("x", again.pipeline_configs, type="judge-v2")


# --------------------------------------------------------------------------
# filter and sampling
# --------------------------------------------------------------------------
def test_filter():
    spans = list(spans_of(make_request(1)))
    assert [doc_pipeline().wants(s) for s in spans] == [False, True, True]
    only_other = doc_pipeline(filter={"attributes": {"service.name": "billing"}})
    assert not any(only_other.wants(s) for s in spans)
    by_name = doc_pipeline(filter={"span_name": "HTTP *", "has_messages": False})
    assert [by_name.wants(s) for s in spans] == [True, False, False]
    with pytest.raises(ConfigError, match="unknown key"):
        doc_pipeline(filter={"name": "chat"})


@pytest.mark.parametrize("change,message", [   # "pinned": changes to the pipeline config (... drops a key)
    ({"sampling_rate": "0.5"}, "pipeline.sampling_rate must be a number in [0, 1], got '0.5'"),
    ({"name": " "}, "pipeline.name must be a non-empty string (the pipeline's name), got ' '"),
    ({"pipeline_configs": []}, "pipeline.pipeline_configs must be a non-empty list"),
    ({"filter": {"span_name": ["chat *", 3]}}, "filter.span_name must be a glob or a list of globs, got ['chat *', 3]"),
    ({"filter": "chat *"}, "filter must be an object, got str"),
    ({"pinned": {"type": "judge-v2"}}, "pipeline_config.type must be 'judge-v1', got 'judge-v2'"),
    ({"pinned": {"scorer_version_number": "one"}}, "pipeline_config.scorer_version_number must be a whole number"),
    ({"pinned": {"mapping": ["product"]}}, "pipeline_config.mapping must be an object: variable -> source, got"),
    ({"pinned": {"scorer_version": ...}}, "pipeline_config.scorer_version is required"),
    ({"pinned": {"colour": "red"}}, "pipeline_config: unknown key(s) ['colour']"),
])
def test_a_pipeline_json_error_names_the_key_and_the_value(change, message):
    data = doc_pipeline().to_dict()
    pinned = {**data["pipeline_configs"][0], **change.get("pinned", {})}
    data = {**data, "pipeline_configs": [{k: v for k, v in pinned.items() if v is not ...}],
            **{k: v for k, v in change.items() if k != "pinned"}}
    with pytest.raises(ConfigError) as err:
        PipelineConfig.from_dict(data)
    assert message in str(err.value)


def test_sampling_is_decided_by_the_trace_id():
    rng = random.Random(7)
    ids = [rng.randbytes(16).hex() for _ in range(4000)]
    for rate in (0.1, 0.5):
        picked = [t for t in ids if trace_sampled(t, rate)]
        assert abs(len(picked) / len(ids) - rate) < 0.04
        assert picked == [t for t in ids if trace_sampled(t, rate)]          # the same every time
    small = {t for t in ids if trace_sampled(t, 0.1)}
    assert small <= {t for t in ids if trace_sampled(t, 0.5)}               # samples nest
    assert all(trace_sampled(t, 1.0) for t in ids) and not any(trace_sampled(t, 0.0) for t in ids)


def test_a_trace_is_judged_whole_or_not_and_the_same_on_rerun(tmp_path):
    req = make_request(40, rng=random.Random(3), spans_per_trace=3)
    spans = list(spans_of(req))
    p = doc_pipeline(rate=0.5)
    runs = [run_pipeline(p, spans, judge()) for _ in range(2)]
    per_trace: dict[str, int] = {}
    for r in runs[0].results:
        per_trace[r["trace_id"]] = per_trace.get(r["trace_id"], 0) + 1
    assert set(per_trace.values()) == {3}                                    # whole traces
    assert 8 < len(per_trace) < 32
    assert [(r["trace_id"], r["span_id"]) for r in runs[0].results] == \
        [(r["trace_id"], r["span_id"]) for r in runs[1].results]
    with pytest.raises(ConfigError, match="sampling_rate"):
        doc_pipeline(rate=1.5)


# --------------------------------------------------------------------------
# results: one per span and version, resumable, private
# --------------------------------------------------------------------------
def test_one_result_per_span_and_version_with_label_counts():
    boolean = Scorer("Resolved", {"model": "mistral-small-latest", "output_spec": {"type": "boolean"},
                                  "prompt_template": "Resolved? {{ transcript }}"})
    p = PipelineConfig("two", [doc_pipeline().pipeline_configs[0], JudgeConfig.pin(boolean)])
    spans = list(spans_of(make_request(3)))

    def reply(messages, params, schema):
        return REPLY if "Resolved?" not in messages[0]["content"] \
            else '{"reason": "yes", "verdict": true}'

    run = run_pipeline(p, spans, ScriptedModel(reply, name="mistral-small-latest"))
    assert len(run.results) == 2 * 6
    assert len({(r["span_id"], r["scorer_version"]) for r in run.results}) == 12
    tallies = run.to_dict()["scorers"]
    (num,) = [t for k, t in tallies.items() if k.startswith("Helpfulness")]
    (lab,) = [t for k, t in tallies.items() if k.startswith("Resolved")]
    assert num["mean_score"] == 4.0 and lab["labels"] == {"true": 6} and lab["label_shares"] == {"true": 1.0}


def test_results_keep_no_span_text_unless_asked(tmp_path):
    spans = list(spans_of(make_request(2)))
    run_pipeline(doc_pipeline(), spans, judge(), output_dir=tmp_path / "a")
    text = (tmp_path / "a" / "results.jsonl").read_text()
    assert "reset it" not in text and "Hold the button" not in text and "Widget" not in text
    assert "prompt" not in json.loads(text.splitlines()[0])
    run_pipeline(doc_pipeline(), spans, judge(), output_dir=tmp_path / "b", keep_prompts=True)
    first = json.loads((tmp_path / "b" / "results.jsonl").read_text().splitlines()[0])
    assert "Product: Widget" in first["prompt"]


class _Stop(Exception):
    pass


def test_resume_after_a_stop(tmp_path):
    spans = list(spans_of(make_request(10)))

    def stopping(n):
        for i, s in enumerate(spans):
            if i == n:
                raise _Stop()
            yield s

    out = tmp_path / "run"
    first = judge()
    with pytest.raises(_Stop):
        run_pipeline(doc_pipeline(), stopping(17), first, output_dir=out, batch_size=4)
    done = list(read_results(out))
    assert len(done) == 8 and len(first.calls) == 8                  # two batches of 4 finished
    # a torn last line (killed mid-write) is cut away and judged again
    with open(out / "results.jsonl", "ab") as f:
        f.write(b'{"trace_id": "ab')
    second = judge()
    run = run_pipeline(doc_pipeline(), spans, second, output_dir=out, batch_size=4)
    assert run.already_done == 8 and run.judged_now == 12 and len(second.calls) == 12
    results = list(read_results(out))
    assert len(results) == 20 and len({(r["trace_id"], r["span_id"]) for r in results}) == 20
    third = judge()
    run = run_pipeline(doc_pipeline(), spans, third, output_dir=out)
    assert run.judged_now == 0 and run.already_done == 20 and not third.calls


def test_retry_unscored(tmp_path):
    spans = list(spans_of(make_request(2)))
    out = tmp_path / "run"
    down = ScriptedModel(default=JudgeHTTPError(503, "down"), name="mistral-small-latest")
    run = run_pipeline(doc_pipeline(), spans, down, output_dir=out)
    assert run.tallies and all(t.statuses == {"unscored": 4} for t in run.tallies.values())
    assert run_pipeline(doc_pipeline(), spans, judge(), output_dir=out).judged_now == 0
    run = run_pipeline(doc_pipeline(), spans, judge(), output_dir=out, retry_unscored=True)
    assert run.judged_now == 4 and list(run.tallies.values())[0].statuses == {"scored": 4}


def test_one_run_per_output_folder(tmp_path):
    sj = SpanJudge(doc_pipeline(), judge(), output_dir=tmp_path)
    try:
        with pytest.raises(ConfigError, match="another pipeline run"):
            SpanJudge(doc_pipeline(), judge(), output_dir=tmp_path)
    finally:
        sj.close()


# --------------------------------------------------------------------------
# the OTLP/HTTP receiver, with a real client over loopback
# --------------------------------------------------------------------------
async def _wait(receiver, n, timeout=10.0):
    for _ in range(int(timeout / 0.02)):
        if receiver.judge.run.judged_now >= n and receiver.pending == 0:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"judged {receiver.judge.run.judged_now}, wanted {n}")


async def test_receiver_protobuf_json_gzip_token_and_dedupe(tmp_path):
    sj = SpanJudge(doc_pipeline(), judge(), output_dir=tmp_path / "live")
    receiver = OtlpReceiver(sj, token="s3cret", batch_window=0.01)
    url = await receiver.start("127.0.0.1", 0)
    auth = {"Authorization": "Bearer s3cret"}
    pb = make_request(2, rng=random.Random(1))
    js = make_request(2, rng=random.Random(2))
    try:
        async with aiohttp.ClientSession() as http:
            async with http.post(f"{url}/v1/traces", data=pb.SerializeToString(),
                                 headers={"Content-Type": "application/x-protobuf"}) as r:
                assert r.status == 401
            async with http.post(f"{url}/v1/traces", data=pb.SerializeToString(),
                                 headers={**auth, "Content-Type": "application/x-protobuf"}) as r:
                assert r.status == 200 and r.content_type == "application/x-protobuf"
                reply = trace_service_pb2.ExportTraceServiceResponse()
                reply.ParseFromString(await r.read())
                assert not reply.HasField("partial_success")
            async with http.post(f"{url}/v1/traces", data=gzip.compress(json.dumps(otlp_json(js)).encode()),
                                 headers={**auth, "Content-Type": "application/json",
                                          "Content-Encoding": "gzip"}) as r:
                assert r.status == 200 and await r.json() == {}
            async with http.post(f"{url}/v1/traces", data=b"x", headers={**auth, "Content-Type": "text/plain"}) as r:
                assert r.status == 415
            async with http.post(f"{url}/v1/traces", data=b"{not json",
                                 headers={**auth, "Content-Type": "application/json"}) as r:
                assert r.status == 400
            await _wait(receiver, 8)
            # an exporter retrying the same request: the spans are judged once
            async with http.post(f"{url}/v1/traces", data=pb.SerializeToString(),
                                 headers={**auth, "Content-Type": "application/x-protobuf"}) as r:
                assert r.status == 200
            await asyncio.sleep(0.2)
            async with http.get(f"{url}/health") as r:
                health = await r.json()
            assert health["status"] == "ok" and health["judged_now"] == 8 and health["already_done"] == 4
    finally:
        assert await receiver.stop(5)
    results = list(read_results(tmp_path / "live"))
    want = span_ids(s for r in (pb, js) for s in spans_of(r)
                    if s.name.startswith("chat"))
    assert sorted((r["trace_id"], r["span_id"]) for r in results) == want


async def test_receiver_is_bounded_and_drains_on_stop(tmp_path):
    slow = judge(delay=0.05)
    sj = SpanJudge(doc_pipeline(), slow, output_dir=tmp_path / "live")
    receiver = OtlpReceiver(sj, max_pending=5, batch_size=2, batch_window=0.01, retry_after=1)
    url = await receiver.start()
    assert url.startswith("http://127.0.0.1:")
    headers = {"Content-Type": "application/x-protobuf"}
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{url}/v1/traces", data=make_request(2).SerializeToString(), headers=headers) as r:
            assert r.status == 200                                  # 4 spans queued
        async with http.post(f"{url}/v1/traces", data=make_request(1, rng=random.Random(9)).SerializeToString(),
                             headers=headers) as r:
            assert r.status == 503 and r.headers["Retry-After"] == "1"   # 4 + 2 > 5
        assert await receiver.stop(10)
    assert len(list(read_results(tmp_path / "live"))) == 4


# --------------------------------------------------------------------------
# the command
# --------------------------------------------------------------------------
def _main(argv):
    from rewardjudge.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    return exc.value.code


def test_command_pin_then_run_against_a_judge_server(tmp_path, capsys):
    reg = tmp_path / "scorers"
    s = ScorerRegistry(reg).create_from_dict(DOC_SCORER)
    live = tmp_path / "live.json"
    assert _main(["pipeline", "pin", "--registry", str(reg), "--scorer", f"{s.slug}@1", "--name", "support-live",
                  "--map", 'product=attr("app.product")', "--sampling-rate", "1", "-o", str(live)]) == 0
    data = json.loads(live.read_text())
    assert data["pipeline_configs"][0]["scorer_version"] == s.version
    traces = tmp_path / "traces.jsonl"
    traces.write_text(json.dumps(otlp_json(make_request(3))) + "\n" + json.dumps(otlp_json(make_request(
        1, rng=random.Random(5)))) + "\n")

    with FakeJudgeServer(lambda req: REPLY, model="mistral-small-latest") as server:
        argv = ["pipeline", "run", str(live), str(traces), "--judge", server.url, "--output", str(tmp_path / "out")]
        assert _main(argv) == 0
        assert len(list(read_results(tmp_path / "out"))) == 8
        asked = server.request_count
        assert _main(argv) == 0 and server.request_count == asked       # resumed: nothing to judge
    assert "already done: 8" in capsys.readouterr().out
    # a judge server that lacks the pinned model is a usage error before any span
    with FakeJudgeServer(lambda req: REPLY, model="other") as server:
        assert _main(["pipeline", "run", str(live), str(traces), "--judge", server.url,
                      "--output", str(tmp_path / "o2")]) == 2


@pytest.mark.parametrize("line", [
    "pipeline run live.json traces.jsonl --judge http://127.0.0.1:8000/v1 --output runs/live --keep-prompts",
    "pipeline receive live.json --judge http://127.0.0.1:8000/v1 --output runs/live --port 4318 --token t",
    "pipeline pin --scorer helpfulness-1a2b3c4d --map product=x --name n -o live.json",
])
def test_command_lines_parse(line):
    build_parser().parse_args(line.split())


async def test_receiver_refuses_broken_and_oversized_bodies():
    receiver = OtlpReceiver(SpanJudge(doc_pipeline(), judge()), max_body=2000)
    url = await receiver.start()
    headers = {"Content-Type": "application/x-protobuf"}
    try:
        async with aiohttp.ClientSession() as http:   # a broken gzip body closes its connection
            async with http.post(f"{url}/v1/traces", data=b"\x1f\x8bgarbage",
                                 headers={**headers, "Content-Encoding": "gzip"}) as r:
                assert r.status == 400
        async with aiohttp.ClientSession() as http:
            async with http.post(f"{url}/v1/traces", data=make_request(20).SerializeToString(), headers=headers) as r:
                assert r.status == 413
            async with http.post(f"{url}/v1/traces", data=b"\xff\xff\xff", headers=headers) as r:
                assert r.status == 400
    finally:
        await receiver.stop(2)


async def test_receiver_answers_408_to_a_body_that_does_not_arrive():
    receiver = OtlpReceiver(SpanJudge(doc_pipeline(), judge()), body_timeout=0.3)
    url = await receiver.start()
    host, port = url.rsplit("/", 1)[1].split(":")
    try:
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
                     b"Content-Length: 1000\r\n\r\n\x0a")   # one byte of a thousand, then nothing
        reply = await asyncio.wait_for(reader.read(65536), 10)
        writer.close()
    finally:
        await receiver.stop(2)
    assert reply.startswith(b"HTTP/1.1 408") and b"did not arrive within 0.3 s" in reply
    assert receiver.metrics.requests[("/v1/traces", 408)] == 1
