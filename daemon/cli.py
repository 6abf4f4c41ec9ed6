"""The ``tabled`` command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from daemon.games import get_game
from daemon.games.cards import parse_cards
from daemon.games.errors import RulesError
from daemon.games.par_sheet import par_sheet
from daemon.games.par_text import render_par_sheet
from daemon.games.settle import settle_cards, settle_throw
from daemon.games.tai_sai import Throw


def _cmd_par_sheet(args: argparse.Namespace) -> int:
    game = get_game(args.game)
    if game.kind == "dice" and args.decks is not None:
        raise RulesError(f"game {game.id!r} is played with dice; --decks does not apply")
    sheet = par_sheet(game, args.layout, args.decks)
    if args.json:
        json.dump(sheet.as_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_par_sheet(sheet))
    return 0


def _cmd_settle(args: argparse.Namespace) -> int:
    game = get_game(args.game)
    if game.kind == "dice":
        results = settle_throw(game, args.layout, Throw.of([int(x) for x in args.outcome]))
    else:
        results = settle_cards(game, args.layout, parse_cards(args.outcome))
    json.dump([r.as_dict() for r in results], sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def _cmd_docs(args: argparse.Namespace) -> int:
    from daemon.games.docs import render_games_md  # noqa: PLC0415 - only this command needs it

    text = render_games_md()
    if args.check:
        with open(args.output, encoding="utf-8") as f:
            if f.read() != text:
                print(f"{args.output} is out of date: run 'tabled rules docs'", file=sys.stderr)
                return 1
        return 0
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


def _cmd_protocol_docs(args: argparse.Namespace) -> int:
    from pathlib import Path  # noqa: PLC0415

    from firmware_protocols import spec  # noqa: PLC0415

    stale = []
    for device in spec.DEVICES:
        path = Path(args.directory) / f"{device}.md"
        text = spec.render(device)
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"out of date: {', '.join(stale)}: run 'tabled protocols docs'", file=sys.stderr)
        return 1
    return 0


def _cmd_config_check(args: argparse.Namespace) -> int:
    from daemon.config import ConfigError, load_config  # noqa: PLC0415

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(f"tabled: {exc}", file=sys.stderr)
        return 2
    devices = ", ".join(f"{k}={v}" for k, v in cfg.devices.items())
    print(f"{args.config}: ok: table {cfg.table_id}, {cfg.game} layout {cfg.layout}"
          f"{f', {cfg.decks} decks' if cfg.decks else ''}; {devices}; broker "
          f"{'mqtts' if cfg.broker.tls else 'mqtt'}://{cfg.broker.host}:{cfg.broker.port}")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415

    from daemon import logs  # noqa: PLC0415
    from daemon.config import ConfigError, load_config  # noqa: PLC0415
    from daemon.store.journal import JournalError  # noqa: PLC0415

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(f"tabled: {exc}", file=sys.stderr)
        return 2
    logs.setup(args.log_level)
    try:
        return asyncio.run(_serve(cfg))
    except JournalError as exc:
        print(f"tabled: cannot start: {exc}", file=sys.stderr)
        return 2


async def _serve(cfg: Any) -> int:
    import asyncio  # noqa: PLC0415
    import contextlib  # noqa: PLC0415
    import logging  # noqa: PLC0415
    import signal  # noqa: PLC0415

    from daemon.service import TableService  # noqa: PLC0415

    service = TableService(cfg)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    task = asyncio.create_task(service.run())
    stopper = asyncio.create_task(stop.wait())
    await asyncio.wait([task, stopper], return_when=asyncio.FIRST_COMPLETED)
    if task.done():  # the service ended by itself: that is a failure
        stopper.cancel()
        exc = task.exception()
        logging.getLogger("tabled").error("the service stopped: %r", exc)
        return 1
    logging.getLogger("tabled").info("stopping on signal: publishing offline")
    await service.publisher.stop()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(3):
            while service.publisher.stats.connected:
                await asyncio.sleep(0.05)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return 0


def _cmd_simulate(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415

    from daemon import logs  # noqa: PLC0415
    from daemon.games import get_game as game_of  # noqa: PLC0415
    from hil.simulate import simulate  # noqa: PLC0415

    logs.setup("WARNING")  # the rounds are the display; the journal has the details
    game = game_of(args.game)
    game.check_layout(args.layout)
    if game.kind == "baccarat":
        game.check_decks(args.decks)
    broker = None
    if args.broker:
        host, _, port = args.broker.removeprefix("mqtt://").partition(":")
        broker = (host, int(port or 1883))
    results = asyncio.run(simulate(args.game, args.layout, args.decks, args.rounds,
                                   broker=broker, speed=args.speed))
    return 0 if len(results) == args.rounds else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tabled", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    rules = sub.add_parser("rules", help="the game rules engine")
    rsub = rules.add_subparsers(dest="rules_command", required=True)

    ps = rsub.add_parser("par-sheet", help="exact game math for every offered bet")
    ps.add_argument("--game", required=True)
    ps.add_argument("--layout", required=True, help="the Appendix letter, e.g. P")
    ps.add_argument("--decks", type=int, help="4-10 for baccarat games (default 8)")
    ps.add_argument("--json", action="store_true")
    ps.set_defaults(func=_cmd_par_sheet)

    st = rsub.add_parser("settle", help="settle one round: cards in deal order, or three dice")
    st.add_argument("--game", required=True)
    st.add_argument("--layout", required=True)
    st.add_argument("outcome", nargs="+", help="card codes such as 9H KS, or dice such as 3 3 5")
    st.set_defaults(func=_cmd_settle)

    dc = rsub.add_parser("docs", help="write docs/games.md from the engine's data")
    dc.add_argument("--output", default="docs/games.md")
    dc.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    dc.set_defaults(func=_cmd_docs)

    protocols = sub.add_parser("protocols", help="the device wire protocols")
    psub = protocols.add_subparsers(dest="protocols_command", required=True)
    pd = psub.add_parser("docs", help="write the device specs (shoe.md, ...) from the codecs")
    pd.add_argument("--directory", default="firmware_protocols")
    pd.add_argument("--check", action="store_true", help="exit 1 if a spec is out of date")
    pd.set_defaults(func=_cmd_protocol_docs)

    run = sub.add_parser("run", help="run the table controller")
    run.add_argument("--config", default="/etc/tabled/table.toml")
    run.add_argument("--log-level", default="INFO")
    run.set_defaults(func=_cmd_run)

    sim = sub.add_parser("simulate", help="a whole simulated table on this machine")
    sim.add_argument("--game", default="tiger-buffalo")
    sim.add_argument("--layout", default="P")
    sim.add_argument("--decks", type=int, default=8)
    sim.add_argument("--rounds", type=int, default=20)
    sim.add_argument("--speed", type=float, default=20.0,
                     help="how much faster than real time the devices run")
    sim.add_argument("--broker", help="mqtt://host:port; default: a private broker")
    sim.set_defaults(func=_cmd_simulate)

    config = sub.add_parser("config", help="the table config")
    csub = config.add_subparsers(dest="config_command", required=True)
    cc = csub.add_parser("check", help="validate a table config and say what it sets up")
    cc.add_argument("--config", default="/etc/tabled/table.toml")
    cc.set_defaults(func=_cmd_config_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except RulesError as exc:
        print(f"tabled: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
