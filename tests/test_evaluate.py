"""evaluate_dataset: loading, column mapping, outputs, resume, reports, grader specs."""

from __future__ import annotations

import asyncio
import json
import math
import re

import datasets
import pytest

from rewardjudge.errors import ConfigError, JudgeHTTPError
from rewardjudge.evaluate import aevaluate_dataset, compare, evaluate_dataset, resolve_grader, summarize
from rewardjudge.evaluate._data import Columns, detect_columns, load_data
from rewardjudge.evaluate._journal import Journal
from rewardjudge.evaluate._report import bootstrap_ci, grade_label
from rewardjudge.grade import Grade
from rewardjudge.graders import BinaryJudgeOutput, Grader, TemplatedPromptJudgeGrader
from rewardjudge.testing import ScriptedModel, without_seal

USER = "Question: {{last_user_turn_content}}\nAnswer: {{completion}}\nReference: {{metadata.reference}}"


def verdict(messages, params, schema):
    """PASS when the answer equals the reference (read back from the prompt)."""
    text = messages[-1]["content"]
    answer = re.search(r"Answer: (.*)\n", text).group(1)
    reference = re.search(r"Reference: (.*)$", text).group(1)
    return json.dumps({"reasoning": f"{answer} vs {reference}",
                       "score": "PASS" if answer == reference else "FAIL"})


def make_grader(model=None, **kw):
    return TemplatedPromptJudgeGrader("ref-judge", model or ScriptedModel(verdict), "Judge.", USER,
                                      output_model=BinaryJudgeOutput, **kw)


def rows(n=12):
    # every third answer is wrong
    return [{"question": f"{i}+0?", "answer": str(i if i % 3 else i + 1), "gold": str(i), "id": i}
            for i in range(n)]


COLS = "prompt=question,completion=answer,reference=gold,metadata=id"
EXPECTED = [0.0 if i % 3 == 0 else 1.0 for i in range(12)]


# -- loading and columns ------------------------------------------------------
@pytest.mark.parametrize("kind", [
    "list",      # a list of row dicts
    "dataset",   # a datasets.Dataset
    "jsonl",     # a local JSONL file
    "json",      # a local JSON array file
    "parquet",   # a local Parquet file
    "arrow",     # a local Arrow file
    "saved",     # a save_to_disk folder
])
def test_every_input_kind_gives_the_same_grades(kind, tmp_path):
    data = rows()
    ds = datasets.Dataset.from_list(data)
    src = {"list": lambda: data, "dataset": lambda: ds}.get(kind)
    if src is None:
        if kind == "jsonl":
            path = tmp_path / "d.jsonl"
            path.write_text("".join(json.dumps(r) + "\n" for r in data))
        elif kind == "json":
            path = tmp_path / "d.json"
            path.write_text(json.dumps(data))
        elif kind == "parquet":
            path = tmp_path / "d.parquet"
            ds.to_parquet(str(path))
        elif kind == "arrow":
            saved = tmp_path / "saved"
            ds.save_to_disk(str(saved))
            path = next(saved.glob("*.arrow"))
        else:
            path = tmp_path / "saved"
            ds.save_to_disk(str(path))
        src = lambda: str(path)  # noqa: E731
    result = evaluate_dataset(src(), make_grader(), columns=COLS, progress=False)
    assert result.dataset["grade_value"] == EXPECTED
    assert result.dataset["id"] == list(range(12))  # inputs kept, in order


def test_columns_are_found_by_unambiguous_names_only():
    # "expected" may be the reference or something else: pointed out, never mapped
    cols, notes = detect_columns(None, ["question", "response", "expected", "other"])
    assert (cols.prompt, cols.completion, cols.reference) == ("question", "response", None)
    assert notes == ["prompt: 'question' (found by name)", "completion: 'response' (found by name)",
                     "reference: not mapped; 'expected' might be it (map it with --columns reference=expected)"]
    cols, notes = detect_columns("reference=expected", ["question", "response", "expected"])
    assert cols.reference == "expected" and "reference: 'expected' (given)" in notes
    assert detect_columns(Columns(), ["prompt", "completion", "ground_truth"])[0].reference == "ground_truth"


