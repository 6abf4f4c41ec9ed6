"""`tabled hil run`: play a scenario against the daemon, started as its own process the
way systemd starts it, and compare every published result with the expectations.

With no rig the devices are the simulators, scripted from the scenario: the shuffler
produces a certified order that begins with the scenario's cards, the tumbler throws
its dice. With a rig (real devices), an operator is told what to draw or press.
"""

from __future__ import annotations

import asyncio
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from daemon.games.cards import parse_cards
from daemon.games.settle import settle_cards
from firmware_protocols import shuffler as shuffler_proto
from hil import qemu_rig
from hil.broker import Mosquitto
from hil.dealer import COMMAND_FAULTS, SimDealer, prompt
from hil.errors import RunError
from hil.faults import LineFaults
from hil.process import DaemonProcess
from hil.report import Report, RoundReport, check, settle_alert_windows
from hil.rig import SimRig
from hil.scenario import Fault, Rig, Round, Scenario
from hil.settled import correct_settled
from hil.shuffler import fresh_decks
from hil.tumbler import Throw
from hil.watching import watch_lines

NOT_FLAT_TILT = 120  # tenths of a degree: well past the flat limit
LOST_READS = ("lost_read", "late_read")  # faults whose read never reaches the host in time
# Seconds: a prompt from before a fault finds the gate shut for good (the dealer waits for
# the next one), but a loaded machine opens it late (1.7 s seen, the daemon and the shoe
# starved): past this the dealer waits on only while the prompt is still the newest.
GATE_QUICK = 1.5


def shuffled_order(s: Scenario, rng: random.Random) -> list[str]:
    """The certified order: the scenario's cards first, then the rest of the decks."""
    assert s.decks is not None
    rest = Counter(fresh_decks(s.decks))
    head = s.scripted_cards()
    for c in head:
        if rest[c] > 0:
            rest[c] -= 1
    tail = list(rest.elements())
    rng.shuffle(tail)
    for c in s.shuffle.get("remove", []):
        if c in tail:
            tail.remove(c)
    return head + tail + list(s.shuffle.get("add", []))


