"""TemplatedPromptJudgeGrader: render judge prompts from two templates, read a sealed verdict
into ``output_model`` (docs/pipeline.md, docs/sealed-verdicts.md). Its families are
configurations of it: the catalog's criteria (``context_fields``) and scorers
(``ScorerJudgeGrader``, reading a scorer binding's data)."""

from __future__ import annotations

import json
import logging
from functools import lru_cache, partial
from typing import Any, Callable, Mapping, Sequence

from pydantic import BaseModel

from .._thread_context import THREAD_VARIABLES, thread_context
from ..core.structured_output import json_fields, render_schema
from ..errors import ConfigError, OutputParserException, TemplateVariableError
from ..templates import _handlebars as _hb
from ..grade import Grade
from ..models._base import GenerationParams, InferenceModel
from ..readouts._decision import Verdict, made_verdicts
from ..readouts._gbnf import literal, verdict_line_grammar
from ..readouts._seal import (Sealer, json_instruction, label_instruction, read_sealed,
                              read_unsealed, seal_messages, sealed_schema)
from ..readouts._text import neutralize_value
from ..scorers import Scorer, ScorerBinding
from ..scorers._config import slugify
from ..thread import StringThread
from ._options import EXPECTED_VALUE_FLOOR, SEAL_TOKENS, JudgeBinding, TemplatedOptions  # noqa: F401 (SEAL_TOKENS: tests read it here)
from ._base import (Grader, JudgeAnswer, JudgeFailure, Mode, emptied, inline_sample, text_size,
                    without_completion)
from ._field_guards import screen_fields
from ._prompt import JudgePrompt
from ._expected_value import expected_verdict
from ._outputs import (REASONING_MAX_CHARS, BinaryJudgeOutput, DeclaredVerdict, GradedJudgeOutput,
                       JudgeOutput, _label_form, bounded_reasoning, output_value, schema_fields,
                       verdict_reasoning)

__all__ = ["BinaryJudgeOutput", "GradedJudgeOutput", "JudgeOutput", "ScorerGrader", "TemplatedPromptJudgeGrader"]

log = logging.getLogger("rewardjudge")


#: the base class's ``extract_template_context`` (see ``context_of``)
_SEED_HOOK = Grader.extract_template_context.__func__


