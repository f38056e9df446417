"""ProbabilityJudgeGrader: grades from the judge's probability of each grade token; see docs/probability.md."""

from __future__ import annotations

import json
import time
from typing import Any

from pydantic import BaseModel

from ..errors import ConfigError
from ..grade import Grade
from ..models._base import GenerationParams, InferenceModel, TokenDistribution
from ..scales import SCALES
from ..templates._prompts import prompt_source
from ..thread import StringThread
from ..readouts._text import neutralize_value
from ._options import ProbabilityOptions
from ._base import Grader, JudgeFailure, emptied, text_size, without_completion
from ._expected_value import read_distribution
from ._prompt import JudgePrompt
from ._typed_question import Question, TypedQuestionTemplate, content_paths

__all__ = ["ProbabilityJudgeGrader"]

class ProbabilityJudgeGrader(Grader):
    """Grades from the judge's probability of each grade token; options: ``ProbabilityOptions``;
    templates, typed questions and ``extra``: docs/probability.md."""

    def __init__(self, grader_key: str, model: InferenceModel, **options: Any):
        opts = self.options = ProbabilityOptions(grader_key=grader_key, model=model, **options)
        self.take_options(opts)
        system_template, user_template = opts.system_template, opts.user_template
        if opts.tokens is not None and (system_template is None or user_template is None):
            raise ConfigError("tokens= names the judge's answer tokens: pass the system_template and "
                              "user_template that ask for one of them (the built-in prompt asks for a grade digit)")
        # tokens: named answer tokens and their rewards (None: the scale's grade digits)
        for name in ("scale", "title_field", "typed", "tokens", "min_valid_mass", "answer_prefix",
                     "template_variables", "evaluation_name", "evaluation_description"):
            setattr(self, name, getattr(opts, name))
        self.value_mode = opts.value
        self.question_template = TypedQuestionTemplate(
            opts.question_template if opts.question_template is not None
            else prompt_source("ProbabilityJudgeGrader", "search_relevance_question" if self.typed else "question"),
            name="question_template", scales=tuple(dict.fromkeys((*SCALES, self.scale))),
            evaluation_name=self.evaluation_name, evaluation_description=self.evaluation_description,
            variables=self.template_variables)
        #: the question of this run, rendered once
        self.question: Question = self.question_template.render(self.scale)
        # a typed question's instructions may name only what the state holds
        roots = {"query", "result", *(self.question.instructions if isinstance(self.question.instructions, dict)
                                      else ())}
        unknown = [p for p in content_paths(self.question.instructions) if p.split(".")[0] not in roots]
        if self.typed and unknown:
            raise ConfigError(f"the question's instructions name {', '.join(f'`{p}`' for p in unknown)}, "
                              f"but a typed-question provider judges {{query, result: {{title, fields}}}}: "
                              f"address the content as `query`, `result` or `result.fields.<name>`")
        self.prompt = JudgePrompt(
            prompt_source("ProbabilityJudgeGrader", "system") if system_template is None else system_template,
            prompt_source("ProbabilityJudgeGrader", "user") if user_template is None else user_template,
            prefix=self.answer_prefix, engine=opts.engine, strict=opts.strict_templates)
        self.choices = list(self.tokens) if self.tokens else [str(g) for g in self.scale.grades]
        self.params = GenerationParams(seed=opts.seed)
        self._base_context = {
            **self.template_variables, **self.scale.template_vars(), "evaluation_name": self.evaluation_name,
            "evaluation_description": self.evaluation_description, "question": self.question.instructions_text(),
            "criteria": [{"grade": g, "text": self.question.criterion_text(g)} for g in self.scale.grades]}
        self.prompt.check(self.context_variables(*self._base_context, "content"))

    def state_of(self, sample: StringThread, parsed: dict[str, Any] | None = None) -> dict[str, Any]:
        """What a typed-question provider judges: ``{"query", "result": {"title", "fields"}}``, not neutralised."""
        query = sample.metadata.get("query")
        query = sample.last_user_content() if query is None else query
        if parsed is None:
            result: dict[str, Any] = {"title": sample.completion(), "fields": {}}
        else:
            fields = dict(parsed)
            title = fields.pop(self.title_field, "")   # a field named None never exists
            result = {"title": "" if title is None else title if isinstance(title, str)
                      else json.dumps(title, ensure_ascii=False), "fields": fields}
        return {"query": query, "result": result}

    def context_of(self, sample: StringThread, parsed: dict[str, Any] | None = None) -> dict[str, Any]:
        """The template context of ``sample``, ``content`` included (docs/probability.md)."""
        clean = self.judge_thread(sample, self.prompt.tags)
        ctx = self.extract_template_context(clean, None, self.template_variables)
        completion = (neutralize_value(parsed, self.prompt.tags, self.control_tokens())
                      if parsed is not None else ctx["completion"])
        ctx.update(self._base_context)
        ctx["content"] = json.dumps({"conversation": ctx["context_turns"], "completion": completion},
                                    ensure_ascii=False, indent=2)
        return ctx

    def shown_request(self, sample: StringThread, fields: dict[str, Any]) -> "list[dict[str, Any]] | None":
        return None if self.typed else self.build_messages(self.context_of(sample, fields))

    async def judge(self, sample: StringThread, parsed: BaseModel | None) -> Grade:
        fields = None if parsed is None else parsed.model_dump(mode="json")
        started = time.perf_counter()
        typed = ((self.state_of(sample, fields), self.question.instructions, self.question.criteria)
                 if self.typed else None)
        messages = [] if typed else await self.off_loop(
            text_size(sample), lambda: self.build_messages(self.context_of(sample, fields)))
        dist = await self.ask_distribution(self.model, messages, self.choices, self.params, typed=typed)
        if isinstance(dist, JudgeFailure):
            return await self.failed(dist, sample, messages, None if typed else (
                lambda: self.build_messages(self.context_of(without_completion(sample), emptied(fields)))))
        return self.grade_from_distribution(dist, latency_s=time.perf_counter() - started)

    def grade_from_distribution(self, dist: TokenDistribution, *, latency_s: float | None = None) -> Grade:
        """The Grade a distribution over this grader's choices gives (``value``: expected or most likely)."""
        raw = {"probabilities": {k: round(v, 6) for k, v in dist.probs.items()}, "outside": round(dist.outside, 6)}
        common = {"raw_reply": json.dumps(raw), "usage": dict(dist.usage), "attempts": dist.attempts,
                  "latency_s": latency_s}
        tokens, scale = self.tokens, self.scale
        values = tokens or {g: g for g in scale.grades}
        s = read_distribution(dist, values, self.min_valid_mass,
                              shown=None if tokens else f"the grades {scale.min}-{scale.max}")
        named = {} if tokens else {"scale": scale.name}
        if not s.ok:
            hint = "it did not answer with one of them" if tokens else "it did not answer with a grade" + (
                "" if self.answer_prefix is not None else "; a reply prefix helps small judges "
                "(answer_prefix='Grade: ', which needs model.continues_prefix)")
            return self.unscored(f"{s.reason}: {hint}", **common,
                                 extra={"valid_mass": dist.valid_mass, "outside_mass": dist.outside,
                                        "raw_probabilities": dict(dist.probs), "top_k": dist.top_k, **named})
        value = s.expected if self.value_mode == "expected" else values[s.most_likely]
        extra = {**s.as_extra(), "top_k": dist.top_k, **named}
        if tokens:
            reasoning = (f"expected reward {s.expected:.2f}; most likely {s.most_likely!r} "
                         f"({s.probabilities[s.most_likely]:.0%}); confidence {s.confidence:.2f}; "
                         f"{s.outside_mass:.0%} of the probability outside the tokens")
            extra["most_likely_token"] = extra.pop("most_likely_grade")
            extra["expected_reward"] = extra.pop("expected_grade")
        else:
            value = scale.to_reward(value)
            reasoning = (f"expected grade {s.expected:.2f} on {scale.min}-{scale.max}; most "
                         f"likely {s.most_likely} ({s.probabilities[s.most_likely]:.0%}); confidence "
                         f"{s.confidence:.2f}; {s.outside_mass:.0%} of the probability outside the grades")
        return Grade(value=value, grader_key=self.grader_key, reasoning=reasoning, status="scored",
                     grader_version=self.version, extra=extra,
                     distribution={str(k): v for k, v in s.probabilities.items()}, **common)

    def config(self) -> dict[str, Any]:
        return {**super().config(), "scale": [self.scale.name, self.scale.min, self.scale.max],
                **({"tokens": self.tokens} if self.tokens else {}),
                "question": self.question.text, **self.prompt.sources(),
                "answer_prefix": self.answer_prefix, "value": self.value_mode, "min_valid_mass": self.min_valid_mass,
                **({"engine": self.prompt.engine} if self.prompt.engine != "handlebars" else {}),
                "completion_model": self.completion_model.model_json_schema() if self.completion_model else None,
                "params": self.params.as_dict(),
                **({"typed_question": {"name": getattr(self.model, "question_name", None),
                                       "type": getattr(self.model, "question_type", None)},
                    "title_field": self.title_field} if self.typed else {}),
                "model": getattr(self.model, "name", type(self.model).__name__)}

