"""ScorerGrader: a pinned scorer version run as a Grader on an InferenceModel.

``grade(sample)``:

1. The binding builds the context (mapped variables, then the built-ins,
   which take precedence). A completion lacking a bound field is
   *penalized*, without a judge call.
2. The template renders into **one user message**: the judge sees only what
   the template renders.
3. The judge is asked with the output spec's strict JSON schema; the reply is
   parsed by the spec. An unusable reply is re-asked ``reply_retries`` times,
   then the grade is *unscored*; a judge failure is *unscored* at once.
4. The Grade: ``value`` (numeric: the score; boolean: 1.0/0.0; categorical:
   the label's value from ``output_spec.values``; a label-only categorical
   spec: None, see below), ``reasoning`` = the
   judge's reason, ``grader_version`` = the scorer version id (SHA-256 of its
   canonical config), and ``extra`` with ``label`` (the categorical label or
   "true"/"false"; None for numeric), ``score``, ``scorer``,
   ``scorer_version``, ``scorer_model`` (``config.model``), ``judge_model``
   (the model that answered: the name the server gave in its reply, else the
   name asked) and ``missing_variables``.

The scorer's ``model`` is the model asked: a judge bound to another model
name (``model.name``) is refused at construction unless
``allow_model_override=True`` (then the judge's own model answers, and the
grades say so).

A categorical spec without ``values`` (the scorer document's own way to
write one) is a *label-only* scorer: its grades are ``scored`` with
``value`` None, the label in ``extra["label"]`` and ``extra["labels_only"]``
True (``Grade.is_label_only``). An evaluation counts them by label (counts
and shares, no mean); a reward needs a number and labels have no order to
take one from, so every RL adapter (the TRL reward function, verl, the
reward server) refuses the grader with the reason and an example ``values``
to add (``require_rewards``).
"""

from __future__ import annotations

import logging
from typing import Any

from ..errors import ConfigError
from ..grade import Grade
from ..graders._base import Grader, JudgeFailure, Mode
from ..graders._options import JudgeBinding, JudgeOptions, validated
from ..graders._outputs import schema_fields
from ..models._base import Completion, GenerationParams, InferenceModel
from ..readouts._seal import Sealer, json_instruction, seal_messages, sealed_schema
from ..readouts._text import template_tag_names
from ..thread import StringThread
from ._binding import MalformedCompletion, ScorerBinding, output_instructions

__all__ = ["ScorerGrader", "output_instructions"]

log = logging.getLogger("rewardjudge")


def answering_model(completion: Completion, asked: str) -> str:
    """The model that answered: the ``model`` of the server's reply when it gives one, else
    the name asked (servers may resolve an alias such as ``mistral-small-latest``)."""
    raw = completion.raw
    reported = raw.get("model") if isinstance(raw, dict) else None
    return reported if isinstance(reported, str) and reported else asked


