"""The package's import graph has no cycle: not among module-level imports,
and not when the imports inside functions are counted too (a function-local
import of the package's own module must not hide a cycle; lazy imports of
optional third-party stacks are not in this graph). Imports under ``if
TYPE_CHECKING`` never run and are left out."""

from __future__ import annotations

import ast
from pathlib import Path

import rewardjudge

ROOT = Path(rewardjudge.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _top_level_imports(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            if isinstance(sub, (ast.Import, ast.ImportFrom)):
                yield sub


def _all_imports(tree: ast.Module):
    """Every import statement, in functions too, but not under ``if TYPE_CHECKING``."""
    hidden = {id(sub) for node in ast.walk(tree)
              if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) for sub in ast.walk(node)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in hidden:
            yield node


def import_graph(*, function_local: bool = False) -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    imports = _all_imports if function_local else _top_level_imports
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    base = package.split(".")
                    base = base[:len(base) - node.level + 1]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                targets = [stem] + [f"{stem}.{a.name}" for a in node.names]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_import_graph_has_no_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle)


def test_no_cycle_hides_behind_a_function_local_import():
    cycle = find_cycle(import_graph(function_local=True))
    assert cycle is None, " -> ".join(cycle)


def test_the_cycle_finder_finds_one():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_library_never_imports_the_command_line():
    # one direction: commands are built on the library (the CLI parser and
    # rewardjudge.commands import graders, models, templates...; no grader,
    # model or template imports a command, so none of them opens a judge from
    # command-line options or calls a model for a command)
    graph = import_graph(function_local=True)
    wrong = sorted(f"{m} -> {d}" for m, deps in graph.items()
                   if not (m in ("rewardjudge.cli", "rewardjudge.__main__") or m.startswith("rewardjudge.commands"))
                   for d in deps if d.startswith("rewardjudge.commands") or d == "rewardjudge.cli")
    assert not wrong, wrong


def test_templates_never_call_a_model():
    graph = import_graph(function_local=True)
    wrong = sorted(f"{m} -> {d}" for m, deps in graph.items() if m.startswith("rewardjudge.templates")
                   for d in deps if d.startswith("rewardjudge.models"))
    assert not wrong, wrong


def test_scorers_never_import_a_grader():
    # one direction: scorer configs are data the graders read (ScorerGrader lives in graders and
    # imports scorers); no scorer module imports a grader, at module level or inside a function
    graph = import_graph(function_local=True)
    wrong = sorted(f"{m} -> {d}" for m, deps in graph.items() if m.startswith("rewardjudge.scorers")
                   for d in deps if d.startswith("rewardjudge.graders"))
    assert not wrong, wrong
