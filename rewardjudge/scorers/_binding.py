"""Bindings: where each of a scorer's variables comes from (the sources: docs/scorers.md), pinned to
one version. A completion lacking a mapped field is the policy's fault (penalized); a missing turn
or metadata value renders empty and is listed in ``extra["missing_variables"]``."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .._thread_context import thread_context
from ..errors import ConfigError, OutputParserException
from ..readouts import json_objects
from ..thread import ROLES, StringThread
from ..templates import Template
from ..templates._plain import to_plain
from ..templates._prompts import prompt_source
from ._builtins import (BUILTIN_NAMES, BUILTIN_VARIABLES, MISSING, builtin_functions, format_messages,
                        lookup_attribute, lookup_path, role_lines)
from ._config import ScorerConfig, pinned

__all__ = ["MalformedCompletion", "ScorerBinding", "parse_source"]

log = logging.getLogger("rewardjudge")

_KINDS = ("completion", "turn", "metadata", "transcript", "input_messages", "output_messages",
          "context", "literal")


class MalformedCompletion(OutputParserException):
    """The completion does not hold what a binding reads from it (the policy's fault: a grader
    penalizes it, as any completion that does not parse)."""

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class _Source:
    kind: str
    arg: str | None

    def text(self) -> str:
        return self.kind if self.arg is None else f"{self.kind}:{self.arg}"


def parse_source(source: Any, variable: str = "?") -> _Source:
    """Check one source string; ``ConfigError`` naming the variable and the accepted forms."""
    if not isinstance(source, str) or not source.strip():
        raise ConfigError(f"binding for {variable!r} must be a source string such as "
                          f"'completion:answer', got {source!r}")
    kind, sep, arg = source.partition(":")
    kind = kind.strip()
    if kind not in _KINDS:
        raise ConfigError(f"binding for {variable!r}: unknown source {source!r}; expected one of "
                          f"completion, completion:<field>, turn:<index|role>, metadata:<key>, "
                          f"transcript, input_messages[:<key>], output_messages[:<key>], context, "
                          f"literal:<text>")
    if kind == "literal":
        return _Source(kind, arg if sep else "")
    arg = arg.strip() if sep else None
    needs = {"metadata": "a key, e.g. 'metadata:reference'",
             "turn": "an index or a role, e.g. 'turn:-2' or 'turn:user'"}
    problem = (f"{kind!r} takes no argument, got {source!r}" if kind in ("transcript", "context") and arg
               else f"{kind!r} needs {needs[kind]}" if kind in needs and not arg else None)
    if problem is None and kind == "turn" and arg not in ROLES:
        try:
            int(arg)
        except ValueError:
            problem = f"turn:{arg} is neither an index nor one of the roles {ROLES}"
    if problem:
        raise ConfigError(f"binding for {variable!r}: {problem}")
    if kind in ("completion", "input_messages", "output_messages") and arg == "":
        arg = None
    return _Source(kind, arg)


def _parse_completion(text: str) -> dict[str, Any]:
    """The first JSON object of the completion (the one scanner: NaN refused, nesting bounded)."""
    spans = json_objects(text)
    if not spans:
        raise MalformedCompletion("the completion holds no valid JSON object (or it nests too "
                                  "deep, or holds NaN or an infinite number)")
    return spans[0].value


def _completion_value(var: str, path: str | None, sample: StringThread, parsed: list) -> Any:
    """The completion, or its field ``path`` (the completion parsed once, into ``parsed``)."""
    if path is None:
        return sample.completion()
    if not parsed:
        parsed.append(_parse_completion(sample.completion()))
    value = lookup_path(parsed[0], path)
    if value is MISSING:
        raise MalformedCompletion(f"the completion has no field {path!r} (needed for {var!r})")
    return value


def _messages_value(src: _Source, sample: StringThread) -> Any:
    """``input_messages`` / ``output_messages``: the sample's, or those a metadata key holds."""
    if src.arg is not None:
        held = lookup_attribute(sample.metadata, src.arg)
        role = "user" if src.kind == "input_messages" else "assistant"
        return MISSING if held is MISSING else role_lines(format_messages(held, role))
    if src.kind != "output_messages":   # input_messages, context
        return role_lines(sample.context_turns())
    completion = sample.completion()
    return role_lines([("assistant", completion)]) if completion else MISSING


