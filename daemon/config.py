"""The table config (TOML), validated at start. Every mistake is collected and reported
together, each naming its key, e.g.::

    /etc/tabled/table.toml is not valid:
      table.decks: 12 is outside 4-10 (tiger-buffalo clause 2.2.1)
      devices.shuffler: missing; tiger-buffalo needs shoe and shuffler
"""

from __future__ import annotations

import ipaddress
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from daemon.drivers.device_url import DeviceUrl, DeviceUrlError, parse_device_url
from daemon.errors import InputError
from daemon.games import GAMES
from daemon.games.dice_watch import DiceWatchError, DiceWatchSettings
from daemon.games.errors import RulesError
from daemon.games.model import GameRules
from daemon.mqtt.broker_config import BrokerConfig
from daemon.round.kinds import table_kind
from daemon.security.commands import COMMANDS
from daemon.security.passkeys import RelyingParty, parse_credential, parse_relying_party
from daemon.security.principal import Principal
from daemon.security.published_keys import published
from daemon.security.signing import KeyFileError, Signer, load_private_key, parse_public_key
from daemon.system.logs import LEVELS

CREDENTIAL = "credential:"


# A game's table settings (daemon/games/table_settings.py) are [table] keys of their own.
SETTING_KEYS = {s.key for g in GAMES.values() for s in g.settings}
SECTIONS = {
    "table": {"id", "game", "layout", "decks", "card_confidence_floor", "insurance",
              "dice_confidence_floor", *SETTING_KEYS},
    "devices": {"shoe", "shuffler", "tumbler", "serials"},
    "broker": {"url", "urls", "username", "password", "password_file", "replay_username",
               "replay_password_file", "ca_file", "cert_file",
               "key_file", "allow_plaintext_remote", "client_id"},
    "journal": {"path", "accept_new", "keep_days", "keep_rounds"},
    "mqtt": {"topic_prefix"},
    "signing": {"key_file"},
    "commands": {"principals", "max_age_seconds", "webauthn"},
    "dice_watch": {"window", "false_alarm_rate"},
    "metrics": {"listen"},
    "log": {"level"},
}
PRINCIPAL_KEYS = {"key", "allow", "credential_id", "public_key"}
WEBAUTHN_KEYS = {"rp_id", "origins"}
MAKE_KEY = ("make the principal's own key pair on its machine with 'tabled keys generate "
            "--out {name}' and put the contents of {name}.pub here")


def table_id_problem(table_id: str) -> str | None:
    """What is wrong with a table id, or None: the one rule for the config, the command
    line, and what a signed command names."""
    if table_id and all(ch.isalnum() or ch in "-_" for ch in table_id):
        return None
    return "letters, digits, '-' and '_' only (it is part of every MQTT topic)"


class ConfigError(InputError, ValueError):
    def __init__(self, source: str, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"{source} is not valid:\n" + "\n".join(f"  {p}" for p in problems))


@dataclass(frozen=True)
class TableRules:
    """Per-table settings of the game's procedures (docs/operations.md)."""

    # Insurance Plus 4.2.2: a private table where the House allowed no Insurance.
    insurance_offered: bool = True
    # Tai Sai: a throw read with less confidence (percent) is not a result; the pit decides.
    dice_confidence_floor: int = 90
    dice_watch: DiceWatchSettings = field(default_factory=DiceWatchSettings)
    # The house's reading where approved text reads two ways (e.g. D2's twin_tiger_pair),
    # as chosen in [table]; unset keys take the game's documented default.
    readings: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class JournalPolicy:
    """[journal]: what to do with a journal that is not the one the table had
    (daemon/store/identity.py), and how long stored messages stay replayable."""

    accept_new: str | None = None  # the operator's reason to start on another journal
    keep_days: int = 30
    keep_rounds: int = 100_000