@pytest.mark.parametrize("names,message", [
    (["prompt", "question", "completion"], "'prompt' and 'question' could each be the prompt"),  # two prompts
    (["prompt", "completion", "response"], "'completion' and 'response' could each be"),         # two answers
    (["input", "output"], "'input' might be it, e.g. --columns prompt=input"),                   # only unsure names
])
def test_column_detection_refuses_to_guess(names, message):
    with pytest.raises(ConfigError, match=message):
        detect_columns(None, names)


@pytest.mark.parametrize("spec,message", [
    ("prompt=q,answer=a", "unknown key.*answer"),                   # a role that does not exist
    ("prompt", "must look like role=column"),                     # no '='
    ("prompt=q,prompt=r", "given twice"),                         # same role twice
    ('{"prompt": 3}', "must be a column name"),                   # JSON with a non-string column
    ("{bad json", "not valid JSON"),                              # broken JSON
])
def test_bad_column_specs_say_what_is_wrong(spec, message):
    with pytest.raises(ConfigError, match=message):
        Columns.parse(spec)


@pytest.mark.parametrize("option,message", [
    (dict(mode="x"), "mode must be 'eval' or 'train', got 'x'"),
    (dict(group_window=0), "group_window must be an int >= 1, got 0"),
    (dict(max_group=True), "max_group must be an int >= 1, got True"),
    (dict(formats=("csv",)), "formats must name output formats among parquet, jsonl, arrow"),
    (dict(concurrency=0), "concurrency must be an int >= 1"),
    (dict(confidence=1.5), "confidence must be a number in (0, 1), got 1.5"),
])
def test_bad_options_name_the_argument_and_value(option, message):
    with pytest.raises(ConfigError) as info:
        evaluate_dataset(rows(), make_grader(), columns=COLS, progress=False, **option)
    assert message in str(info.value)


def test_a_missing_column_lists_the_available_ones():
    with pytest.raises(ConfigError, match=r"'nope'.*columns are \['question', 'answer'"):
        evaluate_dataset([{"question": "q", "answer": "a"}], make_grader(),
                         columns="prompt=question,completion=nope", progress=False)
    with pytest.raises(ConfigError, match="no prompt or messages column"):
        evaluate_dataset([{"x": "q"}], make_grader(), progress=False)


def test_messages_and_conversational_columns_become_threads():
    model = ScriptedModel(default='{"reasoning": "ok", "score": "PASS"}')
    grader = TemplatedPromptJudgeGrader("g", model, "", "{{context_str}} => {{completion}}")
    data = [
        # a chat whose last assistant turn is the completion
        {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"},
                      {"role": "assistant", "content": "hello"}]},
    ]
    evaluate_dataset(data, grader, progress=False)
    assert without_seal(model.calls[-1]["messages"][-1]["content"]) == "[system]\nbe brief\n\n[user]\nhi => hello"
    # TRL's conversational format: prompt and completion are lists of messages
    conv = [{"prompt": [{"role": "user", "content": "2+2?"}],
             "completion": [{"role": "assistant", "content": "4"}]}]
    evaluate_dataset(conv, grader, progress=False)
    assert without_seal(model.calls[-1]["messages"][-1]["content"]) == "[user]\n2+2? => 4"


def test_hub_names_fail_clearly_offline():
    with pytest.raises(ConfigError, match="hub"):
        load_data("someone/no-such-dataset-here")
    with pytest.raises(ConfigError, match="no such file"):
        load_data("./missing.jsonl")


