"""Typed-question templates: what a probability judge is asked, once per run (docs/probability.md)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from pybars import strlist

from ..errors import ConfigError
from ..scales import SCALES, Scale
from ..templates._handlebars import HELPERS, Template, compile_template, to_plain
from ..templates._prompts import prompt_source

__all__ = ["Question", "SEARCH_RELEVANCE_QUESTION", "TypedQuestionError", "TypedQuestionTemplate",
           "content_paths"]

#: the default typed question: search relevance of ``result`` for ``query``, as shipped in English
SEARCH_RELEVANCE_QUESTION = prompt_source("ProbabilityJudgeGrader", "search_relevance_question", "en", user_dir=[])

_PATH = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)`")


def content_paths(instructions: Any) -> list[str]:
    """The content paths (`` `result.fields.price` ``) in backticks in ``instructions``' strings, in order."""
    if isinstance(instructions, str):
        return list(dict.fromkeys(_PATH.findall(instructions)))
    inner = instructions.values() if isinstance(instructions, dict) else instructions \
        if isinstance(instructions, (list, tuple)) else ()
    return list(dict.fromkeys(p for x in inner for p in content_paths(x)))


class TypedQuestionError(ConfigError):
    """A typed-question template invalid for some scale; ``problems``: per scale name, what is wrong."""

    def __init__(self, name: str, problems: Mapping[str, list[str]]):
        self.problems = {k: list(v) for k, v in problems.items()}
        super().__init__("\n".join([f"{name}: the typed question is invalid for {len(self.problems)} scale(s):",
                                    *(f"  - {s}: {i}" for s, items in self.problems.items() for i in items)]))


@dataclass(frozen=True)
class Question:
    """A rendered typed question for one scale."""

    scale: Scale
    instructions: str | dict[str, Any] | list[Any]
    criteria: tuple[str | dict[str, Any], ...]
    text: str  # the template's JSON output

    def instructions_text(self) -> str:
        ins = self.instructions   # a string as is, an object as JSON
        return ins if isinstance(ins, str) else json.dumps(ins, ensure_ascii=False, indent=2)

    def criterion_text(self, grade: int) -> str:
        """The criterion of ``grade`` as prompt text (an object: description, ``Examples: a; b``, ``key: value``)."""
        c = self.criteria[grade - self.scale.min]
        if isinstance(c, str):
            return c
        parts = [c["description"]] if isinstance(c.get("description"), str) else []
        parts += ["Examples: " + "; ".join(map(_shown, value)) if key == "examples" and isinstance(value, list)
                  else f"{key}: {_shown(value)}" for key, value in c.items() if key != "description"]
        return " ".join(parts)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _json_prepare(value: Any, should_escape: bool) -> Any:   # pybars3's prepare, escaping for JSON strings
    if value is None:
        return ""
    if type(value) is strlist:  # block output and helpers that return JSON: already final
        return value
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, (bool, dict, list)) else str(value)
    return json.dumps(text, ensure_ascii=False)[1:-1] if should_escape else text


_HELPERS = {**HELPERS, "json": lambda this, value, *a, **k: strlist([json.dumps(value, ensure_ascii=False)])}


