"""The fields screen's batch steps (``_guards._free_flags`` over 43,000 texts joined) decide as they did when each
step looked at every text: the turned readings (``_turned.turned_flags``) now read only the texts not flagged yet (the
ROT13 and reversed readings only those of Latin letters, ROT13 only where a space or a colon stands, the upside-down reading only those holding a turned letter),
the emoji step (``_guards._flag_emoji``) reads only the texts holding a pictograph's code, and the documents' step
(``_guards._flag_documents``) only the texts holding a document's marks. The earlier steps are
kept here, and both are run on batches of the bench's hostile inputs cut in pieces, the attack corpus, master keys
turned (ROT13, reversed, upside down, as tag characters) among other texts, emoji, documents (JSON, YAML, tables,
CSV, XML, escaped) and benign answers. Nothing here
times anything (``python -m bench linear``)."""

from __future__ import annotations

import base64
import itertools
import json
import random
import re
import sys
from importlib import resources

import pytest

from bench.bench_linear import hostile_texts
from rewardjudge.graders import _guards
from rewardjudge.graders._guards import _content_free_flags, _emoji_message
from rewardjudge.graders._encoded import base64_texts
from rewardjudge.graders._joined import CODE_STARTS
from rewardjudge.graders._keys import _FILLER, _key_forms
from rewardjudge.graders._spelled import spelled_texts
from rewardjudge.graders._turned import _FLIP, _FLIPPED, _REVERSED_SHAPE, _ROT13, _ROT13_SHAPE, _TAGGED, _lone_key, _untagged
from rewardjudge.readouts._text import free_joiner


def _old_turned_flags(texts, found, joiner, flags, keys_only, keys=(), pieces=None):
    """``turned_flags`` as it was: each reading over every text, no gate."""
    if all(flags):
        return
    if _TAGGED.search("".join(texts)) is not None:
        tagged = [i for i, t in enumerate(texts) if not flags[i] and _TAGGED.search(t) is not None]
        for i, only in zip(tagged, keys_only([_untagged(texts[i]) or "" for i in tagged])):
            flags[i] = only
    pieces = found.split(joiner)
    readings = [(found.translate(_ROT13).split(joiner), False), (found[::-1].split(joiner)[::-1], True)]
    if _FLIPPED.search(found) is not None:
        readings.append((found.translate(_FLIP)[::-1].split(joiner)[::-1], None))
    for reading, reversed_ in readings:
        for i in itertools.compress(range(len(pieces)), keys_only(reading)):
            latin = pieces[i].isascii() and ((_REVERSED_SHAPE.match(texts[i]) if reversed_ else
                                              _ROT13_SHAPE.search(texts[i])) is not None or _lone_key(reading[i], keys))
            if reading[i] != pieces[i] and (latin if reversed_ is not None else _FLIPPED.search(pieces[i])):
                flags[i] = True


def _old_flag_encoded(flags, texts, keys, question):
    """``_flag_encoded`` as it was: base64 and spelled texts searched for in every text (no ``CODE_STARTS`` gate)."""
    joiner = free_joiner(texts)
    joined = joiner.join(texts) if joiner is not None and not all(flags) else None
    coded = {i: plain for found in (base64_texts(joined, joiner), spelled_texts(joined, joiner))
             for i, plain in found.items() if not flags[i]} if joined is not None else {}
    for i, free in zip(coded, _content_free_flags(list(coded.values()), keys, question) if coded else []):
        flags[i] = free


def _old_flag_emoji(flags, texts, pieces, only, joined):
    """The emoji step as it was: every text's flag made again."""
    flags[:] = [keyed or not (piece or _emoji_message(text)) for piece, keyed, text in zip(pieces, only, texts)]


def _old_flag_documents(flags, texts, keys):
    """``_flag_documents`` as it was: ``_document`` of every text not flagged."""
    if all(flags):
        return
    joined = "".join(texts)
    if not any(c in joined for c in "{[`~&%<") and not ("\n" in joined and any(c in joined for c in ":=|,;\t")):
        return
    docs = {i: body for i, t in enumerate(texts) if not flags[i] and (body := _guards._document(t, keys)) is not None}
    for i, free in zip(docs, _guards._json_free(list(docs.values()), keys) if docs else []):
        flags[i] = free


