"""One root exception for the project: every exception class defined in daemon/ and hil/
derives from TabledError (and keeps its builtin base, so existing handlers still hold)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from daemon.errors import TabledError

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(p for pkg in ("daemon", "hil") for p in (ROOT / pkg).rglob("*.py"))


def exception_classes() -> list[tuple[str, str]]:
    out = []
    for path in SOURCES:
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and (b.id.endswith(("Error", "Exception")))
                    for b in node.bases):
                out.append((module, node.name))
    return out


def test_there_are_exception_classes_to_check() -> None:
    assert len(exception_classes()) >= 15


@pytest.mark.parametrize(("module", "name"), exception_classes(),
                         ids=str)
def test_every_project_exception_derives_from_tabled_error(module: str, name: str) -> None:
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, TabledError), f"{module}.{name} does not derive from TabledError"