class TypedQuestionTemplate:
    """A typed-question template, checked for every one of ``scales`` at construction (docs/probability.md)."""

    def __init__(self, source: str, *, name: str = "question_template",
                 scales: Sequence[Scale | str] = SCALES, evaluation_name: str = "",
                 evaluation_description: str = "", variables: Mapping[str, Any] | None = None):
        self.name = name
        self.template = Template(source, name=name, strict=True)
        self._render_fn = compile_template(source, _json_prepare)[0]
        self.scales = tuple(Scale.get(s) for s in scales)
        if not self.scales:
            raise ConfigError("a typed question must serve at least one scale")
        self.evaluation_name = "" if evaluation_name is None else str(evaluation_name)
        self.evaluation_description = "" if evaluation_description is None else str(evaluation_description)
        self.variables = dict(variables or {})
        rendered = {scale.name: self._render(scale) for scale in self.scales}
        self.questions = {k: q for k, q in rendered.items() if isinstance(q, Question)}
        if problems := {k: q for k, q in rendered.items() if not isinstance(q, Question)}:
            raise TypedQuestionError(name, problems)

    def render(self, scale: Scale | str) -> Question:
        scale = Scale.get(scale)
        hit = self.questions.get(scale.name)
        if hit is None or hit.scale != scale:
            hit = self._render(scale)
            if not isinstance(hit, Question):
                raise TypedQuestionError(self.name, {scale.name: hit})
            self.questions[scale.name] = hit
        return hit

    def _render(self, scale: Scale) -> "Question | list[str]":
        """The question for ``scale``, or every problem of its render."""
        ctx = to_plain({**self.variables, **scale.template_vars(), "evaluation_name": self.evaluation_name,
                        "evaluation_description": self.evaluation_description})
        if missing := self.template.missing(ctx):
            return [f"template variable(s) {', '.join(map(repr, missing))} missing; "
                    f"available: {', '.join(sorted(ctx))}"]
        try:
            text = str(self._render_fn(ctx, helpers=_HELPERS))
        except Exception as exc:
            return [f"render failed: {type(exc).__name__}: {exc}"]
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            lines = text.splitlines() or [""]
            shown = lines[exc.lineno - 1].strip() if 0 < exc.lineno <= len(lines) else ""
            return [f"output is not valid JSON ({exc.msg}) at output line {exc.lineno}, "
                    f"column {exc.colno}: {shown[:80]!r}"]
        if not isinstance(data, dict):
            return [f"output must be a JSON object with 'instructions' and 'criteria', got {type(data).__name__}"]
        problems = _problems(scale, data)
        return problems or Question(scale, data["instructions"], tuple(data["criteria"]), text)

    def __repr__(self) -> str:
        return f"TypedQuestionTemplate(name={self.name!r}, scales={[s.name for s in self.scales]})"


def _problems(scale: Scale, data: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    if extra := sorted(set(data) - {"instructions", "criteria"}):
        problems.append(f"unexpected key(s) {extra}: the object holds only 'instructions' and 'criteria'")
    instructions = data.get("instructions")
    if instructions is None:
        problems.append("'instructions' is missing")
    elif isinstance(instructions, str) and not instructions.strip():
        problems.append("'instructions' is empty")
    elif not isinstance(instructions, (str, dict, list)) or not instructions:
        problems.append(f"'instructions' must be a non-empty string, object or array, got "
                        f"{json.dumps(instructions)[:60]}")
    criteria = data.get("criteria")
    if not isinstance(criteria, list):
        problems.append("'criteria' must be an array with one description per grade"
                        + (" (it is missing)" if criteria is None else ""))
        criteria = []
    elif len(criteria) != scale.size:
        problems.append(f"{len(criteria)} criteria, expected {scale.size} (one per grade "
                        f"{scale.min}-{scale.max}, lowest first)")
    return problems + [p for i, c in enumerate(criteria) for p in _criterion_problems(i, c)]


def _criterion_problems(i: int, c: Any) -> list[str]:
    if isinstance(c, str):
        return [] if c.strip() else [f"criteria[{i}] is an empty string"]
    if not isinstance(c, dict):
        return [f"criteria[{i}] must be a string or an object, got {json.dumps(c)[:60]}"]
    problems = [] if c else [f"criteria[{i}] is an empty object"]
    d = c.get("description")
    if "description" in c and not (isinstance(d, str) and d.strip()):
        problems.append(f"criteria[{i}].description must be a non-empty string")
    if "examples" in c and not isinstance(c.get("examples"), list):
        problems.append(f"criteria[{i}].examples must be an array")
    return problems
