"""Handlebars source checking and the one rewrite before pybars3 compiles.

``scan`` tokenises with real line and column numbers and refuses what pybars3 would mis-render;
``rewrite`` gives the canonical form pybars3 parses exactly: standalone-line and ``~`` rules
applied, sections over values and partials as ``_section``/``_inverted``/``_partial`` helper
calls, ``{{else if}}`` chains nested, comments removed.
"""

from __future__ import annotations

import dataclasses
import json
import re

from ..errors import TemplateError
from ._pybars_overrides import parse

__all__ = ["Tag", "locate_parse_error", "rewrite", "scan"]

_NAME_RE = re.compile(r"\s*(\S+?)(?=\s|$)(.*)", re.S)
_PARTIAL_NAME = re.compile(r"""\s*(?:"([^"]+)"|'([^']+)'|([A-Za-z0-9_][A-Za-z0-9_.\-/]*))(.*)""", re.S)
_JINJA_STATEMENT = re.compile(r"\{%[-+]?\s*([A-Za-z_]\w*)")
_STANDALONE_KINDS = {"comment", "open", "inverse", "close", "else", "chain", "partial"}


@dataclasses.dataclass
class Tag:
    start: int                 # span in the source
    end: int
    kind: str                  # comment open inverse close else chain partial expr amp triple
    name: str = ""             # block / partial name
    rest: str = ""             # the arguments after the name
    inner: str = ""            # the tag's text inside its delimiters, trimmed
    strip_before: bool = False  # {{~
    strip_after: bool = False   # ~}}
    standalone: bool = False
    indent: str = ""           # a standalone partial's line indentation
    emit_name: str = ""        # the block name pybars3 sees (open / inverse / chain)
    chain: list = dataclasses.field(default_factory=list)  # closers owed by {{else x}} (open tags)
    section: bool = False      # a section over a value, not a helper call

    def line(self, source: str) -> tuple[int, int]:
        """The span of the tag's whole line, its newline included: what a standalone tag takes."""
        end = source.find("\n", self.end)
        return source.rfind("\n", 0, self.start) + 1, len(source) if end < 0 else end + 1


def _line_col(source: str, pos: int) -> tuple[int, int]:
    return source.count("\n", 0, pos) + 1, pos - source.rfind("\n", 0, pos)


def _error(msg: str, source: str, pos: int) -> TemplateError:
    line, col = _line_col(source, pos)
    return TemplateError(msg, line=line, column=col, source=source)


def _refuse_jinja(source: str) -> None:
    m = _JINJA_STATEMENT.search(source)
    if m:
        raise _error(f"'{{% {m.group(1)} %}}' is Jinja2 syntax, and this template is Handlebars "
                     f"(write {{{{#if x}}}}...{{{{/if}}}}, {{{{#each xs}}}}...{{{{/each}}}}, or use "
                     f"engine='jinja2')", source, m.start())


def scan(source: str, known: set[str] | frozenset[str]) -> list[Tag]:
    """Tokenise and check ``source``; return its tags in order. ``known``: the helper names (a block
    over any other name is a section over a value). ``TemplateError`` with the real line and
    column at the first unclosed, unopened or mismatched form, or unsupported one."""
    _refuse_jinja(source)
    tags: list[Tag] = []
    stack: list[Tag] = []
    start = source.find("{{")
    while start >= 0:
        tag = _read_tag(source, start)
        tags.append(tag)
        if tag.kind == "expr":
            _classify(tag, source, stack, known)
        start = source.find("{{", tag.end)
    if stack:
        opened = stack[-1]
        raise _error(f"unclosed block '{{{{#{opened.name}}}}}': no matching "
                     f"'{{{{/{opened.name}}}}}'", source, opened.start)
    _mark_standalone(source, tags)
    return tags


_LONG_COMMENT_END = re.compile(r"--(~?)\}\}")