class TemplatedPromptJudgeGrader(Grader):
    """A judge grader driven by two Handlebars templates and an output model.

    >>> grader = TemplatedPromptJudgeGrader(  # doctest: +SKIP
    ...     grader_key="answer-judge", model=judge,
    ...     system_template="You grade answers. Reply as JSON: {{output_schema}}",
    ...     user_template="Question: {{last_user_turn_content}}\\nAnswer: {{completion}}",
    ...     output_model=BinaryJudgeOutput, temperature=0.0)
    >>> grade = await grader.grade(thread)  # doctest: +SKIP

    Options beyond the seed's arguments: the fields of ``TemplatedOptions``, validated into
    ``options`` (docs/pipeline.md, docs/sealed-verdicts.md, docs/probability.md); ``max_tokens``
    default ``"fit"``: ``fitted_max_tokens``, else 512; ``structured``: ask for the JSON schema.
    """

    #: the least probability on valid scores for the expected-value option to apply
    expected_value_floor: float = EXPECTED_VALUE_FLOOR

    def __init__(self, grader_key: str, model: InferenceModel, system_template: str,
                 user_template: str, output_model: type[BaseModel] = BinaryJudgeOutput,
                 temperature: float = 0.0, **options: Any):
        opts = self.options = TemplatedOptions(grader_key=grader_key, model=model,
                                               output_model=output_model, temperature=temperature, **options)
        self.take_options(opts)
        self.output_model, self.seal = opts.output_model, opts.seal
        self.output_schema_format = opts.output_schema_format
        self.form, self.label_values = opts.form, opts.label_values
        self.structured, self.expected_value = opts.structured, opts.expected_value
        self.template_variables, self.reply_retries = opts.template_variables, opts.reply_retries
        self.params = GenerationParams(temperature=opts.temperature, top_p=opts.top_p,
                                       max_tokens=opts.max_tokens, seed=opts.seed)
        self._sealer = Sealer(opts.seal_key if opts.seal_key is not None else getattr(self.model, "seal_key", None))
        #: a bare label's reasoning field and each label's value; the labels a sealed reply may
        #: give, and how the seal instruction shows them
        self._label_reasoning, self._bare_labels = _label_form(self.output_model) or (None, {})
        self._labels = tuple(self._bare_labels)
        self._placeholder = f"<{' or '.join(self._labels)}>"
        self.prompt = JudgePrompt(system_template, user_template, engine=opts.engine, strict=opts.strict_templates)
        self._schema = self.output_model.model_json_schema() if self.structured else None
        #: what the server is asked to enforce: the schema plus the seal field (one for every request)
        self._wire_schema = sealed_schema(self._schema) if self._schema is not None and self.seal else self._schema
        #: what a server that compiles a grammar per request is sent, sealed (a family may state it otherwise)
        self._grammar_schema = self._schema
        parsed_names = () if self.completion_model is None else (*self.completion_model.model_fields, "parsed")
        self.prompt.check(self.context_variables(*parsed_names))
        self.prompt.data_roots = frozenset(parsed_names)
        _check_shows_completion(self, parsed_names)
        #: the templates show the output schema (the seal instruction then need not list the fields)
        self._shows_schema = "output_schema" in self.prompt.variables

    def context_fields(self, sample: StringThread) -> dict[str, Any]:
        """The fields a family adds to every context from ``sample`` (named in
        ``context_names``; neutralised by the caller); none here. Raising ``ConfigError``
        refuses the sample."""
        return {}

    async def judge(self, sample: StringThread, parsed: BaseModel | None) -> Grade:
        # off_loop's test here: no coroutine for a short sample
        messages, texts = self._prompt_for(sample, parsed) if inline_sample(sample) else \
            await self.off_loop(text_size(sample), self._prompt_for, sample, parsed)
        return await self.ask_judge(messages, texts, sample=sample,
                                    emptied_request=partial(self._emptied_prompt, sample, parsed))

    def _emptied_prompt(self, sample: StringThread, parsed: BaseModel | None) -> list[dict[str, Any]]:
        """The messages of ``sample`` with its answer emptied (the completion, and every field of a
        structured one): the rest of its request, for ``overlong``."""
        fields = None if parsed is None else emptied(parsed.model_dump(mode="json"))
        return self._prompt_for(without_completion(sample), fields)[0]

    def _prompt_for(self, sample: StringThread, parsed: "BaseModel | dict[str, Any] | None"
                    ) -> tuple[list[dict[str, Any]], list[str]]:
        # the context is dropped before the judge is awaited: a grade in flight keeps only its messages
        unread = self._unread_names()
        if unread:   # the vocabulary the templates never read is neither built nor converted
            if parsed is None:
                context = self.context_of(sample, None, self.__dict__["_unread"][4])
            else:
                context = self.context_of(sample, parsed)
                tv = self.template_variables
                context = {k: v for k, v in context.items() if k not in unread or k in tv}
            try:
                return self.build_messages(context), _policy_texts(context, parsed)
            except TemplateVariableError:
                pass   # raised again below, naming every variable the context holds
        context = self.context_of(sample, parsed)
        return self.build_messages(context), _policy_texts(context, parsed)

    def _unread_names(self) -> frozenset[str]:
        """The names of the thread vocabulary that neither template can read, where that is
        known (Handlebars templates whose every read is a named path, the built-in helpers,
        this class's own context, prompt and rendering); empty otherwise."""
        cached = self.__dict__.get("_unread")
        prompt = self.prompt
        if cached is None or cached[0] is not prompt or cached[1] is not getattr(prompt, "system", None) \
                or cached[2] is not getattr(prompt, "user", None):
            unread = _unread_of(self, prompt)
            cached = self.__dict__["_unread"] = (prompt, getattr(prompt, "system", None),
                                                 getattr(prompt, "user", None), unread,
                                                 frozenset(THREAD_VARIABLES) - unread)
        names = cached[3]
        if names and not _hb.helpers_as_shipped():   # a helper may read any name
            return frozenset()
        return names

    def shown_request(self, sample: StringThread, fields: dict[str, Any]) -> list[dict[str, Any]]:
        return self._prompt_for(sample, fields)[0]

    def _schema_text(self) -> str:
        """``{{output_schema}}``: the compact shape, or the output model's JSON Schema."""
        if self.output_schema_format == "compact":
            return render_schema(self.output_model)
        return _json_schema_text(self.output_model)

    def context_of(self, sample: StringThread, parsed: "BaseModel | dict[str, Any] | None" = None,
                   names: "frozenset[str] | None" = None) -> dict[str, Any]:
        """The template context of ``sample``: ``extract_template_context`` over a neutralised
        copy of the sample, the family's ``context_fields``, the parsed completion's fields (a model
        or its JSON fields; also under ``parsed``), every
        other value from the sample neutralised. ``names`` (without ``parsed``, with the
        shipped hook): only those names of the thread vocabulary and ``completion``."""
        if getattr(type(self).extract_template_context, "__func__", None) is _SEED_HOOK:
            # the hook as shipped, from the sample neutralised once: every key is clean
            schema = self._schema_text()
            context = thread_context(sample, tags=self.prompt.tags, control_tokens=self.control_tokens(),
                                     output_schema=schema, names=names if parsed is None else None)
            context.update(self.template_variables or {})
            own = self.context_fields(sample)
            if own:   # a family's own fields (the catalog's reference), neutralised
                context.update(self._neutralized_context(own))
            if parsed is None:
                return context
        else:
            clean = self.judge_thread(sample, self.prompt.tags)
            context = self.extract_template_context(clean, self.output_model, self.template_variables)
            context.update(self.context_fields(sample))
            if (self.output_schema_format != "compact"
                    and context.get("output_schema") == render_schema(self.output_model)):
                context["output_schema"] = self._schema_text()  # the hook kept the default: the chosen form
        if parsed is not None:
            fields = parsed if isinstance(parsed, dict) else json_fields(parsed)
            for k, v in fields.items():
                context.setdefault(k, v)
            context.setdefault("parsed", fields)
        return self._neutralized_context(context, clean=THREAD_VARIABLES)

    def _neutralized_context(self, context: Mapping[str, Any], clean: "Sequence[str]" = ()) -> dict[str, Any]:
        """``context`` with every value that comes from the sample neutralised; the grader's
        ``template_variables``, ``output_schema`` and the ``clean`` keys are left as written."""
        own = set(self.template_variables) | {"output_schema"} | set(clean)
        tags, ctl = self.prompt.tags, self.control_tokens()
        return {k: v if k in own else neutralize_value(v, tags, ctl) for k, v in context.items()}

    def _check(self, data: dict[str, Any]) -> tuple[BaseModel, float]:
        """A decoded verdict object as ``(verdict, value)``; ValueError when it
        does not fit the output model or has no finite value."""
        try:
            verdict = self.output_model.model_validate(data)
        except Exception as exc:  # ValidationError, or a validator's own error
            raise ValueError(f"does not match {self.output_model.__name__}: {exc}".replace("\n", " ")[:400]) from None
        return verdict, self.verdict_value(verdict)

    def verdict_value(self, verdict: BaseModel) -> float | None:
        """The reward a checked verdict stands for; None for labels without numbers."""
        return output_value(verdict)

    def sealed_request(self, messages: list[dict[str, Any]], policy_texts: Sequence[str] = ()
                       ) -> tuple[list[dict[str, Any]], dict[str, Any] | None, Any, str | None]:
        """``(messages, json_schema, read, grammar)`` of one request: with ``seal`` on, the messages
        end with the seal instruction and ``read`` takes only a sealed verdict (a verdict line is
        forced by ``grammar`` where the judge takes one); with it off, the last verdict outside
        any verbatim copy of the policy's text (docs/sealed-verdicts.md)."""
        if self.form is not None:
            return self._form_request(messages, policy_texts)
        if not self.seal:
            return messages, self._schema, partial(self._read_unsealed, [t for t in policy_texts if t]), None
        seal = self._sealer.value(messages)
        if self._labels and not self.structured and not self._shows_schema:
            sent = seal_messages(messages, label_instruction(seal, " or ".join(self._labels), self._placeholder))
            return sent, None, partial(self._read_sealed, seal, [t for t in policy_texts if t]), \
                self._line_grammar(seal, " | ".join(map(literal, self._labels)))
        instruction = json_instruction(seal, "" if self._shows_schema else schema_fields(self.output_model))
        schema = self._wire_schema
        if schema is not None and not getattr(self.model, "caches_grammars", True):
            schema = sealed_schema(self._grammar_schema, seal)   # the server writes the seal exactly
        sent = seal_messages(messages, instruction)
        # a partial, not a closure: fewer objects for each request in flight
        return sent, schema, partial(self._read_sealed, seal, [t for t in policy_texts if t]), None

    def _form_request(self, messages: list[dict[str, Any]], policy_texts: Sequence[str]
                      ) -> tuple[list[dict[str, Any]], None, Any, str | None]:
        """The request of a declared verdict form (a ``VERDICT <seal>:`` line when sealed)."""
        form = self.form
        if not self.seal:
            texts = [t for t in policy_texts if t]
            return messages, None, lambda text: made_verdicts(form.read(text, texts), text, self._declared), None
        seal = self._sealer.value(messages)
        shown = form.instruction_text()
        sent = seal_messages(messages, label_instruction(seal, f"your verdict written as {shown}", shown))
        texts = [t for t in policy_texts if t]
        return sent, None, lambda text: made_verdicts(read_sealed(
            text, seal, read_line=form.read_line, placeholder=shown, policy_texts=texts), text, self._declared), \
            self._line_grammar(seal, form.grammar())

    def _line_grammar(self, seal: str, verdict: str) -> str | None:
        """Where the judge takes a grammar: bounded reasoning, then ``VERDICT <seal>: `` and ``verdict``
        (GBNF), as candidate blocks are forced (a 135M judge echoes the instruction's example line)."""
        if not getattr(self.model, "accepts_grammar", False):
            return None
        return verdict_line_grammar(seal, verdict, REASONING_MAX_CHARS, self.params.max_tokens)

    def _declared(self, v: "float | str", before: str) -> tuple[BaseModel, float]:
        """A declared form's value as ``(verdict, value)``: a score is its own value, a label
        the value ``label_values`` gives it; the reasoning, the reply's last characters before it."""
        value = float(v) if isinstance(v, float) else float(self.label_values[v])
        verdict = DeclaredVerdict(reasoning=before[-REASONING_MAX_CHARS:], value=value,
                                  score=v if isinstance(v, float) else None, label=v if isinstance(v, str) else None)
        return verdict, value

    def _read_sealed(self, seal: str, texts: list[str], text: str) -> Any:
        decision = read_sealed(text, seal, check=self._check, labels=self._labels, same=self._same,
                               placeholder=self._placeholder, policy_texts=texts)
        return made_verdicts(decision, text, self._label_verdict)

    def _read_unsealed(self, texts: list[str], text: str) -> Any:
        decision = read_unsealed(text, texts, check=self._check, labels=self._labels, same=self._same)
        return made_verdicts(decision, text, self._label_verdict)

    def _same(self, a: Any, b: Any) -> bool:
        """Two read verdicts agree when their rewards do (a bare label is worth its value)."""
        def value(v: Any) -> Any:
            return v[1] if isinstance(v, tuple) else self._bare_labels.get(v, v)
        return value(a) == value(b)

    def _label_verdict(self, label: str, before: str) -> tuple[BaseModel, float]:
        """A bare label as ``(verdict, value)``: the reasoning, the reply before it (cut), or the label."""
        field = self._label_reasoning
        return self._check({"score": label, **({} if field is None else {field: bounded_reasoning(before) or label})})

    async def ask_judge(self, messages: list[dict[str, Any]], policy_texts: Sequence[str] = (),
                        extra: Mapping[str, Any] | None = None, sample: StringThread | None = None,
                        emptied_request: "Callable[[], list[dict[str, Any]]] | None" = None) -> Grade:
        """Ask the judge for a sealed verdict, the grade carrying ``extra``; never raises for
        judge-side failures (``sample``: penalized when the judge refuses the request as over its
        context and most of it goes with the answer: ``emptied_request()``, its messages without it)."""
        sent, schema, read, grammar = self.sealed_request(messages, policy_texts)
        answer = await self.ask_until_parsed(self.model, sent, self.params, read, json_schema=schema,
                                             grammar=grammar, reply_retries=self.reply_retries)
        if isinstance(answer, JudgeFailure):
            rebuild = None if emptied_request is None else (
                lambda: self.sealed_request(emptied_request(), policy_texts)[0])
            return await self.failed(answer, sample, sent, rebuild, extra=dict(extra or {}))
        found: Verdict = answer.verdict
        verdict, value = found.value
        reasoning = (verdict.reasoning_text() if isinstance(verdict, JudgeOutput)
                     else verdict_reasoning(verdict))
        extra = {**(extra or {}), **self.verdict_extra(verdict, answer)}
        if found.others:
            extra["disagreeing_verdicts"] = [v[0].model_dump(mode="json") for v in found.others]
        expectation = (await expected_verdict(self, sent, answer.completion.text, found)
                       if self.expected_value else None)
        return self.scored(answer, value, reasoning, extra, expectation)

    def verdict_extra(self, verdict: BaseModel, answer: JudgeAnswer) -> dict[str, Any]:
        """What a scored grade's ``extra`` records of the verdict."""
        return {"verdict": json_fields(verdict)}

    async def preflight(self, sample: StringThread | None = None) -> Grade:
        """One probe request before a run: a Grade for ``sample`` (default a one-line question
        and answer); ``unscored`` with ``no sealed verdict``: the judge does not write the
        sealed form this grader asks for."""
        probe = sample if sample is not None else StringThread(
            [("user", "What is the capital of France?"), ("assistant", "Paris is the capital of France.")])
        return await self.grade(probe)

    def config(self) -> dict[str, Any]:
        return {**super().config(), **self.prompt.sources(),
                "output_model": self.output_model.model_json_schema(),
                "completion_model": (self.completion_model.model_json_schema()
                                     if self.completion_model else None),
                "template_variables": self.template_variables, "params": self.params.as_dict(),
                "model": getattr(self.model, "name", type(self.model).__name__),
                "structured": self.structured, "seal": self.seal,
                **({"output_schema_format": self.output_schema_format}
                   if self.output_schema_format != "compact" else {}),
                **({"verdict_form": {"pattern": self.form.pattern, "labels": self.label_values,
                                     "bounds": self.form.bounds}} if self.form is not None else {}),
                **({"engine": self.prompt.engine} if self.prompt.engine != "handlebars" else {}),
                **({"expected_value": True} if self.expected_value else {})}


