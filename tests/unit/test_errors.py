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


# Bare builtin raises that stay: none reaches a user as the report of a problem.
BARE_RAISES_KEPT = {
    "daemon/config.py": 2,  # resolve_path: collected into the config's ConfigError
    "daemon/security/signing.py": 1,  # json's parse_constant hook: parse_object turns it into
                             # a SignatureError at once
    "daemon/mqtt/last_seen.py": 1,  # caught at once: the snapshot is ignored, logged
    "daemon/mqtt/envelope.py": 1,  # a payload type with no schema: a bug
    "daemon/games/dice_watch.py": 2,  # chi2 of a df or alpha the settings checked: a bug
}


def test_a_problem_is_raised_as_a_tabled_error_not_a_bare_builtin() -> None:
    bare: dict[str, int] = {}
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and \
                    isinstance(node.exc.func, ast.Name) and \
                    node.exc.func.id in ("ValueError", "RuntimeError"):
                rel = path.relative_to(ROOT).as_posix()
                bare[rel] = bare.get(rel, 0) + 1
    assert bare == BARE_RAISES_KEPT
