"""Judge prompt templates: one interface over Handlebars (pybars3) and sandboxed Jinja2.

``PromptTemplate(source, engine="handlebars" | "jinja2", name=..., strict=...)``
is the interface; ``Template`` is the Handlebars implementation (and
``JinjaTemplate`` in ``rewardjudge.templates._jinja`` the Jinja2 one).
``prompt_template`` loads a built-in prompt from the bundles.
"""

from ._prompt import PromptTemplate
from ._handlebars import Template
from ._prompts import prompt_template

__all__ = ["PromptTemplate", "Template", "prompt_template"]
