"""The seal: a verdict the policy cannot write.

Every verdict the library asks a judge for is bound to a *seal*: a value
computed per request with a keyed hash over the whole request (the policy's
completion included) and a secret the policy never sees. The judge is asked,
last in its request, to write the seal *on* its verdict:

* a JSON verdict holds it as a field of the verdict object itself
  (``"seal": "<value>"``, ``SEAL_FIELD``);
* a label verdict stands on a line ``VERDICT <value>: <label>``, with nothing
  else after the label.

Only a sealed verdict is read. Policy text the judge copies, quotes, decodes,
translates or restates cannot carry the seal (the policy never saw it), so it
can never become the verdict, whatever the judge does with it; the readers
below can then be simple and permissive about where the judge writes its
verdict. Reasoning drafts (``<think>`` blocks) are blanked before reading, and
the last sealed verdict decides: a judge that changes its mind is read at its
final word, and the values of earlier sealed verdicts that disagree are kept
(``Verdict.others``).

>>> sealer = Sealer(b"k" * 32)
>>> msgs = [{"role": "user", "content": "Is 2+2=4? Answer PASS or FAIL."}]
>>> seal = sealer.value(msgs)
>>> len(seal)
16
>>> read_sealed(f"Yes it is.\\nVERDICT {seal}: PASS", seal, labels=("PASS", "FAIL")).value
'PASS'
>>> read_sealed("VERDICT 0123456789abcdef: PASS", seal, labels=("PASS", "FAIL")).kind
'no sealed verdict'
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import re
import secrets
from typing import Any, Callable, Mapping, Sequence

from ..errors import ConfigError
from ._decision import Decision, NoVerdict, Verdict
from ._forms import EMPHASIS, inside_copy, policy_copies, unwrap

__all__ = ["SEAL_FIELD", "Sealer", "blank_drafts", "json_instruction",
           "label_instruction", "read_sealed", "read_unsealed", "seal_messages", "sealed_schema"]

#: the field of a JSON verdict that carries the seal (a user output model may not use it)
SEAL_FIELD = "seal"
#: hex digits of a seal: 64 bits
SEAL_HEX = 16
#: environment variable holding a seal key shared by processes (hex or text)
SEAL_KEY_ENV = "REWARDJUDGE_SEAL_KEY"

_PROCESS_KEY = secrets.token_bytes(32)


def _key_bytes(key: "bytes | str | None") -> bytes:
    if key is None:
        env = os.environ.get(SEAL_KEY_ENV)
        return env.encode("utf-8") if env else _PROCESS_KEY
    if isinstance(key, bytes):
        raw = key
    elif isinstance(key, str):
        raw = key.encode("utf-8")
    else:
        raise ConfigError(f"seal_key must be bytes or str, got {type(key).__name__}")
    if len(raw) < 16:
        raise ConfigError(f"seal_key must hold at least 16 bytes, got {len(raw)}")
    return raw


#: a first message at least this long has its hash state remembered (``Sealer.value``)
_PREFIX_MIN = 256
#: first messages remembered per key
_PREFIXES = 16


def _frame(m: Mapping[str, Any]) -> bytes:
    """One message as the seal hashes it: its length, its kind, its role and content."""
    content = m.get("content")
    if isinstance(content, str) and len(m) == 2 and "role" in m:
        data = f"{m['role']}\x00{content}".encode("utf-8", "surrogatepass")
        tag = b"s"
    else:
        rest = {k: v for k, v in m.items() if k not in ("role", "content")}
        if isinstance(content, str) and not rest:   # {"content": ...} without a role
            part, tag = content, b"s"
        else:
            part, tag = json.dumps([content, rest], ensure_ascii=False, sort_keys=True,
                                   separators=(",", ":"), default=str), b"j"
        data = f"{m.get('role')}\x00{part}".encode("utf-8", "surrogatepass")
    return len(data).to_bytes(8, "big") + tag + data


class Sealer:
    """Computes the seal of a request: the first 64 bits of HMAC-SHA256 under
    ``key`` over the request's canonical JSON (every message, in order).

    ``key``: bytes or text of at least 16 bytes; None takes the environment's
    ``REWARDJUDGE_SEAL_KEY`` or, without it, a random key made once per
    process. Set a key to make requests reproducible across processes (a
    resumed evaluation, a request cache shared by runs); keep it secret from
    the policy.
    """

    def __init__(self, key: "bytes | str | None" = None):
        self._key = _key_bytes(key)

    @property
    def fingerprint(self) -> str:
        """A short public hash of the key (never the key): tells two runs with
        the same key apart from two with different ones."""
        return hashlib.sha256(b"rewardjudge-seal-key:" + self._key).hexdigest()[:12]

    def key_hex(self) -> str:
        """The key, for keeping beside an evaluation's journal (a secret: never
        put it where the policy can read it)."""
        return self._key.hex()

    def value(self, messages: Sequence[Mapping[str, Any]]) -> str:
        # each message framed by its length, so no two requests share a byte stream
        if len(messages) > 1:
            head = messages[0]
            content = head.get("content")
            if type(content) is str and len(head) == 2 and len(content) >= _PREFIX_MIN \
                    and type(head.get("role")) is str:
                # a long first message (a grader's system prompt, the same for every
                # request): the hash's state after it is made once and copied
                key = (head["role"], content)
                prefixes = self.__dict__.get("_prefixes")
                if prefixes is None:
                    prefixes = self.__dict__["_prefixes"] = {}
                mac = prefixes.get(key)
                if mac is None:
                    if len(prefixes) >= _PREFIXES:
                        prefixes.clear()
                    mac = prefixes[key] = hmac.new(self._key, _frame(head), "sha256")
                mac = mac.copy()
                mac.update(b"".join([_frame(m) for m in messages[1:]]))
                return mac.hexdigest()[:SEAL_HEX]
        return hmac.digest(self._key, b"".join([_frame(m) for m in messages]), "sha256").hex()[:SEAL_HEX]

    def __getstate__(self) -> dict[str, Any]:   # picklable (trainers ship reward functions)
        return {"_key": self._key}


# --------------------------------------------------------------------------
# the request: the seal instruction, last
# --------------------------------------------------------------------------
def seal_messages(messages: Sequence[Mapping[str, Any]], instruction: str) -> list[dict[str, Any]]:
    """``messages`` with ``instruction`` appended to the last one (after the
    completion, so every shared prefix of the request stays intact for prefix
    caches); a new user message when the last one is not the user's."""
    out = [dict(m) for m in messages]
    last = out[-1] if out else None
    if last is None or last.get("role") != "user":
        out.append({"role": "user", "content": instruction.lstrip()})
        return out
    content = last.get("content")
    if isinstance(content, str):
        last["content"] = content + instruction
    elif isinstance(content, list):
        last["content"] = [*content, {"type": "text", "text": instruction}]
    else:
        out.append({"role": "user", "content": instruction.lstrip()})
    return out


