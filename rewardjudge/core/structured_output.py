"""Parse text into pydantic models, and describe a model's schema for a prompt.

``pydantic_parse`` is lenient about *where* the JSON object sits (a markdown
fence, prose around it) and strict about *what* it holds: the object must
validate against the model, extra keys included if the model forbids them.
"""

from __future__ import annotations

import json
import weakref
from typing import Any, Callable, Hashable, TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

__all__ = ["OutputParserException", "find_json_objects", "pydantic_parse", "render_schema",
           "unanimous_verdict"]


class OutputParserException(ValueError):
    """Text could not be parsed into the expected model.

    ``reason`` says what failed ("no JSON object found", "invalid JSON", or the
    schema errors), ``text`` is the input (truncated in the message).
    """

    def __init__(self, reason: str, text: str = "", errors: list[dict[str, Any]] | None = None):
        self.reason = reason
        self.text = text
        self.errors = errors or []
        snippet = text if len(text) <= 200 else text[:200] + "..."
        super().__init__(f"{reason}; input: {snippet!r}")


def find_json_objects(text: str) -> list[str]:
    """Every balanced top-level ``{...}`` span in ``text``, in order.

    Braces inside JSON strings are skipped, so ``{"a": "}"}`` is one span.
    """
    spans: list[str] = []
    depth = 0
    start = -1
    in_str = False
    escape = False
    for i, ch in enumerate(text):
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and depth > 0:
            in_str = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start:i + 1])
    return spans


