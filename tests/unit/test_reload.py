"""What a reload may change mid-round and what it refuses (issue 29, Build 3)."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon import reload
from daemon.config import parse_config
from daemon.games.dice_watch import DiceWatch, DiceWatchSettings
from daemon.security.signing import public_key_text
from tests.unit.configs import good


def with_(data: dict[str, Any], section: str, **values: Any) -> dict[str, Any]:
    return {**data, section: {**data.get(section, {}), **values}}


@pytest.mark.parametrize(("section", "values", "key"), [
    # The client id is tabled-<table id> unless given: the broker session changes too.
    ("table", {"id": "bac-08"}, "table.id broker.url"),
    ("table", {"game": "tiger-baccarat", "layout": "A"}, "table.game table.layout"),
    ("table", {"layout": "Q"}, "table.layout"),
    ("table", {"decks": 6}, "table.decks"),
    ("table", {"card_confidence_floor": 60}, "table.card_confidence_floor"),
    ("devices", {"shoe": "serial:///dev/ttyUSB9?baud=115200"}, "devices"),
    ("journal", {"path": "/tmp/other.db"}, "journal"),
    ("mqtt", {"topic_prefix": "floor2"}, "mqtt.topic_prefix"),
    ("broker", {"url": "mqtt://127.0.0.2:1883"}, "broker.url"),
    ("metrics", {"listen": "127.0.0.1:9464"}, "metrics.listen"),
])
def test_issue_29_what_makes_the_table_what_it_is_is_refused_with_the_reason(
        section: str, values: dict[str, Any], key: str) -> None:
    running = parse_config(good())
    p = reload.plan(running, parse_config(with_(good(), section, **values)))
    assert [r.split(":")[0] for r in p.refused] == key.split()
    assert "cannot change while the table runs" in p.refused[0]


def test_issue_29_principals_log_level_and_the_dice_watch_may_change() -> None:
    running = parse_config(good())
    extra = public_key_text(Ed25519PrivateKey.generate().public_key())
    data = with_(good(), "log", level="debug")
    data = with_(data, "commands", max_age_seconds=60, principals={
        **good()["commands"]["principals"], "pit-2": {"key": extra, "allow": ["status"]}})
    new = parse_config(data)
    p = reload.plan(running, new)
    assert p.refused == []
    assert p.changed == ["commands.principals", "commands.max_age_seconds", "log.level"]
    assert reload.principal_changes(running, new) == {
        "added": ["pit-2"], "revoked": [], "altered": []}
    assert reload.principal_changes(new, running)["revoked"] == ["pit-2"]
    assert reload.plan(running, parse_config(good())) == reload.Plan([], [])


def test_issue_29_new_dice_watch_settings_keep_the_throws_counted() -> None:
    old = DiceWatch(DiceWatchSettings(window=1000))
    for i in range(1500):
        old.add((i % 6 + 1, (i // 6) % 6 + 1, 3))
    old.tripped.add("faces")
    new = reload.rewatch(old, DiceWatchSettings(window=500, false_alarm_rate=1e-4))
    assert list(new.throws) == list(old.throws)[-500:]
    assert sum(new.faces[0]) == 500 and new.tripped == {"faces"}
    assert reload.rewatch(old, old.settings) is old
