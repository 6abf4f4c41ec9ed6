"""The shuffle reveal at shoe end (issue #24): chunks are idempotent, a short or altered
order is never verified, and only cards compared against a trusted read are counted."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from daemon.games import get_game
from daemon.round import checkpoint
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import Alert, DeviceCommand, Record
from daemon.round.recovery import restore
from daemon.round.reveal import assemble
from daemon.store.journal import Journal
from firmware_protocols import shoe as sp
from firmware_protocols import shuffler as fp
from tests.unit.round.journalling import journal_effects
from tests.unit.round.tables import DECKS, NONCE, Table, kinds

CHUNK = 26  # what the simulated shuffler sends per order_chunk (hil/shuffler.py)


def reveal_chunks(cards: list[str], shuffle_id: int = 77, size: int = CHUNK,
                  total: int | None = None) -> list[fp.OrderChunk]:
    return [fp.OrderChunk(shuffle_id, i, len(cards) if total is None else total, NONCE,
                          tuple(cards[i:i + size])) for i in range(0, len(cards), size)]


def feed(t: BaccaratTable, chunks: list[fp.OrderChunk]) -> list[Any]:
    out: list[Any] = []
    for c in chunks:
        out += t.order_chunk(c)
    return out


def ended(top: list[str] | None = None, draws: int = 4) -> Table:
    t = Table(top=top or ["9S", "2H", "KH", "3D"])
    t.t.open_betting()
    t.t.close_betting()
    for _ in range(draws):
        t.draw()
    t.t.end_shoe("supervisor 12")
    return t


def verified(out: list[Any]) -> dict[str, Any]:
    [rec] = [e for e in out if isinstance(e, Record) and e.kind == "shuffle_verified"]
    return rec.body


@pytest.mark.parametrize("repeated", [0, 5, 15])
def test_rws_tb_5_5_2_a_chunk_delivered_twice_does_not_fail_an_honest_shoe(
        repeated: int) -> None:
    t = ended()
    chunks = reveal_chunks(t.cards)
    chunks.insert(repeated + 1, chunks[repeated])  # the line delivered it twice
    out = feed(t.t, chunks)
    assert kinds(out) == ["shuffle_verified"]
    assert not [e for e in out if isinstance(e, Alert)]


def test_rws_tb_5_5_2_a_reveal_asked_again_midway_verifies() -> None:
    """The shuffler reconnected midway: the reveal is asked again and starts over, while
    the first reveal's chunks are still arriving."""
    t = ended()
    chunks = reveal_chunks(t.cards)
    out = feed(t.t, chunks[:7])
    [again] = t.t.reveal_commands()
    assert again == DeviceCommand("shuffler", fp.RequestOrder(0, 77))
    out += feed(t.t, chunks[7:9] + chunks)  # the old reveal's tail, then the new reveal
    assert kinds(out) == ["shuffle_verified"]


def test_rws_tb_5_5_2_a_restart_during_a_reveal_verifies(tmp_path: Path) -> None:
    """Chunks are not journalled: after a restart the reveal is asked again, and chunks of
    the reveal cut short still arriving do not fail the honest shoe."""
    t = Table(top=["9S", "2H", "KH", "3D"])
    j = Journal(tmp_path / "j.db")
    journal_effects(j, t.effects)
    for cmd in (t.t.open_betting, t.t.close_betting):
        journal_effects(j, cmd())
    for _ in range(4):
        journal_effects(j, t.draw())
    journal_effects(j, t.t.end_shoe("supervisor 12"))
    chunks = reveal_chunks(t.cards)
    assert journal_effects(j, feed(t.t, chunks[:10])) == []  # killed here
    fresh = BaccaratTable("bac-07", get_game("tiger-buffalo"), "P", DECKS, clock=time.time,
                          new_round_id=lambda: uuid.uuid4().hex)
    restore(fresh, j.records())
    assert fresh.reveal_commands() == [DeviceCommand("shuffler", fp.RequestOrder(0, 77))]
    out = journal_effects(j, feed(fresh, chunks[8:10] + chunks))
    assert kinds(out) == ["shuffle_verified"]


def test_rws_tb_5_5_2_a_conflicting_repeat_is_a_finding() -> None:
    t = ended()
    chunks = reveal_chunks(t.cards)
    other = list(chunks[3].cards)
    other[0], other[1] = other[1], other[0]
    assert other != list(chunks[3].cards)
    chunks.insert(4, fp.OrderChunk(77, chunks[3].offset, len(t.cards), NONCE, tuple(other)))
    out = feed(t.t, chunks)
    assert kinds(out) == ["shuffle_verification_failed"]
    [alert] = [e for e in out if isinstance(e, Alert)]
    assert alert.clause == "5.5.2"
    assert f"position {chunks[3].offset + 1}" in alert.detail


