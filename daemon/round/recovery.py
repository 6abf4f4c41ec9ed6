"""Technical interruption (RWS 5.4, MBS 5.17, Tai Sai 5.4): after a restart or power loss,
the table is rebuilt by folding its journal (each table folds its own records:
lifecycle.py), and the round that was open is resolved by the game's own clause, which
each table decides from its folded state (``technical_interruption``):

- Baccarat (baccarat.py): if any available bet is already decided by the cards dealt
  (decided.py), an outcome is established and play continues (RWS 5.4.1, MBS 5.17.2). If
  not, RWS voids the round (5.4.2); MBS offers players the withdrawal of their wagers and
  the round is concluded (5.17.1), so play continues with that offer announced. Every
  obligation open at the interruption is kept: a held result stays held; an insurance
  window is offered again with its offers (IP 5.3), or, where the deal cannot go on,
  5.13.1 is raised.
- Tai Sai (tai_sai.py): the outcome is established once the dice rest (5.4.1); before
  that, void.

A restart never asks which kind of table it holds: a new table cannot be built without
its own clause (an abstract method of RoundLifecycle).
"""

from __future__ import annotations

from typing import Any

from daemon.round.effects import Effect
from daemon.round.lifecycle import RoundLifecycle


def restore(table: RoundLifecycle, records: list[Any]) -> list[Effect]:
    """Rebuild ``table`` from its journal; returns the effects of resolving an open round."""
    table.replay(records)
    return table.technical_interruption()
