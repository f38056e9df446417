"""The README's main job, against the fake server and the embedded judge."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rewardjudge.demo import demo_threads
from rewardjudge.testing import FakeJudgeServer


def test_demo_cli_against_a_judge_url():
    with FakeJudgeServer() as server:
        out = subprocess.run([sys.executable, "-m", "rewardjudge", "demo", "--judge", server.url],
                             capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for t in demo_threads():
        assert t.metadata["id"] in out.stdout
    assert "counts: {'scored': 4, 'penalized': 2, 'unscored': 0}" in out.stdout
    # group judging: one request per question; the fake judge answers JSON, not candidate
    # blocks, so those grades are unscored (judge side), never a fake 0
    assert "group counts: {'scored': 0, 'penalized': 2, 'unscored': 4}" in out.stdout
    # malformed answers never reach the judge (how often the group grader re-asks is its own business)
    sent = json.dumps(server.requests)
    assert server.request_count >= 4 + 2 and "very-high" not in sent and "Water boils at 100 C." not in sent
    failure = out.stdout.split("with the judge down")[1]
    assert " unscored " in failure and "value=None" in failure and "JudgeConnectionError" in failure
    assert "graded: " in failure  # every grade is shown with the text it graded


@pytest.mark.judge
def test_demo_on_embedded_judge():
    out = subprocess.run([sys.executable, "-m", "rewardjudge", "demo"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "'penalized': 2" in out.stdout
    graded = out.stdout.split("with the judge down")[0]  # then the third outcome: the judge down
    assert graded.count(" scored ") + graded.count(" unscored ") == 8
    # the grammar makes the embedded judge answer in candidate blocks: group judging works
    assert "group counts: {'scored': 4, 'penalized': 2, 'unscored': 0}" in out.stdout
