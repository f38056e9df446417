"""Grader: the async base every grader builds on."""

from __future__ import annotations

import abc
import asyncio
import json
import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Generic, Iterable, Literal, Mapping, Sequence, TypeVar

from pydantic import BaseModel

from .._hash import canonical_hash
from .._sync import run_sync
from .._thread_context import THREAD_VARIABLES, neutralized_thread, thread_context
from ..core.structured_output import OutputParserException, json_fields, pydantic_parse, render_schema
from ..errors import ConfigError, JudgeError
from ..grade import Grade
from ..models._base import Completion, GenerationParams, InferenceModel, Message, TokenDistribution
from ..readouts._decision import NoVerdict
from ..templates._prompts import get_prompt
from ..thread import StringThread
from ._options import GraderOptions, JudgeBinding
from ._field_guards import blanked_again, screen_fields, warm_screen
from ._guards import content_free_reason
from ._schedule import prompt_units

#: texts longer than this are screened, neutralised, rendered and read in a worker thread
_INLINE_CHARS = 65_536

#: what one value of JSON in a text weighs in ``work_size``: parsing, screening, neutralising and rendering a
#: structured completion cost per value, not per character (hunt 26: 16,000 empty lists in 64 KB held the event
#: loop 550-750 ms inline, 140 ms for 16,000 numbers)
_VALUE_CHARS = 64


def work_size(text: str) -> int:
    """``text``'s characters and ``_VALUE_CHARS`` for each ``[``, ``{`` and ``,`` in it (counted in C), what
    ``off_loop`` weighs: a JSON value's walks cost as many characters."""
    return len(text) + _VALUE_CHARS * (text.count("[") + text.count("{") + text.count(","))


def text_size(sample: StringThread, weigh: "Callable[[str], int]" = work_size) -> int:
    """The ``work_size`` of ``sample``'s turns (what building its judge prompt works through); ``weigh``: another."""
    total = 0
    for _, content in sample.turns:   # a loop: a chain of C callables (map, filter, a type's
        if isinstance(content, str):  # __instancecheck__) cost 1.4k instructions a turn, this a few hundred
            total += weigh(content)
    return total


#: the longest text surely within ``_INLINE_CHARS`` (a character weighs at most ``1 + _VALUE_CHARS``): no count
_SURELY_INLINE = _INLINE_CHARS // (1 + _VALUE_CHARS)


def inline_text(text: str) -> bool:
    """``work_size(text) <= _INLINE_CHARS`` (``off_loop`` keeps it on the loop), counted only for a long text."""
    return len(text) <= _SURELY_INLINE or work_size(text) <= _INLINE_CHARS


def inline_sample(sample: StringThread) -> bool:
    """``text_size(sample) <= _INLINE_CHARS``, counted only where its turns' characters may weigh more."""
    return text_size(sample, len) <= _SURELY_INLINE or text_size(sample) <= _INLINE_CHARS


