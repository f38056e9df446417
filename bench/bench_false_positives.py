"""False positives of the content-free screen on real text: every honest answer it flags would be
penalized without a judge call.

Each answer is screened as a grader screens a completion: ``content_free_reason(answer,
question=question)`` (the JSON-document rule included) and, where the answer is a JSON object or
array (bare or fenced), the structured screen ``screen_fields`` of its value (no model: every string
free text). Per source: answers checked, flagged by either screen; then every flagged answer with
its reason (truncated). Sources:

- ``real_judges:<name>``: the judge replies of ``tests/data/real_judges`` (real model text: prose,
  JSON, Python lists, lone digits and labels, Japanese, Korean, Chinese, Greek), each asked the
  source's judge prompt (``prompts.json``, placeholders blank) as its question;
- ``site-packages:<kind>``: text of the installed packages (``PACKAGES``): Markdown sections and
  their code blocks, YAML, TOML, Jinja and JSON files, the docstrings of ``DOCSTRINGS``' modules,
  classes and functions, each a stand-alone answer with no question;
- with ``REWARDJUDGE_REAL_ANSWERS`` set to a folder of public benchmark repositories (each a checkout,
  or a bare git directory, named ``owner+name`` or ``owner+name/repo``), the models' answers with
  their questions: MT-Bench and its translations (FastChat ``model_answer`` + ``question.jsonl``),
  arena-hard-auto, AlpacaEval ``model_outputs.json``, LLMBar ``dataset.json``, XSTest completions.
  Missing ones are named and skipped.

Run: ``python -m bench false_positives`` (``--limit N``: answers per source, by an even stride;
``--show N``: flagged answers printed per source).
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import json
import os
import re
import subprocess
import sys
import sysconfig
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import ROOT, emit, print_table  # noqa: E402
from rewardjudge.graders._field_guards import screen_fields  # noqa: E402
from rewardjudge.graders._guards import content_free_reason  # noqa: E402

Answer = "tuple[str, str]"   # (answer, question)
REAL_JUDGES = ROOT / "tests" / "data" / "real_judges"
#: the packages whose text is read (those installed)
PACKAGES = ("trl", "verl", "openrlhf", "datasets", "transformers", "huggingface_hub", "accelerate", "pydantic",
            "jinja2", "omegaconf", "hydra", "ray", "openai", "tensordict", "rich", "typer", "sympy", "pandas")
#: the packages whose docstrings are read too (the others' Python is left: it is large and slow to parse)
DOCSTRINGS = ("trl", "verl", "openrlhf", "datasets", "huggingface_hub", "accelerate", "pydantic", "jinja2")
#: the longest answer taken (a file is cut at a line end before)
_LONGEST = 20_000
_PLACEHOLDER = re.compile(r"\{\{[^{}]*\}\}")


# ------------------------------------------------------------------ real judge replies
def real_judges() -> "dict[str, list[tuple[str, str]]]":
    prompts = json.loads((REAL_JUDGES / "prompts.json").read_text(encoding="utf-8"))
    out = {}
    for path in sorted(REAL_JUDGES.glob("*.jsonl")):
        name = path.stem
        spec = prompts.get(name) or prompts.get(name.replace("_weighted", "")) or {}
        question = _PLACEHOLDER.sub("", spec.get("user", ""))
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        out[f"real_judges:{name}"] = [(r["reply"], question) for r in rows if isinstance(r.get("reply"), str)]
    return out


# ------------------------------------------------------------------ installed packages
def _cut(text: str) -> str:
    if len(text) <= _LONGEST:
        return text
    end = text.rfind("\n", 0, _LONGEST)
    return text[:end if end > 0 else _LONGEST]


_HEADING = re.compile(r"^#{1,6} ", re.M)
_FENCE = re.compile(r"^(```|~~~)[^\n]*\n.*?^\1[ \t]*$", re.M | re.S)


def site_packages() -> "dict[str, list[tuple[str, str]]]":
    root = Path(sysconfig.get_paths()["purelib"])
    out: "dict[str, list[tuple[str, str]]]" = defaultdict(list)
    for package in PACKAGES:
        base = root / package
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            suffix = path.suffix.lower()
            try:
                if suffix in (".md", ".rst", ".txt", ".yaml", ".yml", ".json", ".jsonl", ".toml", ".jinja",
                              ".py") and path.stat().st_size > 2_000_000:
                    continue
                if suffix in (".md", ".rst"):
                    text = path.read_text(encoding="utf-8")
                    out["site-packages:markdown"] += [(s.strip(), "") for s in _HEADING.split(text) if s.strip()]
                    out["site-packages:code-blocks"] += [(m.group(), "") for m in _FENCE.finditer(text)]
                elif suffix in (".yaml", ".yml", ".toml", ".jinja", ".txt"):
                    out[f"site-packages:{suffix.lstrip('.')}"].append((_cut(path.read_text(encoding="utf-8")), ""))
                elif suffix in (".json", ".jsonl"):
                    out["site-packages:json"].append((_cut(path.read_text(encoding="utf-8")), ""))
                elif suffix == ".py" and package in DOCSTRINGS:
                    tree = ast.parse(path.read_text(encoding="utf-8"))
                    for node in ast.walk(tree):
                        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                            doc = ast.get_docstring(node)
                            if doc:
                                out["site-packages:docstrings"].append((doc, ""))
            except (UnicodeDecodeError, SyntaxError, ValueError, OSError):
                continue
    return dict(out)


# ------------------------------------------------------------------ public benchmark repositories
class _Repo:
    """Files of a checkout or a bare git directory (read with ``git show HEAD:path``)."""

    def __init__(self, base: Path):
        self.base = base
        bare = base / "repo" if (base / "repo").is_dir() else base
        self.git = bare if (bare / "HEAD").is_file() and not (base / ".git").exists() else None

    def files(self) -> "list[str]":
        if self.git is None:
            return [str(p.relative_to(self.base)) for p in self.base.rglob("*") if p.is_file()]
        return subprocess.run(["git", "--git-dir", str(self.git), "ls-tree", "-r", "--name-only", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.splitlines()

    def read(self, path: str) -> str:
        if self.git is None:
            return (self.base / path).read_text(encoding="utf-8")
        done = subprocess.run(["git", "--git-dir", str(self.git), "show", f"HEAD:{path}"], capture_output=True)
        return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""   # a file left out


def _jsonl(text: str) -> "list[dict]":
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _fastchat(repo: _Repo, every: int = 1) -> "Iterator[tuple[str, tuple[str, str]]]":
    """FastChat ``data/<bench>/question.jsonl`` and ``model_answer/*.jsonl``: every turn's answer with
    its question's turn; the source is the bench's folder."""
    files = repo.files()
    for qpath in [f for f in files if f.endswith("/question.jsonl")]:
        folder = qpath[: -len("question.jsonl")]
        turns = {str(q["question_id"]): [t["content"] if isinstance(t, dict) else t for t in q["turns"]]
                 for q in _jsonl(repo.read(qpath))}
        answers = [f for f in files if f.startswith(folder + "model_answer/") and f.endswith(".jsonl")]
        for apath in answers[::every]:
            for row in _jsonl(repo.read(apath)):
                asked = turns.get(str(row.get("question_id")), [])
                for choice in row.get("choices", [])[:1]:
                    for i, turn in enumerate(choice.get("turns", [])):
                        text = turn["content"] if isinstance(turn, dict) else turn
                        if isinstance(text, str):
                            yield folder.rstrip("/").split("/")[-1], (text, asked[i] if i < len(asked) else "")


def mt_bench(repo: _Repo) -> "Iterator[tuple[str, tuple[str, str]]]":
    for bench, item in _fastchat(repo, 3):
        yield f"mt-bench:{bench}", item


def arena_hard(repo: _Repo) -> "Iterator[tuple[str, tuple[str, str]]]":
    files = repo.files()
    for qpath in [f for f in files if f.endswith("question.jsonl") and "arena-hard" in f]:
        folder = qpath[: -len("question.jsonl")]
        turns = {q["question_id"]: q["turns"][0]["content"] for q in _jsonl(repo.read(qpath))}
        for apath in [f for f in files if f.startswith(folder + "model_answer/")][::4]:
            for row in _jsonl(repo.read(apath)):
                for choice in row.get("choices", [])[:1]:
                    for turn in choice.get("turns", [])[:1]:
                        yield "arena-hard", (turn["content"], turns.get(row["question_id"], ""))


def alpaca_eval(repo: _Repo) -> "Iterator[tuple[str, tuple[str, str]]]":
    outputs = [f for f in repo.files() if f.startswith("results/") and f.endswith("/model_outputs.json")]
    for path in outputs[::6]:
        for row in json.loads(repo.read(path) or "[]"):
            if isinstance(row.get("output"), str):
                yield "alpaca-eval", (row["output"], row.get("instruction", ""))


def llmbar(repo: _Repo) -> "Iterator[tuple[str, tuple[str, str]]]":
    for path in [f for f in repo.files() if f.endswith("/dataset.json")]:
        for row in json.loads(repo.read(path) or "[]"):
            for key in ("output_1", "output_2"):
                yield "llmbar", (row[key], row["input"])


def xstest(repo: _Repo) -> "Iterator[tuple[str, tuple[str, str]]]":
    for path in [f for f in repo.files() if f.startswith("model_completions/") and f.endswith(".csv")]:
        for row in csv.DictReader(io.StringIO(repo.read(path))):
            if row.get("completion") is not None:
                yield "xstest", (row["completion"], row.get("prompt", ""))


#: repository -> reader
REPOSITORIES: "dict[str, Callable[[_Repo], Iterator[tuple[str, tuple[str, str]]]]]" = {
    "dreaming-panda+MTBench": mt_bench,
    "shisa-ai+ja-mt-bench-harness": mt_bench,
    "zeppombal+arena-hard-auto": arena_hard,
    "tatsu-lab+alpaca_eval": alpaca_eval,
    "princeton-nlp+LLMBar": llmbar,
    "paul-rottger+exaggerated-safety": xstest,
}


def repositories(folder: "str | None") -> "tuple[dict[str, list[tuple[str, str]]], list[str]]":
    out: "dict[str, list[tuple[str, str]]]" = defaultdict(list)
    missing = []
    for name, reader in REPOSITORIES.items():
        base = Path(folder) / name if folder else None
        if base is None or not base.is_dir():
            missing.append(name)
            continue
        for source, item in reader(_Repo(base)):
            out[source].append(item)
    return dict(out), missing


# ------------------------------------------------------------------ the screen
def _json_value(text: str) -> Any:
    body = text.strip()
    if body.startswith(("```", "~~~")):
        body = body.strip("`~")
        body = body.split("\n", 1)[1] if "\n" in body else ""
    if not body[:1] in ("{", "["):
        return None
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def screen(answer: str, question: str) -> "tuple[str | None, bool]":
    """(why the answer is flagged, or None; whether the structured screen read it)."""
    reason = content_free_reason(answer, question=question)
    value = _json_value(answer)
    if value is None or not isinstance(value, (dict, list)):
        return reason, False
    fields, _ = screen_fields(value, question=question)
    return reason or (fields and f"structured: {fields}"), True


def _stride(items: list, limit: int) -> list:
    if len(items) <= limit:
        return items
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]


def main(argv: "list[str] | None" = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--limit", type=int, default=4000, help="answers per source (an even stride)")
    p.add_argument("--show", type=int, default=40, help="flagged answers printed per source")
    args = p.parse_args(argv if argv is not None else [])
    t0 = time.perf_counter()
    sources = {**real_judges(), **site_packages()}
    external, missing = repositories(os.environ.get("REWARDJUDGE_REAL_ANSWERS"))
    sources.update(external)
    rows, flagged_all, totals = [], {}, [0, 0, 0]
    for name, items in sorted(sources.items()):
        items = _stride(items, args.limit)
        flagged, structured = [], 0
        for answer, question in items:
            reason, read = screen(answer, question)
            structured += read
            if reason:
                flagged.append((answer, question, reason))
        rows.append((name, len(items), structured, len(flagged)))
        totals[0] += len(items)
        totals[1] += structured
        totals[2] += len(flagged)
        flagged_all[name] = flagged
    print_table("content-free screen on real answers", ("source", "answers", "JSON read", "flagged"),
                rows + [("total", *totals)])
    if missing:
        print(f"\nnot read (set REWARDJUDGE_REAL_ANSWERS to a folder holding them): {', '.join(missing)}")
    for name, flagged in flagged_all.items():
        if not flagged:
            continue
        print(f"\n{name}: {len(flagged)} flagged")
        for answer, question, reason in flagged[: args.show]:
            print(f"  - answer {answer[:100]!r}\n    question {question[:80]!r}\n    reason {reason[:160]}")
    emit("false_positives", {"answers": totals[0], "json_read": totals[1], "flagged": totals[2],
                             "seconds": round(time.perf_counter() - t0, 1),
                             "per_source": {r[0]: r[3] for r in rows}})


if __name__ == "__main__":
    main(sys.argv[1:])