#: how every seal instruction starts (``testing.without_seal`` cuts a prompt there)
SEAL_LEAD = "\n\nEnd your reply with your verdict"


def label_instruction(seal: str, choices: str, placeholder: str | None = None) -> str:
    """The seal instruction of a verdict on a line: ``choices`` says what goes
    after the colon, ``placeholder`` shows it in the example line (default
    ``<choices>``), so a judge echoing its prompt writes no sealed verdict."""
    shown = placeholder if placeholder is not None else f"<{choices}>"
    return (f"{SEAL_LEAD} on a line of its own: the word VERDICT, the code {seal}, a colon, then "
            f"{choices}, like this:\nVERDICT {seal}: {shown}\n"
            f"Only a verdict on that line with that code is read.")


def json_instruction(seal: str, fields: str = "") -> str:
    """The seal instruction of a JSON verdict (``fields``: a short reminder of
    the verdict's fields, for prompts that do not show the schema)."""
    shape = f" with the fields {fields}" if fields else ""
    return (f"{SEAL_LEAD} as one JSON object{shape}. Add the field "
            f"\"{SEAL_FIELD}\" to that object with the value \"{seal}\": only a verdict object "
            f"holding this seal is read.")


#: the seal field in a wire schema: the same for every request. A per-request ``const`` would
#: make every request's schema new to a server that compiles one grammar per distinct schema and
#: caches it (vLLM, SGLang: xgrammar): measured with xgrammar 0.2.9 (bench/bench_schema_cache.py),
#: a new schema costs 140-200x a cached one (6.6 ms at a 49k vocabulary, 19.6 ms at 128k, per
#: request) and floods the grammar cache; the value is checked by the reader instead
SEAL_SCHEMA = {"type": "string", "pattern": f"^[0-9a-f]{{{SEAL_HEX}}}$",
               "minLength": SEAL_HEX, "maxLength": SEAL_HEX}


def sealed_schema(schema: Mapping[str, Any], seal: str | None = None) -> dict[str, Any]:
    """``schema`` (an object schema) with the seal as a required field, last:
    a server that enforces the schema makes the judge write one. Without
    ``seal`` the schema is the same for every request (the value is checked
    when the reply is read); with it, the field's only value is ``seal``, for
    a server that builds a grammar per request anyway (llama.cpp)."""
    out = dict(schema)
    props = dict(out.get("properties") or {})
    props.pop(SEAL_FIELD, None)
    props[SEAL_FIELD] = dict(SEAL_SCHEMA) if seal is None else {"type": "string", "const": seal}
    out["properties"] = props
    out["required"] = [*[r for r in out.get("required") or () if r != SEAL_FIELD], SEAL_FIELD]
    return out


