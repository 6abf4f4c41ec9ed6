"""The watch and the display fold a table's payloads with one fold (daemon/consumers/fold.py):
fed the same signed payloads, they keep the same results, corrections, duplicates and
status; before, the watch had a copy of its own that took a late will for news."""

from __future__ import annotations

from typing import Any

from daemon.consumers.watch import Watcher
from daemon.display.view import Display
from daemon.security.signing import Signer
from tests.keys import TABLE_KEY, TABLE_KEYRING
from tests.unit.display.payloads import AT, correction, result, v2

SIGNER = Signer(TABLE_KEY)
STATUS = {"type": "status", "table": "t1", "game": "tiger-buffalo", "layout": "P",
          "version": "0.1.0", "at": AT}


def both(messages: list[tuple[str, dict[str, Any]]]) -> tuple[Display, Watcher]:
    d, w = Display(TABLE_KEYRING), Watcher(TABLE_KEYRING)
    for kind, body in messages:
        raw = SIGNER.seal(body).encode("utf-8")
        d.receive(f"tables/t1/{kind}", raw, AT)
        w.feed(f"tables/t1/{kind}", raw)
    return d, w


def test_a_late_will_from_an_older_session_is_not_news_to_the_watch_either() -> None:
    d, w = both([("status", {**STATUS, "state": "online", "session": 5}),
                 ("status", {**STATUS, "state": "offline", "session": 4})])
    assert (w.tables["t1"].status or {})["state"] == "online"
    assert d.view()["tables"]["t1"]["status"]["state"] == "online"


def test_the_watch_and_the_display_fold_results_the_same_way() -> None:
    messages = [("results", v2(result(1), 1)), ("results", v2(result(2, "player"), 2)),
                ("results", v2(result(2, "player"), 2)),  # sent again: a duplicate
                ("results", v2(result(2, "player"), 9)),  # published again
                ("results", v2(correction(3, "t1-000001"), 4))]
    d, w = both(messages)
    shown = w.tables["t1"].shown_results()
    view = d.tables["t1"]
    results, fixes = view.corrected()
    assert [(r["seq"], r["status"]) for r in shown] == \
        [(r["seq"], r["status"]) for r in sorted([*results, *fixes],
                                                key=lambda r: int(r["seq"]))] == \
        [(1, "void"), (2, "valid"), (3, "void")]
    assert w.tables["t1"].duplicates == view.duplicates == 2
    assert w.tables["t1"].journal_id == view.journal_id == v2(result(1), 1)["journal_id"]
