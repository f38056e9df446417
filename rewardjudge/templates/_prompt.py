"""``PromptTemplate``: one prompt interface over Handlebars and sandboxed Jinja2."""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import ConfigError
from ._handlebars import Template
from ._jinja import JinjaTemplate

__all__ = ["ENGINES", "PromptTemplate", "normalize_engine"]

ENGINES = ("handlebars", "jinja2")
_ENGINE_ALIASES = {"handlebars": "handlebars", "hbs": "handlebars", "jinja2": "jinja2",
                   "jinja": "jinja2"}


def normalize_engine(engine: str) -> str:
    """``"handlebars"`` or ``"jinja2"`` (``"hbs"`` and ``"jinja"`` accepted)."""
    key = engine.strip().lower() if isinstance(engine, str) else engine
    if key not in _ENGINE_ALIASES:
        raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    return _ENGINE_ALIASES[key]


def _delegated(attr: str, doc: str | None = None) -> property:
    return property(lambda self: getattr(self._impl, attr), doc=doc)


class PromptTemplate:
    """A judge prompt template, compiled and checked at construction (see docs/templates.md);
    ``partials``: Handlebars only; ``defaults``: context values every render starts from.

    >>> PromptTemplate("Q: {{q}}").render({"q": "2+2?"})
    'Q: 2+2?'"""

    __slots__ = ("_impl", "defaults")

    def __init__(self, source: str, engine: str = "handlebars", *, name: str = "template",
                 strict: bool = True, partials: Mapping[str, Any] | None = None,
                 defaults: Mapping[str, Any] | None = None):
        self.defaults = dict(defaults or {})
        if normalize_engine(engine) == "handlebars":
            self._impl: Any = Template(source, name=name, strict=strict, partials=partials)
        elif partials:
            raise ConfigError(f"{name}: partials are a Handlebars feature; a Jinja2 template "
                              f"takes its shared text as variables")
        else:
            self._impl = JinjaTemplate(source, name=name, strict=strict)

    @classmethod
    def wrap(cls, template: Any) -> "PromptTemplate":
        """A ``PromptTemplate`` over an already built ``Template`` or ``JinjaTemplate``."""
        if isinstance(template, PromptTemplate):
            return template
        if getattr(template, "engine", None) not in ENGINES:
            raise ConfigError(f"not a Handlebars or Jinja2 template: {template!r}")
        obj = cls.__new__(cls)
        obj._impl, obj.defaults = template, {}
        return obj

    engine = _delegated("engine", '''``"handlebars"`` or ``"jinja2"``.''')
    source = _delegated("source")
    name = _delegated("name")
    strict = _delegated("strict")
    variables = _delegated("variables", "What the template reads from its context, in first-use order.")

    @property
    def template(self) -> Any:
        """The engine's own template object (``Template`` or ``JinjaTemplate``)."""
        return self._impl

    def missing(self, context: Mapping[str, Any]) -> list[str]:
        """The listed variables ``context`` does not hold."""
        return self._impl.missing({**self.defaults, **context} if self.defaults else context)

    def remembered(self, context: Mapping[str, Any]) -> str | None:
        """The remembered render of ``context``, or None (see ``Template.remembered``)."""
        remembered = getattr(self._impl, "remembered", None)
        if remembered is None:
            return None
        return remembered({**self.defaults, **context} if self.defaults else context)

    def render(self, context: Mapping[str, Any], *, strict: bool | None = None) -> str:
        """The prompt text for ``context`` (see the class doc for errors)."""
        return self._impl.render({**self.defaults, **context} if self.defaults else context,
                                 strict=strict)

    def __repr__(self) -> str:
        return (f"PromptTemplate(engine={self.engine!r}, name={self.name!r}, "
                f"variables={self.variables!r})")
