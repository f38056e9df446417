"""Judge prompt templates: Handlebars on pybars3, made safe for prompts."""

from .handlebars import HELPERS, Template, compile_template, template_variables

__all__ = ["HELPERS", "Template", "compile_template", "template_variables"]