def _journal_policy(c: _Checker, j: dict[str, Any]) -> JournalPolicy:
    accept = j.get("accept_new")
    if accept is not None and (not isinstance(accept, str) or not accept.strip()):
        c.problems.append("journal.accept_new: must say why (a non-empty string)")
        accept = None
    keep = {}
    for key, low in (("keep_days", 1), ("keep_rounds", 100)):
        value = j.get(key, getattr(JournalPolicy, key))
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            c.problems.append(f"journal.{key}: {value!r} must be an integer >= {low}")
            value = getattr(JournalPolicy, key)
        keep[key] = value
    return JournalPolicy(accept, keep["keep_days"], keep["keep_rounds"])


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
    signer: Signer
    principals: dict[str, Principal]
    command_max_age: float
    # A card read below this confidence (percent) holds the round for the Pit (issue 11).
    card_confidence_floor: int = 80
    serials: dict[str, str] = field(default_factory=dict)  # device -> its pinned serial
    rules: TableRules = field(default_factory=TableRules)
    journal_policy: JournalPolicy = field(default_factory=JournalPolicy)
    # Where Prometheus scrapes /metrics (daemon/system/metrics_server.py); None: not served.
    metrics_listen: tuple[str, int] | None = None
    # [log] level: None leaves it to the command line's --log-level (a reload can change it).
    log_level: str | None = None
    # [commands.webauthn]: where the Pit page is served; None when no principal uses WebAuthn.
    webauthn: RelyingParty | None = None


def _metrics(c: _Checker, m: dict[str, Any]) -> tuple[str, int] | None:
    """``[metrics] listen = "HOST:PORT"``: loopback, or an address on the private network
    the unit's IPAddressAllow= admits (a scraper elsewhere could not reach it)."""
    if "listen" not in m:
        return None
    text = m["listen"]
    host, _, port = str(text).rpartition(":")
    host = host.strip("[]")
    try:
        address = ipaddress.ip_address("127.0.0.1" if host == "localhost" else host)
        number = int(port)
    except ValueError:
        c.problems.append(f"metrics.listen: {text!r} must be HOST:PORT with an IP address, "
                          "e.g. \"127.0.0.1:9464\"")
        return None
    if not 0 < number < 65536:
        c.problems.append(f"metrics.listen: port {number} is outside 1-65535")
        return None
    if not (address.is_loopback or address.is_private or address.is_link_local) or \
            address.is_unspecified:
        c.problems.append(f"metrics.listen: {host} is neither loopback nor on a private "
                          "network, which is all the unit's IPAddressAllow= admits; give the "
                          "table's own address on the floor network, or 127.0.0.1")
        return None
    return str(address), number


def _table_rules(c: _Checker, t: dict[str, Any], w: dict[str, Any],
                 game: GameRules[Any] | None) -> TableRules:
    insurance, floor = t.get("insurance", True), t.get("dice_confidence_floor", 90)
    if not isinstance(insurance, bool):
        c.problems.append(f"table.insurance: {insurance!r} must be true or false")
    elif game is not None and "insurance" in t and not game.has_insurance:
        c.problems.append(f"table.insurance: {game.id} has no Insurance; remove this key")
    if isinstance(floor, bool) or not isinstance(floor, int) or not 1 <= floor <= 100:
        c.problems.append(f"table.dice_confidence_floor: {floor!r} must be a whole percent "
                          "in 1-100")
        floor = 90
    elif game is not None and "dice_confidence_floor" in t and \
            not table_kind(game).takes("table.dice_confidence_floor"):
        c.problems.append(f"table.dice_confidence_floor: {game.id} is played with "
                          f"{table_kind(game).played_with}; remove this key")
    if w and game is not None and not table_kind(game).takes("dice_watch"):
        c.problems.append(f"dice_watch: {game.id} is played with "
                          f"{table_kind(game).played_with}; remove this section")
    try:
        watch = DiceWatchSettings(**{k: v for k, v in w.items() if k in SECTIONS["dice_watch"]})
    except DiceWatchError as exc:
        c.problems.append(f"dice_watch.{exc}")
        watch = DiceWatchSettings()
    return TableRules(insurance is not False, floor, watch, _readings(c, t, game))


