"""The public surface: sorted __all__, every name importable, seed import paths."""

from __future__ import annotations

import importlib

import pytest

PACKAGES = ["rewardjudge", "rewardjudge.attacks", "rewardjudge.catalog", "rewardjudge.evaluate", "rewardjudge.graders",
            "rewardjudge.models", "rewardjudge.rl", "rewardjudge.scorers", "rewardjudge.templates",
            "rewardjudge.testing"]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_is_sorted_and_importable(name):
    mod = importlib.import_module(name)
    assert list(mod.__all__) == sorted(mod.__all__)
    for attr in mod.__all__:
        assert hasattr(mod, attr), f"{name}.{attr}"


def test_seed_import_paths():
    from rewardjudge import Grade, StringThread  # noqa: F401
    from rewardjudge.core.structured_output import (OutputParserException, pydantic_parse,  # noqa: F401
                                                    render_schema)
    from rewardjudge.graders.templated_prompt_judge import (BinaryJudgeOutput,  # noqa: F401
                                                            TemplatedPromptJudgeGrader)
    from rewardjudge.models import InferenceModel, OpenAIModel, spawn_judge  # noqa: F401
    from rewardjudge.testing import FakeJudgeServer, ScriptedModel  # noqa: F401


#: the one door: what ``rewardjudge`` exports. Changing it is an API change: update on purpose.
ROOT_API = [
    "BinaryJudgeOutput", "CachedModel", "CandidateJudgeGrader", "ConfigError", "CriterionJudgeGrader",
    "Grade", "GradedJudgeOutput", "Grader", "InferenceModel", "JudgeConnectionError", "JudgeError",
    "JudgeHTTPError", "JudgeOutput", "JudgeResponseError", "JudgeStartupError", "JudgeTimeoutError",
    "OpenAIModel", "OutputParserException", "ProbabilityJudgeGrader", "RewardJudgeError", "Scale",
    "Scorer", "ScorerGrader", "StringThread", "TemplateContextError", "TemplateError", "TemplateVariableError",
    "TemplatedPromptJudgeGrader", "TorchModel", "evaluate_dataset", "judge_health", "spawn_judge",
    "trl_reward_funcs", "verl_compute_score",
]


def test_the_root_exports_exactly_the_documented_names():
    import rewardjudge

    assert rewardjudge.__all__ == ROOT_API


def test_the_quickstart_needs_one_import():
    import subprocess
    import sys

    # a fresh interpreter: the root import is light (torch loads only with TorchModel & co.)
    code = ("import sys, rewardjudge\n"
            "from rewardjudge import (StringThread, TemplatedPromptJudgeGrader, BinaryJudgeOutput,\n"
            "                         OpenAIModel, spawn_judge, Grade)\n"
            "assert 'torch' not in sys.modules, 'import rewardjudge pulled in torch'\n"
            "from rewardjudge import TorchModel, evaluate_dataset\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


def test_an_unknown_root_name_is_an_attribute_error():
    import rewardjudge

    with pytest.raises(AttributeError):
        rewardjudge.NoSuchGrader  # noqa: B018
