"""The table config (TOML), validated at start. Every mistake is collected and reported
together, each naming its key, e.g.::

    /etc/tabled/table.toml is not valid:
      table.decks: 12 is outside 4-10 (tiger-buffalo clause 2.2.1)
      devices.shuffler: missing; tiger-buffalo needs shoe and shuffler
"""

from __future__ import annotations

import ipaddress
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from daemon.device_url import DeviceUrl, DeviceUrlError, parse_device_url
from daemon.games import GAMES
from daemon.games.errors import RulesError

DEVICES_NEEDED = {"baccarat": ("shoe", "shuffler"), "dice": ("tumbler",)}
SECTIONS = {
    "table": {"id", "game", "layout", "decks"},
    "devices": {"shoe", "shuffler", "tumbler"},
    "broker": {"url", "username", "password", "password_file", "ca_file", "cert_file",
               "key_file", "allow_plaintext_remote", "client_id"},
    "journal": {"path"},
    "mqtt": {"topic_prefix"},
}


class ConfigError(ValueError):
    def __init__(self, source: str, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"{source} is not valid:\n" + "\n".join(f"  {p}" for p in problems))


@dataclass(frozen=True)
class BrokerConfig:
    host: str
    port: int
    tls: bool
    username: str | None
    password: str | None
    ca_file: Path | None
    cert_file: Path | None
    key_file: Path | None
    client_id: str


@dataclass(frozen=True)
class TableConfig:
    table_id: str
    game: str
    layout: str
    decks: int | None
    devices: dict[str, DeviceUrl]
    broker: BrokerConfig
    journal_path: Path
    topic_prefix: str


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Checker:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.problems: list[str] = []

    def section(self, name: str) -> dict[str, Any]:
        value = self.data.get(name, {})
        if not isinstance(value, dict):
            self.problems.append(f"{name}: must be a table ([{name}])")
            return {}
        for key in sorted(set(value) - SECTIONS[name]):
            self.problems.append(f"{name}.{key}: unknown key (known: "
                                 f"{', '.join(sorted(SECTIONS[name]))})")
        return value

    def string(self, section: dict[str, Any], sec: str, key: str, *,
               default: str | None = None) -> str | None:
        value = section.get(key, default)
        if value is None:
            self.problems.append(f"{sec}.{key}: missing")
            return None
        if not isinstance(value, str) or not value.strip():
            self.problems.append(f"{sec}.{key}: must be a non-empty string, got {value!r}")
            return None
        return value


def _broker(c: _Checker, b: dict[str, Any], table_id: str) -> BrokerConfig | None:
    url = c.string(b, "broker", "url", default="mqtt://127.0.0.1:1883")
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
        c.problems.append(f"broker.url: {url!r} must be mqtt://host[:port] or mqtts://host[:port]")
        return None
    tls = parts.scheme == "mqtts"
    try:
        port = parts.port or (8883 if tls else 1883)
    except ValueError:
        c.problems.append(f"broker.url: {url!r} has an invalid port")
        return None
    allow = b.get("allow_plaintext_remote", False)
    if not isinstance(allow, bool):
        c.problems.append("broker.allow_plaintext_remote: must be true or false")
        allow = False
    if not tls and not _is_loopback(parts.hostname) and not allow:
        c.problems.append(f"broker.url: plaintext MQTT to {parts.hostname}, which is not "
                          "loopback; use mqtts:// or set broker.allow_plaintext_remote = true")
    if "password" in b and "password_file" in b:
        c.problems.append("broker.password: give password or password_file, not both")
    password = b.get("password")
    if "password_file" in b:
        path = Path(str(b["password_file"]))
        try:
            password = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            c.problems.append(f"broker.password_file: cannot read {path}: {exc.strerror}")
    files: dict[str, Path | None] = {}
    for key in ("ca_file", "cert_file", "key_file"):
        files[key] = Path(str(b[key])) if key in b else None
        if files[key] is not None and not files[key].is_file():  # type: ignore[union-attr]
            c.problems.append(f"broker.{key}: {files[key]} does not exist")
    if (files["cert_file"] is None) != (files["key_file"] is None):
        c.problems.append("broker.cert_file: a client certificate needs both cert_file and "
                          "key_file")
    if not tls and any(files.values()):
        c.problems.append("broker.url: certificate files are given but the URL is not mqtts://")
    return BrokerConfig(parts.hostname, port, tls, b.get("username"), password,
                        files["ca_file"], files["cert_file"], files["key_file"],
                        str(b.get("client_id", f"tabled-{table_id}")))


