"""Technical interruption (RWS 5.4, MBS 5.17, Tai Sai 5.4): after a restart or power loss,
the table is rebuilt by folding its journal (each table folds its own records:
lifecycle.py), and the round that was open is resolved here, by the game's own clause.
Only the clause decisions live in this module.

- Baccarat: if any available bet is already decided by the cards dealt (decided.py), an
  outcome is established and play continues (RWS 5.4.1, MBS 5.17.2). If not, RWS voids
  the round (5.4.2); MBS offers players the withdrawal of their wagers and the round is
  concluded (5.17.1), so play continues with that offer announced. Every obligation open
  at the interruption is kept: a held result stays held; an insurance window is offered
  again with its offers (IP 5.3), or, where the deal cannot go on, 5.13.1 is raised.
- Tai Sai: the outcome is established once the dice rest (5.4.1); before that, void.
"""

from __future__ import annotations

from typing import Any

from daemon.games.baccarat import deal
from daemon.games.decided import decided_bets
from daemon.round.baccarat import BaccaratTable
from daemon.round.effects import Alert, DeviceCommand, Effect
from daemon.round.lifecycle import RoundLifecycle
from daemon.round.shoe import Finding
from daemon.round.tai_sai import TaiSaiTable
from firmware_protocols import shoe as shoe_proto


def restore(table: RoundLifecycle, records: list[Any]) -> list[Effect]:
    """Rebuild ``table`` from its journal; returns the effects of resolving an open round."""
    table.replay(records)
    if isinstance(table, TaiSaiTable):
        return tai_sai_5_4(table)
    assert isinstance(table, BaccaratTable)
    return baccarat_interruption(table)


def baccarat_interruption(table: BaccaratTable) -> list[Effect]:
    """RWS 5.4 / MBS 5.17 for the round open at the interruption."""
    rnd = table.round
    if rnd is None:
        return []
    game = table.game
    decided = decided_bets(game, table.layout, rnd.cards)
    established = game.irregularity("technical_interruption_outcome_established")
    none_yet = game.irregularity("technical_interruption_no_outcome")
    if decided:
        detail = (f"restarted with {len(rnd.cards)} card(s) dealt; decided: "
                  + ", ".join(f"{b} {r.value}" for b, r in sorted(decided.items())))
        return _continue(table, established.clause, established.code, detail)
    detail = f"restarted with {len(rnd.cards)} card(s) dealt; no bet decided yet"
    if game.id == "tiger-baccarat":  # MBS 5.17.1: withdrawal offered, round concluded
        return _continue(table, none_yet.clause, none_yet.code,
                         detail + "; players may withdraw all their wagers")
    return table._void(Finding(none_yet, detail))


def _continue(table: BaccaratTable, clause: str, code: str, detail: str) -> list[Effect]:
    rnd = table.round
    assert rnd is not None
    rid = rnd.round_id
    out: list[Effect] = [Alert(code, clause, detail, rid),
                         table._rec("technical_interruption", {
                             "clause": clause, "decision": "continue", "detail": detail}, rid)]
    if rnd.closed_at is None:
        return out  # betting was still open: it stays open
    if rnd.held is not None:  # the Pit still owes its word: the hold is announced again
        return out + table.hold_again()
    d = deal(rnd.cards)
    if d.complete:  # killed between the last card and its result: settle, or hold (D17)
        return out + table._settle_or_hold()
    if table.insurance_window is not None:
        # IP 5.3: the window was open when the table stopped; its offers stand again, and
        # the Dealer closes it as before (D15).
        window, offers = table.insurance_window, table.insurance_offers
        return [*out, DeviceCommand("shoe", shoe_proto.LockGate(0, False)),
                table._rec("insurance_offered", {"window": window, "offers": offers}, rid)]
    return [*out, DeviceCommand("shoe", shoe_proto.LockGate(0, False)),
            table._rec("next_card", {"needed": d.next_card.value}, rid)]


def tai_sai_5_4(table: TaiSaiTable) -> list[Effect]:
    """Tai Sai 5.4: the outcome is established once the dice rest; before that, void."""
    rnd = table.round
    if rnd is None:
        return []
    if table.throw is None or rnd.closed_at is None:
        return table._void("technical_interruption_no_outcome",
                           "restarted before the dice came to rest")
    again = table.judge_throw()
    if not all(1 <= int(d) <= 6 for d in table.throw["dice"]):
        return again  # at rest but unread: no outcome here; the Pit decides (5.14)
    established = table.game.irregularity("technical_interruption_outcome_established")
    return [Alert(established.code, established.clause,
                  "restarted after the dice came to rest: settling", rnd.round_id), *again]
