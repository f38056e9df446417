"""Jinja2 templates in a restricted sandbox, the alternative to Handlebars (see docs/templates.md).

Only ``if for set with filter raw autoescape`` statements are allowed, and Handlebars tags are
refused, at construction with their line. Rendering runs in Jinja2's ``SandboxedEnvironment``
without HTML escaping; undefined variables render empty unless ``strict``.

>>> JinjaTemplate("Q: {{ q }}{% if note %} ({{ note }}){% endif %}").render({"q": "2+2?"})
'Q: 2+2?'
"""

from __future__ import annotations

import functools
import re
from typing import Any, Mapping

from ..errors import TemplateError, TemplateVariableError
from ._hbs_syntax import _line_col
from ._plain import to_plain

__all__ = ["ALLOWED_STATEMENTS", "JinjaTemplate"]

ALLOWED_STATEMENTS = ("if", "for", "set", "with", "filter", "raw", "autoescape")

@functools.lru_cache(maxsize=None)
def _env():
    """One shared sandboxed environment (Jinja environments are thread-safe for rendering)."""
    from jinja2 import ChainableUndefined
    from jinja2.sandbox import SandboxedEnvironment

    env = SandboxedEnvironment(autoescape=False, undefined=ChainableUndefined, keep_trailing_newline=True)
    for name in ("lipsum", "cycler", "joiner"):
        env.globals.pop(name, None)
    return env


def _refuse_tags(source: str) -> None:
    """Refuse every statement tag not in ``ALLOWED_STATEMENTS`` (an allowlist), by name."""
    from jinja2 import lexer as jl

    try:
        tokens = list(_env().lex(source))
    except Exception as exc:  # the lexer raises TemplateSyntaxError with a line number
        raise TemplateError(f"template: {getattr(exc, 'message', exc)}",
                            line=getattr(exc, "lineno", None), column=1, source=source) from None
    for i, (lineno, kind, value) in enumerate(tokens):
        if kind != jl.TOKEN_BLOCK_BEGIN:
            continue
        _, nkind, tag = next(((ln, k, v) for ln, k, v in tokens[i + 1:] if k != jl.TOKEN_WHITESPACE),
                             (None, None, ""))
        if nkind != jl.TOKEN_NAME or tag.startswith("end") or tag in ("else", "elif", *ALLOWED_STATEMENTS):
            continue
        line_text = source.splitlines()[lineno - 1] if source.splitlines() else ""
        raise TemplateError(f"template: '{{% {tag} %}}' is not allowed; allowed statements: "
                            f"{', '.join(ALLOWED_STATEMENTS)}", line=lineno,
                            column=line_text.find("{%") + 1 or 1, source=source)


_JINJA_OPEN = re.compile(r"\{\{|\{%|\{#")
_RAW = re.compile(r"\{%[-+]?\s*raw\s*[-+]?%\}.*?\{%[-+]?\s*endraw\s*[-+]?%\}", re.S)
_HANDLEBARS = re.compile(r"\{\{(?:\{|~|[-+]?\s*(?:[#/^>!&]|else\s*[-+]?\}\}|@\w|\.\./))")


def _refuse_handlebars(source: str) -> None:
    """Refuse Handlebars tags, outside ``{% raw %}`` blocks and ``{# comments #}``."""
    i = 0
    while True:
        m = _JINJA_OPEN.search(source, i)
        if m is None:
            return
        pos, opener = m.start(), m.group(0)
        if opener == "{#":
            end = source.find("#}", pos + 2)
            i = len(source) if end < 0 else end + 2
            continue
        if opener == "{%":
            raw = _RAW.match(source, pos)
            i = raw.end() if raw else pos + 2
            continue
        if _HANDLEBARS.match(source, pos):
            line, column = _line_col(source, pos)
            end = source.find("}}", pos)
            tag = source[pos:end + 2] if 0 <= end < pos + 80 else source[pos:pos + 20]
            raise TemplateError(f"template: {tag!r} is Handlebars syntax, and this template is "
                                f"Jinja2 (write {{% if x %}}...{{% endif %}}, {{% for x in xs %}}..."
                                f"{{% endfor %}}, {{# a comment #}}, or use engine='handlebars')",
                                line=line, column=column, source=source)
        i = pos + 2


def _first_use_order(source: str, names: set[str]) -> list[str]:
    from jinja2 import lexer as jl

    seen = dict.fromkeys(v for _, kind, v in _env().lex(source) if kind == jl.TOKEN_NAME and v in names)
    return [*seen, *sorted(names - set(seen))]


class JinjaTemplate:
    """A validated, sandboxed Jinja2 template with the ``Template`` interface.

    ``variables``: the top-level names it reads and does not set itself, in first-use order.
    ``render(context)`` raises ``TemplateVariableError`` for a missing variable only when
    ``strict``, and ``TemplateError`` when the sandbox refuses an operation or a filter fails."""

    __slots__ = ("source", "name", "strict", "_template", "variables")

    engine = "jinja2"

    def __init__(self, source: str, *, name: str = "template", strict: bool = False):
        if not isinstance(source, str):
            raise TemplateError(f"{name}: template source must be a str, got {type(source).__name__}")
        from jinja2 import TemplateSyntaxError, meta

        self.source = source
        self.name = name
        self.strict = strict
        try:
            _refuse_handlebars(source)
            _refuse_tags(source)
            tree = _env().parse(source)
            self._template = _env().from_string(tree)
        except TemplateError as exc:
            exc.args = (exc.args[0].replace("template:", f"{name}:", 1),)
            raise
        except TemplateSyntaxError as exc:
            raise TemplateError(f"{name}: {exc.message}", line=exc.lineno, column=1,
                                source=source) from None
        self.variables: list[str] = _first_use_order(source, set(meta.find_undeclared_variables(tree)))

    def missing(self, context: Mapping[str, Any]) -> list[str]:
        """Variables the template reads that ``context`` does not hold."""
        return [v for v in self.variables if v not in context]

    def render(self, context: Mapping[str, Any], *, strict: bool | None = None) -> str:
        plain = to_plain(dict(context))
        if self.strict if strict is None else strict:
            missing = self.missing(plain)
            if missing:
                raise TemplateVariableError(missing, list(plain))
        return render_sandboxed(self._template, plain, self.name)

    def __repr__(self) -> str:
        return f"JinjaTemplate(name={self.name!r}, variables={self.variables!r})"


def render_sandboxed(compiled: Any, values: Mapping[str, Any], name: str) -> str:
    """Render a sandboxed template; a refusal or failure is a ``TemplateError`` naming ``name``."""

    from jinja2.exceptions import SecurityError, TemplateError as JinjaError

    try:
        return compiled.render(values)
    except SecurityError as exc:
        raise TemplateError(f"{name}: refused by the sandbox: {exc}") from None
    except (JinjaError, TypeError, ValueError, ArithmeticError) as exc:
        raise TemplateError(f"{name}: render failed: {type(exc).__name__}: {exc}") from None
