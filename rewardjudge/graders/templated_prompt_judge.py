"""TemplatedPromptJudgeGrader: render Handlebars judge prompts, parse a verdict.

Flow of ``grade(sample)``:

1. If ``completion_model`` is set, the completion is parsed into it; a
   malformed completion is *penalized* without calling the judge.
2. ``extract_template_context`` builds the template context (override it to
   add fields; call ``super()`` first).
3. The system and user templates render (compiled and checked at
   construction; strict about missing variables by default).
4. The judge is asked, with the output model's JSON schema as response
   format where the server supports it; the reply is parsed into
   ``output_model``. An unreadable or ambiguous reply is re-asked
   ``reply_retries`` times, then the grade is *unscored*.
"""

from __future__ import annotations

from typing import Any, Mapping

from pydantic import BaseModel

from ..core.structured_output import OutputParserException, render_schema
from ..errors import ConfigError
from ..grade import Grade
from ..models.base import GenerationParams, InferenceModel
from ..templates import Template
from ..thread import StringThread, format_turns
from .base import Grader, Mode
from .distribution import apply_expected_value, score_choices
from .outputs import (BinaryJudgeOutput, GradedJudgeOutput, JudgeOutput, check_output_model,
                      output_value, parse_judge_reply, verdict_reasoning)

__all__ = ["BinaryJudgeOutput", "GradedJudgeOutput", "JudgeOutput", "TemplatedPromptJudgeGrader"]


def _turn_dicts(turns) -> list[dict[str, str]]:
    return [{"role": r, "content": c} for r, c in turns]


