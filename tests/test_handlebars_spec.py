"""Handlebars rendered as handlebars.js renders it.

The cases follow the behaviours the Mustache specification describes for
comments, interpolation, inverted sections, sections and partials, run the
way handlebars.js runs that specification in its own suite (``compat: true``,
so names are looked up in enclosing contexts; lambdas and delimiter changes
left out; a missing partial is an error). The cases are our own (own data,
own words), written against those behaviours.

Our one deliberate deviation: nothing is ever HTML-escaped, so where
handlebars.js prints ``&amp;`` for ``{{x}}`` we print ``&`` (judge prompts are
not HTML). The root context is a mapping (``render`` takes a dict), so the
specification's cases whose whole data is a bare list or scalar are written
with that value under a key.

Each row: (template, data, partials, expected), with a comment saying what
it checks.
"""

from __future__ import annotations

import pytest

from rewardjudge.errors import TemplateError
from rewardjudge.templates import Template

# --------------------------------------------------------------------------
# comments
# --------------------------------------------------------------------------
COMMENTS = {
    # a comment inside a line is removed, the text around it kept
    "inline": ("ab{{! a remark }}cd", {}, None, "abcd"),
    # a comment may span lines
    "multiline": ("ab{{!\n  two\n  lines\n}}cd\n", {}, None, "abcd\n"),
    # a comment alone on its line takes the whole line with it
    "standalone": ("first\n{{! gone }}\nlast\n", {}, None, "first\nlast\n"),
    # ... also when indented
    "indented standalone": ("first\n   {{! gone }}\nlast\n", {}, None, "first\nlast\n"),
    # ... and with CRLF line endings
    "standalone crlf": ("#\r\n{{! gone }}\r\n#", {}, None, "#\r\n#"),
    # ... on the first line
    "standalone first line": ("  {{! gone }}\nrest", {}, None, "rest"),
    # ... on the last line without a newline
    "standalone last line": ("rest\n  {{! gone }}", {}, None, "rest\n"),
    # a multi-line comment is standalone when its first and last lines hold nothing else
    "multiline standalone": ("a\n{{!\nnote\n}}\nb\n", {}, None, "a\nb\n"),
    "indented multiline standalone": ("a\n  {{!\n    note\n  }}\nb\n", {}, None, "a\nb\n"),
    # text before the comment on its line: not standalone, the newline stays
    "indented inline": ("  xy {{! z }}\n", {}, None, "  xy \n"),
    # spaces around an inline comment stay
    "surrounding whitespace": ("left {{! c }} right", {}, None, "left  right"),
    # a comment whose text names a variable prints nothing
    "variable name collision": ("[{{! remark }}]", {"remark": "shown?"}, None, "[]"),
    # the long form may hold }} (pybars3 alone would end it there)
    "long comment with braces": ("a{{!-- x }} y --}}b", {}, None, "ab"),
}

