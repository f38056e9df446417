"""The deepeval-style prompt document (seed 001), run as written where it gives examples:
``{{ _fragments.name }}``, its seven named fragments, ``multimodal`` as a template variable,
Jinja2 bundles, and ``self._get_prompt(...)`` with per-class lookup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewardjudge.errors import ConfigError
from rewardjudge.graders._base import Grader
from rewardjudge.templates._bundle import build_bundle, check_bundles, expand_fragment_refs
from rewardjudge.templates._prompts import PROMPTS_ENV, PromptLibrary, default_library, get_prompt

DOC_LINE = "{% if multimodal %}{{ _fragments.multimodal_input_rules }}{% endif %}"
SEVEN = ["multimodal_input_rules", "multimodal_input_rules_turn_metric",
         "multimodal_image_generation_eval_context", "faithfulness_verdicts_format_instruction",
         "faithfulness_verdicts_example_multimodal", "faithfulness_verdicts_guidelines_multimodal",
         "faithfulness_verdicts_guidelines_text_only"]


def write_bundle(folder: Path, prompts: dict, *, engine: str | None = None,
                 fragments: dict | None = None, key: str = "fragments", multimodal=None) -> Path:
    data = {"format": 2, "language": "en", key: fragments or {}, "prompts": prompts,
            "multimodal": multimodal or {}}
    if engine:
        data["engine"] = engine
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bundle.en.json").write_text(json.dumps(data), encoding="utf-8")
    return folder


@pytest.fixture
def user_lib(tmp_path, monkeypatch):
    """A user bundle folder (Jinja2, as the document's templates.json is) on $REWARDJUDGE_PROMPTS."""
    folder = write_bundle(tmp_path / "user", {
        "AnswerRelevancyMetric": {
            "generate_statements": "Break this output into statements.\n" + DOC_LINE
                                   + "\nOutput: {{ actual_output }}\n"},
        "FaithfulnessMetric": {
            "generate_verdicts": "{{ _fragments.faithfulness_verdicts_format_instruction }}\n"
                                 "{% if multimodal %}{{ _fragments.faithfulness_verdicts_guidelines_multimodal }}"
                                 "{% else %}{{ _fragments.faithfulness_verdicts_guidelines_text_only }}{% endif %}\n"
                                 "Claims: {{ claims }}\n"},
    }, engine="jinja2", fragments={"schema_rule": "Reply as {{ output_schema }}\n"}, key="_fragments")
    monkeypatch.setenv(PROMPTS_ENV, str(folder))
    default_library().reload()
    yield folder
    default_library().reload()


# 1. {{ _fragments.name }} -------------------------------------------------------------

def test_the_seven_fragments_ship_in_the_english_bundle():
    fragments = json.loads((Path(__file__).parents[1] / "rewardjudge/templates/bundle.en.json")
                           .read_text(encoding="utf-8"))["fragments"]
    for name in SEVEN:
        assert fragments.get(name, "").strip(), name
    assert check_bundles() == []


def test_document_line_in_a_jinja2_bundle(user_lib):
    lib = default_library()
    rules = lib.fragments()["multimodal_input_rules"].rstrip("\n")
    on = lib.template("AnswerRelevancyMetric", "generate_statements", multimodal=True)
    assert on.engine == "jinja2"
    assert rules in on.render({"actual_output": "Paris."})
    off = lib.template("AnswerRelevancyMetric", "generate_statements")
    assert rules not in off.render({"actual_output": "Paris."})
    assert "Output: Paris." in off.render({"actual_output": "Paris."})


def test_fragment_variables_fill_in_the_same_pass_handlebars_and_jinja(tmp_path):
    fragments = {"schema_rule": "Reply as {{output_schema}}\n"}
    hbs = write_bundle(tmp_path / "h", {"J": {"system": "Judge.\n{{ _fragments.schema_rule }}\n"
                                              "{{#if multimodal}}IMG{{/if}}"}}, fragments=fragments)
    jj = write_bundle(tmp_path / "j", {"J": {"system": "Judge.\n{{ _fragments.schema_rule }}\n"
                                             "{% if multimodal %}IMG{% endif %}"}},
                      fragments=fragments, engine="jinja2")
    for folder in (hbs, jj):
        lib = PromptLibrary(user_dir=folder)
        t = lib.template("J", "system")
        assert "output_schema" in t.variables and "_fragments.schema_rule" not in t.variables
        assert t.render({"output_schema": '{"score": int}'}) == 'Judge.\nReply as {"score": int}\n'
        assert t.render({"output_schema": "S"}, ) .endswith("S\n")
        assert lib.template("J", "system", multimodal=True).render({"output_schema": "S"}).endswith("IMG")
        # a value is never read as template text
        assert "{{x}}" in t.render({"output_schema": "{{x}}"})


def test_partials_still_work_beside_fragment_refs(tmp_path):
    folder = write_bundle(tmp_path / "u", {"J": {"user": "{{> rule}}\n[{{ _fragments.rule }}]"}},
                          fragments={"rule": "rate {{x}}\n"})
    assert PromptLibrary(user_dir=folder).template("J", "user").render({"x": 1}) == "rate 1\n[rate 1]"


def test_unknown_fragment_ref_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="unknown fragment 'nope'"):
        expand_fragment_refs("{{ _fragments.nope }}", {"a": "x"})
    root = tmp_path / "src"
    (root / "prompts" / "J").mkdir(parents=True)
    (root / "prompts" / "J" / "system.txt").write_text("{{ _fragments.nope }}", encoding="utf-8")
    with pytest.raises(ConfigError, match="nope"):
        build_bundle(root, "en")


