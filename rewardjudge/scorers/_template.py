"""A scorer's prompt template: sandboxed Jinja2 by default, Handlebars on request.

The scorer document specifies Jinja2, so ``template_engine`` defaults to
``"jinja2"``; ``"handlebars"`` is the alternative. Checking is the engines'
(``rewardjudge.templates``): a template written in the *other* engine's
syntax (``{% if product %}`` under Handlebars, ``{{#if x}}`` or ``{{else}}``
under Jinja2 outside ``{% raw %}``) is refused at construction with its
line, never rendered literally; Jinja2 allows only the statements ``if for
set with filter raw autoescape``; loop variables and ``set`` locals are not
variables.

Jinja2 templates render in a sandbox with the function built-ins (``attr``,
``format_input_transcript``, ``format_output_transcript``; see
``builtins.py``) in their context. Handlebars templates cannot call
functions, so one naming a function built-in is refused (read
``{{metadata.key}}`` there).

>>> ScorerTemplate("Product: {{ product }}{% for s in steps %} {{ s }}{% endfor %}").variables
['product', 'steps']
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..errors import ConfigError, TemplateError
from ..templates._handlebars import Template
from ..templates._jinja import JinjaTemplate, _env as _render_env, render_sandboxed
from ..templates._plain import to_plain
from ._builtins import BUILTIN_FUNCTIONS

__all__ = ["DEFAULT_ENGINE", "ENGINES", "ScorerTemplate"]

ENGINES = ("jinja2", "handlebars")
DEFAULT_ENGINE = "jinja2"
_ALIASES = {"jinja": "jinja2", "hbs": "handlebars"}


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
        if engine == "jinja2":
            # JinjaTemplate.render takes plain data only: the function built-ins need the
            # sandboxed environment itself
            self._checked = JinjaTemplate(source, name=name)  # allowlist, syntax, variables
            self.variables = list(self._checked.variables)
            self._compiled = _render_env().from_string(source)
        else:
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
        values = to_plain(dict(context))
        values.update(functions or {})  # after the data: built-ins take precedence
        return render_sandboxed(self._compiled, values, self.name)

    def __repr__(self) -> str:
        return f"ScorerTemplate(engine={self.engine!r}, variables={self.variables!r})"
