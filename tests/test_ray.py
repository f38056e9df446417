"""The Ray Data path on a local Ray instance gives the single-process grades."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from rewardjudge.errors import ConfigError
from rewardjudge.evaluate import evaluate_dataset, resolve_grader
from rewardjudge.evaluate.ray_runner import evaluate_dataset_ray
from rewardjudge.models import OpenAIModel
from rewardjudge.testing import FakeJudgeServer

N = 120


def responder(req):
    n = int(re.search(r"Question (\d+)", req["messages"][-1]["content"]).group(1))
    return json.dumps({"reasoning": f"row {n}", "score": "PASS" if n % 3 else "FAIL"})


def data():
    return [{"question": f"Question {i}?", "id": i,
             "completion": json.dumps({"answer": "yes", "confidence": "low"}) if i % 11 else "nope"}
            for i in range(N)]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # Ray's own DataContext deprecations
def test_ray_grades_equal_single_process_grades_and_share_endpoints(tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    with FakeJudgeServer(responder) as s1, FakeJudgeServer(responder) as s2:
        grader = resolve_grader("demo", OpenAIModel(s1.url, "fake"))
        plain = evaluate_dataset(data(), grader,
                                 columns="metadata=id", output_dir=tmp_path / "plain", progress=False)
        judged = s1.request_count
        s1.requests.clear()
        # a Ray run that resumes a run whose first 40 rows were done
        ray_out = tmp_path / "ray"
        ray_out.mkdir()
        shutil.copy(tmp_path / "plain" / "manifest.json", ray_out / "manifest.json")
        shutil.copy(tmp_path / "plain" / "seal.key", ray_out / "seal.key")   # the run's seal key
        lines = (tmp_path / "plain" / "journal.jsonl").read_text().splitlines(keepends=True)
        (ray_out / "journal.jsonl").write_text("".join(lines[:40]))
        done = {json.loads(x)["row"] for x in lines[:40]}
        with pytest.raises(ConfigError, match="SPEC string or a factory"):
            evaluate_dataset_ray(data(), grader, judge_urls=[s1.url], judge_model="fake")
        result = evaluate_dataset_ray(
            data(), "demo", judge_urls=[s1.url, s2.url], judge_model="fake", columns="metadata=id",
            output_dir=ray_out, progress=False, num_actors=2, batch_size=16,
            ray_init=dict(num_cpus=2, include_dashboard=False, log_to_driver=False))
        asked = [[int(re.search(r"Question (\d+)", r["messages"][-1]["content"]).group(1))
                  for r in s.requests] for s in (s1, s2)]
    assert result.resumed == 40 and result.graded_now == N - 40
    # rows shared out by index: even rows to the first endpoint, odd to the second
    assert asked[0] and asked[1]
    assert all(i % 2 == 0 for i in asked[0]) and all(i % 2 == 1 for i in asked[1])
    assert not (set(asked[0]) | set(asked[1])) & done  # finished rows not asked again
    assert len(asked[0]) + len(asked[1]) == judged - sum(1 for i in done if i % 11)
    columns = ("grade_value", "grade_status", "grade_reasoning", "grade_raw_reply", "grade_version", "id")
    assert result.dataset.select_columns(list(columns)).to_list() == \
        plain.dataset.select_columns(list(columns)).to_list()


CANDIDATE_FACTORY = '''
from rewardjudge.graders import CandidateJudgeGrader

def make(model):
    return CandidateJudgeGrader("cand", model, scale="graded", batch_size=8, seed=5)
'''
SUBMISSION = re.compile(r'<submission id="([a-z0-9]+)">\n(.*?)</submission>', re.DOTALL)


def candidate_judge(req):
    pairs = SUBMISSION.findall(req["messages"][-1]["content"])
    return "\n".join(f'<candidate id="{cid}">\n<reasoning>read</reasoning>\n'
                     f'<grade id="{cid}">{next((c for c in text if c.isdigit()), "0")}</grade>\n</candidate>'
                     for cid, text in pairs)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_ray_hands_each_group_whole_to_one_grade_batch(tmp_path, monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "0")
    factory = tmp_path / "cand.py"
    factory.write_text(CANDIDATE_FACTORY)
    # 4 prompts x 8 answers, interleaved
    rows = [{"question": f"Question {i % 4}?", "completion": f"answer {(i * 3) % 5}", "id": i} for i in range(32)]
    with FakeJudgeServer(candidate_judge) as s1, FakeJudgeServer(candidate_judge) as s2:
        result = evaluate_dataset_ray(
            rows, f"{factory}:make", judge_urls=[s1.url, s2.url], judge_model="fake", columns="metadata=id",
            output_dir=tmp_path / "out", progress=False, num_actors=2, batch_size=2,
            ray_init=dict(num_cpus=2, include_dashboard=False, log_to_driver=False))
        # one request per prompt; the group whose first row is i goes to endpoint i % 2
        assert (s1.request_count, s2.request_count) == (2, 2)
        for s in (s1, s2):
            assert [len(SUBMISSION.findall(r["messages"][-1]["content"])) for r in s.requests] == [8, 8]
    assert result.dataset["id"] == list(range(32))
    assert [g.extra["grade"] for g in result.grades()] == [(i * 3) % 5 for i in range(32)]