# -- outputs -------------------------------------------------------------------
@pytest.mark.parametrize("formats, files", [
    (("jsonl",), {"results.jsonl"}),               # crashed at the end: no parquet file to drop
    (("parquet",), {"results.parquet"}),
    (("arrow",), {"dataset"}),
])
def test_each_output_format_alone_writes_just_its_files(tmp_path, formats, files):
    out = tmp_path / "run"
    evaluate_dataset(rows(), make_grader(), columns=COLS, output_dir=out, progress=False, formats=formats)
    written = {p.name for p in out.iterdir()} & {"results.jsonl", "results.parquet", "dataset"}
    assert written == files
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


def test_outputs_hold_inputs_and_grade_columns(tmp_path):
    out = tmp_path / "run"
    result = evaluate_dataset(rows(), make_grader(), columns=COLS, output_dir=out, progress=False,
                              formats=("parquet", "jsonl", "arrow"))
    for name in ("results.parquet", "results.jsonl", "summary.json", "histogram.png", "journal.jsonl",
                 "manifest.json"):
        assert (out / name).exists(), name
    assert (out / "histogram.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    from_parquet = datasets.Dataset.from_parquet(str(out / "results.parquet"))
    from_disk = datasets.load_from_disk(str(out / "dataset"))
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    for ds in (from_parquet, from_disk):
        assert ds["grade_value"] == EXPECTED
    assert [r["grade_value"] for r in lines] == EXPECTED
    first = lines[0]
    assert first["grade_status"] == "scored" and first["grade_reasoning"] == "1 vs 0"
    assert first["grade_version"] == make_grader().version and first["grade_attempts"] == 1
    assert first["grade_prompt_tokens"] > 0 and first["grade_latency_s"] >= 0
    assert first["grade_probabilities"] is None  # no grade carried a distribution
    assert first["grade_label"] == "FAIL" and lines[1]["grade_label"] == "PASS"  # the verdict's label
    summary = json.loads((out / "summary.json").read_text())
    assert summary["counts"] == {"scored": 12, "penalized": 0, "unscored": 0}
    assert [g.value for g in result.grades()] == EXPECTED


class _ProbabilityGrader(Grader):
    async def grade(self, sample):
        return Grade(value=0.75, grader_key=self.grader_key, grader_version=self.version,
                     distribution={"1": 0.25, "2": 0.75})


def test_probabilities_get_a_column_when_present():
    result = evaluate_dataset(rows(2), _ProbabilityGrader("p"), columns=COLS, progress=False)
    assert json.loads(result.dataset["grade_probabilities"][0]) == {"1": 0.25, "2": 0.75}


def test_mode_chooses_the_penalty_for_malformed_answers():
    from rewardjudge.demo import demo_grader

    data = [{"prompt": "q", "completion": "not json"}]
    model = ScriptedModel()  # never called: malformed answers are penalized before the judge
    ev = evaluate_dataset(data, demo_grader(model), progress=False)
    tr = evaluate_dataset(data, demo_grader(model), mode="train", progress=False)
    assert (ev.dataset["grade_status"][0], ev.dataset["grade_value"][0]) == ("penalized", 0.0)
    assert tr.dataset["grade_value"][0] == -1.0
    assert model.calls == []


def test_a_column_named_like_a_grade_column_is_refused():
    with pytest.raises(ConfigError, match="grade_value"):
        evaluate_dataset([{"prompt": "q", "completion": "a", "grade_value": 1}], make_grader(),
                         progress=False)


def test_a_usage_error_names_its_row(tmp_path):
    grader = TemplatedPromptJudgeGrader("g", ScriptedModel(default="{}"), "", "{{metadata.needed}} {{completion}}")
    with pytest.raises(ConfigError, match=r"row \d+: .*needed"):
        evaluate_dataset(rows(3), grader, columns=COLS, output_dir=tmp_path / "x", progress=False)


# -- resume ---------------------------------------------------------------------
def test_rerun_resumes_without_asking_the_judge_again(tmp_path):
    out = tmp_path / "run"
    model = ScriptedModel(verdict)
    evaluate_dataset(rows(), make_grader(model), columns=COLS, output_dir=out, progress=False, limit=None)
    assert len(model.calls) == 12
    # keep only the first 5 finished rows, as if the run had died there
    journal = out / "journal.jsonl"
    kept = journal.read_text().splitlines()[:5]
    journal.write_text("\n".join(kept) + "\n" + kept[5 - 1][:17])  # plus a torn line
    model.calls.clear()
    result = evaluate_dataset(rows(), make_grader(model), columns=COLS, output_dir=out, progress=False)
    assert len(model.calls) == 7 and result.resumed == 5 and result.graded_now == 7
    assert result.dataset["grade_value"] == EXPECTED
    assert len(Journal(journal).load()) == 12


async def test_a_cancelled_run_journals_the_rows_already_at_the_judge(tmp_path):
    """A stop (the CLI's first Ctrl-C cancels the run) waits for the rows in flight: the judge's
    answers to them reach the journal, so a resume does not ask for them again."""
    out, release, at_judge = tmp_path / "run", asyncio.Event(), []

    async def held(messages, params, schema):
        at_judge.append(messages)
        await release.wait()
        return verdict(messages, params, schema)

    run = asyncio.ensure_future(aevaluate_dataset(rows(), make_grader(ScriptedModel(held)), columns=COLS,
                                                  output_dir=out, progress=False, concurrency=4))
    for _ in range(500):
        if len(at_judge) == 4:
            break
        await asyncio.sleep(0.01)
    assert len(at_judge) == 4
    run.cancel()
    await asyncio.sleep(0.05)        # the cancellation lands while the four rows are at the judge
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert len(Journal(out / "journal.jsonl").load()) == 4


def test_retry_unscored_grades_only_the_failed_rows(tmp_path):
    out = tmp_path / "run"

    def flaky(messages, params, schema):
        text = messages[-1]["content"]
        if "Question: 4+0?" in text or "Question: 7+0?" in text:
            return JudgeHTTPError(503, "overloaded")
        return verdict(messages, params, schema)

    first = evaluate_dataset(rows(), make_grader(ScriptedModel(flaky)), columns=COLS, output_dir=out,
                             progress=False)
    assert first.summary.counts == {"scored": 10, "penalized": 0, "unscored": 2}
    assert first.dataset["grade_value"][4] is None  # never a fake 0
    assert first.summary.mean == pytest.approx(sum(v for i, v in enumerate(EXPECTED) if i not in (4, 7)) / 10)
    model = ScriptedModel(verdict)
    plain = evaluate_dataset(rows(), make_grader(model), columns=COLS, output_dir=out, progress=False)
    assert model.calls == [] and plain.summary.counts["unscored"] == 2  # a plain rerun keeps them
    again = evaluate_dataset(rows(), make_grader(model), columns=COLS, output_dir=out, progress=False,
                             retry_unscored=True)
    assert len(model.calls) == 2 and again.graded_now == 2
    assert again.dataset["grade_value"] == EXPECTED
    assert again.summary.counts == {"scored": 12, "penalized": 0, "unscored": 0}


@pytest.mark.parametrize("change,message", [
    (dict(grader=make_grader(ScriptedModel(verdict), temperature=0.5)), "grader_version"),  # other grader
    (dict(mode="train"), "mode"),                                                        # other mode
    (dict(columns="prompt=question,completion=gold,reference=answer,metadata=id"), "columns"),  # remapped
])
def test_resume_refuses_other_settings(tmp_path, change, message):
    out = tmp_path / "run"
    evaluate_dataset(rows(), make_grader(), columns=COLS, output_dir=out, progress=False)
    args = {**dict(data=rows(), grader=make_grader(), columns=COLS), **change}
    data, grader = args.pop("data"), args.pop("grader")
    with pytest.raises(ConfigError, match=message):
        evaluate_dataset(data, grader, output_dir=out, progress=False, **args)
    # overwrite starts over with the new settings
    result = evaluate_dataset(data, grader, output_dir=out, progress=False, overwrite=True, **args)
    assert result.resumed == 0 and result.graded_now == len(data)


def test_a_trial_run_with_limit_is_resumed_by_the_full_run(tmp_path):
    out = tmp_path / "run"
    model = ScriptedModel(verdict)
    trial = evaluate_dataset(rows(), make_grader(model), columns=COLS, output_dir=out, progress=False,
                             limit=5)
    assert len(trial.dataset) == 5 and len(model.calls) == 5
    full = evaluate_dataset(rows(), make_grader(model), columns=COLS, output_dir=out, progress=False)
    assert (full.resumed, full.graded_now, len(model.calls)) == (5, 7, 12)
    assert full.dataset["grade_value"] == EXPECTED


def test_resume_refuses_rows_whose_input_changed(tmp_path):
    out = tmp_path / "run"
    evaluate_dataset(rows(), make_grader(), columns=COLS, output_dir=out, progress=False)
    edited = rows()
    edited[3]["answer"] = "something else"
    with pytest.raises(ConfigError, match=r"rows \[3\] changed"):
        evaluate_dataset(edited, make_grader(), columns=COLS, output_dir=out, progress=False)


# -- reports --------------------------------------------------------------------
def test_summary_counts_and_interval():
    grades = ([Grade(value=1.0, grader_key="g")] * 30 + [Grade(value=0.0, grader_key="g")] * 10
              + [Grade(value=0.0, grader_key="g", status="penalized")] * 10
              + [Grade(value=None, grader_key="g", error="JudgeTimeoutError: slow")] * 5)
    s = summarize(grades)
    assert s.counts == {"scored": 40, "penalized": 10, "unscored": 5}
    assert s.mean == pytest.approx(30 / 50)       # penalties count, unscored do not
    assert s.mean_scored == pytest.approx(30 / 40)
    assert s.ci[0] < s.mean < s.ci[1]
    assert s.errors == {"JudgeTimeoutError": 5}
    assert "unscored: 5" in str(s)


def test_bootstrap_interval_narrows_with_more_data():
    small = bootstrap_ci([0, 1] * 10)
    large = bootstrap_ci([0, 1] * 1000)
    assert small[1] - small[0] > large[1] - large[0] > 0
    assert all(math.isnan(x) for x in bootstrap_ci([]))
    assert bootstrap_ci([0.3]) == (0.3, 0.3)


def test_compare_gives_the_paired_difference(tmp_path):
    a = [0.0] * 50 + [1.0] * 50
    b = [1.0] * 80 + [0.0] * 20
    c = compare(a, b)
    assert c.n_pairs == 100 and c.mean_diff == pytest.approx(0.3)
    assert c.ci[0] > 0 and "b is higher" in str(c)
    # unscored rows in either run are excluded, not zeroed
    c2 = compare([1.0, None, 0.0], [1.0, 1.0, None])
    assert (c2.n_pairs, c2.n_excluded, c2.mean_diff) == (1, 2, 0.0)
    # two output folders
    evaluate_dataset(rows(), make_grader(), columns=COLS, output_dir=tmp_path / "a", progress=False)
    better = rows()
    for r in better:
        r["answer"] = r["gold"]
    evaluate_dataset(better, make_grader(), columns=COLS, output_dir=tmp_path / "b", progress=False)
    c3 = compare(tmp_path / "a", tmp_path / "b")
    assert c3.b_better == 4 and c3.a_better == 0 and c3.mean_diff == pytest.approx(4 / 12)


# -- grader specs -------------------------------------------------------------------
SPEC_MODULE = """
from rewardjudge.graders import TemplatedPromptJudgeGrader
from rewardjudge.testing import ScriptedModel

def grader_factory(model):
    return TemplatedPromptJudgeGrader("g", model, "Judge.", "{{completion}}")

GRADER_OBJECT = grader_factory(ScriptedModel())

def not_a_factory(model):
    return "nope"
"""


@pytest.mark.parametrize("spec,ok", [
    ("demo", True),                                               # built-in
    ("rj_spec_graders:grader_factory", True),                     # a factory taking the model
    ("rj_spec_graders:GRADER_OBJECT", True),                      # a Grader instance
    ("rj_spec_graders:not_a_factory", "not a Grader"),            # a factory returning something else
    ("rj_spec_graders:nothing_here", "has no attribute"),         # missing attribute
    ("no_such_module_xyz:thing", "cannot import"),                # missing module
])
def test_grader_specs(spec, ok, tmp_path, monkeypatch):
    # a module of its own: a top-level "tests" package installed by another project
    # (verl ships one) would shadow "tests.test_evaluate"
    (tmp_path / "rj_spec_graders.py").write_text(SPEC_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "rj_spec_graders", raising=False)
    model = ScriptedModel(verdict)
    if ok is True:
        assert isinstance(resolve_grader(spec, model), Grader)
    else:
        with pytest.raises(ConfigError, match=ok):
            resolve_grader(spec, model)


def test_grader_spec_from_a_file(tmp_path):
    f = tmp_path / "my_graders.py"
    f.write_text("from rewardjudge.demo import demo_grader\n\ndef make(model):\n    return demo_grader(model)\n")
    grader = resolve_grader(f"{f}:make", ScriptedModel())
    assert grader.grader_key == "analysis-grader"


def test_catalog_key_spec_grades_against_the_reference():
    # the catalog's correctness criterion reads metadata.reference, which the reference column fills
    model = ScriptedModel(default='{"reasoning": "matches", "score": "PASS"}')
    result = evaluate_dataset(rows(3), resolve_grader("correctness", model), columns=COLS, progress=False)
    assert result.dataset["grade_key"] == ["catalog-correctness"] * 3
    assert "0" in model.calls[0]["messages"][-1]["content"]  # row 0's reference reached the prompt


def test_scorer_file_spec(tmp_path):
    scorer = tmp_path / "correct.json"
    scorer.write_text(json.dumps({"name": "Correct?", "config": {
        "model": "judge", "output_spec": {"type": "boolean"},
        "prompt_template": "Reference: {{reference}}\nAnswer: {{completion}}\nIs it correct?"}}))

    def judge(messages, params, schema):
        text = messages[-1]["content"]
        ref, ans = re.search(r"Reference: (.*)\nAnswer: (.*)\n", text).groups()
        return json.dumps({"reason": "compared", "verdict": ref == ans})

    grader = resolve_grader(str(scorer), ScriptedModel(judge, name="judge"))  # the scorer names model "judge"
    result = evaluate_dataset(rows(), grader, columns=COLS, progress=False)
    assert result.dataset["grade_value"] == EXPECTED
    with pytest.raises(ConfigError, match="no such scorer file"):
        resolve_grader(str(tmp_path / "missing.json"), ScriptedModel())
    with pytest.raises(ConfigError, match="catalog keys: .*correctness"):
        resolve_grader("no-such-grader", ScriptedModel())


def test_compare_refuses_runs_of_different_lengths():
    with pytest.raises(ConfigError, match="same rows"):
        compare([1.0, 0.0], [1.0])


# -- groups: rows sharing a prompt travel together ----------------------------------
SUBMISSION = re.compile(r'<submission id="([a-z0-9]+)">\n(.*?)</submission>', re.DOTALL)


def candidate_judge(req):
    """A judge for CandidateJudgeGrader's default prompt: each candidate gets
    the first digit of its text as its grade."""
    pairs = SUBMISSION.findall(req["messages"][-1]["content"])
    return "\n".join(f'<candidate id="{cid}">\n<reasoning>read it</reasoning>\n'
                     f'<grade id="{cid}">{next((c for c in text if c.isdigit()), "0")}</grade>\n</candidate>'
                     for cid, text in pairs)


def grouped_rows():
    # 3 prompts x 8 answers, interleaved: rows of one prompt are not adjacent
    return [{"question": f"Question {i % 3}?", "completion": f"answer {(i * 7) % 5}", "id": i}
            for i in range(24)]


def test_rows_sharing_a_prompt_cost_one_judge_request_each_group(tmp_path):
    from rewardjudge.graders import CandidateJudgeGrader
    from rewardjudge.models import OpenAIModel
    from rewardjudge.testing import FakeJudgeServer

    with FakeJudgeServer(candidate_judge) as server:
        grader = CandidateJudgeGrader("cand", OpenAIModel(server.url, "fake"), scale="graded", batch_size=8,
                                      seed=3)
        result = evaluate_dataset(grouped_rows(), grader, columns="metadata=id", output_dir=tmp_path / "run",
                                  progress=False)
        assert server.request_count == 3  # one request per prompt, not one per row (24)
        assert sorted(len(SUBMISSION.findall(r["messages"][-1]["content"])) for r in server.requests) == [8, 8, 8]
        # max_group splits a prompt's rows into balanced pieces: 8 rows, at most 3 a call -> 3+3+2
        before = server.request_count
        evaluate_dataset(grouped_rows(), grader, columns="metadata=id", progress=False, max_group=3)
        assert server.request_count - before == 9
    # grades come back to their own rows, in input order
    assert result.dataset["id"] == list(range(24))
    assert [g.extra["grade"] for g in result.grades()] == [(i * 7) % 5 for i in range(24)]


class _HeldGrader(Grader):
    """Holds row 0 until rows 1-31 are graded (the most the ahead limit lets
    through), then gives the scheduler 50 loop turns to send more before
    letting row 0 finish; records, as each row is graded, how many result
    lines were already written."""

    def __init__(self, out):
        super().__init__("held")
        self.out = out
        self.release = None
        self.others = 0
        self.written_at: dict[int, int] = {}
        self.max_row_while_held = -1

    async def grade(self, sample):
        import asyncio

        row = sample.metadata["row"]
        if self.release is None:
            self.release = asyncio.Event()
        tmp = self.out / "results.jsonl.tmp"
        self.written_at[row] = tmp.read_text().count("\n") if tmp.exists() else 0
        if row == 0:
            await self.release.wait()
        else:
            if not self.release.is_set():
                self.max_row_while_held = max(self.max_row_while_held, row)
            self.others += 1
            if self.others == 31:
                for _ in range(50):  # free slots: an unbounded scheduler would send rows 32+ now
                    await asyncio.sleep(0)
                self.release.set()
        return Grade(value=float(row % 2), grader_key=self.grader_key, grader_version=self.version)


def test_results_are_written_in_order_while_the_run_goes_and_dispatch_stays_bounded(tmp_path):
    out = tmp_path / "run"
    grader = _HeldGrader(out)
    data = [{"prompt": f"q{i}", "completion": "a"} for i in range(300)]
    result = evaluate_dataset(data, grader, output_dir=out, progress=False, group_window=4, concurrency=4)
    # while row 0 was held, rows up to frontier (0) + 8 x group_window (32) were sent, and no further
    assert grader.max_row_while_held == 31
    # rows were written as the rows before them finished (4-row chunks), not all at the end
    assert grader.written_at[299] >= 299 - 32 - 4
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [r["prompt"] for r in lines] == [f"q{i}" for i in range(300)]
    assert result.summary.counts["scored"] == 300 and not (out / "results.jsonl.tmp").exists()


# -- labels, medians, intervals -----------------------------------------------------
@pytest.mark.parametrize("extra,label", [
    ({"verdict": {"reasoning": "ok", "score": "PASS"}}, "PASS"),     # templated grader, binary verdict
    ({"verdict": {"reasoning": "ok", "score": 4}}, None),            # numeric verdict: no label
    ({"label": "good", "score": "good"}, "good"),                    # scorer, categorical
    ({"label": "true", "score": True}, "true"),                      # scorer, boolean
    ({"verdict": True}, "true"),                                      # a bare boolean verdict
    ({"grade": 3, "scale": "graded"}, None),                          # candidate grader: numeric
    ({}, None),                                                       # nothing to read
])
def test_grade_label_reads_label_valued_verdicts(extra, label):
    assert grade_label(Grade(value=1.0, grader_key="g", extra=extra)) == label
    # a penalized or unscored grade has no label, whatever its extra says
    assert grade_label(Grade(value=0.0, grader_key="g", status="penalized", extra=extra)) is None


def test_summary_and_compare_report_labels_medians_and_intervals(tmp_path):
    result = evaluate_dataset(rows(), make_grader(), columns=COLS, output_dir=tmp_path / "a", progress=False)
    s = result.summary
    assert s.labels == {"PASS": 8, "FAIL": 4} and s.p50 == 1.0
    saved = json.loads((tmp_path / "a" / "summary.json").read_text())
    assert saved["labels"] == {"PASS": 8, "FAIL": 4} and saved["p50"] == 1.0 and len(saved["ci"]) == 2
    assert "labels: PASS: 8  FAIL: 4" in str(s) and "median (p50) value: 1.0000" in str(s)
    better = rows()
    for r in better:
        r["answer"] = r["gold"]
    evaluate_dataset(better, make_grader(), columns=COLS, output_dir=tmp_path / "b", progress=False)
    c = compare(tmp_path / "a", tmp_path / "b")
    assert c.a.labels == {"PASS": 8, "FAIL": 4} and c.b.labels == {"PASS": 12}
    assert (c.a.p50, c.b.p50, c.b.ci) == (1.0, 1.0, (1.0, 1.0))
    assert c.a.ci[0] < c.a.mean < c.a.ci[1]
    assert "a: mean 0.6667" in str(c) and "labels: PASS: 12" in str(c)
    # the JSONL results read the same as the Parquet ones
    assert compare(tmp_path / "a" / "results.jsonl", tmp_path / "b" / "results.jsonl").to_dict() == c.to_dict()


@pytest.mark.parametrize("values", [
    [0.0, 1.0] * 500 + [1.0] * 200,                                   # binary: exact multinomial
    [i % 5 / 4 for i in range(3000)],                                 # a 1-5 scale
    [math.sin(i) ** 2 for i in range(6000)],                          # continuous: more distinct values than bins
])
def test_bootstrap_matches_plain_resampling(values):
    import numpy as np

    rng = np.random.default_rng(1)
    x = np.asarray(values)
    means = x[rng.integers(0, x.size, size=(2000, x.size))].mean(axis=1)
    plain = np.quantile(means, [0.025, 0.975])
    lo, hi = bootstrap_ci(values)
    width = plain[1] - plain[0]
    assert abs(lo - plain[0]) < 0.1 * width and abs(hi - plain[1]) < 0.1 * width


# -- content parts and unreadable rows --------------------------------------------------
def test_content_part_messages_are_graded_and_an_image_row_does_not_stop_the_run(tmp_path):
    model = ScriptedModel(default='{"reasoning": "ok", "score": "PASS"}')
    grader = TemplatedPromptJudgeGrader("g", model, "", "{{last_user_turn_content}} => {{completion}}")
    rows_ = [
        # plain string contents
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]},
        # text content parts, in the same column as plain strings (one Arrow type cannot hold both)
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "What is"},
                                                  {"type": "text", "text": "2+2?"}]},
                      {"role": "assistant", "content": [{"type": "text", "text": "4"}]}]},
        # an image a text grader cannot see: that row is unscored, the others go on
        {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x.png"}}]},
                      {"role": "assistant", "content": "a cat"}]},
    ]
    path = tmp_path / "parts.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows_))
    for data in (str(path), rows_):
        result = evaluate_dataset(data, grader, progress=False)
        assert result.dataset["grade_status"] == ["scored", "scored", "unscored"]
        assert result.dataset["grade_error"][2].startswith("input error: ") and "image" in result.dataset["grade_error"][2]
        assert result.summary.errors == {"input error": 1}
    assert without_seal(model.calls[-1]["messages"][-1]["content"]) == "What is\n2+2? => 4"
    assert len(model.calls) == 4  # the image rows were never sent