def test_fragment_ref_cycle_is_an_error():
    with pytest.raises(ConfigError, match="cycle"):
        expand_fragment_refs("{{ _fragments.a }}", {"a": "{{ _fragments.b }}", "b": "{{ _fragments.a }}"})


# 4. self._get_prompt(...) ----------------------------------------------------------------

class AnswerRelevancyMetric(Grader):
    def __init__(self):
        super().__init__("answer_relevancy")

    def statements_prompt(self, actual_output: str, multimodal: bool) -> str:
        # the document's call, as written
        return self._get_prompt(
            "generate_statements",
            multimodal=multimodal,
            actual_output=actual_output,
        )


class MyRelevancy(AnswerRelevancyMetric):
    """Ships no prompts of its own: falls back along the MRO."""


def test_get_prompt_as_the_document_calls_it(user_lib):
    metric = AnswerRelevancyMetric()
    text = metric.statements_prompt("Paris is the capital.", multimodal=True)
    assert "Output: Paris is the capital." in text
    assert "image" in text.lower()
    assert "image" not in metric.statements_prompt("x", multimodal=False).lower()
    assert MyRelevancy().statements_prompt("y", False) == metric.statements_prompt("y", False)


def test_get_prompt_template_class_borrows_another_class(user_lib):
    text = AnswerRelevancyMetric()._get_prompt("generate_verdicts", template_class="FaithfulnessMetric",
                                               claims='["a"]')
    assert "Claims: [\"a\"]" in text and "Your own knowledge does not count" in text
    mm = AnswerRelevancyMetric()._get_prompt("generate_verdicts", template_class="FaithfulnessMetric",
                                             multimodal=True, claims="[]")
    assert "image" in mm and "Your own knowledge" not in mm


def test_get_prompt_strict_and_unknown_method(user_lib):
    from rewardjudge.errors import TemplateError

    with pytest.raises(TemplateError):
        AnswerRelevancyMetric()._get_prompt("generate_statements")
    assert "Output: " in AnswerRelevancyMetric()._get_prompt("generate_statements", strict=False)
    with pytest.raises(ConfigError, match="MyRelevancy or AnswerRelevancyMetric"):
        MyRelevancy()._get_prompt("no_such_method")


def test_get_prompt_on_a_shipped_grader_prompt():
    class CriterionJudgeGrader(Grader):
        pass

    g = CriterionJudgeGrader("k")
    text = g._get_prompt("system", criterion="Is it right?", output_schema="{...}", strict=False)
    assert "Is it right?" in text
    assert text == get_prompt(g, "system", criterion="Is it right?", output_schema="{...}", strict=False)


def test_subclass_ships_its_own_prompt(tmp_path):
    folder = write_bundle(tmp_path / "u", {"Base": {"ask": "base {{q}}"}, "Child": {"ask": "child {{q}}"}})
    lib = PromptLibrary(user_dir=folder)

    class Base:
        pass

    class Child(Base):
        pass

    class Grandchild(Child):
        pass

    assert get_prompt(Base(), "ask", q=1, _library=lib) == "base 1"
    assert get_prompt(Child(), "ask", q=1, _library=lib) == "child 1"
    assert get_prompt(Grandchild(), "ask", q=1, _library=lib) == "child 1"
    assert get_prompt(Grandchild(), "ask", q=1, template_class="Base", _library=lib) == "base 1"


# 3. multimodal as a variable, and the .multimodal variant ---------------------------------

def test_multimodal_variable_and_variant(tmp_path):
    folder = write_bundle(tmp_path / "u", {"J": {"user": "{{#if multimodal}}M{{else}}T{{/if}}"}},
                          multimodal={"J": {"user": "variant {{multimodal}}"}})
    lib = PromptLibrary(user_dir=folder)
    assert lib.template("J", "user").render({}) == "T"
    assert lib.template("J", "user", multimodal=True).render({}) == "variant true"
    # the context may still say otherwise
    assert lib.template("J", "user").render({"multimodal": True}) == "M"


def test_bad_engine_is_refused(tmp_path):
    folder = write_bundle(tmp_path / "u", {"J": {"user": "x"}}, engine="mustache")
    with pytest.raises(ConfigError, match="engine"):
        PromptLibrary(user_dir=folder).template("J", "user")


# 5. the translate command's default output folder is read by default ---------------------

def test_translate_default_folder_is_read_by_default(tmp_path, monkeypatch):
    from rewardjudge.templates._prompts import DEFAULT_USER_DIR, user_dirs

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(PROMPTS_ENV, raising=False)
    assert user_dirs() == []
    write_bundle(tmp_path / DEFAULT_USER_DIR, {"J": {"user": "from the translate folder"}})
    assert user_dirs() == [DEFAULT_USER_DIR]
    assert PromptLibrary().template("J", "user").render({}) == "from the translate folder"
    monkeypatch.setenv(PROMPTS_ENV, "")          # an explicit (empty) setting wins
    assert user_dirs() == []


# 5. a generated Literal of prompt method names per class ----------------------------------

def test_generated_method_literals_match_the_bundle():
    import typing

    from rewardjudge.templates import _methods
    from rewardjudge.templates._bundle import TEMPLATES_DIR, methods_module_stale

    assert not methods_module_stale(TEMPLATES_DIR), "run `rewardjudge templates compile`"
    english = json.loads((TEMPLATES_DIR / "bundle.en.json").read_text(encoding="utf-8"))
    for cls, methods in english["prompts"].items():
        names = set(typing.get_args(getattr(_methods, f"{cls}Method")))
        assert set(methods) <= names == set(_methods.PROMPT_METHODS[cls])
        assert names <= set(typing.get_args(_methods.PromptMethod))
