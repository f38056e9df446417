"""Every code block of README.md and docs/*.md runs as written.

* A ```python block runs as a script (against the embedded judge or a fake).
  One preceded by a ``<!-- not run: why -->`` line (it needs a GPU, a hub or
  a trainer cluster) is compiled, its imports run, and every name it reads
  must be imported, defined in the block or a builtin.
* A ```bash block's ``rewardjudge ...`` commands are parsed by the CLI's own
  argument parser (they are run by the tests of each command); ``make``
  lines must name a Makefile target.
* The ``>>>`` examples in the package's docstrings run as doctests.
"""

from __future__ import annotations

import ast
import builtins
import pathlib
import re
import runpy
import shlex

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^(?:<!-- not run: (?P<why>[^>]*) -->\n)?```(?P<lang>\w*)\n(?P<code>.*?)^```", re.S | re.M)


def _blocks(lang: str):
    out = []
    for page in PAGES:
        for i, m in enumerate(BLOCK.finditer(page.read_text(encoding="utf-8"))):
            if m["lang"] == lang:
                out.append(pytest.param(page.name, m["code"], m["why"], id=f"{page.name}-{i}"))
    return out


def _unbound_names(tree: ast.AST) -> set[str]:
    """Names read at module level or in functions that nothing in the block binds."""
    bound: set[str] = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            if not isinstance(node, ast.ClassDef):
                args = node.args
                bound.update(a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs])
                bound.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            pass
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - bound


@pytest.mark.parametrize("page, code, why", _blocks("python"))
def test_python_block(page, code, why, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if why is None:
        script = tmp_path / "block.py"
        script.write_text(code, encoding="utf-8")
        runpy.run_path(str(script), run_name="__main__")
        return
    tree = compile(code, f"{page} (not run: {why})", "exec", ast.PyCF_ONLY_AST)
    assert not _unbound_names(tree), f"names used but never imported or defined: {_unbound_names(tree)}"
    imports = ast.Module([n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))], [])
    namespace: dict = {}
    exec(compile(imports, page, "exec"), namespace)
    for node in imports.body:  # every imported name exists
        for alias in node.names:
            assert (alias.asname or alias.name).split(".")[0] in namespace


@pytest.mark.parametrize("page, code, why", _blocks("bash"))
def test_bash_block_commands_parse(page, code, why):
    from rewardjudge.cli import build_parser

    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    text = code.replace("\\\n", " ")
    for line in text.splitlines():
        words = shlex.split(line, comments=True)
        if not words or "..." in line:
            continue
        if words[0] == "make":
            assert re.search(rf"^{re.escape(words[1])}:", makefile, re.M), line
        elif words[0] == "rewardjudge":
            try:
                build_parser().parse_args(words[1:])
            except SystemExit as exc:
                pytest.fail(f"{page}: `{line.strip()}` does not parse (exit {exc.code})")


def _package_modules():
    import pkgutil

    import rewardjudge

    return sorted(m.name for m in pkgutil.walk_packages(rewardjudge.__path__, "rewardjudge."))


@pytest.mark.parametrize("module", _package_modules())
def test_docstring_examples_run(module):
    """The ``>>>`` examples in the package's docstrings hold as written (a stale one misleads
    whoever reads the code)."""
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), report=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {module} failed (printed above)"


@pytest.mark.parametrize("page, code, why", _blocks("json"))
def test_a_scorer_example_shows_the_judge_the_answer(page, code, why):
    """A scorer's judge sees only its rendered template: an example scorer that a reader copies must
    render the sample's answer, or every grade it gives is blind."""
    import json

    from rewardjudge import StringThread
    from rewardjudge.scorers import Scorer

    data = json.loads(code)
    if "prompt_template" not in data.get("config", {}):
        return
    sample = StringThread([("user", "Router blinks red?"), ("assistant", "Restart-it-7319.")],
                          metadata={"product": "router"})
    prompt = Scorer.from_dict(data).bind(None).render(sample)
    assert "Restart-it-7319." in str(prompt), prompt
