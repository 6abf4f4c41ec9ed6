"""Issue 25, Build 5: the page escapes every field. In Chromium, the page is given views
of a baccarat and a Tai Sai table in which markup stands in every field: once as the
signed payloads carried it into the display (every string of every payload), once in
every value of the view itself, numbers included (what display.js draws, whatever the
server ever derives). No element the markup would make may appear in the DOM, and the
markup must show as text (the page did draw it).

The page's own server answers, over its real HTTP and event stream; only the view it
serves is the test's."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from daemon.display.server import DisplayServer
from daemon.display.view import Display
from daemon.security.signing import Signer
from hil.broker import free_port
from tests.browser.cdp import chromium
from tests.keys import TABLE_KEY, TABLE_KEYRING
from tests.unit.display.payloads import AT, correction, event, result

MARK = "x\"'><img data-pwned=\"{}\">"  # no "/": it also stands in a topic level
SIGNER = Signer(TABLE_KEY)
# Members the display needs as they are to take a payload at all (its routing, its
# signature, its numbering); every other string carries markup.
STRUCTURE = {"type", "schema", "table", "event", "sig", "journal_id", "msg_seq", "seq",
             "status", "winner", "card", "hand", "position", "draw_no", "dice", "game"}


def payloads(table: str, dice: bool) -> list[tuple[str, dict[str, Any]]]:
    """(topic kind, body): what a table publishes, of every type the page draws."""
    out: list[tuple[str, dict[str, Any]]] = [
        ("status", {"type": "status", "table": table, "state": "online", "session": 3,
                    "version": "0.1.0", "game": "tai-sai-open-cover" if dice else
                    "tiger-buffalo", "layout": "P", "at": AT,
                    "backlog": {"messages": 2, "oldest_msg_seq": 5, "oldest_at": AT}}),
        ("devices/shoe", {"type": "device", "table": table, "name": "shoe",
                          "state": "fault", "fault": "jam", "detail": "gate", "serial": "S1",
                          "firmware": "1.0", "at": AT}),
        ("alerts", {"type": "alert", "table": table, "code": "dice_watch", "clause": "5.1",
                    "detail": "d", "round_id": "r9", "at": AT}),
        ("events", {**event("shoe_loaded", None, shoe_id="shoe-1", shuffle_id=1, cards=416,
                            deck_set=1), "table": table}),
    ]
    if dice:
        for seq, d in enumerate(([1, 2, 3], [6, 6, 6], [4, 5, 6], [2, 2, 1]), 1):
            out.append(("results", {"type": "result", "table": table, "seq": seq,
                                    "round_id": f"{table}-{seq}", "status": "valid",
                                    "game": "tai-sai-open-cover", "dice": d,
                                    "total": sum(d), "tumbles": 2, "shoe_id": "s",
                                    "bets": [{"bet": "big", "result": "win", "pays": "1:1"}],
                                    "settled_at": AT, "replayed": False}))
        out.append(("events", {**event("tumble", f"{table}-5", count=3), "table": table}))
        out.append(("events", {**event("dice", f"{table}-5", dice=[3, 3, 4]),
                               "table": table}))
        out.append(("results", {**correction(5, f"{table}-2", "tai-sai-open-cover"),
                                "table": table, "round_id": f"{table}-2/correction"}))
        return out
    for seq in range(1, 9):
        out.append(("results", {**result(seq, ("banker", "player", "tie")[seq % 3]),
                                "table": table, "round_id": f"{table}-{seq}"}))
    out.append(("results", {**correction(9, f"{table}-3"), "table": table}))
    out.append(("events", {**event("betting_closed", f"{table}-10"), "table": table}))
    out.append(("events", {**event("card", f"{table}-10", card="9S", hand="player",
                                   position=1, draw_no=1), "table": table}))
    out.append(("events", {**event("result_held", f"{table}-10", detail="held"),
                           "table": table}))
    return out


def marked(value: Any, path: str, skip: set[str], numbers: bool = True) -> Any:
    """``value`` with markup in every string (and number), each naming where it stands,
    but for the members in ``skip``; keys of data dicts (devices, totals, faces) too
    when nothing is skipped."""
    if isinstance(value, dict):
        data_keys = path.endswith(("devices", "totals", "faces", "counts"))
        return {(MARK.format(f"{path}.{k}") if data_keys and not skip else k):
                v if k in skip else marked(v, f"{path}.{k}", skip, numbers)
                for k, v in value.items()}
    if isinstance(value, list):
        return [marked(v, f"{path}[{i}]", skip, numbers) for i, v in enumerate(value)]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str) or (isinstance(value, int) and numbers):
        return MARK.format(path)
    return value


def view_of_marked_payloads(numbers: bool) -> dict[str, Any]:
    """What the display made of payloads with markup in every string (and number): a
    payload it finds malformed is refused, and its refusal drawn."""
    d = Display(TABLE_KEYRING)
    for table, dice in (("t1", False), ("t2", True)):
        for kind, body in payloads(table, dice):
            d.receive(f"tables/{table}/{kind}",
                      SIGNER.seal(marked(body, kind, STRUCTURE, numbers)).encode(), AT)
    # A refusal's topic and reason are drawn too: markup in a table id of a topic.
    d.receive(f"tables/{MARK.format('topic')}/results", b"{", AT)
    return d.view()


def marked_view() -> dict[str, Any]:
    """The view of plain payloads, then markup in every value of it."""
    d = Display(TABLE_KEYRING)
    for table, dice in (("t1", False), ("t2", True)):
        for kind, body in payloads(table, dice):
            d.receive(f"tables/{table}/{kind}", SIGNER.seal(body).encode(), AT)
    d.receive("tables/t1/results", b"{", AT)  # a refusal, drawn too
    view = d.view()
    assert view["tables"]["t1"]["roads"]["bead_plate"] and view["tables"]["t2"]["dice"]
    tables = {MARK.format(f"table-{t}"): marked(v, t, set()) for t, v in
              view["tables"].items()}
    for name, v in tables.items():
        v["table"] = name  # the page selects a table by this name
        v["game"] = "tai-sai-open-cover" if "t2" in name else "tiger-buffalo"
    return {"tables": tables, "refused": marked(view["refused"], "refused", set())}


@contextlib.asynccontextmanager
async def page_server(view: dict[str, Any]) -> AsyncIterator[int]:
    """The display's HTTP side, serving ``view`` as the whole state."""
    server = DisplayServer(Display(TABLE_KEYRING), ("127.0.0.1", 1))
    server.full_state = lambda: {**view, "broker": {  # type: ignore[method-assign]
        "connected": True, "error": None, "at": AT, "broker": MARK.format("broker")}}
    port = free_port()
    http = await asyncio.start_server(server.handle, "127.0.0.1", port)
    async with http:
        yield port