class ScriptedDealer(SimDealer):
    """Deals exactly the scenario: draws when asked, and injects each fault where the
    scenario puts it."""

    run_ctx: RunContext

    async def play(self, r: Round) -> dict[str, Any] | None:
        self.forget()  # prompts of an earlier round must not drive this one
        self.owed = 0  # a card carried from the last round is dealt without a prompt
        self.round, self.drawn, self.round_draws = r, 0, []
        self.notes, self.answered, self.late_sent, self.answered_again = [], {}, set(), 0
        try:
            if r.dice is not None:
                await self._before_throw(r)
                return await self.throw()  # the same steps, for dice
            return await self.deal()  # the dealer loop, this round's faults in its steps
        finally:
            self.round_done, self.round = r, None

    async def deal_round(self) -> dict[str, Any]:
        """A round of a random shoe: the loop with the plain dealer's steps."""
        self.round = None
        return await super().deal_round()

    round: Round | None = None  # the scripted round being dealt; None: a random one
    drawn: int  # its cards drawn so far
    round_draws: list[int]  # their draw numbers
    notes: list[str]  # what the daemon did that the round's faults say it must not
    answered: dict[str, list[int]]  # hold id -> the draws the Pit's accepted answer named
    late_sent: set[int]  # late_read faults whose read was sent (by the round's card number)
    answered_again: int  # answers to a hold already answered (answer_again), each refused

    async def open_round(self) -> bool:
        if self.round is None:
            return await super().open_round()
        opened = await self.command("open_betting")
        if not opened["ok"] and self.tumbler is None:
            if not await self._shoe_or_alert():
                return False
            opened = await self.command("open_betting")
        return bool(opened["ok"])

    async def during_betting(self) -> None:
        for f in self.round.faults_at("betting") if self.round else ():
            if f.fault == "activate_early":  # the button before "No more bets" (5.5.3)
                assert self.tumbler and self.tumbler_port
                self.tumbler.press_button(self.tumbler_port.now())
                self.tumbler_port.kick()
            else:
                await self._force_draw()  # the daemon deals it as the next hand's first card

    async def close_round(self) -> None:
        if self.round is None:
            return await super().close_round()
        if self.tumbler is not None:
            faults = {f.fault for f in self.round.faults_at("round")}
            # The tumbler obeys the Arm "No more bets" sends, but its answer is lost; or it
            # never hears it, and the dealer presses anyway (a disarmed activation).
            self.tumbler.silent_arms = 1 if "arm_unconfirmed" in faults else 0
            self.tumbler.deaf_arms = 1 if "arm_lost" in faults else 0
        await self.command("close_betting")  # refused: the scenario's expectations say so
        return None

    async def after_card(self, n: int) -> None:
        if self.round is not None:
            await self._after(self.round, n)

    def pending_result(self) -> dict[str, Any] | None:
        if self.round is None:
            return super().pending_result()
        return self.take_result()  # after a fault it overtakes prompts sent before it

    async def held(self, body: dict[str, Any]) -> None:
        r = self.round
        if r is None:
            return await self.pit_decides(body)
        faults = {f.fault for f in r.faults_at("round")}
        hold = str(body.get("hold_id", ""))
        if hold and hold in self.answered:
            # A copy of a hold already answered: result_held is delivered at least once.
            if "answer_again" in faults:
                await self._answer_again(body)
            return None
        if body.get("reason") != "reads":
            return None  # a double draw's order: the scenario says when (confirm_order)
        draws = [int(n) for n, _ in body["reads"]]
        if "force_into_hold" in faults and len(self.round_draws) == self.drawn and \
                not any(self.answered.values()):
            await self._force_draw()  # past the locked gate: the Pit puts it in the deal
            assert self.shoe and self.shoe.shoe
            forced = self.shoe.shoe.drawn
            self.round_draws.append(forced)
            self.drawn += 1
            await self._recorded(forced)
            draws.append(forced)
        await self._late_reads(body, draws)
        await self.pit_decides(body, draws)  # the Pit reconstructs the deal (D18)
        if hold:
            self.answered[hold] = draws
            if "answer_again" in faults:
                await self._answer_again(body)
        return None

    def card_of(self, draw_no: int) -> str:
        """The Pit knows which round each card was dealt in: a draw this round never
        drew (a read lost in a round voided before it, issue 23) is "--" (D18)."""
        if self.round is not None and draw_no not in self.round_draws:
            return "--"
        return super().card_of(draw_no)

    async def _answer_again(self, body: dict[str, Any]) -> None:
        """The Pit answers a hold it has answered: refused, or the round is noted."""
        draws = self.answered[str(body["hold_id"])]
        answer = await self.command(
            "reconstruct_deal", cards=" ".join(self.card_of(n) for n in draws),
            round_id=str(body.get("round_id")), **self.answering(body))
        self.answered_again += 1
        if answer["ok"]:
            self.notes.append(f"a second answer to hold {body['hold_id']} was accepted")

    async def _late_reads(self, body: dict[str, Any], draws: list[int]) -> None:
        """A read lost on the line arrives late, once the round is held; the Pit's word
        that contradicts it (pit_says) must be refused before the true reconstruction."""
        assert self.round and self.shoe and self.shoe.shoe and self.shoe_port
        for f in self.round.faults:
            if f.fault != "late_read" or f.draw is None or f.draw in self.late_sent:
                continue
            self.late_sent.add(f.draw)
            late = self.round_draws[f.draw - 1]
            self.shoe.resend(late, self.shoe_port.now())
            self.shoe_port.kick()
            # The Pit answers once the daemon has the late read (its card_drawn), not
            # after a pause that a loaded machine may outlast.
            await self._recorded(late)
            if "pit_says" not in f.args or late not in draws:
                continue
            cards = [str(f.args["pit_says"]) if n == late else self.card_of(n) for n in draws]
            answer = await self.command("reconstruct_deal", cards=" ".join(cards),
                                        round_id=str(body.get("round_id")),
                                        **self.answering(body))
            if answer["ok"]:
                self.notes.append(f"a reconstruction with {f.args['pit_says']} at draw "
                                  f"{late} was accepted against its late read")

    async def dispute(self) -> None:
        """The shoe re-sends a wrongly read draw with the true card once the result is out
        (wrong_read): the next round must wait for the Pit (D23)."""
        r = self.round_done
        for f in r.faults if r else ():
            if f.fault != "wrong_read" or f.draw is None:
                continue
            assert self.shoe and self.shoe_port
            self.shoe.resend(self.round_draws[f.draw - 1], self.shoe_port.now())
            self.shoe_port.kick()
            await self._expect(lambda t, b: t == "events" and
                               b.get("event") == "result_disputed")
            opened = await self.command("open_betting")
            if opened["ok"]:
                self.notes.append("open_betting was accepted while the round's result was "
                                  "disputed (D23)")
            elif "confirm_result" not in str(opened.get("error")):
                self.notes.append(f"open_betting was refused without saying what it waits "
                                  f"for: {opened.get('error')}")

    round_done: Round | None = None  # the scripted round last dealt

    async def offer_insurance(self, body: dict[str, Any]) -> bool:
        if self.round is None:
            return await super().offer_insurance(body)
        if self.round.faults_at("insurance"):
            return False  # the dealer skips insurance: the next card, the window still open
        await self.command("close_insurance")
        return True

    async def next_card(self, body: dict[str, Any]) -> None:
        r = self.round
        if r is None:
            return await super().next_card(body)
        if self.owed:  # a card already out answers this prompt
            self.owed -= 1
            return
        faults = r.faults_at("draw", self.drawn + 1)
        draw_no = await self._draw_with(faults, body)
        if draw_no is None:
            return  # a prompt from before a fault: the gate stays shut, wait on
        self.drawn += 1
        while True:
            lost = any(f.fault in LOST_READS for f in faults)
            if r.faults_at("after", self.drawn) and not lost:
                # "after card n" means after the daemon has recorded it, not merely after
                # it left the shoe: otherwise a kill could race the card's record. A card
                # whose read was lost is never recorded: nothing to wait for (issue 23).
                await self._recorded(draw_no)
            restarted = any(f.fault == "kill_daemon" for f in r.faults_at("after", self.drawn))
            self.drawn += await self._after(r, self.drawn)
            if not lost or restarted:
                return None  # after a restart the dealer follows the table's prompts again
            # Nobody heard that card, but the dealer goes on by the Table of Play: the
            # next card, unprompted; or, if it was the last, the Pit reconstructs.
            if self.drawn == len(r.cards):
                if any(f.fault == "late_read" for f in faults):
                    return None  # its read comes late: the daemon holds the deal itself
                # The Pit sees the card the table never heard of: it holds the deal, then
                # answers its own hold with the reconstruction.
                held = await self.hold_round("the last card on the table was never read")
                await self.reconstruct(self.round_draws, None, held)
                return None
            faults = r.faults_at("draw", self.drawn + 1)
            next_no = await self._draw_with(faults)
            if next_no is None:
                return None
            draw_no = next_no
            self.drawn += 1

    async def _shoe_or_alert(self) -> bool:
        """A new shoe; False if the daemon would not certify its shuffle (its alerts say
        why) or the shuffler did not start one."""
        if not (await self.command("new_shoe"))["ok"]:
            return False
        body = await self._expect(_shuffle_verdict)
        if body.get("event") != "shuffle_certified":
            return False
        assert self.shuffler and self.shoe and self.shoe_port
        order = list(self.shuffler.last_order)
        for draw_no, card in self.swaps.items():  # a card switched in the shoe
            order[draw_no - 1] = card
        self.swaps = {}
        first = not isinstance(self.cut_card, bool)
        cut = self.cut_card if first else len(order) - 14 if self.cut_card else None
        self.shoe.load(order, self.shoe_port.now(), cut_at=cut, cut_first=first)
        self.shoe_port.kick()
        await self._expect(lambda t, b: t == "events" and b.get("event") == "shoe_loaded")
        return True

    owed: int  # cards drawn unasked, which the next prompts will be answered by
    cut_card: bool | int  # False: none, dealt to the last card; N: out before card N + 1
    swaps: dict[int, str]  # draw number -> card switched into the next shoe loaded

    async def _force_draw(self) -> None:
        """A card pulled past the gate (a faulty gate, or a dealer forcing it)."""
        assert self.shoe and self.shoe_port
        locked, self.shoe.gate_locked = self.shoe.gate_locked, False
        self.shoe.draw(self.shoe_port.now())
        self.shoe.gate_locked = locked
        self.shoe_port.kick()

    async def _recorded(self, draw_no: int) -> None:
        body = await self._expect(lambda t, b: t == "events" and b.get("event") in (
            "card_drawn", "card") and b.get("draw_no") == draw_no)
        if prompt("events", body):  # it also asks for the next card: still to answer
            self._backlog.append(("events", body))

    def _newest(self, body: dict[str, Any] | None) -> bool:
        """``body`` is still the daemon's newest prompt: no prompt, result, hold or
        insurance window has come after it."""
        for t, b in reversed(self.seen):
            if b is body:
                return True
            if prompt(t, b, "insurance_offered", "result_held"):
                return False
        return False

    async def _draw_with(self, faults: list[Fault],
                         answering: dict[str, Any] | None = None) -> int | None:
        """The next card, once the gate opens; None if it stays shut. ``answering``: the
        prompt the card answers (None: a card drawn unprompted)."""
        assert self.shoe and self.shoe_port
        kw: dict[str, Any] = {}
        for f in faults:
            if f.fault in ("face_up", "double_draw"):
                kw[f.fault] = True
            elif f.fault == "unreadable":
                kw["read_as"] = "??"
            elif f.fault in LOST_READS:
                kw["lost"] = True
            elif f.fault == "wrong_read":
                kw["read_as"] = str(f.args["read_as"])
            elif f.fault == "draw_number":
                kw["number"] = int(f.args["value"])
            elif f.fault == "low_confidence":
                kw["confidence"] = int(f.args.get("confidence", 40))
            elif f.fault == "foreign_back" and self.shoe.shoe is not None:
                self.shoe.shoe.backs[self.shoe.shoe.drawn + 1] = int(f.args.get("deck_set",
                                                                                0xBAD))
        loop = asyncio.get_running_loop()
        start = loop.time()
        while (waited := loop.time() - start) < GATE_QUICK or (
                waited < self.PATIENCE and self._newest(answering)):
            if self.shoe.draw(self.shoe_port.now(), **kw) is not None:
                assert self.shoe.shoe is not None
                draw_no = self.shoe.shoe.drawn
                self.round_draws.append(draw_no)
                if any(f.fault == "repeat_draw" for f in faults):
                    self.shoe.resend(draw_no, self.shoe_port.now())
                self.shoe_port.kick()
                return draw_no
            await asyncio.sleep(0.01)
        if self.shoe.shoe is not None:
            self.shoe.shoe.backs.pop(self.shoe.shoe.drawn + 1, None)
        return None

    async def _after(self, r: Round, n: int) -> int:
        """Faults after the round's n-th card; returns how many extra cards were drawn."""
        extra = 0
        for f in r.faults_at("after", n):
            if f.fault == "extra_draw":
                await self._force_draw()
                self.owed += 1
                extra += 1
            else:
                await self.run_ctx.inject(f, self)
        return extra

    def _script_throws(self, r: Round, faults: dict[str, Fault]) -> bool:
        """The round's throw, and any the Pit has thrown again, as the tumbler will make
        them; True if the first reports a value out of range (no outcome: the Pit's)."""
        assert self.tumbler and r.dice is not None
        tilt = tuple(0 if flat else NOT_FLAT_TILT for flat in r.flat)
        bad = int(faults["bad_die"].args.get("value", 7)) if "bad_die" in faults else None
        dice = (bad, r.dice[1], r.dice[2]) if bad is not None else r.dice
        counted, miscounted = faults.get("tumble_count"), faults.get("device_count")
        flags: tuple[int, int, int] | None = None
        if "flat_flag" in faults:  # one die's flag as given, the others as the tilts say
            f = faults["flat_flag"]
            listed = [int(x) for x in r.flat]
            listed[int(f.args["die"]) - 1] = int(f.args["value"])
            flags = (listed[0], listed[1], listed[2])
        # This round's throw only: one scripted for a round that was voided is gone.
        self.tumbler.scripted = [Throw(
            dice, r.tumbles, (tilt[0], tilt[1], tilt[2]),
            int(counted.args["count"]) if counted else None,
            int(miscounted.args["count"]) if miscounted else None,
            int(faults["dice_confidence"].args["confidence"])
            if "dice_confidence" in faults else 97,
            announced="no_activation" not in faults, flat_flags=flags)]
        # A throw again (Tai Sai 5.14) shows the dice the fault names, thrown as it should be.
        for f in r.faults_at("after", 1):
            if f.fault == "throw_again":
                d = f.args.get("dice", list(r.dice))
                self.tumbler.scripted.append(Throw((int(d[0]), int(d[1]), int(d[2]))))
        return bad is not None or (flags is not None and max(flags) > 1)

    out_of_range: bool  # the round's throw reports a value out of range: the Pit's

    async def _before_throw(self, r: Round) -> None:
        assert self.tumbler and self.tumbler_port
        faults = {f.fault: f for f in r.faults_at("round")}
        self.out_of_range = self._script_throws(r, faults)
        if "activate_idle" in faults:  # pressed between rounds: dice that are no result
            d = faults["activate_idle"].args.get("dice", [1, 1, 1])
            self.tumbler.scripted.insert(0, Throw((int(d[0]), int(d[1]), int(d[2]))))
            self.tumbler.press_button(self.tumbler_port.now())
            self.tumbler_port.kick()
            await self._expect(lambda t, b: t == "events" and b.get("event") == "dice")

    async def press(self) -> None:
        r = self.round
        if r is None:
            return await super().press()
        assert self.tumbler and self.tumbler_port
        if any(f.fault == "arm_lost" for f in r.faults):
            tumbler = self.tumbler  # pressed once the Arm it does not obey has reached it
            await self.until(lambda: not tumbler.deaf_arms, "the Arm the tumbler loses")
            self.tumbler.press_button(self.tumbler_port.now())
            self.tumbler_port.kick()
        elif not r.faults_at("betting"):  # pressed already, before "No more bets"
            await self.press_when_armed()
        return None

    async def at_rest(self) -> None:
        r = self.round
        if r is None:
            return
        if r.faults_at("after", 1):  # after the dice came to rest
            await self._expect(lambda t, b: t == "events" and b.get("event") == "dice")
            for f in r.faults_at("after", 1):
                await self.run_ctx.inject(f, self)
                if f.fault == "throw_again":  # re-armed: the dealer presses again
                    await self.press_when_armed()
        if self.out_of_range:
            # A value out of range: no outcome, and the controller says so; the Pit voids.
            await self._expect(lambda t, b: t == "alerts" and
                               b.get("code") == "unresolved_irregularity")
            answer = await self.command("void_round", reason="the tumbler reported a value "
                                        "out of range")
            if not answer["ok"]:
                raise RunError(f"void_round refused: {answer.get('error')}")


