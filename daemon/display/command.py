"""The ``tabled display`` command: its arguments and how it starts the server."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import ssl
import sys
from pathlib import Path
from typing import Any

from daemon.security.signing import KeyFileError, Keyring, load_public_key


def host_port(text: str, default_port: int) -> tuple[str, int]:
    rest = text.removeprefix("mqtt://").removeprefix("http://").rstrip("/")
    host, sep, port = rest.rpartition(":")
    if not sep:
        host, port = rest, str(default_port)
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: the port is not a number") from None
    if not 0 < number < 65536:
        raise argparse.ArgumentTypeError(f"{text!r}: the port must be 1 to 65535")
    return host or "127.0.0.1", number


def broker_url(text: str) -> tuple[str, int, bool]:
    """mqtt://host[:port] or mqtts://host[:port] (TLS): host, port, tls."""
    tls = text.startswith("mqtts://")
    host, port = host_port(text.removeprefix("mqtts://"), 8883 if tls else 1883)
    return host, port, tls


def add_parser(sub: Any) -> None:
    d = sub.add_parser("display", help="a live page of the tables: roads, rounds, health")
    d.add_argument("--broker", required=True, type=broker_url,
                   help="mqtt://host[:port], or mqtts://host[:port] for TLS")
    d.add_argument("--ca-file", type=Path, help="mqtts: the CA to trust (default: the "
                                                "system's)")
    d.add_argument("--username", help="the broker user (its ACL should allow reading the "
                                      "tables' topics and, for contract v2, publishing "
                                      "replay requests)")
    d.add_argument("--password-file", type=Path, help="the broker password, in a file")
    d.add_argument("--listen", default="127.0.0.1:8080", type=lambda t: host_port(t, 8080),
                   help="HOST:PORT to serve the page on (default: 127.0.0.1:8080)")
    d.add_argument("--table", action="append",
                   help="a table to show; repeat; default every table on the broker")
    d.add_argument("--key", action="append", required=True,
                   help="a trusted table public key (base64 or PEM); repeat for rotation")
    d.add_argument("--prefix", default="tables", help="the topic prefix (default tables)")
    d.add_argument("--session", help="an MQTT client id: a persistent session, so what is "
                                     "published while the display is down is queued for it")
    d.add_argument("--state", type=Path, help="a file the display keeps what it accepted "
                                              "in, to read back after a restart")
    d.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    # Imported here: every other tabled command builds this parser too.
    from daemon.display.server import serve  # noqa: PLC0415
    from daemon.display.view import Display  # noqa: PLC0415

    try:
        ring = Keyring.of(load_public_key(Path(k)) for k in args.key)
    except KeyFileError as exc:
        print(f"tabled: {exc}", file=sys.stderr)
        return 2
    host, port, tls = args.broker
    password = None
    if args.password_file is not None:
        try:
            password = args.password_file.read_text(encoding="utf-8").strip()
        except OSError as exc:
            print(f"tabled: cannot read {args.password_file}: {exc.strerror}",
                  file=sys.stderr)
            return 2
    if password is not None and not tls and not _loopback(host):
        # Payloads are signed, so reading them in the clear is safe; a password is not.
        print(f"tabled: a password would cross the network in the clear to {host}: use "
              "mqtts://", file=sys.stderr)
        return 2
    try:
        context = ssl.create_default_context(cafile=args.ca_file) if tls else None
    except (OSError, ssl.SSLError) as exc:
        print(f"tabled: the CA file {args.ca_file}: {exc}", file=sys.stderr)
        return 2
    display = Display(ring, args.prefix, set(args.table or []) or None)
    try:
        asyncio.run(serve(display, (host, port), args.listen, tables=args.table or [],
                          client_id=args.session, state_path=args.state, tls=context,
                          username=args.username, password=password))
    except KeyboardInterrupt:
        return 0
    except OSError as exc:
        print(f"tabled display: {exc}", file=sys.stderr)
        return 2
    return 0


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
