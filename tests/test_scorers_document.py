"""The scorer document (Mistral-style, ../shared/seeds/002), run as it is written.

Its anatomy example, its output-type table (result fields ``score_value``,
``score_label``, ``explanation``), ``latest_version.variables``, its
``{% if product %}`` advice, its version rule, and its aggregation advice: a
categorical scorer (labels, no values) is counted by ``score_label``, while
every reward adapter refuses it with the reason.
"""

from __future__ import annotations

import json
import math
import re

import pytest

from rewardjudge import Grade, ScorerGrader, StringThread
from rewardjudge.errors import ConfigError
from rewardjudge.evaluate import compare, evaluate_dataset, resolve_grader, summarize
from rewardjudge.scorers import (DOCUMENT_FIELDS, Scorer, ScorerRegistry, document_fields, scorer_result,
                                 with_document_fields)
from rewardjudge.testing import FakeJudgeServer, ScriptedModel, without_seal
from scorer_document import DOCUMENT_SCORER as ANATOMY

MODEL = "mistral-small-latest"
#: the document's output-type table: (output_spec, a judge reply, score_value, score_label)
OUTPUT_TYPES = [
    ({"type": "categorical", "labels": ["good", "bad"]}, {"label": "good"}, None, "good"),
    ({"type": "numeric", "min": 1, "max": 5}, {"score": 4}, 4.0, None),
    ({"type": "boolean"}, {"verdict": False}, None, "false"),
]


def with_spec(spec: dict, template: str | None = None) -> Scorer:
    config = {**ANATOMY["config"], "output_spec": spec}
    if template is not None:
        config["prompt_template"] = template
    return Scorer.from_dict({**ANATOMY, "config": config})


def support(product: str | None = "Router X") -> StringThread:
    return StringThread([("user", "My router blinks red."), ("assistant", "Restart it, then call us.")],
                        metadata={} if product is None else {"product": product})


# -- anatomy ----------------------------------------------------------------------
def test_the_anatomy_example_is_a_scorer_with_one_variable():
    scorer = Scorer.from_dict(ANATOMY)
    assert scorer.variables == ["product"] and scorer.kind == "llm_judge"
    assert scorer.config.params.seed == 42 and scorer.config.params.temperature == 0
    assert Scorer.from_dict(scorer.to_dict()).version == scorer.version


def test_the_response_lists_the_variables_under_latest_version(tmp_path):
    scorer = ScorerRegistry(tmp_path).create_from_dict(ANATOMY)
    data = scorer.to_dict()
    assert re.fullmatch(r"helpfulness-[0-9a-f]{8}", data["slug"])  # <slugified-name>-<8 hex>
    assert data["latest_version"]["variables"] == ["product"]
    assert data["latest_version"]["number"] == 1 and data["latest_version"]["id"] == scorer.version
    assert "variables" not in data and "version_number" not in data
    # the new shape and the earlier one (version, version_number, variables at the top) are both read
    earlier = {k: v for k, v in data.items() if k != "latest_version"}
    earlier.update(version=scorer.version, version_number=1, variables=["product"])
    for shape in (data, earlier):
        assert Scorer.from_dict(shape).version == scorer.version
    with pytest.raises(ConfigError, match="latest_version must be an object"):
        Scorer.from_dict({**data, "latest_version": [1]})


def test_name_or_description_never_makes_a_version_a_config_change_does(tmp_path):
    reg = ScorerRegistry(tmp_path)
    slug = reg.create_from_dict(ANATOMY).slug
    reg.update(slug, name="Helpfulness v2", description="changed")
    reg.update(slug, config=dict(ANATOMY["config"]))  # the same config: the same SHA-256
    assert reg.get(slug).to_dict()["latest_version"]["number"] == 1
    reg.update(slug, config={**ANATOMY["config"], "params": {"temperature": 0.2, "random_seed": 42}})
    assert reg.get(slug).to_dict()["latest_version"]["number"] == 2


# -- what the judge receives; the result fields ---------------------------------------
@pytest.mark.parametrize("spec,reply,score_value,score_label", OUTPUT_TYPES)
async def test_each_output_type_gives_the_documents_result_fields(spec, reply, score_value, score_label):
    judge = ScriptedModel(default=json.dumps({"reason": "Answers it.", **reply}), name=MODEL)
    grade = await ScorerGrader(with_spec(spec), judge).grade(support())
    # one chat completion with a single user message: the rendered prompt_template
    sent = judge.calls[0]["messages"]
    assert [m["role"] for m in sent] == ["user"]
    assert without_seal(sent[0]["content"]).startswith("You grade customer-support answers.")
    assert "Product: Router X" in sent[0]["content"]
    # the reason becomes the result's explanation
    assert document_fields(grade) == {"score_value": score_value, "score_label": score_label,
                                      "explanation": "Answers it."}
    result = scorer_result(grade)
    assert result["status"] == "scored" and result["scorer_version"] == with_spec(spec).version
    assert result["judge_model"] == MODEL