def parse_config(data: dict[str, Any], source: str = "config") -> TableConfig:
    c = _Checker(data)
    for key in sorted(set(data) - set(SECTIONS)):
        c.problems.append(f"{key}: unknown section (known: {', '.join(sorted(SECTIONS))})")
    t, d, b = c.section("table"), c.section("devices"), c.section("broker")
    j, m = c.section("journal"), c.section("mqtt")
    table_id = c.string(t, "table", "id")
    if table_id and not all(ch.isalnum() or ch in "-_" for ch in table_id):
        c.problems.append(f"table.id: {table_id!r} may use letters, digits, '-' and '_' only "
                          "(it is part of every MQTT topic)")
    game_id = c.string(t, "table", "game")
    layout = c.string(t, "table", "layout")
    game = GAMES.get(game_id or "")
    decks: int | None = None
    if game_id and game is None:
        c.problems.append(f"table.game: unknown game {game_id!r}; the approved games are "
                          f"{', '.join(GAMES)}")
    if game is not None:
        if layout:
            try:
                game.check_layout(layout)
            except RulesError as exc:
                c.problems.append(f"table.layout: {exc}")
        if game.decks is not None:
            raw = t.get("decks")
            if raw is None:
                c.problems.append(f"table.decks: missing; {game.id} is played with "
                                  f"{game.decks[0]}-{game.decks[1]} decks")
            else:
                try:
                    decks = game.check_decks(raw)
                except RulesError:
                    c.problems.append(f"table.decks: {raw!r} is outside {game.decks[0]}-"
                                      f"{game.decks[1]} ({game.id} clause {game.decks_clause})")
        elif "decks" in t:
            c.problems.append(f"table.decks: {game.id} is played with dice; remove this key")
    devices: dict[str, DeviceUrl] = {}
    for name in ("shoe", "shuffler", "tumbler"):
        if name in d:
            try:
                devices[name] = parse_device_url(d[name])
            except DeviceUrlError as exc:
                c.problems.append(f"devices.{name}: {exc}")
    if game is not None:
        needed = DEVICES_NEEDED[game.kind]
        for name in needed:
            if name not in d:
                c.problems.append(f"devices.{name}: missing; {game.id} needs "
                                  f"{' and '.join(needed)}")
        for name in sorted(set(d) & {"shoe", "shuffler", "tumbler"} - set(needed)):
            c.problems.append(f"devices.{name}: {game.id} does not use a {name}")
    broker = _broker(c, b, table_id or "table")
    journal = c.string(j, "journal", "path", default="/var/lib/tabled/journal.db")
    prefix = c.string(m, "mqtt", "topic_prefix", default="tables")
    if prefix and any(ch in prefix for ch in "#+") :
        c.problems.append(f"mqtt.topic_prefix: {prefix!r} may not contain MQTT wildcards")
    if c.problems:
        raise ConfigError(source, c.problems)
    assert table_id and game_id and layout and broker and journal and prefix
    return TableConfig(table_id, game_id, layout, decks, devices, broker, Path(journal),
                       prefix.rstrip("/"))


def load_config(path: Path | str) -> TableConfig:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(str(p), [f"cannot read: {exc.strerror}"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(p), [f"not valid TOML: {exc}"]) from None
    return parse_config(data, str(p))
