"""Technical interruption (RWS 5.4, MBS 5.17): rebuild the table from the journal after a
restart or power loss, and resolve the round that was open, by the game's own clause.

- Shoe: the last certified shuffle and the shoe loaded from it are rebuilt, and every
  card drawn since is checked again, so the counts are what they were.
- Open round: if any available bet is already decided by the cards dealt (decided.py),
  an outcome is established and play continues (RWS 5.4.1, MBS 5.17.2). If not, RWS
  voids the round (5.4.2); MBS offers players the withdrawal of their wagers and the
  round is concluded (5.17.1), so play continues with that offer announced.
"""

from __future__ import annotations

from daemon.games.baccarat import deal
from daemon.games.cards import parse_card
from daemon.games.decided import decided_bets
from daemon.round.baccarat import DEALING, BaccaratTable
from daemon.round.effects import Alert, DeviceCommand, Effect, Record
from daemon.round.lifecycle import BETTING, RoundData
from daemon.round.shoe import Certificate, Finding, Shoe
from daemon.round.tai_sai import TUMBLING as TAI_SAI_TUMBLING
from daemon.round.tai_sai import TaiSaiTable
from daemon.store.journal import JournalRecord
from firmware_protocols import shoe as shoe_proto
from firmware_protocols import tumbler as tumbler_proto


def _since_last(records: list[JournalRecord], kind: str) -> list[JournalRecord]:
    idx = max((i for i, r in enumerate(records) if r.kind == kind), default=None)
    return [] if idx is None else records[idx:]


def restore(table: BaccaratTable | TaiSaiTable, records: list[JournalRecord]) -> list[Effect]:
    """Rebuild ``table`` from its journal; returns the effects of resolving an open round."""
    if isinstance(table, TaiSaiTable):
        return _restore_tai_sai(table, records)
    certs = {r.body["shuffle_id"]: r for r in records if r.kind == "shuffle_certified"}
    shoe_records = _since_last(records, "shoe_loaded")
    if not shoe_records or shoe_records[0].body["shuffle_id"] not in certs:
        return []
    loaded = shoe_records[0].body
    cert_body = certs[loaded["shuffle_id"]].body
    cert = Certificate(cert_body["shuffle_id"], cert_body["decks"],
                       bytes.fromhex(cert_body["commitment"]))
    shoe, _ = Shoe.load(table.game, cert, shoe_proto.ShoeLoaded(loaded["cards"],
                                                                loaded["deck_set"]))
    if shoe is None:
        return []
    if any(r.kind == "shoe_ended" for r in shoe_records):
        _owe_verification(table, shoe, shoe_records)
        return []
    table.shoe, table.shoe_id = shoe, loaded["shoe_id"]
    results = {r.round_id for r in records if r.kind == "result"}
    open_round: RoundData | None = None
    _replay_draws(shoe, shoe_records)
    for r in shoe_records:
        if r.kind == "card" and r.body.get("carried"):
            # Dealt from the carried cards, and a card of its round like any other: not
            # an elif, or a restart would rebuild that round without it.
            table.carried = [c for c in table.carried if c[1] != r.body["draw_no"]]
        if r.kind == "cut_card":
            table.shoe_ending = True
        elif r.kind == "card_carried":
            table.carried.append((parse_card(r.body["card"]), r.body["draw_no"]))
        elif r.kind == "betting_opened" and r.round_id not in results:
            assert r.round_id is not None
            open_round = RoundData(r.round_id, r.at)
        elif open_round is not None and r.round_id == open_round.round_id:
            if r.kind == "betting_closed":
                open_round.closed_at = r.at
            elif r.kind == "betting_reopened":  # MBS 5.9: cards drawn so far set aside
                open_round.closed_at, open_round.cards = None, []
                open_round.draws, open_round.doubles = [], []
            elif r.kind == "card":
                open_round.cards.append(parse_card(r.body["card"]))
                open_round.draws.append(int(r.body["draw_no"]))
            elif r.kind == "card_drawn" and r.body.get("double_draw"):
                open_round.doubles.append(int(r.body["draw_no"]))
    if open_round is None:
        return []
    return _resolve(table, open_round)


def _replay_draws(shoe: Shoe, shoe_records: list[JournalRecord]) -> None:
    for r in shoe_records:
        if r.kind == "card_drawn":
            b = r.body
            shoe.check_card(shoe_proto.CardDrawn(b["draw_no"], b["card"], b["confidence"],
                                                 b["deck_set"], b["double_draw"],
                                                 b["face_up"]))