def _readings(c: _Checker, t: dict[str, Any], game: GameRules[Any] | None) -> dict[str, str]:
    chosen: dict[str, str] = {}
    for key in sorted(SETTING_KEYS & set(t)):
        value = t[key]
        if not isinstance(value, str):
            c.problems.append(f"table.{key}: {value!r} must be a string")
            continue
        if game is None:
            continue
        try:
            game.configured({key: value})
        except RulesError as exc:
            c.problems.append(f"table.{key}: {exc}")
        else:
            chosen[key] = value
    return chosen


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


def resolve_path(value: str) -> Path:
    """A path, or ``credential:NAME`` for a systemd credential (``LoadCredential=``)."""
    if not value.startswith(CREDENTIAL):
        return Path(value)
    name = value[len(CREDENTIAL):]
    directory = os.environ.get("CREDENTIALS_DIRECTORY")
    if not name or "/" in name:
        raise ValueError(f"{value!r}: a credential name is a plain file name")
    if not directory:
        raise ValueError(f"{value!r} needs $CREDENTIALS_DIRECTORY, which systemd sets for a "
                         "unit with LoadCredential=; outside systemd, give --credentials DIR "
                         f"(the folder holding {name})")
    return Path(directory) / name


def _path(c: _Checker, section: dict[str, Any], sec: str, key: str) -> Path | None:
    try:
        return resolve_path(str(section[key]))
    except ValueError as exc:
        c.problems.append(f"{sec}.{key}: {exc}")
        return None


def _signing(c: _Checker, s: dict[str, Any]) -> Signer | None:
    if "key_file" not in s:
        c.problems.append("signing.key_file: missing; every published payload is signed "
                          "(make a key with 'tabled keys generate')")
        return None
    path = _path(c, s, "signing", "key_file")
    if path is None:
        return None
    try:
        signer = Signer(load_private_key(path))
    except KeyFileError as exc:
        c.problems.append(f"signing.key_file: {exc}")
        return None
    where = published(signer.key.public_key())
    if where is not None:
        c.problems.append(f"signing.key_file: {path} is a published key ({where}): anyone "
                          "could sign results as this table; make its own with 'tabled keys "
                          "generate --out /etc/tabled/signing'")
    return signer


def _commands(c: _Checker, s: dict[str, Any]
              ) -> tuple[dict[str, Principal], float, RelyingParty | None]:
    max_age = s.get("max_age_seconds", 120)
    if isinstance(max_age, bool) or not isinstance(max_age, int | float) or not \
            5 <= max_age <= 3600:
        c.problems.append(f"commands.max_age_seconds: {max_age!r} must be a number in 5-3600")
        max_age = 120
    rp = _webauthn(c, s.get("webauthn"))
    raw = s.get("principals", {})
    if not isinstance(raw, dict):
        c.problems.append("commands.principals: must be a table of [commands.principals.NAME]")
        return {}, float(max_age), rp
    principals: dict[str, Principal] = {}
    for name, p in raw.items():
        where = f"commands.principals.{name}"
        if not isinstance(p, dict):
            c.problems.append(f"{where}: must be a table with 'key' (and 'allow')")
            continue
        for key in sorted(set(p) - PRINCIPAL_KEYS):
            c.problems.append(f"{where}.{key}: unknown key (known: "
                              f"{', '.join(sorted(PRINCIPAL_KEYS))})")
        allow = p.get("allow", sorted(COMMANDS))
        if not isinstance(allow, list) or not all(isinstance(a, str) for a in allow):
            c.problems.append(f"{where}.allow: must be a list of command names")
            allow = []
        for a in allow:
            if a not in COMMANDS:
                c.problems.append(f"{where}.allow: unknown command {a!r} (known: "
                                  f"{', '.join(COMMANDS)})")
        if "credential_id" in p or "public_key" in p:
            principal = _webauthn_principal(c, where, name, p, frozenset(allow), rp)
        else:
            principal = _ed25519_principal(c, where, name, p, frozenset(allow))
        if principal is not None:
            principals[name] = principal
    return principals, float(max_age), rp