PWNED = "document.querySelectorAll('[data-pwned]').length"
SHOWN = "(document.body.textContent.match(/data-pwned/g) || []).length"


async def test_issue_25_5_markup_in_every_field_stays_text() -> None:
    async with chromium() as browser:
        for name, view in (("strings of payloads", view_of_marked_payloads(False)),
                           ("strings and numbers of payloads", view_of_marked_payloads(True)),
                           ("view", marked_view())):
            assert len(view["tables"]) == 2, name
            async with page_server(view) as port:
                await browser.open(f"http://127.0.0.1:{port}/")
                await browser.until("document.querySelector('section[data-table]')")
                for table in view["tables"]:
                    await browser.evaluate(
                        f"location.hash = '#' + encodeURIComponent({json.dumps(table)})")
                    await browser.until(
                        f"document.querySelector('section[data-table]').dataset.table"
                        f" === {json.dumps(table)}")
                    # What the page drew of that table: markup as text, no element.
                    assert await browser.evaluate(PWNED) == 0, (name, table, await
                                                                browser.evaluate(
                        "[...document.querySelectorAll('[data-pwned]')]"
                        ".map((e) => e.dataset.pwned)"))
                    shown = await browser.evaluate(SHOWN)
                    assert shown >= 5, (name, table, shown)
                assert await browser.evaluate(
                    "document.getElementById('refused-list').children.length") > 0
