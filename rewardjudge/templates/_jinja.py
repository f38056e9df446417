"""Jinja2 templates in a restricted sandbox, the alternative to Handlebars (see docs/templates.md).

>>> JinjaTemplate("Q: {{ q }}{% if note %} ({{ note }}){% endif %}").render({"q": "2+2?"})
'Q: 2+2?'"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, Mapping

from ..errors import TemplateError, TemplateVariableError
from ._hbs_syntax import _error
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


def _lex(source: str) -> list[tuple[int, str, str]]:
    """Jinja2's tokens of ``source`` but whitespace, statement tags refused unless in ``ALLOWED_STATEMENTS`` (an
    allowlist), by name and line."""
    from jinja2 import lexer as jl

    try:
        tokens = list(_env().lex(source))
    except Exception as exc:  # the lexer raises TemplateSyntaxError with a line number
        raise TemplateError(f"template: {getattr(exc, 'message', exc)}",
                            line=getattr(exc, "lineno", None), column=1, source=source) from None
    tokens = [t for t in tokens if t[1] != jl.TOKEN_WHITESPACE]
    # each statement's name is the token after its "{%" (one pass: no slice per statement)
    for (lineno, kind, _), (_, nkind, tag) in zip(tokens, [*tokens[1:], (0, None, "")]):
        if kind != jl.TOKEN_BLOCK_BEGIN or nkind != jl.TOKEN_NAME or tag.startswith("end") \
                or tag in ("else", "elif", *ALLOWED_STATEMENTS):
            continue
        line_text = (source.splitlines() or [""])[lineno - 1]
        raise TemplateError(f"template: '{{% {tag} %}}' is not allowed; allowed statements: "
                            f"{', '.join(ALLOWED_STATEMENTS)}", line=lineno,
                            column=line_text.find("{%") + 1 or 1, source=source)
    return tokens


# what Jinja2 never renders (comments, raw blocks) is skipped; a Handlebars tag elsewhere is refused
_HANDLEBARS = re.compile(r"\{#.*?(?:#\}|\Z)|\{%[-+]?\s*raw\s*[-+]?%\}.*?\{%[-+]?\s*endraw\s*[-+]?%\}"
                        r"|(?P<tag>\{\{(?:\{|~|[-+]?\s*(?:[#/^>!&]|else\s*[-+]?\}\}|@\w|\.\./)))", re.S)


def _refuse_handlebars(source: str) -> None:
    """Refuse Handlebars tags, outside ``{% raw %}`` blocks and ``{# comments #}``."""
    for m in _HANDLEBARS.finditer(source):
        if m.group("tag"):
            pos = m.start()
            end = source.find("}}", pos)
            tag = source[pos:end + 2] if 0 <= end < pos + 80 else source[pos:pos + 20]
            raise _error(f"template: {tag!r} is Handlebars syntax, and this template is "
                         f"Jinja2 (write {{% if x %}}...{{% endif %}}, {{% for x in xs %}}..."
                         f"{{% endfor %}}, {{# a comment #}}, or use engine='handlebars')", source, pos)


class JinjaTemplate:
    """A validated, sandboxed Jinja2 template with the ``Template`` interface (``variables``: the
    top-level names it reads and does not set itself, in first-use order)."""

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
            tokens = _lex(source)
            tree = _env().parse(source)
            self._template = _env().from_string(tree)
        except TemplateError as exc:
            exc.args = (exc.args[0].replace("template:", f"{name}:", 1),)
            raise
        except TemplateSyntaxError as exc:
            raise TemplateError(f"{name}: {exc.message}", line=exc.lineno, column=1,
                                source=source) from None
        names = meta.find_undeclared_variables(tree)
        first = dict.fromkeys(v for _, kind, v in tokens if kind == "name" and v in names)
        self.variables: list[str] = [*first, *sorted(names - set(first))]

    def missing(self, context: Mapping[str, Any]) -> list[str]:
        """Variables the template reads that ``context`` does not hold."""
        return [v for v in self.variables if v not in context]

    def render(self, context: Mapping[str, Any], *, strict: bool | None = None,
               functions: Mapping[str, Callable[..., Any]] | None = None) -> str:
        """``context`` (as plain data) rendered; ``functions`` are callables the template may call,
        put in as they are after the context (a function wins over a value of its name)."""
        from jinja2.exceptions import SecurityError, TemplateError as JinjaError

        values = {**to_plain(dict(context)), **(functions or {})}
        if self.strict if strict is None else strict:
            missing = self.missing(values)
            if missing:
                raise TemplateVariableError(missing, values)
        try:
            return self._template.render(values)
        except SecurityError as exc:
            raise TemplateError(f"{self.name}: refused by the sandbox: {exc}") from None
        except (JinjaError, TypeError, ValueError, ArithmeticError) as exc:
            raise TemplateError(f"{self.name}: render failed: {type(exc).__name__}: {exc}") from None

    def __getstate__(self) -> dict[str, Any]:   # Jinja2's compiled code cannot pickle: recompile
        return {"source": self.source, "name": self.name, "strict": self.strict}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["source"], name=state["name"], strict=state["strict"])

    def __repr__(self) -> str:
        return f"JinjaTemplate(name={self.name!r}, variables={self.variables!r})"