@dataclass
class RunContext:
    """What a fault can reach: the daemon process, the broker, the simulated devices."""

    daemon: DaemonProcess
    broker: Mosquitto | None
    rig: SimRig

    async def inject(self, f: Fault, dealer: SimDealer) -> None:
        if f.fault == "kill_daemon":
            self.daemon.kill()
            dealer.forget()  # its prompts died with it
            self.daemon.start()
            # A dealer waits until the table is back before touching anything.
            await dealer._expect(lambda t, b: t == "status" and b["state"] == "online",
                                 fresh=True)
            waiting = {f"devices/{d}" for d in self.rig.ports}  # every device back in hand
            while waiting:
                body = await dealer._expect(lambda t, b: t in waiting and b["state"] == "ready",
                                            fresh=True)
                waiting.discard(f"devices/{body['name']}")
            await asyncio.sleep(0.1)  # the re-synced gate or arm reaches the device
        elif f.fault in COMMAND_FAULTS:
            await dealer.give(f)
        elif f.fault == "end_shoe":
            await dealer._expect(lambda t, b: t == "results")  # the round finishes first
            dealer._backlog.append(("results", dealer.results[-1]))  # still the round's
            await dealer.command("end_shoe")
        elif f.fault in ("unplug", "reboot"):
            device = f.args["device"]
            port = self.rig.ports[device]
            if f.fault == "unplug":
                await port.unplug()
                await asyncio.sleep(float(f.args.get("seconds", 1.0)))
                await port.replug()
            else:
                port.device.reboot(port.now())
                port.kick()
            # A dealer waits for the device's ready light (and the shoe's gate) first.
            topic = f"devices/{device}"
            await dealer._expect(lambda t, b: t == topic and b["state"] == "ready",
                                 fresh=True)
            if device == "shoe":
                await dealer._expect(lambda t, b: t == "events" and b.get("event") ==
                                     "shoe_gate", fresh=True)


