"""A valid table config as data, and the problems a variant of it has."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.config import ConfigError, parse_config
from tests.keys import commands, signing


def good() -> dict[str, Any]:
    return {
        "table": {"id": "bac-07", "game": "tiger-buffalo", "layout": "P", "decks": 8},
        "devices": {"shoe": "serial:///dev/tabled/shoe?baud=115200",
                    "shuffler": "usb://1d50:6178?serial=SF0001",
                    "serials": {"shoe": "SH0001", "shuffler": "SF0001"}},
        "broker": {"url": "mqtt://127.0.0.1:1883"},
        "journal": {"path": "/tmp/j.db"},
        "signing": signing(),
        "commands": commands(),
    }


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    return err.value.problems