def _ed25519_principal(c: _Checker, where: str, name: str, p: dict[str, Any],
                       allow: frozenset[str]) -> Principal | None:
    text = str(p.get("key", ""))
    try:
        key = parse_public_key(text)
    except KeyFileError as exc:
        what = "the example's placeholder, not a key" if text.startswith("REPLACE-ME") \
            else str(exc)
        c.problems.append(f"{where}.key: {what}; {MAKE_KEY.format(name=name)}")
        return None
    if (source := published(key)) is not None:
        c.problems.append(f"{where}.key: its private half is published ({source}), so "
                          f"anyone can sign commands with it; {MAKE_KEY.format(name=name)}")
        return None
    return Principal(name, key, allow)


def _webauthn_principal(c: _Checker, where: str, name: str, p: dict[str, Any],
                        allow: frozenset[str], rp: RelyingParty | None) -> Principal | None:
    if "key" in p:
        c.problems.append(f"{where}: either 'key' (Ed25519) or 'credential_id' and "
                          "'public_key' (WebAuthn), not both")
        return None
    if rp is None:
        c.problems.append(f"{where}: a WebAuthn credential needs [commands.webauthn] rp_id "
                          "and origins (where the Pit page is served)")
    try:
        credential = parse_credential(p.get("credential_id"), p.get("public_key"))
    except ValueError as exc:
        c.problems.append(f"{where}: {exc}; enrol with the Pit page and 'tabled principals "
                          "add' (docs/pit.md)")
        return None
    return Principal(name, None, allow, credential)


def _webauthn(c: _Checker, w: object) -> RelyingParty | None:
    if w is None:
        return None
    if not isinstance(w, dict):
        c.problems.append("commands.webauthn: must be a table with rp_id and origins")
        return None
    for key in sorted(set(w) - WEBAUTHN_KEYS):
        c.problems.append(f"commands.webauthn.{key}: unknown key (known: origins, rp_id)")
    try:
        return parse_relying_party(w.get("rp_id"), w.get("origins"))
    except ValueError as exc:
        c.problems.append(f"commands.webauthn: {exc}")
        return None


def _devices(c: _Checker, d: dict[str, Any], game: GameRules[Any] | None
             ) -> tuple[dict[str, DeviceUrl], dict[str, str]]:
    devices: dict[str, DeviceUrl] = {}
    for name in ("shoe", "shuffler", "tumbler"):
        if name in d:
            try:
                devices[name] = parse_device_url(d[name])
            except DeviceUrlError as exc:
                c.problems.append(f"devices.{name}: {exc}")
    if game is not None:
        needed = table_kind(game).devices
        for name in needed:
            if name not in d:
                c.problems.append(f"devices.{name}: missing; {game.id} needs "
                                  f"{' and '.join(needed)}")
        for name in sorted(set(d) & {"shoe", "shuffler", "tumbler"} - set(needed)):
            c.problems.append(f"devices.{name}: {game.id} does not use a {name}")
    return devices, _serials(c, d, devices)


def _serials(c: _Checker, d: dict[str, Any], devices: dict[str, DeviceUrl]
             ) -> dict[str, str]:
    """``[devices.serials]``: the serial number each device must report when identified.
    USB ids can be copied by any device; the table refuses one that reports another serial
    (issue 12)."""
    raw = d.get("serials", {})
    if not isinstance(raw, dict):
        c.problems.append("devices.serials: must be a table of device = \"serial number\"")
        return {}
    for name in sorted(set(raw) - (set(d) & {"shoe", "shuffler", "tumbler"})):
        c.problems.append(f"devices.serials.{name}: no {name} is configured")
    out: dict[str, str] = {}
    for name in devices:
        value = raw.get(name)
        if value is None:
            c.problems.append(
                f"devices.serials.{name}: missing; pin the serial number the {name} reports "
                f"(its status on tables/<table>/devices/{name}, or the log line '{name} "
                "ready: ... serial ...'): a device reporting another is refused")
        elif not isinstance(value, str) or not value.strip() or len(value) > 64:
            c.problems.append(f"devices.serials.{name}: must be a serial number of 1-64 "
                              f"characters, got {value!r}")
        else:
            out[name] = value
    return out


