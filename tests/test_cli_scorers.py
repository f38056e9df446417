"""`rewardjudge templates|scorers|catalog`: output and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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
    assert made["version_number"] == 1 and made["variables"] == ["question"]

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
    ({"config": {**SCORER["config"], "params": {"top_p": 0}}}, "params.top_p must be in (0, 1]"),  # bad param
    ({"config": {**SCORER["config"], "prompt_template": "{{#if x}}"}}, "unclosed block"),        # bad template
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


def test_catalog_lists_and_shows(capsys):
    code, out, _ = run(capsys, "catalog")
    assert code == 0 and "correctness" in out and "needs reference" in out
    code, out, _ = run(capsys, "catalog", "--json")
    data = json.loads(out)
    assert "{{criterion}}" in data["default_system_prompt_template"] and len(data["templates"]) >= 7
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
