"""OTLP trace data (protobuf, OTLP/JSON, the collector's files) in, ``Span`` values out, a GenAI span as a thread."""

from __future__ import annotations

import base64
import contextlib
import gzip
import itertools
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from ..errors import ConfigError
from ..scorers._builtins import format_messages
from ..thread import StringThread, role_of
from . import SEMCONV_VERSION

__all__ = ["SEMCONV_VERSION", "Span", "decode_request", "read_otlp_file", "request_from_json", "span_thread",
           "spans_of"]

INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_MESSAGE_KEYS = (SYSTEM_INSTRUCTIONS, INPUT_MESSAGES, OUTPUT_MESSAGES)
_HEX = re.compile(r"^[0-9a-fA-F]*$")
MAX_MESSAGE_BYTES = 64 << 20


def _pb():
    try:
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
    except ImportError:  # pragma: no cover - the extra is missing
        raise ConfigError("reading OpenTelemetry spans needs opentelemetry-proto: "
                          "pip install 'rewardjudge[pipeline]'") from None
    return trace_service_pb2


@dataclass
class Span:
    """One span as plain data: ids as lowercase hex, attributes as Python values (bytes as base64)."""

    trace_id: str
    span_id: str
    name: str
    attributes: dict[str, Any] = field(default_factory=dict)
    resource: dict[str, Any] = field(default_factory=dict)
    parent_span_id: str = ""
    scope: str = ""
    kind: int = 0
    start_ns: int = 0
    end_ns: int = 0
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def get(self, key: str, default: Any = None) -> Any:
        """An attribute of the span, else of its resource (``service.name``)."""
        return self.attributes[key] if key in self.attributes else self.resource.get(key, default)


def _any_value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which is None:
        return None
    if which == "array_value":
        return [_any_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _any_value(kv.value) for kv in v.kvlist_value.values}
    if which == "bytes_value":
        return base64.b64encode(v.bytes_value).decode()
    return getattr(v, which)


def _attributes(kvs: Any) -> dict[str, Any]:
    return {kv.key: _any_value(kv.value) for kv in kvs}


def spans_of(request: Any) -> Iterator[Span]:
    """Every span of an ``ExportTraceServiceRequest`` (or ``TracesData``)."""
    for rs in request.resource_spans:
        resource = _attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                yield Span(trace_id=s.trace_id.hex(), span_id=s.span_id.hex(), name=s.name,
                           attributes=_attributes(s.attributes), resource=resource,
                           parent_span_id=s.parent_span_id.hex(), scope=ss.scope.name, kind=int(s.kind),
                           start_ns=int(s.start_time_unix_nano), end_ns=int(s.end_time_unix_nano),
                           events=[(e.name, _attributes(e.attributes)) for e in s.events if e.name == DETAILS_EVENT])


def _fix_ids(data: Any) -> Any:
    """Hex ids -> base64 (protobuf's JSON mapping) in every span and link."""
    def ids(obj: dict) -> None:
        for key, n in (("traceId", 16), ("trace_id", 16), ("spanId", 8), ("span_id", 8),
                       ("parentSpanId", 8), ("parent_span_id", 8)):
            value = obj.get(key, "")
            if isinstance(value, str) and len(value) == 2 * n and _HEX.match(value):
                obj[key] = base64.b64encode(bytes.fromhex(value)).decode()
            elif value != "":
                raise ConfigError(f"OTLP/JSON id {str(value)[:40]!r} is not {2 * n} hex digits")

    for rs in data.get("resourceSpans", data.get("resource_spans", [])) or []:
        for ss in rs.get("scopeSpans", rs.get("scope_spans", [])) or []:
            for s in ss.get("spans", []) or []:
                ids(s)
                for link in s.get("links", []) or []:
                    ids(link)
    return data


