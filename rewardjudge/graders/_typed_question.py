"""Typed-question templates: what a probability judge is asked, once per run (docs/probability.md).

A Handlebars template whose output is one JSON object: ``instructions`` (naming the content
by path in backticks, `` `result.fields.price` ``) and ``criteria`` (one per grade, lowest
first), checked at construction for every scale it serves; values are JSON-escaped.

>>> q = TypedQuestionTemplate('''{"instructions": "Is `completion` about {{evaluation_name}}?",
...  "criteria": [{{#each scale_labels}}"{{label}}"{{#unless @last}}, {{/unless}}{{/each}}]}''',
...  evaluation_name='cats "and" dogs')
>>> q.render("binary").instructions
'Is `completion` about cats "and" dogs?'
"""

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

#: Releval's default Jev question: search relevance of ``result`` for ``query`` (the binary criteria
#: are the document's; graded and detailed describe situations too), as shipped in English
SEARCH_RELEVANCE_QUESTION = prompt_source("ProbabilityJudgeGrader", "search_relevance_question", "en",
                                          user_dir=[])

_PATH = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_]+)*)`")


def content_paths(instructions: Any) -> list[str]:
    """The content paths (`` `result.fields.price` ``) written in backticks in
    ``instructions`` (a string, or every string inside an object or array), in order.

    >>> content_paths("Does `result.fields.price` suit `query`?")
    ['result.fields.price', 'query']
    """
    return list(dict.fromkeys(m for t in _strings(instructions) for m in _PATH.findall(t)))


def _strings(v: Any) -> Any:
    if isinstance(v, str):
        yield v
    elif isinstance(v, (dict, list, tuple)):
        for x in v.values() if isinstance(v, dict) else v:
            yield from _strings(x)


class TypedQuestionError(ConfigError):
    """A typed-question template that does not give a valid question for every scale;
    ``problems`` maps each failing scale's name to what is wrong with it."""

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
        """The instructions for a prompt: a string as is, an object as JSON."""
        ins = self.instructions
        return ins if isinstance(ins, str) else json.dumps(ins, ensure_ascii=False, indent=2)

    def criterion_text(self, grade: int) -> str:
        """The criterion of ``grade`` as prompt text (objects flattened: the
        description, ``Examples: a; b``, then ``key: value`` for the rest)."""
        c = self.criteria[grade - self.scale.min]
        if isinstance(c, str):
            return c
        parts = [c["description"]] if isinstance(c.get("description"), str) else []
        parts += ["Examples: " + "; ".join(map(_shown, value)) if key == "examples" and isinstance(value, list)
                  else f"{key}: {_shown(value)}" for key, value in c.items() if key != "description"]
        return " ".join(parts)


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _json_prepare(value: Any, should_escape: bool) -> Any:
    """pybars3's ``prepare`` with JSON-string escaping instead of HTML escaping."""
    if value is None:
        return ""
    if type(value) is strlist:  # block output and helpers that return JSON: already final
        return value
    text = json.dumps(value, ensure_ascii=False) if isinstance(value, (bool, dict, list)) else str(value)
    return json.dumps(text, ensure_ascii=False)[1:-1] if should_escape else text


def _json_helper(this, value, *args, **kwargs):
    return strlist([json.dumps(value, ensure_ascii=False)])


_HELPERS = {**HELPERS, "json": _json_helper}


class TypedQuestionTemplate:
    """A typed-question template, checked at construction for every one of ``scales`` with
    the run's ``evaluation_name``, ``evaluation_description`` and ``variables``. Raises
    ``TemplateError`` (does not compile) or ``TypedQuestionError`` (listing every bad scale)."""

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
        self.questions: dict[str, Question] = {}
        problems: dict[str, list[str]] = {}
        for scale in self.scales:
            try:
                self.questions[scale.name] = self._render(scale)
            except _Invalid as bad:
                problems[scale.name] = bad.problems
        if problems:
            raise TypedQuestionError(name, problems)

    def render(self, scale: Scale | str) -> Question:
        """The question for ``scale`` (rendered once, then cached)."""
        scale = Scale.get(scale)
        hit = self.questions.get(scale.name)
        if hit is not None and hit.scale == scale:
            return hit
        try:
            question = self._render(scale)
        except _Invalid as bad:
            raise TypedQuestionError(self.name, {scale.name: bad.problems}) from None
        self.questions[scale.name] = question
        return question

    def _render(self, scale: Scale) -> Question:
        """The question for ``scale``; ``_Invalid`` with every problem of its render."""
        ctx = to_plain({**self.variables, **scale.template_vars(), "evaluation_name": self.evaluation_name,
                        "evaluation_description": self.evaluation_description})
        missing = self.template.missing(ctx)
        if missing:
            raise _Invalid([f"template variable(s) {', '.join(map(repr, missing))} missing; "
                            f"available: {', '.join(sorted(ctx))}"])
        try:
            text = str(self._render_fn(ctx, helpers=_HELPERS))
        except Exception as exc:
            raise _Invalid([f"render failed: {type(exc).__name__}: {exc}"]) from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            lines = text.splitlines() or [""]
            shown = lines[exc.lineno - 1].strip() if 0 < exc.lineno <= len(lines) else ""
            raise _Invalid([f"output is not valid JSON ({exc.msg}) at output line {exc.lineno}, "
                            f"column {exc.colno}: {shown[:80]!r}"]) from None
        return _check(scale, data, text)

    def __repr__(self) -> str:
        return f"TypedQuestionTemplate(name={self.name!r}, scales={[s.name for s in self.scales]})"


class _Invalid(Exception):
    def __init__(self, problems: list[str]):
        super().__init__("; ".join(problems))
        self.problems = problems


def _check(scale: Scale, data: Any, text: str) -> Question:
    """Check a rendered question's shape; raise ``_Invalid`` with every problem."""
    if not isinstance(data, dict):
        raise _Invalid([f"output must be a JSON object with 'instructions' and 'criteria', "
                        f"got {type(data).__name__}"])
    problems: list[str] = []
    extra = sorted(set(data) - {"instructions", "criteria"})
    if extra:
        problems.append(f"unexpected key(s) {extra}: the object holds only 'instructions' and "
                        f"'criteria'")
    instructions = data.get("instructions")
    if instructions is None:
        problems.append("'instructions' is missing")
    elif isinstance(instructions, str):
        if not instructions.strip():
            problems.append("'instructions' is empty")
    elif not isinstance(instructions, (dict, list)) or not instructions:
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
    problems += [p for i, c in enumerate(criteria) for p in _criterion_problems(i, c)]
    if problems:
        raise _Invalid(problems)
    return Question(scale, instructions, tuple(criteria), text)


def _criterion_problems(i: int, c: Any) -> list[str]:
    """What is wrong with ``criteria[i]``."""
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