def _format_errors(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(root)"
        parts.append(f"{loc}: {err.get('msg')}")
    return "; ".join(parts)


def pydantic_parse(text: str, model: type[T]) -> T:
    """Parse ``text`` into ``model``.

    Tries the whole text as JSON first, then each balanced JSON object found
    in it (inside a ```json fence or prose), first to last; the first object
    that validates wins. Raises ``OutputParserException`` saying why when none
    does: no object, invalid JSON, or the schema errors of the last candidate.

    >>> from pydantic import BaseModel
    >>> class A(BaseModel):
    ...     x: int
    >>> pydantic_parse('Sure! ```json\\n{"x": 3}\\n```', A).x
    3
    """
    if not isinstance(text, str):
        raise OutputParserException(f"expected a str, got {type(text).__name__}", repr(text))
    stripped = text.strip()
    candidates: list[str] = []
    if stripped.startswith("{") and stripped.endswith("}"):
        candidates.append(stripped)
    for span in find_json_objects(text):
        if span not in candidates:
            candidates.append(span)
    if not candidates:
        raise OutputParserException("no JSON object found", text)
    last_reason = ""
    last_errors: list[dict[str, Any]] = []
    for cand in candidates:
        try:
            data = json.loads(cand)
        except json.JSONDecodeError as exc:
            last_reason = f"invalid JSON: {exc.msg} at position {exc.pos}"
            continue
        if not isinstance(data, dict):
            last_reason = "JSON value is not an object"
            continue
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            last_reason = f"does not match {model.__name__}: {_format_errors(exc)}"
            last_errors = exc.errors(include_url=False)
    raise OutputParserException(last_reason, text, last_errors)


def render_schema(model: type[BaseModel], *, with_field_descriptions: bool = True) -> str:
    """A compact, prompt-ready description of ``model``'s JSON shape.

    Renders one line per field with its type, allowed values and description,
    wrapped in braces, e.g.::

        {
          "answer": string,  // The model's answer
          "confidence": "high" | "medium" | "low"
        }
    """
    # Cached per class: graders render it into every prompt, and building a
    # JSON schema costs ~100 us; weak keys let dynamic models be collected.
    per_model = _SCHEMA_TEXT.get(model)
    if per_model is None:
        per_model = _SCHEMA_TEXT.setdefault(model, {})
    text = per_model.get(with_field_descriptions)
    if text is None:
        schema = model.model_json_schema()
        defs = schema.get("$defs", {})
        text = _render_object(schema, defs, 0, with_field_descriptions)
        per_model[with_field_descriptions] = text
    return text


_SCHEMA_TEXT: "weakref.WeakKeyDictionary[type, dict[bool, str]]" = weakref.WeakKeyDictionary()


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref and ref.startswith("#/$defs/"):
        return defs.get(ref.split("/")[-1], node)
    return node


def _render_type(node: dict[str, Any], defs: dict[str, Any], indent: int, desc: bool) -> str:
    node = _resolve(node, defs)
    if "enum" in node:
        return " | ".join(json.dumps(v) for v in node["enum"])
    if "const" in node:
        return json.dumps(node["const"])
    for key in ("anyOf", "oneOf"):
        if key in node:
            return " | ".join(_render_type(n, defs, indent, desc) for n in node[key])
    t = node.get("type")
    if t == "object" and "properties" in node:
        return _render_object(node, defs, indent, desc)
    if t == "array":
        return f"[{_render_type(node.get('items', {}), defs, indent, desc)}, ...]"
    if t == "integer":
        bounds = []
        if "minimum" in node:
            bounds.append(f">= {node['minimum']}")
        if "maximum" in node:
            bounds.append(f"<= {node['maximum']}")
        return "integer" + (f" ({', '.join(bounds)})" if bounds else "")
    if t == "number":
        return "number"
    if t == "null":
        return "null"
    if t == "boolean":
        return "boolean"
    if t == "string":
        return "string"
    return "any"


def _render_object(node: dict[str, Any], defs: dict[str, Any], indent: int, desc: bool) -> str:
    node = _resolve(node, defs)
    props: dict[str, Any] = node.get("properties", {})
    required = set(node.get("required", []))
    pad = "  " * (indent + 1)
    lines = ["{"]
    items = list(props.items())
    for i, (name, sub) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        line = f"{pad}{json.dumps(name)}: {_render_type(sub, defs, indent + 1, desc)}{comma}"
        notes = []
        if name not in required:
            notes.append("optional")
        description = _resolve(sub, defs).get("description") or sub.get("description")
        if desc and description:
            notes.append(description)
        if notes:
            line += f"  // {'; '.join(notes)}"
        lines.append(line)
    lines.append("  " * indent + "}")
    return "\n".join(lines)


V = TypeVar("V")


def unanimous_verdict(text: str, check: Callable[[dict[str, Any]], V],
                      key: Callable[[V], Hashable]) -> V:
    """Read a judge's verdict from ``text``, refusing ambiguity.

    Every JSON object in ``text`` is tried with ``check`` (which returns a
    verdict or raises ``ValueError`` / pydantic's ``ValidationError``). A judge
    reply may echo the graded text, forged verdicts included, so the verdict
    is accepted only when every object that passes ``check`` agrees on
    ``key(verdict)``; the last one is returned. Otherwise
    ``OutputParserException`` says why (no object, invalid JSON, the last
    check failure, or "ambiguous reply").
    """
    if not isinstance(text, str):
        raise OutputParserException("judge reply is not text", repr(text))
    stripped = text.strip()
    spans = find_json_objects(text)
    if stripped.startswith("{") and stripped.endswith("}") and stripped not in spans:
        spans.insert(0, stripped)
    if not spans:
        why = ("no complete JSON object (a truncated reply? raise max_tokens)" if "{" in text
               else "no JSON object found")
        raise OutputParserException(why, text)
    found: list[V] = []
    problem = ""
    for span in spans:
        try:
            data = json.loads(span)
        except ValueError as exc:
            problem = f"invalid JSON: {exc}"
            continue
        if not isinstance(data, dict):
            problem = "JSON value is not an object"
            continue
        try:
            found.append(check(data))
        except ValidationError as exc:
            problem = _format_errors(exc)
        except ValueError as exc:
            problem = str(exc)
    if not found:
        raise OutputParserException(problem, text)
    if len({key(v) for v in found}) > 1:
        raise OutputParserException(f"ambiguous reply: {len(found)} verdicts that disagree", text)
    return found[-1]