class ScorerJudgeGrader(TemplatedPromptJudgeGrader):
    """A pinned scorer version as a templated grader (its public factory is ``ScorerGrader``,
    below): the binding (scorer data, read here) builds the
    context and renders the one user message, the output spec's verdict model is the readout.
    A completion lacking a bound field is penalized without a judge call."""

    def __init__(self, binding: Any, model: InferenceModel, *, grader_key: str, reply_retries: int = 1,
                 language: str | None = None, default_max_tokens: int = 512, mode: Mode | None = None,
                 train_penalty: float = -1.0, eval_penalty: float = 0.0, allow_model_override: bool = False,
                 seal_key: "bytes | str | None" = None):
        model = JudgeBinding(model=model).model
        # every argument but seal_key, for __reduce__
        self._args = (binding, model, {k: v for k, v in locals().items()
                                       if k not in ("self", "binding", "model", "seal_key", "__class__")})
        config = binding.config
        asked = getattr(model, "name", None) or type(model).__name__
        if asked != config.model and not allow_model_override:
            raise ConfigError(
                f"scorer {grader_key!r} (version {binding.version[:12]}) names model {config.model!r}, but "
                f"the judge given asks for {asked!r}: pass a judge for {config.model!r} (e.g. "
                f"OpenAIModel(url, {config.model!r})), or allow_model_override=True to run this "
                f"version on {asked!r} (its grades then record judge_model={asked!r})")
        p, spec = config.params, config.output_spec
        max_tokens = p.max_tokens if p.max_tokens is not None else default_max_tokens
        super().__init__(grader_key, model, "", config.template, spec.output_model, p.temperature,
                         top_p=p.top_p, seed=p.seed, max_tokens=max_tokens or None, strict_templates=False,
                         engine=config.template_engine, reply_retries=reply_retries, mode=mode,
                         train_penalty=train_penalty, eval_penalty=eval_penalty, seal_key=seal_key)
        self._grammar_schema = spec.json_schema(grammar=True)   # llama.cpp ignores min/max: ranges as enums
        self._shows_schema = False   # the seal instruction always lists the fields
        self.binding, self.spec, self.language = binding, spec, language
        self.model_name, self.allow_model_override = asked, bool(allow_model_override)
        binding.constants(language)  # the bundle's instructions are compiled now, not at grade time
        if asked != config.model:
            log.info("scorer %s names judge %r; running on %r (allow_model_override)", grader_key,
                     config.model, asked)

    @property
    def reads_fields(self) -> bool:   # the bound fields are screened (_prepare), not the whole text
        return self.binding.reads_completion_fields

    def __reduce__(self) -> tuple[Any, ...]:
        # the spec's verdict model is a class built per spec (it cannot pickle): rebuild the grader
        # from its arguments, with the same seal key so requests reproduce
        binding, model, options = self._args
        return partial(ScorerJudgeGrader, binding, model, seal_key=bytes.fromhex(self._sealer.key_hex()), **options), ()

    @property
    def labels_only(self) -> bool:   # a categorical spec without ``values``
        return not self.spec.has_values

    def require_rewards(self, where: str) -> None:
        self.spec.require_values(
            f"{where} (scorer {self.grader_key!r}: its verdicts are labels without values)",
            hint="; evaluation counts such labels as they are (evaluate_dataset, rewardjudge eval)")

    @property
    def version(self) -> str:   # the pinned scorer version id
        return self.binding.version

    def config(self) -> dict[str, Any]:
        return {"class": "ScorerGrader", "train_penalty": self.train_penalty, "eval_penalty": self.eval_penalty,
                "scorer": self.binding.to_dict(), "judge_model": self.model_name}

    def neutralized(self, sample: StringThread) -> StringThread:
        return self.judge_thread(sample, self.prompt.tags)

    def render(self, sample: StringThread) -> tuple[str, list[str]]:
        """``binding.render(sample)`` in the grader's language: the prompt and the variables without a value."""
        tags, ctl = tuple(self.prompt.tags), tuple(self.control_tokens())
        return self.binding.render(sample, language=self.language,
                                   clean=lambda value: neutralize_value(value, tags, ctl))

    async def judge(self, sample: StringThread, parsed: BaseModel | None) -> Grade:
        binding = self.binding
        extra: dict[str, Any] = {"scorer": binding.scorer_slug or binding.scorer_name,
                                 "scorer_version": self.version, "scorer_model": binding.config.model,
                                 "judge_model": self.model_name, **({"labels_only": True} if self.labels_only else {})}
        try:
            prepared = await self.off_loop(text_size(sample), self._prepare, sample)
        except OutputParserException as exc:   # the binding's MalformedCompletion: the policy's fault
            return self.penalized(sample, f"malformed completion: {exc}", extra=extra)
        except RecursionError:
            return self.penalized(sample, "malformed completion: nested too deep", extra=extra)
        if isinstance(prepared, str):
            return self.penalized(sample, f"malformed completion: {prepared}", extra=extra)
        prompt, missing, texts = prepared
        return await self.ask_judge([{"role": "user", "content": prompt}], texts,
                                    extra={**extra, "missing_variables": missing}, sample=sample,
                                    emptied_request=partial(self._emptied_prompt, sample))

    def _emptied_prompt(self, sample: StringThread, parsed: None = None) -> list[dict[str, Any]]:
        """The prompt of ``sample`` with its answer emptied: the completion, or where the binding
        reads its fields, its JSON object with every field emptied (for ``overlong``)."""
        value = self.binding.bound_completion(sample)
        text = "" if value is None else json.dumps(emptied(value), ensure_ascii=False)
        blank = sample._derived([*sample.context_turns(), ("assistant", text)], sample.metadata, checked=True)
        return [{"role": "user", "content": self.render(self.neutralized(blank))[0]}]

    def shown_request(self, sample: StringThread, fields: dict[str, Any]) -> list[dict[str, Any]]:
        # the binding reads ``fields`` from the sample's completion, their JSON text
        return [{"role": "user", "content": self.render(self.neutralized(sample))[0]}]

    def _prepare(self, sample: StringThread) -> "tuple[str, list[str], list[str]] | str":
        """The judge prompt, the variables without a value and the policy's texts as shown (the
        completion and the fields the binding reads); or why the completion is content-free: the
        screen saw its whole text, but a binding shows the judge only the fields it reads
        (``completion:<path>``): the screen of a ``completion_model``'s fields, over those the
        binding reads; where they are mixed, the request rendered with the completion's texts that
        carry content blanked must differ."""
        fields = self.binding.completion_fields(sample) if self.reject_content_free else None
        if fields:
            value = self.binding.bound_completion(sample)
            reason, blank = screen_fields(fields, self.content_free_phrases, whole=value,
                                          question=sample.last_user_content())
            if blank is not None:
                reason = self._shows_no_content(sample, value, blank)
            if reason is not None:
                return reason
        clean = self.neutralized(sample)
        prompt, missing = self.render(clean)
        shown = self.binding.completion_fields(clean).values()
        return prompt, missing, [clean.completion(), *(v for v in shown if isinstance(v, str) and v)]

    def verdict_value(self, verdict: BaseModel) -> float | None:
        return None if self.labels_only else output_value(verdict)

    def verdict_extra(self, verdict: BaseModel, answer: JudgeAnswer) -> dict[str, Any]:
        raw = answer.completion.raw   # the server's own model name when it gives one (an alias resolved)
        reported = raw.get("model") if isinstance(raw, dict) else None
        return {"judge_model": reported if isinstance(reported, str) and reported else self.model_name,
                "label": verdict.label, "score": verdict.score}


