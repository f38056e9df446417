"""Structured output: how a JSON schema is asked for, whether an error refuses that form, and what one
model's server refused (docs/judges.md)."""

from __future__ import annotations

import copy
import json
import logging
import re
import threading
from typing import Any

log = logging.getLogger("rewardjudge")

#: strongest first: each falls back to the next
STYLES = ("json_schema", "json_object", "none")
RANK = {s: i for i, s in enumerate(STYLES)}


class SchemaRejected(Exception):
    """The server refused the request's response_format, not the request."""


_RF_FIELD = re.compile(r"(response_format|json_schema|guided_(json|grammar|decoding)|"
                       r"structured_outputs?|grammar)\b", re.I)
_RF_TEXT = re.compile(r"response[_ ]?format|json[_ ]schema|structured[_ ]outputs?|"
                      r"guided[_ ](json|grammar|decoding)|grammar", re.I)
#: keys of an error body that say what went wrong; others (input, body...) may echo the request
_MESSAGE_KEYS = frozenset({"error", "errors", "message", "msg", "detail", "details",
                           "description", "reason", "title"})
_FIELD_KEYS = frozenset({"param", "loc", "field", "path", "parameter"})
#: a field locator in a message's text (llama-cpp-python writes pydantic's error dicts there)
_TEXT_LOCATOR = re.compile(r"""['"](?:loc|param|field)['"]\s*:\s*"""
                           r"""(\([^)]*\)|\[[^\]]*\]|'[^']*'|"[^"]*")""")


def _strip_echoes(text: str) -> str:
    """``text`` without its bracketed spans (where a message quotes the request: ``input_value={...}``)."""
    out: list[str] = []
    depth = start = 0
    for i, c in enumerate(text):
        if c in "{[":
            if depth == 0:
                out.append(text[start:i])
            depth += 1
        elif c in "}]" and depth:
            depth -= 1
            if depth == 0:
                start = i + 1
    if depth == 0:
        out.append(text[start:])
    return " ".join(out)


def _error_parts(obj: Any, texts: list[str], fields: list[str], depth: int = 0) -> None:
    if depth > 8:
        return
    if isinstance(obj, str):
        texts.append(obj)
    elif isinstance(obj, list):
        for item in obj[:50]:
            _error_parts(item, texts, fields, depth + 1)
    elif isinstance(obj, dict):
        for key, value in list(obj.items())[:50]:
            k = str(key).lower()
            if k in _FIELD_KEYS:
                items = value if isinstance(value, list) else [value]
                fields.extend(str(v) for v in items[:20] if isinstance(v, (str, int)))
            elif k in _MESSAGE_KEYS:
                _error_parts(value, texts, fields, depth + 1)


def refuses_response_format(status: int, body: str) -> bool:
    """True when an error reply (400, 422, 500, 501) names the structured-output field in a field
    locator (``param``, ``loc``) or in its message outside any quoted copy of the request.

    >>> refuses_response_format(500, '{"error": "response_format json_schema not supported"}')
    True
    >>> refuses_response_format(422, '{"detail": [{"loc": ["body", "max_tokens"], "msg": "bad",'
    ...                         ' "input": {"response_format": {"type": "json_schema"}}}]}')
    False
    """
    if status not in (400, 422, 500, 501):
        return False
    texts: list[str] = []
    fields: list[str] = []
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        texts.append(body)
    else:
        _error_parts(data, texts, fields)
    for text in texts:
        for locator in _TEXT_LOCATOR.findall(text[:20000]):
            fields.extend(locator.strip("()[]").split(","))
    if any(_RF_FIELD.match(f.strip(" '\"")) for f in fields):
        return True
    return any(_RF_TEXT.search(_strip_echoes(t)) for t in texts)


class StyleLearner:
    """``ceiling``: the strongest style ``url`` is not known to refuse; a refusal lowers it one style, and
    every ``reprobe_after`` requests below the style asked for one tries it again."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.ceiling = STYLES[0]
        self._since = 0          # requests sent below the requested style since the last probe
        self._probing = False    # a request is trying the stronger style again
        self._logged: set[tuple[str, str]] = set()

    def current(self, requested: str) -> str:
        return requested if RANK[requested] >= RANK[self.ceiling] else self.ceiling

    def choose(self, requested: str, reprobe_after: int | None) -> tuple[str, bool]:
        """The style for the next request, and whether it is a probe."""
        if RANK[requested] >= RANK[self.ceiling]:
            return requested, False
        with self._lock:
            if reprobe_after and self._since >= reprobe_after and not self._probing:
                self._probing, self._since = True, 0
                return requested, True
            self._since += 1
            return self.ceiling, False

    def refused(self, style: str, detail: str, reprobe_after: int | None) -> None:
        weaker = STYLES[RANK[style] + 1]
        with self._lock:
            self._probing = False
            if RANK[weaker] > RANK[self.ceiling]:
                self.ceiling, self._since = weaker, 0
            first = (style, weaker) not in self._logged
            self._logged.add((style, weaker))
        if first:
            again = f"tried again after {reprobe_after} requests" if reprobe_after else "not retried"
            log.warning("judge server %s refused response_format %r (%s); sending %r to it from "
                        "now on (%s; OpenAIModel.reset_structured_output() forgets this)", self.url,
                        style, " ".join(detail.split())[:200], weaker, again)

    def probe_ended(self, style: str, accepted: bool) -> None:
        with self._lock:
            if self.ceiling == STYLES[0]:  # nothing learned (or forgotten meanwhile)
                return
            self._probing = False
            if not accepted:
                return
            if RANK[style] == 0:
                self.reset()
            elif RANK[style] < RANK[self.ceiling]:
                self.ceiling = style
        log.warning("judge server %s accepts response_format %r again", self.url, style)

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url}   # a copy in another process learns afresh

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"])


# (id(schema), style) -> (schema, a deep copy of it, its response_format as JSON)
_RF_JSON: "dict[tuple[int, str], tuple[Any, Any, bytes | None]]" = {}
_RF_JSON_SIZE = 256


def response_format_json(schema: dict[str, Any], style: str) -> bytes | None:
    """The ``response_format`` field for ``schema`` in ``style`` as JSON (None for ``"none"``), remembered
    while the schema is the same object, unchanged (encoding it costs half a request's body)."""
    key = (id(schema), style)
    hit = _RF_JSON.get(key)
    if hit is not None and hit[0] is schema and hit[1] == schema:
        return hit[2]
    if style == "json_schema":
        text = json.dumps({"type": "json_schema", "json_schema": {
            "name": str(schema.get("title") or "reply"), "schema": schema, "strict": True}})
    else:
        text = json.dumps({"type": "json_object", "schema": schema}) if style == "json_object" else None
    if len(_RF_JSON) >= _RF_JSON_SIZE:
        _RF_JSON.clear()
    _RF_JSON[key] = (schema, copy.deepcopy(schema), None if text is None else text.encode())
    return _RF_JSON[key][2]
