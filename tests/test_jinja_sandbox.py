"""The Jinja2 engine: only the allowed statements, sandboxed rendering, undefined renders empty."""

from __future__ import annotations

import pytest

from rewardjudge.errors import TemplateError
from rewardjudge.templates._jinja import ALLOWED_STATEMENTS, JinjaTemplate

REFUSED = [
    ("{% include 'other.txt' %}", "include"),                       # reads another template
    ("{% import 'm.txt' as m %}", "import"),                        # loads macros from elsewhere
    ("{% from 'm.txt' import f %}", "from"),                        # same, by name
    ("{% extends 'base.txt' %}", "extends"),                        # template inheritance
    ("{% block b %}x{% endblock %}", "block"),                      # only meaningful with extends
    ("{% macro f(x) %}{{ x }}{% endmacro %}{{ f(1) }}", "macro"),   # user-defined functions
    ("{% call f() %}x{% endcall %}", "call"),                       # macro call blocks
    ("{% print 1 %}", "print"),                                     # not in the allowlist
    ("{% do xs.append(1) %}", "do"),                                # extension tag
    ("ok\n  {% include 'x' %}", "include"),                         # found on a later line too
]


@pytest.mark.parametrize("source,tag", REFUSED)
def test_statements_outside_the_allowlist_are_refused_at_construction(source, tag):
    with pytest.raises(TemplateError) as err:
        JinjaTemplate(source, name="prompt_template")
    msg = str(err.value)
    assert f"'{{% {tag} %}}' is not allowed" in msg and "prompt_template" in msg
    assert err.value.line == source.count("\n", 0, source.index("{%")) + 1


ALLOWED = [
    ("{% if a %}A{% else %}-{% endif %}", {"a": 1}, "A"),                          # if / else
    ("{% for x in xs %}{{ x }},{% endfor %}", {"xs": [1, 2]}, "1,2,"),             # for
    ("{% set y = a * 2 %}{{ y }}", {"a": 3}, "6"),                                # set
    ("{% with k = a %}{{ k }}{% endwith %}", {"a": "w"}, "w"),                    # with
    ("{% filter upper %}{{ a }}{% endfilter %}", {"a": "up"}, "UP"),              # filter
    ("{% raw %}{% include 'x' %}{{ a }}{% endraw %}", {"a": 1}, "{% include 'x' %}{{ a }}"),  # raw
    ("{% autoescape false %}<{{ a }}>{% endautoescape %}", {"a": "<b>"}, "<<b>>"),  # autoescape
]


@pytest.mark.parametrize("source,context,expected", ALLOWED)
def test_allowed_statements_render(source, context, expected):
    assert set(ALLOWED_STATEMENTS) == {"if", "for", "set", "with", "filter", "raw", "autoescape"}
    assert JinjaTemplate(source).render(context) == expected


def test_undefined_variables_and_their_attributes_render_empty():
    t = JinjaTemplate("[{{ missing }}|{{ missing.field.deeper }}|{% if missing %}x{% endif %}]")
    assert t.render({}) == "[||]"
    assert t.missing({}) == ["missing"]


def test_no_html_escaping_and_one_pass_rendering():
    t = JinjaTemplate("Answer: {{ answer }}")
    hostile = "<b>&</b> {{ 7 * 7 }} {% include 'x' %}"
    assert t.render({"answer": hostile}) == f"Answer: {hostile}"


def test_sandbox_blocks_attribute_escapes():
    t = JinjaTemplate("{{ s.__class__.__mro__[1].__subclasses__() }}")
    with pytest.raises(TemplateError):
        t.render({"s": "text"})
    # private attributes read as undefined, never as the real object
    assert JinjaTemplate("[{{ s.__class__ }}]").render({"s": "text"}) == "[]"


def test_variables_are_listed_in_first_use_order_without_locals():
    t = JinjaTemplate("{{ b }}{% for x in items %}{{ x }}{{ a }}{% endfor %}{% set c = 1 %}{{ c }}")
    assert t.variables == ["b", "items", "a"]


@pytest.mark.parametrize("source,line", [
    ("{% if x %}never closed", 1),        # unclosed block
    ("ok\n{{ x", 2),                     # unclosed print tag
    ("{% for %}{% endfor %}", 1),         # malformed for
])
def test_syntax_errors_are_template_errors_with_a_line(source, line):
    with pytest.raises(TemplateError) as err:
        JinjaTemplate(source)
    assert err.value.line == line


def test_callables_in_the_context_are_refused():
    from rewardjudge.errors import TemplateContextError

    with pytest.raises(TemplateContextError):
        JinjaTemplate("{{ f }}").render({"f": print})



def test_functions_are_callable_and_win_over_a_context_value_of_their_name():
    t = JinjaTemplate("{{ shout(word) }}", strict=True)
    assert t.render({"word": "hi", "shout": "data"}, functions={"shout": str.upper}) == "HI"
    assert t.render({"word": "ok"}, functions={"shout": str.upper}) == "OK"   # strict: a function is there

# -- Handlebars written in a Jinja2 template ----------------------------------------
@pytest.mark.parametrize("source,line,column", [
    ("Intro\n{{#if ok}}yes{{/if}}", 2, 1),      # a Handlebars block would be a Jinja2 syntax error
    ("a {{/if}}", 1, 3),                         # a lone close tag
    ("x\n\n  {{else}}", 3, 3),                   # would read as a variable named "else"
    ("{{> header}}", 1, 1),                      # a partial
    ("{{! note }}", 1, 1),                       # a Handlebars comment
    ("{{{raw}}}", 1, 1),                         # a triple stash would render a set literal
    ("{% for x in xs %}{{@index}}{% endfor %}", 1, 18),  # data variables
    ("{{../up}}", 1, 1),                         # parent paths
])
def test_handlebars_syntax_is_refused_with_its_position(source, line, column):
    with pytest.raises(TemplateError) as err:
        JinjaTemplate(source, name="scorer")
    assert (err.value.line, err.value.column) == (line, column)
    assert "Handlebars syntax" in str(err.value) and "scorer" in str(err.value)


def test_handlebars_look_alikes_inside_raw_and_comments_are_fine():
    t = JinjaTemplate("{% raw %}{{#if x}}{% endraw %}{# {{/if}} #}{{ {'k': 1}['k'] }}")
    assert t.render({}) == "{{#if x}}1"


def test_strict_names_missing_variables_but_not_locals():
    from rewardjudge.errors import TemplateVariableError

    t = JinjaTemplate("{% for s in steps %}{{ loop.index }}{{ s }}{% endfor %}{{ ref }}", strict=True)
    assert t.variables == ["steps", "ref"]
    with pytest.raises(TemplateVariableError) as err:
        t.render({"steps": [1]})
    assert err.value.missing == ["ref"]
    assert t.render({"steps": [1]}, strict=False) == "11"


def test_templates_pickle_and_render_after():
    # trainers ship reward functions to worker processes; Jinja2's compiled code cannot pickle
    import pickle

    t = JinjaTemplate("{% for s in steps %}{{ s }};{% endfor %}{{ ref }}", name="j", strict=True)
    back = pickle.loads(pickle.dumps(t))
    assert (back.name, back.strict, back.variables) == ("j", True, ["steps", "ref"])
    assert back.render({"steps": [1, 2], "ref": "r"}) == "1;2;r"