def test_the_mapping_is_one_table():
    assert DOCUMENT_FIELDS == {"score_value": "grade_value", "score_label": "grade_label",
                               "explanation": "grade_reasoning"}
    # a row the judge did not score has none of them
    assert document_fields(Grade(value=None, grader_key="s", error="judge HTTP 503")) == {
        "score_value": None, "score_label": None, "explanation": None}


async def test_an_optional_attribute_renders_empty_and_the_if_block_keeps_the_prompt_clean():
    template = "Grade the answer.{% if product %}\nProduct: {{ product }}{% endif %}"
    judge = ScriptedModel(default='{"reason": "ok", "score": 3}', name=MODEL)
    grade = await ScorerGrader(with_spec({"type": "numeric", "min": 1, "max": 5}, template), judge).grade(support(None))
    assert without_seal(judge.calls[0]["messages"][0]["content"]).startswith("Grade the answer.")
    assert "Product" not in judge.calls[0]["messages"][0]["content"]
    assert grade.extra["missing_variables"] == ["product"]


# -- aggregation: a categorical scorer is counted by score_label ------------------------------
LABELS = {"type": "categorical", "labels": ["good", "bad"]}  # the document's categorical example


def rows(n: int = 10) -> list[dict]:
    return [{"prompt": f"question {i}", "completion": f"answer {i}", "product": "Router X"} for i in range(n)]


def label_judge(messages, params, schema):
    n = int(re.search(r"answer (\d+)", messages[-1]["content"]).group(1))
    return json.dumps({"reason": f"row {n}", "label": "good" if n % 4 else "bad"})


def test_evaluate_dataset_counts_a_label_only_scorer_by_label(tmp_path):
    scorer = with_spec(LABELS, "Answer: {{ completion }}\nProduct: {{ product }}")
    grader = ScorerGrader(scorer, ScriptedModel(label_judge, name=MODEL))
    result = evaluate_dataset(rows(), grader, columns="prompt=prompt,completion=completion,metadata=product",
                              output_dir=tmp_path / "run", progress=False)
    s = result.summary
    assert s.counts == {"scored": 10, "penalized": 0, "unscored": 0}
    assert s.labels == {"good": 7, "bad": 3} and s.label_shares == {"good": 0.7, "bad": 0.3}
    assert s.labels_only and s.mean is None and s.p50 is None and s.ci is None  # no mean: labels only
    assert "label-only" in str(s) and "labels: good: 7  bad: 3\nlabel shares: good: 70.0%  bad: 30.0%" in str(s)
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert saved["labels"] == {"good": 7, "bad": 3} and saved["labels_only"] is True
    assert result.dataset["grade_value"] == [None] * 10 and result.dataset["grade_label"][:2] == ["bad", "good"]
    # the document's names over the results: score_label, explanation (score_value is for numeric scorers)
    doc = with_document_fields(result)
    assert doc["score_label"] == result.dataset["grade_label"] and doc["explanation"][0] == "row 0"
    assert doc["score_value"] == [None] * 10
    assert with_document_fields(tmp_path / "run")["score_label"] == doc["score_label"]
    # the grades read back are label-only grades
    assert all(g.is_label_only and g.extra["label"] in ("good", "bad") for g in result.grades())
    assert summarize(result.grades()).labels == {"good": 7, "bad": 3}
    assert (tmp_path / "run" / "histogram.png").stat().st_size > 0
    # a comparison of two label-only runs compares their labels, never a made-up mean
    c = compare(tmp_path / "run", result.grades())
    assert c.a.labels_only and c.b.labels_only and c.a.mean is None and c.n_pairs == 0
    assert c.a.label_shares == {"good": 0.7, "bad": 0.3} and "label-only verdicts (no mean)" in str(c)


