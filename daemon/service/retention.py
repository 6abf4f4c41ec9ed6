"""Retention (docs/operations.md): a checkpoint of the table when the last is a day old
(a restart folds from it: daemon/round/checkpoint.py), then stored messages and records
past the window pruned."""

from __future__ import annotations

import asyncio
import logging

from daemon.round import checkpoint
from daemon.service.state import ServiceState
from daemon.store.journal import JournalError

log = logging.getLogger(__name__)

# A checkpoint of the table a day: a restart folds a day of records at most, and
# retention prunes what came before it.
CHECKPOINT_EVERY = 86400.0
RETAIN_EVERY = 3600.0  # s between retention passes


class Retention:
    def __init__(self, state: ServiceState) -> None:
        self.state = state

    async def keep(self, every: float = RETAIN_EVERY) -> None:
        while True:
            self.retain()
            await asyncio.sleep(every)

    def retain(self) -> None:
        """Retention: a checkpoint when the last is a day old (a restart folds from it),
        then stored messages and records past the window pruned (docs/operations.md)."""
        policy = self.state.cfg.journal_policy
        journal = self.state.journal
        try:
            self.checkpoint_if_due()
            gone = journal.prune(policy.keep_days, policy.keep_rounds)
            records = journal.prune_records(policy.keep_days, policy.keep_rounds)
        except JournalError as exc:
            log.error("retention: %s", exc)
        else:
            if gone or records:
                log.info("retention: %d stored messages and %d records pruned", gone,
                         records)

    def checkpoint_if_due(self, every: float = CHECKPOINT_EVERY) -> None:
        s = self.state
        if s.storage_error is not None:  # the table may be ahead of its journal
            return
        last = s.journal.last_checkpoint_at()
        if last is not None and s.clock() - last < every:
            return
        # Made from the fold of the journal, not from the live table: a checkpoint holds
        # only what a restart would fold (not, say, an order reveal half received, which
        # is asked for again). It is what recovery does, of a day of records at most.
        folded = s.new_table()
        folded.replay(s.journal.records_for_recovery())
        try:
            body = checkpoint.make(folded, s.new_table)
        except checkpoint.CheckpointError as exc:
            log.error("no checkpoint: %s", exc)
            return
        s.journal.append(checkpoint.KIND, body)
