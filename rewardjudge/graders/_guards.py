"""Guards that run before a judge sees a completion: an empty or content-free one (blank
fillers, punctuation, a lone code fence, "master key" openers such as "Thought process:"),
or a structured one whose free-text fields all are, is penalized without a judge call.
Every check is linear in the text's length."""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Callable, Iterable

from ..readouts._text import free_joiner, letters

# Openers that carry no answer; matched on their letters and digits (``letters``)
MASTER_KEYS: frozenset[str] = frozenset({
    "thought process", "let's solve this problem step by step", "let's think step by step",
    "solution", "answer", "the answer is", "step 1", "reasoning", "explanation", "response",
    "final answer", "here is the answer", "here's the answer", "i think", "sure",
    "boxed",                                   # an empty \boxed{}
    "tool call",                               # the frame of a tool call (thread.tool_call_text)
    # the multilingual master keys of "One Token to Fool LLM-as-a-Judge" (2025), and kin
    "解", "解答", "答案", "答", "かいせつ", "解説", "respuesta", "solución", "réponse", "antwort",
    "lösung", "ответ", "решение",
    # "answer", "solution", "thought process" in more languages
    "回答", "答え", "解析", "解题思路", "思考过程", "정답", "답", "풀이", "해답", "उत्तर", "हल", "الإجابة", "الحل",
    "resposta", "solução", "risposta", "soluzione", "lösungsweg", "antwoord", "oplossing", "svar", "lösning",
    "odpowiedź", "rozwiązanie", "cevap", "çözüm", "jawaban", "penyelesaian", "trả lời", "lời giải", "đáp án",
    "απάντηση", "λύση", "תשובה", "פתרון",
    # openers that announce reasoning to come
    "step by step", "let me think", "lets think", "let me solve", "lets solve",
    # hunt 20: reasoning announced, in English and in the languages of the keys above
    "thought", "thoughts", "thinking", "thinking process", "reasoning process", "chain of thought",
    "break this down", "break it down",
    "जवाब", "समाधान", "चरण दर चरण", "आइए चरण दर चरण सोचते हैं", "चरण दर चरण सोचते हैं", "الجواب", "جواب", "پاسخ", "خطوة بخطوة",
    "لنفكر خطوة بخطوة", "шаг за шагом", "давайте подумаем шаг за шагом", "давайте решим шаг за шагом",
    "давайте решим эту задачу шаг за шагом", "문제를 단계별로 풀어봅시다",
    "відповідь", "розвязання", "крок за кроком", "ステップバイステップ", "ステップバイステップで考えましょう",
    "段階的に考えましょう", "답변", "해결", "단계별로", "단계별로 생각해 봅시다", "yanıt", "adım adım",
    "adım adım düşünelim", "câu trả lời", "từng bước", "hãy suy nghĩ từng bước", "langkah demi langkah",
    "mari berpikir langkah demi langkah", "jawapan", "jibu", "suluhisho", "hatua kwa hatua",
    "tufikirie hatua kwa hatua", "sagot", "উত্তর", "คำตอบ", "பதில்", "étape par étape",
    "réfléchissons étape par étape", "paso a paso", "pensemos paso a paso", "schritt für schritt",
    "denken wir schritt für schritt", "passo a passo", "vamos pensar passo a passo", "passo dopo passo",
    "让我们一步一步地思考", "一步一步", "逐步", "思考過程", "解題思路", "思路",
})

#: words an opener wraps its master keys in (``Sure, here is the solution:``, ``Let me think step by
#: step.``): no content beside a master key; without one they may be the answer (``Okay.``)
_FILLER = frozenset({
    "let", "lets", "letme", "letus", "ill", "will", "here", "heres", "is", "my", "our", "the", "this", "below",
    "first", "well", "think", "solve", "problem", "question", "carefully", "step", "steps",
    "by", "following", "see", "then", "and", "final", "full", "complete", "detailed", "short", "brief",
    "okay", "alright", "hmm", "of", "course", "certainly", "absolutely",   # hunt 20 ("so": "I think so." answers)
})

# Nothing a reader sees: whitespace, fillers that render blank, zero-width characters
_BLANK = re.compile("[\\s\u3164\u2800\u115f\u1160\uffa0\u17b4\u17b5\u034f\u180e\u00ad"
                    "\u200b-\u200f\u2028-\u202f\u205f-\u206f\ufeff\ufe00-\ufe0f]*")

# Markdown that is no answer by itself: a code fence and its language
_MARKUP = re.compile(r"`{3,}[^`\x00-\x1f]*|~{3,}[^~\x00-\x1f]*")
# A tag; the tags of a name both opened and closed in the text are markup too (``<think></think>``
# alone, ``<b>Answer</b>``, reached the judge); a lone one (``<br>``, ``</candidate>``) may be the answer,
# but where some tag pairs, a self-closed or void one is markup too (``<p></p><br/><hr>``)
_TAG = re.compile(r"<(/?)([A-Za-z_][\w:.-]{0,63})(?:\s[^<>]{0,256})?(/?)>")
#: HTML's void elements (never closed): markup beside a tag that pairs
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                   "track", "wbr"})