# --------------------------------------------------------------------------
# interpolation
# --------------------------------------------------------------------------
INTERPOLATION = {
    # text without tags is copied as is, single braces included
    "no tags": ("Plain {text} here\n", {}, None, "Plain {text} here\n"),
    "basic": ("Hi, {{who}}!\n", {"who": "there"}, None, "Hi, there!\n"),
    # a value that looks like a tag is not rendered again
    "no re-interpolation": ("{{tpl}} / {{x}}", {"tpl": "{{x}}", "x": "X"}, None, "{{x}} / X"),
    # DEVIATION: handlebars.js escapes {{x}}; we never do
    "not escaped (deviation)": ("{{s}}", {"s": '<b> & "q"'}, None, '<b> & "q"'),
    "triple mustache": ("{{{s}}}", {"s": "<i>&</i>"}, None, "<i>&</i>"),
    "ampersand": ("{{&s}}", {"s": "<i>&</i>"}, None, "<i>&</i>"),
    "integer": ('"{{n}} km"', {"n": 42}, None, '"42 km"'),
    "integer triple": ('"{{{n}}} km"', {"n": 42}, None, '"42 km"'),
    "integer ampersand": ('"{{&n}} km"', {"n": 42}, None, '"42 km"'),
    "decimal": ('"{{f}} volts"', {"f": 2.5}, None, '"2.5 volts"'),
    "decimal triple": ('"{{{f}}} volts"', {"f": 2.5}, None, '"2.5 volts"'),
    "decimal ampersand": ('"{{&f}} volts"', {"f": 2.5}, None, '"2.5 volts"'),
    # null renders empty
    "null": ("[{{none}}]", {"none": None}, None, "[]"),
    "null triple": ("[{{{none}}}]", {"none": None}, None, "[]"),
    "null ampersand": ("[{{&none}}]", {"none": None}, None, "[]"),
    # a missing name renders empty (non-strict)
    "context miss": ("[{{absent}}]", {}, None, "[]"),
    "context miss triple": ("[{{{absent}}}]", {}, None, "[]"),
    "context miss ampersand": ("[{{&absent}}]", {}, None, "[]"),
    # dotted names reach into objects, and equal a section over the object
    "dotted": ('{{user.nick}}={{#user}}{{nick}}{{/user}}', {"user": {"nick": "zed"}}, None, "zed=zed"),
    "dotted triple": ('{{{user.nick}}}={{#user}}{{{nick}}}{{/user}}', {"user": {"nick": "zed"}}, None,
                      "zed=zed"),
    "dotted ampersand": ('{{&user.nick}}={{#user}}{{&nick}}{{/user}}', {"user": {"nick": "zed"}}, None,
                         "zed=zed"),
    "dotted depth": ("{{p.q.r.s.t}}", {"p": {"q": {"r": {"s": {"t": "deep"}}}}}, None, "deep"),
    # a broken chain renders empty
    "dotted broken chain": ("[{{p.q.r}}]", {"p": {}}, None, "[]"),
    # the first segment found, the rest must follow from there (no fallback to the root)
    "dotted broken chain resolution": ("[{{p.q.name}}]", {"p": {"q": {}}, "name": "root"}, None, "[]"),
    # the first segment is looked up in enclosing contexts
    "dotted initial resolution": ("{{#outer}}{{k.v}}{{/outer}}",
                                  {"outer": {"k": {"v": "inner"}}, "k": {"v": "outer"}}, None, "inner"),
    # ... and once found in a closer context, a miss after it does not fall back
    "dotted context precedence": ("[{{#outer}}{{k.v}}{{/outer}}]",
                                  {"outer": {"k": {}}, "k": {"v": "WRONG"}}, None, "[]"),
    # "a.b" is a path, never one key spelled with a dot
    "dotted never a single key": ("[{{a.b}}]", {"a.b": "WRONG"}, None, "[]"),
    "dotted no masking": ("[{{a.b}}]", {"a.b": "WRONG", "a": {"b": "right"}}, None, "[right]"),
    # {{.}} is the current item
    "implicit iterator": ("{{#xs}}<{{.}}>{{/xs}}", {"xs": ["a", "b"]}, None, "<a><b>"),
    "implicit iterator triple": ("{{#xs}}{{{.}}}{{/xs}}", {"xs": ["<&>"]}, None, "<&>"),
    "implicit iterator ampersand": ("{{#xs}}{{&.}}{{/xs}}", {"xs": ["<&>"]}, None, "<&>"),
    "implicit iterator integer": ("{{#xs}}{{.}};{{/xs}}", {"xs": [7, 8]}, None, "7;8;"),
    # whitespace around a tag is kept
    "surrounding whitespace": ("( {{s}} )", {"s": "v"}, None, "( v )"),
    "triple surrounding whitespace": ("( {{{s}}} )", {"s": "v"}, None, "( v )"),
    "ampersand surrounding whitespace": ("( {{&s}} )", {"s": "v"}, None, "( v )"),
    # an interpolation alone on its line is not standalone: its line stays
    "standalone interpolation": ("   {{s}}\n", {"s": "v"}, None, "   v\n"),
    "standalone triple": ("   {{{s}}}\n", {"s": "v"}, None, "   v\n"),
    "standalone ampersand": ("   {{&s}}\n", {"s": "v"}, None, "   v\n"),
    # spaces inside the tag are ignored
    "padding": ("|{{ s }}|", {"s": "v"}, None, "|v|"),
    "triple padding": ("|{{{ s }}}|", {"s": "v"}, None, "|v|"),
    "ampersand padding": ("|{{& s }}|", {"s": "v"}, None, "|v|"),
}

