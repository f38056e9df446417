"""The seal: a keyed hash of the whole request that the judge writes on its verdict, which
the policy cannot write (the protocol: docs/sealed-verdicts.md); the request side (key, seal,
instructions, schema) and the reader of sealed verdicts, and the opt-in unsealed reader."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import secrets
from json.decoder import scanstring
from typing import Any, Callable, Mapping, Sequence

from ..errors import ConfigError
from ._decision import Decision, NoVerdict, Verdict, last_decides
from ._forms import END_TOKENS, inside_copy, policy_copies
from ._own import (EDGE, EMPHASIS, LINE_END, PICTOGRAPHS, ZERO_WIDTH, as_seal, folded, json_string_rest, line_stop,
                   pasted, read_noted, relaxed_object, seal_after, sealed_row, unclosed, unstyled, unwrap,
                   value_start, without_closers)
from ._scan import SURROGATE_ESCAPE, Nested, lone_surrogates_out
from ._scan import decode_object as _decode
from ._text import letters

__all__ = ["SEAL_FIELDS", "Sealer", "blank_drafts", "json_instruction", "label_instruction", "read_sealed",
           "read_unsealed", "seal_messages", "sealed_schema", "value_offset"]

#: the fields of a JSON verdict that carry the seal, its first and its last (a user output model may not use them):
#: a policy's text, quoted by a judge that leaves its quotes unescaped, can neither open a sealed object nor close one
SEAL_FIELD, SEAL_END_FIELD = SEAL_FIELDS = ("seal", "seal_end")
#: hex digits of a seal: 64 bits
SEAL_HEX = 16
#: environment variable holding a seal key shared by processes (hex or text)
SEAL_KEY_ENV = "REWARDJUDGE_SEAL_KEY"

_PROCESS_KEY = secrets.token_bytes(32)


def _key_bytes(key: "bytes | str | None") -> bytes:
    if key is None:
        env = os.environ.get(SEAL_KEY_ENV)
        return env.encode("utf-8") if env else _PROCESS_KEY
    raw = key.encode("utf-8") if isinstance(key, str) else key
    if not isinstance(raw, bytes):
        raise ConfigError(f"seal_key must be bytes or str, got {type(key).__name__}")
    if len(raw) < 16:
        raise ConfigError(f"seal_key must hold at least 16 bytes, got {len(raw)}")
    return raw


#: SHA-256's block, and HMAC's inner and outer pads (each key byte XOR 0x36, 0x5C)
_BLOCK = 64
_IPAD, _OPAD = bytes(b ^ 0x36 for b in range(256)), bytes(b ^ 0x5C for b in range(256))
#: a first message at least this long has its hash state remembered (``Sealer.value``)
_PREFIX_MIN = 256
#: first messages remembered per key
_PREFIXES = 16


def _frame(m: Mapping[str, Any]) -> bytes:
    """One message as the seal hashes it: its length, its kind, its role and content."""
    content = m.get("content")
    rest = {} if len(m) == 2 and "role" in m and "content" in m else \
        {k: v for k, v in m.items() if k not in ("role", "content")}
    if isinstance(content, str) and not rest:
        part, tag = content, b"s"
    else:
        part, tag = json.dumps([content, rest], ensure_ascii=False, sort_keys=True,
                               separators=(",", ":"), default=str), b"j"
    data = f"{m.get('role')}\x00{part}".encode("utf-8", "surrogatepass")
    return len(data).to_bytes(8, "big") + tag + data


class Sealer:
    """The seal of a request: 64 bits of HMAC-SHA256 under ``key`` (16 bytes or
    more; None: ``REWARDJUDGE_SEAL_KEY`` or a random key per process) over every
    message. A set key makes requests reproducible; keep it from the policy.

    >>> seal = Sealer(b"k" * 32).value([{"role": "user", "content": "Is 2+2=4?"}])
    >>> read_sealed(f"Yes.\\nVERDICT {seal}: PASS", seal, labels=("PASS", "FAIL")).value
    'PASS'
    """

    def __init__(self, key: "bytes | str | None" = None):
        self._key = _key_bytes(key)
        # HMAC (RFC 2104) over hashlib's own states: the key's padded blocks hashed once, not
        # per request, and no hmac.HMAC object to copy for each seal
        block = (hashlib.sha256(self._key).digest() if len(self._key) > _BLOCK else self._key).ljust(_BLOCK, b"\0")
        self._inner = hashlib.sha256(block.translate(_IPAD))
        self._outer = hashlib.sha256(block.translate(_OPAD))
        #: the inner hash state after a long first message (a grader's system prompt), by message
        self._prefixes: dict[tuple[str, str], Any] = {}

    def key_hex(self) -> str:
        """The key, kept beside an evaluation's journal (a secret: keep it from the policy)."""
        return self._key.hex()

    def value(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """The seal of ``messages``: 16 hex digits, the same for the same messages and key."""
        head = messages[0] if len(messages) > 1 else {}
        content = head.get("content")
        if type(content) is str and len(head) == 2 and len(content) >= _PREFIX_MIN \
                and type(head.get("role")) is str:
            inner = self._prefixes.get((head["role"], content))
            if inner is None:
                if len(self._prefixes) >= _PREFIXES:
                    self._prefixes.clear()
                inner = self._inner.copy()
                inner.update(_frame(head))   # whole before it is shared: another thread may copy it
                self._prefixes[(head["role"], content)] = inner
            rest = messages[1:]
        else:
            inner, rest = self._inner, messages
        inner = inner.copy()
        inner.update(b"".join([_frame(m) for m in rest]))
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.hexdigest()[:SEAL_HEX]

    def __getstate__(self) -> dict[str, Any]:   # picklable (trainers ship reward functions)
        return {"_key": self._key}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["_key"])  # type: ignore[misc]


