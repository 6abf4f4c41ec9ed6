"""Scenarios on a real rig: the daemon opens the rig's real devices, and a person at the
table is told what to do (draw the next card, press the button, inject a fault), while
the runner checks what the daemon publishes, exactly as with the simulators."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.security.signing import Keyring, SignatureError, private_key_pem, public_key_text
from hil.broker import Mosquitto
from hil.dealer import COMMAND_FAULTS, SimDealer
from hil.errors import RunError
from hil.process import DaemonProcess
from hil.report import Report, RoundReport, check, settle_alert_windows
from hil.scenario import Rig, Round, Scenario
from hil.settled import correct_settled

OPERATOR_TIMEOUT = 300.0  # a person is slower than a simulator


class OperatorDealer(SimDealer):
    out: TextIO = sys.stdout
    _given: set[tuple[int, int]]  # (round, fault index) of the command faults given

    def say(self, text: str) -> None:
        print(f">>> {text}", file=self.out, flush=True)

    PATIENCE = OPERATOR_TIMEOUT

    async def play(self, r: Round) -> dict[str, Any] | None:
        self.round, self.drawn = r, 0
        # The dealer loop (or its dice twin), each step told to the person.
        return await (self.deal() if r.dice is None else self.throw())

    async def press(self) -> None:
        if any(t == "results" for t, _ in self._backlog):
            return  # the round is over already (a void after "No more bets")
        assert self.round.dice is not None
        self.say(self._press_when_lit(list(self.round.dice)))

    @staticmethod
    def _press_when_lit(dice: list[int]) -> str:
        # The light, not the prompt, says the tumbler heard the Arm: pressed before it,
        # the throw is disarmed and goes to the Pit (Tai Sai 5.14).
        return f"press the tumbler button once its armed light is on; expected dice {dice}"

    async def at_rest(self) -> None:
        r = self.round
        if r.faults_at("after", 1):  # the Pit's word once the dice are at rest
            await self._expect(lambda t, b: t == "events" and b.get("event") == "dice",
                               OPERATOR_TIMEOUT)
            await self._commanded(r, 1)
            for f in r.faults_at("after", 1):
                if f.fault == "throw_again":
                    again = f.args.get("dice", list(r.dice or ()))
                    self.say(f"the Pit has the dice thrown again: {self._press_when_lit(again)}")

    round: Round  # the round being dealt
    drawn: int  # the cards the person was told to draw

    async def open_round(self) -> bool:
        if (await self.command("open_betting"))["ok"]:
            return True
        self.say("new shoe: when the shuffler is done, load its cards into the shoe")
        await self.command("new_shoe")
        await self._expect(lambda t, b: t == "events" and b.get("event") == "shoe_loaded",
                           OPERATOR_TIMEOUT)
        return bool((await self.command("open_betting"))["ok"])

    async def during_betting(self) -> None:
        for f in self.round.faults:
            if f.fault not in COMMAND_FAULTS:
                self.say(f"fault to inject by hand: {f.fault} {f.args} "
                         f"(draw {f.draw}, after {f.after})")

    async def close_round(self) -> None:
        await self.command("close_betting")

    async def after_card(self, n: int) -> None:
        await self._commanded(self.round, n)

    def pending_result(self) -> dict[str, Any] | None:
        return self.take_result()

    async def held(self, body: dict[str, Any]) -> None:
        if body.get("reason") in ("reads", "pit"):  # the runner plays the Pit (D18)
            cards = " ".join(self.round.cards[:len(body["reads"])])
            self.say(f"a draw had no trustworthy read: the runner reconstructs the "
                     f"deal as the scenario lists it: {cards}")
            answer = await self.command("reconstruct_deal", cards=cards,
                                        **self.answering(body))
            if not answer["ok"]:
                raise RunError(f"reconstruct_deal refused: {answer.get('error')}")

    async def offer_insurance(self, body: dict[str, Any]) -> bool:
        if self.round.faults_at("insurance"):
            self.say("do not offer insurance: draw on (IP 5.13)")
            return False
        self.say(f"offer insurance ({body['window']}); the runner closes it")
        await self.command("close_insurance")
        return True

    async def next_card(self, body: dict[str, Any]) -> None:
        r, n = self.round, self.drawn
        if n and await self._commanded(r, n):
            return  # the prompt answered by the command's own
        card = r.cards[n] if n < len(r.cards) else "any"
        self.drawn += 1
        needed = body.get("needed") or body.get("next")
        self.say(f"draw card {n + 1} of the round ({needed}): expected {card}")

    async def _commanded(self, r: Round, n: int) -> bool:
        """The faults that are commands (a void, a reset), after the round's n-th card:
        the runner gives them itself, signed as the operator would. Each is given once."""
        done = False
        for i, f in enumerate(r.faults):
            if f.fault not in COMMAND_FAULTS or f.after != n or (id(r), i) in self._given:
                continue
            self._given.add((id(r), i))
            await self.give(f)
            if f.fault == "void":  # its result, kept for the round: nobody deals on
                self._backlog.append(("results", await self._expect(
                    lambda t, b: t == "results", OPERATOR_TIMEOUT)))
            done = True
        return done


async def run_on_rig(s: Scenario, rig: Rig, *, broker: tuple[str, int] | None,
                     workdir: Path | None, out: TextIO) -> Report:
    work = workdir or Path(tempfile.mkdtemp(prefix="tabled-rig-"))
    mosquitto = None
    if broker is None:
        mosquitto = Mosquitto(work)
        mosquitto.start()
        broker = ("127.0.0.1", mosquitto.port)
    table_key, dealer_key = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    (work / "signing.pem").write_bytes(private_key_pem(table_key))
    (work / "signing.pem").chmod(0o600)
    table: dict[str, Any] = {"id": f"rig-{rig.name}", "game": s.game, "layout": s.layout,
                             **s.table_settings}
    if s.decks:
        table["decks"] = s.decks
    config = {**({"dice_watch": dict(s.dice_watch)} if s.dice_watch else {}),
              "table": table, "devices": {**rig.devices, "serials": rig.serials},
              "broker": {"url": f"mqtt://{broker[0]}:{broker[1]}",
                         "allow_plaintext_remote": True},
              "journal": {"path": str(work / "journal.db")},
              "signing": {"key_file": str(work / "signing.pem")},
              "commands": {"principals": {"operator": {
                  "key": public_key_text(dealer_key.public_key())}}}}
    daemon = DaemonProcess(config, work)
    daemon.start()
    dealer = OperatorDealer(broker[0], broker[1], f"tables/{table['id']}", dealer_key,
                            reply_timeout=30.0)
    dealer.out, dealer._given = out, set()
    report = Report(s)
    try:
        async with dealer.session():
            for i, r in enumerate(s.rounds):
                mark = len(dealer.seen)
                result = await dealer.play(r)
                alerts = [b["code"] for t, b in dealer.seen[mark:] if t == "alerts"]
                report.rounds.append(RoundReport(i, result, alerts,
                                                 check(r.expect, result, alerts), mark,
                                                 r.expect, windowed=True))
                await correct_settled(dealer, r, i, report)
        settle_alert_windows(report, dealer.seen)
    except (TimeoutError, RuntimeError) as exc:
        report.problems.append(f"the run stopped: {str(exc) or type(exc).__name__}")
    finally:
        daemon.stop()
        if mosquitto is not None:
            mosquitto.cleanup()
    ring = Keyring.of([table_key.public_key()])
    for signed in [rr.result for rr in report.rounds if rr.result] + dealer.corrections:
        try:
            ring.verify(signed)
        except SignatureError as exc:
            report.problems.append(f"{signed['type']} seq {signed['seq']}: {exc}")
    return report
