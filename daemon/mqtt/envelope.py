"""Contract v2's envelope: what every payload tabled publishes carries besides its body.

- ``schema``: the id and major version of its JSON Schema (``tabled/<type>/<major>``);
- ``table``: the table id;
- ``journal_id``: the journal that numbered it (random, made with the journal);
- ``msg_seq``: its number in that journal, contiguous over all the table's topics; null
  only for what is not in the journal (status and will, snapshot, replay markers, and
  news sent while the journal cannot be written);
- ``sig``: the table's Ed25519 signature (``daemon/security/signing.py``).

The journal adds ``journal_id`` and ``msg_seq`` when it commits a message; the rest is
added here, so one function knows the schema id of every payload type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAJOR = 2
TYPES = ("status", "device", "event", "result", "correction", "alert", "reply", "snapshot",
         "replay")


def schema_id(kind: str) -> str:
    if kind not in TYPES:
        raise ValueError(f"no schema for payload type {kind!r}")
    return f"tabled/{kind}/{MAJOR}"


def stamp(body: Mapping[str, Any], table: str) -> dict[str, Any]:
    """The payload with its ``schema`` and ``table``; ``type`` says which schema."""
    return {**body, "schema": schema_id(str(body["type"])), "table": table}


def out_of_band(body: Mapping[str, Any], table: str, journal_id: str) -> dict[str, Any]:
    """A payload the journal does not number: ``msg_seq`` is null."""
    return {**stamp(body, table), "journal_id": journal_id, "msg_seq": None}
