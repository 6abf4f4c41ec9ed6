"""The shipped payload schemas (daemon/mqtt/schemas/), and which one a topic's payload
answers to: shared by every test that checks what the table published."""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any

import jsonschema

NAMES = ("status", "device", "event", "result", "correction", "alert", "reply", "command",
         "snapshot", "replay")


def _load(name: str) -> jsonschema.Draft202012Validator:
    doc = json.loads((files("daemon.mqtt") / "schemas" / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(doc)
    return jsonschema.Draft202012Validator(doc)


SCHEMAS = {name: _load(name) for name in NAMES}


def document(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = SCHEMAS[name].schema  # type: ignore[assignment]
    return schema


def schema_for(part: str, payload: dict[str, Any]) -> str:
    """The schema of a payload on ``part``, the topic after ``{prefix}/{table}/``: results
    carry both results and corrections, told apart by ``type``."""
    if part.startswith("devices/"):
        return "device"
    if part.startswith("cmd/"):
        return "command"
    if part.startswith("replay/to/"):
        return "replay"
    if part.startswith("results"):  # "results", or the HIL dealer's "results:correction"
        return "correction" if payload.get("type") == "correction" else "result"
    return {"status": "status", "events": "event", "alerts": "alert", "replies": "reply",
            "snapshot": "snapshot"}[part]


def problems(seen: list[tuple[str, dict[str, Any]]]) -> list[str]:
    """Every payload of ``seen`` (topic part, payload) that its schema rejects, and why."""
    out = []
    for part, payload in seen:
        name = schema_for(part, payload)
        for err in SCHEMAS[name].iter_errors(payload):
            what = payload.get("event", payload.get("type"))
            out.append(f"{part} ({name}, {what}): {err.message} at "
                       f"{'/'.join(map(str, err.absolute_path)) or '(top)'}")
    return out