async def _on_rig(s: Scenario, rig: Rig, broker: tuple[str, int] | None,
                  workdir: Path | None, out: TextIO) -> Report | None:
    """A run on real devices, or why a virtual rig cannot play the scenario; None: a
    virtual rig plays it here, as the simulators do."""
    if rig.qemu is None:
        from hil.operator import run_on_rig  # noqa: PLC0415 - real hardware only

        return await run_on_rig(s, rig, broker=broker, workdir=workdir, out=out)
    why = qemu_rig.cannot_run(s, rig.qemu)
    return Report(s, not_run=why) if why else None


async def run_scenario(s: Scenario, *, broker: tuple[str, int] | None = None,
                       rig: Rig | None = None, workdir: Path | None = None,
                       speed: float = 50.0, seed: int = 1, out: TextIO = sys.stdout
                       ) -> Report:
    if rig is not None and (elsewhere := await _on_rig(s, rig, broker, workdir, out)):
        return elsewhere
    work = workdir or Path(tempfile.mkdtemp(prefix="tabled-hil-"))
    mosquitto = None
    if broker is None:
        mosquitto = Mosquitto(work)
        mosquitto.start()
        broker = ("127.0.0.1", mosquitto.port)
    report = Report(s)
    settings: dict[str, Any] = {
        "speed": speed, "seed": seed, "table_settings": dict(s.table_settings),
        "sections": {"dice_watch": dict(s.dice_watch)} if s.dice_watch else {}}
    sim = (SimRig(work, s.game, s.layout, s.decks, broker, **settings) if rig is None else
           qemu_rig.QemuRig(work, s.game, s.layout, s.decks, broker, firmware=rig.qemu or "",
                            **settings))
    await sim.start()
    _set_up_devices(s, sim, seed)
    daemon = DaemonProcess(sim.config(), work)
    daemon.start()
    _how_to_watch(s, sim, broker, mosquitto is not None, out)
    ctx = RunContext(daemon, mosquitto, sim)
    dealer = _scripted_dealer(s, sim, broker, ctx)
    try:
        async with asyncio.timeout(60):
            async with dealer.session():
                pass
        async with dealer.session():
            for i, r in enumerate(s.rounds):
                if r.random:
                    await _random_rounds(dealer, r, report, s)
                    continue
                await _scripted_round(dealer, sim, i, r, report)
            await asyncio.sleep(0.3)  # alerts that follow the last result
        settle_alert_windows(report, dealer.seen)
    except (TimeoutError, RuntimeError) as exc:  # SimOnlyError too: the rig cannot do it
        # An exception is always truthy: its text may still be empty (a bare timeout).
        why = str(exc) or f"{type(exc).__name__} waiting for the daemon"
        report.problems.append(f"the run stopped: {why} (daemon log: {daemon.log_path})")
    finally:
        code = daemon.stop()
        if code not in (0, None):
            report.problems.append(f"the daemon exited with status {code} "
                                   f"(log: {daemon.log_path})")
        await sim.stop()
        if mosquitto is not None:
            mosquitto.cleanup()
    report.payloads = list(dealer.seen)
    for signed in [rr.result for rr in report.rounds if rr.result] + dealer.corrections:
        try:
            sim.keyring.verify(signed)
        except ValueError as exc:
            report.problems.append(f"{signed['type']} seq {signed['seq']}: {exc}")
    return report