#: LaTeX that shows no text of its own: font and style commands (``\\text{Thought process:}`` shows
#: ``Thought process:``), spacing (``$\\quad$``), sizing, an environment's frame; a command that
#: is a symbol (``\\pi``, ``\\infty``) may be the answer and stays (the pattern: ``_latex``)
_LATEX_COMMANDS = (
    "text", "textbf", "textit", "textrm", "texttt", "textsf", "textup", "textsc", "textsl", "textmd", "textnormal",
    "mathrm", "mathbf", "mathit", "mathsf", "mathtt", "mathnormal", "emph", "underline", "bold", "boldsymbol", "bm",
    "mbox", "hbox", "fbox", "textstyle", "displaystyle", "scriptstyle", "quad", "qquad", "enspace", "thinspace",
    "left", "right", "big", "bigl", "bigr", "Big", "Bigl", "Bigr", "bigg", "biggl", "biggr", "Bigg", "Biggl", "Biggr",
    "newline", "linebreak", "noindent", "par", "hfill", "vfill", "medskip", "smallskip", "bigskip", "centering",
    "large", "Large", "LARGE", "huge", "Huge", "small", "footnotesize", "normalsize", "tiny", "bfseries", "itshape",
    "rmfamily", "ttfamily", "sffamily")
#: a backslash before a letter that may start a command (the pattern tried only where one stands)
_LATEX_HINT = re.compile(r"\\[BHLb-fhilmnpqrstuv]")
#: symbols written for the letters they look like (``pr0c3$$``, ``@nswer``), as the digits
#: ``_LOOKALIKE_DIGITS`` match: a text holding one is also read with them so (``$$`` alone stays none)
_LEET_DIGITS = {"$": "5", "@": "4", "!": "1", "\u20ac": "3"}


#: whether a text holds a ``_LEET_DIGITS`` symbol (a bound method: no Python frame per text)
_leet = re.compile("[" + re.escape("".join(_LEET_DIGITS)) + "]").search


def _as_digits(text: str) -> str:
    """``text`` with each ``_LEET_DIGITS`` symbol as its digit: a ``str.replace`` per symbol (no
    digit is a symbol), each in C; a translation table looked up every character of a text outside
    ASCII (20 ms in 256 KiB)."""
    for symbol, digit in _LEET_DIGITS.items():
        if symbol in text:
            text = text.replace(symbol, digit)
    return text


def _unmarked(text: str, tags: bool = True) -> str:
    """``text`` with its markup (``_MARKUP``, paired ``_TAG``-s unless not ``tags``,
    ``_LATEX_COMMANDS``) set aside as spaces."""
    if "`" in text or "~" in text:
        text = _MARKUP.sub(" ", text)
    if "\\" in text and _LATEX_HINT.search(text):
        text = _latex().sub(" ", text)
    if not tags or "<" not in text:
        return text
    found: "tuple[set[str], set[str]]" = (set(), set())
    for slash, name, _ in _TAG.findall(text):
        found[bool(slash)].add(name.casefold())
    paired = found[0] & found[1]
    return _TAG.sub(lambda m: " " if m.group(3) or m.group(2).casefold() in paired or m.group(2).casefold() in _VOID
                    else m.group(), text) if paired else text


#: the longest text quoted in a reason
_SHOWN = 40


#: digits written for the letters they look like (``Th0ught pr0cess``): a key's letter matches either
_LOOKALIKE_DIGITS = {"o": "0", "i": "1", "l": "1", "z": "2", "e": "3", "a": "4", "s": "5", "g": "9",
                     "t": "7", "b": "8"}


def _chars(form: str) -> "list[str]":
    """A master key's ``letters`` form as one pattern per character: a letter also matches the
    digit that looks like it."""
    return [f"[{c}{_LOOKALIKE_DIGITS[c]}]" if c in _LOOKALIKE_DIGITS else re.escape(c) for c in form]


def _trie(words: "Iterable[list[str]]") -> str:
    """One pattern matching any of ``words`` (lists of character patterns), the longest where
    several match; shared prefixes are tried once (a text's every position tries a few
    characters, not every word)."""
    root: dict = {}
    for word in words:
        node = root
        for c in word:
            node = node.setdefault(c, {})
        node[""] = {}

    def emit(node: dict) -> str:
        alts = [c + emit(child) for c, child in sorted(node.items()) if c]
        body = alts[0] if len(alts) == 1 and "" not in node else "(?:" + "|".join(alts) + ")"
        return "" if not alts else body + "?" if "" in node else body

    return emit(root)