# --------------------------------------------------------------------------
# inverted sections
# --------------------------------------------------------------------------
INVERTED = {
    "false": ("<{{^on}}shown{{/on}}>", {"on": False}, None, "<shown>"),
    "true": ("<{{^on}}shown{{/on}}>", {"on": True}, None, "<>"),
    "null": ("<{{^on}}shown{{/on}}>", {"on": None}, None, "<shown>"),
    # an object is truthy
    "object": ("<{{^obj}}shown {{k}}{{/obj}}>", {"obj": {"k": 1}}, None, "<>"),
    # a non-empty list is truthy: nothing rendered, not once per item
    "list": ("<{{^xs}}{{v}}{{/xs}}>", {"xs": [{"v": 1}, {"v": 2}]}, None, "<>"),
    "empty list": ("<{{^xs}}none{{/xs}}>", {"xs": []}, None, "<none>"),
    # the same inverted section twice, standalone lines removed
    "doubled": ("{{^off}}\n- one\n{{/off}}\n- {{mid}}\n{{^off}}\n- three\n{{/off}}\n",
                {"off": False, "mid": "two"}, None, "- one\n- two\n- three\n"),
    "nested falsy": ("1 {{^f}}2 {{^f}}3{{/f}} 4{{/f}} 5", {"f": False}, None, "1 2 3 4 5"),
    "nested truthy": ("1 {{^f}}2 {{^f}}3{{/f}} 4{{/f}} 5", {"f": True}, None, "1  5"),
    "context miss": ("[{{^absent}}no key{{/absent}}]", {}, None, "[no key]"),
    # dotted names in an inverted tag (refused by the old tag scanner)
    "dotted truthy": ("[{{^p.q.r}}no{{/p.q.r}}]", {"p": {"q": {"r": True}}}, None, "[]"),
    "dotted falsy": ("[{{^p.q.r}}no{{/p.q.r}}]", {"p": {"q": {"r": False}}}, None, "[no]"),
    "dotted broken chain": ("[{{^p.q.r}}no{{/p.q.r}}]", {"p": {}}, None, "[no]"),
    # inline inverted sections keep the whitespace around and inside them
    "surrounding whitespace": (" | {{^f}}\t*\t{{/f}} | \n", {"f": False}, None, " | \t*\t | \n"),
    "internal whitespace": (" | {{^f}} {{! kept }}\n {{/f}} | \n", {"f": False}, None, " |  \n  | \n"),
    "indented inline": (" {{^f}}A{{/f}}\n {{^f}}B{{/f}}\n", {"f": False}, None, " A\n B\n"),
    # inverted tags alone on their lines disappear with the line
    "standalone lines": ("top\n{{^f}}\nmid\n{{/f}}\nend\n", {"f": False}, None, "top\nmid\nend\n"),
    "standalone indented lines": ("top\n   {{^f}}\nmid\n   {{/f}}\nend\n", {"f": False}, None,
                                  "top\nmid\nend\n"),
    "standalone crlf": ("a\r\n{{^f}}\r\n{{/f}}\r\nb", {"f": False}, None, "a\r\nb"),
    "standalone first line": ("  {{^f}}\n^{{/f}}\n/", {"f": False}, None, "^\n/"),
    "standalone last line": ("^{{^f}}\n/\n  {{/f}}", {"f": False}, None, "^\n/\n"),
    # padded tags (refused by pybars3's close-tag grammar)
    "padding": ("|{{^ f }}={{/ f }}|", {"f": False}, None, "|=|"),
}