# the request: the seal instruction, last
def seal_messages(messages: Sequence[Mapping[str, Any]], instruction: str) -> list[dict[str, Any]]:
    """``messages`` with ``instruction`` appended to the last one (shared prefixes
    stay intact for prefix caches), or as a new user message after a non-user one."""
    out = [dict(m) for m in messages]
    content = out[-1].get("content") if out and out[-1].get("role") == "user" else None
    if isinstance(content, str):
        out[-1]["content"] = content + instruction
    elif isinstance(content, list):
        out[-1]["content"] = [*content, {"type": "text", "text": instruction}]
    else:
        out.append({"role": "user", "content": instruction.lstrip()})
    return out


#: how every seal instruction starts (``testing.without_seal`` cuts a prompt there)
SEAL_LEAD = "\n\nEnd your reply with your verdict"


def label_instruction(seal: str, choices: str, placeholder: str) -> str:
    """The seal instruction of a verdict on a line: ``choices`` after the colon, shown as
    ``placeholder`` (``<PASS or FAIL>``) so an echoed prompt is no verdict."""
    return (f"{SEAL_LEAD} on a line of its own: the word VERDICT, the code {seal}, a colon, then "
            f"{choices}, like this:\nVERDICT {seal}: {placeholder}\n"
            f"Only a verdict on that line with that code is read.")


def json_instruction(seal: str, fields: str = "") -> str:
    """The seal instruction of a JSON verdict (``fields``: a reminder of its fields)."""
    shape = f" with the fields {fields}" if fields else ""
    return (f"{SEAL_LEAD} as one JSON object{shape}. Make its first field \"{SEAL_FIELD}\" and "
            f"its last field \"{SEAL_END_FIELD}\", both with the value \"{seal}\": only a verdict "
            f"object that opens and closes with this seal is read.")


#: the seal field in a wire schema: the same for every request (a per-request ``const`` is
#: 70-230x slower on servers caching a grammar per schema); the reader checks the value
SEAL_SCHEMA = {"type": "string", "pattern": f"^[0-9a-f]{{{SEAL_HEX}}}$",
               "minLength": SEAL_HEX, "maxLength": SEAL_HEX}