@functools.lru_cache(maxsize=1)
def _latex() -> "re.Pattern[str]":
    """``_LATEX_COMMANDS`` (their names as one trie: a backslash tries a few characters, not every
    name), an environment's ``\\begin{...}``/``\\end{...}``, a space's ``\\hspace{...}``, a colour."""
    return re.compile(r"\\(?:(?:begin|end)\s{0,8}\{[\w*]{1,32}\}|[hv]space\*?\s{0,8}\{[\w.\-]{0,32}\}"
                      r"|color\s{0,8}\{\w{1,32}\}|" + _trie(list(w) for w in _LATEX_COMMANDS) + r")(?![A-Za-z])")


def _key_forms(extra_keys: tuple[str, ...]) -> "set[str]":
    return {letters(k) for k in (*MASTER_KEYS, *extra_keys) if isinstance(k, str)} - {""}


#: filler words in a row, at most: a text of filler alone fails in a few steps, not a pass
_FILLER_RUN = 8
#: numbered steps' headers, two or more in a row, in ``letters`` form (``Step 1: Step 2: Step 3:`` is no answer;
#: ``Step 7`` alone may be one)
_STEP = "(?:" + "".join(_chars("step")) + r"\d{1,3}(?!\d)){2,}"
#: the fewest letters and digits of a question that ``content_free_reason`` takes out of an answer (``Hello``
#: answered ``Hello!`` is a reply)
_ECHO_MIN = 12


def _echo(question: str) -> str:
    """The ``letters`` of ``question`` an answer that only repeats it holds, or "" where too short to tell."""
    found = letters(question) if isinstance(question, str) and question else ""
    return found if len(found) >= _ECHO_MIN else ""


@functools.lru_cache(maxsize=64)
def _opener_pattern(extra_keys: tuple[str, ...]) -> "re.Pattern[str]":
    """Master keys in ``letters`` form, at least one, with up to ``_FILLER_RUN`` filler words
    (where no key matches) before and after each, at a text's start. Each word is taken whole
    (an atomic group: a failed run never tries other splits), the longest that matches."""
    keys, filler = _trie(map(_chars, _key_forms(extra_keys))), _trie(list(w) for w in _FILLER)
    keys = f"(?:{_STEP}|{keys})"   # numbered step headers first: ``step 12`` is one, not ``step 1`` and 2
    # atomic groups: a word, a run of filler and the run of keys are never given back (no split
    # but the first could end later, so the match is the same), and no state is kept to give
    # them back (a text of 262,144 one-character keys: 155 -> 80 ms)
    fillers = f"(?>(?:(?!{keys})(?>{filler})){{0,{_FILLER_RUN}}})"   # a key first, where one matches
    return re.compile(f"{fillers}(?:(?>{keys}){fillers})++")


def _only_keys(found: str, extra_keys: tuple[str, ...]) -> bool:
    """Whether ``found`` (``letters`` of a text) is master keys, one or several, and ``_FILLER``
    words around them."""
    return _whole(_opener_pattern(extra_keys).match(found), found)


def _whole(run: "re.Match[str] | None", found: str) -> bool:
    return run is not None and run.end() == len(found)


def _content_free_flags(texts: "list[str]", keys: tuple[str, ...], question: str = "") -> "list[bool]":
    """Whether each text is empty or content-free (``content_free_reason``), in passes over the
    texts joined (``_free_flags``: 30,000 short strings cost a few passes, not 30,000 calls); with
    ``question``, the texts holding its letters (one pass) are read again less them (``_echo``)."""
    flags = _free_flags(texts, keys)
    if flags is None:
        return [content_free_reason(t, keys, question) is not None for t in texts]
    echo = _echo(question)
    if echo and not all(flags):
        joiner = free_joiner(texts)
        pieces = letters(_unmarked(joiner.join(texts), tags=False), keep=joiner).split(joiner) \
            if joiner is not None else []
        for i, t in enumerate(texts):
            if not flags[i] and (len(pieces) != len(texts) or echo in pieces[i]):
                flags[i] = content_free_reason(t, keys, question) is not None
    # texts with content holding a look-alike symbol: read again with it as a digit, joined too
    leet = [i for i, t in enumerate(texts) if not flags[i] and _leet(t)] if _leet("".join(texts)) else []
    if leet:   # (the texts joined by a control character, which no symbol stands for)
        read = _as_digits("\x00".join([texts[i] for i in leet])).split("\x00") \
            if not any("\x00" in texts[i] for i in leet) else [_as_digits(texts[i]) for i in leet]
        again = _free_flags(read, keys) or [bool(_free(t, keys)) for t in read]
        for i, free in zip(leet, again):
            flags[i] = free
    # texts with content that are JSON documents of content-free strings (``_json_free``)
    docs = [i for i, t in enumerate(texts) if not flags[i] and _document(t)] if '"' in "".join(texts) else []
    for i, free in zip(docs, _json_free([texts[i] for i in docs], keys) if docs else []):
        flags[i] = free
    return flags


