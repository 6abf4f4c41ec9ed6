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
import time
from pathlib import Path
from typing import Any, TextIO

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.config import parse_config
from daemon.games import get_game
from daemon.service import TableService
from daemon.signing import private_key_pem, public_key_text
from hil.broker import Mosquitto
from hil.dealer import SimDealer
from hil.ports import PtyPort, TcpPort
from hil.shoe import ShoeSim
from hil.shuffler import ShufflerSim
from hil.tumbler import TumblerSim

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
    dice = get_game(game).kind == "dice"
    ports: list[TcpPort | PtyPort] = []
    table: dict[str, Any] = {"id": "sim-1", "game": game, "layout": layout}
    sims: dict[str, Any] = {}
    if dice:
        sims["tumbler"] = TumblerSim(speed=speed, seed=int(time.time()))
        sims["tumbler_port"] = PtyPort(sims["tumbler"], link=work / "tumbler")
        ports.append(sims["tumbler_port"])
        devices = {"tumbler": f"serial://{work / 'tumbler'}?baud=115200"}
    else:
        table["decks"] = decks
        sims["shuffler"] = ShufflerSim(speed=speed, seed=int(time.time()))
        sims["shoe"] = ShoeSim(seed=1)
        shuffler_port = TcpPort(sims["shuffler"])
        sims["shoe_port"] = PtyPort(sims["shoe"], link=work / "shoe")
        ports += [shuffler_port, sims["shoe_port"]]
    for p in ports:
        await p.start()
    if not dice:
        devices = {"shoe": f"serial://{work / 'shoe'}?baud=115200",
                   "shuffler": f"usb://1d50:6178?serial=SF0001&sim=127.0.0.1:"
                               f"{shuffler_port.port}"}
    table_key, dealer_key = Ed25519PrivateKey.generate(), Ed25519PrivateKey.generate()
    (work / "signing.pem").write_bytes(private_key_pem(table_key))
    (work / "signing.pem").chmod(0o600)
    cfg = parse_config({
        "table": table,
        "devices": devices,
        "broker": {"url": f"mqtt://{broker[0]}:{broker[1]}",
                   "allow_plaintext_remote": True},
        "journal": {"path": str(work / "journal.db")},
        "signing": {"key_file": str(work / "signing.pem")},
        "commands": {"principals": {"sim-dealer": {"key": public_key_text(
            dealer_key.public_key())}}},
    }, "simulate")
    service = TableService(cfg)
    task = asyncio.create_task(service.run())
    try:
        await service.devices_ready(15)
        if not quiet:
            shoe_text = "" if dice else f", {decks} decks"
            print(f"tabled simulate: {cfg.game} layout {cfg.layout}{shoe_text}, "
                  f"{rounds} rounds; broker {broker[0]}:{broker[1]}; journal "
                  f"{cfg.journal_path}", file=out, flush=True)
        dealer = SimDealer(broker[0], broker[1], f"{cfg.topic_prefix}/{cfg.table_id}",
                           dealer_key,
                           on_result=(lambda r: None) if quiet else
                           (lambda r: show_result(r, out)), **sims)
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
        for p in ports:
            await p.stop()
        if mosquitto is not None:
            mosquitto.cleanup()