def ScorerGrader(scorer: "Scorer | ScorerBinding", model: InferenceModel, mapping: Mapping[str, str] | None = None,
                 *, grader_key: str | None = None,
                 **options: Any) -> ScorerJudgeGrader:  # noqa: N802 (the public name, kept as a factory)
    """A templated grader running one scorer version on ``model`` (docs/scorers.md, "The grader").
    ``language``: that of the built-in ``output_instructions``; ``default_max_tokens`` (512) applies
    when the params leave it unset; a completion lacking a bound field is penalized unasked; a
    label-only spec scores None.

    >>> grader = ScorerGrader(scorer, OpenAIModel(url, scorer.config.model),  # doctest: +SKIP
    ...                       {"answer": "completion:answer"})
    """
    if isinstance(scorer, Scorer):
        scorer = scorer.bind(mapping)
    elif not isinstance(scorer, ScorerBinding):
        raise ConfigError(f"ScorerGrader needs a Scorer or a ScorerBinding, got {type(scorer).__name__}")
    elif mapping is not None:
        raise ConfigError("a ScorerBinding carries its own mapping: pass a mapping only with a Scorer "
                          "(or bind the scorer with it)")
    key = grader_key or scorer.scorer_slug or slugify(scorer.scorer_name)
    return ScorerJudgeGrader(scorer, model, grader_key=key, **options)