class ScorerGrader(Grader):
    """Runs one pinned scorer version (a ``ScorerBinding``) on ``model``.

    >>> judge = OpenAIModel(url, scorer.config.model)                   # doctest: +SKIP
    >>> grader = scorer.grader(judge, {"answer": "completion:answer"})  # doctest: +SKIP
    >>> grade = await grader.grade(thread)                              # doctest: +SKIP
    >>> grade.grader_version == scorer.version, grade.extra["label"]    # doctest: +SKIP
    (True, 'true')

    ``model.name`` must equal the scorer's ``config.model`` (the model the
    version names), unless ``allow_model_override=True``. ``grader_key``
    defaults to the scorer's slug (or name); ``language`` chooses the
    language of the built-in ``output_instructions``; ``default_max_tokens``
    applies when the params leave ``max_tokens`` unset (a judge that never
    stops would otherwise run to the server's limit).
    """

    def __init__(self, binding: ScorerBinding, model: InferenceModel, *, grader_key: str | None = None,
                 reply_retries: int = 1, language: str | None = None, default_max_tokens: int = 512,
                 mode: Mode | None = None, train_penalty: float = -1.0, eval_penalty: float = 0.0,
                 allow_model_override: bool = False, seal_key: "bytes | str | None" = None):
        if not isinstance(binding, ScorerBinding):
            raise ConfigError(f"binding must be a ScorerBinding, got {type(binding).__name__}")
        model = validated(JudgeBinding, model=model).model
        reply_retries = validated(JudgeOptions, reply_retries=reply_retries).reply_retries
        from ._scorer import slugify

        config = binding.config
        key = grader_key or binding.scorer_slug or slugify(binding.scorer_name)
        asked = getattr(model, "name", None) or type(model).__name__
        if asked != config.model and not allow_model_override:
            raise ConfigError(
                f"scorer {key!r} (version {binding.version[:12]}) names model {config.model!r}, but "
                f"the judge given asks for {asked!r}: pass a judge for {config.model!r} (e.g. "
                f"OpenAIModel(url, {config.model!r})), or allow_model_override=True to run this "
                f"version on {asked!r} (its grades then record judge_model={asked!r})")
        super().__init__(key, mode=mode, train_penalty=train_penalty, eval_penalty=eval_penalty)
        self.binding = binding
        self.model = model
        self.model_name = asked
        self.allow_model_override = bool(allow_model_override)
        self.reply_retries = reply_retries
        # a cached judge keeps the key with its cache, so later runs hit it
        self._sealer = Sealer(seal_key if seal_key is not None else getattr(self.model, "seal_key", None))
        self.language = language
        self.spec = config.output_spec
        self.schema = self.spec.json_schema()
        self._wire_schema = sealed_schema(self.schema)   # the seal field added, the same every request
        self._grammar_schema = self.spec.json_schema(grammar=True)  # for servers that build a grammar per request
        p = config.params
        max_tokens = p.max_tokens if p.max_tokens is not None else default_max_tokens
        self.params = GenerationParams(temperature=p.temperature, top_p=p.top_p,
                                       max_tokens=max_tokens or None, seed=p.seed)
        self._tags = tuple(template_tag_names(config.prompt_template))
        binding.constants(language)  # the bundle's instructions are compiled now, not at grade time
        if asked != config.model:
            log.info("scorer %s names judge %r; running on %r (allow_model_override)", key,
                     config.model, asked)

    @property
    def labels_only(self) -> bool:
        """True for a categorical spec without ``values``: grades carry a label, no number."""
        return not self.spec.has_values

    def require_rewards(self, where: str) -> None:
        self.spec.require_values(
            f"{where} (scorer {self.grader_key!r}: its verdicts are labels without values)",
            hint="; evaluation counts such labels as they are (evaluate_dataset, rewardjudge eval)")

    @property
    def version(self) -> str:
        """The pinned scorer version id (SHA-256 of its canonical config)."""
        return self.binding.version

    def config(self) -> dict[str, Any]:
        return {**super().config(), "scorer": self.binding.to_dict(), "judge_model": self.model_name}

    def render(self, sample: StringThread) -> tuple[str, list[str]]:
        """The user message for ``sample`` and the variables that had no value.

        Raises ``MalformedCompletion`` when the completion lacks a bound field.
        """
        return self.binding.render(sample, language=self.language)

    async def judge(self, sample: StringThread, parsed: Any = None) -> Grade:
        extra: dict[str, Any] = {"scorer": self.binding.scorer_slug or self.binding.scorer_name,
                                 "scorer_version": self.version,
                                 "scorer_model": self.binding.config.model,
                                 "judge_model": self.model_name}
        if self.labels_only:
            extra["labels_only"] = True
        try:
            clean = self.neutralized(sample)
            prompt, missing = self.render(clean)
        except MalformedCompletion as exc:
            return self.penalized(sample, f"malformed completion: {exc}", extra=extra)
        except RecursionError:
            return self.penalized(sample, "malformed completion: nested too deep", extra=extra)
        extra["missing_variables"] = missing
        messages = [{"role": "user", "content": prompt}]
        # the verdict must carry the request's seal (readouts/_seal.py), asked for last
        seal = self._sealer.value(messages)
        sent = seal_messages(messages, json_instruction(seal, schema_fields(self.schema)))
        answer = await self.ask_until_parsed(self.model, sent, self.params,
                                             lambda text: self.spec.read(text, seal),
                                             json_schema=self._wire_schema
                                             if getattr(self.model, "caches_grammars", True)
                                             else sealed_schema(self._grammar_schema, seal),
                                             reply_retries=self.reply_retries)
        if isinstance(answer, JudgeFailure):
            return self.failed(answer, extra=extra)
        verdict = answer.verdict.value
        return self.scored(answer, verdict.value, verdict.reason,
                           {**extra, "judge_model": answering_model(answer.completion, self.model_name),
                            "label": verdict.label, "score": verdict.score})

    def neutralized(self, sample: StringThread) -> StringThread:
        """``sample`` with its text neutralised (the template's tags, protocol
        tags and the judge's control tokens) before it is rendered."""
        return self.judge_thread(sample, self._tags)