def request_from_json(data: Any) -> Any:
    """An ``ExportTraceServiceRequest`` from OTLP/JSON (text, bytes or a parsed dict)."""
    from google.protobuf import json_format
    if isinstance(data, (bytes, bytearray, str)):
        try:
            data = json.loads(data)
        except (ValueError, RecursionError) as exc:   # nested too deep: unreadable, not a crash
            raise ConfigError(f"OTLP/JSON body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"OTLP/JSON must be an object with resourceSpans, got {type(data).__name__}")
    message = _pb().ExportTraceServiceRequest()
    try:
        json_format.ParseDict(_fix_ids(data), message, ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        raise ConfigError(f"OTLP/JSON does not match the trace schema: {exc}") from None
    return message


def decode_request(body: bytes, content_type: str = "application/x-protobuf") -> Any:
    """An ``ExportTraceServiceRequest`` from an OTLP/HTTP body (protobuf or JSON)."""
    from google.protobuf.message import DecodeError
    if "json" in content_type:
        return request_from_json(body)
    message = _pb().ExportTraceServiceRequest()
    try:
        message.ParseFromString(body)
    except DecodeError as exc:
        raise ConfigError(f"OTLP protobuf body does not decode: {exc}") from None
    return message


_JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
_PROTO_SUFFIXES = (".pb", ".binpb", ".proto", ".protobuf", ".otlp")


def _sniff(path: str, head: bytes) -> str:
    """``json``, ``prefixed`` or ``protobuf`` from the name, else the first bytes."""
    name = path[:-3] if path.endswith(".gz") else path
    if name.endswith(_JSON_SUFFIXES):
        return "json"
    if head[:1] == b"\x00":
        return "prefixed"
    if name.endswith(_PROTO_SUFFIXES):
        return "protobuf"
    text = head.lstrip(b" \t\r\n")
    try:
        head.decode("utf-8")
        utf8 = True
    except UnicodeDecodeError as exc:  # a character cut by the window is still text
        utf8 = exc.start >= len(head) - 3
    return "json" if utf8 and text[:1] in (b"{", b"[") else "protobuf"


def read_otlp_file(path: str | os.PathLike, format: str | None = None) -> Iterator[Span]:
    """The spans of an OTLP file, a message at a time; ``format``: "json", "protobuf" or None (sniffed)."""
    path = os.fspath(path)
    if format not in (None, "json", "protobuf"):
        raise ConfigError(f"format must be 'json' or 'protobuf', got {format!r}")
    with open(path, "rb") as f:
        gz = f.read(2) == b"\x1f\x8b"
    with gzip.open(path, "rb") if gz else open(path, "rb") as f:
        head = f.read(256)
        f.seek(0)
        kind = _sniff(path, head) if format is None else format
        if kind == "protobuf" and head[:1] == b"\x00":
            kind = "prefixed"
        if kind == "json":
            yield from _json_file(f, path)
        elif kind == "prefixed":
            yield from _prefixed_file(f, path)
        elif head:
            body = f.read(MAX_MESSAGE_BYTES + 1)
            if len(body) > MAX_MESSAGE_BYTES:
                raise ConfigError(f"{path}: a bare protobuf message over {MAX_MESSAGE_BYTES} bytes; write "
                                  f"length-prefixed messages (the collector's file exporter does)")
            yield from spans_of(decode_request(body))


def _json_file(f: Any, path: str) -> Iterator[Span]:
    first = f.readline()
    rest = f.readline()
    if not rest.strip() or not first.strip().endswith(b"}"):  # one object: the whole file
        f.seek(0)
        try:
            data = json.loads(f.read())
        except (ValueError, RecursionError) as exc:
            raise ConfigError(f"{path} is not OTLP/JSON (one object, or one object per line): {exc}") from None
        for item in data if isinstance(data, list) else [data]:
            yield from spans_of(request_from_json(item))
        return
    for n, line in enumerate(itertools.chain([first, rest], f), 1):
        if line.strip():
            try:
                request = request_from_json(line)
            except ConfigError as exc:
                raise ConfigError(f"{path} line {n}: {exc}") from None
            yield from spans_of(request)


def _prefixed_file(f: Any, path: str) -> Iterator[Span]:
    while True:
        prefix = f.read(4)
        if not prefix:
            return
        size = int.from_bytes(prefix, "big")
        if len(prefix) < 4 or size > MAX_MESSAGE_BYTES:
            raise ConfigError(f"{path}: a length prefix is torn or too large ({size} bytes)")
        body = f.read(size)
        if len(body) < size:
            raise ConfigError(f"{path}: the last message is cut short ({len(body)} of {size} bytes)")
        yield from spans_of(decode_request(body))


def _messages(value: Any, default: str) -> list[tuple[str, str]]:
    """The turns of a message attribute (an unknown role reads as ``default``)."""
    return [(role_of(r) or default, t) for r, t in format_messages(value, default)]


def _system(value: Any) -> list[tuple[str, str]]:
    """``gen_ai.system_instructions``: a list of parts (or text): one system turn."""
    if value is None:
        return []
    if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
        with contextlib.suppress(ValueError):
            value = json.loads(value)
    if isinstance(value, list) and all(isinstance(p, Mapping) and "role" not in p for p in value):
        text = "\n".join(t for _, t in format_messages({"role": "system", "parts": value}, "system"))
        return [("system", text)] if text else []
    return [("system", t) for _, t in format_messages(value, "system")]


def message_attributes(span: Span) -> dict[str, Any]:
    """The span's message attributes, from the span or its details event."""
    found: dict[str, Any] = {}
    for attrs in (span.attributes, *(a for _, a in span.events)):
        found.update({k: attrs[k] for k in _MESSAGE_KEYS if k in attrs and k not in found})
    return found


def span_thread(span: Span) -> StringThread:
    """The conversation a GenAI span records as a thread; metadata: its attributes, ids and name."""
    messages = message_attributes(span)
    try:
        turns = (_system(messages.get(SYSTEM_INSTRUCTIONS)) + _messages(messages.get(INPUT_MESSAGES), "user")
                 + _messages(messages.get(OUTPUT_MESSAGES), "assistant"))
    except RecursionError:   # one span's messages (a model's text read as JSON) must not sink its batch
        raise ConfigError("its messages nest too deep to read") from None
    metadata = {**span.resource, **span.attributes, **messages, "trace_id": span.trace_id,
                "span_id": span.span_id, "span_name": span.name}
    return StringThread(turns, metadata)