def _free_flags(texts: "list[str]", keys: tuple[str, ...]) -> "list[bool] | None":
    """``[_free(t, keys) for t in texts]``, each step a pass over the texts joined (a regex over
    the whole, then a test per text: 40,000 texts of master keys, each with a colon or under a
    right-to-left override, took 300-400 ms text by text); None where they cannot be joined."""
    joiner = free_joiner(texts)
    if joiner is None:
        return None
    # a text's tags pair within it only: a lone ``<b>`` is no markup for a ``</b>`` in another
    unmarked = _unmarked(joiner.join([_unmarked(t) if "<" in t else t for t in texts]), tags=False)
    found = letters(unmarked, keep=joiner)
    if found.count(joiner) != len(texts) - 1:
        return None
    pieces = found.split(joiner)
    only = _keys_only(pieces, joiner, keys)
    flags = [not piece or keyed for piece, keyed in zip(pieces, only)]
    # master keys, then an answer after the last colon?
    ask = [i for i, keyed in enumerate(only) if keyed and (":" in texts[i] or "\uff1a" in texts[i])]
    if ask:
        shown = unmarked.split(joiner)
        for i, said in zip(ask, _answered_each([shown[i] for i in ask], joiner, keys)):
            flags[i] = not said
    # shown reversed (a right-to-left override): its letters read backwards
    turned = [i for i, t in enumerate(texts) if not flags[i] and "\u202e" in t] \
        if "\u202e" in "".join(texts) else []
    for i, back in zip(turned, _keys_only([pieces[i][::-1] for i in turned], joiner, keys)):
        flags[i] = back
    return flags


@functools.lru_cache(maxsize=64)
def _whole_openers(keys: tuple[str, ...], joiner: str) -> "tuple[re.Pattern[str], re.Pattern[str]]":
    """``_opener_pattern`` at the start of each text joined by ``joiner``, taken as it is (an atomic
    group: what ``match`` takes, no other split): anywhere, then only where it ends the text. A
    text whose first character starts no key, filler word or look-alike digit fails at once."""
    firsts = {w[0] for w in (*_key_forms(keys), *_FILLER)}
    firsts |= {_LOOKALIKE_DIGITS[c] for c in firsts if c in _LOOKALIKE_DIGITS}
    starts = "[" + "".join(map(re.escape, sorted(firsts))) + "]"
    at_start = rf"(?:(?<={re.escape(joiner)})|^)(?={starts})(?>{_opener_pattern(keys).pattern})"
    return re.compile(at_start), re.compile(at_start + rf"(?={re.escape(joiner)}|\Z)")


def _keys_only(pieces: "list[str]", joiner: str, keys: tuple[str, ...]) -> "list[bool]":
    """For each of ``pieces`` (``letters`` of texts; none holds ``joiner``): whether it is master
    keys and filler (``_only_keys``): one substitution over the distinct ones joined (texts
    differing by their symbols alone have the same letters), then what is left of each."""
    distinct = list(dict.fromkeys(pieces))
    whole = _whole_openers(keys, joiner)[1]
    if 2 * len(distinct) > len(pieces):   # few alike: no table
        left = whole.sub("", joiner.join(pieces)).split(joiner)
        return [bool(piece) and not rest for piece, rest in zip(pieces, left)]
    left = whole.sub("", joiner.join(distinct)).split(joiner)
    only = {piece: bool(piece) and not rest for piece, rest in zip(distinct, left)}
    return [only[piece] for piece in pieces]


#: the letters a text of ``_answered_each`` is cut to where an opener starts them
_OPENED = "\x00"


def _answered_each(unmarked: "list[str]", joiner: str, keys: tuple[str, ...]) -> "list[bool]":
    """``_answered`` of each of ``unmarked`` (texts with their markup set aside, none holding
    ``joiner``) whose letters are master keys and filler: each cut to what follows its last colon
    (one substitution over them joined; a text without one is left whole, and an opener starts its
    letters, as ``_answered`` finds no answer there), their letters in one pass, then whether an
    opener starts each (one substitution)."""
    j = re.escape(joiner)
    tails = re.sub(rf"(?:(?<={j})|^)[^{j}]*[:\uff1a]", "", joiner.join(unmarked))
    pieces = letters(tails, keep=joiner).split(joiner)
    distinct = list(dict.fromkeys(pieces))
    opened = _whole_openers(keys, joiner)[0].sub(_OPENED, joiner.join(distinct)).split(joiner)
    said = {tail: bool(tail) and cut[0] != _OPENED for tail, cut in zip(distinct, opened)}
    return [said[tail] for tail in pieces]


def _document(text: str) -> bool:
    """Whether ``text`` may be a JSON document with a string in it, from end to end or fenced."""
    if '"' not in text:
        return False
    ends = text.strip()
    return ends[:1] in ("{", "[", "`", "~") and ends[-1:] in ("}", "]", "`", "~")