DEFAULT_BROKER = "mqtt://127.0.0.1:1883"  # broker.url left out: the table's own Mosquitto


def _broker_urls(c: _Checker, b: dict[str, Any]) -> list[str] | None:
    """``url`` (one broker) or ``urls`` (the nodes of a cluster, in failover order)."""
    if "urls" not in b:
        url = c.string(b, "broker", "url", default=DEFAULT_BROKER)
        return None if url is None else [url]
    urls = b["urls"]
    if "url" in b:
        c.problems.append("broker.urls: give url or urls, not both")
    if not isinstance(urls, list) or not urls or \
            not all(isinstance(u, str) and u.strip() for u in urls):
        c.problems.append(f"broker.urls: {urls!r} must be a non-empty list of URLs")
        return None
    if len(set(urls)) != len(urls):
        c.problems.append("broker.urls: a node is listed twice")
    return list(urls)


def _broker(c: _Checker, b: dict[str, Any], table_id: str) -> BrokerConfig | None:
    urls = _broker_urls(c, b)
    if urls is None:
        return None
    key = "url" if "urls" not in b else "urls"
    allow = b.get("allow_plaintext_remote", False)
    if not isinstance(allow, bool):
        c.problems.append("broker.allow_plaintext_remote: must be true or false")
        allow = False
    nodes: list[tuple[str, int]] = []
    schemes = set()
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("mqtt", "mqtts") or not parts.hostname:
            c.problems.append(f"broker.{key}: {url!r} must be mqtt://host[:port] or "
                              "mqtts://host[:port]")
            continue
        schemes.add(parts.scheme)
        try:
            port = parts.port or (8883 if parts.scheme == "mqtts" else 1883)
        except ValueError:
            c.problems.append(f"broker.{key}: {url!r} has an invalid port")
            continue
        if parts.scheme == "mqtt" and not _is_loopback(parts.hostname) and not allow:
            c.problems.append(f"broker.{key}: plaintext MQTT to {parts.hostname}, which is "
                              "not loopback; use mqtts:// or set "
                              "broker.allow_plaintext_remote = true")
        nodes.append((parts.hostname, port))
    if len(schemes) > 1:
        # One TLS setting (CA, client certificate) serves every node of the cluster.
        c.problems.append(f"broker.{key}: mixes mqtt:// and mqtts://; the nodes of one "
                          "cluster share one scheme")
    if not nodes:
        return None
    tls = schemes == {"mqtts"}
    if "password" in b:
        # docs/operations.md: secrets are systemd credentials, never in the config.
        c.problems.append("broker.password: a password is a secret and never goes in the "
                          "config; put it in /etc/credstore/tabled/mqtt-password and set "
                          'password_file = "credential:mqtt-password"')
    password, replay_password = (_password(c, b, key) for key in (
        "password_file", "replay_password_file"))
    replay_username = b.get("replay_username")
    if replay_username is not None and (not isinstance(replay_username, str)
                                        or not replay_username):
        c.problems.append("broker.replay_username: a broker username")
        replay_username = None
    if "replay_password_file" in b and replay_username is None:
        c.problems.append("broker.replay_password_file: given without replay_username")
    files: dict[str, Path | None] = {}
    for key in ("ca_file", "cert_file", "key_file"):
        files[key] = _path(c, b, "broker", key) if key in b else None
        if files[key] is not None and not files[key].is_file():  # type: ignore[union-attr]
            c.problems.append(f"broker.{key}: {files[key]} does not exist")
    if (files["cert_file"] is None) != (files["key_file"] is None):
        c.problems.append("broker.cert_file: a client certificate needs both cert_file and "
                          "key_file")
    if not tls and any(files.values()):
        c.problems.append("broker.url: certificate files are given but the URL is not mqtts://")
    return BrokerConfig(nodes[0][0], nodes[0][1], tls, b.get("username"), password,
                        files["ca_file"], files["cert_file"], files["key_file"],
                        str(b.get("client_id", f"tabled-{table_id}")), tuple(nodes),
                        replay_username, replay_password)