def sealed_schema(schema: Mapping[str, Any], seal: str | None = None) -> dict[str, Any]:
    """``schema`` (an object schema) with the seal as its first and last required fields.
    Without ``seal`` the schema is the same for every request (the reader checks
    the value); with it, the field's only value is ``seal`` (for llama.cpp)."""
    out = dict(schema)
    props = {k: v for k, v in (out.get("properties") or {}).items() if k not in SEAL_FIELDS}
    field = dict(SEAL_SCHEMA) if seal is None else {"type": "string", "const": seal}
    out["properties"] = {SEAL_FIELD: field, **props, SEAL_END_FIELD: dict(field)}
    out["required"] = [SEAL_FIELD, *[r for r in out.get("required") or () if r not in SEAL_FIELDS],
                       SEAL_END_FIELD]
    return out


# the reply
#: a draft's opening tag after leading whitespace (``\s`` is ``str.isspace``, as ``str.lstrip``)
_DRAFT_OPEN = re.compile(r"\s*<(think|thinking)\b[^<>]{0,64}>", re.IGNORECASE)
#: the first ``</think>`` (``</thinking>``) after a draft's opening tag closes it (a literal search)
_DRAFT_CLOSE = {name: re.compile(rf"</{name}\s{{0,8}}>", re.IGNORECASE) for name in ("think", "thinking")}


def blank_drafts(text: str, marks: "Sequence[str] | None" = None) -> str:
    """``text`` with a leading, closed ``<think>``/``<thinking>`` draft replaced by spaces (offsets hold); with
    ``marks`` (the seal, candidate ids) only where one stands after it (why: docs/sealed-verdicts.md)."""
    m = _DRAFT_OPEN.match(text)
    m = m and _DRAFT_CLOSE[m.group(1).lower()].search(text, m.end())
    if m is None or (marks is not None and not any(text.find(k, m.end()) >= 0 for k in marks if k)):
        return text
    return " " * m.end() + text[m.end():]


#: seal occurrences examined per reply (the last ones)
_MAX_OCCURRENCES = 64
_ECHOED: Any = object()   # ``_label_at``'s answer for the seal instruction's example line, echoed (its seal used)
#: raw line breaks inside strings are accepted: llama.cpp's schema grammars let them through
_DECODER = json.JSONDecoder(strict=False)

#: JSON whitespace
_WS = re.compile(r"[ \t\r\n]*")
#: a sealed verdict's opening, ``{"seal": "`` (JSON whitespace between; in single quotes, a Python dict's)
_OPENING = re.compile(r'\{%s(["\'])%s\1%s:%s\1' % (_WS.pattern, re.escape(SEAL_FIELD), _WS.pattern, _WS.pattern))
#: the most characters from an opening's ``{`` to its seal
_OPENING_MAX = 64


def _opening(text: str, at: int) -> int:
    """The offset of the ``{`` of the object whose first field is the seal at ``at``, or -1 (a bounded look back)."""
    start = text.rfind("{", max(0, at - _OPENING_MAX), at) if text[at - 1:at] in ('"', "'") else -1
    m = _OPENING.match(text, start, at) if start >= 0 else None
    return start if m is not None and m.end() == at else -1


#: a sealed verdict's closing field, ``"seal_end": "`` (in single quotes too), ending right at its seal
_CLOSING = re.compile(r'(["\'])%s\1%s:%s\1' % (re.escape(SEAL_END_FIELD), _WS.pattern, _WS.pattern))


def _closing(text: str, at: int) -> bool:
    """Whether the seal at ``at`` is the value of a ``seal_end`` field: a bounded look back."""
    start = text.rfind(SEAL_END_FIELD, max(0, at - _OPENING_MAX), at) - 1
    m = _CLOSING.match(text, start, at) if start >= 0 else None
    return m is not None and m.end() == at