def _json_free(texts: "list[str]", keys: tuple[str, ...]) -> "list[bool]":
    """Whether each of ``texts`` (``_document``-s) is a JSON object or array that ``content_free_fields``
    finds content-free, as a structured completion without a model is read (every string free text, keys
    not): ``{"answer": "", "sure": true, "score": 10}`` shows a judge no answer, as the same fields of a
    ``completion_model`` do not. The strings of all in one ``_content_free_flags``. Linear."""
    held: "list[tuple[list[str], bool] | None]" = []   # each document's strings, and whether a value stands
    bodies = [t.strip() for t in texts]
    bodies = [b if b[0] in "{[" else _unmarked(b, tags=False).strip() for b in bodies]   # fenced: the fence aside
    for value in _loaded(bodies):
        if not isinstance(value, (dict, list)):
            held.append(None)
            continue
        strings: "list[str]" = []
        other, stack = False, [value]
        while stack:
            node = stack.pop()
            if isinstance(node, str):
                strings.append(node)
            elif isinstance(node, dict):
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
            elif node is not None:   # a number or a bool: the answer where no string stands beside it
                other = True
        held.append((strings, other))
    distinct = list(dict.fromkeys(t for doc in held if doc for t in doc[0] if t))
    if len(held) == 1 and len(distinct) > _FIRST and not all(_content_free_flags(distinct[:_FIRST], keys)):
        return [False]   # one document's first texts carry content (most do): the rest need no reading
    free = dict(zip(distinct, _content_free_flags(distinct, keys) if distinct else []))
    return [doc is not None and (all(not t or free[t] for t in doc[0]) if doc[0] else not doc[1]) for doc in held]


#: the texts of one JSON document ``_json_free`` reads before the rest
_FIRST = 8


def _loaded(bodies: "list[str]") -> list:
    """Each of ``bodies`` read as JSON, or None (one ``json.loads`` each: documents joined into one array
    could read as other documents, a body cut in two, the next merged)."""
    out = []
    for body in bodies:
        try:
            out.append(json.loads(body) if body[:1] in ("{", "[") else None)
        except (ValueError, RecursionError):   # not JSON, nested too deep, or an integer past Python's limit
            out.append(None)
    return out


def _answered(unmarked: str, keys: tuple[str, ...], echo: str = "") -> bool:
    """Whether words follow the last colon of a text (``unmarked``: ``_unmarked``) that are no master
    key (nor the question's ``echo``): filler there (``Answer: the``, ``Solution: below``) is the answer,
    not an opener's."""
    at = max(unmarked.rfind(":"), unmarked.rfind("\uff1a"))
    tail = letters(unmarked[at + 1:]) if at >= 0 else ""
    tail = tail.replace(echo, "") if echo else tail
    return bool(tail) and _opener_pattern(keys).match(tail) is None


def _free(text: str, keys: tuple[str, ...], echo: str = "") -> "str | None":
    """``"free"`` where ``text`` (visible) holds no letter or digit once markup is set aside, or master keys
    and filler only, with no answer after their last colon (or under a right-to-left override, shown
    reversed); ``"echo"`` where it does once the question's ``echo`` (its ``letters``) is set aside too;
    else None. One pass over the text for both."""
    unmarked = _unmarked(text)
    found = letters(unmarked)
    if _bare(text, unmarked, found, keys, ""):
        return "free"
    if echo and echo in found and _bare(text, unmarked, found.replace(echo, ""), keys, echo):
        return "echo"
    return None


def _bare(text: str, unmarked: str, found: str, keys: tuple[str, ...], echo: str) -> bool:
    """``_free``'s test of ``found``, the letters of ``text`` (``unmarked``: its markup set aside) less ``echo``."""
    return not found or (_only_keys(found, keys) and not _answered(unmarked, keys, echo)) \
        or ("\u202e" in text and _only_keys(found[::-1], keys))


def content_free_reason(text: str, extra_keys: Iterable[str] = (), question: str = "", *,
                        as_json: bool = True) -> str | None:
    """Why ``text`` carries no content (empty: nothing visible; content-free: no letter or
    digit once code fences are set aside, or nothing but master keys and filler words around
    them, or ``question`` repeated with nothing else but those, or, with ``as_json``, a JSON
    document whose fields are: ``_json_free``), or None if it does. ``as_json`` is False where
    a ``completion_model`` reads the text (its schema tells which fields and keys are free text).

    >>> content_free_reason("  \\u200b\\u3164 ")
    'empty completion'
    >>> content_free_reason("Thought  process:")
    "content-free completion: 'Thought  process:'"
    >>> content_free_reason("Paris.") is None
    True
    """
    if not isinstance(text, str):
        return "completion is not text"
    if _BLANK.fullmatch(text):
        return "empty completion"
    keys = tuple(extra_keys)
    echo = _echo(question)
    how = _free(text, keys, echo) or (_leet(text) and _free(_as_digits(text), keys, echo)) \
        or (as_json and _document(text) and _json_free([text], keys)[0] and "free")
    if not how:
        return None
    what = "it only repeats the question " if how == "echo" else ""
    return f"content-free completion: {what}{text.strip()[:_SHOWN]!r}"