def test_rws_tb_5_5_2_a_reveal_recanted_after_the_shoe_was_verified_is_a_finding() -> None:
    """A shuffler that revealed its committed order, then the order again with two cards
    swapped (issue 24: a repeat after the decision was "nothing new", so it passed as an
    honest shuffler): the verification stands (the commitment binds the first reveal), and
    the second order is alerted once; a faithful repeat after it changes nothing."""
    t = ended()
    chunks = reveal_chunks(t.cards)
    out = feed(t.t, chunks)
    assert kinds(out) == ["shuffle_verified"]
    assert feed(t.t, chunks[:2]) == []  # the whole reveal again, faithfully
    # What it keeps to compare with is state a checkpoint carries (and proves).
    checkpoint.make(t.t, lambda: BaccaratTable(
        "bac-07", get_game("tiger-buffalo"), "P", DECKS, clock=lambda: 1_764_000_000.0,
        new_round_id=lambda: "r"))
    other = list(chunks[5].cards)
    i = next(k for k in range(len(other) - 1) if other[k] != other[k + 1])
    other[i], other[i + 1] = other[i + 1], other[i]
    recanted = fp.OrderChunk(77, chunks[5].offset, len(t.cards), NONCE, tuple(other))
    [alert] = feed(t.t, [recanted])
    assert isinstance(alert, Alert) and alert.clause == "5.5.2"
    assert "after shuffle 77 was verified" in alert.detail
    assert f"position {chunks[5].offset + i + 1}" in alert.detail
    assert feed(t.t, [recanted, *chunks]) == []  # alerted once


def test_rws_tb_5_5_2_a_short_commitment_is_never_verified() -> None:
    """A shuffler that committed to 4 cards of 416 (its inventory claims the full shoe) and
    revealed those 4, with the card at draw 7 switched: no `shuffle_verified`."""
    table = Table()
    t, cards = table.t, table.cards
    committed = cards[:4]
    t.shuffle_complete(fp.ShuffleComplete(78, DECKS, fp.inventory_of(cards), 0, True,
                                          fp.commitment(78, NONCE, committed)))
    t.shoe_loaded(sp.ShoeLoaded(len(cards), 0xC0FFEE))
    t.open_betting()
    t.close_betting()
    dealt = cards[:15]
    dealt[6] = next(c for c in fp.INVENTORY_ORDER if c != cards[6])
    for n, card in enumerate(dealt, 1):
        t.card_drawn(sp.CardDrawn(n, card, 99, 0xC0FFEE, False, False))
    t.end_shoe("supervisor 12")
    out = feed(t, reveal_chunks(committed, shuffle_id=78))
    assert "shuffle_verified" not in kinds(out)
    assert kinds(out) == ["shuffle_verification_failed"]
    [alert] = [e for e in out if isinstance(e, Alert)]
    assert alert.clause == "5.5.2"
    assert "4 cards" in alert.detail and "416" in alert.detail


def test_rws_tb_5_5_2_a_reveal_whose_total_differs_from_the_shoe_is_refused_at_once(
        ) -> None:
    t = ended()
    first = reveal_chunks(t.cards, total=412)[0]
    out = t.t.order_chunk(first)
    assert kinds(out) == ["shuffle_verification_failed"]
    assert t.t.reveal_commands() == []  # decided: nothing owed any more


def test_cards_checked_counts_only_cards_compared_against_a_trusted_read() -> None:
    t = Table(top=["9S", "2H", "KH", "3D"])
    t.t.open_betting()
    t.t.close_betting()
    t.draw()
    t.draw(card="??")  # left the shoe unread: nothing to compare
    t.draw()
    t.t.void_round("the Pit voids the held round", "supervisor 12")
    t.t.end_shoe("supervisor 12")
    out = feed(t.t, reveal_chunks(t.cards))
    assert verified(out)["cards_checked"] == 2


@settings(max_examples=200, deadline=None)
@given(size=st.integers(1, 100), data=st.data())
def test_any_chunking_repeats_and_arrival_order_of_an_honest_reveal_assemble_it(
        size: int, data: st.DataObject) -> None:
    cards = Table().cards
    chunks = reveal_chunks(cards, size=size)
    repeats = data.draw(st.lists(st.sampled_from(chunks), max_size=10))
    arrived = data.draw(st.permutations(chunks + repeats))
    got = assemble(77, arrived)
    assert got.contradictions == () and got.order == tuple(cards)
    assert assemble(77, arrived[:-1]).order is None or arrived[-1] in arrived[:-1]


# -- "current" for request_order: no order of a shoe still in play is ever revealed ------


def test_an_order_chunk_of_the_shoe_being_dealt_is_alerted_as_disclosed_and_not_used(
        ) -> None:
    t = Table(top=["9S", "2H", "KH", "3D"])
    t.t.open_betting()
    t.t.close_betting()
    t.draw()
    # Unasked: the host asks only for shoes that have ended.
    out = feed(t.t, reveal_chunks(t.cards)[:2])
    alerts = [e for e in out if isinstance(e, Alert)]
    assert [a.code for a in alerts] == ["shuffle_order_disclosed"]  # once per shuffle
    assert "77" in alerts[0].detail and "being dealt" in alerts[0].detail
    assert kinds(out) == []


