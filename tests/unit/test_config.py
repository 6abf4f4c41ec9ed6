"""The table config: every mistake reported at once, each naming its key."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from daemon.config import ConfigError, load_config, parse_config
from daemon.drivers.device_url import DeviceUrlError, SerialUrl, SocketUrl, UsbUrl, parse_device_url
from daemon.mqtt.broker_config import broker_nodes
from daemon.security.signing import key_id, private_key_pem, public_key_text
from tests.keys import SUPERVISOR_KEY, TABLE_KEY, TABLE_KEY_FILE
from tests.unit.configs import good, problems

ROOT = Path(__file__).resolve().parents[2]


def example_with_a_real_principal(tmp_path: Path) -> Path:
    """The example config as an operator leaves it: the placeholder replaced by a key."""
    text = (ROOT / "systemd" / "table.example.toml").read_text(encoding="utf-8")
    placeholder = re.search(r'^key = "(REPLACE-ME[^"]*)"', text, re.M)
    assert placeholder is not None, "the example config has no principal placeholder"
    real = public_key_text(Ed25519PrivateKey.generate().public_key())
    path = tmp_path / "table.toml"
    path.write_text(text.replace(placeholder.group(1), real), encoding="utf-8")
    return path


def test_issue_12_2_the_example_config_trusts_nobody(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "signing-key").write_bytes(TABLE_KEY_FILE.read_bytes())
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    with pytest.raises(ConfigError) as err:
        load_config(ROOT / "systemd" / "table.example.toml")
    assert err.value.problems == [
        "commands.principals.pit-supervisor-1.key: the example's placeholder, not a key; make "
        "the principal's own key pair on its machine with 'tabled keys generate --out "
        "pit-supervisor-1' and put the contents of pit-supervisor-1.pub here"]


@pytest.mark.parametrize("seed", [range(32), range(1, 33), range(2, 34)])
def test_issue_12_2_a_published_key_is_refused(seed: range) -> None:
    known = Ed25519PrivateKey.from_private_bytes(bytes(seed))
    data = good()
    data["commands"] = {"principals": {"boss": {"key": public_key_text(known.public_key())}}}
    with pytest.raises(ConfigError, match=r"commands.principals.boss.key: its private half "
                                          r"is published \(tests/keys.py"):
        parse_config(data)


def test_issue_12_2_a_published_signing_key_is_refused(tmp_path: Path) -> None:
    pem = tmp_path / "signing.pem"
    pem.write_bytes(private_key_pem(Ed25519PrivateKey.from_private_bytes(bytes(range(32)))))
    data = good()
    data["signing"] = {"key_file": str(pem)}
    with pytest.raises(ConfigError, match=r"signing.key_file: .* is a published key"):
        parse_config(data)


def test_the_example_config_is_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As systemd runs it: secrets are credentials (LoadCredential=) in $CREDENTIALS_DIRECTORY.
    (tmp_path / "signing-key").write_bytes(TABLE_KEY_FILE.read_bytes())
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    cfg = load_config(example_with_a_real_principal(tmp_path))
    assert cfg.signer.kid == key_id(TABLE_KEY.public_key())
    assert (cfg.table_id, cfg.game, cfg.layout, cfg.decks) == ("bac-07", "tiger-buffalo", "P", 8)
    assert cfg.devices["shoe"] == SerialUrl("/dev/tabled/shoe", 115200)
    assert cfg.topic_prefix == "tables"


def test_defaults() -> None:
    data = good()
    del data["broker"], data["journal"]
    cfg = parse_config(data)
    assert (cfg.broker.host, cfg.broker.port, cfg.broker.tls) == ("127.0.0.1", 1883, False)
    assert cfg.broker.client_id == "tabled-bac-07"
    assert str(cfg.journal_path) == "/var/lib/tabled/journal.db"


@pytest.mark.parametrize(("patch", "expected"), [
    ({"table": {"game": "blackjack"}}, "table.game: unknown game 'blackjack'"),
    ({"table": {"layout": "Z"}}, "table.layout: game 'tiger-buffalo' has no layout 'Z'"),
    ({"table": {"decks": 12}}, "table.decks: 12 is outside 4-10 (tiger-buffalo clause 2.2.1)"),
    ({"table": {"decks": "8"}}, "table.decks: '8' is not a whole number of decks; give one "
                                "in 4-10 (tiger-buffalo clause 2.2.1)"),
    ({"table": {"decks": "eight"}}, "table.decks: 'eight' is not a whole number of decks"),
    ({"table": {"decks": True}}, "table.decks: True is not a whole number of decks"),
    ({"devices": {"shoe": "serial:/dev/ttyUSB0"}}, "devices.shoe: 'serial:/dev/ttyUSB0': "
                                                   "write serial:///dev/ttyUSB0 (serial://"),
    ({"broker": {"url": "mqtt://127.0.0.1", "password": "s3cret"}},
     "broker.password: a password is a secret and never goes in the config; put it in "
     "/etc/credstore/tabled/mqtt-password"),
    ({"table": {"id": "bac 07/x"}}, "table.id: 'bac 07/x' may use letters"),
    ({"table": {"colour": "red"}}, "table.colour: unknown key"),
    ({"devices": {"shoe": "serial://dev/ttyUSB0"}}, "devices.shoe: 'serial://dev/ttyUSB0': "
                                                     "serial URLs name an absolute device path"),
    ({"devices": {"tumbler": "serial:///dev/tty0"}}, "devices.tumbler: tiger-buffalo does not "
                                                     "use a tumbler"),
    ({"broker": {"url": "mqtt://10.1.2.3"}}, "broker.url: plaintext MQTT to 10.1.2.3"),
    ({"broker": {"url": "http://x"}}, "broker.url: 'http://x' must be mqtt://"),
    ({"broker": {"password_file": "/nonexistent/pw"}}, "broker.password_file: cannot read"),
    ({"broker": {"ca_file": "/nonexistent/ca.pem", "url": "mqtts://b.example"}},
     "broker.ca_file: /nonexistent/ca.pem does not exist"),
    ({"mqtt": {"topic_prefix": "tables/#"}}, "mqtt.topic_prefix: 'tables/#' may not contain"),
    ({"extra": {}}, "extra: unknown section"),
    ({"signing": {"key_file": "/nonexistent/k.pem"}}, "signing.key_file: cannot read"),
    ({"signing": {"key_file": "credential:"}}, "signing.key_file: 'credential:': a credential"),
    ({"signing": {"key_file": str(ROOT / "README.md")}},
     "signing.key_file: " + str(ROOT / "README.md") + " is not an unencrypted PEM"),
    ({"commands": {"principals": {"bob": {"key": "AAAA"}}}},
     "commands.principals.bob.key: an Ed25519 public key has 32 bytes, this has 3"),
    ({"commands": {"principals": {"bob": {"key": "not base64!"}}}},
     "commands.principals.bob.key: not a public key"),
    ({"commands": {"principals": {"pit-boss": {"allow": ["fire"]}}}},
     "commands.principals.pit-boss.allow: unknown command 'fire'"),
    ({"commands": {"principals": {"pit-boss": {"role": "x"}}}},
     "commands.principals.pit-boss.role: unknown key"),
    ({"commands": {"max_age_seconds": 1}}, "commands.max_age_seconds: 1 must be a number"),
])
def test_each_mistake_names_its_key(patch: dict[str, dict[str, Any]], expected: str) -> None:
    data = good()
    for section, values in patch.items():
        data.setdefault(section, {}).update(values)
    found = problems(data)
    assert any(p.startswith(expected) for p in found), found


def test_all_mistakes_are_reported_together() -> None:
    data = good()
    data["table"]["decks"] = 3
    del data["devices"]["shuffler"], data["devices"]["serials"]["shuffler"]
    data["broker"]["url"] = "mqtt://broker.example"
    found = problems(data)
    assert len(found) == 3
    assert "devices.shuffler: missing; tiger-buffalo needs shoe and shuffler" in found


def test_tai_sai_needs_a_tumbler_and_no_decks() -> None:
    data = {"table": {"id": "ts-1", "game": "tai-sai-open-cover", "layout": "E", "decks": 8}}
    found = problems(data)
    assert "table.decks: tai-sai-open-cover is played with dice; remove this key" in found
    assert "devices.tumbler: missing; tai-sai-open-cover needs tumbler" in found


def test_signing_is_required() -> None:
    data = good()
    del data["signing"]
    assert problems(data) == ["signing.key_file: missing; every published payload is signed "
                              "(make a key with 'tabled keys generate')"]


def test_a_credential_needs_systemd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CREDENTIALS_DIRECTORY", raising=False)
    data = good()
    data["signing"] = {"key_file": "credential:signing-key"}
    assert problems(data) == ["signing.key_file: 'credential:signing-key' needs "
                              "$CREDENTIALS_DIRECTORY, which systemd sets for a unit with "
                              "LoadCredential=; outside systemd, give --credentials DIR "
                              "(the folder holding signing-key)"]


def test_credentials_resolve_in_the_credentials_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "key").write_bytes(private_key_pem(TABLE_KEY))
    (tmp_path / "mqtt-password").write_text("s3cret\n", encoding="utf-8")
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(tmp_path))
    data = good()
    data["signing"] = {"key_file": "credential:key"}
    data["broker"] = {"url": "mqtt://127.0.0.1", "password_file": "credential:mqtt-password"}
    cfg = parse_config(data)
    assert cfg.broker.password == "s3cret"
    assert cfg.signer.kid == key_id(TABLE_KEY.public_key())


def test_principals_default_to_every_command() -> None:
    cfg = parse_config(good())
    from daemon.security.commands import COMMANDS  # noqa: PLC0415

    assert cfg.principals["pit-boss"].allow == frozenset(COMMANDS)
    assert cfg.principals["pit-boss"].key == SUPERVISOR_KEY.public_key()
    assert cfg.command_max_age == 120


def test_remote_plaintext_can_be_allowed_explicitly() -> None:
    data = good()
    data["broker"] = {"url": "mqtt://10.1.2.3", "allow_plaintext_remote": True}
    assert parse_config(data).broker.host == "10.1.2.3"


def test_unreadable_and_invalid_toml_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[table\nid=", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)


def test_example_toml_parses_as_toml() -> None:
    tomllib.loads((ROOT / "systemd" / "table.example.toml").read_text(encoding="utf-8"))


@pytest.mark.parametrize(("url", "parsed"), [
    ("serial:///dev/tabled/shoe?baud=115200", SerialUrl("/dev/tabled/shoe", 115200)),
    ("serial:///dev/ttyUSB0", SerialUrl("/dev/ttyUSB0", 115200)),
    ("usb://1d50:6178", UsbUrl(0x1D50, 0x6178)),
    ("usb://1d50:6178?serial=SF1&sim=127.0.0.1:7001", UsbUrl(0x1D50, 0x6178, "SF1",
                                                            ("127.0.0.1", 7001))),
    ("socket://127.0.0.1:7001", SocketUrl("127.0.0.1", 7001)),
])
def test_device_urls(url: str, parsed: object) -> None:
    assert parse_device_url(url) == parsed
    assert parse_device_url(str(parsed)) == parsed


@pytest.mark.parametrize(("url", "message"), [
    ("serial:///dev/x?baud=12345", "baud 12345 is not one of"),
    ("serial:///dev/x?parity=E", "unknown option(s) parity"),
    ("usb://1d5:6178", "four hex digits"),
    ("usb://zzzz:6178", "four hex digits"),
    ("socket://host", "expected host:port"),
    ("socket://host:99999", "expected host:port"),
    ("tcp://host:1", "the scheme must be"),
])
def test_bad_device_urls(url: str, message: str) -> None:
    with pytest.raises(DeviceUrlError) as err:
        parse_device_url(url)
    assert message in str(err.value)


def test_mqtts_builds_a_verifying_tls_context() -> None:
    import ssl  # noqa: PLC0415

    from daemon.mqtt.client import tls_context  # noqa: PLC0415

    data = good()
    data["broker"] = {"url": "mqtts://broker.example:8883"}
    ctx = tls_context(parse_config(data).broker)
    assert ctx is not None
    assert ctx.verify_mode is ssl.CERT_REQUIRED and ctx.check_hostname
    data["broker"] = {"url": "mqtt://127.0.0.1"}
    assert tls_context(parse_config(data).broker) is None


def test_issue_12_6_every_device_has_its_serial_pinned() -> None:
    data = good()
    del data["devices"]["serials"]["shoe"]
    data["devices"]["serials"]["tumbler"] = "TM0001"
    found = problems(data)
    assert found[0].startswith("devices.serials.tumbler: no tumbler is configured")
    assert found[1].startswith("devices.serials.shoe: missing; pin the serial number the "
                               "shoe reports")
    data = good()
    data["devices"]["serials"]["shoe"] = ""
    assert problems(data) == ["devices.serials.shoe: must be a serial number of 1-64 "
                              "characters, got ''"]
    assert parse_config(good()).serials == {"shoe": "SH0001", "shuffler": "SF0001"}


def test_broker_urls_list_every_node_in_failover_order() -> None:
    data = good()
    data["broker"] = {"urls": ["mqtt://127.0.0.1:1883", "mqtt://localhost:1884",
                               "mqtt://[::1]"]}
    b = parse_config(data).broker
    assert b.nodes == (("127.0.0.1", 1883), ("localhost", 1884), ("::1", 1883))
    assert (b.host, b.port) == ("127.0.0.1", 1883)
    assert broker_nodes(b) == ["mqtt://127.0.0.1:1883", "mqtt://localhost:1884",
                               "mqtt://[::1]:1883"]


def test_a_single_broker_url_is_one_node() -> None:
    b = parse_config(good()).broker
    assert b.nodes == ((b.host, b.port),) and len(broker_nodes(b)) == 1


@pytest.mark.parametrize(("broker", "problem"), [
    ({"url": "mqtt://127.0.0.1", "urls": ["mqtt://127.0.0.1:1884"]},
     "broker.urls: give url or urls, not both"),
    ({"urls": []}, "broker.urls: [] must be a non-empty list of URLs"),
    ({"urls": "mqtt://127.0.0.1"}, "must be a non-empty list of URLs"),
    ({"urls": ["mqtt://127.0.0.1", "mqtt://127.0.0.1"]}, "broker.urls: a node is listed twice"),
    ({"urls": ["mqtts://b1.example", "mqtt://127.0.0.1"]},
     "broker.urls: mixes mqtt:// and mqtts://"),
    ({"urls": ["mqtt://127.0.0.1", "mqtt://10.0.0.2"]},
     "broker.urls: plaintext MQTT to 10.0.0.2"),
    ({"urls": ["mqtt://127.0.0.1", "http://x"]}, "broker.urls: 'http://x' must be mqtt://"),
    ({"urls": ["mqtt://127.0.0.1:99999"]}, "broker.urls: 'mqtt://127.0.0.1:99999' has an "
                                           "invalid port"),
])
def test_bad_broker_urls_are_named(broker: dict[str, Any], problem: str) -> None:
    data = good()
    data["broker"] = broker
    with pytest.raises(ConfigError) as e:
        parse_config(data)
    assert any(problem in p for p in e.value.problems), e.value.problems


def test_issue_29_metrics_are_off_unless_an_address_is_given() -> None:
    assert parse_config(good()).metrics_listen is None
    data = {**good(), "metrics": {"listen": "127.0.0.1:9464"}}
    assert parse_config(data).metrics_listen == ("127.0.0.1", 9464)
    data = {**good(), "metrics": {"listen": "10.20.0.7:9464"}}  # the floor network
    assert parse_config(data).metrics_listen == ("10.20.0.7", 9464)


@pytest.mark.parametrize(("listen", "expected"), [
    ("0.0.0.0:9464", "metrics.listen: 0.0.0.0 is neither loopback nor on a private network"),
    ("8.8.8.8:9464", "metrics.listen: 8.8.8.8 is neither loopback nor on a private network"),
    ("127.0.0.1:0", "metrics.listen: port 0 is outside 1-65535"),
    ("table:9464", "metrics.listen: 'table:9464' must be HOST:PORT with an IP address"),
])
def test_issue_29_a_metrics_address_the_unit_would_not_let_through_is_refused(
        listen: str, expected: str) -> None:
    [problem] = problems({**good(), "metrics": {"listen": listen}})
    assert problem.startswith(expected), problem


def test_issue_29_the_log_level_may_be_set_in_the_config() -> None:
    assert parse_config(good()).log_level is None  # the command line's --log-level
    assert parse_config({**good(), "log": {"level": "debug"}}).log_level == "DEBUG"
    assert problems({**good(), "log": {"level": "loud"}}) == [
        "log.level: 'loud' must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL"]