def _set_up_devices(s: Scenario, sim: SimRig, seed: int) -> None:
    """The simulated devices as the scenario wants them: a loaded die, a scripted shoe."""
    loaded = s.tumbler.get("loaded")
    if loaded:  # a die loaded for the rounds thrown at random
        sim.sims["tumbler"].loaded = (int(loaded["die"]) - 1, int(loaded["face"]),
                                      float(loaded["probability"]))
    if not s.dice and s.scripted_cards():
        sim.sims["shuffler"].script(shuffled_order(s, random.Random(seed)))
    if not s.dice:
        sim.sims["shuffler"].foreign_cards = int(s.shuffle.get("foreign", 0))
        sim.sims["shuffler"].rng_ok = not s.shuffle.get("not_shuffled", False)


def _how_to_watch(s: Scenario, sim: SimRig, broker: tuple[str, int], private: bool,
                  out: TextIO) -> None:
    """So a scenario can be watched as it plays: the key is this run's own."""
    where = "a private Mosquitto, gone at the end" if private else "given by --broker"
    print(f"tabled hil run: {s.name}, table {sim.table_id}, broker {broker[0]}:{broker[1]} "
          f"({where})", file=out)
    for line in watch_lines(broker, sim.table_id, sim.table_key.public_key()):
        print(line, file=out)
    out.flush()