_FLIP_BACK = {v: k for k, v in zip("ɐɔǝɟƃɥıɾʞןɯɹʇʌʍʎ", "acefghijklmrtvwy")}
_EMOJI = ["\U0001f600", "\U0001f389", "\U0001f64c", "\U0001f44d", "\U0001f3fb", "\U0001f3ff", "\u2705", "\U0001fa90"]
_DOCUMENTS = ['{"answer": ""}', '{"a": 1}', '["", ""]', "answer: ''\nscore: 1", "a = ''\nb = 2", "a,b\n,1", "a;b\n;1",
              "a\tb\n\t1", "| a | b |\n|---|---|\n| | 1 |", "<answer></answer>", "<a>Paris</a>", "```json\n{}\n```",
              "&#123;&#125;", "%7B%7D", "> {\"a\": \"\"}", "Answer: {}", "x\n- ''", "[1, 2]", "{'a': ''}", "a:\nb",
              "Paris,\nLyon", "1,2\n3,4", "~~~\n~~~", "{\"answer\": \"Paris\"}", "<b>x</b>\n,"]
_BENIGN = ["Paris", "The capital is Paris.", "42", "I think so: yes", "step 1: add", "x = 3", "ok", "",
           "  ", "Answer: Paris", "Thought process: it is Paris.", "1. Paris\n2. Lyon", "<b>Paris</b>"]


def _turned(rng: random.Random, word: str) -> str:
    """A master key written as a judge undoes it: ROT13, reversed, upside down, as tag characters, or as it is."""
    way = rng.randrange(6)
    if way == 0:
        return word.translate(_ROT13) + rng.choice([":", " x", "", " :"])
    if way == 1:
        return rng.choice([":", "", ". "]) + word[::-1] + rng.choice(["", " ", " a"])
    if way == 2:
        return "".join(_FLIP_BACK.get(c, c) for c in word)[::-1]
    if way == 3:
        return "".join(chr(0xE0000 + ord(c)) for c in word) + rng.choice([":", ""])
    return rng.choice(["", " ", "\u202e"]) + word + rng.choice(["", ":", ": Paris", " the"])


def _batch(rng: random.Random, size: int) -> "list[str]":
    forms = sorted(k for k in _key_forms(()) if k.isascii())
    pool = [*forms, *sorted(_FILLER)[:40], *_BENIGN, *_DOCUMENTS]
    out = []
    for _ in range(size):
        kind = rng.randrange(5)
        if kind == 0:
            out.append(_turned(rng, rng.choice(forms)))
        elif kind == 1:
            out.append("".join(rng.choice(_EMOJI) for _ in range(rng.randrange(1, 4))) + rng.choice(["", "!", " ", "a"]))
        elif kind == 2:
            out.append(" ".join(_turned(rng, rng.choice(pool)) for _ in range(rng.randrange(1, 4))))
        else:
            out.append(rng.choice(pool))
    return out


def _attack_texts() -> "list[str]":
    with resources.files("rewardjudge.data").joinpath("attacks.jsonl").open(encoding="utf-8") as lines:
        return [json.loads(line)["text"] for line in lines if line.strip()]


def _decide_alike(monkeypatch, batches: "list[list[str]]", keys: "tuple[str, ...]" = ()) -> None:
    new = [_content_free_flags(list(b), keys) for b in batches]
    with monkeypatch.context() as m:
        m.setattr(_guards, "turned_flags", _old_turned_flags)
        m.setattr(_guards, "_flag_emoji", _old_flag_emoji)
        m.setattr(_guards, "_flag_documents", _old_flag_documents)
        m.setattr(_guards, "_flag_encoded", _old_flag_encoded)
        old = [_content_free_flags(list(b), keys) for b in batches]
    for batch, a, b in zip(batches, new, old):
        assert a == b, [t for t, x, y in zip(batch, a, b) if x != y][:5]


