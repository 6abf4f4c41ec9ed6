"""``tabled principals``: list, add (a supervisor's security key, enrolled at the Pit page)
and revoke who may command a table, in its config file.

The file is edited as text, a section at a time, so the operator's comments and layout
stay; the result is checked whole (``parse_config``) before it replaces the file, and a
reload (``systemctl reload tabled``) applies it: a revoked credential is refused from the
next command on (``daemon/reload.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

from daemon.config import ConfigError, TableConfig, load_config, parse_config
from daemon.errors import InputError
from daemon.security.commands import COMMANDS
from daemon.security.passkeys import enrol
from daemon.security.signing import key_id

NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class PrincipalError(InputError, ValueError):
    """A principal that cannot be added or revoked as asked."""


RELOAD = "apply it with: systemctl reload tabled"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("principals", help="who may command a table: list, add a security "
                                          "key, revoke")
    psub = p.add_subparsers(dest="principals_command", required=True)
    ls = psub.add_parser("list", help="every principal in the config, and how it signs")
    ls.add_argument("--config", required=True, type=Path, help="the table config (TOML)")
    ls.set_defaults(func=_list)
    add = psub.add_parser("add", help="add a supervisor's security key from the Pit page's "
                                      "enrolment text")
    add.add_argument("--config", required=True, type=Path, help="the table config (TOML)")
    add.add_argument("--enrolment", required=True, type=Path,
                     help="a file with the text the Pit page showed after 'Enrol'")
    add.add_argument("--allow", action="append", choices=sorted(COMMANDS), metavar="COMMAND",
                     help="a command this supervisor may give; repeat (default: every one)")
    add.set_defaults(func=_add)
    rv = psub.add_parser("revoke", help="remove a principal from the config")
    rv.add_argument("--config", required=True, type=Path, help="the table config (TOML)")
    rv.add_argument("name", help="the principal's name")
    rv.set_defaults(func=_revoke)


def listing(cfg: TableConfig) -> list[str]:
    out = []
    for name, p in sorted(cfg.principals.items()):
        how = f"security key {p.credential.id_text}" if p.credential is not None else \
            f"Ed25519 key {key_id(p.key)}" if p.key is not None else "?"
        allow = "every command" if p.allow == frozenset(COMMANDS) else ", ".join(sorted(p.allow))
        out.append(f"{name}: {how}; may send {allow}")
    return out


def section(name: str, credential_id: str, public_key: str, allow: list[str] | None) -> str:
    lines = [f"[commands.principals.{name}]", f'credential_id = "{credential_id}"',
             f'public_key = "{public_key}"']
    if allow:
        lines.append("allow = [" + ", ".join(f'"{a}"' for a in allow) + "]")
    return "\n".join(lines) + "\n"


def without(text: str, name: str) -> str | None:
    """The config text without ``[commands.principals.NAME]`` (its header to the next
    header); None if it has no such section."""
    lines = text.splitlines(keepends=True)
    header = re.compile(rf"\s*\[\s*commands\.principals\.\"?{re.escape(name)}\"?\s*\]\s*(#.*)?$")
    start = next((i for i, line in enumerate(lines) if header.match(line)), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].lstrip().startswith("[")), len(lines))
    return "".join(lines[:start] + lines[end:])


def _replace(path: Path, text: str) -> None:
    """Checked whole first, then swapped in at once (no half-written config)."""
    parse_config(tomllib.loads(text), str(path))
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.chmod(tmp, path.stat().st_mode & 0o777)
    os.replace(tmp, path)


def _list(args: argparse.Namespace) -> int:
    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(f"tabled: {exc}", file=sys.stderr)
        return 2
    for line in listing(cfg) or ["no principals: the table takes no commands"]:
        print(line)
    return 0


def _add(args: argparse.Namespace) -> int:
    try:
        cfg = load_config(args.config)
        given = json.loads(args.enrolment.read_text(encoding="utf-8"))
        name, challenge, response = given["name"], given["challenge"], given["response"]
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise PrincipalError("the name must be 1-64 letters, digits, '-' or '_'")
        if name in cfg.principals:
            raise PrincipalError(f"{name} is already a principal; revoke it first")
        if cfg.webauthn is None:
            raise PrincipalError("the config has no [commands.webauthn] rp_id and origins (where "
                             "the Pit page is served): add them first (docs/pit.md)")
        done = enrol(response, challenge, cfg.webauthn, name)
        text = args.config.read_text(encoding="utf-8")
        text += ("" if text.endswith("\n") else "\n") + "\n" + section(
            name, done.credential.id_text, done.credential.key_text, args.allow)
        _replace(args.config, text)
    except (ConfigError, OSError, ValueError, KeyError, TypeError) as exc:
        print(f"tabled: {exc}", file=sys.stderr)
        return 2
    print(f"{name}: security key {done.credential.id_text} added to {args.config}; {RELOAD}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    try:
        text = without(args.config.read_text(encoding="utf-8"), args.name)
        if text is None:
            raise PrincipalError(f"{args.config} lists no principal {args.name!r}")
        _replace(args.config, text)
    except (ConfigError, OSError, ValueError, tomllib.TOMLDecodeError) as exc:
        print(f"tabled: {exc}", file=sys.stderr)
        return 2
    print(f"{args.name} revoked in {args.config}; {RELOAD}")
    return 0

