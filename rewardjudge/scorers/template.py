"""A scorer's prompt template: sandboxed Jinja2 by default, Handlebars on request.

The scorer document specifies Jinja2, so ``template_engine`` defaults to
``"jinja2"``; ``"handlebars"`` is the alternative. A template written in the
*other* engine's syntax is refused at construction, with its line, instead of
being rendered literally into the judge prompt:

* under Handlebars: ``{% ... %}`` statements, ``{# ... #}`` comments,
  ``{{- x -}}``, filters (``{{ x | upper }}``) and calls (``{{ attr("k") }}``);
* under Jinja2 (outside ``{% raw %}``): ``{{#block}}``, ``{{/block}}``,
  ``{{^x}}``, ``{{else}}``, ``{{> partial}}``, ``{{! comment}}``,
  ``{{{triple}}}``, ``{{@index}}``, ``{{this}}``, ``{{../x}}`` and ``{{~``.

Checks and variable detection use the engines in ``rewardjudge.templates``
(Jinja2: the statement allowlist ``if for set with filter raw autoescape``,
loop variables and ``set`` locals are not variables). Jinja2 templates
render in a sandbox with the function built-ins (``attr``,
``format_input_transcript``, ``format_output_transcript``; see
``builtins.py``); Handlebars templates cannot call functions, so a Handlebars
template naming one is refused (read ``{{metadata.key}}`` there).

>>> ScorerTemplate("Product: {{ product }}{% for s in steps %} {{ s }}{% endfor %}").variables
['product', 'steps']
>>> ScorerTemplate("{{#if x}}yes{{/if}}")
Traceback (most recent call last):
...
rewardjudge.errors.TemplateError: prompt_template: '{{#if x}}' is Handlebars syntax, but this template's engine is jinja2: write {% if x %}...{% endif %}, or set "template_engine": "handlebars" (line 1, column 1)
    {{#if x}}yes{{/if}}
    ^
"""

from __future__ import annotations

import re
import threading
from typing import Any, Callable, Mapping

from ..errors import ConfigError, TemplateError
from .builtins import BUILTIN_FUNCTIONS

__all__ = ["DEFAULT_ENGINE", "ENGINES", "ScorerTemplate"]

ENGINES = ("jinja2", "handlebars")
DEFAULT_ENGINE = "jinja2"
_ALIASES = {"jinja": "jinja2", "hbs": "handlebars"}

# -- the other engine's syntax ------------------------------------------------------------
_JINJA_IN_HBS = [
    (re.compile(r"\{%-?\s*([A-Za-z_]\w*)?.*?%\}", re.S),
     lambda m: f"{m.group(0)[:60]!r} is a Jinja2 statement"),
    (re.compile(r"\{#.*?#\}", re.S), lambda m: "'{# ... #}' is a Jinja2 comment"),
    (re.compile(r"\{\{-|-\}\}"), lambda m: f"'{m.group(0)}' is Jinja2 whitespace control"),
    (re.compile(r"\{\{(?![#/^>!{~])[^}]*?[^|]\|\s*[A-Za-z_]\w*[^}|]*\}\}"),
     lambda m: f"'{m.group(0)}' uses a Jinja2 filter"),
    (re.compile(r"\{\{(?![#/^>!{])\s*~?\s*[A-Za-z_][\w.]*\("),
     lambda m: f"'{m.group(0)}...' is a Jinja2 function call"),
]
_HBS_IN_JINJA = re.compile(
    r"\{\{~?\s*(?:[#/^>!{@~]|\.\./|else\s*~?\}\}|this\b)")
_JINJA_RAW = re.compile(r"\{%-?\s*raw\s*-?%\}.*?\{%-?\s*endraw\s*-?%\}", re.S)
_HBS_COMMENT = re.compile(r"\{\{!--.*?--\}\}|\{\{![^}]*\}\}", re.S)


def _blank(match: re.Match) -> str:
    # keep newlines so that positions (line, column) stay right
    return re.sub(r"[^\n]", " ", match.group(0))


def _position(source: str, pos: int) -> tuple[int, int]:
    line = source.count("\n", 0, pos) + 1
    return line, pos - (source.rfind("\n", 0, pos) + 1) + 1


