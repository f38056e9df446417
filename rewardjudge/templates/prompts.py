"""Built-in prompt sources, looked up by grader class and method.

Sources live at ``rewardjudge/templates/prompts/<GraderClass>/<method>.txt``;
shared fragments in ``rewardjudge/templates/prompts/_fragments/``.
"""

from __future__ import annotations

from importlib import resources

from ..errors import ConfigError


def prompt_source(grader_class: str, method: str, language: str | None = None) -> str:
    """The source text of a built-in prompt."""
    path = resources.files("rewardjudge").joinpath(f"templates/prompts/{grader_class}/{method}.txt")
    if not path.is_file():
        raise ConfigError(f"no built-in prompt {grader_class}/{method}")
    return path.read_text(encoding="utf-8")