@functools.lru_cache(maxsize=256)
def _schema_of(model: Any) -> "tuple[dict, dict, dict] | None":
    """``model``'s JSON schema (as ``model_dump(mode="json")`` writes it), its
    ``$defs`` and the ``_Field`` of each of its nodes met so far (by the node's
    id: the schema keeps them alive); None when it has no schema."""
    try:   # its names as the dump writes them: an alias (``Field(alias="conf")``) is no property there
        schema = model.model_json_schema(by_alias=bool(model.model_config.get("serialize_by_alias")),
                                         mode="serialization")
    except Exception:   # a field type without a JSON schema: every string is free text
        return None
    return (schema, schema.get("$defs") or {}, {}) if isinstance(schema, dict) else None


_MAX_BRANCHES = 64   # schema steps followed for one node ($ref, anyOf): a recursive model loops


def _branches(node: Any, defs: dict) -> list[dict]:
    """The alternatives a schema node allows, with ``$ref``, ``anyOf``/``oneOf``
    and a one-item ``allOf`` followed (at most ``_MAX_BRANCHES`` steps)."""
    out: list[dict] = []
    todo = [node]
    for _ in range(_MAX_BRANCHES):
        if not todo:
            break
        node = todo.pop()
        if not isinstance(node, dict):
            out.append({})
        elif isinstance(node.get("$ref"), str) and node["$ref"].startswith("#/$defs/"):
            target = defs.get(node["$ref"][len("#/$defs/"):])
            todo.append({**(target if isinstance(target, dict) else {}),
                         **{k: v for k, v in node.items() if k != "$ref"}})
        elif isinstance(node.get("anyOf") or node.get("oneOf"), list):
            todo.extend(reversed(node.get("anyOf") or node.get("oneOf")))
        elif isinstance(node.get("allOf"), list) and len(node["allOf"]) == 1 and isinstance(node["allOf"][0], dict):
            todo.append({**{k: v for k, v in node.items() if k != "allOf"}, **node["allOf"][0]})
        else:
            out.append(node)
    return out or [{}]


def _types(branch: dict) -> set:
    t = branch.get("type")
    return set(t) if isinstance(t, list) else {t} if isinstance(t, str) else set()


class _Field:
    """What a schema node says about the strings at its place: choices (an enum,
    a const), free text (a str, or a value the schema does not describe) or a
    formatted value (a date, a UUID); and the nodes of its children."""

    __slots__ = ("node", "branches", "choices", "free", "free_none", "formatted", "uniform", "free_keys")

    def __init__(self, node: Any, defs: dict):
        self.node = node   # kept alive: fields are looked up by the node's id
        self.branches = _branches(node, defs)
        plain = [b for b in self.branches if "enum" not in b and "const" not in b]
        strings = [b for b in plain if "string" in _types(b)]
        self.choices = frozenset(v for b in self.branches if "enum" in b or "const" in b
                                 for v in (b["enum"] if isinstance(b.get("enum"), list) else [b.get("const")])
                                 if isinstance(v, str))
        self.free_none = any("format" not in b for b in strings)   # None stands for unset free text
        self.free = self.free_none or any(not _types(b) for b in plain)
        self.formatted = any("format" in b for b in strings)
        self.uniform = not any(isinstance(b.get("prefixItems"), list) for b in self.branches)
        # an object whose keys the policy names (``dict[str, str]``): its keys are text it wrote
        self.free_keys = any((b.get("additionalProperties") is True or isinstance(b.get("additionalProperties"), dict))
                             and not _named_keys(b.get("propertyNames")) for b in self.branches)

    def key_free(self, key: str) -> bool:
        """Whether ``key`` of an object at this place is free text (not a property the schema names)."""
        return self.free_keys and not any(isinstance(b.get("properties"), dict) and key in b["properties"]
                                          for b in self.branches)

    def kind(self, text: "str | None") -> str:
        """``"free"`` text, a ``"choice"``, a ``"value"`` (a formatted string), or
        ``"none"`` (None where no free text goes)."""
        if text is None:
            return "free" if self.free_none else "none"
        if text in self.choices:
            return "choice"
        return self.other_text

    @property
    def other_text(self) -> str:
        """The kind of a text that is none of the choices."""
        return "free" if self.free or not (self.formatted or self.choices) else \
            "value" if self.formatted else "choice"

    def free_texts(self, texts: "Iterable[str]") -> "list[str]":
        """Those of ``texts`` whose kind is ``"free"``, in order (``kind`` of each, in one pass)."""
        if self.other_text != "free":
            return []
        return [t for t in texts if t not in self.choices] if self.choices else list(texts)

    def child(self, key: Any) -> Any:
        """The schema node of ``key`` (a property name or an item index)."""
        for b in self.branches:
            if isinstance(key, str):
                props, extra = b.get("properties"), b.get("additionalProperties")
                if isinstance(props, dict) and key in props:
                    return props[key]
                if isinstance(extra, dict):
                    return extra
            else:
                prefix, items = b.get("prefixItems"), b.get("items")
                if isinstance(prefix, list) and key < len(prefix):
                    return prefix[key]
                if isinstance(items, dict):
                    return items
        return _ANY