class TemplatedPromptJudgeGrader(Grader):
    """A judge grader driven by two Handlebars templates and an output model.

    >>> grader = TemplatedPromptJudgeGrader(  # doctest: +SKIP
    ...     grader_key="answer-judge", model=judge,
    ...     system_template="You grade answers. Reply as JSON: {{output_schema}}",
    ...     user_template="Question: {{last_user_turn_content}}\\nAnswer: {{completion}}",
    ...     output_model=BinaryJudgeOutput, temperature=0.0)
    >>> grade = await grader.grade(thread)  # doctest: +SKIP

    Arguments beyond the seed API: ``completion_model`` (parse the completion
    into this model first; its fields join the context, also under
    ``parsed``), ``template_variables`` (constants added to every context),
    ``max_tokens``, ``top_p``, ``seed``, ``reply_retries`` (re-asks after an
    unreadable verdict), ``strict_templates`` (fail on missing variables),
    ``structured`` (ask for the output model's JSON schema),
    ``expected_value`` (where the score is one token, e.g. ``GradedJudgeOutput``:
    read the probability of every score at the position the judge wrote its
    score and use the expected value; see ``distribution.apply_expected_value``;
    floor ``expected_value_floor``), the penalty settings of ``Grader`` and ``reject_content_free`` (penalize
    empty or content-free completions without a judge call; default on).
    """

    #: the least probability on valid scores for the expected-value option to apply
    expected_value_floor: float = 0.5

    def __init__(self, grader_key: str, model: InferenceModel, system_template: str,
                 user_template: str, output_model: type[BaseModel] = BinaryJudgeOutput,
                 temperature: float = 0.0, *, completion_model: type[BaseModel] | None = None,
                 template_variables: Mapping[str, Any] | None = None, max_tokens: int | None = 512,
                 top_p: float | None = None, seed: int | None = None, reply_retries: int = 1,
                 strict_templates: bool = True, structured: bool = True, expected_value: bool = False,
                 mode: Mode | None = None, train_penalty: float = -1.0, eval_penalty: float = 0.0,
                 reject_content_free: bool | None = None):
        super().__init__(grader_key, mode=mode, train_penalty=train_penalty, eval_penalty=eval_penalty,
                         reject_content_free=reject_content_free)
        if not isinstance(model, InferenceModel):
            raise ConfigError(f"model must be an InferenceModel (a spawned or remote judge), "
                              f"got {type(model).__name__}")
        self.model = model
        self.output_model = check_output_model(output_model)
        if completion_model is not None and not (isinstance(completion_model, type)
                                                 and issubclass(completion_model, BaseModel)):
            raise ConfigError(f"completion_model must be a pydantic BaseModel subclass, got {completion_model!r}")
        self.completion_model = completion_model
        if temperature is not None and (isinstance(temperature, bool) or not isinstance(
                temperature, (int, float)) or not 0.0 <= temperature <= 2.0):
            raise ConfigError(f"temperature must be a number in [0, 2] (or None), got {temperature!r}")
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)
                                       or max_tokens < 1):
            raise ConfigError(f"max_tokens must be an int >= 1 (or None), got {max_tokens!r}")
        if reply_retries < 0:
            raise ConfigError("reply_retries must be >= 0")
        self.system_template = Template(system_template or "", name="system_template",
                                        strict=strict_templates)
        self.user_template = Template(user_template, name="user_template", strict=strict_templates)
        self.template_variables = dict(template_variables or {})
        self.params = GenerationParams(temperature=temperature, top_p=top_p, max_tokens=max_tokens,
                                       seed=seed)
        self.reply_retries = reply_retries
        self.structured = structured
        self._schema = self.output_model.model_json_schema() if structured else None
        self.expected_value = bool(expected_value)
        if self.expected_value and score_choices(self.output_model) is None:
            raise ConfigError(f"expected_value needs an output model whose 'score' is one of a few "
                              f"one-token values (a Literal/enum, or an int bounded in 0..9); "
                              f"{self.output_model.__name__}.score is not")

    # -- the seed API -----------------------------------------------------
    @classmethod
    def extract_template_context(cls, thread: StringThread, output_model: type[BaseModel] | None = None,
                                 template_variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The default template context of ``thread``.

        Keys: ``output_schema`` (``render_schema(output_model)``, "" without
        one), ``turns`` (every turn as ``{role, content}``), ``metadata``,
        ``context_turns`` / ``context_str`` (the turns before the completion),
        ``context_turns_without_last_user`` / ``context_str_without_last_user``
        (the same without the last user turn), ``last_user_turn_content``,
        ``completion`` (the final assistant turn, "" if none), plus
        ``template_variables``. Override to add fields; call ``super()``.
        """
        context_turns = thread.context_turns()
        last_user = max((i for i, (r, _) in enumerate(context_turns) if r == "user"), default=None)
        without_last_user = [t for i, t in enumerate(context_turns) if i != last_user]
        ctx: dict[str, Any] = {
            "output_schema": render_schema(output_model) if output_model is not None else "",
            "turns": _turn_dicts(thread.turns),
            "metadata": dict(thread.metadata),
            "context_turns": _turn_dicts(context_turns),
            "context_str": format_turns(context_turns),
            "context_turns_without_last_user": _turn_dicts(without_last_user),
            "context_str_without_last_user": format_turns(without_last_user),
            "last_user_turn_content": thread.last_user_content(),
            "completion": thread.completion(),
        }
        ctx.update(template_variables or {})
        return ctx

    async def grade(self, sample: StringThread) -> Grade:
        sample = self.check_sample(sample)
        parsed, rejected = self.screen(sample, self.completion_model)
        if rejected is not None:
            return rejected
        parsed_fields = None if parsed is None else parsed.model_dump(mode="json")
        context = self.extract_template_context(sample, self.output_model, self.template_variables)
        if parsed_fields is not None:
            for k, v in parsed_fields.items():
                context.setdefault(k, v)
            context.setdefault("parsed", parsed_fields)
        messages = self.build_messages(context)
        return await self.ask_judge(messages)

    # -- pieces, reusable by subclasses -----------------------------------
    def build_messages(self, context: Mapping[str, Any]) -> list[dict[str, str]]:
        system = self.system_template.render(context)
        user = self.user_template.render(context)
        messages = []
        if system.strip():
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": user})
        return messages

    async def ask_judge(self, messages: list[dict[str, str]]) -> Grade:
        """Ask the judge, re-asking after unreadable verdicts; never raises
        for judge-side failures."""

        def parse(text: str) -> tuple[BaseModel, float]:
            try:
                verdict = parse_judge_reply(text, self.output_model)
                return verdict, output_value(verdict)
            except OutputParserException:
                raise
            except (ValueError, TypeError) as exc:  # a to_value() that cannot read this verdict
                raise OutputParserException(str(exc), text) from None

        answer = await self.ask_until_parsed(self.model, messages, self.params, parse,
                                             json_schema=self._schema,
                                             reply_retries=self.reply_retries)
        if isinstance(answer, Grade):
            return answer
        verdict, value = answer.verdict
        reasoning = (verdict.reasoning_text() if isinstance(verdict, JudgeOutput)
                     else verdict_reasoning(verdict))
        grade = Grade(value=value, grader_key=self.grader_key, reasoning=reasoning, status="scored",
                      raw_reply=answer.completion.text, usage=answer.usage, attempts=answer.attempts,
                      latency_s=answer.latency_s, grader_version=self.version,
                      extra={"verdict": verdict.model_dump(mode="json")})
        if self.expected_value:
            grade = await apply_expected_value(self, messages, answer.completion.text, verdict, grade)
        return grade

    def config(self) -> dict[str, Any]:
        return {**super().config(), "system_template": self.system_template.source,
                "user_template": self.user_template.source,
                "output_model": self.output_model.model_json_schema(),
                "completion_model": (self.completion_model.model_json_schema()
                                     if self.completion_model else None),
                "template_variables": self.template_variables, "params": self.params.as_dict(),
                "model": getattr(self.model, "name", type(self.model).__name__),
                "structured": self.structured,
                **({"expected_value": True} if self.expected_value else {})}


