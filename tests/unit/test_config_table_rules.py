"""Per-table settings of the games' procedures: IP 4.2.2, the dice confidence floor, the
dice watch. Kept apart from test_config.py, which other work edits."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.config import parse_config
from tests.unit.configs import good, problems


def insurance_table(**table: Any) -> dict[str, Any]:
    data = good()
    data["table"] |= {"game": "tiger-buffalo-insurance-plus", "layout": "A", **table}
    return data


def dice_table(**table: Any) -> dict[str, Any]:
    data = good()
    data["table"] = {"id": "ts-01", "game": "tai-sai-open-cover", "layout": "E", **table}
    data["devices"] = {"tumbler": "serial:///dev/tabled/tumbler?baud=115200",
                       "serials": {"tumbler": "TM0001"}}
    return data


def test_rws_ip_4_2_2_private_table_declares_no_insurance() -> None:
    assert parse_config(insurance_table()).rules.insurance_offered
    assert not parse_config(insurance_table(insurance=False)).rules.insurance_offered


@pytest.mark.parametrize(("data", "expected"), [
    (insurance_table(insurance="no"), "table.insurance: 'no' must be true or false"),
    (dict(good(), table=dict(good()["table"], insurance=False)),
     "table.insurance: tiger-buffalo has no Insurance; remove this key"),
    (dice_table(dice_confidence_floor=0), "table.dice_confidence_floor: 0 must be a whole "
                                          "percent in 1-100"),
    (dice_table(dice_confidence_floor=101), "table.dice_confidence_floor: 101 must be"),
    (dice_table(dice_confidence_floor=95.5), "table.dice_confidence_floor: 95.5 must be"),
    (dict(good(), table=dict(good()["table"], dice_confidence_floor=90)),
     "table.dice_confidence_floor: tiger-buffalo is played with cards"),
    (dict(dice_table(), dice_watch={"window": 10}), "dice_watch.window: 10 must be"),
    (dict(dice_table(), dice_watch={"false_alarm_rate": 0.5}),
     "dice_watch.false_alarm_rate: 0.5 must be"),
    (dict(dice_table(), dice_watch={"windw": 500}), "dice_watch.windw: unknown key"),
    (dict(good(), dice_watch={"window": 500}), "dice_watch: tiger-buffalo is played with cards"),
])
def test_bad_table_rules_are_named(data: dict[str, Any], expected: str) -> None:
    assert any(p.startswith(expected) for p in problems(data)), problems(data)


def test_dice_settings_are_read() -> None:
    cfg = parse_config(dict(dice_table(dice_confidence_floor=80),
                            dice_watch={"window": 5000, "false_alarm_rate": 1e-7}))
    assert cfg.rules.dice_confidence_floor == 80
    assert (cfg.rules.dice_watch.window, cfg.rules.dice_watch.false_alarm_rate) == (5000, 1e-7)


def test_rws_1_33_twin_tiger_pair_is_read_from_table_and_defaults_to_the_decision() -> None:
    """Issue 23, item 8 (D2): [table] twin_tiger_pair = "value" | "rank"."""
    assert parse_config(good()).rules.readings == {}
    data = good()
    data["table"]["twin_tiger_pair"] = "rank"
    assert parse_config(data).rules.readings == {"twin_tiger_pair": "rank"}


@pytest.mark.parametrize(("data", "expected"), [
    (dict(good(), table=dict(good()["table"], twin_tiger_pair="suit")),
     "table.twin_tiger_pair: twin_tiger_pair is one of value, rank, not 'suit'"),
    (dict(good(), table=dict(good()["table"], twin_tiger_pair=True)),
     "table.twin_tiger_pair: True must be a string"),
    (dict(good(), table=dict(good()["table"], game="tiger-baccarat", layout="A",
                             twin_tiger_pair="rank")),
     "table.twin_tiger_pair: game 'tiger-baccarat' has no table setting 'twin_tiger_pair'"),
])
def test_rws_1_33_a_twin_tiger_pair_setting_the_game_does_not_admit_is_named(
        data: dict[str, Any], expected: str) -> None:
    assert any(p.startswith(expected) for p in problems(data)), problems(data)