def _sealed_object(text: str, start: int, seal: str, check: Callable[[dict[str, Any]], Any]) -> Decision:
    """The verdict the JSON object at ``start`` (opened by the seal) holds, ``check``-ed with its
    seal fields removed; one that cannot be read is a ``NoVerdict``, never skipped."""
    obj, end, repeated = _decode(text, start)
    shift = 0
    if type(obj) is not dict and (relaxed := relaxed_object(text, start, seal, SEAL_END_FIELD)) is not None:
        shift, text = len(relaxed) - len(text), relaxed   # the same offsets, past a Python dict's
        obj, end, repeated = _decode(text, start)
    if type(obj) is dict and SURROGATE_ESCAPE.search(text, start, end):
        obj = _decode(lone_surrogates_out(text[start:end]), 0)[0]
    # the seal fields first and last, both the seal (``as_seal``'s zero-width spaces after one it joined aside)
    if type(obj) is not dict or len(obj) < 2 or next(iter(obj)) != SEAL_FIELD or next(reversed(obj)) != SEAL_END_FIELD \
            or tuple(v.rstrip("\u200b") if type(v) is str else v for v in (obj[SEAL_FIELD], obj[SEAL_END_FIELD])) \
            != (seal, seal):
        return NoVerdict("the sealed verdict is not one JSON object whose first field is "
                         f"{SEAL_FIELD!r} and last {SEAL_END_FIELD!r}, both the seal", kind="invalid")
    if repeated is not None:
        return NoVerdict(f"the sealed verdict repeats the key {repeated!r}", kind="invalid")
    del obj[SEAL_FIELD], obj[SEAL_END_FIELD]   # a fresh dict: the fields between, in order
    try:
        return Verdict(check(obj), start, end - shift)
    except (ValueError, TypeError) as exc:
        return NoVerdict(f"the sealed verdict does not fit: {exc}"[:400], kind="invalid")
    except RecursionError:
        return NoVerdict("the sealed verdict is nested too deep", kind="invalid")


def value_offset(reply: str, verdict: Verdict) -> int | None:
    """Where the value of ``score`` starts inside the ``verdict`` read from ``reply``: a line's
    ``value_at`` (after ``VERDICT <seal>:``, never at an earlier colon of the line, which may
    be the policy's text quoted), else the JSON object's own top-level key (inside a string
    value, after the quote), read key by key. None when not found."""
    if verdict.value_at >= 0:
        return verdict.value_at
    end = verdict.end
    try:
        i = _WS.match(reply, verdict.start + 1).end()
        while i < end and reply[i] == '"':
            key, i = scanstring(reply, i + 1, False)
            i = _WS.match(reply, i).end()
            if reply[i] != ":":
                return None
            i = _WS.match(reply, i + 1).end()
            if key == "score":
                return i + 1 if reply[i] == '"' else i
            i = _WS.match(reply, _DECODER.raw_decode(reply, i)[1]).end()
            if reply[i] != ",":
                return None
            i = _WS.match(reply, i + 1).end()
    except (ValueError, IndexError, RecursionError):
        pass
    return None


#: what may stand between ``VERDICT`` and the seal and between the seal and its colon, besides
#: emphasis and any space but a line break: quotes and brackets a judge puts around the seal
#: (``VERDICT "<seal>":``, ``VERDICT <<seal>>:``) and a table's cell borders
_AROUND_SEAL = frozenset(EMPHASIS + "\"'\u201c\u201d\u2018\u2019\u00ab\u00bb<>()[]\u300c\u300d|" + ZERO_WIDTH)
#: what ends the seal's part of its line: a colon (a fullwidth one, as a judge writing Chinese
#: writes it), in a markdown table (``| VERDICT <seal> | FAIL |``) a cell border, or a dash or an
#: equals sign written for the colon (``VERDICT <seal> — FAIL``, ``VERDICT <seal> = FAIL``)
_SEPARATORS = ":\uff1a|=\u2014\u2013"
#: what a judge may end its verdict line with (``FAIL ✅``, ``FAIL</s>``): an end-of-turn token
#: written out (``END_TOKENS``), an emoji; set aside where the line reads as no verdict with them
_LINE_TAIL = re.compile("(?:\\s|" + "|".join(re.escape(tok) for tok in sorted(END_TOKENS, key=len, reverse=True))
                        + f"|[{PICTOGRAPHS}])+\\Z")
#: what a judge may put before its verdict (``✅ PASS``, ``**→ FAIL**``): emoji and arrows, emphasis between
_LINE_HEAD = re.compile(f"(?:[\\s*_`~]*[{PICTOGRAPHS}])+")
#: the most characters of a line's end looked at for ``_LINE_TAIL``
_TAIL_MAX = 64
#: the most such characters on either side of the seal
_AROUND_MAX = 16


def _around(ch: str) -> bool:
    return ch in _AROUND_SEAL or (ch != "\n" and ch.isspace())