# --------------------------------------------------------------------------
# sections
# --------------------------------------------------------------------------
SECTIONS = {
    "true": ("<{{#on}}shown{{/on}}>", {"on": True}, None, "<shown>"),
    "false": ("<{{#on}}shown{{/on}}>", {"on": False}, None, "<>"),
    "null": ("<{{#on}}shown{{/on}}>", {"on": None}, None, "<>"),
    # an object becomes the context
    "object": ("<{{#obj}}k={{k}}{{/obj}}>", {"obj": {"k": 1}}, None, "<k=1>"),
    # names the section's object lacks come from enclosing contexts
    "parent contexts": ("{{#inner}}{{x}},{{y}},{{z.w}}{{/inner}}",
                        {"x": "X", "z": {"w": "W"}, "inner": {"y": "Y"}}, None, "X,Y,W"),
    # inside a section over a string, the section's name still resolves outside it
    "variable test": ("{{#word}}{{.}}={{word}}{{/word}}", {"word": "same"}, None, "same=same"),
    # nested lists each see every enclosing item
    "list contexts": ("{{#outer}}{{#inner}}{{o}}{{i}}.{{#leaf}}{{o}}{{i}}{{l}}.{{/leaf}}{{/inner}}{{/outer}}",
                      {"outer": [{"o": "A", "inner": [{"i": "b", "leaf": [{"l": "1"}, {"l": "2"}]}]}]},
                      None, "Ab.Ab1.Ab2."),
    # deeply nested objects shadow outer names only where they define them
    "deeply nested": ("{{#p}}\n{{n}}\n{{#q}}\n{{n}}{{m}}\n{{/q}}\n{{n}}\n{{/p}}\n",
                      {"p": {"n": 1}, "q": {"m": 2}}, None, "1\n12\n1\n"),
    "list": ("<{{#xs}}{{v}}{{/xs}}>", {"xs": [{"v": 1}, {"v": 2}, {"v": 3}]}, None, "<123>"),
    "empty list": ("<{{#xs}}never{{/xs}}>", {"xs": []}, None, "<>"),
    "doubled": ("{{#on}}\n- one\n{{/on}}\n- {{mid}}\n{{#on}}\n- three\n{{/on}}\n",
                {"on": True, "mid": "two"}, None, "- one\n- two\n- three\n"),
    "nested truthy": ("1 {{#t}}2 {{#t}}3{{/t}} 4{{/t}} 5", {"t": True}, None, "1 2 3 4 5"),
    "nested falsy": ("1 {{#t}}2 {{#t}}3{{/t}} 4{{/t}} 5", {"t": False}, None, "1  5"),
    "context miss": ("[{{#absent}}found{{/absent}}]", {}, None, "[]"),
    "implicit iterator string": ("{{#xs}}({{.}}){{/xs}}", {"xs": ["p", "q"]}, None, "(p)(q)"),
    "implicit iterator integer": ("{{#xs}}({{.}}){{/xs}}", {"xs": [3, 4]}, None, "(3)(4)"),
    "implicit iterator decimal": ("{{#xs}}({{.}}){{/xs}}", {"xs": [0.5, 1.25]}, None, "(0.5)(1.25)"),
    # a section over the current item, itself a list
    "implicit iterator array": ("{{#xs}}({{#.}}{{.}}{{/.}}){{/xs}}", {"xs": [[1, 2], ["a"]]}, None,
                                "(12)(a)"),
    "implicit iterator triple": ("{{#xs}}({{{.}}}){{/xs}}", {"xs": ["<", ">"]}, None, "(<)(>)"),
    "implicit iterator ampersand": ("{{#xs}}({{&.}}){{/xs}}", {"xs": ["<", ">"]}, None, "(<)(>)"),
    # a section over "." at the top walks the root's own keys' values only through names
    "implicit root section": ("{{#rows}}{{#.}}[{{v}}]{{/.}}{{/rows}}", {"rows": [{"v": 1}, {"v": 2}]},
                              None, "[1][2]"),
    # dotted section names (refused by pybars3's block grammar)
    "dotted truthy": ("[{{#p.q.r}}yes{{/p.q.r}}]", {"p": {"q": {"r": True}}}, None, "[yes]"),
    "dotted falsy": ("[{{#p.q.r}}yes{{/p.q.r}}]", {"p": {"q": {"r": False}}}, None, "[]"),
    "dotted broken chain": ("[{{#p.q.r}}yes{{/p.q.r}}]", {"p": {}}, None, "[]"),
    "surrounding whitespace": (" | {{#t}}\t*\t{{/t}} | \n", {"t": True}, None, " | \t*\t | \n"),
    "internal whitespace": (" | {{#t}} {{! kept }}\n {{/t}} | \n", {"t": True}, None, " |  \n  | \n"),
    "indented inline": (" {{#t}}A{{/t}}\n {{#t}}B{{/t}}\n", {"t": True}, None, " A\n B\n"),
    "standalone lines": ("top\n{{#t}}\nmid\n{{/t}}\nend\n", {"t": True}, None, "top\nmid\nend\n"),
    "standalone indented lines": ("top\n  {{#t}}\nmid\n  {{/t}}\nend\n", {"t": True}, None,
                                  "top\nmid\nend\n"),
    "standalone crlf": ("a\r\n{{#t}}\r\n{{/t}}\r\nb", {"t": True}, None, "a\r\nb"),
    "standalone first line": ("  {{#t}}\n#{{/t}}\n/", {"t": True}, None, "#\n/"),
    "standalone last line": ("#{{#t}}\n/\n  {{/t}}", {"t": True}, None, "#\n/\n"),
    # padded block tags
    "padding": ("|{{# t }}={{/ t }}|", {"t": True}, None, "|=|"),
}

