"""Core helpers shared by graders: structured output parsing.

The door exports nothing itself; its public module is
``rewardjudge.core.structured_output`` (``pydantic_parse``,
``OutputParserException``, ``render_schema``).
"""

__all__: list[str] = []