def _refuse_other_syntax(source: str, engine: str, name: str) -> None:
    if engine == "handlebars":
        scanned = _HBS_COMMENT.sub(_blank, source)
        hits = [(m.start(), what(m)) for rx, what in _JINJA_IN_HBS for m in [rx.search(scanned)] if m]
        if hits:
            pos, what = min(hits)
            line, col = _position(source, pos)
            raise TemplateError(f"{name}: {what}, but this template's engine is handlebars: write "
                                f"Handlebars ({{{{#if x}}}}...{{{{/if}}}}, {{{{x}}}}), or use Jinja2 "
                                f"(\"template_engine\": \"jinja2\", the default)",
                                line=line, column=col, source=source)
        return
    scanned = _JINJA_RAW.sub(_blank, source)
    m = _HBS_IN_JINJA.search(scanned)
    if m:
        end = scanned.find("}}", m.start())
        tag = source[m.start():end + 2] if end >= 0 else source[m.start():m.start() + 12]
        hint = ""
        block = re.match(r"\{\{~?\s*#\s*(\w+)\s*([^}]*)\}\}", tag)
        if block and block.group(1) in ("if", "unless", "each", "with"):
            kw = {"if": "if", "unless": "if not", "each": "for item in", "with": "with"}[block.group(1)]
            end_kw = {"unless": "if", "each": "for"}.get(block.group(1), block.group(1))
            hint = f"write {{% {kw} {block.group(2).strip()} %}}...{{% end{end_kw} %}}, or "
        line, col = _position(source, m.start())
        raise TemplateError(f"{name}: {tag!r} is Handlebars syntax, but this template's engine is "
                            f"jinja2: {hint}set \"template_engine\": \"handlebars\"",
                            line=line, column=col, source=source)


# -- Jinja2 rendering with function built-ins ------------------------------------------------
_ENV = None
_ENV_LOCK = threading.Lock()


def _render_env():
    """A sandboxed environment set up as ``templates/jinja.py``'s (no HTML escaping, undefined
    renders empty, trailing newline kept), used to render with the function built-ins in the
    context (``JinjaTemplate.render`` takes plain data only)."""
    global _ENV
    if _ENV is None:
        with _ENV_LOCK:
            if _ENV is None:
                from jinja2 import ChainableUndefined
                from jinja2.sandbox import SandboxedEnvironment

                env = SandboxedEnvironment(autoescape=False, undefined=ChainableUndefined,
                                           keep_trailing_newline=True)
                for fn in ("lipsum", "cycler", "joiner"):
                    env.globals.pop(fn, None)
                _ENV = env
    return _ENV


class ScorerTemplate:
    """A checked scorer prompt template.

    ``variables``: the top-level names it reads and does not set itself
    (built-ins included), in first-use order. ``render(context, functions)``
    renders ``context`` (plain data) with ``functions`` callable from a
    Jinja2 template; an undefined variable renders empty.
    """

    __slots__ = ("source", "engine", "name", "variables", "_checked", "_compiled")

    def __init__(self, source: str, engine: str = DEFAULT_ENGINE, *, name: str = "prompt_template"):
        engine = _ALIASES.get(engine, engine)
        if engine not in ENGINES:
            raise ConfigError(f"config.template_engine must be one of {ENGINES}, got {engine!r}")
        if not isinstance(source, str):
            raise TemplateError(f"{name}: template source must be a str, got {type(source).__name__}")
        self.source = source
        self.engine = engine
        self.name = name
        _refuse_other_syntax(source, engine, name)
        if engine == "jinja2":
            from ..templates.jinja import JinjaTemplate

            self._checked = JinjaTemplate(source, name=name)  # allowlist, syntax, variables
            self.variables = list(self._checked.variables)
            self._compiled = _render_env().from_string(source)
        else:
            from ..templates.handlebars import Template

            self._checked = Template(source, name=name, strict=False)
            self._compiled = None
            tops: dict[str, None] = {}
            for path in self._checked.variables:
                tops.setdefault(path.split(".", 1)[0], None)
            self.variables = list(tops)
            called = [v for v in self.variables if v in BUILTIN_FUNCTIONS]
            if called:
                raise TemplateError(f"{name}: {called[0]!r} is a Jinja2 built-in function; Handlebars "
                                    f"templates cannot call it: read the attribute as "
                                    f"{{{{metadata.key}}}}, or use Jinja2 (the default engine)")

    def render(self, context: Mapping[str, Any],
               functions: Mapping[str, Callable[..., Any]] | None = None) -> str:
        if self._compiled is None:
            return self._checked.render(context)
        from jinja2.exceptions import SecurityError, TemplateError as JinjaError

        from ..templates.handlebars import to_plain

        values = to_plain(dict(context))
        values.update(functions or {})  # after the data: built-ins take precedence
        try:
            return self._compiled.render(values)
        except SecurityError as exc:
            raise TemplateError(f"{self.name}: refused by the sandbox: {exc}") from None
        except (JinjaError, TypeError, ValueError, ArithmeticError) as exc:
            raise TemplateError(f"{self.name}: render failed: {type(exc).__name__}: {exc}") from None

    def __repr__(self) -> str:
        return f"ScorerTemplate(engine={self.engine!r}, variables={self.variables!r})"
