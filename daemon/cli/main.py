"""The tabled command line: runs a table, simulates one, checks and watches it."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Sequence
from typing import Any

from daemon.errors import InputError, TabledError
from daemon.games import GAMES, get_game
from daemon.games.errors import RulesError
from daemon.games.model import GameRules
from daemon.games.par_sheet import par_sheet
from daemon.games.par_text import render_par_sheet
from daemon.games.registry import SIMULATED
from daemon.round.kinds import table_kind
from daemon.system.logs import LEVELS as LOG_LEVELS


def _configured_game(args: argparse.Namespace) -> GameRules[Any]:
    """The game as a table with these [table] settings plays it (e.g. twin_tiger_pair)."""
    choices = dict(s.partition("=")[::2] for s in args.setting)
    return get_game(args.game).configured(choices)


def _cmd_par_sheet(args: argparse.Namespace) -> int:
    game = _configured_game(args)
    if game.decks is None and args.decks is not None:
        raise RulesError(f"game {game.id!r} is played with {table_kind(game).played_with}; "
                         "--decks does not apply")
    sheet = par_sheet(game, args.layout, args.decks)
    if args.json:
        json.dump(sheet.as_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(render_par_sheet(sheet))
    return 0


def _cmd_settle(args: argparse.Namespace) -> int:
    game = _configured_game(args)
    results = table_kind(game).settle(game, args.layout, args.outcome)
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
    for name, text in spec.generated().items():
        path = Path(args.directory) / name
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
    import os  # noqa: PLC0415
    import tomllib  # noqa: PLC0415

    from daemon.cli.doctor import Severity, check_device_node, check_journal, check_libusb  # noqa: PLC0415
    from daemon.config import DEFAULT_BROKER, ConfigError, load_config  # noqa: PLC0415
    from daemon.drivers.device_url import SerialUrl, UsbUrl  # noqa: PLC0415

    if args.credentials:
        os.environ["CREDENTIALS_DIRECTORY"] = args.credentials
    try:
        cfg = load_config(args.config)
        with open(args.config, "rb") as fh:
            broker_set = "url" in tomllib.load(fh).get("broker", {})
    except ConfigError as exc:
        print(f"tabled: {exc}", file=sys.stderr)
        return 2
    devices = ", ".join(f"{k}={v}" for k, v in cfg.devices.items())
    default = "" if broker_set else f" (the default: broker.url is not set, so {DEFAULT_BROKER})"
    print(f"{args.config}: table {cfg.table_id}, {cfg.game} layout {cfg.layout}"
          f"{f', {cfg.decks} decks' if cfg.decks else ''}; {devices}; broker "
          f"{'mqtts' if cfg.broker.tls else 'mqtt'}://{cfg.broker.host}:{cfg.broker.port}"
          f"{default}; signing key {cfg.signer.kid}; {len(cfg.principals)} command "
          f"principal(s): {', '.join(cfg.principals) or 'none, so every command will be denied'}")
    if args.config_only:
        print(f"{args.config}: ok (the machine was not looked at: --config-only)")
        return 0
    # This machine, as far as it can be seen without the devices or the broker answering
    # (tabled doctor asks them too).
    found = [check_libusb(any(isinstance(u, UsbUrl) for u in cfg.devices.values()))]
    found += [check_device_node(name, url) for name, url in cfg.devices.items()
              if isinstance(url, SerialUrl)]
    found.append(check_journal(cfg.journal_path))
    problems = [f for f in found if f.severity != Severity.OK]
    for f in problems:
        print(f"tabled: {f.line()}", file=sys.stderr)
    if any(f.severity == Severity.FAIL for f in problems):
        print(f"{args.config}: valid, but this machine is not ready for it (above); "
              "'tabled doctor' checks the devices and the broker too", file=sys.stderr)
        return 2
    print(f"{args.config}: ok; on this machine: libusb, device nodes, journal folder ok")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415

    from daemon.config import ConfigError, load_config  # noqa: PLC0415
    from daemon.store.journal import JournalError  # noqa: PLC0415
    from daemon.system import logs  # noqa: PLC0415

    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        logs.to_stderr(f"tabled: {exc}")
        return 2
    logs.setup(cfg.log_level or args.log_level)
    _compose_simulators()
    try:
        return asyncio.run(_serve(cfg, args))
    except JournalError as exc:
        from daemon.store.space import disk_full  # noqa: PLC0415

        if disk_full(cfg.journal_path, exc):
            # Not the journal's fault: systemd starts it again once there is room.
            logs.to_stderr(f"tabled: cannot start: the disk of {cfg.journal_path} is full "
                           f"({exc}); free space there: exiting 1 so that systemd retries")
            return 1
        logs.to_stderr(f"tabled: cannot start: {exc}")
        return 2


def _compose_simulators() -> None:
    """The command line composes the daemon with the HIL simulators: a shuffler URL with
    sim= reaches the simulator through this pyusb backend. The runtime never imports hil."""
    from daemon.drivers.transports import use_sim_usb_backend  # noqa: PLC0415
    from hil.usb_backend import sim_backend  # noqa: PLC0415

    use_sim_usb_backend(sim_backend)


ROOM_EVERY = 10.0  # s between looks at a full disk at start


async def _when_there_is_room(cfg: Any, notifier: Any) -> Any:
    """The table's service, once its journal's disk has room. A full disk at start is
    waited out here, saying so (stderr, systemd's STATUS) and feeding the watchdog,
    rather than by exiting: exiting 1 every 0.4 s, with RestartSec=2s, used up the
    unit's start limit (20 in 300 s) in about 50 s, and systemd gave up on the table.
    Anything else that stops the journal from opening still raises."""
    import asyncio  # noqa: PLC0415

    from daemon.service import TableService  # noqa: PLC0415
    from daemon.store.journal import JournalError  # noqa: PLC0415
    from daemon.store.space import disk_full, has_room  # noqa: PLC0415
    from daemon.system import logs  # noqa: PLC0415

    said = False
    while True:
        try:
            service = TableService(cfg)
        except JournalError as exc:
            if not disk_full(cfg.journal_path, exc):
                raise
            why = str(exc)
        else:
            if has_room(cfg.journal_path):
                return service
            service.journal.close()  # it opened, but its first write would fail
            why = "almost no space left"
        if not said:
            logs.to_stderr(f"tabled: waiting to start: the disk of {cfg.journal_path} is "
                           f"full ({why}); free space there: the table starts by itself "
                           f"once there is room (checked every {ROOM_EVERY:g} s)",
                           logs.PRIORITY["warning"])
            said = True
        notifier.status(f"waiting for free space on the disk of {cfg.journal_path}")
        deadline = asyncio.get_running_loop().time() + ROOM_EVERY
        while asyncio.get_running_loop().time() < deadline:
            notifier.watchdog()
            await asyncio.sleep(1.0)


async def _serve(cfg: Any, args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415
    import contextlib  # noqa: PLC0415
    import logging  # noqa: PLC0415
    import signal  # noqa: PLC0415

    from daemon.system.health import Health  # noqa: PLC0415
    from daemon.system.sdnotify import Notifier  # noqa: PLC0415

    notifier = Notifier()
    service = await _when_there_is_room(cfg, notifier)
    await service.compare_with_broker()  # before anything is published
    watcher = Health(service, notifier)
    health = asyncio.create_task(watcher.run())
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGHUP, _reload, service, watcher, args)
    task = asyncio.create_task(service.run())
    scraped = None
    if cfg.metrics_listen is not None:
        from daemon.system import metrics_server  # noqa: PLC0415

        scraped = asyncio.create_task(metrics_server.serve(service.metrics.registry,
                                                           *cfg.metrics_listen))
    stopper = asyncio.create_task(stop.wait())
    await asyncio.wait([task, stopper], return_when=asyncio.FIRST_COMPLETED)
    health.cancel()
    if scraped is not None:  # a scrape has nothing to finish
        scraped.cancel()
    if task.done():  # the service ended by itself: that is a failure
        stopper.cancel()
        exc = task.exception()
        logging.getLogger("tabled").error("the service stopped: %r", exc)
        notifier.status(f"failed: {exc!r}")
        return 1
    logging.getLogger("tabled").info("stopping on signal: publishing offline")
    notifier.stopping("stopping on signal: publishing offline")
    await service.publisher.stop()
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(3):
            while service.publisher.stats.connected:
                await asyncio.sleep(0.05)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return 0


def _reload(service: Any, health: Any, args: argparse.Namespace) -> None:
    """SIGHUP (systemctl reload): the config read again and applied where it may change
    mid-round (daemon/reload.py), on the event loop, between two inputs."""
    from daemon.config import ConfigError, load_config  # noqa: PLC0415
    from daemon.system import logs  # noqa: PLC0415

    # Under systemd, the unit shows "reloading" until READY=1 (once it was ready at all).
    if health.ready_sent:
        health.notifier.reloading()
    try:
        new = load_config(args.config)
    except ConfigError as exc:
        service.refuse_reload(exc.problems)
    else:
        if not service.reconfigure(new).refused:
            logs.set_level(new.log_level or args.log_level)
    if health.ready_sent:
        health.notifier.send("READY=1")  # STATUS stays the table's (daemon/system/health.py)


def _cmd_keys_generate(args: argparse.Namespace) -> int:
    import os  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    from cryptography.hazmat.primitives.asymmetric.ed25519 import (  # noqa: PLC0415
        Ed25519PrivateKey,
    )

    from daemon.security.signing import key_id, private_key_pem, public_key_text  # noqa: PLC0415

    private, public = Path(args.out + ".pem"), Path(args.out + ".pub")
    for p in (private, public):
        if p.exists():
            print(f"tabled: {p} exists; not overwriting a key", file=sys.stderr)
            return 2
    key = Ed25519PrivateKey.generate()
    fd = os.open(private, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(private_key_pem(key))
    public.write_text(public_key_text(key.public_key()) + "\n", encoding="ascii")
    print(f"key id {key_id(key.public_key())}: private {private} (mode 0600), public {public}")
    return 0


def _read_payloads(source: str) -> list[tuple[int, str, bytes]]:
    """(line number, topic or "", payload bytes): one JSON object per line, optionally
    after its topic as ``mosquitto_sub -v`` prints it. The payload keeps its bytes as
    they were (only the line's end is cut), since only the canonical ones verify; a topic
    that is not UTF-8 is shown with its bad bytes escaped."""
    if source == "-":
        data = sys.stdin.buffer.read()
    else:
        with open(source, "rb") as f:
            data = f.read()
    out = []
    for n, raw in enumerate(data.split(b"\n"), 1):
        line = raw.removesuffix(b"\r")
        if line.lstrip().startswith(b"{"):
            out.append((n, "", line))
        elif line.strip():
            topic, _, rest = line.partition(b" ")
            out.append((n, topic.decode("utf-8", "backslashreplace"), rest))
    return out


def _json_object(raw: bytes) -> dict[str, Any]:
    """A command as the Pit sent it (any JSON text: its signature covers the object);
    SignatureError for bytes that are not a JSON object, whatever they are."""
    from daemon.security.signing import SignatureError, shown  # noqa: PLC0415

    try:
        body = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise SignatureError(f"not JSON: {shown(str(exc), 80)}") from None
    if not isinstance(body, dict):
        raise SignatureError("not a JSON object")
    return body


def _topic_table(parts: list[str], topics: tuple[str, ...]) -> str | None:
    """The table a payload's topic belongs to: ``{prefix}/{table}/`` then one of the
    table's topics, a device's (``devices/{name}``) or a replay answer
    (``replay/to/{name}``); None for any other topic."""
    if len(parts) >= 4 and parts[-3:-1] == ["replay", "to"]:
        return parts[-4]
    if len(parts) >= 3 and parts[-2] == "devices":
        return parts[-3]
    if len(parts) >= 2 and parts[-1] in topics:
        return parts[-2]
    return None


def _cmd_verify(args: argparse.Namespace) -> int:
    from pathlib import Path  # noqa: PLC0415

    from daemon.consumers.verify import accept  # noqa: PLC0415
    from daemon.security.authority import command_prefix  # noqa: PLC0415
    from daemon.security.signing import (  # noqa: PLC0415
        COMMAND,
        KeyFileError,
        Keyring,
        SignatureError,
        key_id,
        load_public_key,
        parse_object,
        require_canonical,
        shown,
    )
    from daemon.service import TOPICS  # noqa: PLC0415

    try:
        ring = Keyring.of(load_public_key(Path(k)) for k in args.key)
        command_keys = [(Path(f).stem, load_public_key(Path(f))) for f in args.command_key]
        principals = {key_id(k): name for name, k in command_keys}
        commands = Keyring.of(k for _, k in command_keys)
        payloads = _read_payloads(args.payloads)
    except (KeyFileError, OSError) as exc:
        print(f"tabled: {exc}", file=sys.stderr)
        return 2
    bad = 0
    skipped = {"command": 0, "replay request": 0}
    for n, topic, text in payloads:
        where = f"line {n}" + (f" ({shown(topic, 200)})" if topic else "")
        # What others publish under a table's topics: the Pit's commands, signed by a
        # principal, checked with --command-key; consumers' replay requests, unsigned
        # (docs/mqtt.md).
        parts = topic.split("/")  # {prefix}/{table_id}/cmd/{name}; a table may be "cmd"
        command = len(parts) >= 3 and parts[-2] == "cmd" and parts[-1] not in TOPICS
        if topic.endswith("/replay/request") or (command and not principals):
            other = "command" if command else "replay request"
            skipped[other] += 1
            print(f"skipped {where}: a {other}, not a table payload" +
                  (" (--command-key checks commands)" if command else ""))
            continue
        try:
            if command:  # the signature binds the table and the command's name (its topic)
                body = _json_object(text)
                kid = commands.verify(body, domain=COMMAND,
                                      prefix=command_prefix(parts[-3], parts[-1]))
                # The signature only: whether the table carried it out (fresh, not a
                # replay, allowed to this principal) its reply says.
                what = (f"command {parts[-1]} id {shown(repr(body.get('id')))} signed by "
                        f"{principals[kid]}")
            else:
                # Only on its own table's topic (docs/mqtt.md, "Signatures"); a line
                # without its topic can only say which table it names.
                table = _topic_table(parts, TOPICS) if topic else None
                if topic and table is None:
                    raise SignatureError("not a topic a table publishes on")
                if table is None:
                    body = parse_object(text)
                    kid = ring.verify(body)
                    require_canonical(text, body)
                else:
                    body = accept(text, table, ring)
                    kid = body["sig"]["kid"]  # accept verified it
                what = (f"{shown(body.get('type', '?'))}"
                        + (f" seq {shown(body['seq'])}" if "seq" in body else "")
                        + ("" if topic else f" of table {shown(repr(body.get('table')))}"))
        except SignatureError as exc:
            bad += 1
            print(f"REJECTED {where}: {exc}")
            continue
        print(f"ok {where}: {what}, key {kid}")
    checked = len(payloads) - sum(skipped.values())
    line = f"{checked - bad} verified, {bad} rejected"
    if any(skipped.values()):
        line += (f"; {sum(skipped.values())} skipped (" + ", ".join(
            f"{k} {name}{'s' if k != 1 else ''}" for name, k in skipped.items() if k)
                 + ": not the table's payloads)")
    print(line, file=sys.stderr)
    return 1 if bad or not checked else 0


def _cmd_command_sign(args: argparse.Namespace) -> int:
    import time  # noqa: PLC0415
    import uuid  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    from daemon.security.authority import sign_command  # noqa: PLC0415
    from daemon.security.commands import COMMANDS, CommandError, parse_command, round_scoped  # noqa: PLC0415
    from daemon.security.signing import KeyFileError, load_private_key  # noqa: PLC0415

    _check_table_id("--table", args.table)
    if args.name in COMMANDS and round_scoped(args.name) and not args.round:
        raise UsageError(f"{args.name} acts on a round: give --round with the open round's "
                         "id (every reply of the table states it as round_id)")
    extra = {k: v for k, v in (("reason", args.reason), ("irregularity", args.irregularity),
                               ("swap", args.swap), ("cards", args.cards),
                               ("hold", args.hold), ("round_id", args.round)) if v}
    command_id = args.id or uuid.uuid4().hex
    try:  # what the table will refuse is not signed: the table's own check, before
        parse_command(args.name, json.dumps({"id": command_id, **extra}).encode())
    except CommandError as exc:
        option = {"round_id": "--round"}
        hint = "".join(f" (--{k.replace('_', '-')})" if k not in option else f" ({option[k]})"
                       for k in extra if f"{k!r}" in str(exc))
        raise UsageError(f"{exc}{hint}") from None
    try:
        key = load_private_key(Path(args.key))
    except KeyFileError as exc:
        raise UsageError(str(exc)) from None
    body = sign_command(key, args.table, args.name, command_id, time.time(), **extra)
    print(json.dumps(body, separators=(",", ":")))
    return 0


def _cmd_hil_run(args: argparse.Namespace) -> int:
    from hil.runner import main_run  # noqa: PLC0415

    broker = broker_address(args.broker, "hil run") if args.broker else None
    return main_run(args.scenario, broker, args.rig, args.speed, args.seed)


def _cmd_doctor(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415
    import os  # noqa: PLC0415
    import tomllib  # noqa: PLC0415

    from daemon.cli.doctor import (  # noqa: PLC0415
        Severity,
        check_clock,
        check_libusb,
        clock_state,
        examine,
        fail,
        ok,
    )
    from daemon.config import ConfigError, load_config  # noqa: PLC0415
    from daemon.system import logs  # noqa: PLC0415

    if args.credentials:
        os.environ["CREDENTIALS_DIRECTORY"] = args.credentials
    logs.setup(args.log_level)
    try:
        cfg = load_config(args.config)
        with open(args.config, "rb") as f:
            raw = tomllib.load(f)
    except ConfigError as exc:
        # The problem says what is wrong and, where there is one, the remedy: the fix is
        # to edit that setting (``config check`` would only print the same line again).
        findings = [fail("config", f"{args.config}: {p}; fix: edit {p.split(':')[0]} in "
                                   f"{args.config} as this says") for p in exc.problems]
        findings += [check_libusb(False), check_clock(clock_state())]
    else:
        findings = [ok("config", f"{args.config}: table {cfg.table_id}, {cfg.game} layout "
                                 f"{cfg.layout}")]
        findings += asyncio.run(examine(cfg, raw, device_timeout=args.device_timeout))
    for finding in findings:
        print(finding.line(), flush=True)
    count = {s: sum(f.severity == s for f in findings) for s in Severity}
    worst = max(f.severity for f in findings)
    print(f"{count[Severity.FAIL]} failed, {count[Severity.WARN]} warnings, "
          f"{count[Severity.OK]} OK: exit {int(worst)}", file=sys.stderr)
    return int(worst)


def _cmd_watch(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415
    import contextlib  # noqa: PLC0415
    import ssl  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    from daemon.consumers.watch_view import WatchBroker, watch  # noqa: PLC0415
    from daemon.security.signing import KeyFileError, Keyring, load_public_key, parse_public_key  # noqa: PLC0415

    host, port, tls = broker_url(args.broker)
    keys = []
    for k in args.key:
        try:
            keys.append(load_public_key(Path(k)) if Path(k).exists() else parse_public_key(k))
        except KeyFileError as exc:
            if not Path(k).exists() and ("/" in k or k.endswith((".pub", ".pem"))):
                # Neither key text (base64 may hold "/") nor a file: a path that is missing.
                raise UsageError(f"--key {k}: no such file") from None
            raise UsageError(f"--key {k}: {exc}") from None
    for t in args.table or []:
        _check_table_id("--table", t)
    password = None
    if args.password_file:
        try:
            password = Path(args.password_file).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise UsageError(f"--password-file {args.password_file}: {exc.strerror}") from None
    context = None
    if tls:
        try:
            context = ssl.create_default_context(cafile=args.ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise UsageError(f"--ca-file {args.ca_file}: {exc}") from None
    broker = WatchBroker(host, port, context, args.username, password)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a watch ends
        asyncio.run(watch(broker, Keyring.of(keys), tuple(args.table or ()), args.prefix))
    return 0


class UsageError(InputError, ValueError):
    """A bad argument: one line on stderr, exit 2."""


def _check_table_id(option: str, table: str) -> None:
    from daemon.config import table_id_problem  # noqa: PLC0415

    if (problem := table_id_problem(table)) is not None:
        raise UsageError(f"{option} {table!r}: {problem}")


def broker_url(text: str, *, plain_for: str | None = None) -> tuple[str, int, bool]:
    """``mqtt[s]://host:port`` or ``host:port`` -> host, port (1883/8883 if left out), TLS.
    ``plain_for``: the command that speaks plain MQTT only, which refuses ``mqtts://``."""
    from urllib.parse import urlsplit  # noqa: PLC0415

    tls_allowed = plain_for is None
    if text.startswith("mqtts://") and not tls_allowed:
        raise UsageError(f"--broker {text}: {plain_for} speaks plain MQTT to a broker on "
                         "this machine or a lab network; give mqtt://host:port")
    parts = urlsplit(text if "://" in text else f"mqtt://{text}")
    tls = parts.scheme == "mqtts"
    try:
        port = parts.port or (8883 if tls else 1883)
    except ValueError:
        port = -1
    if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname or port <= 0 \
            or parts.path or parts.query or parts.username:
        raise UsageError(f"--broker {text}: expected mqtt://host:port"
                         f"{' or mqtts://host:port' if tls_allowed else ''}, e.g. "
                         "mqtt://127.0.0.1:1883")
    return parts.hostname, port, tls


def broker_address(text: str, command: str) -> tuple[str, int]:
    """The --broker of a command that speaks plain MQTT only (simulate, hil run)."""
    host, port, _ = broker_url(text, plain_for=command)
    return host, port


def _reachable(host: str, port: int) -> None:
    import socket  # noqa: PLC0415

    try:
        with socket.create_connection((host, port), timeout=3):
            pass
    except OSError as exc:
        raise UsageError(f"--broker mqtt://{host}:{port}: cannot connect: "
                         f"{exc.strerror or exc} (leave out --broker for a private one)"
                         ) from None


def _cmd_simulate(args: argparse.Namespace) -> int:
    import asyncio  # noqa: PLC0415

    from daemon.games import get_game as game_of  # noqa: PLC0415
    from daemon.system import logs  # noqa: PLC0415
    from hil.simulate import simulate  # noqa: PLC0415

    game = game_of(args.game)
    layout = game.check_layout(args.layout or game.simulated_layout())
    decks = args.decks
    if game.decks is not None:
        decks = game.check_decks(8 if decks is None else decks)
    elif decks is not None:
        raise UsageError(f"--decks: {game.id} is played with {table_kind(game).played_with}")
    if args.rounds < 1:
        raise UsageError(f"--rounds {args.rounds}: play at least one round")
    if not 0.1 <= args.speed <= 1000:
        raise UsageError(f"--speed {args.speed:g}: give 0.1 to 1000 (times real time)")
    _check_table_id("--table", args.table)
    broker = broker_address(args.broker, "simulate") if args.broker else None
    if broker is not None:
        _reachable(*broker)
    logs.setup("WARNING")  # the rounds are the display; the journal has the details
    stopped_by: list[int] = []

    async def run() -> list[dict[str, Any]]:
        # SIGTERM (a CI runner, `timeout`) and SIGHUP (a closed terminal) end the run as
        # Ctrl-C does, by cancelling it: the folder with the table's private key, the
        # private Mosquitto and the retained status are cleaned up in simulate's finally.
        loop, main = asyncio.get_running_loop(), asyncio.current_task()
        assert main is not None

        def stop(sig: int) -> None:
            stopped_by.append(sig)
            main.cancel()

        for sig in (signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, stop, sig)
        return await simulate(args.game, layout, decks, args.rounds, broker=broker,
                              speed=args.speed, table=args.table)

    try:
        results = asyncio.run(run())  # the broker gone, the table stuck: exit 1, in main
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    except asyncio.CancelledError:
        if not stopped_by:
            raise
        return 128 + stopped_by[0]
    return 0 if len(results) == args.rounds else 1


DESCRIPTION = ("tabled: the table-side controller for casino table games. It runs a table "
               "(run), simulates one on this machine (simulate), checks one (config check, "
               "doctor) and watches tables live (watch).")


def _cmd_completion(args: argparse.Namespace) -> int:
    from daemon.cli.completion import bash  # noqa: PLC0415

    sys.stdout.write(bash(parser()))
    return 0


def _add_setting_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE",
                   help="a [table] reading of the game, e.g. twin_tiger_pair=rank "
                        "(docs/games.md, Table settings)")


def build_parser() -> argparse.ArgumentParser:
    from daemon import __version__  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog="tabled", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"tabled {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    rules = sub.add_parser("rules", help="the game rules engine")
    rsub = rules.add_subparsers(dest="rules_command", required=True)

    ps = rsub.add_parser("par-sheet", help="exact game math for every offered bet")
    ps.add_argument("--game", required=True, help=game_help())
    ps.add_argument("--layout", required=True, help="the Appendix letter, e.g. P")
    ps.add_argument("--decks", type=int, help="4-10 for baccarat games (default 8)")
    ps.add_argument("--json", action="store_true", help="print JSON instead of text")
    _add_setting_option(ps)
    ps.set_defaults(func=_cmd_par_sheet)

    st = rsub.add_parser("settle", help="settle one round: cards in deal order, or three dice")
    st.add_argument("--game", required=True, help=game_help())
    st.add_argument("--layout", required=True, help="the Appendix letter, e.g. P")
    st.add_argument("outcome", nargs="+", help="card codes such as 9H KS, or dice such as 3 3 5")
    _add_setting_option(st)
    st.set_defaults(func=_cmd_settle)

    dc = rsub.add_parser("docs", help="write docs/games.md from the engine's data")
    dc.add_argument("--output", default="docs/games.md", help="the file to write")
    dc.add_argument("--check", action="store_true", help="exit 1 if the file is out of date")
    dc.set_defaults(func=_cmd_docs)

    protocols = sub.add_parser("protocols", help="the device wire protocols")
    psub = protocols.add_subparsers(dest="protocols_command", required=True)
    pd = psub.add_parser("docs", help="write the device specs (shoe.md, ...) from the codecs")
    pd.add_argument("--directory", default="firmware_protocols",
                    help="where the specs are written")
    pd.add_argument("--check", action="store_true", help="exit 1 if a spec is out of date")
    pd.set_defaults(func=_cmd_protocol_docs)

    run = sub.add_parser("run", help="run the table controller")
    run.add_argument("--config", default="/etc/tabled/table.toml", help="the table config")
    add_log_level(run)
    run.set_defaults(func=_cmd_run)

    _add_simulate_command(sub)
    _add_watch_command(sub)
    _add_doctor_command(sub)

    _add_trust_commands(sub)
    _add_hil_commands(sub)
    comp = sub.add_parser("completion", help="print a shell completion script: "
                                             "source <(tabled completion bash)")
    comp.add_argument("shell", choices=("bash",), help="the shell")
    comp.set_defaults(func=_cmd_completion)
    _add_display_command(sub)
    _add_principals_command(sub)

    config = sub.add_parser("config", help="the table config")
    csub = config.add_subparsers(dest="config_command", required=True)
    cc = csub.add_parser("check", help="validate a table config and say what it sets up")
    cc.add_argument("--config", default="/etc/tabled/table.toml", help="the table config")
    cc.add_argument("--credentials", help="where credential:NAME files are, outside systemd "
                                          "(e.g. /etc/credstore/tabled)")
    cc.add_argument("--config-only", action="store_true",
                    help="check the file alone, not this machine's device nodes, libusb and "
                         "journal folder (e.g. for a config meant for another table)")
    cc.set_defaults(func=_cmd_config_check)
    return parser


def _add_doctor_command(sub: Any) -> None:
    d = sub.add_parser("doctor", help="check every precondition of this table: devices, "
                                      "libusb, broker, journal, clock, keys",
                       description="Checks every precondition of a table, one line each: OK, "
                                   "or what is wrong and how to fix it. Exit status: 0 all "
                                   "OK, 1 warnings only, 2 a failure.")
    d.add_argument("--config", default="/etc/tabled/table.toml", help="the table config")
    d.add_argument("--credentials", help="where credential:NAME files are, outside systemd "
                                         "(e.g. /etc/credstore/tabled)")
    d.add_argument("--device-timeout", type=float, default=5.0,
                   help="seconds each device has to answer IDENTIFY")
    add_log_level(d, default="CRITICAL")
    d.set_defaults(func=_cmd_doctor)


def _add_watch_command(sub: Any) -> None:
    w = sub.add_parser("watch", help="a live terminal view of tables, from their signed "
                                     "MQTT payloads")
    w.add_argument("--broker", default="mqtt://127.0.0.1:1883",
                   help="mqtt://host:port or mqtts://host:port")
    w.add_argument("--table", action="append",
                   help="a table id to watch; repeat for more (default: every table)")
    w.add_argument("--key", action="append", required=True,
                   help="a trusted public key: a file (tabled keys generate's .pub) or its "
                        "base64 text; repeat for several tables or a rotation")
    w.add_argument("--prefix", default="tables", help="the tables' MQTT topic prefix")
    w.add_argument("--username", help="MQTT user name")
    w.add_argument("--password-file", help="a file holding the MQTT password")
    w.add_argument("--ca-file", help="mqtts: the CA that signed the broker's certificate "
                                     "(default: the system's)")
    w.set_defaults(func=_cmd_watch)


def _add_simulate_command(sub: Any) -> None:
    sim = sub.add_parser("simulate", help="a whole simulated table on this machine")
    sim.add_argument("--game", default=SIMULATED, help=game_help())
    sim.add_argument("--layout", help="the Appendix letter (default: " + ", ".join(
        f"{g.simulated_layout()} for {g.id}" for g in GAMES.values()) + ")")
    sim.add_argument("--decks", type=int, help="decks in the shoe, 4-10 (baccarat games; "
                                               "default 8)")
    sim.add_argument("--rounds", type=int, default=20, help="rounds to play")
    sim.add_argument("--speed", type=float, default=20.0,
                     help="how much faster than real time the devices run")
    sim.add_argument("--table", default="sim-1",
                     help="the table id (its MQTT topics are tables/TABLE/...); give each "
                          "run on a shared broker its own")
    sim.add_argument("--broker", help="mqtt://host:port of a running broker "
                                      "(default: a private Mosquitto on a free port)")
    sim.set_defaults(func=_cmd_simulate)
def _add_display_command(sub: Any) -> None:
    from daemon.display.command import add_parser  # noqa: PLC0415 - aiomqtt, only for it

    add_parser(sub)


def _add_principals_command(sub: Any) -> None:
    from daemon.cli.principals import add_parser  # noqa: PLC0415 - webauthn, only for it

    add_parser(sub)


def _add_hil_commands(sub: Any) -> None:
    hil = sub.add_parser("hil", help="hardware-in-the-loop scenarios")
    hsub = hil.add_subparsers(dest="hil_command", required=True)
    hr = hsub.add_parser("run", help="play a scenario against the daemon (as a process)")
    hr.add_argument("scenario", help="a scenario file (hil/scenarios/*.json)")
    hr.add_argument("--broker", help="mqtt://host:port; default: a private broker")
    hr.add_argument("--rig", help="a rig description naming real devices, or a virtual rig "
                    "(hil/rigs/qemu-*.json: the firmware in QEMU; exit 3: it cannot play the "
                    "scenario); default: simulators")
    hr.add_argument("--speed", type=float, default=50.0,
                    help="how much faster than real time the simulated devices run")
    hr.add_argument("--seed", type=int, default=1, help="the random part of the shoe")
    hr.set_defaults(func=_cmd_hil_run)


def _add_trust_commands(sub: Any) -> None:
    keys = sub.add_parser("keys", help="Ed25519 keys for signing results and commands")
    ksub = keys.add_subparsers(dest="keys_command", required=True)
    kg = ksub.add_parser("generate", help="write OUT.pem (private, 0600) and OUT.pub")
    kg.add_argument("--out", required=True, help="path prefix, e.g. /etc/tabled/signing")
    kg.set_defaults(func=_cmd_keys_generate)

    ver = sub.add_parser("verify", help="check the signatures of published payloads")
    ver.add_argument("--key", action="append", required=True,
                     help="a trusted public key file (base64 or PEM); repeat for rotation")
    ver.add_argument("--command-key", action="append", default=[], metavar="FILE",
                     help="a principal's public key (named by the file, e.g. pit.pub): "
                          "commands on .../cmd/NAME signed by it are checked, not "
                          "skipped; repeat for each principal")
    ver.add_argument("payloads", nargs="?", default="-",
                     help="a file of JSON payloads, one per line, optionally after the "
                          "topic (mosquitto_sub -v); default stdin")
    ver.set_defaults(func=_cmd_verify)

    command = sub.add_parser("command", help="commands to a table")
    cosub = command.add_subparsers(dest="command_command", required=True)
    cs = cosub.add_parser("sign", help="print a signed command, for mosquitto_pub -s")
    cs.add_argument("--key", required=True, help="the principal's private key (PEM)")
    cs.add_argument("--table", required=True, help="the table id the command is for")
    cs.add_argument("--id", help="the command id (default: a random one)")
    cs.add_argument("--reason", help="void_round's reason")
    cs.add_argument("--irregularity", help="void_round: the code of the cause the pit saw, "
                                           "e.g. incorrect_card_count (docs/games.md)")
    cs.add_argument("--swap", help="confirm_order: two draw numbers to exchange, e.g. 5,6")
    cs.add_argument("--cards", help="reconstruct_deal: the round's cards in the order dealt, "
                                    "e.g. '9S 2H AS KD' (decision D18)")
    cs.add_argument("--hold", help="confirm_order, reconstruct_deal, void_round, "
                                   "throw_again: the hold_id of the result_held answered")
    cs.add_argument("--round", help="the open round's id (every reply's round_id): needed by "
                                    "every command but open_betting, new_shoe, end_shoe and "
                                    "status, and refused for any other round; for "
                                    "void_settled_round, the settled round it voids")
    cs.add_argument("name", help="open_betting, close_betting, void_round, ...")
    cs.set_defaults(func=_cmd_command_sign)


def game_help() -> str:
    """--game's help: the approved games, as registered when the parser is built."""
    *first, last = GAMES
    return f"the game id: {', '.join(first)} or {last}" if first else f"the game id: {last}"


def add_log_level(p: argparse.ArgumentParser, default: str = "INFO") -> None:
    p.add_argument("--log-level", default=default, type=str.upper, choices=LOG_LEVELS,
                   metavar="LEVEL", help=f"one of {', '.join(LOG_LEVELS)} (any case)")


def _walk(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """The parser and every subcommand's parser below it."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                found += _walk(child)
    return found


class _HelpWithDefaults(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a default where there is one, and where the help does not already say it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if action.default in (None, False, argparse.SUPPRESS) or "default" in text:
            return text
        return super()._get_help_string(action)

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction):
            # argparse measures a command's name 2 columns shallower than it draws it: a
            # name as long as "protocols" got its description on a line of its own.
            longest = max((len(name) for name in action.choices), default=0)
            self._action_max_length = max(self._action_max_length,
                                          longest + self._current_indent + 4)


def parser() -> argparse.ArgumentParser:
    """The whole command line; every help shows each option's default."""
    p = build_parser()
    for each in _walk(p):
        each.formatter_class = _HelpWithDefaults
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except TabledError as exc:
        # What tabled refused or could not do: said in one line (a scenario's or a
        # config's problems follow it, indented), and its family's exit status.
        print(f"tabled: {exc}", file=sys.stderr)
        return exc.exit_status
    except BrokenPipeError:
        # The reader went away (`tabled verify ... | head`): not an error to report. The
        # interpreter's flush of stdout at exit would raise again, so point it nowhere.
        import os  # noqa: PLC0415

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:
        # A path given on the command line that cannot be written or read (--out,
        # --output, --directory, ...): the file and why, not a traceback.
        if exc.filename is None:
            raise
        print(f"tabled: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
