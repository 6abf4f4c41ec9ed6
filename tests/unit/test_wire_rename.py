"""Renaming a field on the wire is a one-module change (plus its schema and docs).

Each field a result or a correction publishes is renamed in a copy of its one wire
module (daemon/mqtt/wire/result.py or correction.py) and in a copy of its schema, and
nothing else: a Tai Sai table then plays rounds, has one corrected by the Pit, and is
journalled by the real Journal as the service journals it. The published payloads carry
the new name and match the renamed schema; a table rebuilt from that journal is the
live table exactly: the journal keeps its own record of a result (daemon/round/records.py,
``Result``), which no rename on the wire reaches (issue 27, step 1)."""

from __future__ import annotations

import itertools
import json
from importlib.resources import files
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest

from daemon.games import get_game
from daemon.mqtt import wire
from daemon.mqtt.wire import correction, result
from daemon.round import checkpoint
from daemon.round.effects import Effect, Record, RoundResult
from daemon.round.records import Result
from daemon.round.tai_sai import TaiSaiTable
from daemon.store.journal import Journal
from firmware_protocols import tumbler as tp
from tests.keys import sealed

AT = 1_764_000_000.0
RESULT_FIELDS = ["type", "schema", "table", "game", "layout", "shoe_id", "shuffle_id",
                 "status", "opened_at", "closed_at", "settled_at", "rules", "dice",
                 "tumbles", "flat", "total", "void_reason", "bets"]
CORRECTION_FIELDS = ["type", "schema", "table", "game", "layout", "corrects", "status",
                     "void_reason", "by", "bets", "settled_at"]
def renamed_module(module: ModuleType, field: str, new: str) -> ModuleType:
    """``module`` with ``field`` renamed in its source: the one edit a rename needs."""
    assert module.__file__ is not None
    source = Path(module.__file__).read_text(encoding="utf-8")
    assert f'"{field}"' in source, f"{module.__name__} does not name {field!r}"
    out = ModuleType(module.__name__)
    exec(compile(source.replace(f'"{field}"', f'"{new}"'), module.__file__, "exec"),
         out.__dict__)
    return out


def renamed_schema(name: str, field: str, new: str) -> dict[str, Any]:
    schema = json.loads((files("daemon.mqtt") / "schemas" / f"{name}.schema.json").read_text())
    out: dict[str, Any] = rename_in_schema(schema, field, new)
    return out


def rename_in_schema(node: Any, field: str, new: str) -> Any:
    """Wherever the schema names the field: a key of ``properties`` (also those of its
    conditions), an entry of ``required``."""
    if isinstance(node, list):
        return [rename_in_schema(x, field, new) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: rename_in_schema(v, field, new) for k, v in node.items()}
    if isinstance(out.get("properties"), dict) and field in out["properties"]:
        out["properties"] = {new if k == field else k: v
                             for k, v in out["properties"].items()}
    if isinstance(out.get("required"), list):
        out["required"] = [new if f == field else f for f in out["required"]]
    return out


def table() -> TaiSaiTable:
    ids = itertools.count(1)
    return TaiSaiTable("ts-1", get_game("tai-sai-open-cover"), "E", clock=lambda: AT,
                       new_round_id=lambda: f"r{next(ids)}")


def play(t: TaiSaiTable) -> list[Effect]:
    """A valid round, a void one (two tumbles, 5.5.1), a valid one, and the Pit's
    correction of the first (5.6)."""
    out: list[Effect] = []
    for dice, tumbles in (((3, 4, 5), 3), ((1, 2, 3), 2), ((6, 6, 2), 4)):
        out += t.open_betting() + t.close_betting()
        out += t.command_answered("tumbler", tp.Arm(0, True))
        out += t.activated(tp.Activated(1, True))
        for n in range(1, tumbles + 1):
            out += t.tumble(tp.Tumble(n))
        out += t.settled(tp.Settled(dice, (0, 0, 0), (1, 1, 1), 97))
    return out + t.void_settled_round("pit-1", "r1", "damaged dice")


