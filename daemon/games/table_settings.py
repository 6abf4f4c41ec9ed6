"""Readings of approved text that the house chooses per table ([table] in the config).

Each is written once here as data, and a game that admits it lists it; the config, the
settlement, the par sheet and every published result (``rules``) read it from there.
"""

from __future__ import annotations

from daemon.games import baccarat_bets as p
from daemon.games.baccarat import Coup
from daemon.games.model import TableSetting

TWIN_TIGER_PAIR: TableSetting[Coup] = TableSetting(
    key="twin_tiger_pair",
    clause="RWS 1.33, 3.2, 4.1.9",
    decision="D2",
    bet="tiger_pair",
    readings={
        "value": ("the two pairs have the same value as RWS 3.2 defines it: J-J, Q-Q and K-K "
                  "twin one another, a pair of tens twins only tens", p.tiger_pair_by_value),
        "rank": ("the two pairs have the same rank (the pay table's 'have the same pair'): "
                 "J-J twins only J-J", p.tiger_pair),
    },
    default="value",
)
