"""`tabled display` in a real browser (Debian's chromium, headless, over the DevTools
protocol): a simulated table plays, the daemon and the display run as their own
processes, and the page's roads and round view are compared cell by cell with what an
independent subscriber saw on the broker.

Catch-up covered here: the daemon SIGKILLed and restarted (its outbox re-sends; the
display drops the copies); the display SIGKILLed while rounds are published and
restarted (its state file gives back what it had, its persistent MQTT session what it
missed); a display with no memory started mid-shoe (the retained snapshot and a replay
of the shoe's results: the same roads). A display started after its table stopped is
tested in tests/integration/test_display_late_join.py.

TABLED_DISPLAY_ROUNDS sets the rounds (default: a few); TABLED_SCREENSHOTS=docs writes
the page's screenshots there (docs/display-*.png are made so).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiomqtt

from daemon.display.roads import derive
from daemon.security.signing import public_key_text
from tests.browser.cdp import Browser, chromium
from tests.browser.display_process import DisplayProcess
from tests.reliability.harness import Table, sim_table

ROUNDS = int(os.environ.get("TABLED_DISPLAY_ROUNDS", "5"))
SHOTS = os.environ.get("TABLED_SCREENSHOTS")


@contextlib.asynccontextmanager
async def table_on_page(work: Path, game: str, layout: str, decks: int | None,
                        ) -> AsyncIterator[tuple[Table, DisplayProcess, Browser]]:
    """A simulated table, its display, and the page open in chromium at 1920x1080, with
    ROUNDS rounds played."""
    async with sim_table(work, game, layout, decks, speed=100) as t:
        key = work / "table.pub"
        key.write_text(public_key_text(t.rig.table_key.public_key()))
        display = DisplayProcess(work, t.broker.port, key)
        await display.start()
        try:
            async with chromium() as browser:
                await browser.open(display.url)
                await browser.until("document.querySelector('[data-link=connected]')")
                await browser.evaluate(WATCH_ROUND)
                await play(t, ROUNDS)
                yield t, display, browser
        finally:
            display.kill()


async def play(t: Table, rounds: int) -> None:
    """Rounds dealt to completion, whatever the table went through before."""
    target = len(t.results_by_seq()) + rounds
    dealer = t.rig.dealer(reply_timeout=5.0, betting_seconds=0.01)
    async with dealer.session():
        while len(t.results_by_seq()) < target:
            if t.rig.dice:  # no kills at the Tai Sai table: each throw from idle
                await dealer.deal_round()
                continue
            try:
                async with asyncio.timeout(20):
                    await dealer.resume_round()
            except (TimeoutError, RuntimeError):
                dealer.forget()


# The page's drawing, read back from the DOM: every cell with its data attributes.
READ = """(() => {
  const cells = (sel) => [...document.querySelectorAll(sel)].map((e) => ({...e.dataset}));
  const roads = {};
  for (const r of document.querySelectorAll('[data-road]')) roads[r.dataset.road] = cells(
    `[data-road="${r.dataset.road}"] > div`);
  return {roads, round: cells('.round .card'), totals: cells('.round [data-total]'),
          outcome: {...(document.querySelector('[data-outcome]') || {}).dataset},
          results: cells('ol.results li[data-seq]'), throws: cells('ol.throws li[data-seq]'),
          refused: cells('[data-refused-topic]'), devices: cells('[data-device]'),
          status: {...(document.querySelector('.health [data-status]') || {}).dataset},
          joined: !!document.querySelector('[data-joined-at]'), updates: window.tabledUpdates};
})()"""


# Every state of the round view the page showed, as it changed: (round, cards shown).
WATCH_ROUND = """(() => {
  window.roundLog = [];
  new MutationObserver(() => {
    const r = document.querySelector('[data-round]');
    if (!r) return;
    const cards = [...r.querySelectorAll('.card')].map((e) => e.dataset.card);
    const key = r.dataset.round + ':' + cards.join(',');
    const last = window.roundLog[window.roundLog.length - 1];
    if (!last || last.key !== key) window.roundLog.push({key, round: r.dataset.round, cards});
  }).observe(document.getElementById('tables'), {childList: true, subtree: true});
  return true;
})()"""


def check_card_by_card(log: list[dict[str, Any]], results: list[dict[str, Any]]) -> int:
    """Each round's cards only ever grew, and only by cards the result has; returns how
    many states showed some but not all of a round's cards."""
    final = {r["round_id"]: sorted(c["card"] for c in r.get("cards", [])) for r in results}
    partial = 0
    shown: dict[str, list[str]] = {}
    for entry in log:
        rid, cards = entry["round"], sorted(entry["cards"])
        if rid not in final:
            continue  # the round in progress at the end
        before = shown.get(rid, [])
        assert set(before) <= set(cards) <= set(final[rid]), (rid, before, cards, final[rid])
        shown[rid] = cards
        partial += 0 < len(cards) < len(final[rid])
    return partial


def pair(r: dict[str, Any], hand: str) -> str:
    ranks = {c["position"]: c["card"][0] for c in r["cards"] if c["hand"] == hand}
    return "1" if ranks.get(1) is not None and ranks.get(1) == ranks.get(2) else "0"


