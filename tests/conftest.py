"""Shared fixtures: fake judges and the spawned embedded judge."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture
def fake_server():
    from rewardjudge.testing import FakeJudgeServer

    with FakeJudgeServer() as server:
        yield server
