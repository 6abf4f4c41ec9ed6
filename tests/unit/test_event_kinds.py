"""Every event kind the daemon can publish, found in its source, has its definition in
the shipped event schema and its row in docs/mqtt.md; the schema lists nothing more.

Kinds are the round core's typed records (daemon/round/records.py, its registry), the
service's own ``Record("kind", ...)`` and, for device reports the table journals as they
come, ``{device}_{message}`` (daemon/service/devices.py ``device_message``); this test reads them
from the registry, the source and the device catalogues, so a kind added anywhere is
seen here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from daemon.round import records
from daemon.round.baccarat import BaccaratTable
from daemon.round.tai_sai import TaiSaiTable
from firmware_protocols import shoe, shuffler, tumbler
from tests.schemas import document

ROOT = Path(__file__).resolve().parents[2]

# The call sites whose kind is not a literal, and the kinds each can make: a new one
# fails below until it is listed here with what it emits.
DYNAMIC = {
    ("daemon/round/lifecycle.py", "record.KIND"): "_rec: the round core's typed records",
    ("daemon/service/devices.py", "f'{device}_{m.NAME}'"): "device reports: device_kinds()",
}
# Typed records not published on the events topic: results go on their own topic, and a
# checkpoint is the table's state, never published.
NOT_EVENTS = {"result", "checkpoint"}


def recorded_kinds() -> tuple[set[str], set[tuple[str, str]]]:
    literal: set[str] = set()
    dynamic: set[tuple[str, str]] = set()
    for path in sorted((ROOT / "daemon").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name != "Record":
                continue
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                literal.add(first.value)
            else:
                dynamic.add((str(path.relative_to(ROOT)), ast.unparse(first)))
    return literal, dynamic


def device_kinds() -> set[str]:
    """What ``DeviceBoard.device_message`` journals (and publishes) for a recorded message."""
    recorded = BaccaratTable.RECORDED + TaiSaiTable.RECORDED
    return {f"{cat.device}_{cls.NAME}"
            for cat in (shoe.CATALOGUE, shuffler.CATALOGUE, tumbler.CATALOGUE)
            for cls in cat.by_id.values() if issubclass(cls, recorded)}


def emitted() -> set[str]:
    literal, dynamic = recorded_kinds()
    assert dynamic == set(DYNAMIC), f"list the kinds of a new call site: {dynamic}"
    return literal | device_kinds() | (set(records.KINDS) - NOT_EVENTS)


def test_the_record_named_after_an_irregularity_is_named_after_its_code() -> None:
    from daemon.games import GAMES  # noqa: PLC0415

    code = GAMES["tiger-baccarat"].irregularity("cut_card_first_card").code
    assert code == records.CutCardFirstCard.KIND


def test_every_emitted_event_kind_has_its_schema_definition() -> None:
    schema = document("event")
    enum = set(schema["properties"]["event"]["enum"])
    defs = set(schema["$defs"])
    branches = {b["if"]["properties"]["event"]["const"]: b["then"]["$ref"]
                for b in schema["allOf"]}
    kinds = emitted()
    assert kinds - enum == set(), f"published, not in the schema's enum: {kinds - enum}"
    assert enum - kinds == set(), f"in the schema, never published: {enum - kinds}"
    assert defs == enum and set(branches) == enum
    assert all(ref == f"#/$defs/{k}" for k, ref in branches.items())


def test_every_emitted_event_kind_has_its_mqtt_md_row() -> None:
    text = (ROOT / "docs" / "mqtt.md").read_text(encoding="utf-8")
    section = text.split("## `{prefix}/{table}/events`", 1)[1].split("\n## ", 1)[0]
    documented = {k for row in re.findall(r"^\| (`[^|]+) \|", section, re.M)
                  for k in re.findall(r"`([a-z_]+)`", row)}
    kinds = emitted()
    assert kinds - documented == set(), f"no row in docs/mqtt.md: {kinds - documented}"
    assert documented - kinds == set(), f"documented, never published: {documented - kinds}"