def _cleaned(fn: Callable[..., Any], clean: Callable[[Any], Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        return clean(fn(*args, **kwargs))

    call.__name__ = getattr(fn, "__name__", "function")
    return call


class ScorerBinding:
    """A scorer version (``version``: the config's SHA-256 id) pinned with a variable -> source
    mapping. Every mapped name must be a declared variable of the template or a built-in name
    (kept in ``shadowed``: the built-in wins); ``from_dict`` checks the pinned version's hash."""

    __slots__ = ("config", "mapping", "scorer_name", "scorer_slug", "version", "shadowed", "_sources",
                 "_instructions")

    def __init__(self, config: ScorerConfig, mapping: Mapping[str, str] | None = None, *,
                 scorer_name: str = "scorer", scorer_slug: str | None = None):
        if not isinstance(config, ScorerConfig):
            config = ScorerConfig.from_dict(config)
        if mapping is not None and not isinstance(mapping, Mapping):
            raise ConfigError(f"a binding's mapping must map variable -> source, got {mapping!r:.80}")
        declared = config.variables
        sources: dict[str, _Source] = {}
        shadowed: dict[str, _Source] = {}
        for var, src in dict(mapping or {}).items():
            if var in BUILTIN_NAMES:
                shadowed[var] = parse_source(src, var)  # checked, kept, not used: built-ins win
                continue
            if var not in declared:
                raise ConfigError(f"the template does not use {var!r}; its variables: "
                                  f"{', '.join(declared) or '(none)'}")
            sources[var] = parse_source(src, var)
        for var in declared:
            sources.setdefault(var, _Source("metadata", var))
        if shadowed:
            log.info("scorer %s: built-in name(s) %s take precedence over their mapping",
                     scorer_slug or scorer_name, ", ".join(shadowed))
        self.config = config
        self._sources = {v: sources[v] for v in declared}
        #: mapped names that are built-ins: the built-in value is rendered instead
        self.shadowed = list(shadowed)
        self.mapping = {v: s.text() for v, s in {**self._sources, **shadowed}.items()}
        self.scorer_name = scorer_name
        self.scorer_slug = scorer_slug
        self.version = config.version_id
        self._instructions: dict[str | None, dict[str, str]] = {}

    @property
    def variables(self) -> list[str]:
        """The declared variables (built-in names excluded), in first-use order."""
        return list(self._sources)

    def _value(self, var: str, src: _Source, sample: StringThread, parsed: list) -> Any:
        if src.kind == "completion":
            return _completion_value(var, src.arg, sample, parsed)
        if src.kind == "turn":
            turns = sample.turns
            if src.arg in ROLES:
                return next((c for r, c in reversed(turns) if r == src.arg), MISSING)
            i = int(src.arg)
            return turns[i][1] if -len(turns) <= i < len(turns) else MISSING
        if src.kind == "metadata":
            return lookup_attribute(sample.metadata, src.arg)
        if src.kind == "transcript":
            return role_lines(sample.turns)
        if src.kind in ("input_messages", "output_messages", "context"):
            return _messages_value(src, sample)
        return src.arg  # literal

    def context(self, sample: StringThread, *, clean: Callable[[Any], Any] | None = None
                ) -> tuple[dict[str, Any], list[str]]:
        """The template data for ``sample`` and the variables that had no value; ``clean`` neutralises
        each mapped value (decoded from JSON, whose escapes a neutraliser of the text does not see)."""
        ctx: dict[str, Any] = {}
        missing: list[str] = []
        parsed: list = []
        for var, src in self._sources.items():
            value = self._value(var, src, sample, parsed)
            if value is MISSING or value is None:
                missing.append(var)
            else:
                ctx[var] = value if clean is None or src.kind == "literal" else clean(value)
        shared = thread_context(sample)   # the data built-ins over the mapped values
        ctx.update({k: shared[k] for k in BUILTIN_VARIABLES if k in shared}, completion=sample.completion(),
                   transcript=role_lines(sample.turns), context=role_lines(sample.context_turns()),
                   last_user_message=sample.last_user_content(), metadata=dict(sample.metadata))
        return ctx, missing

    def completion_fields(self, sample: StringThread) -> dict[str, Any]:
        """The values of the variables bound to ``completion:<path>`` (what the content-free screen reads)."""
        parsed: list = []
        return {var: _completion_value(var, src.arg, sample, parsed) for var, src in self._sources.items()
                if src.kind == "completion" and src.arg is not None}

    @property
    def reads_completion_fields(self) -> bool:
        """Whether a variable is bound to a field of the completion (``completion:<path>``)."""
        return any(src.kind == "completion" and src.arg is not None for src in self._sources.values())

    def bound_completion(self, sample: StringThread) -> "dict[str, Any] | None":
        """``sample``'s completion's first JSON object where this binding reads fields of it, else None."""
        if not self.reads_completion_fields:
            return None
        return _parse_completion(sample.completion())

    def constants(self, language: str | None = None) -> dict[str, str]:
        """``output_schema`` and ``output_instructions`` (in ``language``) for this version."""
        if language not in self._instructions:
            schema = json.dumps(self.config.output_spec.json_schema(), ensure_ascii=False)
            source = prompt_source("ScorerGrader", "output_instructions", language)
            self._instructions[language] = {"output_schema": schema, "output_instructions": Template(
                source, name="ScorerGrader/output_instructions").render({"output_schema": schema})}
        return self._instructions[language]

    def render(self, sample: StringThread, *, language: str | None = None,
               clean: Callable[[Any], Any] | None = None) -> tuple[str, list[str]]:
        """The judge's user message for ``sample`` and the variables that had no value (``clean``: as in
        ``context``, and on the functions' results)."""
        context, missing = self.context(sample, clean=clean)
        context.update(self.constants(language))
        template = self.config.template
        if template.engine != "jinja2":
            return template.render(context), missing
        # the function built-ins are callables, which a template's context refuses: they go in
        # as functions, after the data (built-ins take precedence)
        functions = builtin_functions(to_plain(dict(sample.metadata)))
        if clean is not None:
            functions = {name: _cleaned(fn, clean) for name, fn in functions.items()}
        return template.template.render(context, functions=functions), missing

    def to_dict(self) -> dict[str, Any]:
        return {"scorer_name": self.scorer_name, "scorer_slug": self.scorer_slug,
                "version": self.version, "config": self.config.to_dict(), "mapping": dict(self.mapping)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ScorerBinding":
        if not isinstance(data, Mapping) or "config" not in data or "version" not in data:
            raise ConfigError("a binding needs 'config' and 'version' (as written by to_dict)")
        config = pinned(ScorerConfig.from_dict(data["config"]), data["version"], "binding pins version",
                        "the config was edited after pinning")
        return cls(config, data.get("mapping"), scorer_name=data.get("scorer_name", "scorer"),
                   scorer_slug=data.get("scorer_slug"))

    def __repr__(self) -> str:
        return (f"ScorerBinding({self.scorer_slug or self.scorer_name!r}, version={self.version[:12]}, "
                f"mapping={self.mapping!r})")
