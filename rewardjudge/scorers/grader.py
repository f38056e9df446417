"""ScorerGrader: a pinned scorer version run as a Grader on an InferenceModel.

``grade(sample)``:

1. The binding builds the context (built-ins + bound variables). A
   completion lacking a bound field is *penalized*, without a judge call.
2. The template renders into **one user message**: the judge sees only what
   the template renders.
3. The judge is asked with the output spec's strict JSON schema; the reply is
   parsed by the spec. An unusable reply is re-asked ``reply_retries`` times,
   then the grade is *unscored*; a judge failure is *unscored* at once.
4. The Grade: ``value`` (numeric: the score; boolean/categorical: the label's
   reward), ``reasoning`` = the judge's reason, ``grader_version`` = the
   scorer version id (SHA-256 of its canonical config), and ``extra`` with
   ``label``, ``scorer``, ``scorer_version``, ``judge_model`` and
   ``missing_variables``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from ..errors import ConfigError
from ..grade import Grade
from ..graders.base import Grader, Mode
from ..models.base import GenerationParams, InferenceModel
from ..thread import StringThread
from .binding import MalformedCompletion, ScorerBinding

__all__ = ["ScorerGrader"]

log = logging.getLogger("rewardjudge")


def output_instructions(schema: dict[str, Any], language: str | None = None) -> str:
    """The built-in sentence telling a judge how to reply (from the prompt bundle)."""
    from ..templates import Template
    from ..templates.prompts import prompt_source

    source = prompt_source("ScorerGrader", "output_instructions", language)
    return Template(source, name="ScorerGrader/output_instructions").render(
        {"output_schema": json.dumps(schema, ensure_ascii=False)})


class ScorerGrader(Grader):
    """Runs one pinned scorer version (a ``ScorerBinding``) on ``model``.

    >>> grader = scorer.grader(judge, {"answer": "completion:answer"})  # doctest: +SKIP
    >>> grade = await grader.grade(thread)                              # doctest: +SKIP
    >>> grade.grader_version == scorer.version, grade.extra["label"]    # doctest: +SKIP
    (True, 'true')

    ``grader_key`` defaults to the scorer's slug (or name); ``language``
    chooses the language of the built-in ``output_instructions``;
    ``default_max_tokens`` applies when the params leave ``max_tokens`` unset
    (a judge that never stops would otherwise run to the server's limit).
    """

    def __init__(self, binding: ScorerBinding, model: InferenceModel, *, grader_key: str | None = None,
                 reply_retries: int = 1, language: str | None = None, default_max_tokens: int = 512,
                 mode: Mode | None = None, train_penalty: float = -1.0, eval_penalty: float = 0.0):
        if not isinstance(binding, ScorerBinding):
            raise ConfigError(f"binding must be a ScorerBinding, got {type(binding).__name__}")
        if not isinstance(model, InferenceModel):
            raise ConfigError(f"model must be an InferenceModel (a spawned or remote judge), "
                              f"got {type(model).__name__}")
        if isinstance(reply_retries, bool) or not isinstance(reply_retries, int) or reply_retries < 0:
            raise ConfigError(f"reply_retries must be an int >= 0, got {reply_retries!r}")
        from .scorer import slugify

        super().__init__(grader_key or binding.scorer_slug or slugify(binding.scorer_name), mode=mode,
                         train_penalty=train_penalty, eval_penalty=eval_penalty)
        self.binding = binding
        self.model = model
        self.reply_retries = reply_retries
        config = binding.config
        self.spec = config.output_spec
        self.schema = self.spec.json_schema()
        p = config.params
        max_tokens = p.max_tokens if p.max_tokens is not None else default_max_tokens
        self.params = GenerationParams(temperature=p.temperature, top_p=p.top_p,
                                       max_tokens=max_tokens or None, seed=p.seed)
        self._constants = {"output_schema": json.dumps(self.schema, ensure_ascii=False),
                           "output_instructions": output_instructions(self.schema, language)}
        used = getattr(model, "name", None)
        if used and used != config.model:
            log.info("scorer %s names judge %r but runs on model %r", self.grader_key, config.model, used)

    @property
    def version(self) -> str:
        """The pinned scorer version id (SHA-256 of its canonical config)."""
        return self.binding.version

    def config(self) -> dict[str, Any]:
        return {**super().config(), "scorer": self.binding.to_dict()}

    def render(self, sample: StringThread) -> tuple[str, list[str]]:
        """The user message for ``sample`` and the variables that had no value.

        Raises ``MalformedCompletion`` when the completion lacks a bound field.
        """
        context, missing = self.binding.context(sample)
        context.update(self._constants)
        return self.binding.config.template.render(context), missing

    async def grade(self, sample: StringThread) -> Grade:
        sample = self.check_sample(sample)
        flagged = self.precheck(sample)
        if flagged is not None:
            return flagged
        extra: dict[str, Any] = {"scorer": self.binding.scorer_slug or self.binding.scorer_name,
                                 "scorer_version": self.version,
                                 "judge_model": getattr(self.model, "name", type(self.model).__name__)}
        try:
            prompt, missing = self.render(sample)
        except MalformedCompletion as exc:
            return self.penalized(sample, f"malformed completion: {exc}", extra=extra)
        extra["missing_variables"] = missing
        messages = [{"role": "user", "content": prompt}]
        answer = await self.ask_until_parsed(self.model, messages, self.params, self.spec.parse,
                                             json_schema=self.schema, reply_retries=self.reply_retries,
                                             extra=extra)
        if isinstance(answer, Grade):
            return answer
        verdict = answer.verdict
        return Grade(value=verdict.value, grader_key=self.grader_key, reasoning=verdict.reason,
                     status="scored", raw_reply=answer.completion.text, usage=answer.usage,
                     attempts=answer.attempts, latency_s=answer.latency_s, grader_version=self.version,
                     extra={**extra, "label": verdict.label, "score": verdict.score})