def _verdict_word(text: str, at: int) -> int:
    """Where ``VERDICT`` (case folded) stands right before the seal at ``at``, but for what ``_around``
    allows and a colon (``VERDICT: <seal>: FAIL``), else -1: a bounded look back."""
    if "verdict" not in text[max(0, at - 2 * _AROUND_MAX - 11):at].casefold():
        return sealed_row(text, at, SEAL_HEX)[0]   # no VERDICT within reach (case folding goes by character)
    i = _skip_back(text, at, "#")
    if text[max(0, i - 4):i].casefold() in _SEAL_WORDS and not text[i - 5:i - 4].isalnum():
        i = _skip_back(text, i - 4, "")   # a word naming the seal: ``VERDICT (seal <seal>):``
    return i - 7 if text[max(0, i - 7):i].casefold() == "verdict" else sealed_row(text, at, SEAL_HEX)[0]


#: a word naming the seal that a judge may write between ``VERDICT`` and the seal (``VERDICT (seal <seal>): FAIL``)
_SEAL_WORDS = ("seal", "code")


def _skip_back(text: str, at: int, more: str) -> int:
    """Where what ``_around`` allows, separators and ``more`` before ``at`` start: ``_AROUND_MAX`` at most."""
    i, stop = at, max(0, at - _AROUND_MAX)
    while i > stop and (_around(text[i - 1]) or text[i - 1] in _SEPARATORS or text[i - 1] in more):
        i -= 1
    return i


def _label_at(text: str, at: int, line_start: int, seal: str, read_line: Callable[[str], Any],
              placeholder: str = "", cut: "int | None" = None) -> "Decision | None":
    """The verdict ``VERDICT <seal>: <label>`` of the seal at ``at`` on the line from ``line_start``, to its end
    or ``cut`` (the next sealed line's ``VERDICT`` on it) (``value_at``: where its value begins): a ``NoVerdict``
    where the rest is not one verdict, ``_ECHOED`` where it is the instruction's own ``placeholder``; else None."""
    line_end = line_stop(text, at, len(text) if cut is None else cut)
    j = _past_around(text, at + len(seal), line_end)
    if j >= line_end:   # nothing after the seal: its row's verdict cell before it (``| FAIL | <seal>``), or none
        k, rest = _row_rest(text, at, j, "")
        return None if k == j else _read_cell(text, line_start, line_end, k, rest, read_line)
    head = text[max(line_start, at - _HEAD_MAX):at] + text[at + len(seal):j]
    # a hyphen between spaces for the colon (``VERDICT <seal> - FAIL``), never one before a number (``-1``)
    if text[j] not in _SEPARATORS and not (text[j] == "-" and text[j - 1].isspace() and text[j + 1:j + 2].isspace()):
        # no colon after the seal (``VERDICT <seal> FAIL``): read only if it reads
        space = next((k for k in range(at + len(seal), j) if text[k].isspace()), -1)
        return None if space < 0 else _spaced(text[space:line_end], read_line, unclosed(head), line_start, line_end)
    j, rest = _row_rest(text, at, j, text[j + 1:line_end])
    value = _read_rest(rest, read_line, unclosed(head))
    if value is None and (inner := json_string_rest(head, rest)) is not None:
        value = _read_rest(inner, read_line)   # the line inside a JSON string, more fields after it
    if value is None and not unwrap(folded(rest)):
        return _label_below(text, line_start, line_end, read_line)
    if value is None:
        if placeholder and letters(_CLOSING_TAGS.sub("", rest)) == letters(placeholder):
            return _ECHOED   # the seal instruction's example line (its brackets or case changed, in an element)
        return NoVerdict(
            f"the sealed verdict line does not hold exactly one verdict: {unwrap(rest)[:80]!r}",
            kind="invalid")
    return Verdict(value, line_start, line_end, (), j + 1 + value_start(rest))


def _past_around(text: str, j: int, line_end: int) -> int:
    """Where what ``_around`` allows after a seal ending at ``j`` ends, but at a separator: ``_AROUND_MAX`` at most."""
    stop = min(line_end, j + _AROUND_MAX)
    while j < stop and text[j] not in _SEPARATORS and _around(text[j]):
        j += 1
    return j


