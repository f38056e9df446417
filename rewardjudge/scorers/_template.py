"""A scorer's prompt template: sandboxed Jinja2 by default (the scorer document's engine),
Handlebars on request; checking is the engines' (``rewardjudge.templates``). Handlebars templates
cannot call the function built-ins, so one naming them is refused.

>>> ScorerTemplate("Product: {{ product }}{% for s in steps %} {{ s }}{% endfor %}").variables
['product', 'steps']
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from ..errors import ConfigError, TemplateError
from ..templates._handlebars import Template
from ..templates._jinja import JinjaTemplate, render_sandboxed
from ..templates._plain import to_plain
from ._builtins import BUILTIN_FUNCTIONS

__all__ = ["DEFAULT_ENGINE", "ENGINES", "ScorerTemplate"]

ENGINES = ("jinja2", "handlebars")
DEFAULT_ENGINE = "jinja2"
_ALIASES = {"jinja": "jinja2", "hbs": "handlebars"}


class ScorerTemplate:
    """A checked scorer prompt template. ``variables``: the top-level names it reads and does not
    set (built-ins included), in first-use order. ``render(context, functions)`` renders ``context``
    with ``functions`` callable from a Jinja2 template; an undefined variable renders empty."""

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
            # JinjaTemplate.render takes plain data only: the function built-ins need the env itself
            self._checked = JinjaTemplate(source, name=name)  # allowlist, syntax, variables
            self.variables = list(self._checked.variables)
            self._compiled = self._checked._template   # the sandboxed env's own compile
        else:
            self._checked = Template(source, name=name, strict=False)
            self._compiled = None
            self.variables = list(dict.fromkeys(p.split(".", 1)[0] for p in self._checked.variables))
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