def check_baccarat_page(page: dict[str, Any], results: list[dict[str, Any]]) -> None:
    """The page against the broker's results, cell by cell."""
    bead = page["roads"]["bead_plate"]
    assert [int(c["seq"]) for c in bead] == [r["seq"] for r in results], "missing or doubled"
    for i, (cell, r) in enumerate(zip(bead, results, strict=True)):
        assert (int(cell["col"]), int(cell["row"])) == (i // 6, i % 6)
        winner = r["winner"] if r["status"] == "valid" else "void"
        assert cell["winner"] == winner, (cell, r)
        if r["status"] == "valid":
            assert (cell["bp"], cell["pp"]) == (pair(r, "banker"), pair(r, "player"))
            assert cell["natural"] == ("1" if r["natural"] else "0")
            tiger = r["winner"] == "banker" and r["banker_total"] == 6
            assert cell["tiger"] == ("1" if tiger else "0")
    assert not page["joined"], "the display saw this shoe from its start"
    roads = derive(results)
    big = [(int(c["col"]), int(c["row"]), int(c["seq"]), c["winner"], int(c["ties"]),
            int(c["tiesBefore"])) for c in page["roads"]["big_road"]]
    assert big == [(c.col, c.row, c.hand.seq, c.hand.winner, c.ties, c.ties_before)
                   for c in roads.big_road]
    for name, cells in roads.derived.items():
        drawn = [(int(c["col"]), int(c["row"]), c["colour"], int(c["seq"]))
                 for c in page["roads"][name]]
        assert drawn == [(c.col, c.row, c.colour, c.seq) for c in cells], name
    # The last results list: newest first, each with its winner.
    assert [int(x["seq"]) for x in page["results"]] == [r["seq"] for r in results][::-1][:8]


def check_round_view(page: dict[str, Any], last: dict[str, Any]) -> None:
    shown = sorted((c["card"], c["hand"], int(c["position"])) for c in page["round"])
    assert shown == sorted((c["card"], c["hand"], c["position"]) for c in last["cards"])
    assert [c["total"] for c in page["totals"]] == [str(last["player_total"]),
                                                    str(last["banker_total"])]
    assert page["outcome"]["outcome"] == last["winner"]


def check_health(page: dict[str, Any], t: Table) -> None:
    """Each device's state and the table's status as last published (retained)."""
    names = sorted({topic.split("/", 1)[1] for topic, _ in t.observer.seen
                    if topic.startswith("devices/")})
    assert names, "the table published no device"
    shown = {d["device"]: d["state"] for d in page["devices"]}
    assert shown == {n: t.observer.of(f"devices/{n}")[-1]["state"] for n in names}
    assert page["status"]["status"] == t.observer.of("status")[-1]["state"]


def ordered(t: Table) -> list[dict[str, Any]]:
    by_seq = t.results_by_seq()
    return [by_seq[s] for s in sorted(by_seq)]


async def settled(browser: Browser, t: Table, reader: str = READ) -> dict[str, Any]:
    """The page once it counts as many results as the observer has, and still does a
    moment later (a doubled copy still on its way would show by then)."""
    count = "+(document.querySelector('[data-results]') || {dataset: {}}).dataset.results"
    shown = None
    try:
        async with asyncio.timeout(30):
            while True:
                shown = await browser.evaluate(count)
                if shown == len(t.results_by_seq()):
                    await asyncio.sleep(0.3)
                    if await browser.evaluate(count) == len(t.results_by_seq()):
                        break
                await asyncio.sleep(0.1)
    except TimeoutError:
        state = await browser.evaluate("fetch('/state').then(r => r.json())")
        raise AssertionError(f"the page shows {shown} results, the broker had "
                             f"{sorted(t.results_by_seq())}; the display's view: "
                             f"{json.dumps(state)[:4000]}") from None
    page: dict[str, Any] = await browser.evaluate(reader)
    return page


async def shot(browser: Browser, name: str, work: Path) -> Path:
    out = Path(SHOTS) if SHOTS else work
    path = out / f"display-{name}.png"
    await browser.screenshot(path)
    return path


async def test_baccarat_page_matches_the_broker_through_kills(tmp_path: Path) -> None:
    async with table_on_page(tmp_path, "tiger-buffalo", "P", 8) as (t, display, browser):
        page = await settled(browser, t)
        results = ordered(t)
        check_baccarat_page(page, results)
        check_round_view(page, results[-1])
        check_health(page, t)
        partial = check_card_by_card(await browser.evaluate("window.roundLog"), results)
        print(f"round view: {partial} states showed part of a deal")
        assert partial > 0, "no round was ever shown before all its cards were in"
        # Everything the page loaded came from the display itself.
        loaded = await browser.evaluate(
            "performance.getEntriesByType('resource').map(e => e.name)")
        assert loaded and all(u.startswith(display.url) for u in loaded), loaded
        await shot(browser, "baccarat", tmp_path)
        await browser.viewport(800, 1280)  # a tablet, upright: one column
        await asyncio.sleep(0.2)
        await shot(browser, "baccarat-tablet", tmp_path)
        await browser.viewport(1920, 1080)
        updates = page["updates"]

        # The daemon killed in the middle of a round, and restarted: its outbox re-sends
        # what the broker had not acknowledged; nothing shows twice.
        dealer = t.rig.dealer(reply_timeout=5.0, betting_seconds=0.01)
        async with dealer.session():
            await dealer.command("open_betting")
            await dealer.command("close_betting")
        t.daemon.kill()
        t.daemon.start()
        await play(t, 2)
        page = await settled(browser, t)
        check_baccarat_page(page, ordered(t))
        assert page["updates"] > updates, "the page was not pushed anything"

        # The display killed, rounds played while it is down, then restarted; the
        # browser's event stream reconnects by itself.
        display.kill()
        await browser.until("document.querySelector('[data-link=display-down]')")
        await play(t, 2)
        await display.start()
        page = await settled(browser, t)
        results = ordered(t)
        check_baccarat_page(page, results)
        check_round_view(page, results[-1])
        check_health(page, t)

        # A new display, with no memory, started mid-shoe: it catches up from the
        # retained snapshot and a replay of the shoe's results, to the same roads.
        fresh = DisplayProcess(tmp_path, t.broker.port, tmp_path / "table.pub",
                               remembers=False)
        await fresh.start()
        try:
            await browser.send("Page.navigate", {"url": fresh.url})
            await browser.until("document.querySelector('[data-link=connected]')")
            await browser.evaluate(WATCH_ROUND)
            assert t.observer.of("snapshot"), "the table published no snapshot"
            page = await settled(browser, t)
            check_baccarat_page(page, ordered(t))
            await browser.send("Page.navigate", {"url": display.url})
            await browser.until("document.querySelector('[data-link=connected]')")
        finally:
            fresh.kill()
        results = ordered(t)

        # Forged and misplaced payloads are refused, shown as refused, and change nothing.
        genuine = dict(results[-1])
        forged = {**genuine, "winner": "player" if genuine.get("winner") != "player"
                  else "banker", "seq": genuine["seq"] + 1}
        async with aiomqtt.Client("127.0.0.1", t.broker.port) as client:
            await client.publish(f"{t.rig.base}/results", json.dumps(forged), qos=1)
            await client.publish("tables/other-table/results", json.dumps(genuine), qos=1)
            await client.publish(f"{t.rig.base}/results", b"{not json", qos=1)
        await browser.until("document.querySelectorAll('[data-refused-topic]').length >= 3")
        page = await browser.evaluate(READ)
        reasons = " | ".join(r["refusedTopic"] for r in page["refused"])
        assert f"{t.rig.base}/results" in reasons and "tables/other-table/results" in reasons
        check_baccarat_page(page, results)  # the forged seq is not on any road


async def test_tai_sai_page_matches_the_broker(tmp_path: Path) -> None:
    async with table_on_page(tmp_path, "tai-sai-open-cover", "C", None) as (t, _, browser):
        page = await settled(browser, t)
        results = ordered(t)
        throws = page["throws"]
        assert [int(x["seq"]) for x in throws] == [r["seq"] for r in results][::-1][:12]
        counts = await browser.evaluate(
            "[...document.querySelectorAll('[data-face]')].map(e => e.textContent.trim())")
        faces = [0] * 7
        for r in results:
            for d in r["dice"]:
                faces[d] += 1
        # Each face shows its die then its count, e.g. "3" + "4" -> "34".
        assert counts == [f"{f}{faces[f]}" for f in range(1, 7)]
        dice = await browser.evaluate(
            "[...document.querySelectorAll('.round [data-die]')].map(e => +e.dataset.die)")
        assert dice == results[-1]["dice"]
        await shot(browser, "tai-sai", tmp_path)


async def test_a_page_started_after_its_table_stopped_says_what_it_could_not_fetch(
        tmp_path: Path) -> None:
    """Issue 26: it said "catching up: fetching the shoe's earlier results" for ever."""
    async with sim_table(tmp_path, "tiger-buffalo", "P", 8, speed=100) as t:
        await play(t, 3)
        assert t.daemon.stop() == 0  # the retained status: offline
        key = tmp_path / "table.pub"
        key.write_text(public_key_text(t.rig.table_key.public_key()))
        display = DisplayProcess(tmp_path, t.broker.port, key, remembers=False)
        await display.start()
        try:
            async with chromium() as browser:
                await browser.open(display.url)
                line = await browser.until(
                    "(document.querySelector('[data-not-fetched]') || {}).textContent")
                await asyncio.sleep(0.5)
                assert not await browser.evaluate(
                    "!!document.querySelector('[data-catching-up]')")
                hands = await browser.evaluate(
                    "document.querySelector('[data-hands]').textContent")
                await shot(browser, "table-offline", tmp_path)
        finally:
            display.kill()
    said = " ".join(line.split())
    assert said == ("the table is offline: the shoe's 3 earlier results could not be "
                    "fetched (asked again when the table is back)"), said
    assert hands == "3", "the shoe's hand count, from the snapshot"
