"""`tabled simulate`: a whole table on one machine, with nothing to configure.

The simulated shuffler sits behind the pyusb backend and the simulated shoe behind a
pty, both opened by the daemon through its real transports. The daemon runs with a
private journal and, unless a broker is given, a private Mosquitto on a free loopback
port. A simulated dealer works the table over MQTT, and each result is shown as it is
published.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from daemon.config import parse_config
from daemon.service import TableService
from hil.broker import Mosquitto
from hil.rig import SimRig

SUITS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}


def show_result(r: dict[str, Any], out: TextIO = sys.stdout) -> None:
    def hand(name: str) -> str:
        cards = [c["card"] for c in r.get("cards", []) if c["hand"] == name]
        return " ".join(c[0].replace("T", "10") + SUITS[c[1]] for c in cards)

    head = f"#{r['seq']:<4} {r['round_id'][-8:]}"
    if r["status"] == "void":
        v = r["void_reason"]
        print(f"{head}  VOID clause {v['clause']} ({v['code']}): {v['detail']}", file=out)
        return
    wins = ", ".join(f"{b['bet']} {b['pays']}" for b in r["bets"] if b["result"] == "win")
    if "dice" in r:
        print(f"{head}  dice {r['dice']} total {r['total']} ({r['tumbles']} tumbles)   "
              f"wins: {wins}", file=out, flush=True)
        return
    print(f"{head}  P {hand('player'):<14} {r['player_total']}   B {hand('banker'):<14} "
          f"{r['banker_total']}   {r['winner'].upper():<6}  wins: {wins}", file=out, flush=True)


async def simulate(game: str, layout: str, decks: int, rounds: int, *,
                   broker: tuple[str, int] | None = None, speed: float = 20.0,
                   workdir: Path | None = None, out: TextIO = sys.stdout,
                   quiet: bool = False) -> list[dict[str, Any]]:
    work = workdir or Path(tempfile.mkdtemp(prefix="tabled-simulate-"))
    mosquitto = None
    if broker is None:
        mosquitto = Mosquitto(work)
        mosquitto.start()
        broker = ("127.0.0.1", mosquitto.port)
    rig = SimRig(work, game, layout, decks, broker, speed=speed)
    await rig.start()
    cfg = parse_config(rig.config(), "simulate")
    service = TableService(cfg)
    task = asyncio.create_task(service.run())
    try:
        await service.devices_ready(15)
        if not quiet:
            shoe_text = "" if rig.dice else f", {decks} decks"
            print(f"tabled simulate: {cfg.game} layout {cfg.layout}{shoe_text}, "
                  f"{rounds} rounds; broker {broker[0]}:{broker[1]}; journal "
                  f"{cfg.journal_path}", file=out, flush=True)
        dealer = rig.dealer(on_result=(lambda r: None) if quiet else
                            (lambda r: show_result(r, out)))
        results = await dealer.run(rounds)
        if not quiet:
            valid = sum(r["status"] == "valid" for r in results)
            print(f"{len(results)} rounds published ({valid} valid, {len(results) - valid} "
                  f"void); outbox pending: {service.journal.pending_count()}", file=out)
        return results
    finally:
        await service.publisher.stop()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await rig.stop()
        if mosquitto is not None:
            mosquitto.cleanup()