def _reads_of(grader: "TemplatedPromptJudgeGrader", prompt: Any) -> "frozenset[str] | None":
    """The root names ``grader``'s templates read, where that is known (Handlebars templates
    whose every read is a named path, this class's own context, prompt and rendering; the
    helpers unchecked); None otherwise."""
    cls = type(grader)
    if (getattr(cls.extract_template_context, "__func__", None) is not _SEED_HOOK
            or cls.context_of is not TemplatedPromptJudgeGrader.context_of
            or cls.build_messages is not Grader.build_messages or type(prompt) is not JudgePrompt):
        return None
    reads: set[str] = set()
    for template in (prompt.system, prompt.user):
        impl = getattr(template, "template", None)
        names = getattr(impl, "_reads", None) if type(impl) is _hb.Template else None
        if names is None:
            return None
        reads.update(names)
    return frozenset(reads)


def _unread_of(grader: "TemplatedPromptJudgeGrader", prompt: Any) -> frozenset[str]:
    reads = _reads_of(grader, prompt)
    if reads is None:
        return frozenset()
    return frozenset(k for k in THREAD_VARIABLES if k not in reads and k != "output_schema")


def _policy_texts(context: Mapping[str, Any], parsed: "BaseModel | dict[str, Any] | None") -> list[str]:
    """The policy's texts as the templates are given them: the completion, and each text field of a
    structured one (a template may show the fields alone)."""
    if parsed is None:   # the completion alone
        return [context.get("completion") or ""]
    names = parsed if isinstance(parsed, dict) else type(parsed).model_fields
    fields = (context.get(k) for k in names)
    return [context.get("completion") or "", *(v for v in fields if isinstance(v, str) and v)]


