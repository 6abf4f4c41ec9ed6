"""The snapshot part (daemon/service/snapshot.py) is the journal's MessageWatch: it folds
each message inside the transaction that stores it, and its state is kept with the
journal; a transaction rolled back is reloaded away."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.round.effects import Alert
from daemon.store.journal import JournalError
from tests.unit.service.helpers import tai_sai_service


async def test_each_stored_message_moves_the_snapshot_in_its_own_transaction(
        tmp_path: Path) -> None:
    s = tai_sai_service(tmp_path)
    s.begin()
    assert s.apply(s.table.open_betting())
    view = s.snapshot.view
    assert s.snapshot.due and view.round is not None
    assert view.as_of_msg_seq == s.journal.last_msg_seq()
    assert s.journal.get_meta("snapshot") == view.dumps()  # committed with what it folded
    [(topic, payload)] = s.snapshot.last_state()
    assert topic == s.topics["snapshot"] and not s.snapshot.due
    assert payload["type"] == "snapshot" and payload["msg_seq"] is None
    assert payload["round"]["round_id"] == s.state.open_round()
    s.journal.close()


async def test_a_rolled_back_transaction_leaves_nothing_in_the_snapshot(
        tmp_path: Path) -> None:
    s = tai_sai_service(tmp_path)
    s.begin()
    stored = s.journal.get_meta("snapshot")
    last = s.journal.last_msg_seq()
    with pytest.raises(JournalError), s.journal.batch():
        s.effects.record([Alert("folded", "", "then rolled back")])
        assert s.snapshot.view.as_of_msg_seq == last + 1  # folded, inside the transaction
        raise JournalError("the commit failed")
    assert s.journal.get_meta("snapshot") == stored
    s.snapshot.reload()
    assert s.snapshot.view.as_of_msg_seq == last
    s.journal.close()
