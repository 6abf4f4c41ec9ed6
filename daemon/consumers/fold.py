"""The facts every reader of a table's published payloads folds the same way: the display
(``view.DisplayedTable``) and ``tabled watch`` (``daemon.consumers.watch.TableState``) build their
own presentation on it. No I/O here; payloads arrive verified (``daemon.consumers.verify``).

Contract v2 (docs/mqtt.md): a numbered message is new once per (journal_id, msg_seq)
(``catchup.py``); a result once per (journal_id, seq), shown from the newest journal met,
corrections applied (``corrections.py``); a will from an older session arriving late is
not news; a device's older state, replayed, does not replace a newer one.

The table's own snapshot (daemon/mqtt/snapshot.py) is a fold of the same payloads on the
producer side: it is stored in the journal at every commit and published as a contract
of its own, so it keeps its own small, exact fold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from daemon.consumers.catchup import CatchUp
from daemon.consumers.corrections import apply_corrections


@dataclass
class TableFold:
    table: str
    status: dict[str, Any] | None = None
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    results: dict[tuple[str | None, int], dict[str, Any]] = field(default_factory=dict)
    journal_id: str | None = None  # the newest journal met
    duplicates: int = 0  # messages received again (at least once delivery), counted once
    catchup: CatchUp = field(init=False)

    KEPT_RESULTS: ClassVar[int] = 2000  # the newest results (and corrections) kept

    def __post_init__(self) -> None:
        self.catchup = CatchUp(self.table)

    def fresh(self, kind: str, body: dict[str, Any]) -> bool:
        """False for a numbered message seen before (counted as a duplicate)."""
        msg, jid = body.get("msg_seq"), body.get("journal_id")
        if type(msg) is int and isinstance(jid, str) and kind != "snapshot" and \
                not self.catchup.saw(jid, msg):
            self.duplicates += 1
            return False
        return True

    def take_status(self, body: dict[str, Any]) -> bool:
        old = self.status
        # A will from an older session arriving late is not news (docs/mqtt.md).
        if (old is not None and body.get("state") == "offline" and old.get("state") == "online"
                and int(body.get("session", 0)) < int(old.get("session", 0))):
            return False
        self.status = body
        self.catchup.status(body.get("state"), body.get("session"))
        return True

    def take_device(self, name: str, body: dict[str, Any]) -> bool:
        msg, old = body.get("msg_seq"), self.devices.get(name, {}).get("msg_seq")
        if type(msg) is int and type(old) is int and msg < old:
            return False  # a replayed older state: the newer one stands
        self.devices[name] = body
        return True

    def take_result(self, body: dict[str, Any]) -> bool:
        """A result or correction; False if it was here already."""
        journal = body.get("journal_id")
        if isinstance(journal, str):
            # The newest journal met (catchup): a late copy from an older one does not
            # take the results shown back to it.
            self.journal_id = self.catchup.current or journal
        key = (journal if isinstance(journal, str) else None, int(body.get("seq", 0)))
        if key in self.results:
            self.duplicates += 1
            return False
        self.results[key] = body
        if len(self.results) > self.KEPT_RESULTS:
            del self.results[min(self.results, key=lambda k: k[1])]
        return True

    def ordered_results(self) -> list[dict[str, Any]]:
        """Results of the newest journal in seq order."""
        return sorted((r for (j, _), r in self.results.items() if j == self.journal_id),
                      key=lambda r: int(r["seq"]))

    def corrected(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Results in seq order with each correction applied (docs/mqtt.md, "Corrections":
        the corrected round reads as void, with the correction's reason), and the
        corrections themselves. A correction whose result is not here yet waits for it."""
        return apply_corrections(self.ordered_results())