# --------------------------------------------------------------------------
# the reply
# --------------------------------------------------------------------------
_DRAFT_OPEN = re.compile(r"<(think|thinking)\b[^<>]{0,64}>", re.IGNORECASE)


def blank_drafts(text: str) -> str:
    """``text`` with a leading reasoning draft (``<think>…</think>`` or
    ``<thinking>``, where a reasoning model writes it: at the start of its
    reply; an unclosed one runs to the end) replaced by spaces, so offsets
    hold. A verdict written inside it is never read. A tag elsewhere is text
    (it may be the policy's, quoted by the judge) and hides nothing."""
    lead = len(text) - len(text.lstrip())
    m = _DRAFT_OPEN.match(text, lead)
    if m is None:
        return text
    close = _DRAFT_CLOSE[m.group(1).lower()].search(text, m.end())
    end = len(text) if close is None else close.end()
    return " " * end + text[end:]


#: the first ``</think>`` (``</thinking>``) after a draft's opening tag closes it
_DRAFT_CLOSE = {name: re.compile(rf"</{name}\s{{0,8}}>", re.IGNORECASE) for name in ("think", "thinking")}


#: raw line breaks inside strings are accepted: llama.cpp's schema grammars let them through
_DECODER = json.JSONDecoder(strict=False)
#: seal occurrences examined per reply (the last ones)
_MAX_OCCURRENCES = 64


