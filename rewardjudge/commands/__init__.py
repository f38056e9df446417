"""The command line (``rewardjudge COMMAND``): one private module per command,
and the judge a command's ``--judge`` names (``_judge``). The library never
imports this package (tests/test_import_graph.py checks): commands are built
on the library, not the other way round."""

__all__: list[str] = []
