"""What a reload (``systemctl reload tabled``: SIGHUP) may change in a running table, and
what it may not.

A restart mid-round is a technical interruption (RWS 5.4, MBS 5.17); a reload is not:
it changes only what a round does not depend on, all at once or not at all. The new
config is read and checked whole; if anything that makes the table what it is differs
(``FIXED``: its id, game, layout, decks, the confidence floors that judge its reads,
devices, journal, topics, key, broker address, metrics address), the reload is refused
with every reason and the running config is kept. Otherwise each of ``CHANGEABLE`` is
compared and the differences are applied together (``TableService.reconfigure``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from daemon.config import TableConfig
from daemon.games.dice_watch import DiceWatch, DiceWatchSettings
from daemon.mqtt.broker_config import BrokerConfig
from daemon.security.principal import Principal


def _key(p: Principal) -> bytes:
    if p.credential is not None:  # a WebAuthn credential: its id and key, both
        return p.credential.credential_id + p.credential.public_key
    assert p.key is not None
    return p.key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def principals_view(cfg: TableConfig) -> dict[str, list[str]]:
    """Who may command the table, and what: as journalled."""
    return {name: sorted(p.allow) for name, p in sorted(cfg.principals.items())}


def _principals(cfg: TableConfig) -> dict[str, tuple[bytes, frozenset[str]]]:
    return {name: (_key(p), p.allow) for name, p in cfg.principals.items()}


def _broker_address(b: BrokerConfig) -> tuple[Any, ...]:
    return (b.nodes or ((b.host, b.port),), b.tls, b.client_id)


def _key_of_signer(c: TableConfig) -> bytes:
    return c.signer.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


# Key, what it reads, and why it cannot change while the table runs.
FIXED: tuple[tuple[str, Callable[[TableConfig], Any], str], ...] = (
    ("table.id", lambda c: c.table_id, "every topic, the journal and the signed commands "
     "name it"),
    ("table.game", lambda c: c.game, "the rules of the round in play"),
    ("table.layout", lambda c: c.layout, "the bets placed on the table were placed on it"),
    ("table.decks", lambda c: c.decks, "the shoe in play was made with it"),
    ("table.insurance", lambda c: c.rules.insurance_offered, "a window may be open"),
    # The floors decide what a read is, not only what is alerted: the round in play (and
    # the journal a restart folds) was judged with the floor it had.
    ("table.card_confidence_floor", lambda c: c.card_confidence_floor, "the reads of the "
     "round in play were judged with it"),
    ("table.dice_confidence_floor", lambda c: c.rules.dice_confidence_floor, "the throw "
     "in play is judged with it"),
    ("devices", lambda c: (c.devices, c.serials), "each device's session is opened at "
     "start; a device is changed by a restart between rounds"),
    ("journal", lambda c: (c.journal_path, c.journal_policy), "the journal open is the "
     "table's record"),
    ("mqtt.topic_prefix", lambda c: c.topic_prefix, "consumers follow the topics"),
    ("signing.key_file", _key_of_signer, "consumers verify with the key "
     "they have"),
    ("broker.url", lambda c: _broker_address(c.broker), "the session open is on it, with "
     "its client id and TLS or not; only the credentials change, at the next connection"),
    ("metrics.listen", lambda c: c.metrics_listen, "the listener is bound at start"),
)

# Key, what it reads: changed by a reload, all together.
CHANGEABLE: tuple[tuple[str, Callable[[TableConfig], Any]], ...] = (
    ("commands.principals", _principals),
    ("commands.max_age_seconds", lambda c: c.command_max_age),
    ("commands.webauthn", lambda c: c.webauthn),
    ("log.level", lambda c: c.log_level),
    # The dice watch's alert threshold (false_alarm_rate) and window: it only alerts.
    ("dice_watch", lambda c: c.rules.dice_watch),
    ("broker.credentials", lambda c: (c.broker.username, c.broker.password,
                                      c.broker.ca_file, c.broker.cert_file,
                                      c.broker.key_file, c.broker.replay_login)),
)


@dataclass(frozen=True)
class Plan:
    refused: list[str]  # why not, one line per key; empty when it may go ahead
    changed: list[str]  # the keys that differ (empty: nothing to do)


def plan(running: TableConfig, new: TableConfig) -> Plan:
    refused = [f"{key}: cannot change while the table runs ({why}); restart between "
               "rounds to change it" for key, read, why in FIXED
               if read(running) != read(new)]
    changed = [key for key, read in CHANGEABLE if read(running) != read(new)]
    return Plan(refused, changed)


def principal_changes(running: TableConfig, new: TableConfig) -> dict[str, list[str]]:
    """added / revoked / altered (another key, or other commands): principal names."""
    old, now = _principals(running), _principals(new)
    return {"added": sorted(set(now) - set(old)), "revoked": sorted(set(old) - set(now)),
            "altered": sorted(n for n in set(old) & set(now) if old[n] != now[n])}


def rewatch(old: DiceWatch, settings: DiceWatchSettings) -> DiceWatch:
    """The dice watch with new settings, keeping the throws it has counted (the newest,
    as many as the new window holds) and the checks already tripped (not alerted again
    for the same trip)."""
    if old.settings == settings:
        return old
    new = DiceWatch(settings)
    for throw in list(old.throws)[-settings.window:]:
        new.add(throw)
    new.tripped = set(old.tripped)
    return new