def _password(c: _Checker, b: dict[str, Any], key: str) -> str | None:
    """A password from its file (a systemd credential)."""
    path = _path(c, b, "broker", key) if key in b else None
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        c.problems.append(f"broker.{key}: cannot read {path}: {exc.strerror}")
        return None


def _decks_problem(game: Any, raw: Any) -> str:
    what = "is outside" if isinstance(raw, int) and not isinstance(raw, bool) \
        else "is not a whole number of decks; give one in"
    return (f"table.decks: {raw!r} {what} {game.decks[0]}-{game.decks[1]} "
            f"({game.id} clause {game.decks_clause})")


def parse_config(data: dict[str, Any], source: str = "config") -> TableConfig:
    c = _Checker(data)
    for key in sorted(set(data) - set(SECTIONS)):
        c.problems.append(f"{key}: unknown section (known: {', '.join(sorted(SECTIONS))})")
    t, d, b, j, m = (c.section(n) for n in ("table", "devices", "broker", "journal", "mqtt"))
    signer = _signing(c, c.section("signing"))
    principals, max_age, rp = _commands(c, c.section("commands"))
    table_id = c.string(t, "table", "id")
    if table_id and (problem := table_id_problem(table_id)) is not None:
        c.problems.append(f"table.id: {table_id!r} may use {problem}")
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
                    c.problems.append(_decks_problem(game, raw))
        elif "decks" in t:
            c.problems.append(f"table.decks: {game.id} is played with "
                              f"{table_kind(game).played_with}; remove this key")
    devices, serials = _devices(c, d, game)
    broker, rules = _broker(c, b, table_id or "table"), _table_rules(
        c, t, c.section("dice_watch"), game)
    journal, policy = (c.string(j, "journal", "path", default="/var/lib/tabled/journal.db"),
                       _journal_policy(c, j))
    prefix, floor = (c.string(m, "mqtt", "topic_prefix", default="tables"),
                     _confidence_floor(c, t))
    metrics = _metrics(c, c.section("metrics"))
    level = c.section("log").get("level")
    if level is not None and (not isinstance(level, str) or level.upper() not in LEVELS):
        c.problems.append(f"log.level: {level!r} must be one of {', '.join(LEVELS)}")
    if prefix and any(ch in prefix for ch in "#+") :
        c.problems.append(f"mqtt.topic_prefix: {prefix!r} may not contain MQTT wildcards")
    if c.problems:
        raise ConfigError(source, c.problems)
    assert table_id and game_id and layout and broker and journal and prefix and signer
    return TableConfig(table_id, game_id, layout, decks, devices, broker, Path(journal),
                       prefix.rstrip("/"), signer, principals, max_age,
                       card_confidence_floor=floor, serials=serials, rules=rules,
                       journal_policy=policy, metrics_listen=metrics,
                       log_level=None if level is None else str(level).upper(),
                       webauthn=rp)


def _confidence_floor(c: _Checker, t: dict[str, Any]) -> int:
    floor = t.get("card_confidence_floor", 80)
    if isinstance(floor, bool) or not isinstance(floor, int) or not 0 <= floor <= 100:
        c.problems.append(f"table.card_confidence_floor: {floor!r} is not a percentage 0-100")
        return 80
    return floor


def load_config(path: Path | str) -> TableConfig:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(str(p), [f"cannot read: {exc.strerror}"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(p), [f"not valid TOML: {exc}"]) from None
    return parse_config(data, str(p))