def journal(path: Path, effects: list[Effect]) -> list[dict[str, Any]]:
    """Journal ``effects`` as the service does; the results as published."""
    j = Journal(path, clock=lambda: AT)
    published = []
    for e in effects:
        if isinstance(e, Record):
            j.append(e.kind, e.body, round_id=e.round_id)
        elif isinstance(e, RoundResult):
            published.append(j.record_result(e.round_id, wire.results_payload(e.facts),
                                             "tables/ts-1/results", record=e.record.body()))
    return published


def rebuilt_is_live(path: Path, live: TaiSaiTable) -> bool:
    rebuilt = table()
    rebuilt.replay(Journal(path, clock=lambda: AT).records())
    return bool(unordered(checkpoint.body(rebuilt, table())) ==
                unordered(checkpoint.body(live, table())))


def unordered(v: Any) -> Any:
    """A checkpoint body with its dicts' entries in no order (the journal sorts a record's
    keys, so a dict folded from it has them in another order than the live one)."""
    if isinstance(v, dict):
        if set(v) == {"$dict"}:
            return sorted(json.dumps(unordered(pair), sort_keys=True) for pair in v["$dict"])
        return {k: unordered(x) for k, x in v.items()}
    if isinstance(v, list):
        return [unordered(x) for x in v]
    return v


def check_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: ModuleType,
                 schema: str, field: str) -> None:
    new = f"{field}_renamed"
    monkeypatch.setattr(wire, module.__name__.rsplit(".", 1)[1],
                        renamed_module(module, field, new))
    live = table()
    published = journal(tmp_path / "j.db", play(live))
    ours = [p for p in published if p.get(new if field == "type" else "type") == schema]
    assert ours, f"no {schema} was published"
    validator = jsonschema.Draft202012Validator(renamed_schema(schema, field, new),
                                                format_checker=jsonschema.FormatChecker())
    assert any(new in p for p in ours)  # a void round has no tumbles, for one
    for p in ours:
        assert field not in p
        validator.validate(sealed(p))
    assert rebuilt_is_live(tmp_path / "j.db", live)


@pytest.mark.parametrize("field", RESULT_FIELDS)
def test_renaming_a_result_field_is_one_module(tmp_path: Path, field: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    check_rename(tmp_path, monkeypatch, result, "result", field)


@pytest.mark.parametrize("field", CORRECTION_FIELDS)
def test_renaming_a_correction_field_is_one_module(tmp_path: Path, field: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    check_rename(tmp_path, monkeypatch, correction, "correction", field)


def test_unrenamed_the_journal_rebuilds_the_live_table(tmp_path: Path) -> None:
    """The check above can tell: as shipped, every payload matches its schema too."""
    live = table()
    effects = play(live)
    published = journal(tmp_path / "j.db", effects)
    # The journal's result records are the table's own, in its own names.
    kept = [r.body for r in Journal(tmp_path / "j.db").records() if r.kind == "result"]
    assert kept == [{"valid": True, "dice": [3, 4, 5]}, {"valid": False, "dice": [1, 2, 3]},
                    {"valid": True, "dice": [6, 6, 2]}, {"valid": False, "voids": "r1"}]
    assert kept == [e.record.body() for e in effects if isinstance(e, RoundResult)]
    assert all(Result.read(b) == Result.of(b) for b in kept)
    assert [p["type"] for p in published] == ["result"] * 3 + ["correction"]
    assert [p["status"] for p in published] == ["valid", "void", "valid", "void"]
    assert rebuilt_is_live(tmp_path / "j.db", live)
    # Every field the wire writes is renamed above (the journal adds round_id and seq).
    assert set().union(*published[:3]) - {"round_id", "seq"} == set(RESULT_FIELDS)
    assert set(published[3]) - {"round_id", "seq"} == set(CORRECTION_FIELDS)
