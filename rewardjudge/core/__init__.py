"""Core helpers shared by graders; the public module is ``rewardjudge.core.structured_output``."""

__all__: list[str] = []
