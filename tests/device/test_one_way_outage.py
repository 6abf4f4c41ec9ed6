"""Issue 24's Done-when over the daemon as its own process and the C devices (protocol
v3) behind a pty proxy that cuts host-to-device, device-to-host, or both, for 6-9 s
(5-30 s and many draws with TABLED_SOAK=1), at a random moment (outage_plan.py: seeded,
the seed printed, TABLED_OUTAGE_SEED runs it again), for every device and every cut:

- the tumbler, anywhere from just before betting closes (its arm command) until it
  settles, in the second of three rounds;
- the shoe, anywhere from just before betting closes (the gate's unlock) until the
  round's last card, the dealer drawing at her pace through the cut, in the second of
  three rounds;
- the shuffler twice: anywhere from just before its start_shuffle command is sent until
  it has shuffled (its commitment, shuffle_complete), then at a random byte of its reveal
  of the order after end_shoe (the cut may fall inside a frame). A start_shuffle lost
  with its session is followed by a status query when the shuffler is back, and sent
  again once if it never took it (found by this test's random moments: its own test at
  the end).

Judged from evidence the daemon does not make (the emulator's "sent" lines, what it
was told to do, the proxy's bytes) against what the daemon journalled and published:
every event the device's link took is journalled exactly once, in order; every round is
settled valid on its own dice or cards (none voided, none settled on a replayed event);
no command is reported failed (every one the test's table sends is one the device can
carry out); the C device dropped nothing it accepted; the shuffle is certified once and
the shoe verified once.
The cut is shown to have landed: a cut of host-to-device failed the device's link; a
cut of device-to-host alone cost the daemon its session (its heartbeat timeout)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from daemon.games.baccarat import deal
from daemon.games.cards import parse_cards
from hil.rig import SimRig
from tests.device.c_devices import (
    CDevice,
    CShufflerRig,
    Table,
    built,
    deal_one_round,
    emulator,
    results_at_least,
    sent_events,
    table,
)
from tests.device.outage_plan import DRAWS, Plan, plan
from tests.device.pty_proxy import CUTS, PtyProxy
from tests.journal_file import read_only
from tests.reliability.harness import Observer
from tests.wait import until

__all__ = ["built"]  # the fixture, shared

# The tumbler's speed, and so the time from the press to its settling (the emulator:
# three tumbles 0.4 s apart and 0.8 s to settle, divided by the speed).
TUMBLER_SPEED = 4.0
SETTLE_S = 2.0 / TUMBLER_SPEED
DEALER_PACE_S = 0.5  # between one card and the next
SHUFFLER_SPEED = 2.0
SHUFFLE_S = 1.5 / SHUFFLER_SPEED  # from start_shuffle to shuffle_complete (the emulator)
# A shuffle cut starts at the earliest this long before the dealer's new_shoe (whose
# start_shuffle reaches the line tens of ms later), at the latest when the shuffle ends.
LEAD_S = 0.25
# A reveal's frames are larger than this and nothing else the shuffler sends after a
# round is (a heartbeat: 32 bytes); the reveal of 416 cards is 16 order chunks of 102
# bytes on the line (26 cards: an 8-byte header, SESS, a 12-byte stamp, a 77-byte payload,
# CRC-32), so a cut this far into the first of them falls inside one of them.
CHUNK_READ = 60
REVEAL_BYTES = 16 * 102
# What the round core journals for each event the tumbler sends (daemon/round/tai_sai.py):
# one record per event taken, so a replayed event is a second record and a lost one none.
# dealer_button, door, command_result and the like make no record of their own here.
RECORD_OF = {"activated": "tumbler_activated", "tumble": "tumble", "settled": "dice"}
EVENT_OF = {kind: name for name, kind in RECORD_OF.items()}
CASES = [(cut, draw) for cut in CUTS for draw in range(DRAWS)]


@contextlib.asynccontextmanager
async def dealing(t: Table, proxy: PtyProxy, *devices: str) -> AsyncIterator[Any]:
    """The proxy carrying the line, the daemon started and ``devices`` ready: the dealer's
    session (the proxy stopped after it)."""
    await proxy.start()
    try:
        t.daemon.start()
        await until(lambda: all(t.ready(d) for d in devices), timeout=30)
        dealer = t.rig.dealer(reply_timeout=40)
        async with dealer.session():
            yield dealer
    finally:
        proxy.stop()


@dataclass
class Landing:
    """How a cut landed: what the device did during it, and what it cost each side."""

    plan: Plan
    inside: bool = False  # it started inside the stretch it was meant for
    before: list[str] = field(default_factory=list, repr=False)  # sent before it began
    published: int = 0  # how many events the daemon had published when it began
    events: int = 0  # events the device's link took during the cut
    failures: int = 0  # the device's link failed this often during it
    unacked: int = 0  # most frames it held unacknowledged at such a failure
    host_lost: bool = False  # the daemon's session with the device ended after it began
    dropped: dict[str, int] = field(default_factory=dict)  # bytes lost, each way

    def check(self) -> None:
        """The cut was real: host-to-device dead alone failed the device's link (eight
        timeouts and 5 s of silence: nothing else tells it); device-to-host dead ended the
        daemon's session (its heartbeat timeout, 3.5 s; its RST then reaches a device
        whose link may not have failed yet, both ways dead)."""
        assert self.inside, self
        if self.plan.cut == "to_device_cut":
            assert self.failures > 0, self
        else:
            assert self.host_lost, self


def unacked_at_failures(dev: CDevice) -> list[int]:
    """At each failure of the emulator's link ("failed N UNACKED"), the frames it held
    unacknowledged."""
    return [int(line.split()[2]) for line in dev.lines if line.startswith("failed ")]


async def cut_for(proxy: PtyProxy, dev: CDevice, observer: Observer, landing: Landing,
                  delay: float | None) -> None:
    """Cut the line ``delay`` seconds from now (None: the proxy's armed byte cuts it),
    for the plan's seconds, then mend it; ``landing`` gets what happened meanwhile."""
    if delay is None:
        await until(lambda: proxy.cut_at is not None, timeout=30)
    else:
        await asyncio.sleep(delay)
        proxy.cut(landing.plan.cut)
    failures = dev.count("failed ")
    landing.before = [name for *_, name in sent_events(dev)]
    landing.published = len(observer.of("events"))
    states = len(observer.of(f"devices/{landing.plan.device}"))
    await asyncio.sleep(landing.plan.seconds)
    proxy.mend()
    landing.events = len(sent_events(dev)) - len(landing.before)
    landing.failures = dev.count("failed ") - failures
    landing.unacked = max(unacked_at_failures(dev)[failures:], default=0)
    landing.host_lost = any(d["state"] != "ready" for d in observer.of(
        f"devices/{landing.plan.device}")[states:])
    landing.dropped = dict(proxy.dropped)


def took_nothing_it_dropped(dev: CDevice) -> None:
    """The C device's own word: no event it accepted was let go ("dropped NAME")."""
    assert not [line for line in dev.lines if line.startswith("dropped")], dev.lines


# -- the tumbler ----------------------------------------------------------------------


class ProxiedTumbler(SimRig):
    def devices(self) -> dict[str, str]:
        return {"tumbler": f"serial://{self.work / 'tumbler-line'}?baud=115200"}


def journalled(journal: Path) -> list[str]:
    """The tumbler events the daemon took, in the order it journalled them, by the
    device's name for them (the journal read-only, as another process reads it)."""
    with read_only(journal) as db:
        marks = ",".join("?" * len(EVENT_OF))
        kinds = [r[0] for r in db.execute(
            f"SELECT kind FROM journal WHERE kind IN ({marks}) ORDER BY id", tuple(EVENT_OF))]
    return [EVENT_OF[k] for k in kinds]


def tumbler_sent(dev: CDevice) -> list[str]:
    """The events the emulator's link accepted (its "sent NUM NAME" lines), in order."""
    return [name for _, _, name in sent_events(dev) if name in RECORD_OF]


@pytest.mark.parametrize(("cut", "draw"), CASES)
async def test_c_tumbler_through_a_cut_at_a_random_moment_takes_every_event_once(
        built: Path, tmp_path: Path, cut: str, draw: int) -> None:
    """Three rounds on the C tumbler, the second cut at a random moment between closing
    betting and the dice settling (the press may come during the cut, or the arm command
    may): every event its link took is journalled once, in order; every round settled
    valid on its own dice; no command reported failed."""
    how = plan("tumbler", cut, "round", draw)
    landing = Landing(how)
    thrown: list[tuple[int, ...]] = []
    async with table(tmp_path, ProxiedTumbler, "tai-sai-open-cover", "E", None,
                     {"tumbler": "C-TM-9"}) as t, \
            emulator(built, "tumbler", tmp_path / "tumbler", "--speed", str(TUMBLER_SPEED),
                     "--serial", "C-TM-9", "--seed", str(how.device_seed)) as dev:
        proxy = PtyProxy(tmp_path / "tumbler", tmp_path / "tumbler-line")
        async with dealing(t, proxy, "tumbler") as dealer:
            for n in range(3):
                dice = tuple(how.rng.randint(1, 6) for _ in range(3))
                thrown.append(dice)
                await dev.do(f"throw {dice[0]} {dice[1]} {dice[2]} 0 10 20")
                assert (await dealer.command("open_betting"))["ok"]
                press = how.rng.uniform(0.1, 0.6)  # after the arm: the dealer's hand
                cutter = None
                if n == 1:  # anywhere from the arm command to the settling
                    cutter = asyncio.create_task(cut_for(
                        proxy, dev, t.observer, landing, how.at * (press + SETTLE_S)))
                armed = dev.count("armed 1")  # an arm restated after a cut: twice
                assert (await dealer.command("close_betting"))["ok"]
                await dev.saw("armed 1", armed + 1, timeout=60)  # after a 30 s cut
                await asyncio.sleep(press)
                await dev.do("button")
                if cutter is not None:
                    await cutter
                    # it began before this round's dice settled
                    landing.inside = landing.before.count("settled") == n
                await until(results_at_least(t.observer, n + 1), timeout=60)
                if cutter is not None:
                    await asyncio.sleep(1.0)  # a replay would come now
        took, results = tumbler_sent(dev), t.observer.of("results")
        print(f"{how}: {landing}; {len(took)} events")
        landing.check()
        assert journalled(tmp_path / "journal.db") == took, (str(how), took)
        assert [r["status"] for r in results] == ["valid"] * 3, (str(how), results,
                                                                  t.observer.of("alerts"))
        assert [tuple(r["dice"]) for r in results] == thrown, (str(how), results)
        assert not t.failed_commands(), (str(how), t.failed_commands())
        took_nothing_it_dropped(dev)


# -- baccarat: the shoe and the shuffler ------------------------------------------------


class ProxiedShoe(CShufflerRig):
    """Baccarat on the C shuffler and the C shoe, the shoe behind the pty proxy."""

    def devices(self) -> dict[str, str]:
        return {**super().devices(), "shoe": f"serial://{self.work / 'shoe-line'}?baud=115200"}


class ProxiedShuffler(CShufflerRig):
    """Baccarat on the C shuffler and the C shoe, the shuffler's serial line behind the
    pty proxy."""

    def devices(self) -> dict[str, str]:
        return {**super().devices(),
                "shuffler": f"serial://{self.work / 'shuffler-line'}?baud=115200"}


PROXIED: dict[str, type[SimRig]] = {"shoe": ProxiedShoe, "shuffler": ProxiedShuffler}


@dataclass
class Baccarat:
    table: Table
    dealer: Any
    shoe: CDevice
    shuffler: CDevice
    proxy: PtyProxy
    cards: list[str]  # the shoe as loaded, in draw order


@contextlib.asynccontextmanager
async def baccarat_table(built_dir: Path, tmp_path: Path, proxied: str,
                         *shuffler_args: str) -> AsyncIterator[Baccarat]:
    """The C shuffler and the C shoe ready, ``proxied`` behind the proxy, the dealer's
    session open; no shoe yet."""
    async with table(tmp_path, PROXIED[proxied], "tiger-buffalo", "P", 8,
                     {"shoe": "C-SHOE-1", "shuffler": "C-SF-1"}) as t, \
            emulator(built_dir, "shuffler", tmp_path / "shuffler", "--speed",
                     str(SHUFFLER_SPEED), "--serial", "C-SF-1", *shuffler_args) as shuffler, \
            emulator(built_dir, "shoe", tmp_path / "shoe", "--serial", "C-SHOE-1") as shoe:
        proxy = PtyProxy(tmp_path / proxied, tmp_path / f"{proxied}-line")
        async with dealing(t, proxy, "shoe", "shuffler") as dealer:
            yield Baccarat(t, dealer, shoe, shuffler, proxy, [])


@contextlib.asynccontextmanager
async def baccarat(built_dir: Path, tmp_path: Path, how: Plan,
                   shuffling: Landing | None = None) -> AsyncIterator[Baccarat]:
    """A shoe shuffled by the C shuffler, loaded into the C shoe, betting not yet open;
    ``how.device`` behind the proxy. ``shuffling``: the shuffler's line is cut at a
    random moment from just before its start_shuffle is sent until it sends its
    commitment (shuffle_complete)."""
    async with baccarat_table(built_dir, tmp_path, how.device,
                              "--seed", str(how.device_seed)) as b:
        t, shuffler = b.table, b.shuffler
        cutter = None
        if shuffling is not None:  # from just before new_shoe's start_shuffle
            cutter = asyncio.create_task(cut_for(
                b.proxy, shuffler, t.observer, shuffling,
                shuffling.plan.at * (LEAD_S + SHUFFLE_S)))
            await asyncio.sleep(LEAD_S)
        assert (await b.dealer.command("new_shoe"))["ok"]
        if shuffling is not None and cutter is not None:
            await cutter
            shuffling.inside = "shuffle_complete" not in shuffling.before
        # Certified before the shoe is loaded, as on a table (the shuffle takes
        # longer than its message): a shoe loaded first is refused, not shuffled.
        await until(lambda: bool(t.events("shuffle_certified")), timeout=60)
        await shuffler.saw("shuffled ")
        [line] = [x for x in shuffler.lines if x.startswith("shuffled ")]
        cards = line.split()[2:]
        await shuffler.do("take")
        await shuffler.saw("taken ")
        await b.shoe.do("load " + " ".join(cards))
        await until(lambda: bool(t.events("shoe_loaded")), timeout=20)
        yield replace(b, cards=cards)


def journalled_draws(journal: Path) -> list[int]:
    """The draw numbers of every card event the daemon took from the shoe, in order: a
    card it recorded, or one it found it had recorded already (a replay)."""
    with read_only(journal) as db:
        return [json.loads(r[0])["draw_no"] for r in db.execute(
            "SELECT body FROM journal WHERE kind IN ('card_drawn', 'draw_repeated') "
            "ORDER BY id")]


def sent_cards(dev: CDevice) -> list[int]:
    return [num for _, num, name in sent_events(dev) if name == "card_drawn"]


def cards_in_round(cards: list[str]) -> int:
    """How many cards the Table of Play takes from the front of ``cards``: the dealer
    knows when her round is dealt, and stops drawing even while the line is cut (the
    gate's lock may not reach the shoe)."""
    return next(k for k in range(4, 7) if deal(parse_cards(cards[:k])).complete)


def answers(dev: CDevice) -> int:
    return sum(dev.count(word) for word in ("drew ", "locked", "full"))


async def draw_card(dev: CDevice) -> None:
    """One card, as a dealer draws it: a draw the shoe refuses (its gate still locked, or
    its link full) is tried again at her pace."""
    while True:
        asked, drew = answers(dev), dev.count("drew ")
        await dev.do("draw")
        await until(lambda: answers(dev) > asked, timeout=5)  # noqa: B023 (awaited here)
        if dev.count("drew ") > drew:
            return
        await asyncio.sleep(DEALER_PACE_S)


@pytest.mark.parametrize(("cut", "draw"), CASES)
async def test_c_shoe_through_a_cut_at_a_random_moment_takes_every_card_once(
        built: Path, tmp_path: Path, cut: str, draw: int) -> None:
    """Three baccarat rounds on the C shoe, the second cut at a random moment between
    closing betting (the gate's unlock) and its last card, the dealer drawing the round's
    cards at her pace through the cut: every card the shoe's link took is journalled
    once, in draw order; every round settled valid on the shoe's own cards, in order; no
    command reported failed."""
    how = plan("shoe", cut, "round", draw)
    landing = Landing(how)
    async with baccarat(built, tmp_path, how) as b:
        t, dev = b.table, b.shoe
        for n in range(3):
            assert (await b.dealer.command("open_betting"))["ok"]
            if n != 1:
                assert (await b.dealer.command("close_betting"))["ok"]
                await deal_one_round(t.observer, dev, n + 1)
                continue
            first = dev.count("drew ")
            needed = cards_in_round(b.cards[first:])
            cutter = asyncio.create_task(cut_for(b.proxy, dev, t.observer, landing,
                                                 how.at * (needed - 1) * DEALER_PACE_S))
            assert (await b.dealer.command("close_betting"))["ok"]
            for _ in range(needed):
                await draw_card(dev)
                await asyncio.sleep(DEALER_PACE_S)
            await cutter
            landing.inside = landing.before.count("card_drawn") < first + needed
            await until(results_at_least(t.observer, n + 1), timeout=60)
            await asyncio.sleep(1.0)  # a replay would come now
        took, results = sent_cards(dev), t.observer.of("results")
        print(f"{how}: {landing}; {len(took)} cards")
        landing.check()
        assert journalled_draws(tmp_path / "journal.db") == list(
            range(1, len(took) + 1)), (str(how), took)
        assert [r["status"] for r in results] == ["valid"] * 3, (str(how), results,
                                                                  t.observer.of("alerts"))
        settled_on = [c["card"] for r in results for c in r["cards"]]
        assert settled_on == b.cards[:len(took)], (str(how), results)
        assert not t.failed_commands(), (str(how), t.failed_commands())
        took_nothing_it_dropped(dev)


def mark_of(journal: Path, device: str) -> str | None:
    """The last (boot, event number) the daemon took from ``device``, as it journalled it."""
    with read_only(journal) as db:
        row = db.execute("SELECT value FROM meta WHERE key = ?",
                         (f"device_events:{device}",)).fetchone()
    return None if row is None else str(row[0])


@pytest.mark.parametrize(("cut", "draw"), CASES)
async def test_c_shuffler_cut_mid_shuffle_and_mid_reveal_is_certified_and_verified_once(
        built: Path, tmp_path: Path, cut: str, draw: int) -> None:
    """The C shuffler (honest), its line cut at a random moment of its shuffle, then at a
    random byte of its reveal of the order after end_shoe. The shuffle is certified once;
    the shoe is verified exactly once, on every dealt card, with no 5.5.2 alert; the
    daemon's journalled mark is the last event the shuffler's link took (nothing lost,
    nothing taken twice); no command reported failed."""
    how = plan("shuffler", cut, "reveal", draw)
    landing = Landing(how)
    shuffling = Landing(plan("shuffler", cut, "shuffle", draw))
    async with baccarat(built, tmp_path, how, shuffling) as b:
        t, dev = b.table, b.shuffler
        for name in ("open_betting", "close_betting"):
            assert (await b.dealer.command(name))["ok"]
        await deal_one_round(t.observer, b.shoe, 1)
        dealt = len(t.events("card"))
        b.proxy.cut_after(cut, CHUNK_READ, int(how.at * REVEAL_BYTES))
        cutter = asyncio.create_task(cut_for(b.proxy, dev, t.observer, landing, None))
        assert (await b.dealer.command("end_shoe"))["ok"]
        await cutter
        # Inside the reveal: the shoe was not verified when the cut began; with
        # device-to-host dead, not before it ended either (chunks were missing).
        verified = [n for n, e in enumerate(t.observer.of("events"))
                    if e.get("event") == "shuffle_verified"]
        landing.inside = (not verified or verified[0] >= landing.published) and (
            cut == "to_device_cut" or not verified)
        await until(lambda: bool(t.events("shuffle_verified")
                                 or t.events("shuffle_verification_failed")), timeout=60)
        await asyncio.sleep(2.0)  # a replayed reveal would come now
        took = sent_events(dev)
        print(f"{shuffling.plan}: {shuffling}")
        print(f"{how}: {landing}; {len(took)} events")
        shuffling.check()
        landing.check()
        assert len(t.events("shuffle_certified")) == 1, (str(shuffling.plan),
                                                          t.observer.of("alerts"))
        assert [r["status"] for r in t.observer.of("results")] == ["valid"], str(how)
        assert [v["cards_checked"] for v in t.events("shuffle_verified")] == [dealt], (
            str(how), t.observer.of("alerts"))
        assert not t.events("shuffle_verification_failed"), str(how)
        assert not [a for a in t.observer.of("alerts") if a.get("clause") == "5.5.2"]
        origin, last, _ = took[-1]
        assert mark_of(tmp_path / "journal.db", "shuffler") == f"{origin}:{last}", (
            str(how), took[-3:])
        assert not t.failed_commands(), (str(how), t.failed_commands())
        took_nothing_it_dropped(dev)


async def new_shoe_cut_both_ways(built_dir: Path, tmp_path: Path) -> tuple[Table, CDevice]:
    """new_shoe while the shuffler's line is dead both ways for 4.5 s (past the daemon's
    heartbeat timeout, 3.5 s: the session ends); then 20 s for the shuffle (0.75 s) to be
    certified. Returns the table and the shuffler, for what they said."""
    async with baccarat_table(built_dir, tmp_path, "shuffler") as b:
        b.proxy.cut("both")
        assert (await b.dealer.command("new_shoe"))["ok"]
        await asyncio.sleep(4.5)
        b.proxy.mend()
        with contextlib.suppress(TimeoutError):
            await until(lambda: bool(b.table.events("shuffle_certified")), timeout=20)
    return b.table, b.shuffler


async def test_c_shuffler_a_start_shuffle_cut_both_ways_is_asked_again_and_made_once(
        built: Path, tmp_path: Path) -> None:
    """Found by the random cut above (TABLED_OUTAGE_SEED=617, both, 0.001 of the shuffle).
    The command's answer lost, and status's too: outcome unknown, never failed. The
    daemon's heartbeat timeout ends the session, whose unacknowledged start_shuffle is
    dropped (the host's link carries nothing into the next session). Before the fix the
    shuffler never heard of it and the table waited for a shuffle forever (issue 24); now
    the daemon asks the shuffler its state when it is back, finds it ready with no
    shuffle_started, and sends start_shuffle again, once, under its own number."""
    t, shuffler = await new_shoe_cut_both_ways(built, tmp_path)
    assert not t.failed_commands(), t.failed_commands()
    [unknown] = [a["detail"] for a in t.observer.of("alerts")
                 if a.get("code") == "device_command_outcome_unknown"]
    assert unknown.startswith("start_shuffle to shuffler: outcome unknown"), unknown
    assert "sent again, once, if the shuffler shows it never took it" in unknown, unknown
    assert len(t.events("shuffle_certified")) == 1, t.observer.of("alerts")
    assert shuffler.count("rx start_shuffle") == 1, shuffler.lines[-20:]
    assert shuffler.count("repeat ") == 0, shuffler.lines[-20:]