# --------------------------------------------------------------------------
# partials
# --------------------------------------------------------------------------
PARTIALS = {
    "basic": ("[{{>p}}]", {}, {"p": "from the partial"}, "[from the partial]"),
    # a partial renders in the current context
    "context": ("[{{>p}}]", {"word": "ctx"}, {"p": "<{{word}}>"}, "[<ctx>]"),
    # a partial may use itself, bounded by the data
    "recursion": ("{{>tree}}", {"label": "r", "kids": [{"label": "k", "kids": []}]},
                  {"tree": "{{label}}({{#kids}}{{>tree}}{{/kids}})"}, "r(k())"),
    # a partial may use another partial
    "nested": ("{{>outer}}", {"a": "A", "b": "B"}, {"outer": "<{{a}} {{>inner}}>", "inner": "{{b}}!"},
               "<A B!>"),
    "surrounding whitespace": ("( {{>p}} )", {}, {"p": "\t|\t"}, "( \t|\t )"),
    # text before a partial on its line: inline, nothing removed
    "inline indentation": ("  {{v}}  {{> p}}\n", {"v": "|"}, {"p": ">\n>"}, "  |  >\n>\n"),
    "standalone crlf": ("a\r\n{{>p}}\r\nb", {}, {"p": ">"}, "a\r\n>b"),
    "standalone first line": ("  {{>p}}\n>", {}, {"p": ">\n>"}, "  >\n  >>"),
    "standalone last line": (">\n  {{>p}}", {}, {"p": ">\n>"}, ">\n  >\n  >"),
    # handlebars.js indents the partial's whole output by the standalone tag's indentation
    "standalone indentation": ("[\n  {{>p}}\n]\n", {"v": "a\nb"}, {"p": "<\n{{{v}}}\n>\n"},
                               "[\n  <\n  a\n  b\n  >\n]\n"),
    "padding": ("|{{> p }}|", {}, {"p": "="}, "|=|"),
    # a context argument and hash values, as handlebars.js allows
    "context argument": ("{{> p who}}", {"who": {"name": "N"}}, {"p": "<{{name}}>"}, "<N>"),
    "hash argument": ("{{> p tone=\"calm\"}}", {"x": 1}, {"p": "{{tone}}/{{x}}"}, "calm/1"),
}


