"""What every reader of a table's topics does before it believes a payload (the display,
the watch and simulate's view, ``tabled verify``): the rule of the contract in
docs/mqtt.md, in one place. No I/O here.

A payload is the table's word only if it is the exact canonical bytes a table publishes,
signed by a trusted key, and published on the topic of the table it names. Anything else
is refused with a SignatureError, whatever its bytes: nothing a broker user publishes
can stop a reader, and no genuine payload of one table can be booked for another.
"""

from __future__ import annotations

from typing import Any

from daemon.security.signing import Keyring, SignatureError, parse_object, require_canonical, shown


def accept(raw: bytes, table: str, keyring: Keyring) -> dict[str, Any]:
    """The payload ``raw`` published on a topic of ``table``; SignatureError otherwise."""
    body = parse_object(raw)
    keyring.verify(body)
    require_canonical(raw, body)
    named = body.get("table")
    if named != table:
        # A genuine payload of one table replayed onto another's topic.
        raise SignatureError(f"signed for table {shown(repr(named))}, published on table "
                             f"{shown(repr(table))}'s topic")
    return body