def _check_shows_completion(grader: "TemplatedPromptJudgeGrader", parsed_names: Sequence[str]) -> None:
    """A ConfigError when every name the templates read is known to show no part of the completion:
    the judge would grade the prompt alone, one grade for every answer to it."""
    reads = set(grader.prompt.variables)
    if (type(grader).context_fields is TemplatedPromptJudgeGrader.context_fields
            and getattr(type(grader).extract_template_context, "__func__", None) is _SEED_HOOK
            and _hb.helpers_as_shipped()
            and reads <= _BESIDE_COMPLETION | set(grader.template_variables or ())):
        field = f" or {{{{{parsed_names[0]}}}}}" if parsed_names else ""
        raise ConfigError(f"the templates never show the judge the completion (they read "
                          f"{', '.join(sorted(reads)) or 'nothing'}): every answer to a prompt would get one "
                          f"grade; add {{{{completion}}}}{field} to user_template ({{completion}} in single "
                          f"braces is plain text)")


#: names of the vocabulary that show no part of the completion: a template reading only these and
#: some of a structured completion's fields shows the judge those fields alone
_BESIDE_COMPLETION = frozenset({"context_turns", "context_str", "context_turns_without_last_user",
                                "context_str_without_last_user", "last_user_turn_content", "last_user_message",
                                "metadata", "output_schema"})


@lru_cache(maxsize=256)
def _json_schema_text(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(), indent=2, ensure_ascii=False)
