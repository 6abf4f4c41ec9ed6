"""What every part of the table service reads: the config, the journal, the table as it
stands, the devices, whether the journal can be written, and the tasks the parts start.

The parts (daemon/service/__init__.py lists them) share this one object rather than
copies: the table is rebuilt from the journal after a storage failure (storage.py), and a
reload replaces the config (commands.py), and every part must see the new one at once.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Coroutine, Mapping
from typing import Any

from daemon.config import TableConfig
from daemon.drivers.device import DeviceDriver
from daemon.drivers.seen import META_PREFIX, Mark, Seen
from daemon.games import get_game
from daemon.mqtt.envelope import out_of_band, stamp
from daemon.round.kinds import TableSpec, table_kind
from daemon.round.lifecycle import RoundLifecycle
from daemon.service.topics import TOPICS
from daemon.store.journal import Journal


class ServiceState:
    def __init__(self, cfg: TableConfig, journal: Journal, clock: Any) -> None:
        self.cfg = cfg
        self.clock = clock
        self.journal = journal
        # The game as this table plays it: its [table] readings (e.g. twin_tiger_pair).
        self.game = get_game(cfg.game).configured(cfg.rules.readings)
        self.base = f"{cfg.topic_prefix}/{cfg.table_id}"
        self.topics = {name: f"{self.base}/{name}" for name in TOPICS}
        self.table = self.new_table()
        self.seen = self.load_seen()
        # The configured devices, by name: the device board makes them (devices.py).
        self.drivers: dict[str, DeviceDriver] = {}
        # Set while the journal cannot be written: no round advances, nothing is acted on.
        self.storage_error: str | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    def new_table(self) -> RoundLifecycle:
        c, rules = self.cfg, self.cfg.rules
        return table_kind(self.game).new_table(TableSpec(
            c.table_id, self.game, c.layout, c.decks, self.clock, self._new_round_id,
            c.card_confidence_floor, rules.insurance_offered, rules.dice_confidence_floor,
            rules.dice_watch))

    def load_seen(self) -> Seen:
        """Each device's last event taken, as journalled with what it produced."""
        marks = {}
        for name in self.cfg.devices:
            text = self.journal.get_meta(META_PREFIX + name)
            if text is not None:
                marks[name] = Mark.loads(text)
        return Seen(marks)

    def _new_round_id(self) -> str:
        return f"{self.cfg.table_id}-{uuid.uuid4().hex[:12]}"

    def open_round(self) -> str | None:
        rnd = self.table.round
        return rnd.round_id if rnd is not None else None

    def device_topic(self, name: str) -> str:
        return f"{self.base}/devices/{name}"

    def stamp(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """A payload for the journal: numbered at commit (Journal._queue)."""
        return stamp(payload, self.cfg.table_id)

    def out_of_band(self, payload: Mapping[str, Any]) -> dict[str, Any]:
        """A payload published without the journal (not numbered)."""
        return out_of_band(payload, self.cfg.table_id, self.journal.journal_id)

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def running(self, name: str) -> bool:
        return any(t.get_name() == name for t in self._tasks)