def _row_rest(text: str, at: int, j: int, rest: str) -> "tuple[int, str]":
    """Where the verdict of the seal at ``at`` stands, before it (``j``: its separator), and what it is: ``rest``, or
    where that is empty and the seal stands in a table's row, the verdict's cell before the seal (``| FAIL | <seal>
    |``) or its key-value row below (``| seal | <seal> |`` / ``| verdict | FAIL |``: ``_own.sealed_row``)."""
    row = sealed_row(text, at, SEAL_HEX) if not rest.strip(EDGE) else (-1, -1, "")
    return (j, rest) if row[1] < 0 else (row[1] - 1, row[2])


def _read_cell(text: str, line_start: int, line_end: int, j: int, rest: str, read_line: Callable[[str], Any]) -> Decision:
    """The verdict of a seal row's verdict cell ``rest`` (after ``j``), one verdict or the reading at its place."""
    value = _read_rest(rest, read_line)
    if value is None:
        return NoVerdict(f"the sealed verdict row does not hold exactly one verdict: {unwrap(rest)[:80]!r}", kind="invalid")
    return Verdict(value, line_start, line_end, (), j + 1 + value_start(rest))


def _spaced(rest: str, read_line: Callable[[str], Any], wrapped: int, start: int, end: int) -> "Verdict | None":
    """The verdict after a seal and a space, no separator between (``VERDICT <seal> FAIL``), or None."""
    value = _read_rest(rest, read_line, wrapped)
    return None if value is None else Verdict(value, start, end, (), end - len(rest) + value_start(rest))


#: the closing tags that end an element a sealed line stands in (``<format>VERDICT <seal>: <PASS or FAIL></format>``)
_CLOSING_TAGS = re.compile(r"(?:</[a-zA-Z][\w:.-]{0,32}\s{0,8}>\s{0,8}){1,4}\Z")
#: the most characters of a sealed line before its seal looked at for brackets it leaves open
_HEAD_MAX = 256


def _read_rest(rest: str, read_line: Callable[[str], Any], wrapped: int = 0) -> Any:
    """The verdict ``rest`` holds, as written then ``folded``, each as written then ``unstyled``, each also
    without a ``_LINE_TAIL`` and a ``_LINE_HEAD`` (``trimmed``), then also without up to ``wrapped`` closing
    brackets at its end (``without_closers``), or before a note in parentheses that leaves it one verdict
    (``read_noted``: ``PASS (good)``, ``[[2]] (2 out of 10)``)."""
    for s in (rest,) if rest.isascii() else (rest, folded(rest)):
        plain = unstyled(s)   # LaTeX's and HTML's styling dropped (the seal binds the line)
        for view in (s,) if plain == s else (s, plain):
            value = read_line(view)
            shorn = view if value is not None else trimmed(view)
            for cut in (shorn, without_closers(shorn, wrapped) if wrapped else shorn):
                if value is None and cut != view:
                    value = read_line(cut)
            value = read_noted(shorn, read_line) if value is None else value
            if value is not None:
                return value
    return None


#: the longest last line read as the verdict of an empty sealed line above it
_BELOW_MAX = 256


def _line_tail(rest: str) -> int:
    """Where ``_LINE_TAIL`` starts in ``rest`` (its length where none does), looked for in its last
    characters only (a line of a million spaces is not tried a million times)."""
    m = _LINE_TAIL.search(rest, max(0, len(rest) - _TAIL_MAX))
    return len(rest) if m is None else m.start()


def trimmed(rest: str) -> str:
    """``rest`` without its ``_LINE_TAIL`` and its ``_LINE_HEAD``."""
    rest = rest[:_line_tail(rest)]
    head = _LINE_HEAD.match(rest) if not rest.isascii() else None
    return rest if head is None else rest[head.end():]


def _label_below(text: str, line_start: int, line_end: int, read_line: Callable[[str], Any]) -> Decision:
    """The verdict of a ``VERDICT <seal>:`` line with nothing after its colon, written on the next
    line: only where that line ends the reply (but for blank lines, an end-of-turn token or an emoji)
    and is one verdict; whatever else follows the empty line, it holds no verdict."""
    below = text[line_end:].strip()
    below = below[:_line_tail(below)].strip() if len(below) <= _BELOW_MAX else ""
    value = _read_rest(below, read_line) if below and not LINE_END.search(below) else None
    if value is None:
        return NoVerdict("the sealed verdict line holds no verdict (nor does a last line after it)", kind="invalid")
    at = text.index(below, line_end)
    return Verdict(value, line_start, at + len(below), (), at + value_start(below))