def _named_keys(node: Any) -> bool:
    """Whether a ``propertyNames`` schema restricts keys to choices or formatted values."""
    return isinstance(node, dict) and any(k in node for k in ("enum", "const", "format"))


#: the place of a key the policy names: free text
_KEY = _Field({"type": "string"}, {})

#: the node of a value the schema does not describe (and the root without a schema)
_ANY: dict = {}
_NO_SCHEMA: "tuple[dict, dict, dict]" = (_ANY, {}, {})


class _Texts:
    """What ``_free_texts`` finds: the path and text of the first free-text field, every
    distinct non-empty text, whether a choice or another value stands beside them, whether
    one of them is empty."""

    def __init__(self) -> None:
        self.first: "tuple[tuple, str | None] | None" = None
        self.texts: dict[str, None] = {}
        self.other = self.blank = False

    def take(self, f: _Field, text: "str | None", path: "Callable[[], tuple]") -> None:
        kind = f.kind(text)
        if kind == "free":
            self.first = self.first or (path(), text)
            if text:
                self.texts[text] = None
            else:
                self.blank = True
        elif kind != "none":
            self.other = True

    def take_all(self, f: _Field, texts: "list[str]", path: "Callable[[str], tuple]") -> None:
        """``take`` of each of ``texts`` (distinct strings), in one pass: a list may hold 40,000."""
        free = f.free_texts(texts)
        self.other = self.other or len(free) < len(texts)
        if free:
            self.first = self.first or (path(free[0]), free[0])
            self.texts.update(dict.fromkeys(free))
            if "" in self.texts:
                del self.texts[""]
                self.blank = True


def _field(fields: dict, sch: Any, defs: dict) -> _Field:
    return fields.get(id(sch)) or fields.setdefault(id(sch), _Field(sch, defs))


def _list_items(node: list, f: _Field, path: tuple, fields: dict, defs: dict, found: _Texts) -> list:
    """The items of a list to walk; the strings of a list with one schema for every item
    are taken here, once each."""
    strings = [v for v in node if type(v) is str] if f.uniform else []
    if strings:
        found.take_all(_field(fields, f.child(0), defs), list(dict.fromkeys(strings)),
                       lambda t: (*path, node.index(t)))
    if len(strings) == len(node):
        return []
    return [(v, f.child(i), (*path, i)) for i, v in enumerate(node) if not (strings and type(v) is str)]


def _free_texts(value: Any, schema: "tuple[dict, dict, dict] | None"
                ) -> "tuple[tuple[tuple, str | None] | None, list[str], bool, bool]":
    """The free-text fields of ``value``: ``(path and text of the first one, every
    distinct non-empty text, whether a choice or another value stands beside
    them, whether one of them is empty)``. The strings of a list with one schema
    for every item are looked at once each. Iterative: nesting cannot exhaust the stack."""
    root, defs, fields = schema if schema is not None else _NO_SCHEMA
    found = _Texts()
    stack: list[tuple[Any, Any, tuple]] = [(value, root, ())]
    while stack:
        node, sch, path = stack.pop()
        f = _field(fields, sch, defs)
        if isinstance(node, dict):
            if f.free_keys:
                for k in node:
                    if isinstance(k, str) and f.key_free(k):
                        found.take(_KEY, k, lambda p=path, k=k: (*p, k))
            stack.extend(reversed([(v, f.child(k), (*path, k)) for k, v in node.items()]))
        elif isinstance(node, list):
            stack.extend(reversed(_list_items(node, f, path, fields, defs, found)))
        elif isinstance(node, str) or node is None:
            found.take(f, node, lambda p=path: p)
        else:
            found.other = True
    return found.first, list(found.texts), found.other, found.blank


def _path(keys: tuple) -> str:
    out = ""
    for key in keys:
        out += f"[{key}]" if isinstance(key, int) else f".{key}" if out else str(key)
    return out or "completion"


def content_free_fields(value: Any, extra_keys: Iterable[str] = (), model: Any = None) -> str | None:
    """Why a parsed structured completion (``value``: its ``model_dump(mode="json")``; ``model``:
    its class, which tells free-text fields from choices) carries no content, or None: every
    free-text field is empty or content-free, or without one, it holds no value at all.
    Without ``model`` every string counts as free text.

    >>> content_free_fields({"answer": "", "confidence": "high"}) is None   # "high" is text too
    True
    """
    return screen_fields(value, extra_keys, model)[0]