def _cases(table):
    return [pytest.param(*row, id=name) for name, row in table.items()]


@pytest.mark.parametrize("template, data, partials, expected",
                         _cases(COMMENTS) + _cases(INTERPOLATION) + _cases(INVERTED)
                         + _cases(SECTIONS) + _cases(PARTIALS))
def test_renders_as_handlebars_js(template, data, partials, expected):
    assert Template(template, strict=False, partials=partials).render(data) == expected


def test_a_missing_partial_is_an_error_naming_it():
    # handlebars.js throws for an unknown partial; so do we, at construction when partials are given
    with pytest.raises(TemplateError, match="'nope'"):
        Template("[{{>nope}}]", partials={"other": "x"})
    # and at render time otherwise
    with pytest.raises(TemplateError, match="'nope'.*not defined"):
        Template("[{{>nope}}]").render({})


# --------------------------------------------------------------------------
# what users hit (issue 14 item 6)
# --------------------------------------------------------------------------
def test_each_closing_the_template_keeps_the_last_newline():
    # pybars3 alone drops the body's newline when {{/each}} ends the template: "- a- b"
    assert Template("{{#each steps}}- {{this}}\n{{/each}}").render({"steps": ["a", "b"]}) == "- a\n- b\n"


def test_worked_candidate_template_keeps_one_block_per_line():
    # the Releval document's worked template: blocks must not run together as </candidate><candidate
    src = ("For each candidate, return:\n\n{{#each candidates}}\n<candidate id=\"{{this.id}}\">\n"
           "<grade>{{../scale_min}}-{{../scale_max}}</grade>\n</candidate>\n{{/each}}")
    out = Template(src).render({"candidates": [{"id": "a"}, {"id": "b"}], "scale_min": 0, "scale_max": 3})
    assert out == ("For each candidate, return:\n\n<candidate id=\"a\">\n<grade>0-3</grade>\n</candidate>\n"
                   "<candidate id=\"b\">\n<grade>0-3</grade>\n</candidate>\n")


def test_standalone_else_and_helper_blocks():
    src = "A\n{{#if ok}}\nyes\n{{else}}\nno\n{{/if}}\nB\n"
    t = Template(src)
    assert t.render({"ok": True}) == "A\nyes\nB\n"
    assert t.render({"ok": False}) == "A\nno\nB\n"


def test_each_item_sees_enclosing_names_without_dots():
    # mustache-style lookup: {{sep}} inside {{#each}} finds the top-level value
    t = Template("{{#each xs}}{{this}}{{sep}}{{/each}}", strict=False)
    assert t.render({"xs": [1, 2], "sep": ";"}) == "1;2;"
    # an explicit this.x does not fall back
    assert Template("{{#each xs}}[{{this.sep}}]{{/each}}", strict=False).render(
        {"xs": [{}], "sep": ";"}) == "[]"


def test_tilde_whitespace_control():
    assert Template("a  \n {{~x~}} \n  b").render({"x": "X"}) == "aXb"


def test_dict_methods_are_never_read_as_values():
    # pybars3 reads attributes, so {{items}} could find dict.items and call it
    assert Template("[{{items}}|{{o.keys}}]", strict=False).render({"o": {}}) == "[|]"


def test_brace_before_a_tag_after_whitespace_control():
    # "{" directly before "{{" would read as a triple stash; ~ must not create one
    assert Template("{ {{~x}}}").render({"x": "v"}) == "{v}"
