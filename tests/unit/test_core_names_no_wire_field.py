"""The round core names no wire field (issue 27): a field of a payload the daemon
publishes is written by the wire layer (daemon/mqtt/wire/) alone.

The names are found, not listed: every property any published schema
(daemon/mqtt/schemas/) declares, less the journal's own names (every record kind's
fields and every kind, daemon/round/records.py), which the events topic shares by
design (an event's body is its record's). Then no module of daemon/round/ nor
daemon/results.py may use one of them where a string names a field: a subscript, a
``get``/``pop``/``setdefault``, an ``in`` test, a dict's key.

Two places are not the round core's naming, and are passed over where they are:
- the upcasters (``upcast_*``, ``_VERSION_OF`` in records.py) read a record's earlier
  versions by the names the journal held then (a result's version 1 was its published
  payload: ``status``, ``corrects``), which old journals keep whatever the wire says now;
- a table's ``commands`` name the commands it takes and their arguments (the command
  schema, what the table is told, not a payload it publishes: ``status`` is a command).
"""

from __future__ import annotations

import ast
import dataclasses
import json
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

from daemon.round.records import KINDS, SERVICE

ROOT = Path(__file__).resolve().parents[2]
CORE = [*sorted((ROOT / "daemon" / "round").glob("*.py")), ROOT / "daemon" / "results.py"]
INBOUND = {"command.schema.json"}  # what the table is told, not what it publishes
READS_EARLIER_VERSIONS = ("upcast_", "_VERSION_OF")
TOLD = ("commands",)
GETTERS = {"get", "pop", "setdefault"}


def _properties(node: Any, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "properties" and isinstance(v, dict):
                out.update(v)
            _properties(v, out)
    elif isinstance(node, list):
        for v in node:
            _properties(v, out)
    return out


def wire_names() -> set[str]:
    schemas = files("daemon.mqtt") / "schemas"
    published: set[str] = set()
    for s in schemas.iterdir():
        if s.name.endswith(".schema.json") and s.name not in INBOUND:
            _properties(json.loads(s.read_text(encoding="utf-8")), published)
    return published


def journal_names() -> set[str]:
    return {f.name for c in KINDS.values() for f in dataclasses.fields(c)} | set(KINDS) \
        | SERVICE


WIRE_ONLY = frozenset(wire_names() - journal_names())


def _field_strings(node: ast.AST) -> Iterator[ast.Constant]:
    """The strings under ``node`` used to name a field of a mapping."""
    for n in ast.walk(node):
        keys: list[ast.expr | None] = []
        if isinstance(n, ast.Subscript):
            keys = [n.slice]
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                n.func.attr in GETTERS and n.args:
            keys = [n.args[0]]
        elif isinstance(n, ast.Compare) and any(isinstance(o, ast.In | ast.NotIn)
                                                for o in n.ops):
            keys = [n.left]
        elif isinstance(n, ast.Dict):
            keys = list(n.keys)
        yield from (k for k in keys if isinstance(k, ast.Constant) and isinstance(k.value, str))


def _scopes(tree: ast.Module) -> Iterator[tuple[str, ast.AST]]:
    """Each top-level statement, and each method of a class, with its name."""
    for stmt in tree.body:
        if isinstance(stmt, ast.ClassDef):
            for sub in stmt.body:
                name = getattr(sub, "name", "")
                yield f"{stmt.name}.{name}" if name else stmt.name, sub
        elif isinstance(stmt, ast.FunctionDef):
            yield stmt.name, stmt
        else:
            targets = [t.id for t in getattr(stmt, "targets", [getattr(stmt, "target", None)])
                       if isinstance(t, ast.Name)]
            yield (targets[0] if targets else ""), stmt


def wire_fields_named(source: str, names: frozenset[str] = WIRE_ONLY
                      ) -> list[tuple[str, int, str]]:
    """(scope, line, name) for each wire-only field ``source`` names, less the upcasters'
    and the commands' (above)."""
    out = []
    for scope, node in _scopes(ast.parse(source)):
        last = scope.rsplit(".", 1)[-1]
        if last.startswith(READS_EARLIER_VERSIONS) or last in TOLD:
            continue
        out += [(scope, c.lineno, c.value) for c in _field_strings(node) if c.value in names]
    return out


def test_the_round_core_names_no_field_only_the_wire_has() -> None:
    named = {p.relative_to(ROOT).as_posix(): wire_fields_named(p.read_text(encoding="utf-8"))
             for p in CORE}
    assert {k: v for k, v in named.items() if v} == {}


def test_the_round_core_names_no_schema() -> None:
    ids = [p.name for p in CORE if '"tabled/' in p.read_text(encoding="utf-8")]
    assert ids == []


def test_the_names_are_the_wires_own() -> None:
    """The list is what a rename on the wire may touch, and the scan finds them: the
    result's three fields the fold used to read back (issue 27), in the shapes it read
    them in, and the names the upcasters and the commands use where they are."""
    assert {"status", "corrects", "winner", "void_reason", "bets", "seq", "schema",
            "msg_seq", "next"} <= WIRE_ONLY
    assert not {"dice", "card", "hand", "draw_no", "valid", "voids"} & WIRE_ONLY
    old_fold = '''
class Table:
    def _fold_result(self, r):
        if "corrects" in r.body:
            self.published[r.body["corrects"]] = "corrected"
        self.published[r.round_id] = r.body.get("status", "valid")
        return {"status": "valid", "dice": [1, 2, 3]}
'''
    assert sorted(wire_fields_named(old_fold)) == [
        ("Table._fold_result", 4, "corrects"), ("Table._fold_result", 5, "corrects"),
        ("Table._fold_result", 6, "status"), ("Table._fold_result", 7, "status")]
    records = (ROOT / "daemon" / "round" / "records.py").read_text(encoding="utf-8")
    lifecycle = (ROOT / "daemon" / "round" / "lifecycle.py").read_text(encoding="utf-8")
    assert {n for _, _, n in wire_fields_named(records, WIRE_ONLY)} == set()
    assert {"status", "corrects"} <= {c.value for c in _field_strings(ast.parse(records))}
    assert "status" in {c.value for c in _field_strings(ast.parse(lifecycle))}
