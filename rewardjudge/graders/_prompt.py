"""The prompt step every grader shares: templates and context in, chat messages out.

>>> p = JudgePrompt("Grade answers.", "Q: {{q}}\\nA: {{a}}")
>>> p.messages({"q": "2+2?", "a": "4"})
[{'role': 'system', 'content': 'Grade answers.'}, {'role': 'user', 'content': 'Q: 2+2?\\nA: 4'}]
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ..errors import TemplateVariableError
from ..readouts._text import template_tag_names
from ..templates._prompt import PromptTemplate
from ..templates._handlebars import to_plain_context

__all__ = ["JudgePrompt"]


class JudgePrompt:
    """System and user templates (Handlebars or sandboxed Jinja2), an optional reply prefix;
    renders chat messages. ``system`` may be empty or None (no system message; neither for
    one that renders blank); ``user`` a source or a ``PromptTemplate`` compiled already (a
    scorer's); ``strip`` trims the rendered texts; ``prefix``: an assistant turn the judge's
    reply continues (``"Grade: "``)."""

    __slots__ = ("system", "user", "prefix", "strip", "tags")

    def __init__(self, system: str | None, user: str | PromptTemplate, *, engine: str = "handlebars",
                 strict: bool = True, prefix: str | None = None, strip: bool = False,
                 names: tuple[str, str] = ("system_template", "user_template")):
        self.system = PromptTemplate(system or "", engine, name=names[0], strict=strict)
        self.user = (user if isinstance(user, PromptTemplate)
                     else PromptTemplate(user, engine, name=names[1], strict=strict))
        self.prefix = prefix
        self.strip = strip
        #: the tag names the templates write (``<response>`` -> ``response``)
        self.tags: tuple[str, ...] = tuple(template_tag_names(self.system.source, self.user.source))

    @property
    def engine(self) -> str:
        return self.user.engine

    @property
    def variables(self) -> list[str]:
        """The top-level names the templates read, in first-use order."""
        return list(dict.fromkeys(p.split(".", 1)[0] for t in (self.system, self.user) for p in t.variables))

    def check(self, names: Iterable[str] | None) -> None:
        """Raise ``TemplateVariableError`` when a strict template reads a name
        outside ``names`` (None: not known before a real sample; no check)."""
        if names is None:
            return
        known = set(names)
        for template in (self.system, self.user):
            missing = sorted(v for v in template.variables if v.split(".", 1)[0] not in known)
            if template.strict and missing:
                raise TemplateVariableError(missing, sorted(known))

    def render(self, context: Mapping[str, Any], *, strict: bool | None = None) -> tuple[str, str]:
        """The system and user texts for ``context`` (converted to plain data once)."""
        plain = to_plain_context(context)
        system = self.system.render(plain, strict=strict)
        user = self.user.render(plain, strict=strict)
        if self.strip:
            system, user = system.strip(), user.strip()
        return system, user

    def messages(self, context: Mapping[str, Any],
                 image_parts: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
        """The chat messages for ``context``: the system message (if it has text), the user
        message (``image_parts`` after the text), the reply prefix (if any)."""
        system, user = self.render(context)
        messages: list[dict[str, Any]] = ([{"role": "system", "content": system}]
                                          if system and not system.isspace() else [])
        messages.append({"role": "user", "content": [{"type": "text", "text": user}, *map(dict, image_parts)]
                         if image_parts else user})
        if self.prefix is not None:
            messages.append({"role": "assistant", "content": self.prefix})
        return messages

    def sources(self) -> dict[str, str]:
        """The template sources (for a grader's ``config``)."""
        return {"system_template": self.system.source, "user_template": self.user.source}
