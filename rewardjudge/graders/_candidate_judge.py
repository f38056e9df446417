"""CandidateJudgeGrader: several completions of one prompt judged in one sealed request; see docs/groups.md."""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

from pydantic import BaseModel

from ..errors import ConfigError
from ..grade import Grade
from ..models._base import GenerationParams, InferenceModel
from ..templates._plain import _lookup, to_plain
from ..templates._prompts import prompt_source
from ..thread import StringThread
from ._options import CandidateOptions
from ._base import Grader, JudgeAnswer, emptied, log, text_size, without_completion
from ._prompt import JudgePrompt
from ._schedule import balanced_chunks, groups
from ..readouts._candidate_blocks import (CandidateVerdict, candidate_grammar, new_candidate_ids,
                                         read_candidate_reply)
from ..readouts._decision import NoVerdict, Verdict
from ..readouts._seal import Sealer, seal_messages
from ..readouts._text import PROTOCOL_TAGS, neutralize_value
from ._expected_value import expected_after

#: an image a vision judge is sent: an http(s) or data:image URL, no whitespace or control characters
_IMAGE_URL = re.compile(r"(?i:https?://|data:image/)[^\x00-\x20\x7f-\xa0\s\u200b-\u200f\u2028-\u202f\u2060-\u206f\ufeff]*\Z")

__all__ = ["CandidateJudgeGrader"]

#: the validated options a grader keeps as attributes of its own
_OPTION_NAMES = ("scale", "expected_value", "expected_value_floor", "batch_size", "max_rounds", "title_field",
                 "image_field", "include_images", "temperature", "top_p", "max_tokens_per_candidate", "shuffle",
                 "seed", "evaluation_name", "evaluation_description", "template_variables")


@dataclass
class _Candidate:
    """One sample on its way through the judge, with what it has cost so far."""

    index: int                      # position among its group's screened samples
    sample: StringThread
    data: dict[str, Any]            # title, fields, image (not yet neutralised)
    usage: dict[str, int] = field(default_factory=dict)
    attempts: int = 0
    failures: list[str] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    last_reply: str | None = None
    grade: Grade | None = None


#: said last in a request whose templates do not describe the sealed grade form themselves
_PROTOCOL_NOTE = ('\n\nWrite each grade as <grade id="ID">N</grade> with the id of the candidate it '
                  'grades, inside that candidate\'s <candidate id="ID"> block: only grades written '
                  'this way are read.')


