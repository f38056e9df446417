"""The Handlebars layer: one test per pybars3 trap in NOTES.md, plus helpers."""

from __future__ import annotations

import sys
import threading

import pytest

from rewardjudge.errors import TemplateContextError, TemplateError, TemplateVariableError
from rewardjudge.templates import Template
from rewardjudge.templates._handlebars import compile_template, template_variables


def test_no_html_escaping():
    # pybars3 escapes & < > " ' ` in {{x}}; prompts are not HTML
    text = """a & b < c > d "e" 'f' `g`"""
    assert Template("{{x}}").render({"x": text}) == text


def test_values_are_not_rendered_twice():
    # one pass: policy text that looks like a template stays literal
    out = Template("A: {{answer}}").render({"answer": "{{secret}} {{#if x}}y{{/if}}", "secret": "LEAK"})
    assert out == "A: {{secret}} {{#if x}}y{{/if}}"


@pytest.mark.parametrize("source, line, column, fragment", [
    # unclosed block: pybars3 silently drops everything after it
    ("Intro\n{{#if x}}\nbody", 2, 1, "unclosed block"),
    # unclosed mustache at the end of a line
    ("one\ntwo {{name\nthree", 2, 5, "unclosed mustache"),
    # unclosed mustache followed by another tag
    ("{{a {{b}}", 1, 1, "unclosed mustache"),
    # mismatched close: the position of the bad close tag, naming the open one
    ("{{#each xs}}\n  {{/if}}", 2, 3, "does not match"),
    # close without open
    ("text {{/each}}", 1, 6, "never opened"),
    # else outside a block
    ("x\n{{else}}", 2, 1, "outside any block"),
    # unclosed long comment
    ("a\n  {{!-- note", 2, 3, "unclosed comment"),
    # a triple stash missing one brace
    ("{{{raw}}", 1, 1, "unclosed mustache"),
    # a tag pybars3 cannot parse: the real line (pybars3 reports the last line)
    ("l1\nl2 {{foo bar=}}\nl3\nl4", 2, 4, "invalid tag"),
    ("a\n{{#if (eq x}}y{{/if}}\nb\nc", 2, 1, "invalid tag"),
    # a dotted section is fine, but a section over a value takes no arguments
    ("ok\n {{#a.b extra}}x{{/a.b}}", 2, 2, "not a helper"),
    # dynamic partials and partial blocks are outside what a prompt needs
    ("{{> (lookup . 'p')}}", 1, 1, "dynamic partials"),
    ("x {{#> layout}}y{{/layout}}", 1, 3, "partial blocks"),
    # an else chain outside any block
    ("{{else if x}}", 1, 1, "outside any block"),
])
def test_invalid_templates_report_real_position(source, line, column, fragment):
    with pytest.raises(TemplateError) as info:
        Template(source)
    assert info.value.line == line and info.value.column == column
    assert fragment in str(info.value)


def test_comment_holding_closing_braces_does_not_leak():
    # pybars3 ends {{!-- a }} b --}} at the first }} and prints " b --}}"
    assert Template("x{{!-- a }} b --}}y").render({}) == "xy"


def test_else_if_chains():
    # pybars3 has no {{else if}}; the front end nests the blocks
    t = Template("{{#if a}}A{{else if b}}B{{else if (eq c 1)}}C{{else}}D{{/if}}")
    assert [t.render({"a": a, "b": b, "c": c}) for a, b, c in
            [(1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 0, 0)]] == ["A", "B", "C", "D"]


def test_unless_else_is_honoured():
    # pybars3's own unless drops the else branch
    t = Template("{{#unless ok}}no{{else}}yes{{/unless}}")
    assert t.render({"ok": True}) == "yes"
    assert t.render({"ok": False}) == "no"


def test_strict_names_missing_and_available():
    t = Template("{{question}} {{meta.ref}} {{#each items}}{{this.name}}{{/each}}")
    with pytest.raises(TemplateVariableError) as info:
        t.render({"question": "q", "meta": {}, "items": []})
    assert info.value.missing == ["meta.ref"]
    assert info.value.available == ["items", "meta", "question"]
    assert "meta.ref" in str(info.value) and "question" in str(info.value)


def test_non_strict_renders_missing_as_empty():
    assert Template("[{{x}}]", strict=False).render({}) == "[]"
    assert Template("[{{x}}]").render({}, strict=False) == "[]"


def test_callables_in_context_are_refused():
    # pybars3 calls functions found in the context
    with pytest.raises(TemplateContextError):
        Template("{{f}}").render({"f": lambda *a: "called"})