class _Duplicate(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _Duplicate(k)
        out[k] = v
    return out


_STRICT = json.JSONDecoder(object_pairs_hook=_no_duplicates, strict=False)


def _occurrences(text: str, seal: str) -> list[int]:
    found: list[int] = []
    at = text.find(seal)
    while at >= 0:
        found.append(at)
        at = text.find(seal, at + len(seal))
    return found[-_MAX_OCCURRENCES:]


#: read backwards (over the text reversed, from a string's opening quote towards the text's
#: start): everything up to the next bracket outside strings, and that bracket. A string is
#: skipped whole (from its closing quote, one no odd run of backslashes precedes, to its
#: opening one, or to the text's start when it has none); a quote that is escaped outside a
#: string is no quote. Possessive throughout: nothing is ever tried twice (linear)
_TO_BRACKET = re.compile(r'(?:"(?=(?:\\\\)*+(?!\\))(?:[^"]++|"(?=\\(?:\\\\)*+(?!\\)))*+(?:"|\Z)'
                         r'|"(?=\\(?:\\\\)*+(?!\\))|[^"{}\[\]]++)*+([{}\[\]])')


def _object_start(text: str, quote: int) -> int:
    """The offset of the ``{`` that opens the innermost JSON object around the
    string starting at ``quote``, walking back over strings and nested
    brackets (exact for JSON, linear); -1 when there is none."""
    if quote <= 0:
        return -1
    rev = text[quote - 1::-1]
    depth, pos = 0, 0
    while True:
        m = _TO_BRACKET.match(rev, pos)
        if m is None:
            return -1
        ch, pos = m.group(1), m.end()
        if ch in "}]":
            depth += 1
        elif depth:
            depth -= 1
        elif ch == "{":
            return quote - pos
        else:
            return -1   # inside an array: not an object's field


def _sealed_object(text: str, at: int, seal: str) -> "tuple[Any, int, int] | None":
    """The JSON object whose own ``seal`` field is the string holding the seal
    at ``at``: ``(object or _Duplicate, start, end)``, else None."""
    if at == 0 or text[at - 1] != '"':
        return None
    start = _object_start(text, at - 1)
    if start < 0:
        return None
    dup = None
    try:   # one decode: the strict one succeeds on every object without a repeated key
        obj, end = _STRICT.raw_decode(text, start)
    except _Duplicate as found:
        dup = found
        try:
            obj, end = _DECODER.raw_decode(text, start)
        except (ValueError, RecursionError):
            return None
    except (ValueError, RecursionError):
        return None
    if not isinstance(obj, dict) or obj.get(SEAL_FIELD) != seal or end <= at:
        return None
    return (obj if dup is None else dup), start, end


def _label_at(text: str, at: int, seal: str, read_line: Callable[[str], Any]) -> "tuple[Any, int, int] | None":
    """A label verdict ``VERDICT <seal>: <label>`` around the seal at ``at``."""
    line_start = text.rfind("\n", 0, at) + 1
    lead = text[line_start:at].rstrip(EMPHASIS)
    if not lead.casefold().endswith("verdict"):
        return None
    line_end = text.find("\n", at)
    line_end = len(text) if line_end < 0 else line_end
    rest = text[at + len(seal):line_end].lstrip(EMPHASIS)
    if not rest.startswith(":"):
        return None
    value = read_line(rest[1:])
    return None if value is None else (value, line_start, line_end)


@functools.lru_cache(maxsize=256)
def _label_reader(labels: "tuple[str, ...]") -> Callable[[str], "str | None"]:
    """Reads the rest of a sealed line as exactly one of ``labels`` (case
    folded; emphasis and a final full stop around it tolerated: ``unwrap``)."""
    canon = {lab.casefold(): lab for lab in labels}
    return lambda rest: canon.get(unwrap(rest).casefold())


def read_sealed(text: str, seal: str, *, check: "Callable[[dict[str, Any]], Any] | None" = None,
                labels: Sequence[str] = (), read_line: "Callable[[str], Any] | None" = None,
                same: "Callable[[Any, Any], bool] | None" = None) -> Decision:
    """The last sealed verdict of a judge reply, or why there is none.

    ``check`` validates a sealed JSON object (the seal field removed) into a
    verdict value, raising ``ValueError`` when it does not fit: the JSON form
    is read only with it. ``labels`` or ``read_line`` read the rest of a
    ``VERDICT <seal>:`` line: the label form is read only with one of them.
    Drafts are blanked first (``blank_drafts``). ``same`` says when two
    verdict values agree (default ``==``). Linear in the reply's length: the
    seal is found with ``str.find``, and only text around it is decoded.
    """
    if read_line is None and labels:
        read_line = _label_reader(tuple(labels))
    text = blank_drafts(text)
    found: list[tuple[int, int, Any]] = []
    for at in _occurrences(text, seal):
        if check is not None:
            hit = _sealed_object(text, at, seal)
            if hit is not None:
                obj, start, end = hit
                if isinstance(obj, _Duplicate):
                    found.append((start, end, NoVerdict(f"the sealed verdict repeats the key {obj.args[0]!r}",
                                                        kind="invalid")))
                    continue
                data = {k: v for k, v in obj.items() if k != SEAL_FIELD}
                try:
                    found.append((start, end, check(data)))
                except (ValueError, TypeError) as exc:
                    found.append((start, end, NoVerdict(f"the sealed verdict does not fit: {exc}"[:400],
                                                        kind="invalid")))
                continue
        if read_line is not None:
            hit = _label_at(text, at, seal, read_line)
            if hit is not None:
                value, start, end = hit
                found.append((start, end, value))
    if not found:
        return NoVerdict("no sealed verdict in the reply (a verdict must carry the request's seal)",
                         kind="no sealed verdict")
    if len(found) == 1:   # the usual reply: one verdict, nothing to order or compare
        start, end, last = found[0]
        return last if isinstance(last, NoVerdict) else Verdict(last, start, end)
    found.sort(key=lambda f: f[0])
    # one verdict written once and seen from two occurrences of the seal is one verdict
    unique: list[tuple[int, int, Any]] = []
    for f in found:
        if not unique or f[0] != unique[-1][0]:
            unique.append(f)
    start, end, last = unique[-1]
    if isinstance(last, NoVerdict):   # the last sealed verdict does not fit: that is the reading
        return last
    agree = same or (lambda a, b: a == b)
    others = tuple(v for _, _, v in unique[:-1] if not isinstance(v, NoVerdict) and not agree(v, last))
    return Verdict(last, start, end, others)


# --------------------------------------------------------------------------
# unsealed reading (opt-in): replaying a benchmark's calibrated prompt as is
# --------------------------------------------------------------------------
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
    found: list[tuple[int, int, Any]] = []
    if check is not None:
        start = len(text)
        for _ in range(_MAX_UNSEALED_STARTS):
            start = text.rfind("{", 0, start)
            if start < 0:
                break
            try:
                obj, end = _STRICT.raw_decode(text, start)
            except (ValueError, RecursionError):
                continue
            if not isinstance(obj, dict) or inside_copy(copies, start, end):
                continue
            if found and end > found[-1][0]:
                continue   # nested in a verdict already found
            try:
                found.append((start, end, check(obj)))
            except (ValueError, TypeError):
                continue
    if labels:
        read_line = _label_reader(tuple(labels))
        end = len(text)
        while end > 0:
            start = text.rfind("\n", 0, end) + 1
            line = text[start:end]
            if line.strip():
                value = read_line(_after_lead(line))
                if value is not None and not inside_copy(copies, start, end):
                    found.append((start, end, value))
                break
            end = start - 1
    if not found:
        return NoVerdict("no verdict in the reply", kind="no verdict")
    found.sort(key=lambda f: f[0])
    start, end, last = found[-1]
    agree = same or (lambda a, b: a == b)
    return Verdict(last, start, end, tuple(v for _, _, v in found[:-1] if not agree(v, last)))


def _after_lead(line: str) -> str:
    """A label line without its lead word (``Verdict: PASS`` -> ``PASS``)."""
    head, sep, tail = line.partition(":")
    return tail if sep and len(head) <= 24 else line