def test_a_numeric_scorer_keeps_its_mean_and_its_score_value(tmp_path):
    def judge(messages, params, schema):
        n = int(re.search(r"answer (\d+)", messages[-1]["content"]).group(1))
        return json.dumps({"reason": "r", "score": 1 + n % 5})

    scorer = with_spec({"type": "numeric", "min": 1, "max": 5}, "Answer: {{ completion }}")
    result = evaluate_dataset(rows(5), ScorerGrader(scorer, ScriptedModel(judge, name=MODEL)), progress=False,
                              columns="prompt=prompt,completion=completion")
    assert result.summary.mean == 3.0 and not result.summary.labels_only and result.summary.labels == {}
    assert with_document_fields(result)["score_value"] == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_a_label_only_run_does_not_average_penalties():
    extra = {"label": "good", "labels_only": True}
    grades = [Grade(value=None, grader_key="s", status="scored", extra=extra),
              Grade(value=0.0, grader_key="s", status="penalized", error="malformed", extra={"labels_only": True})]
    s = summarize(grades)
    assert s.mean is None and s.labels == {"good": 1} and s.label_shares == {"good": 1.0}
    assert s.counts["penalized"] == 1
    # a scored grade without a number is a label-only verdict, nothing else
    with pytest.raises(ConfigError, match="numeric value"):
        Grade(value=None, grader_key="s", status="scored", extra={"label": "good"})


def test_the_eval_command_counts_a_label_only_scorer_file(tmp_path, capsys):
    from rewardjudge.cli import main

    path = tmp_path / "labels.json"
    path.write_text(json.dumps({**ANATOMY, "config": {**ANATOMY["config"], "output_spec": LABELS,
                                                       "prompt_template": "Answer: {{ completion }}"}}))
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows(4)))

    def respond(request):
        if "answer" not in request["messages"][-1]["content"]:  # the probe before any row
            return "OK"
        return label_judge(request["messages"], None, None)

    with FakeJudgeServer(respond, model=MODEL) as server:
        with pytest.raises(SystemExit) as exc:
            main(["eval", str(data), "--grader", str(path), "--judge", server.url, "--judge-model", MODEL,
                  "--output", str(tmp_path / "o"), "--no-progress"])
    out, err = capsys.readouterr()
    assert exc.value.code == 0, err
    assert "label-only" in out and "labels: good: 3  bad: 1" in out and "good: 75.0%  bad: 25.0%" in out


# -- a reward still refuses it, with the reason ------------------------------------------
def label_grader():
    return ScorerGrader(with_spec(LABELS), ScriptedModel(default='{"reason": "r", "label": "good"}', name=MODEL))


def check_refusal(err: pytest.ExceptionInfo) -> None:
    text = str(err.value)
    assert "labels without values" in text and '"values": {"good": 1.0, "bad": 0.0}' in text
    assert "evaluation counts such labels" in text


def test_a_trl_reward_function_refuses_a_label_only_scorer():
    from rewardjudge.rl import trl_reward_func

    with pytest.raises(ConfigError) as err:
        trl_reward_func(label_grader())
    check_refusal(err)


def test_verl_refuses_a_label_only_scorer():
    from rewardjudge.rl import verl_compute_score

    with pytest.raises(ConfigError) as err:
        verl_compute_score(label_grader())
    check_refusal(err)


def test_the_reward_server_refuses_a_label_only_scorer():
    from rewardjudge.serve import RewardServer

    with pytest.raises(ConfigError) as err:
        RewardServer(label_grader())
    check_refusal(err)


def test_resolve_grader_builds_a_label_only_scorer_for_evaluation(tmp_path):
    made = ScorerRegistry(tmp_path / "reg").create_from_dict(
        {**ANATOMY, "config": {**ANATOMY["config"], "output_spec": LABELS}})
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(made.to_dict()))  # the response shape, latest_version and all
    grader = resolve_grader(str(path), ScriptedModel(name=MODEL))
    assert grader.version == made.version
    grader = resolve_grader(str(tmp_path / "reg" / f"{made.slug}.json"), ScriptedModel(name=MODEL))
    assert grader.labels_only and math.isnan(Grade(value=None, grader_key="s", status="scored",
                                                   extra={"label": "good", "labels_only": True}).reward)


def test_label_only_grades_are_counted_by_judge_health_and_refused_as_rewards():
    """A labels-only grade (scored, a label, no value) is counted by judge_health but never
    averaged, and rewards_tensor refuses it with the reason instead of a TypeError."""
    import math

    from rewardjudge import ConfigError, Grade
    from rewardjudge.rl import judge_health, rewards_tensor

    labels = [Grade(None, "s", status="scored", extra={"label": "good", "labels_only": True}),
              Grade(None, "s", status="scored", extra={"label": "bad", "labels_only": True})]
    health = judge_health(labels)
    assert health["judge/scored"] == 2 and math.isnan(health["judge/reward_mean"])
    assert math.isnan(health["judge/score_mean"])
    with pytest.raises(ConfigError, match="labels-only scorer"):
        rewards_tensor(labels)
