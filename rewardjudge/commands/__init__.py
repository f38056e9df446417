"""The command line (``rewardjudge COMMAND``): one private module per command; the library never imports it."""

__all__: list[str] = []