class CandidateJudgeGrader(Grader):
    """Judges up to ``batch_size`` completions of one prompt together; options: ``CandidateOptions``;
    templates, rounds and ``extra``: docs/groups.md."""

    def __init__(self, grader_key: str, model: InferenceModel, **options: Any):
        opts = self.options = CandidateOptions(grader_key=grader_key, model=model, **options)
        self.take_options(opts)
        for name in _OPTION_NAMES:
            setattr(self, name, getattr(opts, name))
        self._sealer = Sealer(opts.seal_key if opts.seal_key is not None else getattr(self.model, "seal_key", None))
        self._rng = random.Random(opts.seed)   # every request's shuffle seed, from one stream
        user_src = (prompt_source("CandidateJudgeGrader", "user", multimodal=self.include_images)
                    if opts.template is None else opts.template)
        system_src = (prompt_source("CandidateJudgeGrader", "system") if opts.system_template is None
                      else opts.system_template)
        self.prompt = JudgePrompt(system_src, user_src, engine=opts.engine, strict=opts.strict_templates,
                                  strip=True, names=("system_template", "template"))
        #: the paths into ``metadata`` the templates read (``metadata``, ``metadata.reference``...)
        self._metadata_reads = sorted({p for t in (self.prompt.system, self.prompt.user) for p in t.variables
                                       if p == "metadata" or p.startswith("metadata.")})
        # a template that does not describe the sealed grade form gets it said last
        self._protocol_note = None if "<grade id=" in system_src + user_src else _PROTOCOL_NOTE
        # candidate text may not open or close the templates' own delimiters either
        self.protected_tags = tuple(dict.fromkeys(
            [t.casefold() for t in opts.protected_tags]
            + [t for t in self.prompt.tags if t not in PROTOCOL_TAGS]))
        # fail at construction when a template reads a missing variable or never shows the ids
        probe_ids = new_candidate_ids(2, sealer=self._sealer, request="probe")
        probe_thread = StringThread([("user", "probe query"), ("assistant", "probe")])
        candidates = [{"id": i, "title": "probe", "fields": {}} for i in probe_ids]
        ctx = CandidateJudgeGrader.request_context(self, probe_thread, candidates)
        self.prompt.check(self.context_variables(*ctx))
        system, user = self.prompt.render(ctx, strict=False)
        if any(i not in system + "\n" + user for i in probe_ids):
            raise ConfigError("the templates never show candidates[].id, so the judge cannot name "
                              "the candidate it grades; render {{this.id}} inside {{#each candidates}}")

    def extract_candidate(self, sample: StringThread, parsed: BaseModel | None) -> dict[str, Any]:
        """The candidate a sample contributes, ``{"title", "fields", "image"?}`` (docs/groups.md)."""
        return self._candidate_of(sample, None if parsed is None else parsed.model_dump(mode="json"))

    def _candidate_of(self, sample: StringThread, fields: dict[str, Any] | None) -> dict[str, Any]:
        if fields is None:
            return {"title": sample.completion(), "fields": {}}
        fields = dict(fields)   # a field named None never exists: pop(None) is None
        title, image = fields.pop(self.title_field, None), fields.pop(self.image_field, None)
        title = "" if title is None else title if isinstance(title, str) else json.dumps(title)
        out: dict[str, Any] = {"title": title, "fields": fields}
        if image and self.include_images:
            out["image"] = image if isinstance(image, str) else json.dumps(image)
        return out

    def shown_request(self, sample: StringThread, fields: dict[str, Any]) -> "list[dict[str, Any]] | None":
        """One request about ``sample`` alone; None where ``extract_candidate`` is a user's own."""
        if type(self).extract_candidate is not CandidateJudgeGrader.extract_candidate:
            return None
        return self._build([_Candidate(0, sample, self._candidate_of(sample, fields))], 1, ["screen"])[1]

    def request_context(self, thread: StringThread, candidates: list[dict[str, Any]]) -> dict[str, Any]:
        """The template context of one request showing ``candidates`` (docs/groups.md)."""
        clean = self.judge_thread(StringThread(thread.context_turns(), metadata=thread.metadata),
                                  self.protected_tags)
        ctx = self.extract_template_context(clean, None, self.template_variables)
        query = clean.metadata.get("query")
        query = clean.last_user_content() if query is None else query
        ctx.update(query=query, candidates=candidates, **self.scale.template_vars(),
                   query_text=query if isinstance(query, str)
                   else json.dumps(query, ensure_ascii=False, indent=2, default=str),
                   evaluation_name=self.evaluation_name, evaluation_description=self.evaluation_description)
        return ctx

    judges_groups = True

    @property
    def max_group(self) -> int:
        return self.batch_size

    async def judge_group(self, screened: list[tuple[StringThread, BaseModel | None]]) -> list[Grade]:
        """One Grade per screened sample of one prompt, in order; a ``ConfigError`` is raised last."""
        grades: list[Grade | None] = [None] * len(screened)
        members: list[_Candidate] = []
        for i, (sample, parsed) in enumerate(screened):
            try:
                data = self.extract_candidate(sample, parsed)
            except (ConfigError, asyncio.CancelledError):
                raise
            except Exception as exc:   # one sample's text must not sink its group
                log.warning("grader %s raised %r on one sample; it is unscored", self.grader_key, exc)
                grades[i] = self.unscored(f"grader error: {type(exc).__name__}: {exc}")
                continue
            if not isinstance(data, Mapping):
                raise ConfigError(f"extract_candidate must return a mapping, got {type(data).__name__}")
            if self.include_images and isinstance(data.get("image"), str) and data["image"] \
                    and not _IMAGE_URL.match(data["image"]):
                # the policy chose it: no file:, internal-scheme or text-bearing URL reaches the judge
                grades[i] = self.penalized(sample, "malformed completion: its image is not an http(s) URL "
                                                   f"or a data:image URL ({data['image'][:40]!r})")
                continue
            members.append(_Candidate(i, sample, dict(data)))
        started = time.perf_counter()
        # one request shows one member's metadata: members that differ in what the templates read of it
        # (a reference per row, say) are asked about apart, never each under another's reference
        reads = self._metadata_reads
        parts = [members] if not reads else groups(members, lambda c: json.dumps(
            [_lookup({"metadata": to_plain(c.sample.metadata)}, p) for p in reads], sort_keys=True, default=str))
        await self._ask_all([chunk for part in parts for chunk in balanced_chunks(part, self.batch_size)], 1)
        for cand in members:
            if cand.grade is None:
                last = cand.failures[-1] if cand.failures else "no judge request was made"
                rounds = len(cand.requests)
                cand.grade = self.unscored(
                    f"not judged after {rounds} round(s): {last}" if rounds else last, attempts=cand.attempts,
                    usage=dict(cand.usage), raw_reply=cand.last_reply, latency_s=time.perf_counter() - started,
                    extra=self._extra(cand, None, None))
            grades[cand.index] = cand.grade
        return grades  # type: ignore[return-value]

    async def _ask_all(self, chunks: list[list[_Candidate]], round_no: int) -> None:
        """``_ask`` about each chunk concurrently; then the first usage error is raised, and any other
        exception fails only its own chunk's candidates."""
        results = await asyncio.gather(*(self._ask(c, round_no) for c in chunks), return_exceptions=True)
        if usage := [r for r in results if isinstance(r, (ConfigError, asyncio.CancelledError))]:
            raise usage[0]
        for chunk, result in zip(chunks, results):
            if isinstance(result, BaseException):
                log.warning("grader %s raised %r; its candidates are unscored", self.grader_key, result)
                for cand in chunk:
                    if cand.grade is None:
                        cand.failures.append(f"grader error: {type(result).__name__}: {result}")

    async def _ask(self, members: list[_Candidate], round_no: int) -> None:
        """Ask about ``members`` in one request, then re-ask the ones it did not grade in halved groups up
        to ``max_rounds``; a request that graded none is split down to single candidates (docs/groups.md)."""
        # the shuffle seed is drawn here, in request order; rendering long candidates runs off the loop
        request_seed = self._rng.getrandbits(32) if self.shuffle else None
        order, ids, messages, params = await self.off_loop(
            sum(text_size(c.sample) for c in members), self._request, members, round_no, request_seed)
        # where the model takes a grammar the reply protocol is enforced (and still read as any other)
        grammar = (candidate_grammar(ids, self.scale, max_tokens_per_candidate=self.max_tokens_per_candidate)
                   if getattr(self.model, "accepts_grammar", False) else None)
        answer = await self.ask_until_parsed(
            self.model, messages, params, lambda text: read_candidate_reply(text, ids, self.scale),
            grammar=grammar, reply_retries=0)
        if isinstance(answer, JudgeAnswer):
            failed = await self._read(order, ids, answer, messages, params, round_no)
        else:
            self._charge(order, answer.usage, answer.attempts, answer.raw_reply)
            for cand in order:
                cand.failures.append(answer.reason)
            # refused as it is (too large, say): smaller requests may pass; else the judge is down
            if answer.error is not None and not (answer.error.refused and len(order) > 1):
                if len(order) == 1:   # alone and refused as longer than the judge's context: its own doing
                    cand = order[0]
                    blank = _Candidate(cand.index, without_completion(cand.sample), emptied(cand.data))
                    cand.grade = await self.overlong(
                        cand.sample, answer.error, messages, lambda: self._build([blank], round_no)[1],
                        attempts=cand.attempts, usage=dict(cand.usage), extra=self._extra(cand, None, None))
                return   # the judge is down: asking again now would not help
            failed = order
        split = len(failed) == len(order) > 1
        if failed and (split or round_no < self.max_rounds):
            await self._ask_all(balanced_chunks(failed, max(1, len(order) // 2)), round_no + 1)

    def _request(self, members: list[_Candidate], round_no: int, request_seed: int | None
                 ) -> tuple[list[_Candidate], list[str], list[dict[str, Any]], GenerationParams]:
        """One request about ``members``, recorded in each one's ``requests``: the order shown (shuffled
        with ``request_seed``; None: not shuffled), the ids, the messages and the sampling parameters."""
        # sorted first: random.Random(seed).shuffle(sorted(order)) == order
        order = sorted(members, key=lambda c: c.index)
        if request_seed is not None:
            random.Random(request_seed).shuffle(order)
        ids, messages = self._build(order, round_no)
        per_candidate = self.max_tokens_per_candidate
        params = GenerationParams(temperature=self.temperature, top_p=self.top_p, seed=self.seed,
                                  max_tokens=None if per_candidate is None else per_candidate * len(order))
        record = {"round": round_no, "seed": request_seed, "order": [c.index for c in order], "ids": ids}
        for cand in order:
            cand.requests.append(record)
        return order, ids, messages, params

    def _build(self, order: list[_Candidate], round_no: int, ids: "list[str] | None" = None
               ) -> tuple[list[str], list[dict[str, Any]]]:
        """The ids and messages of a request showing ``order``, neutralised, in this order."""
        shown = [neutralize_value(c.data, self.protected_tags, self.control_tokens()) for c in order]
        # made from what the request shows: unseen by the policy, the same for a repeated request
        ids = ids or new_candidate_ids(len(order), sealer=self._sealer, request={
            "grader": self.grader_key, "round": round_no, "query": order[0].sample.metadata.get("query"),
            "context": order[0].sample.context_turns(), "candidates": shown})
        candidates = [{**s, "id": cid} for s, cid in zip(shown, ids)]
        images = [part for cand, cid in zip(order, ids) if self.include_images
                  and isinstance(image := cand.data.get("image"), str) and image
                  for part in ({"type": "text", "text": f"Image of candidate {cid}:"},
                               {"type": "image_url", "image_url": {"url": image}})]
        messages = self.build_messages(self.request_context(order[0].sample, candidates), images)
        if self._protocol_note is not None:
            messages = seal_messages(messages, self._protocol_note)
        return ids, messages

    @staticmethod
    def _charge(order: list[_Candidate], usage: Mapping[str, int], attempts: int, reply: str | None) -> None:
        """Share one request's tokens exactly among its candidates and note its reply."""
        n = len(order)
        for i, cand in enumerate(order):
            cand.attempts += attempts
            for k, t in usage.items():
                cand.usage[k] = cand.usage.get(k, 0) + int(t) // n + (1 if i < int(t) % n else 0)
            if reply is not None:
                cand.last_reply = reply

    async def _read(self, order: list[_Candidate], ids: list[str], answer: JudgeAnswer[Any],
                    messages: list[dict[str, Any]], params: GenerationParams,
                    round_no: int) -> list[_Candidate]:
        """Grade the candidates a read reply judged; return the ones it failed."""
        completion, reading = answer.completion, answer.verdict
        self._charge(order, completion.usage, completion.attempts, completion.text)
        judged = [(c, cid, d) for c, cid in zip(order, ids) if isinstance(d := reading.decisions[cid], Verdict)]
        failed: list[_Candidate] = []
        for cand, cid in zip(order, ids):
            if isinstance(decision := reading.decisions[cid], NoVerdict):
                # its kind named as judge_health counts it (the grade's error ends with the last failure)
                what = "invalid judge reply" if decision.kind == "invalid" else decision.kind
                cand.failures.append(f"round {round_no}: {what}: {decision.reason}")
                failed.append(cand)
        expectations: list[Any] = [None] * len(judged)
        if self.expected_value and judged:   # a usage error is raised once every read has finished
            expectations = await asyncio.gather(*(
                expected_after(self, messages, completion.text[:d.value_at], {g: g for g in self.scale.grades},
                               f"the grades {self.scale.min}-{self.scale.max}", params, self.scale)
                for _, _, d in judged), return_exceptions=True)
            if errors := [e for e in expectations if isinstance(e, BaseException)]:
                raise errors[0]
        for (cand, cid, decision), expectation in zip(judged, expectations):
            verdict: CandidateVerdict = decision.value
            extra = self._extra(cand, cid, verdict.grade)
            if decision.others:
                extra["disagreeing_verdicts"] = list(decision.others)
            # grade elements bound to no id of the request are recorded as forgeries
            cand.grade = self.scored(
                JudgeAnswer(verdict, completion, dict(cand.usage), cand.attempts,
                            completion.latency_s, reading.unbound),
                self.scale.to_reward(verdict.grade), verdict.reasoning, extra, expectation)
        return failed

    def _extra(self, cand: _Candidate, cid: str | None, grade: int | None) -> dict[str, Any]:
        extra: dict[str, Any] = {"scale": self.scale.name, "rounds": len(cand.requests),
                                 "requests": list(cand.requests), "failures": list(cand.failures)}
        if grade is not None:
            last = cand.requests[-1]
            extra.update(grade=grade, candidate_id=cid, position=last["order"].index(cand.index),
                         order=list(last["order"]), shuffle_seed=last["seed"])
        return extra

    def config(self) -> dict[str, Any]:
        plain = ("batch_size", "title_field", "image_field", "evaluation_name", "evaluation_description",
                 "max_rounds", "shuffle", "seed", "temperature", "top_p", "max_tokens_per_candidate",
                 "template_variables")
        return {**super().config(), **{name: getattr(self, name) for name in plain},
                "scale": self.scale.name, "scale_bounds": [self.scale.min, self.scale.max],
                "template": self.user_template.source, "system_template": self.system_template.source,
                **({"engine": self.prompt.engine} if self.prompt.engine != "handlebars" else {}),
                "completion_model": self.completion_model.model_json_schema() if self.completion_model else None,
                **({"include_images": True} if self.include_images else {}),
                "protected_tags": list(self.protected_tags),
                "model": getattr(self.model, "name", type(self.model).__name__),
                **({"expected_value": True, "expected_value_floor": self.expected_value_floor}
                   if self.expected_value else {})}