def test_variables_listing():
    src = ("{{#if (eq scale \"detailed\")}}{{a}}{{/if}}{{#each candidates}}{{this.id}} {{../scale_min}}"
           "{{@index}}{{/each}}{{json meta.k}} {{join tags \", \"}} {{#with obj}}{{inner}}{{/with}}")
    assert template_variables(src) == ["scale", "a", "candidates", "scale_min", "meta.k", "tags", "obj"]


def test_helpers():
    t = Template('{{#if (and (gt n 2) (lt n 5) (not off))}}mid{{/if}}|{{#if (or a b)}}any{{/if}}|'
                 '{{#if (eq s "x")}}eq{{/if}}{{#if (ne s "y")}}ne{{/if}}|{{json obj}}|{{join xs "/"}}')
    out = t.render({"n": 3, "off": False, "a": "", "b": 1, "s": "x", "obj": {"k": "<v>"}, "xs": [1, "b"]})
    assert out == 'mid|any|eqne|{"k": "<v>"}|1/b'


def test_compile_cache_and_no_module_leak():
    src = "cache probe {{x}} " + "z" * 7
    before = {m for m in sys.modules if m.startswith("pybars._templates")}
    fn1, _ = compile_template(src)
    fn2, _ = compile_template(src)
    assert fn1 is fn2
    after = {m for m in sys.modules if m.startswith("pybars._templates")}
    assert after == before


def test_concurrent_compiles_are_correct():
    # compiling from several threads at once corrupts pybars3's output without the lock
    sources = [f"T{i} {{{{#each xs}}}}{{{{this}}}}-{i} {{{{/each}}}}{{{{#if y}}}}y{i}{{{{/if}}}}" for i in range(24)]
    results: dict[int, str] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            results[i] = Template(sources[i]).render({"xs": [1, 2], "y": True})
        except BaseException as exc:  # pragma: no cover - the failure being tested against
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for i in range(24):
        assert results[i] == f"T{i} 1-{i} 2-{i} y{i}"


# -- one prompt interface ---------------------------------------------------------
def test_prompt_template_over_both_engines():
    from rewardjudge.templates import PromptTemplate

    hb = PromptTemplate("{{#each steps}}- {{this}}\n{{/each}}{{note}}", name="p")
    j2 = PromptTemplate("{% for s in steps %}- {{ s }}\n{% endfor %}{{ note }}", engine="jinja2", name="p")
    ctx = {"steps": ["a", "b"], "note": "<&>"}
    assert hb.render(ctx) == j2.render(ctx) == "- a\n- b\n<&>"
    assert (hb.engine, j2.engine) == ("handlebars", "jinja2")
    assert hb.variables == j2.variables == ["steps", "note"]
    assert hb.source.startswith("{{#each") and j2.source.startswith("{% for")
    # strict by default, on both engines
    for t in (hb, j2):
        with pytest.raises(TemplateVariableError):
            t.render({"steps": []})
    assert PromptTemplate("[{{ x }}]", engine="jinja", strict=False).render({}) == "[]"


@pytest.mark.parametrize("source, engine, line, column, fragment", [
    # Jinja2 statements in a Handlebars template are refused, never rendered literally
    ("Intro\n{% if product %}{{product}}{% endif %}", "handlebars", 2, 1, "Jinja2 syntax"),
    # a Jinja2 filter in a Handlebars tag
    ("a\n b {{ product | upper }}", "handlebars", 2, 4, "Jinja2 syntax"),
    # Handlebars blocks in a Jinja2 template
    ("Intro\n{{#if product}}x{{/if}}", "jinja2", 2, 1, "Handlebars syntax"),
])
def test_the_other_engines_syntax_is_refused_with_its_position(source, engine, line, column, fragment):
    from rewardjudge.templates import PromptTemplate

    with pytest.raises(TemplateError) as info:
        PromptTemplate(source, engine=engine)
    assert (info.value.line, info.value.column) == (line, column)
    assert fragment in str(info.value)


def test_prompt_template_rejects_unknown_engines_and_jinja_partials():
    from rewardjudge.errors import ConfigError
    from rewardjudge.templates import PromptTemplate

    with pytest.raises(ConfigError, match="engine must be one of"):
        PromptTemplate("x", engine="mustache")
    with pytest.raises(ConfigError, match="partials are a Handlebars feature"):
        PromptTemplate("x", engine="jinja2", partials={"p": "y"})
    wrapped = PromptTemplate.wrap(Template("{{a}}"))
    assert wrapped.render({"a": 1}) == "1" and wrapped.engine == "handlebars"