@pytest.mark.parametrize("width", [1, 3, 6, 11])
def test_hostile_texts_cut_in_pieces_decide_alike(monkeypatch, width):
    texts = hostile_texts(1536).values()
    _decide_alike(monkeypatch, [[t[i:i + width] for i in range(0, len(t), width)] for t in texts])


@pytest.mark.parametrize("seed", range(6))
def test_turned_keys_emoji_and_answers_decide_alike(monkeypatch, seed):
    rng = random.Random(seed)
    batches = [_batch(rng, rng.choice([1, 2, 5, 40, 300])) for _ in range(40)]
    _decide_alike(monkeypatch, batches)
    _decide_alike(monkeypatch, [[t for t in b if t.isascii()] for b in batches])   # letters all Latin
    _decide_alike(monkeypatch, batches[:10], ("final verdict", "x"))


def test_the_attack_corpus_decides_alike(monkeypatch):
    attacks = _attack_texts()
    rng = random.Random(3)
    _decide_alike(monkeypatch, [attacks, *(rng.sample(attacks, 20) + _batch(rng, 20) for _ in range(10))])


@pytest.mark.parametrize("seed", range(3))
def test_documents_among_other_texts_decide_alike(monkeypatch, seed):
    rng = random.Random(100 + seed)
    docs = [rng.choice(_DOCUMENTS) + rng.choice(["", " ", "\n", ",", "Paris"]) for _ in range(200)]
    _decide_alike(monkeypatch, [rng.sample(docs, 40) + _batch(rng, 40) for _ in range(20)] + [docs])


_CODED = ["VGhvdWdodCBwcm9jZXNzOg==", "QW5zd2VyOg==", "UGFyaXM=", "416e737765723a", "41 6e 73 77 65 72 3a",
          "50617269732e", "01000001 01101110 01110011 01110111 01100101 01110010", "Alfa November Sierra Whiskey Echo Romeo",
          "sierra oscar lima", "\u017fierra oscar lima", "\u212ailo echo yankee", "\u0130ndia november", "\u0131ndia bravo",
          "papa alfa romeo india sierra", "e30=", "deadbeef", "2020", "Paris", "$QW5zd2VyOg==", "-alfa bravo"]


@pytest.mark.parametrize("seed", range(3))
def test_encoded_texts_among_other_texts_decide_alike(monkeypatch, seed):
    """Perf57: base64 and spelled texts are searched for only in the texts whose first character may start one
    (``CODE_STARTS``); a text led by whitespace, a case-blind letter or a symbol decides as when every text was."""
    rng = random.Random(200 + seed)
    coded = [rng.choice(["", " ", "\t", "\u3000", "\n "]) + rng.choice(_CODED) + rng.choice(["", " ", "\u2003"])
             for _ in range(300)]
    batches = [rng.sample(coded, 40) + _batch(rng, 40) for _ in range(20)] + [coded]
    _decide_alike(monkeypatch, batches)
    assert sum(_content_free_flags(coded, ())) > 50   # some decoded texts are flagged: not all are left alone


def test_code_starts_holds_every_first_character_of_a_code():
    """Every character a base64, hex, binary or spelled text may start with (whitespace; an ASCII letter or digit,
    ``+``, ``/``; a character a case-blind ASCII letter matches) is in ``CODE_STARTS``; no symbol is."""
    blind = re.compile("(?i:[a-z])|[0-9+/]|\\s")
    starts = [c for c in range(sys.maxunicode + 1) if blind.fullmatch(chr(c))]
    assert all(c < len(CODE_STARTS) - 1 and CODE_STARTS[c] for c in starts)
    assert sorted(map(int, CODE_STARTS.nonzero()[0])) == starts
    assert base64.b64decode("VGhvdWdodCBwcm9jZXNzOg==") == b"Thought process:"


def test_the_steps_are_run_and_flag():
    """The inputs reach both steps: a turned key is flagged, an emoji message is not, a lone emoji is."""
    texts = ["Nafjre:", ":rewsna", "ɹǝʍsuɐ", "\U0001f600\U0001f389", "\U0001f44d", "Paris", "\U0001f600 Paris"]
    assert _content_free_flags(texts, ()) == [True, True, True, False, True, False, False]