def _shuffle_verdict(topic: str, body: dict[str, Any]) -> bool:
    """What answers new_shoe: the shuffle certified or refused (shuffle_refused, its alerts
    after it), or an alert that start_shuffle was not carried out. Any other alert is about
    something else: line noise on the shoe's link while the shuffler works is one, and
    taken for a refusal it made rounds "refused" (issue 30)."""
    if topic == "events":
        return body.get("event") in ("shuffle_certified", "shuffle_refused")
    return topic == "alerts" and body.get("code") in (
        "device_command_failed", "device_command_outcome_unknown") and \
        shuffler_proto.StartShuffle.NAME in str(body.get("detail"))


def _scripted_dealer(s: Scenario, sim: SimRig, broker: tuple[str, int], ctx: RunContext,
                     kind: type[ScriptedDealer] = ScriptedDealer) -> ScriptedDealer:
    """``kind``: another dealer of the scenario (the Pit page's tests leave the Pit's
    word to the page)."""
    devices: dict[str, Any] = dict(sim.sims)
    for name, port in sim.ports.items():
        if name in ("shoe", "tumbler"):
            devices[f"{name}_port"] = port
    dealer = kind(broker[0], broker[1], sim.base, sim.dealer_key,
                            reply_timeout=15.0, **devices)
    dealer.run_ctx, dealer.owed = ctx, 0
    dealer.swaps = {int(k): v for k, v in s.shuffle.get("switch", {}).items()}
    cut = s.shuffle.get("cut_card", True)
    dealer.cut_card = cut if isinstance(cut, int) else cut is not False
    return dealer


