"""ScorerRegistry: round trips, versions made only by config hash changes, pinning."""

from __future__ import annotations

import json
import re

import pytest

from rewardjudge import ScorerGrader, StringThread
from rewardjudge.errors import ConfigError
from rewardjudge.scorers import ScorerBinding, ScorerNotFound, ScorerRegistry
from rewardjudge.testing import ScriptedModel, without_seal

CONFIG = {"model": "judge", "prompt_template": "Q: {{question}}\nA: {{completion}}\nGood answer?",
          "output_spec": {"type": "boolean"}, "params": {"temperature": 0}}


def with_params(**params):
    return {**CONFIG, "params": params}


@pytest.fixture
def registry(tmp_path):
    return ScorerRegistry(tmp_path / "scorers")


def test_create_get_round_trip_and_slug_format(registry):
    s = registry.create("Helpful answer (v2)!", CONFIG, description="Is the answer helpful?")
    assert re.fullmatch(r"helpful-answer-v2-[0-9a-f]{8}", s.slug)
    assert (registry.path / f"{s.slug}.json").is_file()
    back = registry.get(s.slug)
    assert (back.name, back.description, back.config, back.version) == (
        s.name, s.description, s.config, s.version)
    assert back.version_number == 1 and back.variables == ["question"]
    assert [v.number for v in registry.versions(s.slug)] == [1]


def test_create_is_not_idempotent(registry):
    a = registry.create("Same", CONFIG)
    b = registry.create("Same", CONFIG)
    assert a.slug != b.slug and a.version == b.version
    assert len(registry.list()) == 2


def test_find_by_name(registry):
    registry.create("Helpfulness", CONFIG)
    registry.create("Harmlessness", CONFIG)
    assert [s.name for s in registry.find("HELP")] == ["Helpfulness"]       # case-insensitive substring
    assert sorted(s.name for s in registry.find("ness")) == ["Harmlessness", "Helpfulness"]
    assert registry.find("helpful", exact=True) == []                        # exact needs the full name
    assert registry.find("nothing") == []


def test_name_and_description_changes_make_no_version(registry):
    s = registry.create("A", CONFIG)
    u = registry.update(s.slug, name="B", description="now described")
    assert (u.name, u.description, u.version) == ("B", "now described", s.version)
    assert len(registry.versions(s.slug)) == 1


def test_same_config_in_another_key_order_makes_no_version(registry):
    s = registry.create("A", CONFIG)
    reordered = json.loads(json.dumps(dict(reversed(list(CONFIG.items())))))
    registry.update(s.slug, config=reordered)
    assert len(registry.versions(s.slug)) == 1


def test_a_param_change_makes_a_version_and_reverting_reuses_the_id(registry):
    s = registry.create("A", CONFIG)
    v2 = registry.update(s.slug, config=with_params(temperature=0.7))
    v3 = registry.update(s.slug, config=CONFIG)
    versions = registry.versions(s.slug)
    assert [v.number for v in versions] == [1, 2, 3]
    assert versions[0].id == versions[2].id == s.version != versions[1].id == v2.version
    assert v3.version_number == 3  # the current version is the latest, even with a reused id


def test_version_references(registry):
    s = registry.create("A", CONFIG)
    v2 = registry.update(s.slug, config=with_params(temperature=1.0))
    assert registry.version(s.slug, 1).id == s.version            # by number
    assert registry.version(s.slug, "2").id == v2.version         # by number as text
    assert registry.version(s.slug, v2.version).number == 2       # by full id
    assert registry.version(s.slug, s.version[:8]).number == 1    # by id prefix
    assert registry.version(s.slug, "latest").number == 2         # the current one
    with pytest.raises(ScorerNotFound, match="no version 9"):
        registry.version(s.slug, 9)
    with pytest.raises(ScorerNotFound):
        registry.version(s.slug, "ffffffff")


@pytest.mark.parametrize("slug", ["missing-00000000", "../etc/passwd", "UPPER"])
def test_unknown_or_unsafe_slugs_are_not_found(registry, slug):
    with pytest.raises(ScorerNotFound):
        registry.get(slug)


def test_invalid_configs_are_refused_before_anything_is_written(registry):
    with pytest.raises(ConfigError, match="params.temperature"):
        registry.create("A", with_params(temperature=3))
    assert registry.list() == []
    s = registry.create("A", CONFIG)
    with pytest.raises(ConfigError):
        registry.update(s.slug, config={**CONFIG, "prompt_template": "{{#if x}}"})
    assert len(registry.versions(s.slug)) == 1


async def test_a_binding_pins_its_version_across_updates(registry):
    s = registry.create("A", CONFIG)
    pinned = registry.bind(s.slug, {"question": "turn:user"}, version=1)
    registry.update(s.slug, config={**CONFIG, "prompt_template": "Changed: {{question}}"})
    latest = registry.bind(s.slug, {"question": "turn:user"})
    assert pinned.version == s.version != latest.version
    model = ScriptedModel(default='{"reason": "ok", "verdict": true}', name=CONFIG["model"])
    t = StringThread([("user", "2+2?"), ("assistant", "4")])
    old, new = await ScorerGrader(pinned, model).grade(t), await ScorerGrader(latest, model).grade(t)
    assert old.grader_version == s.version and new.grader_version == latest.version
    assert model.calls[0]["messages"][0]["content"].startswith("Q: 2+2?")   # the pinned template
    assert without_seal(model.calls[1]["messages"][0]["content"]) == "Changed: 2+2?"


def test_binding_round_trip_and_tamper_check(registry):
    s = registry.create("A", CONFIG)
    binding = registry.bind(s.slug, {"question": "turn:user"})
    data = json.loads(json.dumps(binding.to_dict()))
    back = ScorerBinding.from_dict(data)
    assert (back.version, back.mapping, back.scorer_slug) == (binding.version, binding.mapping, s.slug)
    data["config"]["params"]["temperature"] = 0.9
    with pytest.raises(ConfigError, match="edited after pinning"):
        ScorerBinding.from_dict(data)


def test_hand_edited_files_are_detected(registry):
    s = registry.create("A", CONFIG)
    path = registry.path / f"{s.slug}.json"
    record = json.loads(path.read_text())
    record["versions"][0]["config"]["model"] = "someone-else"
    path.write_text(json.dumps(record))
    with pytest.raises(ConfigError, match="edited by hand"):
        registry.get(s.slug)


def test_stored_handlebars_versions_keep_their_engine_and_id(registry):
    # files written before Jinja2 became the default name their engine, so their hash holds
    config = {**CONFIG, "template_engine": "handlebars",
              "prompt_template": "{{#if question}}Q: {{question}}\n{{/if}}A: {{completion}}"}
    s = registry.create("Legacy", config)
    back = registry.get(s.slug)
    assert back.config.template_engine == "handlebars" and back.version == s.version
    assert back.variables == ["question"]
    assert json.loads((registry.path / f"{s.slug}.json").read_text())["versions"][0]["config"][
        "template_engine"] == "handlebars"


def test_configs_without_an_engine_are_jinja2_as_the_document_says(registry):
    s = registry.create("Doc", {**CONFIG, "prompt_template": "{% if question %}Q: {{ question }}{% endif %}"})
    assert registry.get(s.slug).config.template_engine == "jinja2" and s.variables == ["question"]


def test_delete(registry):
    s = registry.create("A", CONFIG)
    registry.delete(s.slug)
    with pytest.raises(ScorerNotFound):
        registry.get(s.slug)