# -- one render path: pybars3, with one module of overrides ---------------------------
@pytest.mark.parametrize("source, context, expected", [
    # 1. prepare: no HTML escaping
    ("{{x}}|{{{x}}}|{{&x}}", {"x": "<a & 'b'>"}, "<a & 'b'>|<a & 'b'>|<a & 'b'>"),
    ("{{t}} {{f}} {{n}} {{i}}", {"t": True, "f": False, "n": None, "i": 2.5}, "true false  2.5"),
    # 2. resolve: enclosing contexts (compat mode); explicit paths stay explicit; keys only
    ("{{#each xs}}{{this}}{{sep}}{{/each}}", {"xs": ["a", "b"], "sep": ";"}, "a;b;"),
    ("{{#each xs}}[{{this.sep}}]{{/each}}", {"xs": ["a"], "sep": ";"}, "[]"),
    ("{{#with o}}{{k}}/{{../k}}/{{@root.k}}{{/with}}", {"o": {"k": "in"}, "k": "out"}, "in/out/out"),
    ("{{d.items}}|{{s.upper}}|{{xs.length}}|{{xs.1}}", {"d": {}, "s": "x", "xs": [1, 2]}, "||2|2"),
    # 3. built-in helpers: sections, unless/else, with on empty, lookup by key
    ("{{#x}}[{{.}}]{{/x}}{{^y}}no y{{/y}}", {"x": ["a", "b"], "y": []}, "[a][b]no y"),
    ("{{#x}}zero{{/x}}|{{#f}}f{{/f}}", {"x": 0, "f": False}, "zero|"),
    ("{{#unless a}}A{{else}}B{{/unless}}", {"a": 1}, "B"),
    ("{{#with e}}W{{else}}empty{{/with}}", {"e": []}, "empty"),
    ("{{lookup m k}}|{{lookup m 'keys'}}", {"m": {"a": "1"}, "k": "a"}, "1|"),
    ("{a}{{x}}{{{x}}}}", {"x": "X"}, "{a}XX}"),
])
def test_each_pybars3_override(source, context, expected):
    assert Template(source, strict=False).render(context) == expected


def test_standalone_partials_are_indented_and_take_arguments():
    t = Template("A\n  {{> p}}\nB {{> q o extra='!'}}", partials={"p": "1\n2\n", "q": "{{k}}{{extra}}"})
    assert t.render({"o": {"k": "K"}}) == "A\n  1\n  2\nB K!"
    with pytest.raises(TemplateError, match="partial 'r' is not defined"):
        Template("{{> r}}").render({})


def test_only_the_overrides_module_reaches_past_pybars3s_public_api():
    # pybars3's public names: Compiler (compile / precompile), Scope, strlist, PybarsError,
    # and helpers= / partials= at render; every other reach is in _pybars_overrides
    import pathlib
    import re

    import rewardjudge

    root = pathlib.Path(rewardjudge.__file__).parent
    private = re.compile(r"pybars\._|\b_pybars_\b|__globals__|\b_handlebars\(|sys\.modules\[[^]]*pybars"
                         r"|from pybars import [^\n]*\b(?!(?:Compiler|Scope|strlist|PybarsError)\b)\w+")
    offenders = []
    for path in root.rglob("*.py"):
        if path.name == "_pybars_overrides.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#")[0]
            if private.search(code) and not code.strip().startswith(('"', "'", "``", "*")):
                offenders.append(f"{path.relative_to(root)}:{n}: {line.strip()}")
    assert offenders == []


def test_templates_pickle_and_render_after():
    import pickle

    t = Template("{{#each xs}}{{> item}}{{/each}}|{{y}}", name="p", strict=False,
                 partials={"item": "<{{this}}>"})
    back = pickle.loads(pickle.dumps(t))
    assert (back.name, back.strict, back.variables) == ("p", False, t.variables)
    assert back.render({"xs": ["a", "b"]}) == t.render({"xs": ["a", "b"]}) == "<a><b>|"


def test_strict_rendering_takes_the_length_of_lists_and_texts_as_present():
    # strict checks read paths as rendering does: `length` of a list or a text is there
    t = Template("{{xs.length}}/{{s.length}}")
    assert t.render({"xs": [1, 2], "s": "abc"}) == "2/3"
    with pytest.raises(TemplateVariableError, match="xs.length"):
        t.render({"xs": 3, "s": "abc"})