async def _scripted_round(dealer: ScriptedDealer, sim: SimRig, i: int, r: Round,
                          report: Report) -> None:
    mark = len(dealer.seen)
    noise = [f for f in r.faults_at("round") if f.fault == "line_noise"]
    for f in noise:
        sim.ports[f.args["device"]].faults_out = LineFaults(
            bit_error_rate=float(f.args.get("ber", 1e-3)), seed=i)
    try:
        async with asyncio.timeout(60):
            result = await dealer.play(r)
    finally:
        for f in noise:
            sim.ports[f.args["device"]].faults_out = None
    if result is not None:
        async with asyncio.timeout(60):
            await dealer.dispute()
    alerts = [b["code"] for t, b in dealer.seen[mark:] if t == "alerts"]
    rr = RoundReport(i, result, alerts, check(r.expect, result, alerts), mark, r.expect,
                     windowed=True, extra=list(dealer.notes))
    if any(f.fault == "answer_again" for f in r.faults) and not dealer.answered_again:
        rr.extra.append("answer_again: no hold of the round was answered twice")
    carried = {"extra_draw", "draw_during_betting"}
    shifted = any(f.fault in carried for f in r.faults) or (
        i > 0 and any(f.fault in carried for f in report.scenario.rounds[i - 1].faults))
    if result is not None and r.cards and not shifted and "cards" not in r.expect \
            and result["status"] == "valid" and len(result["cards"]) != len(r.cards):
        rr.extra.append(f"the scenario lists {len(r.cards)} cards, the daemon dealt "
                        f"{len(result['cards'])}: fix the scenario")
    rr.mismatches += rr.extra
    report.rounds.append(rr)
    await correct_settled(dealer, r, i, report)