def _read_tag(source: str, start: int) -> Tag:
    """The tag at ``start`` (a comment, a triple stash or an ``expr`` to classify)."""
    if source.startswith("{{{{", start):
        raise _error("raw blocks ({{{{...}}}}) are not supported", source, start)
    strip_before = source.startswith("~", start + 2)
    p = start + 3 if strip_before else start + 2
    if source.startswith("!--", p):
        m = _LONG_COMMENT_END.search(source, p + 3)
        if not m:
            raise _error("unclosed comment: '{{!--' has no matching '--}}'", source, start)
        return Tag(start, m.end(), "comment", strip_before=strip_before,
                   strip_after=bool(m.group(1)))
    if source.startswith("!", p):
        end = source.find("}}", p + 1)
        if end < 0:
            raise _error("unclosed comment: '{{!' has no matching '}}'", source, start)
        return Tag(start, end + 2, "comment", strip_before=strip_before,
                   strip_after=source[end - 1] == "~" and end - 1 > p)
    triple = source.startswith("{", p)
    close = "}}}" if triple else "}}"
    body_start = p + 1 if triple else p
    end = source.find(close, body_start)
    nxt = source.find("{{", body_start)
    if end < 0 or (0 <= nxt < end):
        what = "'{{{' has no matching '}}}'" if triple else "'{{' has no matching '}}'"
        raise _error(f"unclosed mustache: {what}", source, start)
    inner = source[body_start:end]
    strip_after = inner.endswith("~")
    if strip_after:
        inner = inner[:-1]
    inner = inner.strip()
    if not inner:
        raise _error("empty mustache '{{}}'", source, start)
    return Tag(start, end + len(close), "triple" if triple else "expr", inner=inner,
               strip_before=strip_before, strip_after=strip_after)


def _classify(tag: Tag, source: str, stack: list[Tag], known: set[str] | frozenset[str]) -> None:
    """Set the kind of a ``{{...}}`` tag and check it against the open blocks."""
    inner, start = tag.inner, tag.start
    lead = inner[0]
    if lead in "#^" and inner != "^":
        _open_block(tag, source, known)
        stack.append(tag)
    elif lead == "/":
        _close_block(tag, source, stack)
    elif inner in ("else", "^") or re.match(r"else\s", inner):
        _else(tag, source, stack, known)
    elif lead == ">":
        tag.kind = "partial"
        m = _PARTIAL_NAME.match(inner[1:])
        if not m or (m.group(4) and not m.group(4)[:1].isspace()):
            raise _error(f"partial '{{{{{inner}}}}}': give the partial's name, e.g. "
                         f"'{{{{> header}}}}' (dynamic partials are not supported)", source, start)
        tag.name = m.group(1) or m.group(2) or m.group(3)
        tag.rest = m.group(4).strip()
    elif lead == "&":
        tag.kind = "amp"
        tag.rest = inner[1:].strip()
        if not tag.rest:
            raise _error("empty mustache '{{&}}'", source, start)


def _close_block(tag: Tag, source: str, stack: list[Tag]) -> None:
    tag.kind = "close"
    tag.name = tag.inner[1:].strip()
    if not stack:
        raise _error(f"'{{{{/{tag.name}}}}}' closes a block that was never opened",
                     source, tag.start)
    opened = stack.pop()
    if opened.name != tag.name:
        ol, oc = _line_col(source, opened.start)
        raise _error(f"'{{{{/{tag.name}}}}}' does not match the open block "
                     f"'{{{{#{opened.name}}}}}' from line {ol}, column {oc}", source, tag.start)
    tag.emit_name = opened.emit_name
    tag.chain = opened.chain


def _else(tag: Tag, source: str, stack: list[Tag], known: set[str] | frozenset[str]) -> None:
    """``{{else}}`` / ``{{^}}``, or an ``{{else name ...}}`` chain."""
    inner = tag.inner
    plain = inner in ("else", "^")
    if not stack:
        raise _error(f"'{{{{{'else' if plain else 'else ...'}}}}}' outside any block",
                     source, tag.start)
    if plain:
        tag.kind = "else"
        return
    tag.kind = "chain"
    if _named(tag, _NAME_RE.match(inner[4:]), known):
        raise _error(f"'{{{{{inner}}}}}': {tag.name!r} is not a helper", source, tag.start)
    stack[-1].chain.append(tag.emit_name)


def _named(tag: Tag, m: re.Match, known: set[str] | frozenset[str], section: str = "_section") -> bool:
    """Set a block tag's name, arguments and emitted name; whether it is a section given arguments."""
    tag.name, tag.rest = m.group(1), m.group(2).strip()
    tag.section = tag.name not in known
    tag.emit_name = section if tag.section else tag.name
    return bool(tag.section and tag.rest)


