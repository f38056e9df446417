"""`rewardjudge templates|scorers|catalog`: output and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardjudge.testing import without_seal

from rewardjudge.cli import main

SCORER = {"name": "Helpfulness", "description": "Rates answers",
          "config": {"model": "judge", "prompt_template": "Q: {{question}}\nA: {{completion}}",
                     "output_spec": {"type": "numeric", "min": 1, "max": 5},
                     "params": {"temperature": 0}}}


def run(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(argv))
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


@pytest.fixture
def reg(tmp_path: Path) -> str:
    return str(tmp_path / "scorers")


@pytest.fixture
def scorer_file(tmp_path: Path) -> Path:
    path = tmp_path / "helpfulness.json"
    path.write_text(json.dumps(SCORER))
    return path


def create(capsys, reg, scorer_file) -> dict:
    code, out, _ = run(capsys, "scorers", "--registry", reg, "create", str(scorer_file), "--json")
    assert code == 0
    return json.loads(out)


def test_create_show_versions_update(capsys, reg, scorer_file, tmp_path):
    made = create(capsys, reg, scorer_file)
    slug = made["slug"]
    # the scorer document's response shape: the variables sit under latest_version
    assert made["latest_version"]["number"] == 1 and made["latest_version"]["variables"] == ["question"]
    assert "variables" not in made and len(made["latest_version"]["id"]) == 64

    code, out, _ = run(capsys, "scorers", "--registry", reg, "show", slug)
    assert code == 0 and "numeric 1..5" in out and "variables:   question" in out

    template = tmp_path / "t.hbs"
    template.write_text("Question: {{question}}\nAnswer: {{completion}}\nScore 1-5.")
    code, out, _ = run(capsys, "scorers", "--registry", reg, "update", slug, str(scorer_file),
                       "--template", str(template))
    assert code == 0 and "-> new version" in out
    code, out, _ = run(capsys, "scorers", "--registry", reg, "update", slug, "--description", "x")
    assert code == 0 and "no new version" in out

    code, out, _ = run(capsys, "scorers", "--registry", reg, "versions", slug)
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 2 and lines[1].startswith("*   2")

    code, out, _ = run(capsys, "scorers", "--registry", reg, "show", slug, "--version", "1", "--json")
    assert code == 0 and json.loads(out)["config"]["prompt_template"] == SCORER["config"]["prompt_template"]

    code, out, _ = run(capsys, "scorers", "--registry", reg, "list", "help")
    assert code == 0 and slug in out


@pytest.mark.parametrize("change,message", [
    ({"config": {**SCORER["config"], "params": {"top_p": 0}}}, "params.top_p must be a number in (0, 1], got 0"),  # bad param
    ({"config": {**SCORER["config"], "prompt_template": "{% if x %}"}}, "endif"),                 # bad template
    ({"config": {**SCORER["config"], "prompt_template": "{{#if x}}y{{/if}}"}}, "Handlebars syntax"),  # wrong engine
    ({"name": ""}, "non-empty string"),                                                          # no name
])
def test_invalid_scorers_exit_2_with_the_reason(capsys, reg, tmp_path, change, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({**SCORER, **change}))
    code, _, err = run(capsys, "scorers", "--registry", reg, "create", str(path))
    assert code == 2 and message in err


def test_unreadable_files_exit_2(capsys, reg, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert run(capsys, "scorers", "--registry", reg, "create", str(bad))[0] == 2
    code, _, err = run(capsys, "scorers", "--registry", reg, "create", str(tmp_path / "none.json"))
    assert code == 2 and "cannot read" in err


def test_unknown_scorer_or_version_exits_3(capsys, reg, scorer_file):
    slug = create(capsys, reg, scorer_file)["slug"]
    code, _, err = run(capsys, "scorers", "--registry", reg, "show", "nope-00000000")
    assert code == 3 and "not found" in err
    assert run(capsys, "scorers", "--registry", reg, "show", slug, "--version", "7")[0] == 3


def test_registry_from_the_environment(capsys, reg, scorer_file, monkeypatch):
    monkeypatch.setenv("REWARDJUDGE_SCORERS", reg)
    slug = json.loads(run(capsys, "scorers", "create", str(scorer_file), "--json")[1])["slug"]
    assert (Path(reg) / f"{slug}.json").is_file()


def test_registry_option_after_the_subcommand(capsys, reg, scorer_file):
    code, out, _ = run(capsys, "scorers", "create", str(scorer_file), "--registry", reg, "--json")
    assert code == 0 and (Path(reg) / f"{json.loads(out)['slug']}.json").is_file()


# -- scorers test / delete (issue 14), with the scorer document's example -------------------------
DOC_SCORER = {
    "name": "Helpfulness", "description": "Rates how well the assistant answered.", "kind": "llm_judge",
    "config": {"model": "mistral-small-latest",
               "prompt_template": "You grade customer-support answers.\nScore 1 (useless) to 5 (fully "
                                  "resolves the question).\n\nProduct: {{ product }}"
                                  "{% if question %}\nQuestion: {{ question }}{% endif %}",
               "output_spec": {"type": "numeric", "min": 1, "max": 5},
               "params": {"temperature": 0, "random_seed": 42}}}
SAMPLE = {"messages": [{"role": "user", "content": "My router blinks red."},
                       {"role": "assistant", "content": "Restart it."}],
          "metadata": {"product": "acme router"}}
PROMPT = ("You grade customer-support answers.\nScore 1 (useless) to 5 (fully resolves the question)."
          "\n\nProduct: acme router\nQuestion: My router blinks red.")


@pytest.fixture
def doc_slug(capsys, reg, tmp_path) -> str:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(DOC_SCORER))
    code, out, _ = run(capsys, "scorers", "--registry", reg, "create", str(path), "--json")
    assert code == 0
    return json.loads(out)["slug"]


@pytest.fixture
def sample_file(tmp_path) -> Path:
    path = tmp_path / "sample.json"
    path.write_text(json.dumps(SAMPLE))
    return path


def test_scorers_test_renders_the_prompt(capsys, reg, doc_slug, sample_file):
    code, out, _ = run(capsys, "scorers", "test", doc_slug, "--input", str(sample_file), "--registry", reg,
                       "--map", "question=turn:user")
    assert code == 0 and PROMPT in out and "question <- turn:user" in out
    code, out, _ = run(capsys, "scorers", "--registry", reg, "test", doc_slug, "--input", str(sample_file),
                       "--json")
    data = json.loads(out)["samples"][0]
    assert data["missing_variables"] == ["question"] and "Question:" not in data["prompt"]


def test_scorers_test_with_a_judge_makes_one_graded_call(capsys, reg, doc_slug, sample_file):
    from rewardjudge.testing import FakeJudgeServer

    with FakeJudgeServer(lambda req: '{"reason": "clear next step", "score": 4}') as server:
        code, out, _ = run(capsys, "scorers", "--registry", reg, "test", doc_slug, "--input",
                           str(sample_file), "--map", "question=turn:user", "--judge", server.url, "--json")
    assert code == 0 and len(server.requests) == 1
    assert server.requests[0]["model"] == "mistral-small-latest"
    assert [{**m, "content": without_seal(m["content"])} for m in server.requests[0]["messages"]] == [
        {"role": "user", "content": PROMPT}]
    grade = json.loads(out)["samples"][0]["grade"]
    # the scorer document's names, beside the reward value
    assert (grade["status"], grade["score_value"], grade["score_label"], grade["explanation"],
            grade["value"], grade["judge_model"]) == (
        "scored", 4.0, None, "clear next step", 4.0, "mistral-small-latest")


def test_scorers_test_exits_1_when_the_judge_fails(capsys, reg, doc_slug, sample_file):
    from rewardjudge.testing import Fault, FakeJudgeServer

    with FakeJudgeServer(lambda req: Fault.http(503)) as server:
        code, out, _ = run(capsys, "scorers", "--registry", reg, "test", doc_slug, "--input",
                           str(sample_file), "--judge", server.url)
    assert code == 1 and "unscored" in out


def test_scorers_test_grades_a_label_scorer_without_values_by_its_label(capsys, reg, tmp_path, sample_file):
    from rewardjudge.testing import FakeJudgeServer

    path = tmp_path / "labels.json"
    config = {**DOC_SCORER["config"], "output_spec": {"type": "categorical", "labels": ["good", "bad"]}}
    path.write_text(json.dumps({**DOC_SCORER, "config": config}))
    slug = json.loads(run(capsys, "scorers", "--registry", reg, "create", str(path), "--json")[1])["slug"]
    assert run(capsys, "scorers", "--registry", reg, "test", slug, "--input", str(sample_file))[0] == 0
    with FakeJudgeServer(lambda req: '{"reason": "resolves it", "label": "good"}') as server:
        code, out, _ = run(capsys, "scorers", "--registry", reg, "test", slug, "--input", str(sample_file),
                           "--judge", server.url)
    assert code == 0 and "=> scored good" in out and "explanation: resolves it" in out
    with FakeJudgeServer(lambda req: '{"reason": "resolves it", "label": "good"}') as server:
        code, out, _ = run(capsys, "scorers", "--registry", reg, "test", slug, "--input", str(sample_file),
                           "--judge", server.url, "--json")
    grade = json.loads(out)["samples"][0]["grade"]
    # a label, never a number: the labels have no order to take one from
    assert (grade["score_label"], grade["score_value"], grade["value"]) == ("good", None, None)


def test_scorers_delete(capsys, reg, doc_slug):
    code, out, _ = run(capsys, "scorers", "delete", doc_slug, "--registry", reg)
    assert code == 0 and f"deleted {doc_slug}" in out
    assert run(capsys, "scorers", "--registry", reg, "show", doc_slug)[0] == 3
    assert run(capsys, "scorers", "--registry", reg, "delete", doc_slug)[0] == 3


def test_catalog_lists_and_shows(capsys):
    code, out, _ = run(capsys, "catalog")
    assert code == 0 and "correctness" in out and "needs reference" in out
    code, out, _ = run(capsys, "catalog", "--json")
    data = json.loads(out)
    assert "{{ criterion }}" in data["default_system_prompt_template"] and len(data["templates"]) >= 7
    assert data["status"] == "success"
    code, out, _ = run(capsys, "catalog", "faithfulness", "--language", "fr")
    assert code == 0 and "Fidélité" in out
    code, _, err = run(capsys, "catalog", "nothing")
    assert code == 2 and "unknown criterion" in err


def test_templates_list_show_and_compile_check(capsys, tmp_path):
    code, out, _ = run(capsys, "templates", "list")
    assert code == 0 and "CriterionJudgeGrader/system" in out and "en fr" in out
    code, out, _ = run(capsys, "templates", "show", "CriterionJudgeGrader/system", "--language", "fr")
    assert code == 0 and "juge" in out
    assert run(capsys, "templates", "show", "CriterionJudgeGrader")[0] == 2

    root = tmp_path / "templates"
    (root / "prompts" / "G").mkdir(parents=True)
    (root / "prompts" / "G" / "user.txt").write_text("Hi {{name}}\n")
    code, out, err = run(capsys, "templates", "compile", "--root", str(root), "--check")
    assert code == 1 and "STALE" in out and "templates compile" in err
    assert run(capsys, "templates", "compile", "--root", str(root))[0] == 0
    assert run(capsys, "templates", "check", "--root", str(root))[0] == 0
    (root / "prompts" / "G" / "user.txt").write_text("{{#if x}}broken\n")
    code, _, err = run(capsys, "templates", "compile", "--root", str(root))
    assert code == 2 and "G/user.txt" in err


def fake_spawn(replies):
    """A stand-in for ``spawn_judge`` (the embedded judge): a scripted model under the embedded name."""
    import contextlib

    from rewardjudge.models._spawn import EMBEDDED_ALIAS
    from rewardjudge.testing import ScriptedModel

    spawned = []

    @contextlib.asynccontextmanager
    async def spawn(*args, **kwargs):
        spawned.append((args, kwargs))
        yield ScriptedModel(replies, name=EMBEDDED_ALIAS)

    return spawn, spawned


def test_scorers_test_takes_the_embedded_judge_through_evals_judge_factory(capsys, reg, doc_slug, sample_file,
                                                                          monkeypatch):
    import rewardjudge.models as models

    spawn, spawned = fake_spawn(['{"reason": "clear next step", "score": 4}'])
    monkeypatch.setattr(models, "spawn_judge", spawn)
    code, out, err = run(capsys, "scorers", "--registry", reg, "test", doc_slug, "--input", str(sample_file),
                         "--map", "question=turn:user", "--judge", "embedded", "--json")
    assert code == 0, err
    assert len(spawned) == 1 and "spawning the embedded judge" in err
    grade = json.loads(out)["samples"][0]["grade"]
    # the embedded judge answers in place of the scorer's model, and the grade says so
    assert (grade["status"], grade["score_value"], grade["judge_model"]) == ("scored", 4.0, "smollm2-135m-instruct")
    code, _, err = run(capsys, "scorers", "--registry", reg, "test", doc_slug, "--input", str(sample_file),
                       "--judge", "carrier-pigeon")
    assert code == 2 and "not understood" in err
    import torch

    if not torch.cuda.is_available():  # a scorer is a chat grader: refused on a CPU torch judge, before loading it
        code, _, err = run(capsys, "scorers", "--registry", reg, "test", doc_slug, "--input", str(sample_file),
                           "--judge", "torch")
        assert code == 2 and "--judge embedded" in err and "loading" not in err, err


def test_pipeline_takes_the_embedded_judge_through_evals_judge_factory(capsys, tmp_path, monkeypatch):
    """``pipeline run --judge embedded``: the same factory (no OTLP spans needed to see it spawned)."""
    import rewardjudge.models as models

    spawn, spawned = fake_spawn([])
    monkeypatch.setattr(models, "spawn_judge", spawn)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCORER))
    pipeline = tmp_path / "p.json"
    assert run(capsys, "pipeline", "pin", "--scorer", str(path), "--name", "p", "-o", str(pipeline))[0] == 0
    spans = tmp_path / "spans.jsonl"
    spans.write_text(json.dumps({"resourceSpans": []}) + "\n")
    code, out, err = run(capsys, "pipeline", "run", str(pipeline), str(spans), "--judge", "embedded",
                         "--output", str(tmp_path / "out"))
    assert code == 0, err
    assert len(spawned) == 1 and "spawning the embedded judge" in err


@pytest.mark.judge
def test_scorers_test_on_the_spawned_embedded_judge(capsys, reg, doc_slug, sample_file):
    code, out, err = run(capsys, "scorers", "--registry", reg, "test", doc_slug, "--input", str(sample_file),
                         "--map", "question=turn:user", "--judge", "embedded", "--json")
    assert code in (0, 1), err  # a 135M judge's verdicts are noise: check the pipeline, not the verdict
    grade = json.loads(out)["samples"][0]["grade"]
    assert grade["status"] in ("scored", "unscored") and grade["judge_model"]