async def _random_rounds(dealer: SimDealer, r: Round, report: Report, s: Scenario) -> None:
    """Rounds from a random certified shoe (or dice thrown at random); each result is
    settled again independently from its cards and must match the published bets. The
    block's expectations hold over all its rounds: checked on the last, over the block."""
    game = s.rules()
    block = len(dealer.seen)
    for _ in range(r.random):
        mark = len(dealer.seen)
        async with asyncio.timeout(60):
            result = await dealer.deal_round()
        alerts = [b["code"] for t, b in dealer.seen[mark:] if t == "alerts"]
        rr = RoundReport(len(report.rounds), result, alerts)
        if result["status"] == "valid" and "cards" in result:
            again = settle_cards(game, s.layout, parse_cards([c["card"] for c in
                                                             result["cards"]]))
            expected = sorted((b.bet, b.result.value) for b in again)
            got = sorted((b["bet"], b["result"]) for b in result["bets"])
            if expected != got:
                rr.extra.append(f"bets differ from an independent settlement: "
                                f"{set(got) ^ set(expected)}")
        rr.mismatches += rr.extra
        report.rounds.append(rr)
    last = report.rounds[-1]
    last.mark, last.expect, last.windowed = block, dict(r.expect), True


def main_run(path: str, broker: tuple[str, int] | None, rig_path: str | None, speed: float,
             seed: int) -> int:
    """`tabled hil run`, its --broker already read by the command line (host, port)."""
    from hil.scenario import load_rig, load_scenario  # noqa: PLC0415

    s = load_scenario(path)  # a ScenarioError: exit 2, in the command line's main
    rig = load_rig(rig_path) if rig_path else None
    started = time.monotonic()
    report = asyncio.run(run_scenario(s, broker=broker, rig=rig, speed=speed, seed=seed))
    sys.stdout.write(report.render())
    print(f"({time.monotonic() - started:.1f}s)")
    if report.not_run:
        return 3  # neither a pass nor a mismatch: this rig cannot play it
    return 0 if report.ok else 1