def screen_fields(value: Any, extra_keys: Iterable[str] = (), model: Any = None, whole: Any = None,
                  question: str = "") -> "tuple[str | None, Any]":
    """``(content_free_fields(...), blank)``: ``blank`` is None unless the free-text fields are
    mixed, some carrying content and some empty or content-free; then it is ``value`` with every
    free-text field (or key of a free mapping) that carries content blanked to ``"-"``-s, which a
    grader renders to learn whether the judge is shown any content (a master key in the field
    shown, the content in one never shown or only tested). ``whole``: the value ``value`` is part
    of (the completion's JSON object, of which a binding reads the fields ``value``), blanked
    instead (its texts equal to one of ``value`` that carries content). ``question``: a field that only
    repeats it carries no content (``content_free_reason``).

    >>> screen_fields({"answer": "Let's think step by step.", "notes": "Paris"})[1]
    {'answer': "Let's think step by step.", 'notes': '-----'}
    """
    keys = tuple(extra_keys)
    schema = _schema_of(model) if isinstance(model, type) else None
    first, texts, other, blank = _free_texts(value, schema)
    if first is None:   # no free-text field
        return (None if other else "structured completion holds no value"), None
    flags = _content_free_flags(texts, keys, question) if texts else []
    if not all(flags):
        if not blank and not any(flags):
            return None, None   # every free-text field carries content: the common case
        rich = {t for t, free in zip(texts, flags) if not free}
        return None, _blanked(value, schema, rich) if whole is None else _blanked(whole, None, rich)
    path, text = first
    reason = content_free_reason(text, keys, question) if text else "empty"
    which = "free-text" if schema is not None else "text"
    return f"every {which} field is empty or content-free ({_path(path)}: {reason})", None


#: what a free-text field that carries content is blanked to, once per character: no content, but
#: as long, so a template's test of the field (``{{#if notes}}``, ``{% if notes|length > 20 %}``)
#: takes the same branch
_PLACEHOLDER = "-"


def _blanked(value: Any, schema: "tuple[dict, dict, dict] | None", rich: "set[str]") -> Any:
    """A copy of ``value`` with each free-text string in ``rich`` (a value, or a key the policy
    names) blanked to ``_PLACEHOLDER``-s (as many as it has characters; a key, one and its
    position, as keys stay distinct). Iterative."""
    root, defs, fields = schema if schema is not None else _NO_SCHEMA
    holder = [value]
    stack: list[tuple[Any, Any, Any]] = [(holder, 0, root)]
    blanks: "dict[int, set[str]]" = {}   # a list item's field (by id: ``fields`` keeps it) -> texts blanked
    while stack:
        parent, key, sch = stack.pop()
        node = parent[key]
        f = _field(fields, sch, defs)
        if isinstance(node, dict):
            copy: Any = {}
            for k, v in node.items():
                if isinstance(k, str) and k in rich and f.key_free(k):
                    shown = _PLACEHOLDER + str(len(copy))   # keys stay distinct
                    while shown in node or shown in copy:
                        shown += _PLACEHOLDER
                    copy[shown] = v
                    stack.append((copy, shown, f.child(k)))
                else:
                    copy[k] = v
                    stack.append((copy, k, f.child(k)))
        elif isinstance(node, list):
            copy = list(node)
            if f.uniform and copy:   # one schema for every item: its strings blanked here (40,000 of them)
                item_sch = f.child(0)
                item = _field(fields, item_sch, defs)
                free = blanks.get(id(item))
                if free is None:
                    free = blanks[id(item)] = set(item.free_texts(rich))
                copy = [_PLACEHOLDER * len(v) if isinstance(v, str) and v in free else v for v in copy]
                stack.extend((copy, i, item_sch) for i, v in enumerate(copy) if isinstance(v, (dict, list)))
            else:
                stack.extend((copy, i, f.child(i)) for i in range(len(copy)))
        else:
            copy = _PLACEHOLDER * len(node) if isinstance(node, str) and node in rich and f.kind(node) == "free" \
                else node
        parent[key] = copy
    return holder[0]


#: the second placeholder: a field whose content the template only tests or compares with a text
#: (``{% if notes == "none" %}``) renders the same with either, a field shown does not
_OTHER_PLACEHOLDER = "_"


def blanked_again(value: Any, blank: Any) -> Any:
    """``blank`` (``screen_fields``' blanking of ``value``) with what was blanked written with
    ``_OTHER_PLACEHOLDER`` instead: the judge is shown content where the two requests differ.
    Rendered against ``value`` itself, a field compared with a text flipped its branch when
    blanked (``"none"`` is not ``"----"``), and the master key beside it reached the judge."""
    holder = [blank]
    stack: list[tuple[Any, Any, Any]] = [(value, holder, 0)]
    while stack:
        orig, parent, key = stack.pop()
        node = parent[key]
        if isinstance(node, dict) and isinstance(orig, dict) and len(node) == len(orig):
            copy: Any = {}
            for (k0, v0), (k, v) in zip(orig.items(), node.items()):
                if k != k0 and isinstance(k, str):   # a key blanked: keys stay distinct
                    k = k.replace(_PLACEHOLDER, _OTHER_PLACEHOLDER)
                    while k in copy or k in orig:
                        k += _OTHER_PLACEHOLDER
                copy[k] = v
                stack.append((v0, copy, k))
        elif isinstance(node, list) and isinstance(orig, list) and len(node) == len(orig):
            copy = list(node)
            stack.extend((o, copy, i) for i, o in enumerate(orig))
        else:
            copy = _OTHER_PLACEHOLDER * len(node) if isinstance(node, str) and node != orig else node
        parent[key] = copy
    return holder[0]