def test_an_order_chunk_of_a_certified_shuffle_not_yet_loaded_is_alerted_as_disclosed(
        ) -> None:
    t = ended()
    cards = list(reversed(t.cards))
    t.t.shuffle_complete(fp.ShuffleComplete(78, DECKS, fp.inventory_of(cards), 0, True,
                                            fp.commitment(78, NONCE, cards)))
    out = t.t.order_chunk(reveal_chunks(cards, shuffle_id=78)[0])
    assert [e.code for e in out if isinstance(e, Alert)] == ["shuffle_order_disclosed"]


def test_a_shuffle_in_play_is_never_asked_for_even_under_an_id_still_owed() -> None:
    """A shuffler that reused shuffle id 77 for the next shoe, while 77's order is still
    owed: asking for 77 now would reveal the shoe being dealt."""
    t = ended()
    cards = list(reversed(t.cards))
    t.t.shuffle_complete(fp.ShuffleComplete(77, DECKS, fp.inventory_of(cards), 0, True,
                                            fp.commitment(77, NONCE, cards)))
    assert t.t.reveal_commands() == []
    t.t.shoe_loaded(sp.ShoeLoaded(len(cards), 0xC0FFEE))
    assert t.t.reveal_commands() == []


def v3_table(commit: Callable[[int, list[str]], bytes], draws: int = 4
             ) -> tuple[BaccaratTable, list[str]]:
    """A shoe certified by a shuffler speaking protocol version 3 (its commitment binds the
    decks and the total), dealt ``draws`` cards and ended."""
    table = Table(top=["9S", "2H", "KH", "3D"])
    t, cards = table.t, table.cards
    t.shuffle_complete(fp.ShuffleComplete(79, DECKS, fp.inventory_of(cards), 0, True,
                                          commit(79, cards)), 3)
    t.shoe_loaded(sp.ShoeLoaded(len(cards), 0xC0FFEE))
    t.open_betting()
    t.close_betting()
    for n, card in enumerate(cards[:draws], 1):
        t.card_drawn(sp.CardDrawn(n, card, 99, 0xC0FFEE, False, False))
    t.end_shoe("supervisor 12")
    return t, cards


def v3(sid: int, cards: list[str]) -> bytes:
    return fp.commitment_v3(sid, DECKS, NONCE, cards)


def test_rws_tb_5_5_2_a_v3_commitment_verifies_an_honest_shoe() -> None:
    """A shuffler in a version 3 session commits with commitment_v3: the host checks the
    reveal against that one (the v2 formula would fail the honest shoe)."""
    t, cards = v3_table(v3)
    out = feed(t, reveal_chunks(cards, shuffle_id=79))
    assert kinds(out) == ["shuffle_verified"]
    assert verified(out)["cards_checked"] == 4


@pytest.mark.parametrize("made", ["v2 formula", "other decks", "short"])
def test_rws_tb_5_5_2_a_v3_commitment_that_does_not_bind_this_shoe_is_never_verified(
        made: str) -> None:
    """In a version 3 session, a commitment made without the decks and total (v2's), over
    other decks, or over fewer cards than the reveal: never verified."""
    commit = {"v2 formula": lambda sid, cards: fp.commitment(sid, NONCE, cards),
              "other decks": lambda sid, cards: fp.commitment_v3(sid, 6, NONCE, cards),
              "short": lambda sid, cards: fp.commitment_v3(sid, DECKS, NONCE, cards[:-1])}
    t, cards = v3_table(commit[made])
    out = feed(t, reveal_chunks(cards, shuffle_id=79))
    assert kinds(out) == ["shuffle_verification_failed"]
    [alert] = [e for e in out if isinstance(e, Alert)]
    assert alert.clause == "5.5.2" and "commitment" in alert.detail


def test_rws_tb_5_5_2_a_v3_certificate_survives_a_restart(tmp_path: Path) -> None:
    """The version a commitment was made under is journalled with the certificate: after
    a restart the reveal is checked against the same formula."""
    table = Table(top=["9S", "2H", "KH", "3D"])
    j = Journal(tmp_path / "j.db")
    cards = table.cards
    journal_effects(j, table.t.shuffle_complete(fp.ShuffleComplete(
        79, DECKS, fp.inventory_of(cards), 0, True, v3(79, cards)), 3))
    journal_effects(j, table.t.shoe_loaded(sp.ShoeLoaded(len(cards), 0xC0FFEE)))
    journal_effects(j, table.t.end_shoe("supervisor 12"))
    fresh = BaccaratTable("bac-07", get_game("tiger-buffalo"), "P", DECKS, clock=time.time,
                          new_round_id=lambda: uuid.uuid4().hex)
    restore(fresh, j.records())
    out = journal_effects(j, feed(fresh, reveal_chunks(cards, shuffle_id=79)))
    assert kinds(out) == ["shuffle_verified"]