def _owe_verification(table: BaccaratTable, shoe: Shoe, shoe_records: list[JournalRecord]
                      ) -> None:
    """The last shoe ended, but its order was not yet checked against the cards dealt
    (the daemon stopped before the reveal came): owe it, so the reveal is asked for
    again when the shuffler is back, and a switched card is still found."""
    sid = shoe.certificate.shuffle_id
    if any(r.kind in ("shuffle_verified", "shuffle_verification_failed")
           and r.body.get("shuffle_id") == sid for r in shoe_records):
        return
    _replay_draws(shoe, shoe_records)
    table.awaiting_order[sid] = (shoe, [])


def _resolve(table: BaccaratTable, rnd: RoundData) -> list[Effect]:
    game = table.game
    table.round = rnd
    table.machine.set_state(DEALING if rnd.closed_at is not None else BETTING)
    decided = decided_bets(game, table.layout, rnd.cards)
    established = game.irregularity("technical_interruption_outcome_established")
    none_yet = game.irregularity("technical_interruption_no_outcome")
    if decided:
        detail = (f"restarted with {len(rnd.cards)} card(s) dealt; decided: "
                  + ", ".join(f"{b} {r.value}" for b, r in sorted(decided.items())))
        return _continue(table, rnd, established.clause, established.code, detail)
    detail = f"restarted with {len(rnd.cards)} card(s) dealt; no bet decided yet"
    if game.id == "tiger-baccarat":  # MBS 5.17.1: withdrawal offered, round concluded
        return _continue(table, rnd, none_yet.clause, none_yet.code,
                         detail + "; players may withdraw all their wagers")
    return table._void(Finding(none_yet, detail))


def _continue(table: BaccaratTable, rnd: RoundData, clause: str, code: str,
              detail: str) -> list[Effect]:
    out: list[Effect] = [Alert(code, clause, detail, rnd.round_id),
                         Record("technical_interruption", {"clause": clause,
                                                           "decision": "continue",
                                                           "detail": detail}, rnd.round_id)]
    if rnd.closed_at is None:
        return out  # betting was still open: it stays open
    d = deal(rnd.cards)
    if d.complete:  # killed between the last card and its result: settle, or hold (D17)
        return out + (table.hold() if rnd.doubles else table.settle())
    out.append(DeviceCommand("shoe", shoe_proto.LockGate(0, False)))
    out.append(Record("next_card", {"needed": d.next_card.value}, rnd.round_id))
    return out


def _restore_tai_sai(table: TaiSaiTable, records: list[JournalRecord]) -> list[Effect]:
    """Tai Sai 5.4: the outcome is established once the dice rest; before that, void."""
    results = {r.round_id for r in records if r.kind == "result"}
    opened = [r for r in records if r.kind == "betting_opened" and r.round_id not in results]
    if not opened:
        return []
    rid = opened[-1].round_id
    assert rid is not None
    mine = [r for r in records if r.round_id == rid]
    closed = next((r.at for r in mine if r.kind == "betting_closed"), None)
    table.round = RoundData(rid, opened[-1].at, closed)
    table.machine.set_state(TAI_SAI_TUMBLING if closed is not None else BETTING)
    table.activated_early = any(
        r.kind == "tumbler_activated" and (not r.body["armed"] or closed is None or r.at < closed)
        for r in mine)
    dice = next((r for r in reversed(mine) if r.kind == "dice"), None)
    if dice is None or closed is None:
        return table._void("technical_interruption_no_outcome",
                           "restarted before the dice came to rest")
    b = dice.body
    table.tumbles = int(b["tumbles"])
    flags = tuple(int(f) for f in b["flat"])
    settled = tumbler_proto.Settled(tuple(b["dice"]), tuple(b["tilt"]), flags,
                                    int(b["confidence"]))
    again: list[Effect] = [e for e in table.settled(settled) if not isinstance(e, Record)]
    if 0 in settled.dice:  # at rest but unread: no outcome here; the pit decides (5.14)
        return again
    established = table.game.irregularity("technical_interruption_outcome_established")
    return [Alert(established.code, established.clause,
                  "restarted after the dice came to rest: settling", rid), *again]
