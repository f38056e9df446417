"""Judge prompt templates: ``PromptTemplate`` over Handlebars (``Template``) and sandboxed Jinja2;
``prompt_template`` loads a built-in prompt from the bundles. See docs/templates.md."""

from ._prompt import PromptTemplate
from ._handlebars import Template
from ._prompts import prompt_template

__all__ = ["PromptTemplate", "Template", "prompt_template"]
