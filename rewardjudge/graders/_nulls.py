"""Hunt 36: a master key's label given a data notation's null on one line (``answer: null``, ``final_answer = None``,
``Result: nil``) shows a judge no answer, as ``{"answer": null}`` does not; written over several lines it is a document
(``_notation``) already. The screen (``_guards``) reads such a line as its label alone (``answer:``), which is content-free
where the label is master keys and filler.

The null is read so by its class, not by a list of texts: a notation's own null (``null``, ``nil``, ``undefined``, ``NULL``)
under any label; a word that is also English (``None``, ``N/A``) only under a label written as a data key (lower case
or snake case: ``answer: None``, ``final_answer: N/A``), since ``Answer: None`` may say "none" to "How many moons has
Venus?". Neither where the question holds code (``( ) [ ] { } ` ; =``) or the null's own word: ``Answer: null`` may be
what ``JSON.parse`` returns."""

from __future__ import annotations

import re

#: one line (blank around it aside): a label, ``:`` or ``=``, a null, a sentence's last mark or none
_NULL_LINE = re.compile(r"\A\s*(?P<label>[^\n:=\uff1a\uff1d]{1,64}?)[ \t]*[:=\uff1a\uff1d][ \t]*"
                        r"(?P<null>null|nil|undefined|none|n/?a|tb[da]|(?P<held>[<\[(]\s*(?:empty|blank|none|null|nothing|"
                        r"n/?a|tb[da]|answer|your answer|answer here|placeholder)\s*[>\])]))[ \t]*[.;,!]?\s*\Z", re.I)
#: the nulls that are no English word: under any label (a placeholder in brackets, ``<blank>``, ``[empty]``, too)
_NOTATION_NULLS = frozenset({"null", "nil", "undefined"})
#: a label written as a data key: no capital, or words joined by ``_`` or ``-``, quoted or not
_DATA_LABEL = re.compile(r"[\"']?(?:[^\W\dA-Z][^\WA-Z]*|[^\W\d]\w*[_-]\w+)[\"']?")
#: a question about code: the null may be its answer
_CODE = re.compile(r"[`(){}\[\];=]")
#: where a joined batch may hold one (``may_hold``)
_NULL_END = re.compile(r"[:=\uff1a\uff1d][ \t]*(?:null|nil|undefined|none|n/?a|tb[da]|[<\[(])", re.I)


def null_label(text: str, question: str = "") -> "str | None":
    """``text``'s label with ``:`` (``answer:``), where ``text`` is one line giving it a null of the class above, else
    None."""
    m = _NULL_LINE.match(text) if len(text) <= 128 else None
    if m is None:
        return None
    null, label = m["null"], m["label"].strip()
    word = null.lower().replace("/", "")
    if question and (_CODE.search(question) is not None or word in question.lower().replace("/", "")):
        return None
    if null.lower() not in _NOTATION_NULLS and m["held"] is None and _DATA_LABEL.fullmatch(label) is None:
        return None
    return label + ":"


def may_hold(joined: str) -> bool:
    """Whether one of the texts ``joined`` may be such a line (a search: few batches hold one)."""
    return _NULL_END.search(joined) is not None