def emptied(value: Any) -> Any:
    """``value`` (plain data: a completion's fields) with the policy's content taken out: text
    empty, lists empty, numbers 0, a mapping's values emptied (its keys kept, so a template's
    paths into it still resolve)."""
    if isinstance(value, str):
        return ""
    if isinstance(value, Mapping):
        return {k: emptied(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return []
    return 0 if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def without_completion(sample: StringThread) -> StringThread:
    """``sample`` with its completion's text emptied (its context and metadata as they are)."""
    if not sample.completion():
        return sample
    return sample._derived([*sample.context_turns(), ("assistant", "")], sample.metadata, checked=True)


def request_chars(messages: Sequence[Mapping[str, Any]]) -> int:
    """The characters of a request's messages: each text and content part, image URLs included."""
    total = 0
    for m in messages:
        content = m.get("content")
        for part in content if isinstance(content, list) else [content]:
            if isinstance(part, Mapping):
                image = part.get("image_url")
                part = part.get("text", image.get("url") if isinstance(image, Mapping) else image)
            total += len(part) if isinstance(part, str) else 0
    return total


log = logging.getLogger("rewardjudge")

V = TypeVar("V")


@dataclass
class JudgeAnswer(Generic[V]):
    """A judge reply that parsed: the verdict, the reply, the totals over every request."""

    verdict: V
    completion: Completion
    usage: dict[str, int]
    attempts: int
    latency_s: float
    #: verdict-shaped text copied from the prompt that disagreed with the verdict
    forgeries: int = 0


@dataclass
class JudgeFailure:
    """A judge request that gave no usable answer: why, what it cost, the judge-side error."""

    reason: str
    attempts: int
    usage: dict[str, int]
    raw_reply: str | None
    latency_s: float
    error: JudgeError | None = None
    #: what went wrong with the reply (``"no sealed verdict"``, ``"cut off"``, ``"invalid"``)
    kind: str | None = None


@dataclass
class Expectation:
    """The expected-value step (``graders._expected_value``) folded into a scored Grade: the
    value (None: the sampled one stays), what ``extra`` gains, the distribution, the cost."""

    value: float | None
    extra: dict[str, Any]
    distribution: dict[str, float] | None = None
    attempts: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    latency_s: float = 0.0


Mode = Literal["train", "eval"]


class Grader(abc.ABC):
    """Base of all graders and the one pipeline (docs/pipeline.md): ``grade`` one sample,
    ``grade_batch`` many; a family overrides ``judge`` (or ``judge_group`` with
    ``judges_groups``), a custom grader may override ``grade``.

    A malformed *policy* output is ``penalized``: ``train_penalty`` (-1.0) in training,
    ``eval_penalty`` (0.0) in evaluation (``mode`` if set, else the sample's
    ``metadata["eval"]``). Judge-side failures are ``unscored`` (value None), never a penalty.
    ``grade_batch`` gives one Grade per sample, in order; only usage errors (``ConfigError``)
    are raised, after every other sample has finished.
    """

    #: penalize empty and content-free completions (graders/_guards.py) before any judge sees them
    reject_content_free: bool = True
    #: extra content-free phrases for this grader (case-insensitive, trailing punctuation ignored)
    content_free_phrases: tuple[str, ...] = ()

    #: completions longer than this many characters are penalized unread
    max_completion_chars: int = 262_144
    #: whether the grader shows the judge fields it reads from a JSON completion (a scorer's
    #: ``completion:<path>`` bindings), screened as such: the whole text is then not screened as JSON
    reads_fields: bool = False

    def __init__(self, grader_key: str, **options: Any):
        """``options``: the fields of ``GraderOptions`` (``mode``, ``train_penalty``,
        ``eval_penalty``, ``reject_content_free``, ``max_completion_chars``)."""
        self.take_options(GraderOptions(grader_key=grader_key, **options))

    #: the pydantic model a completion is parsed into before any judge call (None: text)
    completion_model: type[BaseModel] | None = None

    def take_options(self, opts: GraderOptions) -> None:
        """Set the options every grader shares from ``opts`` (a family's options model,
        validated), and the judge and ``completion_model`` where it binds one."""
        self.grader_key, self.mode = opts.grader_key, opts.mode
        self.train_penalty, self.eval_penalty = opts.train_penalty, opts.eval_penalty
        if opts.reject_content_free is not None:
            self.reject_content_free = opts.reject_content_free
        if opts.max_completion_chars is not None:
            self.max_completion_chars = opts.max_completion_chars
        if isinstance(opts, JudgeBinding):
            self.model, self.completion_model = opts.model, opts.completion_model
        if self.reject_content_free:   # the screen's patterns built here, not in the first grade's loop turn
            warm_screen(tuple(self.content_free_phrases))

    async def grade(self, sample: StringThread) -> Grade:
        """Grade one sample: a group of one (``grade_group``)."""
        return (await self.grade_group([self.check_sample(sample)]))[0]

    async def grade_group(self, samples: list[StringThread]) -> list[Grade]:
        """One Grade per sample of one prompt, in order: each is ``screen``-ed (penalized
        before any judge call; a long completion in a worker thread), the rest go to
        ``judge_group``."""
        grades: list[Grade | None] = [None] * len(samples)
        screened: list[tuple[StringThread, BaseModel | None]] = []
        at: list[int] = []
        for i, sample in enumerate(samples):
            sample = self.check_sample(sample)
            text = sample.completion()   # off_loop's test here: no coroutine for a short one
            parsed, rejected = self.screen(sample, self.completion_model) if inline_text(text) else \
                await self.off_loop(work_size(text), self.screen, sample, self.completion_model)
            if rejected is None:
                screened.append((sample, parsed))
                at.append(i)
            grades[i] = rejected
        if screened:
            for i, grade in zip(at, await self.judge_group(screened)):
                grades[i] = grade
        return grades  # type: ignore[return-value]

    async def judge_group(self, screened: list[tuple[StringThread, BaseModel | None]]) -> list[Grade]:
        """The Grades of screened ``(sample, parsed)`` of one prompt, in order; by default
        ``judge`` on each."""
        grades = []
        for sample, parsed in screened:   # a loop, not a comprehension: no coroutine of its own
            grades.append(await self.judge(sample, parsed))
        return grades

    @staticmethod
    async def off_loop(size: int, fn: "Callable[..., V]", *args: Any) -> V:
        """``fn(*args)``, in a worker thread when ``size`` (the characters of text it works
        through: screening, neutralising, rendering, reading a reply) is over ``_INLINE_CHARS``,
        so a long completion or reply never holds the event loop."""
        if size > _INLINE_CHARS:
            return await asyncio.to_thread(fn, *args)
        return fn(*args)

    async def judge(self, sample: StringThread, parsed: BaseModel | None) -> Grade:
        """A screened sample's Grade (``parsed``: the completion parsed into ``completion_model``)."""
        raise ConfigError(f"{type(self).__name__} implements neither judge() nor grade(): a grader family overrides one")

    def config(self) -> dict[str, Any]:
        """What defines this grader's behaviour; its hash is ``version``."""
        return {"class": type(self).__name__, "train_penalty": self.train_penalty,
                "eval_penalty": self.eval_penalty}

    def require_rewards(self, where: str) -> None:
        """``ConfigError`` when this grader's verdicts carry no number; ``where`` names the adapter asking."""

    @property
    def version(self) -> str:
        """First 16 hex digits of the SHA-256 of the canonical ``config()``, cached until a
        public attribute is set; after mutating one *in place* call ``invalidate_version()``."""
        if "_version_cache" not in self.__dict__:
            self.__dict__["_version_cache"] = canonical_hash(self.config())[:16]
        return self.__dict__["_version_cache"]

    def invalidate_version(self) -> None:
        """Forget the cached ``version`` (it is recomputed on next use)."""
        self.__dict__.pop("_version_cache", None)

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_"):   # a public attribute may change config()
            self.__dict__.pop("_version_cache", None)
        object.__setattr__(self, name, value)

    def is_eval(self, sample: StringThread) -> bool:
        if self.mode is not None:
            return self.mode == "eval"
        value = sample.metadata.get("eval")
        try:
            if value is None or value in (True, False):   # bool, 0/1, numpy's bool
                return bool(value)
        except Exception:   # an array: no one truth value
            pass
        # bool("false") is True: a text or other value would pick the penalty by its truthiness
        raise ConfigError(f"metadata 'eval' must be true or false (or absent), got {value!r:.60}; it picks the "
                          f"evaluation penalty over the training one")

    def penalized(self, sample: StringThread, reason: str, **fields: Any) -> Grade:
        value = self.eval_penalty if self.is_eval(sample) else self.train_penalty
        return Grade(value=value, grader_key=self.grader_key, reasoning=reason, status="penalized",
                     error=reason, grader_version=self.version, **fields)

    def unscored(self, reason: str, **fields: Any) -> Grade:
        return Grade(value=None, grader_key=self.grader_key, reasoning=None, status="unscored",
                     error=reason, grader_version=self.version, **fields)

    def screen(self, sample: StringThread, completion_model: type[BaseModel] | None = None
               ) -> tuple[BaseModel | None, Grade | None]:
        """Parse the completion into ``completion_model``: ``(parsed, None)`` (``parsed`` None
        without a model), or ``(None, penalized Grade)`` when it is over ``max_completion_chars``,
        empty or content-free (with ``reject_content_free``), or does not parse."""
        self.is_eval(sample)   # its ConfigError on every sample, not only on those penalized
        text = sample.completion()
        if len(text) > self.max_completion_chars:
            reason = f"{len(text)} characters, over the limit of {self.max_completion_chars} (max_completion_chars)"
        else:
            reason = content_free_reason(text, self.content_free_phrases, sample.last_user_content(),
                                         as_json=completion_model is None and not self.reads_fields) \
                if self.reject_content_free else None
        if reason is not None or completion_model is None:
            return None, None if reason is None else self.penalized(sample, f"malformed completion: {reason}")
        try:
            parsed = pydantic_parse(text, completion_model)
        except OutputParserException as exc:
            return None, self.penalized(sample, f"malformed completion: {exc.reason}")
        except RecursionError:
            return None, self.penalized(sample, "malformed completion: nested too deep")
        try:   # what the graders send is this JSON form (a lone surrogate cannot be written)
            dumped = json_fields(parsed)
        except (UnicodeError, ValueError, RecursionError) as exc:
            return None, self.penalized(sample, f"malformed completion: its fields cannot be "
                                                f"written as JSON ({type(exc).__name__})")
        reason = None
        if self.reject_content_free:
            reason, blank = screen_fields(dumped, self.content_free_phrases, completion_model,
                                          question=sample.last_user_content())
            if blank is not None:   # some free-text fields carry content, some none: which are shown?
                reason = self._shows_no_content(sample, dumped, blank)
        return (parsed, None) if reason is None else (None, self.penalized(sample, f"malformed completion: {reason}"))

    def _shows_no_content(self, sample: StringThread, fields: dict[str, Any], blank: Any) -> str | None:
        """Why the judge would be shown no content of ``sample``'s fields: its request is the same
        with every free-text field that carries content emptied (``blank``, the completion's text
        its JSON). Rendering, not reading names: a template reaches fields through paths, blocks,
        helpers or Jinja2."""
        def shown(value: Any) -> "Sequence[Message] | None":
            text = json.dumps(value, ensure_ascii=False)
            return self.shown_request(sample._derived([*sample.context_turns(), ("assistant", text)],
                                                      sample.metadata, checked=True), value)

        # blanked two ways, not against the fields: a field compared with a text flips its branch
        first = shown(blank)
        if first is None or shown(blanked_again(fields, blank)) != first:
            return None
        return ("every free-text field the judge is shown is empty or content-free (the fields that carry "
                "content are never shown to it)")

    def shown_request(self, sample: StringThread, fields: dict[str, Any]) -> "Sequence[Message] | None":
        """The messages the judge would be sent for ``sample`` with ``fields`` as its parsed
        completion (the content-free screen compares two); None where a family cannot say (every
        field is then taken as shown)."""
        return None

    @classmethod
    def extract_template_context(cls, thread: StringThread, output_model: type[BaseModel] | None = None,
                                 template_variables: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The template context of ``thread`` (the seed's hook): the thread vocabulary plus
        ``template_variables``. Override to add fields (call ``super()``; declare the names in
        ``context_names``)."""
        schema = render_schema(output_model) if output_model is not None else ""
        ctx = thread_context(thread, output_schema=schema)
        ctx.update(template_variables or {})
        return ctx

    #: the names a class's ``extract_template_context`` adds to the thread vocabulary
    context_names: tuple[str, ...] = ()

    def context_variables(self, *more: str) -> set[str] | None:
        """The names a template context of this grader holds (thread vocabulary,
        ``context_names``, ``template_variables``, ``more``); None when not known before a
        real sample (an ``extract_template_context`` override without ``context_names``)."""
        mro = type(self).__mro__
        definer = next((i for i, c in enumerate(mro) if "extract_template_context" in c.__dict__), None)
        declarer = next(i for i, c in enumerate(mro) if "context_names" in c.__dict__)
        if definer is not None and definer < declarer:   # overridden below the declaration
            return None
        return (set(THREAD_VARIABLES) | set(self.context_names)
                | set(getattr(self, "template_variables", None) or ()) | set(more))

    #: the ``JudgePrompt`` of a family that renders its own prompt
    prompt: Any = None

    @property
    def system_template(self) -> Any:
        """The prompt's system template (a ``PromptTemplate``), or None."""
        return None if self.prompt is None else self.prompt.system

    @property
    def user_template(self) -> Any:
        """The prompt's user template (a ``PromptTemplate``), or None."""
        return None if self.prompt is None else self.prompt.user

    def _get_prompt(self, method: str, *, template_class: str | type | None = None,
                    multimodal: bool = False, strict: bool = True, **kwargs: Any) -> str:
        """Render the built-in prompt ``<Class>/<method>`` with ``kwargs``
        (``rewardjudge.templates._prompts.get_prompt``)."""
        return get_prompt(self, method, template_class=template_class, multimodal=multimodal,
                          strict=strict, **kwargs)

    def build_messages(self, context: Mapping[str, Any],
                       image_parts: Sequence[Mapping[str, Any]] = ()) -> list[dict[str, Any]]:
        """The chat messages the prompt step renders for ``context``."""
        if self.prompt is None:
            raise ConfigError(f"{type(self).__name__} has no prompt of its own")
        return self.prompt.messages(context, image_parts)

    def control_tokens(self) -> tuple[str, ...]:
        """The judge model's own control tokens, kept out of policy text like protocol tags."""
        return tuple(getattr(getattr(self, "model", None), "control_tokens", ()) or ())

    def judge_thread(self, sample: StringThread, tags: Iterable[str] = ()) -> StringThread:
        """``sample`` with every turn and metadata value neutralised."""
        return neutralized_thread(sample, tags, self.control_tokens())

    async def ask_until_parsed(self, model: InferenceModel, messages: Sequence[Message],
                               params: GenerationParams | None, parse: Callable[[str], V], *,
                               json_schema: dict[str, Any] | None = None, grammar: str | None = None,
                               reply_retries: int = 1) -> "JudgeAnswer[V] | JudgeFailure":
        """Ask the judge until ``parse(reply)`` (a readout raising ``OutputParserException``)
        succeeds, at most ``reply_retries + 1`` times: a ``JudgeAnswer``, or a ``JudgeFailure``;
        never raises for judge-side failures."""
        usage: dict[str, int] = {}
        attempts = 0
        started = time.perf_counter()
        last_reply: str | None = None
        problem, kind = "", "invalid"
        extra_kw = {} if grammar is None else {"grammar": grammar}
        for reask in range(reply_retries + 1):
            # a re-ask says so: a request cache would answer the same request with the reply not read
            sent = params if not reask else replace(params or GenerationParams(), reask=reask)
            try:
                completion = await model.chat(messages, sent, json_schema=json_schema, **extra_kw)
            except JudgeError as exc:
                attempts += exc.attempts
                return JudgeFailure(f"{type(exc).__name__}: {exc}", attempts, usage, last_reply,
                                    time.perf_counter() - started, exc)
            attempts += completion.attempts
            for k, v in completion.usage.items():
                usage[k] = usage.get(k, 0) + v
            last_reply = completion.text
            if completion.cut_short:   # a reply cut off, filtered or stopped for a tool call is never read
                problem, kind = (f"the reply did not end on its own (finish_reason {completion.finish_reason!r}: "
                                 f"cut off at max_tokens or the context, filtered or stopped) and is not read"), "cut off"
                continue
            try:   # a rambling judge's reply is read off the loop
                text = completion.text
                verdict = parse(text) if len(text) <= _INLINE_CHARS else await self.off_loop(len(text), parse, text)
            except OutputParserException as exc:
                problem, kind = exc.reason, "invalid"
                continue
            if isinstance(verdict, NoVerdict):
                problem, kind = verdict.reason, verdict.kind
                continue
            return JudgeAnswer(verdict, completion, usage, attempts, time.perf_counter() - started)
        what = "invalid judge reply" if kind == "invalid" else kind
        return JudgeFailure(f"{what} after {reply_retries + 1} tries: {problem}",
                            attempts, usage, last_reply, time.perf_counter() - started, kind=kind)

    async def ask_distribution(self, model: InferenceModel, messages: Sequence[Message],
                               choices: Sequence[str], params: GenerationParams | None = None, *,
                               typed: tuple[Any, Any, Any] | None = None
                               ) -> "TokenDistribution | JudgeFailure":
        """The probability of each of ``choices`` as the judge's next token; ``typed`` =
        ``(state, instructions, criteria)`` asks ``model.typed_distribution`` instead. A
        judge-side failure is a ``JudgeFailure``; usage errors are raised."""
        started = time.perf_counter()
        try:
            if typed is not None:
                state, instructions, criteria = typed
                return await model.typed_distribution(  # type: ignore[attr-defined]
                    state, instructions, list(criteria), list(choices), params)
            return await model.grade_distribution(messages, list(choices), params)
        except JudgeError as exc:
            return JudgeFailure(f"{type(exc).__name__}: {exc}", exc.attempts, {}, None,
                                time.perf_counter() - started, exc)

    async def failed(self, failure: "JudgeFailure", sample: StringThread | None = None,
                     sent: Sequence[Message] = (), emptied_request: "Callable[[], Sequence[Message]] | None" = None,
                     **fields: Any) -> Grade:
        """The unscored Grade of a judge request that failed, or the ``overlong`` penalty of ``sample``."""
        cost = {"attempts": failure.attempts, "usage": failure.usage, "latency_s": failure.latency_s, **fields}
        grade = None if sample is None or emptied_request is None else \
            await self.overlong(sample, failure.error, sent, emptied_request, **cost)
        return grade or self.unscored(failure.reason, raw_reply=failure.raw_reply, **cost)

    async def overlong(self, sample: StringThread, error: JudgeError | None, sent: Sequence[Message],
                       emptied_request: "Callable[[], Sequence[Message]]", **fields: Any) -> Grade | None:
        """``sample`` penalized when the judge refused the request ``sent`` as longer than its context
        and most of its characters are the completion's: what the request loses when the completion
        is emptied (``emptied_request()``, the family's request for ``sample`` with its answer
        emptied, built here only, after such a refusal). A policy must not escape its grade by
        writing past the judge's context; None otherwise: a judge-side failure is never a number."""
        if error is None or not error.over_context:
            return None
        total = request_chars(sent)
        try:
            rest = request_chars(await self.off_loop(total, emptied_request))
        except (ConfigError, asyncio.CancelledError):
            raise
        except Exception as exc:   # no measure: the grade stays unscored
            log.warning("grader %s could not rebuild a refused request without its completion: %r",
                        self.grader_key, exc)
            return None
        policy = total - rest
        if 2 * policy <= total:
            return None
        return self.penalized(sample, f"malformed completion: the judge refused the request as longer than its "
                                      f"context ({str(error)[:160]}), and the completion is {policy / total:.0%} of "
                                      f"its characters; set max_completion_chars below the judge's context",
                              **fields)

    def scored(self, answer: "JudgeAnswer[Any]", value: float, reasoning: str | None,
               extra: dict[str, Any], expectation: Expectation | None = None) -> Grade:
        """The scored Grade of a parsed judge answer; with ``expectation`` its value, ``extra``,
        distribution and cost (the sampled value in ``extra["sampled_value"]``)."""
        if answer.forgeries:
            extra = {**extra, "forgery": answer.forgeries}
        usage, attempts, latency, distribution = answer.usage, answer.attempts, answer.latency_s, None
        if expectation is not None:
            extra = {**extra, "sampled_value": value, **expectation.extra}
            value = value if expectation.value is None else expectation.value
            usage = {k: usage.get(k, 0) + expectation.usage.get(k, 0) for k in {**usage, **expectation.usage}}
            attempts += expectation.attempts
            latency = None if latency is None else latency + expectation.latency_s
            distribution = expectation.distribution
        return Grade(value=value, grader_key=self.grader_key, reasoning=reasoning, status="scored",
                     raw_reply=answer.completion.text, usage=usage, attempts=attempts,
                     latency_s=latency, grader_version=self.version, extra=extra,
                     distribution=distribution)

    @staticmethod
    def check_sample(sample: Any) -> StringThread:
        if not isinstance(sample, StringThread):
            raise ConfigError(f"a sample must be a StringThread, e.g. StringThread([('user', question), "
                              f"('assistant', answer)]), got {type(sample).__name__}")
        return sample

    def batch_concurrency(self) -> int | None:
        """How many units ``grade_batch`` works on at once (None: all): the judge
        model's ``max_concurrency`` where it declares one."""
        limit = getattr(getattr(self, "model", None), "max_concurrency", None)
        return limit if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else None

    #: the family judges a prompt's samples together: ``grade_batch`` hands it prompt groups
    judges_groups: bool = False
    #: the most samples of one prompt a unit holds (None: all); a larger group is split into
    #: balanced units, so every judge request goes through ``batch_concurrency``
    max_group: int | None = None

    async def _grade_unit(self, samples: list[StringThread]) -> list[Grade]:
        """A group's Grades (a group of one through ``grade``); a failure other than a usage
        error leaves the group unscored with the reason."""
        try:
            if len(samples) == 1:
                return [await self.grade(samples[0])]
            return await self.grade_group(samples)
        except (ConfigError, asyncio.CancelledError):
            raise
        except JudgeError as exc:
            return self._unscored_unit(len(samples), f"{type(exc).__name__}: {exc}", exc.attempts)
        except Exception as exc:  # keep a training loop alive; say what happened
            log.warning("grader %s raised %r; left unscored", self.grader_key, exc)
            return self._unscored_unit(len(samples), f"grader error: {type(exc).__name__}: {exc}")

    def _unscored_unit(self, n: int, reason: str, attempts: int = 0) -> list[Grade]:
        # apart from _grade_unit: a comprehension there would give each unit in flight the
        # closure cells of the variables it reads
        return [self.unscored(reason, attempts=attempts) for _ in range(n)]

    async def grade_batch(self, samples: Iterable[StringThread]) -> list[Grade]:
        """Grade ``samples`` concurrently; one Grade per sample, in order. Its unit is a prompt
        group (``judges_groups``; in pieces of at most ``max_group``) or each sample alone, at
        most ``batch_concurrency()`` at once;
        a usage error (``ConfigError``) is raised after every other unit has finished."""
        if isinstance(samples, StringThread):
            raise ConfigError("grade_batch takes a list of samples; grade one with grade(sample)")
        items = [self.check_sample(s) for s in samples]
        units = (prompt_units(range(len(items)), items.__getitem__, self.max_group) if self.judges_groups
                 else [[i] for i in range(len(items))])
        results: list[Grade] = [None] * len(items)  # type: ignore[list-item]
        usage_errors: dict[int, Exception] = {}
        todo = iter(enumerate(units))

        async def worker() -> None:
            # a few workers take the units in turn: no task waits per unit, so a large batch
            # holds no more in flight than its concurrency
            for k, unit in todo:
                try:
                    grades = await self._grade_unit([items[i] for i in unit])
                except Exception as exc:   # a usage error: raised once every unit has finished
                    usage_errors[k] = exc
                    continue
                for i, g in zip(unit, grades):
                    results[i] = g

        limit = self.batch_concurrency() or len(units)
        workers = [asyncio.ensure_future(worker()) for _ in range(min(limit, len(units)))]
        try:
            await asyncio.gather(*workers)
        finally:   # a worker interrupted (or this batch cancelled) stops the others too
            for w in workers:
                w.cancel()
        if usage_errors:
            raise usage_errors[min(usage_errors)]
        return results

    def grade_batch_sync(self, samples: Sequence[StringThread]) -> list[Grade]:
        """``grade_batch`` from synchronous code, even inside a running loop."""
        return run_sync(self.grade_batch(samples))

