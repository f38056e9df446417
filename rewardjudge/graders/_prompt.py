"""The prompt step every grader shares: templates and context in, chat messages out (docs/pipeline.md)."""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ..errors import TemplateVariableError
from ..readouts._text import template_tag_names
from ..templates._prompt import PromptTemplate
from ..templates._handlebars import to_plain_context

__all__ = ["JudgePrompt"]


class JudgePrompt:
    """System and user templates (``user`` a source or a compiled ``PromptTemplate``); ``prefix``: an
    assistant turn the judge's reply continues; ``strip`` trims the rendered texts."""

    __slots__ = ("system", "user", "prefix", "strip", "tags", "data_roots")

    def __init__(self, system: str | None, user: str | PromptTemplate, *, engine: str = "handlebars",
                 strict: bool = True, prefix: str | None = None, strip: bool = False,
                 names: tuple[str, str] = ("system_template", "user_template")):
        self.system = PromptTemplate(system or "", engine, name=names[0], strict=strict)
        self.user = (user if isinstance(user, PromptTemplate)
                     else PromptTemplate(user, engine, name=names[1], strict=strict))
        self.prefix, self.strip = prefix, strip
        #: the tag names the templates write (``<response>`` -> ``response``)
        self.tags: tuple[str, ...] = tuple(template_tag_names(self.system.source, self.user.source))
        #: the names holding the policy's own fields (a grader's ``completion_model``): a path below one
        #: that the completion leaves unset (a null model, a missing key, an empty list) renders empty
        self.data_roots: frozenset[str] = frozenset()

    @property
    def engine(self) -> str:
        return self.user.engine

    @property
    def variables(self) -> list[str]:   # the top-level names the templates read, in first-use order
        return list(dict.fromkeys(p.split(".", 1)[0] for t in (self.system, self.user) for p in t.variables))

    def check(self, names: Iterable[str] | None) -> None:
        """Raise ``TemplateVariableError`` when a strict template reads a name outside ``names`` (None: no check)."""
        if names is None:
            return
        known = set(names)
        for template in (self.system, self.user):
            missing = sorted(v for v in template.variables if v.split(".", 1)[0] not in known)
            if template.strict and missing:
                raise TemplateVariableError(missing, sorted(known))

    def render(self, context: Mapping[str, Any], *, strict: bool | None = None) -> tuple[str, str]:
        system, user = self.system.remembered(context), self.user.remembered(context)
        if system is None or user is None:
            plain = to_plain_context(context)   # converted once for both
            if self.data_roots:
                self._check_paths(plain, strict)
                strict = False
            system = self.system.render(plain, strict=strict) if system is None else system
            user = self.user.render(plain, strict=strict) if user is None else user
        return (system.strip(), user.strip()) if self.strip else (system, user)

    def _check_paths(self, plain: Any, strict: bool | None) -> None:
        """A strict template's ``TemplateVariableError`` for the names ``plain`` lacks, leaving out the
        paths below ``data_roots``: what the policy leaves unset is its answer, not the grader's
        configuration (hunt 26: ``{{answer.value}}`` with ``answer`` null raised out of ``grade``)."""
        roots = self.data_roots
        for template in (self.system, self.user):
            if template.strict if strict is None else strict:
                missing = [p for p in template.missing(plain) if "." not in p or p.split(".", 1)[0] not in roots]
                if missing:
                    raise TemplateVariableError(missing, plain)

    def messages(self, context: Mapping[str, Any],
                 image_parts: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
        """The system message (if it has text), the user message (``image_parts`` after the text), the prefix."""
        system, user = self.render(context)
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system.strip() else []
        messages.append({"role": "user", "content": [{"type": "text", "text": user}, *map(dict, image_parts)]
                         if image_parts else user})
        if self.prefix is not None:
            messages.append({"role": "assistant", "content": self.prefix})
        return messages

    def sources(self) -> dict[str, str]:
        return {"system_template": self.system.source, "user_template": self.user.source}
