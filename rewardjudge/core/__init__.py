"""Core helpers shared by graders: structured output parsing."""