def _open_block(tag: Tag, source: str, known: set[str] | frozenset[str]) -> None:
    inner, lead = tag.inner, tag.inner[0]
    body = inner[1:]
    if body[:1] in ("*", ">"):
        raise _error(f"unsupported block '{{{{{inner}}}}}' (decorators and partial "
                     f"blocks are not supported)", source, tag.start)
    m = _NAME_RE.match(body)
    if not m:
        raise _error(f"block tag '{{{{{inner}}}}}' has no name", source, tag.start)
    tag.kind = "open" if lead == "#" else "inverse"
    if _named(tag, m, known, "_section" if lead == "#" else "_inverted"):
        raise _error(f"'{{{{{inner}}}}}': {tag.name!r} is not a helper, and a section "
                     f"over a value takes no arguments (helpers: "
                     f"{', '.join(sorted(known))})", source, tag.start)


def _mark_standalone(source: str, tags: list[Tag]) -> None:
    """Flag tags alone on their line (spaces and tabs aside), as the specs define it."""
    for tag in tags:
        if tag.kind in _STANDALONE_KINDS:
            start, end = tag.line(source)
            prefix, suffix = source[start:tag.start], source[tag.end:end].rstrip("\r\n")
            if not prefix.strip(" \t") and not suffix.strip(" \t"):
                tag.standalone, tag.indent = True, prefix


def _emit_tag(tag: Tag) -> str:
    k = tag.kind
    if k in ("comment", "expr", "amp", "triple", "else"):
        return {"comment": "", "expr": "{{" + tag.inner + "}}", "amp": "{{&" + tag.rest + "}}",
                "triple": "{{{" + tag.inner + "}}}", "else": "{{else}}"}[k]
    if k in ("open", "inverse", "chain"):
        prefix = "{{else}}" if k == "chain" else ""
        if tag.section:
            return prefix + "{{#" + tag.emit_name + " " + tag.name + "}}"
        mark = "^" if k == "inverse" else "#"
        return prefix + "{{" + mark + tag.name + (" " + tag.rest if tag.rest else "") + "}}"
    if k == "close":
        return "".join("{{/" + n + "}}" for n in reversed(tag.chain)) + "{{/" + tag.emit_name + "}}"
    args = " " + json.dumps(tag.name) + (" " + tag.rest if tag.rest else "")   # a partial
    if tag.standalone and tag.indent:
        args += " __indent=" + json.dumps(tag.indent)
    return "{{#_partial" + args + "}}{{/_partial}}"


def rewrite(source: str, tags: list[Tag]) -> str:
    """The canonical source pybars3 compiles (see the module doc)."""
    out: list[str] = []
    pos = 0
    prev: Tag | None = None
    for tag in tags + [None]:
        lo = prev.line(source)[1] if prev is not None and prev.standalone else pos
        hi = len(source) if tag is None else (tag.line(source)[0] if tag.standalone else tag.start)
        text = source[lo:hi] if hi > lo else ""
        if prev is not None and prev.strip_after:
            text = text.lstrip()
        if tag is not None and tag.strip_before:
            text = text.rstrip()
        if tag is not None and text.endswith("{"):
            # a brace right before a tag would turn it into a triple stash
            bare = text.rstrip("{")
            text = bare + "{{_lb}}" * (len(text) - len(bare))
        out.append(text)
        if tag is None:
            break
        out.append(_emit_tag(tag))
        pos = tag.end
        prev = tag
    return "".join(out)


_JINJA_HINT = re.compile(r"\||\w\(|\s[-+*/%]\s|==|!=|\bis\s+defined\b")


def locate_parse_error(source: str, tags: list[Tag]) -> TemplateError:
    """pybars3 reports the wrong line: parse tag by tag to find the culprit."""
    for tag in tags:
        if tag.kind in ("close", "else", "comment"):
            continue
        probe = _emit_tag(tag)
        if tag.kind == "chain":
            probe = probe[len("{{else}}"):]
        if tag.kind in ("open", "inverse", "chain"):
            probe += "{{/" + tag.emit_name + "}}"
        try:
            _, end = parse(probe)
        except Exception:
            end = -1
        if end < len(probe):
            text = source[tag.start:tag.end]
            hint = (" (filters, calls and operators are Jinja2 syntax; this template is "
                    "Handlebars: use helpers such as (eq a b), or engine='jinja2')"
                    if _JINJA_HINT.search(tag.inner) else "")
            return _error(f"invalid tag {text!r}{hint}", source, tag.start)
    return TemplateError("template could not be parsed")
