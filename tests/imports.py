"""The project's import graph, read from the source with ast (nothing is imported): for
the layering and no-I/O tests."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("daemon", "hil", "firmware_protocols")

# What the I/O-free core (firmware_protocols/, daemon/games/, daemon/round/) never imports.
FORBIDDEN = {"asyncio", "serial", "serial_asyncio_fast", "usb", "socket", "time", "os",
             "threading", "select", "selectors", "subprocess", "io", "pathlib", "datetime",
             "random", "uuid", "secrets", "sqlite3", "aiomqtt", "hil", "logging",
             "structlog"}


def imported_modules(tree: ast.AST) -> set[str]:
    """Every module named by an import anywhere in the tree (inside functions too)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def _type_checking_only(tree: ast.AST) -> set[ast.AST]:
    """Imports under ``if TYPE_CHECKING:``: they never run, so they close no circle."""
    out: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            out |= {n for stmt in node.body for n in ast.walk(stmt)}
    return out


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(packages: Iterable[str] = PACKAGES) -> dict[str, set[str]]:
    """Module -> the project's modules it imports when it runs, indirectly through any
    function too (a deferred import is an import all the same). ``from pkg import name``
    is an edge to ``pkg.name`` where that is a module, else to ``pkg``."""
    paths = {module_name(p): p for pkg in packages for p in (ROOT / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_only(tree)
        edges: set[str] = set()
        for node in ast.walk(tree):
            if node in skip:
                continue
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names if a.name in paths}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    if sub in paths:
                        edges.add(sub)
                    elif node.module in paths:
                        edges.add(node.module)
        graph[name] = edges - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted: each is
    a set of modules every one of which imports, through the others, every other."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def imports_of_test_modules(tests: Path = ROOT / "tests") -> dict[str, list[str]]:
    """Test module -> the other test modules it imports from (a helper belongs in a
    helper module: a test module imported for its helpers runs its tests twice over and
    ties one suite to another's fixtures)."""
    root = tests.parent
    modules = {".".join(p.relative_to(root).with_suffix("").parts)
               for p in tests.rglob("test_*.py")}
    out: dict[str, list[str]] = {}
    for path in sorted(tests.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                named |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                named.add(node.module)
                named |= {f"{node.module}.{a.name}" for a in node.names}
        found = sorted(named & modules)
        if found:
            out[".".join(path.relative_to(root).with_suffix("").parts)] = found
    return out
