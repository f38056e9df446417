"""Draft a translation bundle with a judge model (``rewardjudge templates translate``): a reply is kept only
when it compiles and keeps the same Handlebars tags, each as often; a refused one is re-asked ``retries`` times."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..errors import TemplateError
from ..models._base import GenerationParams
from ..templates._bundle import BUNDLE_FORMAT, MULTIMODAL, bundle_entries, entry_key, is_language_slug
from ..templates._handlebars import Template, _compile
from ..templates._prompts import prompt_template

__all__ = ["TranslationReport", "check_translation", "translate_bundle"]

_SKIP_CLASSES = {"TranslateCLI"}
_FENCE = re.compile(r"^\s*```[\w-]*\n(.*?)\n?```\s*$", re.S)


def _tags(text: str) -> Counter:
    return Counter(re.sub(r"\s+", " ", text[t.start:t.end]) for t in _compile(text)[2] if t.kind != "comment")


def check_translation(original: str, translated: str, fragments: dict[str, str]) -> str | None:
    """Why ``translated`` does not keep ``original``'s template, or None when it does."""
    try:
        Template(translated, strict=False, partials=fragments)
    except TemplateError as exc:
        return f"it is not a valid template: {exc}"
    want, got = _tags(original), _tags(translated)
    if want != got:
        lost, added = sorted((want - got).elements()), sorted((got - want).elements())
        return "; ".join(filter(None, [lost and f"tags missing or changed: {', '.join(lost)}",
                                       added and f"tags added: {', '.join(added)}"]))
    return None  # the same tags, each as often: the same variables too


@dataclass
class TranslationReport:
    """What a translation run did: keys kept, keys refused (with the last reason)."""

    language: str
    translated: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    requests: int = 0

    def summary(self) -> str:
        lines = [f"{self.language}: {len(self.translated)} keys translated, {len(self.failed)} "
                 f"refused, {self.requests} requests"]
        lines += [f"  refused {k}: {why}" for k, why in sorted(self.failed.items())]
        return "\n".join(lines)


def _jobs(english: dict[str, Any], fragments: dict[str, str],
          keys: list[str] | None) -> list[tuple[str, str, str, str]]:
    jobs = [(f"_fragments/{name}", "fragments", "", name) for name in fragments]
    jobs += [(entry_key(section, cls, method), section, cls, method)
             for section, cls, method, _ in bundle_entries(english) if cls not in _SKIP_CLASSES]
    if keys is None:
        return jobs
    wanted = set(keys)
    unknown = wanted - {j[0] for j in jobs}
    if unknown:
        raise TemplateError(f"unknown keys {sorted(unknown)}; known: {sorted(j[0] for j in jobs)}")
    return [j for j in jobs if j[0] in wanted]


async def translate_bundle(model: Any, language: str, english: dict[str, Any], *,
                           retries: int = 1, keys: list[str] | None = None,
                           prompt: Any = None) -> tuple[dict[str, Any], TranslationReport]:
    """Translate ``english`` (a format-2 bundle) into ``language``: the draft bundle and a report; ``keys``
    limits the run (``Class/method[.multimodal]``, ``_fragments/name``)."""
    if not is_language_slug(language) or language == "en":
        raise TemplateError(f"give the target language as a slug other than 'en' (fr, hindi, "
                            f"pt_br), got {language!r}")
    prompt = prompt or prompt_template("TranslateCLI", "user", "en", strict=False)
    fragments = dict(english.get("fragments") or {})
    jobs = _jobs(english, fragments, keys)
    report = TranslationReport(language)
    params = GenerationParams(temperature=0.0, max_tokens=4096)

    async def one(job):
        key, section, cls, name = job
        original = fragments[name] if section == "fragments" else english[section][cls][name]
        problem = ""
        for _ in range(retries + 1):
            text = prompt.render({"language": language, "text": original, "problem": problem})
            report.requests += 1
            reply = await model.chat([{"role": "user", "content": text}], params)
            m = _FENCE.match(reply.text)
            candidate = re.sub(r"^\s*<template>\n?", "", m.group(1) if m else reply.text)
            candidate = re.sub(r"\n?</template>\s*$", "", candidate)
            if original.endswith("\n") and not candidate.endswith("\n"):
                candidate += "\n"
            problem = check_translation(original, candidate, fragments) or ""
            if not problem:
                return job, candidate, None
        return job, None, problem

    results = await asyncio.gather(*(one(j) for j in jobs))
    bundle: dict[str, Any] = {"format": BUNDLE_FORMAT, "language": language, "fragments": {},
                              "prompts": {}, MULTIMODAL: {}}
    for (key, section, cls, name), text, problem in results:
        if text is None:
            report.failed[key] = problem
        else:
            report.translated.append(key)
            (bundle[section] if section == "fragments"
             else bundle[section].setdefault(cls, {}))[name] = text
    return bundle, report