#: a pair of brackets a judge keeps around its label from the instruction's ``<PASS or FAIL>``
_BRACKETS = {"<": ">", "[": "]", "(": ")"}


@functools.lru_cache(maxsize=256)
def _label_reader(labels: "tuple[str, ...]", bracketed: bool = False) -> Callable[[str], "str | None"]:
    """Reads the rest of a sealed line as exactly one of ``labels`` (case folded, ``unwrap``-ped);
    ``bracketed``: also inside one pair of brackets (``<FAIL>``, ``[FAIL]``), the seal binding the line."""
    canon = {lab.casefold(): lab for lab in labels}

    def read(rest: str) -> "str | None":
        s = unwrap(rest)
        value = canon.get(s.casefold())
        if value is None and bracketed and len(s) > 2 and _BRACKETS.get(s[0]) == s[-1]:
            value = canon.get(unwrap(s[1:-1]).casefold())
        return value

    return read



def _next_words(words: "list[int]", end: int) -> "list[int]":
    """For each seal, where the next seal's ``VERDICT`` stands (``end`` where none does): a sealed line's
    verdict ends there, so a line holding several is read once, linearly."""
    out, cut = [], end
    for word in reversed(words):
        out.append(cut)
        cut = word if word >= 0 else cut
    return out[::-1]


def read_sealed(text: str, seal: str, *, check: "Callable[[dict[str, Any]], Any] | None" = None,
                labels: Sequence[str] = (), read_line: "Callable[[str], Any] | None" = None,
                same: "Callable[[Any, Any], bool] | None" = None, placeholder: str = "",
                policy_texts: Sequence[str] = ()) -> Decision:
    """The last sealed verdict of a judge reply, or why there is none (linear; the rules:
    docs/sealed-verdicts.md). ``check`` validates a sealed JSON object (seal fields removed),
    raising ``ValueError`` when it does not fit; ``labels`` or ``read_line`` read the rest of a
    ``VERDICT <seal>:`` line; each form is read only with its reader. ``same``: when two values
    agree (default ``==``); ``placeholder``: the instruction's example line, an echo of no verdict;
    ``policy_texts``: the policy's texts, whose pasted copies hold no verdict read off its seal's line (``_own.pasted``)."""
    if read_line is None and labels:
        read_line = _label_reader(tuple(labels), True)
    # the seal in capitals, mixed case, zero-width marks inside it: the same seal (offsets kept)
    text = blank_drafts(as_seal(text, seal), (seal,))
    # by where each verdict stands (a JSON verdict's ``{``, a line's ``VERDICT``): the reply's order, each
    # seal on a line its own verdict (a draft closed mid-line, ``...PASS</think>VERDICT <seal>: FAIL``)
    found: dict[int, Decision] = {}
    # str.find, not a regex: every request has its own seal, and a regex per seal is compiled anew
    ats, at = [], text.rfind(seal)
    while at >= 0 and len(ats) < _MAX_OCCURRENCES:
        ats.append(at)
        at = text.rfind(seal, 0, at)
    ats.reverse()
    words = [_verdict_word(text, at) if read_line is not None else -1 for at in ats]   # where each VERDICT is
    copies: list = []   # the policy's texts' copies in the reply, found where a verdict is read off its seal's line
    in_object = False   # between a JSON verdict's opening seal and its closing one: a VERDICT line there is its text
    taken: "list[bool]" = []   # whether each seal bound a verdict read (or an echoed example line)
    for at, word, cut in zip(ats, words, _next_words(words, len(text))):
        start, decision = -1 if check is None else _opening(text, at), None
        if start >= 0:   # the seal opens a JSON object
            found[start], in_object, decision = _sealed_object(text, start, seal, check), True, _ECHOED  # type: ignore
        elif in_object:   # it stands in one
            in_object, decision = not _closing(text, at), _ECHOED
        elif word >= 0:   # a VERDICT line
            decision = _label_at(text, at, text.rfind("\n", 0, word) + 1, seal, read_line, placeholder, cut)
            if decision not in (None, _ECHOED):
                if policy_texts and pasted(text, at, decision, policy_texts, copies):
                    decision = NoVerdict("the sealed verdict's row is the policy's text, pasted", kind="invalid")
                found[word] = decision
        taken.append(decision is not None)
    if not found:
        return NoVerdict("no sealed verdict in the reply (a verdict must carry the request's seal)",
                         kind="no sealed verdict")
    if seal_after(text, seal, ats, taken):   # hunt 39: it may bind the judge's own verdict, after a draft it quoted
        return NoVerdict("the seal stands after the last verdict read, in a form not read", kind="no sealed verdict")
    return last_decides([found[start] for start in sorted(found)], same)


