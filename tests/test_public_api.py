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