# unsealed reading (opt-in): replaying a benchmark's calibrated prompt as is
#: JSON object starts tried from the end of an unsealed reply
_MAX_UNSEALED_STARTS = 256
#: the shortest policy text whose verbatim copies an unsealed reading skips
_MIN_COPY = 8


def read_unsealed(text: str, policy_texts: Sequence[str] = (), *,
                  check: "Callable[[dict[str, Any]], Any] | None" = None, labels: Sequence[str] = (),
                  same: "Callable[[Any, Any], bool] | None" = None) -> Decision:
    """The last verdict of a reply read without a seal: the last JSON object
    ``check`` accepts, or a last line that is one of ``labels``, skipping
    anything inside a verbatim copy of ``policy_texts``. Forgeable by a judge
    that decodes or restates policy text: use sealed verdicts where you can."""
    text = blank_drafts(text)
    copies = policy_copies(text, policy_texts, _MIN_COPY)
    found = [] if check is None else _unsealed_objects(text, copies, check)
    if labels:
        found += _unsealed_label(text, copies, _label_reader(tuple(labels)))
    if not found:
        return NoVerdict("no verdict in the reply", kind="no verdict")
    return last_decides([d for _, d in sorted(found, key=lambda f: f[0])], same)


def _unsealed_objects(text: str, copies: Any, check: Callable[[dict[str, Any]], Any]
                      ) -> "list[tuple[int, Decision]]":
    """The JSON objects ``check`` accepts, outside copies and not around one found, tried from
    the reply's end."""
    found: list[tuple[int, Decision]] = []
    text = lone_surrogates_out(text)   # the same offsets
    start = len(text)
    failed = None   # the last start tried where none decodes, since the last object found
    nested = Nested(text, _MAX_UNSEALED_STARTS)   # a start inside a long object is not decoded again
    for _ in range(_MAX_UNSEALED_STARTS):
        start = text.rfind("{", 0, start)
        if start < 0:
            break
        # an object ending past the last one found is not read: its decode stops there
        obj, end, repeated = _decode(text, start, found[-1][0] if found else None, failed, nested)
        if type(obj) is not dict:
            failed = start   # the starts before it are decoded up to it first (linear in the text)
            continue
        if repeated is not None or inside_copy(copies, start, end):
            continue
        try:   # no reason is made of a failed check: hundreds of objects may be tried
            found.append((start, Verdict(check(obj), start, end)))
            failed = None   # its start is the stop of the decodes before it
        except (ValueError, TypeError, RecursionError):
            continue
    return found


def _unsealed_label(text: str, copies: Any, read_line: Callable[[str], Any]) -> "list[tuple[int, Decision]]":
    """The reply's last non-blank line, when it is a label outside copies (with where its value begins)."""
    body_end = len(text.rstrip())   # trailing blank lines skipped in C, not one step each
    if not body_end:
        return []
    start = text.rfind("\n", 0, body_end) + 1
    end = text.find("\n", body_end)
    end = len(text) if end < 0 else end
    line = text[start:end]
    head, sep, tail = line.partition(":")   # a lead word allowed: ``Verdict: PASS``
    read = tail if sep and len(head) <= 24 else line
    value = read_line(read)
    if value is None or inside_copy(copies, start, end):
        return []
    return [(start, Verdict(value, start, end, (), end - len(read.lstrip(EMPHASIS))))]
